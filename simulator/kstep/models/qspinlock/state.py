"""The state of the qspinlock model: the lock words, the per-CPU MCS nodes, the contexts that take locks.

The kernel's data are ``struct qspinlock`` (one word per lock), ``qnodes[MAX_NODES]`` per CPU
(kernel/locking/qspinlock.c, whose ``qnodes[0].mcs.count`` is the nesting count) and their
``struct mcs_spinlock`` (kernel/locking/mcs_spinlock.h); the contexts are a CPU's task and the
interrupts that may nest on it.  Ghost fields record the queue and hand-off history the invariants
check; the modelled code never reads them.  The setters build a new state without
``_replace``'s keyword parsing: the explorer calls them for every step it takes.
"""

from __future__ import annotations

from typing import NamedTuple

from ...engine import set_thread
from .spinlock_types import TICKET_BITS_6_12

MAX_NODES = 4  # kernel/locking/qspinlock.c: task, softirq, hardirq, NMI
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
    # per CPU: qnodes[0].mcs.count (powerpc: qnodesp->count); the kernel's name hides tuple.count, as mypy notes
    count: tuple  # type: ignore[assignment]
    layout: str  # QSPINLOCK, TICKET or POWERPC: how the words are laid out
    pending_bits: int  # _Q_PENDING_BITS of this run (8 or 1)
    spins: tuple  # powerpc: (steal_spins, head_spins)
    nest: tuple  # per CPU that has interrupts: its contexts' indices, lowest level first
    ghost_queue: tuple  # per lock: nodes that published their tail and are still in the MCS queue
    ghost_order: tuple  # per lock: contexts that queued and have not yet got the lock, in queue order
    ghost_handoffs: frozenset  # nodes handed the MCS lock whose owner has not yet seen it
    ghost_links: frozenset  # (node, successor): a successor linked in, not yet read by the node's owner
    ticket_bits: int = TICKET_BITS_6_12  # ticket lock: the bits of each half that tickets use


def lock_name(lock: int) -> str:
    return LOCK_NAMES[lock]


def node_id(cpu: int, idx: int) -> int:
    return cpu * MAX_NODES + idx


def set_field(s, k, value):
    """The state with its field k replaced (what ``_replace`` does, without its keyword parsing: the
    explorer builds a state this way for every step it takes)."""
    return tuple.__new__(QState, s[:k] + (value,) + s[k + 1:])


_WORDS, _NODES, _COUNT, NEST_FIELD, _QUEUE, _ORDER, HANDOFFS_FIELD, LINKS_FIELD = (QState._fields.index(f) for f in (
    "words", "nodes", "count", "nest", "ghost_queue", "ghost_order", "ghost_handoffs", "ghost_links"))
_CTX_FIELDS = {f: k for k, f in enumerate(Ctx._fields)}
_NODE_FIELDS = {f: k for k, f in enumerate(Node._fields)}


def set_word(s, lock, w):
    words = s.words
    return set_field(s, _WORDS, words[:lock] + (w,) + words[lock + 1:])


def set_node(s, n, **changes):
    nodes = s.nodes
    x = list(nodes[n])
    for name, value in changes.items():
        x[_NODE_FIELDS[name]] = value
    return set_field(s, _NODES, nodes[:n] + (tuple.__new__(Node, x),) + nodes[n + 1:])


def set_count(s, cpu, value):
    c = s.count
    return set_field(s, _COUNT, c[:cpu] + (value,) + c[cpu + 1:])


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
        s = set_field(s, _QUEUE, _set_at(s.ghost_queue, lock, s.ghost_queue[lock] + (node,)))
    return set_field(s, _ORDER, _set_at(s.ghost_order, lock, s.ghost_order[lock] + (i,)))


def ghost_dequeue(s, lock, node):
    """The node's owner is done with the MCS queue: it cleared the tail or handed the queue on."""
    q = s.ghost_queue[lock]
    return set_field(s, _QUEUE, _set_at(s.ghost_queue, lock, tuple(n for n in q if n != node)))


def ghost_got_lock(s, lock, i):
    order = s.ghost_order[lock]
    if i not in order:
        return s
    return set_field(s, _ORDER, _set_at(s.ghost_order, lock, tuple(j for j in order if j != i)))
