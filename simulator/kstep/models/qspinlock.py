"""The queued spinlock as in Linux 6.12 (kernel/locking/qspinlock.c), step by step.

Read this beside ``kernel/locking/qspinlock.c:queued_spin_lock_slowpath``,
``kernel/locking/mcs_spinlock.h`` and ``include/asm-generic/qspinlock{,_types}.h``: every step
below is one atomic memory action of that code, in its order, and its label is the one the
kernel-lab C port logs (the shared contract).  Spin iterations that change nothing are not steps:
a wait is one step, taken when its condition holds.

The lock is one 32-bit word, (tail, pending, locked) in the source's comments.  An uncontended
locker sets ``locked`` with one cmpxchg; the first contender sets ``pending`` and spins on the word;
everyone after that queues on a per-CPU MCS node and spins on its own ``node->locked`` until the
node before it hands the queue head over.  Only the queue head spins on the lock word, and when it
sees locked and pending both clear it takes the lock: with a cmpxchg that also clears the tail when
it is the only waiter, otherwise with the plain byte store ``set_locked()`` of patch 07/11 in the
2014 series (Waiman Long, Peter Zijlstra), because nobody else can take the lock at that point.

Per-CPU there are ``MAX_NODES`` = 4 MCS nodes (task, softirq, hardirq, NMI), indexed by the
nesting count ``qnodes[0].mcs.count``; the tail names a node as ``(cpu + 1, idx)``.  A scenario may
give a CPU contexts that interrupt its task, by nesting level: a softirq (actor ``C<k>.softirq``), a
hardirq (``C<k>.irq``), an NMI (``C<k>.nmi``) and an NMI nested in that NMI (``C<k>.nested_nmi``, the
fifth context that the comment above 6.12's ``idx >= MAX_NODES`` fallback says some architectures
allow).  They share CPU k's nodes and count.  Each runs its locks once; it may start between any two
steps of the contexts below it (a nested NMI only while the NMI is in progress), and none of those
takes a step until it has finished.  Without them -- the default -- a CPU has its task only, and the
state space stays small.

Besides Linux 6.12 (``v6.12``), the model runs the head's claim as it was before patch 07/11
(``before-set-locked``), the generic ticket lock (include/asm-generic/spinlock.h, ``ticket``) and
powerpc's own queued spinlock (arch/powerpc/lib/qspinlock.c, ``powerpc``, without paravirt).

Simplifications, each deliberate: the memory model is sequentially consistent (the orderings the
kernel needs are noted where it needs them, and the broken variants that model reorderings do so by
program order); the paravirt hooks are left out, and ``virt_spin_lock``'s test-and-set fallback (which
x86 guests without paravirt spinlocks run) is the ``tas`` variant; the generic
``_Q_PENDING_LOOPS`` wait is one step that re-reads the word (the count is bounded, so the step can
always be taken); powerpc's ``steal_spins`` and ``head_spins`` come from the scenario, scaled down
from 6.12's 32 and 256 so exploration stays small.
"""

from __future__ import annotations

from typing import NamedTuple

from ..engine import (HARM, Footprint, Frame, Invariant, Program, ProgramModel, Renamed, Replacement, Source, Variant,
                      push, set_thread, thread_index)
from ..engine.expect import ExpectError
from ..engine.scenario import Int, Key, List, Str, Table, bad

# --- the lock word: include/asm-generic/qspinlock_types.h -----------------------------------------

U32 = (1 << 32) - 1
MAX_NODES = 4  # kernel/locking/qspinlock.c: task, softirq, hardirq, NMI


def _q_set_mask(bits: int, offset: int) -> int:
    """``_Q_SET_MASK(type)``: ((1U << _Q_<type>_BITS) - 1) << _Q_<type>_OFFSET."""
    return ((1 << bits) - 1) << offset


_Q_LOCKED_OFFSET = 0
_Q_LOCKED_BITS = 8
_Q_LOCKED_MASK = _q_set_mask(_Q_LOCKED_BITS, _Q_LOCKED_OFFSET)
_Q_PENDING_OFFSET = _Q_LOCKED_OFFSET + _Q_LOCKED_BITS
_Q_TAIL_IDX_BITS = 2
_Q_LOCKED_VAL = 1 << _Q_LOCKED_OFFSET
_Q_PENDING_VAL = 1 << _Q_PENDING_OFFSET


def pending_bits_for(nr_cpus: int) -> int:
    """``#if CONFIG_NR_CPUS < (1U << 14)``: a whole pending byte, else one pending bit."""
    return 8 if nr_cpus < (1 << 14) else 1


class QLayout(NamedTuple):
    """The constants of one ``_Q_PENDING_BITS`` layout, computed as qspinlock_types.h does."""

    PENDING_BITS: int
    PENDING_MASK: int
    TAIL_IDX_OFFSET: int
    TAIL_IDX_MASK: int
    TAIL_CPU_OFFSET: int
    TAIL_CPU_BITS: int
    TAIL_CPU_MASK: int
    TAIL_OFFSET: int
    TAIL_MASK: int
    LOCKED_PENDING_MASK: int  # kernel/locking/qspinlock.c


def q_layout(pending_bits: int) -> QLayout:
    pending_mask = _q_set_mask(pending_bits, _Q_PENDING_OFFSET)
    idx_offset = _Q_PENDING_OFFSET + pending_bits
    idx_mask = _q_set_mask(_Q_TAIL_IDX_BITS, idx_offset)
    cpu_offset = idx_offset + _Q_TAIL_IDX_BITS
    cpu_bits = 32 - cpu_offset
    cpu_mask = _q_set_mask(cpu_bits, cpu_offset)
    return QLayout(pending_bits, pending_mask, idx_offset, idx_mask, cpu_offset, cpu_bits, cpu_mask,
                   idx_offset, idx_mask | cpu_mask, _Q_LOCKED_MASK | pending_mask)


LAYOUTS = {8: q_layout(8), 1: q_layout(1)}


def encode_tail(lay: QLayout, cpu: int, idx: int) -> int:
    """cpu + 1, so that tail 0 means "no queue"."""
    return ((cpu + 1) << lay.TAIL_CPU_OFFSET) | (idx << lay.TAIL_IDX_OFFSET)


def decode_tail(lay: QLayout, tail: int) -> tuple[int, int]:
    """(cpu, idx) of the node a tail names (the kernel returns per_cpu_ptr(&qnodes[idx].mcs, cpu))."""
    return (tail >> lay.TAIL_CPU_OFFSET) - 1, (tail & lay.TAIL_IDX_MASK) >> lay.TAIL_IDX_OFFSET


# --- powerpc's lock word: arch/powerpc/include/asm/qspinlock_types.h -------------------------------

PPC_LOCKED_VAL = 1 << 0
PPC_OWNER_CPU_OFFSET = 1
PPC_OWNER_CPU_MASK = _q_set_mask(14, PPC_OWNER_CPU_OFFSET)  # 0x00007ffe
PPC_SLEEPY_VAL = 1 << 15
PPC_MUST_Q_VAL = 1 << 16
PPC_TAIL_CPU_OFFSET = 17
PPC_TAIL_CPU_MASK = _q_set_mask(15, PPC_TAIL_CPU_OFFSET)  # 0xfffe0000
PPC_LOCKED_U16 = 0xffff  # `locked` is the low u16: unlock clears owner and sleepy too
STEAL_SPINS_6_12, HEAD_SPINS_6_12 = 1 << 5, 1 << 8  # arch/powerpc/lib/qspinlock.c defaults


def ppc_encode_locked_val(cpu: int) -> int:
    """``queued_spin_encode_locked_val()``: locked, and the holder's CPU as owner."""
    return PPC_LOCKED_VAL | (cpu << PPC_OWNER_CPU_OFFSET)


def ppc_encode_tail_cpu(cpu: int) -> int:
    return (cpu + 1) << PPC_TAIL_CPU_OFFSET


def ppc_decode_tail_cpu(val: int) -> int:
    return (val >> PPC_TAIL_CPU_OFFSET) - 1


# --- the generic ticket lock's word: include/asm-generic/spinlock.h -----------------------------------

TICKET_SHIFT = 16  # next ticket in the upper half, the owner ("now serving") in the lower half
U16 = 0xffff
TICKET_BITS_6_12 = 16  # each half is a u16; a scenario may narrow it (ticket_bits) so tickets wrap sooner


def ticket_mask(s) -> int:
    return (1 << s.ticket_bits) - 1

# --- state -------------------------------------------------------------------------------------------

NULL = -1  # a NULL node pointer; nodes are named cpu * MAX_NODES + idx
LOCK_NAMES = ("A", "B", "C", "D", "E")
QSPINLOCK, TICKET, POWERPC = "qspinlock", "ticket", "powerpc"

# The contexts that can nest on one CPU, lowest first: (scenario key and actor suffix, what it is).
# The task is C<k>; the others are C<k>.<key>.
LEVELS = (("locks", "task"), ("softirq", "softirq"), ("irq", "hardirq"), ("nmi", "NMI"),
          ("nested_nmi", "NMI nested in the NMI"))
TASK, SOFTIRQ, HARDIRQ, NMI, NESTED_NMI = range(len(LEVELS))


