"""The RCU boards' rows, in the standard library only (boxes.py says why).

The RCU pieces every view of a model built on ``add_rcu`` shows (the grace period, the callback
queue, a CPU's pending quiescent state), and the stand-alone RCU mechanism's threads and objects.
"""

from __future__ import annotations

from ...models.rcu import FREED, RCU_ACTOR, awaited, gp_running, gp_seq_long, grace_periods_ended, rcu_seq_done
from .. import charts, style
from ..boxes import BoardSource, Box, columns, in_a_row

GP_RUNNING = ("grace period running", style.IN_PROGRESS)
QS_PENDING = ("the grace period needs a quiescent state", style.WAITS)
CB_READY = ("callback ready (its grace period ended)", style.FREE)
CB_WAITING = ("callback, for its grace period", style.WAITS)
OBJ_CURRENT = ("the object gp points to (readers load it)", style.LOCKLESS)
OBJ_OLD = ("old object, not yet freed", style.UNUSED)
OBJ_FREED = ("freed", style.GONE)
OBJ_UAF = ("freed while a reader holds it", style.HARM)


# Thread phases of the stand-alone RCU mechanism, in palette order.
PHASES = (style.IDLE, style.RCU_READ, ("for a grace period (synchronize_rcu)", style.WAITS), style.DONE)
RUNNING, READING, WAITING_GP, DONE = range(len(PHASES))
MAX_SHOWN = 6  # boxes per row before the rest are summarised


def qs_needed(rcu, cpu: int) -> bool:
    """The running grace period still waits for this CPU: its bit in qsmask is set."""
    return bool(rcu.qsmask >> cpu & 1)


def grace_periods_completed(states) -> list[int]:
    """Grace periods that ended from the first state up to each state."""
    first = states[0].rcu.gp_seq
    return [grace_periods_ended(first, s.rcu.gp_seq) for s in states]


def qs_reports(states) -> list[tuple[int, int]]:
    """(frame, cpu) for every quiescent state reported: the CPU's bit in qsmask is cleared."""
    out = []
    for k in range(1, len(states)):
        cleared = states[k - 1].rcu.qsmask & ~states[k].rcu.qsmask
        out += [(k, c) for c in range(len(states[k].rcu.nesting)) if cleared >> c & 1]
    return out


def rcu_charts(lane_of_cpu, gp_lane: int) -> list[BoardSource]:
    """The RCU pieces of a timeline (grace periods as bars in ``gp_lane``, numbered from 1 in this run;
    a diamond where a CPU reported its quiescent state) and the count of callbacks queued."""

    def numbers(trace, k):
        return f"GP {grace_periods_completed(trace.states[:k + 1])[-1] + 1}"

    return [
        charts.phase_bars("timeline-gp", lambda s: (1 if gp_running(s.rcu) else 0,), first_lane=gp_lane,
                          skip=(0,)),
        charts.interval_labels("gp-numbers", lambda t: [gp_running(s.rcu) for s in t.states], gp_lane, numbers),
        charts.marks("timeline-qs", lambda t: [(k, lane_of_cpu[c]) for k, c in qs_reports(t.states)], dy=0.0),
        charts.step_line("callbacks-count", lambda t: [len(s.rcu.callbacks) for s in t.states]),
    ]


def gp_box(rcu, names, x: float, y: float, w: float) -> Box:
    """gp_seq as the tracepoints print it ((long)gp_seq), and whom the grace period waits for."""
    head = f"gp_seq {gp_seq_long(rcu.gp_seq)}"
    if gp_running(rcu):
        holdouts = [names[c] for c in awaited(rcu)]
        body = f"grace period running\nqsmask waits for: {', '.join(holdouts) or 'nobody'}"
        return Box(x, y, w, 0.8, GP_RUNNING[1], head, body)
    return Box(x, y, w, 0.8, style.FREE, head, "idle: no grace period running")


def callback_boxes(rcu, describe, *, y: float) -> list[Box]:
    """The callback queue in call_rcu() order; ``describe(callback)`` names what it does."""
    cbs = rcu.callbacks
    shown = cbs[:MAX_SHOWN] if len(cbs) <= MAX_SHOWN else cbs[:MAX_SHOWN - 1]
    slots = in_a_row(max(len(shown) + (len(cbs) > len(shown)), 1), y=y, max_w=2.2)
    out = []
    for (x, _, w, h), cb in zip(slots, shown):
        ready = rcu_seq_done(rcu.gp_seq, cb.wait)
        fill = CB_READY[1] if ready else CB_WAITING[1]
        when = f"gp_seq reached {gp_seq_long(cb.wait)}" if ready else f"waits for gp_seq\n≥ {gp_seq_long(cb.wait)}"
        out.append(Box(x, y, w, h, fill, describe(cb), when))
    if len(cbs) > len(shown):
        x, _, w, h = slots[len(shown)]
        out.append(Box(x, y, w, h, CB_WAITING[1], f"+{len(cbs) - len(shown)} more", "queued later"))
    if not cbs:
        x, _, w, h = slots[0]
        out.append(Box(x, y, w, h, style.EMPTY, "(none queued)", "", line=style.UNUSED))
    return out



# --- the stand-alone RCU mechanism ---------------------------------------------------------------

def phase(s, i: int) -> int:
    t = s.threads[i]
    if not t.frames:
        return DONE
    if s.rcu.nesting[i]:
        return READING
    if t.frames[0].label == "wait_rcu_gp" and not t.woken:
        return WAITING_GP
    return RUNNING


