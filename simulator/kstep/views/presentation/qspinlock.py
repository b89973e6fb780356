"""qspinlock's step-table columns and what ``-c`` counts: which path each acquisition took."""

from __future__ import annotations

from ...engine import thread_index
from ...models.qspinlock.state import MAX_NODES, NULL, POWERPC, QSPINLOCK, TICKET, lock_name, node_id
from .base import Presentation


class QspinlockPresentation(Presentation):
    def summary(self, s):
        out = {f"lock {lock_name(lock)}": self.model.word_text(s, lock) for lock in range(len(s.words))}
        if s.layout != TICKET:
            for cpu, count in enumerate(s.count):
                nodes = []
                for idx in range(min(count, MAX_NODES)):
                    n = s.nodes[node_id(cpu, idx)]
                    nxt = "-" if n.next == NULL else "cpu{}/idx{}".format(*divmod(n.next, MAX_NODES))
                    nodes.append(f"idx{idx} locked={n.locked} next={nxt}")
                out[f"C{cpu} nodes"] = "; ".join(nodes) or "-"
        for lock in range(len(s.words)):
            out[f"queue {lock_name(lock)}"] = " ".join(s.threads[i].name for i in s.ghost_order[lock]) or "-"
        return out

    def answers(self, trace):
        events = EVENTS[self.model.layout]
        counts = dict.fromkeys((e for e, _ in events.values()), 0)
        for a, after in zip(trace.actions, trace.states[1:]):
            if a.label not in events:
                continue
            event, took = events[a.label]
            frames = after.threads[thread_index(after, a.actor)].frames
            if took is None or (frames and frames[0][0] in took):
                counts[event] += 1
        return {**counts, "acquisitions": sum(a.label == "critical_section" for a in trace.actions), **trace.stats}


# The steps -c counts, by what they mean (a lock-taking step counts only when it took the lock).
_HELD = ("critical_section",)
_CLAIMED = ("release_node",)
# What -c counts: label -> (event, the next steps that show it happened; None: every time).
EVENTS = {
    QSPINLOCK: {"queued_spin_lock": ("fast path", _HELD),
                "clear_pending_set_locked": ("pending path", None),
                "xchg_tail": ("queued", None),
                "queued_spin_trylock": ("trylock in the slow path", _CLAIMED),
                "trylock_pending_cmpxchg": ("trylock in the slow path", _HELD),
                "claim_cmpxchg": ("head claims: cmpxchg", _CLAIMED + ("wait_next", "mcs_handoff")),
                "set_locked": ("head claims: set_locked", None)},
    TICKET: {"arch_spin_lock": ("ticket served at once", _HELD), "wait_ticket": ("waited for its ticket", None)},
    POWERPC: {"queued_spin_lock": ("fast path", _HELD), "try_to_steal_lock": ("stolen", _HELD),
              "publish_tail_cpu": ("queued", None), "set_mustq": ("must-queue set", None),
              "trylock_clean_tail": ("head claims", _CLAIMED + ("wait_next",))},
}
