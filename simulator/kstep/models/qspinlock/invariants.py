"""The invariants of the qspinlock model, named after what they protect: mutual exclusion, a legal
lock word for each layout, a tail that names the last queued node, FIFO order, one pending owner,
MCS nodes per CPU, no lost hand-off.  Each reads the lock words and the ghost fields (state.py);
none looks at the variant.
"""

from __future__ import annotations

from ...engine import HARM, Invariant, thread_index
from .powerpc import (PPC_LOCKED_VAL, PPC_OWNER_CPU_MASK, PPC_OWNER_CPU_OFFSET, PPC_SLEEPY_VAL, PPC_TAIL_CPU_MASK,
                      ppc_decode_tail_cpu)
from .qspinlock import decode_tail
from .qspinlock_types import _Q_LOCKED_MASK, _Q_LOCKED_VAL, _Q_PENDING_OFFSET, _Q_PENDING_VAL, LAYOUTS, U16, U32
from .spinlock_types import TICKET_SHIFT, ticket_mask
from .state import MAX_NODES, POWERPC, QSPINLOCK, lock_name, node_id

UNLOCK = frozenset({"queued_spin_unlock", "arch_spin_unlock"})  # next step of a context in its critical section
PENDING_PATH = frozenset({"wait_locked_clear", "clear_pending_set_locked", "clear_pending"})


def tail_text(s, lock) -> str:
    """The node the word's tail names ("cpu2/idx0"; powerpc's tail names a CPU: "cpu2"), "" if none."""
    w = s.words[lock]
    if s.layout == QSPINLOCK:
        lay = LAYOUTS[s.pending_bits]
        return "cpu{}/idx{}".format(*decode_tail(lay, w & lay.TAIL_MASK)) if w & lay.TAIL_MASK else ""
    if s.layout == POWERPC:
        return f"cpu{ppc_decode_tail_cpu(w)}" if w & PPC_TAIL_CPU_MASK else ""
    return ""


def pending_locked(s, lock) -> tuple[int, int]:
    """The values of a lock word's pending and locked fields (powerpc has no pending; a ticket lock
    is locked while a ticket is out)."""
    w = s.words[lock]
    if s.layout == QSPINLOCK:
        return (w & LAYOUTS[s.pending_bits].PENDING_MASK) >> _Q_PENDING_OFFSET, w & _Q_LOCKED_MASK
    if s.layout == POWERPC:
        return 0, w & PPC_LOCKED_VAL
    return 0, int((w >> TICKET_SHIFT) != w & U16)


def holders(s, lock):
    """Contexts in their critical section of ``lock``: their next step is the unlock."""
    return [t.name for t in s.threads if t.lock == lock and t.frames and t.frames[0][0] in UNLOCK]


def mutual_exclusion(s):
    for lock in range(len(s.words)):
        inside = holders(s, lock)
        if len(inside) > 1:
            return f"{' and '.join(inside)} are both in the critical section of lock {lock_name(lock)}"
    return None