def thread_boxes(s) -> list[Box]:
    names = [t.name for t in s.threads]
    out = []
    for i, (x, y, w, h) in enumerate(in_a_row(len(s.threads), y=3, max_w=2.6)):
        t = s.threads[i]
        nxt = t.frames[0].label if t.frames else "done"
        facts = [f"next: {nxt}"]
        held = [f"RCU nesting {s.rcu.nesting[i]}"] if s.rcu.nesting[i] else []
        if t.obj >= 0:
            held.append(f"obj {t.obj}")
        if held:
            facts.append(" · ".join(held))
        pending = qs_needed(s.rcu, i)
        out.append(Box(x, y, w, h, PHASES[phase(s, i)][1], f"{names[i]} · CPU {i}", "\n".join(facts),
                       line=QS_PENDING[1] if pending else style.INK, width=5 if pending else 1))
    return out


def shown_objects(s) -> list[int]:
    """The objects worth drawing: the one gp points to, those threads hold or callbacks will free,
    then the newest others, MAX_SHOWN at most (a long run allocates thousands)."""
    wanted = {s.gp, *(t.obj for t in s.threads if t.obj >= 0 and t.frames),
              *(cb.obj for cb in s.rcu.callbacks if cb.func == "kfree")}
    recent = []
    o = len(s.objects) - 1
    while o >= 0 and len(recent) < MAX_SHOWN - len(wanted):
        if o not in wanted:
            recent.append(o)
        o -= 1
    return sorted(wanted | set(recent))[-MAX_SHOWN:]


def object_key(s):
    """Everything object_boxes reads, without hashing the whole (ever growing) object table."""
    ids = shown_objects(s)
    return (s.gp, tuple(ids), tuple(s.objects[o] for o in ids),
            tuple((t.obj, bool(t.frames)) for t in s.threads), s.rcu.nesting)


def object_boxes(s) -> list[Box]:
    held = {}
    for i, t in enumerate(s.threads):
        if t.obj >= 0 and t.frames:
            held.setdefault(t.obj, []).append(i)
    ids = shown_objects(s)
    out = []
    for (x, y, w, h), o in zip(in_a_row(len(ids), y=0, max_w=1.9), ids):
        readers = [i for i in held.get(o, []) if s.rcu.nesting[i]]
        facts = ["← gp points here" if o == s.gp else s.objects[o]]
        if held.get(o):
            facts.append("held by " + ", ".join(s.threads[i].name for i in held[o]))
        if s.objects[o] == FREED:
            fill = OBJ_UAF[1] if readers else OBJ_FREED[1]
        else:
            fill = OBJ_CURRENT[1] if o == s.gp else OBJ_OLD[1]
        out.append(Box(x, y, w, h, fill, f"obj {o}", "\n".join(facts)))
    return out


def thread_key(s):
    """What thread_boxes reads: each thread's next step, not its whole (possibly long) program."""
    return (tuple((t.frames[0].label if t.frames else None, t.obj, t.woken) for t in s.threads),
            s.rcu.nesting, s.rcu.qsmask)


def board_sources(s0) -> list[BoardSource]:
    """The stand-alone RCU board: CPUs, the grace period, callbacks and objects."""
    names = [t.name for t in s0.threads]

    def describe(cb):
        return f"wake {names[cb.obj]}" if cb.func == "wakeme_after_rcu" else f"kfree(obj {cb.obj})"

    return [
        BoardSource("threads", lambda s: columns(thread_boxes(s)), thread_key),
        BoardSource("gp", lambda s: columns([gp_box(s.rcu, names, 3.4, 2, 3.0)]),
                    lambda s: (s.rcu.gp_seq, s.rcu.qsmask)),
        BoardSource("callbacks", lambda s: columns(callback_boxes(s.rcu, describe, y=1)),
                    lambda s: (s.rcu.gp_seq, s.rcu.callbacks)),
        BoardSource("objects", lambda s: columns(object_boxes(s)), object_key),
    ]


def invoked_so_far(trace) -> list[int]:
    """Callbacks invoked up to each frame (the rcu kthread's rcu_do_batch steps)."""
    return [c[0] for c in charts.cumulative([(1 if a.actor == RCU_ACTOR and a.label == "rcu_do_batch" else 0,)
                                             for a in trace.actions], (0,))]


def freed_so_far(states) -> list[int]:
    """Objects freed at each frame; the table is recounted only when it changed."""
    out, last, count = [], None, 0
    for s in states:
        if s.objects is not last:
            last, count = s.objects, s.objects.count(FREED)
        out.append(count)
    return out


COUNTERS = ("grace periods completed", "callbacks pending", "callbacks invoked", "objects freed")


def chart_sources(s0) -> list[BoardSource]:
    """The stand-alone RCU mechanism's charts: who did what (each CPU's phase, grace periods, quiescent
    states, who took each step), the callbacks queued, and the counters."""
    n = len(s0.threads)
    return [
        charts.phase_bars("timeline-phases", lambda s: [phase(s, i) for i in range(n)], skip=(DONE,)),
        *rcu_charts(list(range(n)), n),
        *charts.actor_marks("timeline", {**{t.name: i for i, t in enumerate(s0.threads)}, RCU_ACTOR: n}),
        charts.counters("counters", 4, lambda t: list(zip(
            grace_periods_completed(t.states), [len(s.rcu.callbacks) for s in t.states], invoked_so_far(t),
            freed_so_far(t.states)))),
    ]