class Ctx(NamedTuple):
    """One context that takes locks: a CPU's task, or one that interrupts it (see LEVELS)."""

    name: str
    frames: tuple
    cpu: int  # whose per-CPU MCS nodes and nesting count it uses
    lock: int = -1  # the lock of the acquisition in progress (index into words)
    val: int = 0  # the slow path's local `val`
    idx: int = -1  # the node it took (idx = node->count++); -1: none
    next: int = NULL  # the local `next` (the node after ours)
    ticket: int = 0  # ticket lock: the ticket it drew
    level: int = TASK  # its nesting level: an index into LEVELS
    entered: bool = False  # an interrupt that has taken its first step (its context is in progress)


class Node(NamedTuple):
    """struct mcs_spinlock (powerpc: struct qnode) of one CPU's qnodes[idx]."""

    locked: int = 0
    next: int = NULL
    lock: int = -1  # powerpc only: node->lock, the lock this node queues on (-1: NULL)


class QState(NamedTuple):
    threads: tuple  # Ctx, tasks and interrupts
    words: tuple  # one 32-bit lock word per lock
    nodes: tuple  # Node per cpu * MAX_NODES + idx
    count: tuple  # per CPU: qnodes[0].mcs.count (powerpc: qnodesp->count)
    layout: str  # QSPINLOCK, TICKET or POWERPC: how the words are laid out
    pending_bits: int  # _Q_PENDING_BITS of this run (8 or 1)
    spins: tuple  # powerpc: (steal_spins, head_spins)
    nest: tuple  # per CPU that has interrupts: its contexts' indices, lowest level first
    ghost_queue: tuple  # per lock: nodes that published their tail and are still in the MCS queue
    ghost_order: tuple  # per lock: contexts that queued and have not yet got the lock, in queue order
    ghost_handoffs: frozenset  # nodes handed the MCS lock whose owner has not yet seen it
    ghost_links: frozenset  # (node, successor): a successor linked in, not yet read by the node's owner
    ticket_bits: int = TICKET_BITS_6_12  # ticket lock: the bits of each half that tickets use


def node_id(cpu: int, idx: int) -> int:
    return cpu * MAX_NODES + idx


def _set_field(s, k, value):
    """The state with its field k replaced (what ``_replace`` does, without its keyword parsing: the
    explorer builds a state this way for every step it takes)."""
    return tuple.__new__(QState, s[:k] + (value,) + s[k + 1:])


_WORDS, _NODES, _COUNT, _NEST, _QUEUE, _ORDER, _HANDOFFS, _LINKS = (QState._fields.index(f) for f in (
    "words", "nodes", "count", "nest", "ghost_queue", "ghost_order", "ghost_handoffs", "ghost_links"))
_CTX_FIELDS = {f: k for k, f in enumerate(Ctx._fields)}
_NODE_FIELDS = {f: k for k, f in enumerate(Node._fields)}


def set_word(s, lock, w):
    words = s.words
    return _set_field(s, _WORDS, words[:lock] + (w,) + words[lock + 1:])


def set_node(s, n, **changes):
    nodes = s.nodes
    x = list(nodes[n])
    for name, value in changes.items():
        x[_NODE_FIELDS[name]] = value
    return _set_field(s, _NODES, nodes[:n] + (tuple.__new__(Node, x),) + nodes[n + 1:])


def set_count(s, cpu, value):
    c = s.count
    return _set_field(s, _COUNT, c[:cpu] + (value,) + c[cpu + 1:])


def set_ctx(s, i, **changes):
    t = list(s.threads[i])
    for name, value in changes.items():
        t[_CTX_FIELDS[name]] = value
    return set_thread(s, i, tuple.__new__(Ctx, t))


def own_node(t: Ctx) -> int:
    return node_id(t.cpu, t.idx)


def _set_at(tup, k, value):
    return tup[:k] + (value,) + tup[k + 1:]


def ghost_enqueue(s, lock, node, i):
    """Context i queues on ``lock``: with its MCS node (qspinlock, powerpc) or a ticket (node NULL)."""
    if node != NULL:
        s = _set_field(s, _QUEUE, _set_at(s.ghost_queue, lock, s.ghost_queue[lock] + (node,)))
    return _set_field(s, _ORDER, _set_at(s.ghost_order, lock, s.ghost_order[lock] + (i,)))


def ghost_dequeue(s, lock, node):
    """The node's owner is done with the MCS queue: it cleared the tail or handed the queue on."""
    q = s.ghost_queue[lock]
    return _set_field(s, _QUEUE, _set_at(s.ghost_queue, lock, tuple(n for n in q if n != node)))


def ghost_got_lock(s, lock, i):
    order = s.ghost_order[lock]
    if i not in order:
        return s
    return _set_field(s, _ORDER, _set_at(s.ghost_order, lock, tuple(j for j in order if j != i)))


# --- footprints: what each step reads and writes besides its own context (engine Footprint) --------------

def fp_word(s, i, arg):
    """The lock word of the acquisition in progress, read and written."""
    w = ("words", s.threads[i].lock)
    return (w,), (w,)


def fp_read_word(s, i, arg):
    return (("words", s.threads[i].lock),), ()


def fp_word_arg(s, i, lock):
    """The entry step: the lock is its argument."""
    return (("words", lock),), (("words", lock),)


def fp_count(s, i, arg):
    """This CPU's node count, shared with its interrupt context."""
    c = ("count", s.threads[i].cpu)
    return (c,), (c,)


def fp_init_node(s, i, arg):
    return (), (("nodes", own_node(s.threads[i])),)


def fp_enqueue(s, i, arg):
    lock = s.threads[i].lock
    rw = (("words", lock), ("ghost_queue", lock), ("ghost_order", lock))
    return rw, rw


def fp_link_prev(s, i, prev):
    node = (("nodes", prev),) if 0 <= prev < len(s.nodes) else ()
    return (("ghost_links",),), node + (("ghost_links",),)


def fp_mcs_spin(s, i, arg):
    rw = (("ghost_handoffs",), ("ghost_links",))
    return (("nodes", own_node(s.threads[i])),) + rw, rw


def fp_claim(s, i, arg):
    lock = s.threads[i].lock
    rw = (("words", lock), ("ghost_queue", lock))
    return rw, rw


def fp_wait_next(s, i, arg):
    return (("nodes", own_node(s.threads[i])), ("ghost_links",)), (("ghost_links",),)


def fp_handoff(s, i, arg):
    t = s.threads[i]
    rw = (("ghost_queue", t.lock), ("ghost_handoffs",))
    return rw, (("nodes", t.next),) + rw


def fp_got_lock(s, i, arg):
    g = ("ghost_order", s.threads[i].lock)
    return (g,), (g,)


def fp_draw_ticket(s, i, lock):
    rw = (("words", lock), ("ghost_order", lock))
    return rw, rw


# --- the generic qspinlock (kernel/locking/qspinlock.c) --------------------------------------------------

qspinlock = Program()

# The critical section is no locking code: it is what spin_lock()'s caller does with the lock held.
CALLER = Source.outside("spin_lock()'s caller")
CRITICAL_SECTION = "the lock is held: the caller's critical section (where mutual exclusion is checked)"


FOREVER = "forever"  # a scenario's repeat with no end: the state keeps no count (liveness)


@qspinlock.call("lock_list")
def lock_list(s, i, arg):
    """The scenario's program for one context: its locks in order, `repeat` times (or forever)."""
    locks, repeat = arg
    frames = tuple(Frame("lock_section", lock) for lock in locks)
    if repeat == FOREVER:
        return frames + (Frame("lock_list", arg),)
    return frames + ((Frame("lock_list", (locks, repeat - 1)),) if repeat > 1 else ())


@qspinlock.call("lock_section")
def lock_section(s, i, lock):
    """spin_lock(); the critical section; spin_unlock()."""
    return (Frame("queued_spin_lock", lock), Frame("critical_section"), Frame("queued_spin_unlock"))


@qspinlock.step("queued_spin_lock", "include/asm-generic/qspinlock.h:queued_spin_lock",
                "fast path: try_cmpxchg_acquire(val 0 -> _Q_LOCKED_VAL); on failure enter the slow "
                "path with the val it saw", footprint=fp_word_arg)
def queued_spin_lock(s, i, lock):
    w = s.words[lock]
    if w == 0:
        return set_ctx(set_word(s, lock, _Q_LOCKED_VAL), i, lock=lock, val=0)
    s = set_ctx(s, i, lock=lock, val=w)
    return push(s, i, (Frame("queued_spin_lock_slowpath", w),))