def word_problem(s, lock):
    """Why the word of ``lock`` is not a legal one for the layout, or None."""
    w = s.words[lock]
    ncpus = len(s.count)
    if not 0 <= w <= U32:
        return f"{w:#x} is not a 32-bit word"
    if s.layout == QSPINLOCK:
        lay = LAYOUTS[s.pending_bits]
        if (w & _Q_LOCKED_MASK) > _Q_LOCKED_VAL:
            return f"locked byte {w & _Q_LOCKED_MASK:#x} is neither 0 nor _Q_LOCKED_VAL"
        if w & lay.PENDING_MASK not in (0, _Q_PENDING_VAL):
            return f"pending field {(w & lay.PENDING_MASK) >> _Q_PENDING_OFFSET:#x} is neither 0 nor 1"
        if w & lay.TAIL_MASK:
            cpu, idx = decode_tail(lay, w & lay.TAIL_MASK)
            if not 0 <= cpu < ncpus:
                return f"the tail names CPU {cpu}, and there are {ncpus}"
    elif s.layout == POWERPC:
        if w & PPC_SLEEPY_VAL:
            return "the sleepy bit is set without paravirt"
        owner = (w & PPC_OWNER_CPU_MASK) >> PPC_OWNER_CPU_OFFSET
        if not w & PPC_LOCKED_VAL and owner:
            return f"unlocked, yet the owner field says CPU {owner}"
        if w & PPC_LOCKED_VAL and owner >= ncpus:
            return f"the owner field names CPU {owner}, and there are {ncpus}"
        if w & PPC_TAIL_CPU_MASK and not 0 <= ppc_decode_tail_cpu(w) < ncpus:
            return f"the tail names CPU {ppc_decode_tail_cpu(w)}, and there are {ncpus}"
    else:
        waiting = ((w >> TICKET_SHIFT) - w) & ticket_mask(s)
        if waiting > len(s.threads):
            return f"{waiting} tickets are out, and there are {len(s.threads)} contexts"
    return None


def legal_lock_word(s):
    for lock in range(len(s.words)):
        why = word_problem(s, lock)
        if why:
            return f"lock {lock_name(lock)} word {s.words[lock]:#010x}: {why}"
    return None


def node_owner(s, n):
    cpu, idx = divmod(n, MAX_NODES)
    return next((t.name for t in s.threads if t.cpu == cpu and t.idx == idx), f"cpu{cpu}/idx{idx}")


def tail_names_last_queued(s):
    for lock, w in enumerate(s.words):
        q = s.ghost_queue[lock]
        name = lock_name(lock)
        if s.layout == QSPINLOCK:
            lay = LAYOUTS[s.pending_bits]
            tail = w & lay.TAIL_MASK
            if not tail:
                if q:
                    return f"lock {name} has no tail while {node_owner(s, q[-1])} is queued on it"
                continue
            cpu, idx = decode_tail(lay, tail)
            if not 0 <= cpu < len(s.count):
                return f"lock {name}'s tail names cpu{cpu}/idx{idx}, a CPU that does not exist"
            if not q or node_id(cpu, idx) != q[-1]:
                last = node_owner(s, q[-1]) if q else "nobody"
                return f"lock {name}'s tail names cpu{cpu}/idx{idx}, but the last queued is {last}"
            if idx >= s.count[cpu]:
                return f"lock {name}'s tail names cpu{cpu}/idx{idx}, a node CPU {cpu} is not using"
        elif s.layout == POWERPC:
            if not w & PPC_TAIL_CPU_MASK:
                if q:
                    return f"lock {name} has no tail while {node_owner(s, q[-1])} is queued on it"
                continue
            cpu = ppc_decode_tail_cpu(w)
            if not q or q[-1] // MAX_NODES != cpu:
                last = node_owner(s, q[-1]) if q else "nobody"
                return f"lock {name}'s tail names CPU {cpu}, but the last queued is {last}"
        else:
            drawn = len(s.ghost_order[lock]) + len(holders(s, lock))
            if ((w >> TICKET_SHIFT) - w) & ticket_mask(s) != drawn:
                return (f"lock {name}'s next ticket is {w >> TICKET_SHIFT}, owner {w & U16}, yet {drawn} contexts "
                        f"hold tickets")
    return None


def fifo(s, a, t):
    if a.label != "critical_section":
        return None
    i = thread_index(s, a.actor)
    lock = s.threads[i].lock
    order = s.ghost_order[lock]
    if i in order and order[0] != i:
        return (f"{a.actor} got lock {lock_name(lock)} ahead of {s.threads[order[0]].name}, which queued "
                f"before it")
    return None


