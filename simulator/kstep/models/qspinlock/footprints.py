"""What each step of the qspinlock model reads and writes besides its own context: the engine's
``Footprint``, which partial-order reduction uses to tell independent steps apart.

The ``fp_*`` functions are the footprints of single steps (the programs declare them with their
steps); ``Footprints`` is the model's side: a context nested with others on its CPU reads their
records, and ``future_footprint`` bounds all a context may still touch.
"""

from __future__ import annotations

from ...engine import Footprint, thread_index
from .state import POWERPC, own_node

LOCK_ARG = frozenset({"lock_section", "queued_spin_lock", "arch_spin_lock"})  # frames whose argument is a lock


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


class Footprints:
    """The footprint methods of ``QspinlockModel`` (a mixin before ``ProgramModel``)."""

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
