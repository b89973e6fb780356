"""What the fault's lockless path reads and writes, for the timed cost model's cache lines and the
footprint tests: lock_vma_under_rcu's walk and checks, vma_start_read with its trylock and recheck,
and the fault's counters.  Locations are ``("mm", field)`` (each a line of its own), ``("vmas", k)``
(a VMA with its lock, one line) and ``("counters",)``; the thread's own record is added by the engine.
Steps not listed here declare nothing (they may touch anything; the writes a timed run finds by
comparing states are still charged)."""

from __future__ import annotations

TREE, SEQ, COUNTERS = ("mm", "tree"), ("mm", "mm_lock_seq"), ("counters",)


def fp_walk(s, i, addr):
    """mas_walk reads the tree and the bounds of every VMA it holds (find)."""
    return (TREE,) + tuple(("vmas", v) for v in s.mm.tree), ()


def fp_own_vma(s, i, arg):
    """check_detached, check_range: the VMA found by the walk."""
    return (("vmas", s.threads[i].vma),), ()


def fp_seq(s, i, arg):
    """vma_start_read and its recheck: the VMA's vm_lock_seq against mm_lock_seq."""
    return (("vmas", s.threads[i].vma), SEQ), ()


def fp_trylock(s, i, arg):
    """down_read_trylock: an RMW of the VMA's rwsem, which fails without a write only in the model's state."""
    v = ("vmas", s.threads[i].vma)
    return (v,), (v,)


def fp_count(s, i, arg):
    """A step that counts a vm event (count_vm_vma_lock_event)."""
    return (COUNTERS,), (COUNTERS,)