def one_pending_owner(s):
    if s.layout != QSPINLOCK:
        return None
    mask = LAYOUTS[s.pending_bits].PENDING_MASK
    for lock, w in enumerate(s.words):
        owners = [t.name for t in s.threads if t.lock == lock and t.frames and t.frames[0][0] in PENDING_PATH]
        if len(owners) > 1:
            return f"{' and '.join(owners)} both hold pending on lock {lock_name(lock)}"
        if w & mask and not owners:
            return f"lock {lock_name(lock)} has pending set, and no CPU is in the pending path"
        if owners and not w & mask:
            return f"{owners[0]} is in the pending path of lock {lock_name(lock)}, whose pending is clear"
    return None


def mcs_nodes_per_cpu(s, a, t):
    """Checked on every transition: no two contexts of a CPU hold the same node (so a CPU uses at most
    MAX_NODES), and release_node puts the CPU's count back to the index it handed out (its entry value)."""
    i = thread_index(s, a.actor)
    ctx = s.threads[i]
    if a.label == "release_node":
        after = t.count[ctx.cpu]
        if after != ctx.idx:
            return f"{a.actor} released node {ctx.idx}, leaving CPU {ctx.cpu}'s count at {after}, not {ctx.idx}"
    if t.threads[i].idx == ctx.idx:  # only a context taking a node can make two share one
        return None
    used = {}
    for ctx in t.threads:
        if 0 <= ctx.idx < MAX_NODES:
            key = (ctx.cpu, ctx.idx)
            if key in used:
                return f"{ctx.name} and {used[key]} both use node {ctx.idx} of CPU {ctx.cpu}"
            used[key] = ctx.name
    return None


def no_lost_handoff(s):
    for n in s.ghost_handoffs:
        if s.nodes[n].locked != 1:
            return f"the hand-off to {node_owner(s, n)} was lost: its node->locked is 0 again"
    for n, succ in s.ghost_links:
        if s.nodes[n].next != succ:
            return f"{node_owner(s, succ)} linked in behind {node_owner(s, n)}, and that link was overwritten"
    return None


# The steps that move a context into or out of what the invariants read of its own record.
HOLDING = frozenset({"critical_section"}) | UNLOCK  # into and out of a critical section
PENDING_ENTRY_EXIT = frozenset({"queued_fetch_set_pending_acquire", "trylock_pending_cmpxchg", "clear_pending",
                                "clear_pending_set_locked"})

INVARIANTS = [
    Invariant("mutual-exclusion", "at most one context is in the critical section of a lock", mutual_exclusion,
              kind=HARM, reads=("threads",), steps=HOLDING),
    Invariant("legal-lock-word",
              "every lock word decodes to a legal (tail, pending, locked) triple for its layout", legal_lock_word,
              reads=("words",), steps=frozenset()),
    Invariant("tail-names-last-queued",
              "a non-zero tail names the last node in the MCS queue (a node in use); no tail, no queue",
              tail_names_last_queued,
              reads=("words", "ghost_queue", "ghost_order", "threads", "count"), steps=HOLDING),
    Invariant("fifo", "queued waiters get the lock in the order they queued", fifo, transition=True,
              reads=("threads", "ghost_order"), steps=frozenset({"critical_section"})),
    Invariant("one-pending-owner",
              "pending is set exactly while one CPU is in the pending path (steps 4-7)", one_pending_owner,
              reads=("words", "threads"), steps=PENDING_ENTRY_EXIT),
    Invariant("mcs-nodes-per-cpu", "no two contexts of a CPU use the same MCS node (so a CPU uses at most "
              "MAX_NODES), and releasing a node returns the count to its value on entry",
              mcs_nodes_per_cpu, transition=True, reads=("threads", "count"),
              steps=frozenset({"node_count_inc", "release_node"})),
    Invariant("no-lost-handoff",
              "an MCS hand-off (node->locked = 1) and a successor's link (prev->next) stay until their "
              "owner has seen them", no_lost_handoff,
              reads=("nodes", "ghost_handoffs", "ghost_links"), steps=frozenset()),
]