@qspinlock.call("queued_spin_lock_slowpath", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath")
def slowpath(s, i, val, pending="queued_fetch_set_pending_acquire"):
    """queued_spin_lock_slowpath(lock, val) up to its first decision (pv and virt_spin_lock left out)."""
    if val == _Q_PENDING_VAL:
        return (Frame("wait_pending_handover"),)
    return trylock_or_pending(val, pending)


def trylock_or_pending(val, pending="queued_fetch_set_pending_acquire"):
    """``if (val & ~_Q_LOCKED_MASK) goto queue;`` -- a decision on the val already read, not a step.
    ``pending`` is the step that tries for the pending bit (before patch 07/11, the cmpxchg loop)."""
    if val & ~_Q_LOCKED_MASK:
        return (Frame("queue"),)
    return (Frame(pending),)


@qspinlock.step("wait_pending_handover", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "val == _Q_PENDING_VAL (0,1,0): re-read the word, a bounded wait for the pending "
                "owner's hand-over to (0,0,1)", footprint=fp_read_word)
def wait_pending_handover(s, i, arg):
    val = s.words[s.threads[i].lock]
    return push(set_ctx(s, i, val=val), i, trylock_or_pending(val))


@qspinlock.step("queued_fetch_set_pending_acquire", "kernel/locking/qspinlock.c:queued_fetch_set_pending_acquire",
                "atomic_fetch_or_acquire(_Q_PENDING_VAL): set pending, returning the old word "
                "(0,0,* -> 0,1,*)", footprint=fp_word)
def queued_fetch_set_pending_acquire(s, i, arg):
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    val = s.words[t.lock]
    s = set_ctx(set_word(s, t.lock, val | _Q_PENDING_VAL), i, val=val)
    if val & ~_Q_LOCKED_MASK:
        # Contention: undo pending only if we set it -- it may have made the head's
        # n,0,0 -> 0,0,1 cmpxchg fail, and the head is now waiting for us to queue behind it.
        undo = () if val & lay.PENDING_MASK else (Frame("clear_pending"),)
        return push(s, i, undo + (Frame("queue"),))
    wait = (Frame("wait_locked_clear"),) if val & _Q_LOCKED_MASK else ()
    return push(s, i, wait + (Frame("clear_pending_set_locked"),))


def fetch_set_pending_no_undo(s, i, arg):
    """Broken: seeing contention after setting pending, it queues without clear_pending()."""
    t = s.threads[i]
    val = s.words[t.lock]
    s = set_ctx(set_word(s, t.lock, val | _Q_PENDING_VAL), i, val=val)
    if val & ~_Q_LOCKED_MASK:
        return push(s, i, (Frame("queue"),))
    wait = (Frame("wait_locked_clear"),) if val & _Q_LOCKED_MASK else ()
    return push(s, i, wait + (Frame("clear_pending_set_locked"),))


@qspinlock.step("clear_pending", "kernel/locking/qspinlock.c:clear_pending",
                "undo the pending bit we set after seeing contention (*,1,* -> *,0,*), then queue", footprint=fp_word)
def clear_pending(s, i, arg):
    lock = s.threads[i].lock
    w = s.words[lock]
    if s.pending_bits == 8:
        w &= ~LAYOUTS[8].PENDING_MASK  # WRITE_ONCE(lock->pending, 0): a byte store
    else:
        w &= ~_Q_PENDING_VAL  # atomic_andnot(_Q_PENDING_VAL, &lock->val)
    return set_word(s, lock, w)


@qspinlock.step("wait_locked_clear", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "pending owner: smp_cond_load_acquire(&lock->locked, !VAL), wait for the holder to "
                "unlock (0,1,1 -> *,1,0)", footprint=fp_read_word)
def wait_locked_clear(s, i, arg):
    return s


@qspinlock.guard("wait_locked_clear")
def locked_clear(s, i, arg):
    return not s.words[s.threads[i].lock] & _Q_LOCKED_MASK


@qspinlock.step("clear_pending_set_locked", "kernel/locking/qspinlock.c:clear_pending_set_locked",
                "take the lock from pending: *,1,0 -> *,0,1 (no stealing may happen while pending is held)", footprint=fp_word)
def clear_pending_set_locked(s, i, arg):
    lock = s.threads[i].lock
    w = s.words[lock]
    if s.pending_bits == 8:
        w = (w & ~U16) | _Q_LOCKED_VAL  # WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL): 16-bit store
    else:
        w = (w - _Q_PENDING_VAL + _Q_LOCKED_VAL) & U32  # atomic_add(-_Q_PENDING_VAL + _Q_LOCKED_VAL)
    return set_ctx(set_word(s, lock, w), i, val=0)


@qspinlock.call("queue", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath")
def queue(s, i, arg):
    """The `queue:` label: end of pending spinning, start of MCS queuing."""
    return (Frame("node_count_inc"),)


@qspinlock.step("node_count_inc", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "idx = node->count++ on this CPU's qnodes[0]: the nesting level picks the node "
                "grab_mcs_node(node, idx) names (idx >= MAX_NODES: no node, spin with trylock)", cost=0, footprint=fp_count)
def node_count_inc(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
    if idx >= MAX_NODES:
        return push(s, i, (Frame("queued_spin_trylock", "spin"),))
    # barrier(): the count increment must precede the node's initialisation (11dc13224c97).
    return push(s, i, (Frame("mcs_node_init"), Frame("queued_spin_trylock", "once")))


@qspinlock.step("mcs_node_init", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "node->locked = 0; node->next = NULL (ordered before the tail is published by smp_wmb())",
                cost=0, footprint=fp_init_node)
def mcs_node_init(s, i, arg):
    return set_node(s, own_node(s.threads[i]), locked=0, next=NULL)


@qspinlock.step("queued_spin_trylock", "include/asm-generic/qspinlock.h:queued_spin_trylock",
                "one more try after touching the cold node: if the word is 0, cmpxchg it to _Q_LOCKED_VAL", footprint=fp_word)
def queued_spin_trylock(s, i, how):
    t = s.threads[i]
    if s.words[t.lock] == 0:
        return push(set_word(s, t.lock, _Q_LOCKED_VAL), i, (Frame("release_node"),))
    return push(s, i, (Frame("xchg_tail"),))


@qspinlock.guard("queued_spin_trylock")
def trylock_may_run(s, i, how):
    # The idx >= MAX_NODES fallback loops `while (!queued_spin_trylock(lock))`: failed tries change nothing.
    return how == "once" or s.words[s.threads[i].lock] == 0


@qspinlock.step("xchg_tail", "kernel/locking/qspinlock.c:xchg_tail",
                "publish our tail, returning the old one (p,*,* -> n,*,*); a predecessor's tail means wait "
                "behind it", footprint=fp_enqueue)
def xchg_tail(s, i, arg):
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    tail = encode_tail(lay, t.cpu, t.idx)
    w = s.words[t.lock]
    if lay.PENDING_BITS == 8:
        # xchg_relaxed(&lock->tail, tail >> _Q_TAIL_OFFSET): a 16-bit exchange of the upper half
        new = (w & U16) | ((tail >> lay.TAIL_OFFSET) << 16)
        old = (w >> 16) << lay.TAIL_OFFSET
    else:
        # the atomic_try_cmpxchg_relaxed loop keeps locked and pending; failed tries change nothing
        new = (w & lay.LOCKED_PENDING_MASK) | tail
        old = w
    return queue_behind(set_word(s, t.lock, new), i, old, lay)


def queue_behind(s, i, old, lay):
    t = s.threads[i]
    s = ghost_enqueue(set_ctx(s, i, next=NULL), t.lock, own_node(t), i)
    if old & lay.TAIL_MASK:
        prev = node_id(*decode_tail(lay, old & lay.TAIL_MASK))
        return push(s, i, (Frame("link_prev", prev), Frame("mcs_spin"), Frame("wait_head")))
    return push(s, i, (Frame("wait_head"),))


def xchg_tail_16bit_always(s, i, arg):
    """Broken: the 8-bit layout's 16-bit exchange of the tail half, in either layout."""
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    tail = encode_tail(lay, t.cpu, t.idx)
    w = s.words[t.lock]
    new = (w & U16) | (((tail >> lay.TAIL_OFFSET) & U16) << 16)
    old = (w >> 16) << lay.TAIL_OFFSET
    return queue_behind(set_word(s, t.lock, new & U32), i, old & U32, lay)


@qspinlock.step("link_prev", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "WRITE_ONCE(prev->next, node): link into the queue behind the node the old tail named", footprint=fp_link_prev)
def link_prev(s, i, prev):
    me = own_node(s.threads[i])
    if not 0 <= prev < len(s.nodes):  # a corrupt tail: the store lands outside every qnode and is lost
        return s
    s = set_node(s, prev, next=me)
    return _set_field(s, _LINKS, s.ghost_links | {(prev, me)})


@qspinlock.step("mcs_spin", "kernel/locking/mcs_spinlock.h:arch_mcs_spin_lock_contended",
                "smp_cond_load_acquire(&node->locked, VAL): wait for our turn, then read node->next", footprint=fp_mcs_spin)
def mcs_spin(s, i, arg):
    t = s.threads[i]
    me = own_node(t)
    nxt = s.nodes[me].next
    s = _set_field(s, _HANDOFFS, s.ghost_handoffs - {me})
    if nxt != NULL:
        s = _set_field(s, _LINKS, s.ghost_links - {(me, nxt)})
    return set_ctx(s, i, next=nxt)


@qspinlock.guard("mcs_spin")
def handed_off(s, i, arg):
    return s.nodes[own_node(s.threads[i])].locked != 0


@qspinlock.step("wait_head", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "queue head: atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK)), "
                "*,x,y -> *,0,0", footprint=fp_read_word)
def wait_head(s, i, arg):
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    val = s.words[t.lock]
    s = set_ctx(s, i, val=val)
    if (val & lay.TAIL_MASK) == encode_tail(lay, t.cpu, t.idx):
        return push(s, i, (Frame("claim_cmpxchg"),))
    return push(s, i, (Frame("set_locked"),) + hand_on(t))


def hand_on(t):
    """Contended: wait for the successor to link itself if it has not yet, then hand the queue on."""
    return ((Frame("wait_next"),) if t.next == NULL else ()) + (Frame("mcs_handoff"),)


@qspinlock.guard("wait_head")
def owner_and_pending_gone(s, i, arg):
    return not s.words[s.threads[i].lock] & LAYOUTS[s.pending_bits].LOCKED_PENDING_MASK


def only_locked_gone(s, i, arg):
    """Broken: the head waits for the locked byte only, not for the pending owner."""
    return not s.words[s.threads[i].lock] & _Q_LOCKED_MASK


@qspinlock.step("claim_cmpxchg", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "the tail is ours: try_cmpxchg_relaxed(val -> _Q_LOCKED_VAL) clears it (n,0,0 -> 0,0,1); "
                "on failure set_locked, no retry", footprint=fp_claim, live=("val",))
def claim_cmpxchg(s, i, arg):
    t = s.threads[i]
    w = s.words[t.lock]
    if w == t.val:
        s = ghost_dequeue(set_word(s, t.lock, _Q_LOCKED_VAL), t.lock, own_node(t))
        return push(s, i, (Frame("release_node"),))
    # Somebody queued behind us, or set pending and will see our tail and queue: we will see a @next.
    return push(set_ctx(s, i, val=w), i, (Frame("set_locked"),) + hand_on(t))


@qspinlock.step("set_locked", "kernel/locking/qspinlock.c:set_locked",
                "others are queued: WRITE_ONCE(lock->locked, _Q_LOCKED_VAL), a plain byte store "
                "(*,*,0 -> *,0,1), patch 07/11", footprint=fp_word)
def set_locked(s, i, arg):
    lock = s.threads[i].lock
    return set_word(s, lock, (s.words[lock] & ~_Q_LOCKED_MASK) | _Q_LOCKED_VAL)


def set_word_locked_val(s, i, arg):
    """Broken: the head sets the whole word to _Q_LOCKED_VAL although others are queued."""
    return set_word(s, s.threads[i].lock, _Q_LOCKED_VAL)


@qspinlock.step("wait_next", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "smp_cond_load_relaxed(&node->next, VAL): wait for the successor to link itself", footprint=fp_wait_next)
def wait_next(s, i, arg):
    me = own_node(s.threads[i])
    nxt = s.nodes[me].next
    s = _set_field(s, _LINKS, s.ghost_links - {(me, nxt)})
    return set_ctx(s, i, next=nxt)


@qspinlock.guard("wait_next")
def successor_linked(s, i, arg):
    return s.nodes[own_node(s.threads[i])].next != NULL


@qspinlock.step("mcs_handoff", "kernel/locking/mcs_spinlock.h:arch_mcs_spin_unlock_contended",
                "smp_store_release(&next->locked, 1): the successor becomes the queue head", footprint=fp_handoff)
def mcs_handoff(s, i, arg):
    t = s.threads[i]
    s = ghost_dequeue(set_node(s, t.next, locked=1), t.lock, own_node(t))
    s = _set_field(s, _HANDOFFS, s.ghost_handoffs | {t.next})
    return push(s, i, (Frame("release_node"),))


@qspinlock.step("release_node", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "release: __this_cpu_dec(qnodes[0].mcs.count), the node is free again", cost=0, footprint=fp_count)
def release_node(s, i, arg):
    t = s.threads[i]
    return set_ctx(set_count(s, t.cpu, s.count[t.cpu] - 1), i, idx=-1, next=NULL, val=0)


@qspinlock.step("critical_section", CALLER, CRITICAL_SECTION, footprint=fp_got_lock)
def critical_section(s, i, arg):
    t = s.threads[i]
    return ghost_got_lock(s, t.lock, i)


@qspinlock.step("queued_spin_unlock", "include/asm-generic/qspinlock.h:queued_spin_unlock",
                "smp_store_release(&lock->locked, 0): a byte store, tail and pending untouched", footprint=fp_word)
def queued_spin_unlock(s, i, arg):
    lock = s.threads[i].lock
    return set_ctx(set_word(s, lock, s.words[lock] & ~_Q_LOCKED_MASK), i, lock=-1)


# -- before patch 07/11 (2014): the pending path and the claim of that time ------------------------------
#
# The pre-image of "qspinlock: Use a simple write to grab the lock, if applicable" (patch 07/11 of
# Waiman Long and Peter Zijlstra's June 2014 series, merged for v4.2).  A CPU that finds the word
# (0,1,0) waits, with no bound, for the pending owner's hand-over; then a cmpxchg loop either takes a
# free lock (0,0,0 -> 0,0,1) or sets pending on a held one (0,0,1 -> 0,1,1), and queues as soon as it
# sees pending or a tail -- so nobody ever sets pending while a tail is set.  The queue head waits
# with atomic_read() for locked and pending to clear and claims with a cmpxchg that it retries until
# it succeeds, clearing the tail only when it is its own and alone.

PENDING_2014 = "trylock_pending_cmpxchg"


def slowpath_2014(s, i, val):
    return slowpath(s, i, val, PENDING_2014)


def wait_pending_unbounded(s, i, arg):
    val = s.words[s.threads[i].lock]
    return push(set_ctx(s, i, val=val), i, trylock_or_pending(val, PENDING_2014))


def pending_handed_over(s, i, arg):
    return s.words[s.threads[i].lock] != _Q_PENDING_VAL


@qspinlock.step(PENDING_2014, "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "before patch 07/11, one try of the trylock-or-pending loop: atomic_cmpxchg(val -> new), "
                "0,0,0 -> 0,0,1 takes the lock, 0,0,1 -> 0,1,1 sets pending; a changed word is read again", footprint=fp_word,
                live=("val",))
def trylock_pending_cmpxchg(s, i, arg):
    t = s.threads[i]
    w = s.words[t.lock]
    if w != t.val:  # the loop's next round decides on the word the failed cmpxchg returned
        return push(set_ctx(s, i, val=w), i, trylock_or_pending(w, PENDING_2014))
    new = _Q_LOCKED_VAL | (_Q_PENDING_VAL if w == _Q_LOCKED_VAL else 0)
    s = set_word(s, t.lock, new)
    if new == _Q_LOCKED_VAL:  # we won the trylock
        return set_ctx(s, i, val=0)
    return push(s, i, (Frame("wait_locked_clear"), Frame("clear_pending_set_locked")))


def wait_head_then_cmpxchg(s, i, arg):
    val = s.words[s.threads[i].lock]
    return push(set_ctx(s, i, val=val), i, (Frame("claim_cmpxchg"),))


def claim_cmpxchg_retry(s, i, arg):
    """``new = _Q_LOCKED_VAL; if (val != tail) new |= val;`` and ``old = atomic_cmpxchg(&lock->val,
    val, new)`` until it succeeds; then, if new was not plain _Q_LOCKED_VAL, wait for the successor
    (``while (!(next = ACCESS_ONCE(node->next)))``, with no earlier look at node->next) and hand on."""
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    w = s.words[t.lock]
    tail = encode_tail(lay, t.cpu, t.idx)
    new = _Q_LOCKED_VAL if t.val == tail else t.val | _Q_LOCKED_VAL
    if w != t.val:
        return push(set_ctx(s, i, val=w), i, (Frame("claim_cmpxchg"),))
    s = set_word(s, t.lock, new)
    if new == _Q_LOCKED_VAL:
        return push(ghost_dequeue(s, t.lock, own_node(t)), i, (Frame("release_node"),))
    return push(s, i, (Frame("wait_next"), Frame("mcs_handoff")))


BEFORE_SET_LOCKED = {
    "queued_spin_lock_slowpath": slowpath_2014,
    "wait_pending_handover": Replacement(wait_pending_unbounded, pending_handed_over, (
        "val == _Q_PENDING_VAL (0,1,0): before the bound of _Q_PENDING_LOOPS, re-read the word "
        "until the pending owner's hand-over changes it, however long that takes")),
    "wait_head": Replacement(wait_head_then_cmpxchg, what=(
        "queue head, before patch 07/11: atomic_read(&lock->val) until locked and pending are both "
        "clear (*,x,y -> *,0,0), then claim with cmpxchg")),
    "claim_cmpxchg": Replacement(claim_cmpxchg_retry, what=(
        "before patch 07/11: atomic_cmpxchg(val -> _Q_LOCKED_VAL | val), clearing the tail only when "
        "it is ours alone (n,0,0 -> 0,0,1; *,0,0 -> *,0,1); a changed word means try again")),
}


# -- x86 in a guest: the test-and-set fallback of virt_spin_lock() ------------------------------------------
#
# arch/x86/kernel/paravirt.c:native_pv_lock_init enables virt_spin_lock_key when the CPU has
# X86_FEATURE_HYPERVISOR, and only paravirt spinlock setup (kvm_spinlock_init, xen_init_spinlocks)
# disables it again; so a guest whose hypervisor offers no paravirt spinlocks (QEMU under TCG shows
# the hypervisor bit unless told -cpu ...,-hypervisor) takes every contended lock by test-and-set:
# no pending bit, no queue, and whoever's cmpxchg lands first wins.

def slowpath_virt(s, i, val):
    """queued_spin_lock_slowpath: ``if (virt_spin_lock(lock)) return;`` before anything else."""
    return (Frame("virt_spin_lock"),)


@qspinlock.step("virt_spin_lock", "arch/x86/include/asm/qspinlock.h:virt_spin_lock",
                "test-and-set fallback: val = atomic_read(&lock->val), cpu_relax() and read again until it "
                "is 0", footprint=fp_read_word)
def virt_spin_lock(s, i, arg):
    return push(s, i, (Frame("virt_spin_lock_cmpxchg"),))


@qspinlock.guard("virt_spin_lock")
def lock_word_free(s, i, arg):
    return s.words[s.threads[i].lock] == 0


@qspinlock.step("virt_spin_lock_cmpxchg", "arch/x86/include/asm/qspinlock.h:virt_spin_lock",
                "atomic_try_cmpxchg(&lock->val, &val, _Q_LOCKED_VAL): take the lock if the word is still 0, "
                "else cpu_relax() and goto __retry", footprint=fp_word)
def virt_spin_lock_cmpxchg(s, i, arg):
    lock = s.threads[i].lock
    if s.words[lock] == 0:
        return set_ctx(set_word(s, lock, _Q_LOCKED_VAL), i, val=0)
    return push(s, i, (Frame("virt_spin_lock"),))


# -- broken: the node is initialised after it is linked in (95bcade33a8a, before the fix) -----------------

def node_count_inc_init_late(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
    if idx >= MAX_NODES:
        return push(s, i, (Frame("queued_spin_trylock", "spin"),))
    return push(s, i, (Frame("queued_spin_trylock", "once"),))


def xchg_tail_then_init(s, i, arg):
    s = xchg_tail(s, i, arg)
    frames = s.threads[i].frames
    if frames[0].label == "link_prev":  # link, then init (clearing what the predecessor wrote), then spin
        return set_ctx(s, i, frames=frames[:1] + (Frame("mcs_node_init"),) + frames[1:])
    return set_ctx(s, i, frames=(Frame("mcs_node_init"),) + frames)


# -- broken: node->count++ sunk below the node initialisation (11dc13224c97, before the fix) ---------------

def node_count_inc_store_late(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    if idx >= MAX_NODES:
        s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
        return push(s, i, (Frame("queued_spin_trylock", "spin"),))
    s = set_ctx(s, i, idx=idx)  # the increment stays in a register ...
    return push(s, i, (Frame("mcs_node_init"), Frame("store_node_count"), Frame("queued_spin_trylock", "once")))


@qspinlock.step("store_node_count", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "the store half of node->count++, which the compiler sank below the node's "
                "initialisation (only without the barrier() of 11dc13224c97)", cost=0, footprint=fp_count)
def store_node_count(s, i, arg):
    t = s.threads[i]
    return set_count(s, t.cpu, t.idx + 1)


# --- the generic ticket lock (include/asm-generic/spinlock.h) ---------------------------------------------

ticket = Program()
ticket.call("lock_list")(lock_list)


@ticket.call("lock_section")
def ticket_lock_section(s, i, lock):
    return (Frame("arch_spin_lock", lock), Frame("critical_section"), Frame("arch_spin_unlock"))


@ticket.step("arch_spin_lock", "include/asm-generic/spinlock.h:arch_spin_lock",
             "atomic_fetch_add(1 << 16): draw the next ticket; the lock is ours if it is already served", footprint=fp_draw_ticket)
def arch_spin_lock(s, i, lock):
    val = s.words[lock]
    my = val >> TICKET_SHIFT
    s = set_word(s, lock, (((my + 1) & ticket_mask(s)) << TICKET_SHIFT) | (val & U16))
    s = ghost_enqueue(set_ctx(s, i, lock=lock, ticket=my), lock, NULL, i)
    if my == val & U16:
        return s
    return push(s, i, (Frame("wait_ticket"),))


@ticket.step("wait_ticket", "include/asm-generic/spinlock.h:arch_spin_lock",
             "atomic_cond_read_acquire(lock, ticket == (u16)VAL), then smp_mb(): our ticket is served", footprint=fp_read_word)
def wait_ticket(s, i, arg):
    return s


@ticket.guard("wait_ticket")
def ticket_served(s, i, arg):
    t = s.threads[i]
    return s.words[t.lock] & U16 == t.ticket


@ticket.step("critical_section", CALLER, CRITICAL_SECTION, footprint=fp_got_lock)
def ticket_critical_section(s, i, arg):
    t = s.threads[i]
    return ghost_got_lock(s, t.lock, i)


@ticket.step("arch_spin_unlock", "include/asm-generic/spinlock.h:arch_spin_unlock",
             "smp_store_release of (u16)val + 1 into the owner half: serve the next ticket", footprint=fp_word)
def arch_spin_unlock(s, i, arg):
    t = s.threads[i]
    w = s.words[t.lock]
    s = set_word(s, t.lock, (w & ~U16) | ((w + 1) & ticket_mask(s)))
    return set_ctx(s, i, lock=-1, ticket=0)


# --- powerpc's queued spinlock (arch/powerpc/lib/qspinlock.c, no paravirt) ---------------------------------

powerpc = Program()
powerpc.call("lock_list")(lock_list)
PPC_LIB = "arch/powerpc/lib/qspinlock.c"
PPC_H = "arch/powerpc/include/asm/qspinlock.h"


@powerpc.call("lock_section")
def ppc_lock_section(s, i, lock):
    return (Frame("queued_spin_lock", lock), Frame("critical_section"), Frame("queued_spin_unlock"))


def trylock_steal(s, i, lock):
    """``__queued_spin_trylock_steal``: lwarx/stwcx. succeeds when nothing but a tail is set, so it
    may take the lock ahead of queued waiters; it keeps the tail.  Returns the state or None."""
    w = s.words[lock]
    if w & ~PPC_TAIL_CPU_MASK:
        return None
    return set_word(s, lock, (w & PPC_TAIL_CPU_MASK) | ppc_encode_locked_val(s.threads[i].cpu))


@powerpc.step("queued_spin_lock", f"{PPC_H}:queued_spin_lock",
              "fast path: queued_spin_trylock (steals: succeeds when only a tail is set), else the slow path")
def ppc_queued_spin_lock(s, i, lock):
    s = set_ctx(s, i, lock=lock)
    taken = trylock_steal(s, i, lock)
    if taken is not None:
        return taken
    if s.spins[0] == 0:  # `if (!steal_spins) return false;`
        return push(s, i, (Frame("queued_spin_lock_mcs_queue"),))
    return push(s, i, (Frame("try_to_steal_lock", 0),))


@powerpc.step("try_to_steal_lock", f"{PPC_LIB}:try_to_steal_lock",
              "one steal iteration: give up if must-queue is set, steal if unlocked, else count a spin; "
              "queue after steal_spins")
def try_to_steal_lock(s, i, iters):
    t = s.threads[i]
    w = s.words[t.lock]
    if w & PPC_MUST_Q_VAL:
        return push(s, i, (Frame("queued_spin_lock_mcs_queue"),))
    if not w & PPC_LOCKED_VAL:
        taken = trylock_steal(s, i, t.lock)
        if taken is not None:
            return taken
    iters += 1
    if iters >= s.spins[0]:  # steal_break()
        return push(s, i, (Frame("queued_spin_lock_mcs_queue"),))
    return push(s, i, (Frame("try_to_steal_lock", iters),))


@powerpc.step("queued_spin_lock_mcs_queue", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "idx = qnodesp->count++ (a 5th nesting level spins on trylock instead)", cost=0)
def ppc_mcs_queue(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    if idx >= MAX_NODES:
        return push(s, i, (Frame("queued_spin_trylock"),))
    s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
    return push(s, i, (Frame("mcs_node_init"), Frame("publish_tail_cpu")))


@powerpc.step("queued_spin_trylock", f"{PPC_H}:queued_spin_trylock",
              "no node left: spin until queued_spin_trylock (stealing) succeeds")
def ppc_queued_spin_trylock(s, i, arg):
    return trylock_steal(s, i, s.threads[i].lock)


@powerpc.guard("queued_spin_trylock")
def ppc_trylock_would_succeed(s, i, arg):
    return not s.words[s.threads[i].lock] & ~PPC_TAIL_CPU_MASK


@powerpc.step("mcs_node_init", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "node->next = NULL; node->lock = lock; node->cpu; node->sleepy = 0; node->locked = 0", cost=0)
def ppc_mcs_node_init(s, i, arg):
    t = s.threads[i]
    return set_node(s, own_node(t), locked=0, next=NULL, lock=t.lock)


@powerpc.step("publish_tail_cpu", f"{PPC_LIB}:publish_tail_cpu",
              "lwsync, then larx/stcx.: replace the tail CPU with ours, returning the old word")
def publish_tail_cpu(s, i, arg):
    t = s.threads[i]
    old = s.words[t.lock]
    s = set_word(s, t.lock, (old & ~PPC_TAIL_CPU_MASK) | ppc_encode_tail_cpu(t.cpu))
    s = ghost_enqueue(set_ctx(s, i, next=NULL), t.lock, own_node(t), i)
    head = (Frame("wait_head", (0, False)),)
    if old & PPC_TAIL_CPU_MASK:
        return push(s, i, (Frame("get_tail_qnode", ppc_decode_tail_cpu(old)), Frame("mcs_spin")) + head)
    return push(s, i, head)


@powerpc.step("get_tail_qnode", f"{PPC_LIB}:get_tail_qnode",
              "find the previous CPU's node queued on this lock (node->lock == lock), link ours behind it")
def get_tail_qnode(s, i, prev_cpu):
    t = s.threads[i]
    for idx in range(MAX_NODES):
        prev = node_id(prev_cpu, idx)
        if s.nodes[prev].lock == t.lock:
            return push(s, i, (Frame("link_prev", prev),))
    raise AssertionError(f"BUG() in get_tail_qnode: no node of CPU {prev_cpu} queues on lock {t.lock}")


powerpc.step("link_prev", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
             "WRITE_ONCE(prev->next, node): link into the queue behind the previous tail's node")(link_prev)


@powerpc.step("mcs_spin", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "while (!READ_ONCE(node->locked)) spin; then smp_rmb() as the acquire")
def ppc_mcs_spin(s, i, arg):
    me = own_node(s.threads[i])
    return _set_field(s, _HANDOFFS, s.ghost_handoffs - {me})


powerpc.guard("mcs_spin")(handed_off)


@powerpc.step("wait_head", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "queue head, one read of the word: unlocked -> try to take it; locked -> count a spin, "
              "after head_spins set must-queue")
def ppc_wait_head(s, i, arg):
    iters, mustq = arg
    t = s.threads[i]
    w = s.words[t.lock]
    if not w & PPC_LOCKED_VAL:
        return push(s, i, (Frame("trylock_clean_tail", arg),))
    iters += 1
    if iters >= s.spins[1]:  # from here on a spin changes nothing: wait for the unlock
        return push(s, i, (Frame("set_mustq"), Frame("wait_head", (s.spins[1], True))))
    return push(s, i, (Frame("wait_head", (iters, mustq)),))


@powerpc.guard("wait_head")
def ppc_head_may_read(s, i, arg):
    return not arg[1] or not s.words[s.threads[i].lock] & PPC_LOCKED_VAL


@powerpc.step("set_mustq", f"{PPC_LIB}:set_mustq",
              "larx/stcx. _Q_MUST_Q_VAL: from now on stealers queue instead")
def set_mustq(s, i, arg):
    lock = s.threads[i].lock
    return set_word(s, lock, s.words[lock] | PPC_MUST_Q_VAL)


@powerpc.step("trylock_clean_tail", f"{PPC_LIB}:trylock_clean_tail",
              "if unlocked: set locked|owner, keep the tail unless it is ours (then clear it); "
              "must-queue is cleared")
def trylock_clean_tail(s, i, arg):
    t = s.threads[i]
    prev = s.words[t.lock]
    if prev & PPC_LOCKED_VAL:  # a stealer got in first: `goto again`
        return push(s, i, (Frame("wait_head", arg),))
    tail = ppc_encode_tail_cpu(t.cpu)
    new = (prev & PPC_TAIL_CPU_MASK) | ppc_encode_locked_val(t.cpu)
    if prev & PPC_TAIL_CPU_MASK == tail:
        s = ghost_dequeue(set_word(s, t.lock, new & ~PPC_TAIL_CPU_MASK), t.lock, own_node(t))
        return push(s, i, (Frame("release_node"),))
    return push(set_word(s, t.lock, new), i, (Frame("wait_next"), Frame("mcs_handoff")))


powerpc.step("wait_next", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
             "next = READ_ONCE(node->next), spinning until the successor has linked itself")(wait_next)
powerpc.guard("wait_next")(successor_linked)
powerpc.step("mcs_handoff", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
             "WRITE_ONCE(next->locked, 1): a plain store (the lock word's acquire orders it)")(mcs_handoff)


@powerpc.step("release_node", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "node->lock = NULL, barrier(), qnodesp->count-- (clearing first: 734ad0af3609)", cost=0)
def ppc_release_node(s, i, arg):
    t = s.threads[i]
    s = set_node(s, own_node(t), lock=-1)
    return set_ctx(set_count(s, t.cpu, s.count[t.cpu] - 1), i, idx=-1, next=NULL)


@powerpc.step("critical_section", CALLER, CRITICAL_SECTION)
def ppc_critical_section(s, i, arg):
    t = s.threads[i]
    return ghost_got_lock(s, t.lock, i)


@powerpc.step("queued_spin_unlock", f"{PPC_H}:queued_spin_unlock",
              "smp_store_release(&lock->locked, 0): a u16 store, clearing owner and sleepy too")
def ppc_queued_spin_unlock(s, i, arg):
    lock = s.threads[i].lock
    return set_ctx(set_word(s, lock, s.words[lock] & ~PPC_LOCKED_U16), i, lock=-1)


PROGRAMS = {QSPINLOCK: qspinlock, TICKET: ticket, POWERPC: powerpc}
ENTRY = {QSPINLOCK: "queued_spin_lock", TICKET: "arch_spin_lock", POWERPC: "queued_spin_lock"}
UNLOCK = frozenset({"queued_spin_unlock", "arch_spin_unlock"})  # next step of a context in its critical section
LOCK_ARG = frozenset({"lock_section", "queued_spin_lock", "arch_spin_lock"})  # frames whose argument is a lock
PENDING_PATH = frozenset({"wait_locked_clear", "clear_pending_set_locked", "clear_pending"})


# --- invariants ----------------------------------------------------------------------------------------

def lock_name(lock: int) -> str:
    return LOCK_NAMES[lock]


def _context(s, name):
    """The context named in an expectation ("C0.irq")."""
    for t in s.threads:
        if t.name == name:
            return t
    raise ExpectError(f"no context {name!r}")


def _node_arg(s, text):
    """A node named in an expectation ("cpu2/idx0"), as its index into ``nodes``."""
    cpu, _, idx = str(text).removeprefix("cpu").partition("/idx")
    if not (cpu.isdigit() and idx.isdigit() and int(cpu) < len(s.count) and int(idx) < MAX_NODES):
        raise ExpectError(f"{text!r} names no MCS node of this run (cpu0/idx0 to cpu{len(s.count) - 1}/idx3)")
    return node_id(int(cpu), int(idx))


def _lock_arg(s, name):
    """A lock named in an expectation ("A"), as its index."""
    if name not in LOCK_NAMES[:len(s.words)]:
        raise ExpectError(f"no lock {name!r} in this run (locks: {', '.join(LOCK_NAMES[:len(s.words)])})")
    return LOCK_NAMES.index(name)


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
                return f"lock {name}'s next ticket is {w >> TICKET_SHIFT}, owner {w & U16}, yet {drawn} contexts hold tickets"
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


# --- variants ------------------------------------------------------------------------------------------

def _broken(name, doc, **replaces):
    """A broken variant of the generic qspinlock's program (not the ticket or powerpc one)."""
    return Variant.bug(name, doc, params={"program": QSPINLOCK}, **replaces)


VARIANTS = {
    "v6.12": Variant("v6.12", "Linux 6.12 kernel/locking/qspinlock.c: pending bit, MCS queue, and the head's "
                     "cmpxchg when alone, plain set_locked() store when others are queued",
                     params={"program": QSPINLOCK}),
    "before-set-locked": Variant(
        "before-set-locked", "before patch 07/11 (2014): the queue head always claims with cmpxchg, retrying, "
        "and keeps the tail in the new value when others are queued; its pending path is the cmpxchg "
        "loop of that time, which sets pending only on (0,0,1)",
        replaces=BEFORE_SET_LOCKED, params={"program": QSPINLOCK}),
    "tas": Variant("tas", "x86 in a guest without paravirt spinlocks (arch/x86/include/asm/qspinlock.h:"
                   "virt_spin_lock): every contended locker spins on the word by test-and-set, unfair by design",
                   replaces={"queued_spin_lock_slowpath": slowpath_virt}, params={"program": QSPINLOCK}),
    "ticket": Variant("ticket", "the generic ticket lock of include/asm-generic/spinlock.h, for comparison: "
                      "every locker draws a ticket and spins on the one word", params={"program": TICKET}),
    "powerpc": Variant("powerpc", "arch/powerpc/lib/qspinlock.c (no paravirt): owner CPU and must-queue bits, "
                       "no pending; lock stealing bounded by the queue head's count of reads that find the word "
                       "locked: after head_spins of them it sets must-queue (a head whose reads all find it "
                       "free and whose trylock_clean_tail keeps losing to a stealer counts none, and starves)",
                       params={"program": POWERPC}),
    "clear-tail-always": _broken(
        "clear-tail-always", "the queue head sets the whole word to _Q_LOCKED_VAL even when others are "
        "queued, clearing their tail", set_locked=set_word_locked_val),
    "pending-not-undone": _broken(
        "pending-not-undone", "after setting pending and seeing contention, the locker queues without "
        "clear_pending()", queued_fetch_set_pending_acquire=fetch_set_pending_no_undo),
    "head-ignores-pending": _broken(
        "head-ignores-pending", "the queue head waits only for the locked byte to clear, not for the "
        "pending owner", wait_head=(None, only_locked_gone)),
    "link-before-init": _broken(
        "link-before-init", "the node's initialisation becomes visible only after the node is linked in "
        "(the missing smp_wmb() of 2018): a hand-off into it can be wiped out",
        node_count_inc=Replacement(node_count_inc_init_late, what=(
            "idx = node->count++, and the node is not initialised here: that waits until it is linked in")),
        xchg_tail=Replacement(xchg_tail_then_init, what=(
            "publish our tail and link in behind the predecessor, and only then initialise the node "
            "(node->locked = 0 can wipe out a hand-off)"))),
    "count-after-init": _broken(
        "count-after-init", "node->count++ is stored only after the node is initialised (no barrier(), "
        "fixed by 11dc13224c97): an interrupt in between takes the same node",
        node_count_inc=node_count_inc_store_late),
    "xchg16-one-bit-pending": _broken(
        "xchg16-one-bit-pending", "xchg_tail uses the 16-bit exchange of the tail half even with "
        "_Q_PENDING_BITS 1, where the tail starts at bit 9 (why qspinlock.c has two xchg_tail())",
        xchg_tail=xchg_tail_16bit_always),
    "mcs-spin-skipped": _broken(
        "mcs-spin-skipped", "an arch_mcs_spin_lock_contended() that returns at once: a queued waiter goes "
        "to the lock word without waiting for its predecessor's hand-off", mcs_spin=(None, lambda s, i, arg: True)),
}


# --- scenarios -----------------------------------------------------------------------------------------

MAX_CPUS = 8


def _scenario_rules(sc, path):
    if sc["pending_bits"] not in (1, 8):
        raise bad("pending_bits", f"{sc['pending_bits']} is neither 8 (NR_CPUS < 16384) nor 1")
    contexts = sum(1 for c in sc["cpus"] for key, _ in LEVELS if c[key])
    if contexts >= 1 << sc["ticket_bits"]:  # next - owner must tell every count of tickets out from none
        raise bad("ticket_bits", f"{sc['ticket_bits']} bits count at most {(1 << sc['ticket_bits']) - 1} tickets "
                                 f"out, and the scenario has {contexts} contexts")
    taken_at = [{lock for c in sc["cpus"] for lock in c[key]} for key, _ in LEVELS]
    for k, c in enumerate(sc["cpus"]):
        if c["nested_nmi"] and not c["nmi"]:
            raise bad(f"cpus[{k}].nested_nmi", f"a nested NMI needs an NMI on CPU {k} to nest in (cpus[{k}].nmi)")
        levels = [a for a, (key, _) in enumerate(LEVELS) if c[key]]
        for a in levels:
            for b in (b for b in levels if b > a):
                shared = sorted(taken_at[b] & set(c[LEVELS[a][0]]))
                if shared:  # lockdep's rule: it would have to keep that context off while it holds the lock
                    raise bad(f"cpus[{k}].{LEVELS[a][0]}",
                              f"lock {shared[0]} is also taken in {LEVELS[b][1]} context, which can interrupt "
                              f"CPU {k}'s {LEVELS[a][1]} (it would need spin_lock_irqsave or the like)")


def _context_locks(doc):
    return Key(List(Str(LOCK_NAMES), 0, 8, doc), [])


SCHEMA = Table({
    "pending_bits": Key(Int(1, 8, "_Q_PENDING_BITS: 8 (NR_CPUS < 16384) or 1"), 8),
    "steal_spins": Key(Int(0, STEAL_SPINS_6_12, f"powerpc: steal iterations before queueing "
                           f"(6.12: {STEAL_SPINS_6_12})"), 2),
    "head_spins": Key(Int(1, HEAD_SPINS_6_12, f"powerpc: queue-head spins before setting must-queue "
                          f"(6.12: {HEAD_SPINS_6_12})"), 2),
    "ticket_bits": Key(Int(2, TICKET_BITS_6_12, f"ticket lock: the bits of each half of the word (6.12: "
                           f"{TICKET_BITS_6_12}); fewer wrap sooner, so a run that goes on forever has fewer states"),
                       TICKET_BITS_6_12),
    "cpus": Key(List(Table({
        "locks": Key(List(Str(LOCK_NAMES), 1, 8, "the locks its task takes and releases, in order")),
        "repeat": Key(Int(1, 100, "how many times the task runs its list of locks (\"forever\": with no end, "
                              "for kstep explore --liveness)", words=(FOREVER,)), 1),
        "softirq": _context_locks("the locks a softirq on this CPU takes once, in order (actor C<k>.softirq); "
                                  "empty: no softirq"),
        "irq": _context_locks("the locks a hardirq on this CPU takes once, in order (actor C<k>.irq); "
                              "empty: no hardirq"),
        "nmi": _context_locks("the locks an NMI on this CPU takes once, in order (actor C<k>.nmi); empty: no NMI"),
        "nested_nmi": _context_locks("the locks an NMI nested in this CPU's NMI takes once, in order (actor "
                                     "C<k>.nested_nmi, the fifth context: no MCS node is left for it)"),
    }), 1, MAX_CPUS, "the CPUs C0, C1, ...: one task each, and the contexts that may interrupt it")),
}, rules=_scenario_rules)


def initial_state(config, layout: str) -> QState:
    cpus = config["cpus"]
    used = {LOCK_NAMES.index(lock) for c in cpus for key, _ in LEVELS for lock in c.get(key, ())}
    nlocks = max(used) + 1
    threads = [Ctx(f"C{k}", (Frame("lock_list", (tuple(LOCK_NAMES.index(x) for x in c["locks"]), c["repeat"])),), k)
               for k, c in enumerate(cpus)]
    nest = []
    for k, c in enumerate(cpus):
        chain = [k]
        for level, (key, _) in enumerate(LEVELS[1:], start=SOFTIRQ):
            if c.get(key):  # an observation log's header repeats its interrupt (irq_repeat)
                chain.append(len(threads))
                locks = tuple(LOCK_NAMES.index(x) for x in c[key])
                program = Frame("lock_list", (locks, c.get(f"{key}_repeat", 1)))
                threads.append(Ctx(f"C{k}.{key}", (program,), k, level=level))
        if len(chain) > 1:
            nest.append(tuple(chain))
    ncpus = len(cpus)
    nodes = (Node(),) * (ncpus * MAX_NODES) if layout != TICKET else ()
    return QState(tuple(threads), (0,) * nlocks, nodes, (0,) * ncpus, layout, config["pending_bits"],
                  (config["steal_spins"], config["head_spins"]), tuple(nest), ((),) * nlocks, ((),) * nlocks,
                  frozenset(), frozenset(), config.get("ticket_bits", TICKET_BITS_6_12))


class _Renaming:
    """One renaming of CPUs (new CPU perm[k] for CPU k) in the states of one run: how it changes each
    field (``fields``, what ``Model.renaming`` returns), every context's record renamed once."""

    def __init__(self, s, perm, ctxs):
        ncpus = len(s.count)
        last = ncpus * MAX_NODES
        self.perm = perm
        self.where = tuple(ctxs[perm[t.cpu]][t.level] for t in s.threads)  # new index of each context
        self.node_of = tuple(perm[n // MAX_NODES] * MAX_NODES + n % MAX_NODES for n in range(last))
        self.ncpus, self.last = ncpus, last
        self.lay = LAYOUTS[s.pending_bits] if s.layout == QSPINLOCK else None
        self._ctx = {}  # record -> renamed record
        node = self.node
        where = self.where
        renamed = {
            "threads": Renamed(self.where, self.ctx), "words": Renamed(element=self.word),
            "nodes": Renamed(self.node_of, lambda x: x if x.next == NULL else Node(x.locked, node(x.next), x.lock)),
            "count": Renamed(perm),
            "ghost_queue": Renamed(element=lambda q: tuple(map(node, q))),
            "ghost_order": Renamed(element=lambda o: tuple(where[i] for i in o)),
            "ghost_handoffs": Renamed(whole=lambda h: frozenset(map(node, h))),
            "ghost_links": Renamed(whole=lambda links: frozenset((node(a), node(b)) for a, b in links))}
        self.fields = tuple(renamed.get(f) for f in QState._fields)

    def node(self, n):
        return self.node_of[n] if 0 <= n < self.last else n

    def word(self, w):
        lay = self.lay
        if lay is None:
            return w
        cpu = ((w & lay.TAIL_CPU_MASK) >> lay.TAIL_CPU_OFFSET) - 1
        if not 0 <= cpu < self.ncpus:
            return w
        return (w & ~lay.TAIL_CPU_MASK) | ((self.perm[cpu] + 1) << lay.TAIL_CPU_OFFSET)

    def ctx(self, t):
        out = self._ctx.get(t)
        if out is None:
            node = self.node
            cpu = self.perm[t.cpu]
            name = f"C{cpu}" + t.name[t.name.index("."):] if t.level else f"C{cpu}"
            frames = t.frames
            if any(f[0] == "link_prev" for f in frames):
                frames = tuple(Frame(f[0], node(f[1])) if f[0] == "link_prev" else f for f in frames)
            out = self._ctx[t] = Ctx(name, frames, cpu, t.lock, self.word(t.val), t.idx, node(t.next), t.ticket,
                                     t.level, t.entered)
        return out


class QspinlockModel(ProgramModel):
    name = "qspinlock"
    title = "Queued spinlocks: pending bit, MCS queue and the queue head's claim"
    program = qspinlock
    default_variant = "v6.12"
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA
    progress_labels = frozenset({"critical_section"})
    # The slow path's `val` is read again only by the cmpxchg that compares the word with it (the
    # steps that declare it live); everywhere else the next read of the word overwrites it first.
    locals = {"val": 0}

    def __init__(self, variant=None):
        chosen = self.variants[variant or self.default_variant]
        self.layout = chosen.params["program"]
        self.program = PROGRAMS[self.layout]
        self.entry = ENTRY[self.layout]
        self._futures = {}  # (context index, its record, the run's nesting) -> its future footprint
        self._footprints = {}  # (label, footprint function, context index, its record, nesting, nodes) -> footprint
        self._renamings = {}  # (perm, the run's layout of contexts) -> its _Renaming
        super().__init__(variant)

    def unstarted(self, config):
        return initial_state(config, self.layout)

    def actions(self, state):
        out = super().actions(state)
        if state.nest:
            held = set()
            threads = state.threads
            for chain in state.nest:
                top = TASK  # the innermost context in progress: interrupts in progress nest
                for j in chain[1:]:
                    if threads[j].entered and threads[j].frames:
                        top = threads[j].level
                for j in chain:
                    t = threads[j]
                    if t.level < top or (t.level == NESTED_NMI and not t.entered and top != NMI):
                        held.add(t.name)
            if held:
                out = [a for a in out if a.actor not in held]
        return out

    def step(self, state, action):
        after = super().step(state, action)
        if state[_NEST]:
            i = thread_index(after, action.actor)
            if after.threads[i].level and not after.threads[i].entered:
                after = set_ctx(after, i, entered=True)
        return after

    def footprint(self, state, action):
        """A context that interrupts, or can be interrupted by, others on its CPU waits for (or
        enters over) them: its steps read those contexts' records.  Every footprint function reads
        only the context's record (its lock, CPU, node, ``next`` and the head frame's argument), the
        number of nodes and the nesting chains, so the footprint is kept per those (and per the
        step's footprint function, which a test may swap)."""
        i = thread_index(state, action.actor)
        key = (action.label, self._steps[action.label].footprint, i, state.threads[i], state.nest, len(state.nodes))
        fp = self._footprints.get(key)
        if fp is None:
            fp = self._footprints[key] = self._footprint(state, action)
        return fp

    def _footprint(self, state, action):
        fp = super().footprint(state, action)
        if fp is None or not state.nest:
            return fp
        i = thread_index(state, action.actor)
        for chain in state.nest:
            if i in chain:
                return fp._replace(reads=fp.reads | {("threads", j) for j in chain})
        return fp

    def future_footprint(self, s, actor):
        """A context may still touch the words and queues of its locks (the one in progress and those
        left in its program), its CPU's count, any MCS node and the ghost hand-off records, and it
        reads the records of the contexts nested with it.  powerpc declares no footprints."""
        if self.layout == POWERPC:
            return None
        i = thread_index(s, actor)
        t = s.threads[i]
        key = (i, t, s.nest)  # the nesting too: one model explores runs that nest differently
        fp = self._futures.get(key)
        if fp is None:
            fp = self._futures[key] = self._future(s, i, t)
        return fp

    def _future(self, s, i, t):
        if not t.frames:
            return Footprint(frozenset(), frozenset())
        locks = {t.lock} if t.lock >= 0 else set()
        for label, arg in t.frames:
            if label == "lock_list":
                locks.update(arg[0])
            elif label in LOCK_ARG:
                locks.add(arg)
        writes = {("threads", i), ("count", t.cpu), ("nodes",), ("ghost_handoffs",), ("ghost_links",)}
        for lock in locks:
            writes |= {("words", lock), ("ghost_queue", lock), ("ghost_order", lock)}
        reads = set(writes)
        for chain in s.nest:
            if i in chain:
                reads.update(("threads", j) for j in chain)
        return Footprint(frozenset(reads), frozenset(writes))

    # -- symmetry: a CPU with all its contexts, nodes and count is a unit ------------------------------------
    def _contexts(self, s):
        """Per CPU, its contexts' indices by level (None where it has no such context)."""
        out = [[None] * len(LEVELS) for _ in s.count]
        for i, t in enumerate(s.threads):
            out[t.cpu][t.level] = i
        return out

    def symmetric_units(self, s):
        """CPUs whose contexts run the same programs at the same levels are interchangeable.  Not on
        powerpc, whose words name owners by CPU, nor for a broken variant with _Q_PENDING_BITS 1:
        there the word's arithmetic (atomic_add, a misplaced 16-bit exchange) can carry into or
        shift the tail, making a tail CPU computed from others that renaming does not follow."""
        if self.layout == POWERPC or (self.variant.broken and s.pending_bits == 1):
            return ()
        classes = {}
        for cpu, ctxs in enumerate(self._contexts(s)):
            key = tuple(None if i is None else s.threads[i].frames for i in ctxs)
            classes.setdefault(key, []).append(cpu)
        return tuple(tuple(c) for c in classes.values())

    def unit_count(self, s):
        return len(s.count)

    def unit_keys(self, s):
        if not s.nest:  # no interrupts: context k is CPU k's task
            count = s.count
            return tuple([(count[k], t.frames[0][0] if t.frames else "", len(t.frames), t.lock, t.idx, t.entered)
                          for k, t in enumerate(s.threads)])
        keys = []
        for cpu, ctxs in enumerate(self._contexts(s)):
            key = (s.count[cpu],)
            for i in ctxs:
                if i is not None:
                    t = s.threads[i]
                    key += (t.frames[0][0] if t.frames else "", len(t.frames), t.lock, t.idx, t.entered)
            keys.append(key)
        return tuple(keys)

    def renaming(self, s, perm):
        """How renaming CPU k perm[k] changes each field (``_Renaming``, one per renaming of this run's
        layout of contexts)."""
        shape = s.nest and tuple((t.cpu, t.level) for t in s.threads)  # no interrupts: context k is CPU k's task
        key = (perm, s.layout, s.pending_bits, len(s.count), shape)
        r = self._renamings.get(key)
        if r is None:
            r = self._renamings[key] = _Renaming(s, perm, self._contexts(s))
        return r.fields

    def step_lock(self, state, i):
        """The lock whose word context ``i``'s next step reads or writes (the observation log's word)."""
        t = state.threads[i]
        if t.frames and t.frames[0][0] == self.entry:
            return t.frames[0][1]
        return t.lock

    def mcs_fields(self, state, i):
        """The MCS fields an observation log records after context ``i``'s step: its CPU's nesting
        count, and the node the context holds as (idx, next, locked) -- next as a node id or NULL --
        or None when it holds none (also in the idx >= MAX_NODES fallback)."""
        t = state.threads[i]
        if not 0 <= t.idx < MAX_NODES:
            return state.count[t.cpu], None
        node = state.nodes[node_id(t.cpu, t.idx)]
        return state.count[t.cpu], (t.idx, node.next, node.locked)

    # -- what the step table and -c show ----------------------------------------------------------------
    def word_text(self, s, lock):
        w = s.words[lock]
        if s.layout == QSPINLOCK:
            pending, locked = pending_locked(s, lock)
            return f"{w:#010x} ({tail_text(s, lock) or '0'},{pending},{locked})"
        if s.layout == POWERPC:
            parts = []
            if w & PPC_TAIL_CPU_MASK:
                parts.append(f"tail {tail_text(s, lock)}")
            if w & PPC_MUST_Q_VAL:
                parts.append("must-queue")
            if w & PPC_LOCKED_VAL:
                parts.append(f"locked by cpu{(w & PPC_OWNER_CPU_MASK) >> PPC_OWNER_CPU_OFFSET}")
            return f"{w:#010x} ({', '.join(parts) or 'free'})"
        return f"{w:#010x} (next {w >> TICKET_SHIFT}, owner {w & U16})"

    def expect_functions(self):
        """What a scenario's ``[[expect]]`` may ask about a lock, named "A" to "E": ``tail(L)`` (the
        node the tail names, "cpu2/idx0"; powerpc: "cpu2"; "" for none), ``pending(L)`` and
        ``locked(L)`` (the fields' values), ``must_queue(L)`` and ``owner(L)`` (powerpc: the must-queue
        bit, and the owner field's CPU or -1 while unlocked), ``holders(L)`` (the contexts in its
        critical section), ``next_step(C)`` (the label of context C's next step, "" once it has
        finished), ``cpu(C)`` (the CPU context C runs on) and ``node("cpu2/idx0")``, the index into ``nodes`` of that MCS node (the value a
        node's ``next`` holds when it points there)."""
        def on(fn):
            return lambda s, name: fn(s, _lock_arg(s, name))

        def powerpc_only(fn):
            def check(s, lock):
                if s.layout != POWERPC:
                    raise ExpectError("must_queue() and owner() read powerpc's lock word only")
                return fn(s.words[lock])
            return on(check)

        return {"tail": on(tail_text), "pending": on(lambda s, lock: pending_locked(s, lock)[0]),
                "locked": on(lambda s, lock: pending_locked(s, lock)[1]),
                "must_queue": powerpc_only(lambda w: int(bool(w & PPC_MUST_Q_VAL))),
                "owner": powerpc_only(lambda w: (w & PPC_OWNER_CPU_MASK) >> PPC_OWNER_CPU_OFFSET
                                      if w & PPC_LOCKED_VAL else -1),
                "holders": on(lambda s, lock: tuple(holders(s, lock))), "next_step": lambda s, name: _context(s, name).frames[0][0] if _context(s, name).frames else "",
                "cpu": lambda s, name: _context(s, name).cpu, "node": _node_arg}

    def acts_on(self, s, action):
        """The lock of the acquisition in progress (``queued_spin_lock`` names it in its frame)."""
        if action.actor not in {t.name for t in s.threads}:
            return ""
        t = s.threads[thread_index(s, action.actor)]
        head = t.frames[0] if t.frames else None
        lock = head.arg if head is not None and head.label == "queued_spin_lock" == action.label else t.lock
        return f"lock {lock_name(lock)}" if 0 <= lock < len(s.words) else ""

    def summary(self, s):
        out = {f"lock {lock_name(lock)}": self.word_text(s, lock) for lock in range(len(s.words))}
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
        events = EVENTS[self.layout]
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
