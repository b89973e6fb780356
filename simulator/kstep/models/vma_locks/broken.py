"""The broken twins of the per-VMA lock model's steps: each replaces the step(s) a kernel bug
changes, and variants.py names them.
"""

from __future__ import annotations

from ...engine import Frame, push
from .mmap_lock import down_read, rwsem_try_write_lock
from .mprotect import mprotect_fixup, mprotect_newflags
from .state import MM


def try_write_lock_handoff_stops_first(s, i, lock):
    """Broken: HANDOFF keeps out the first waiter, the writer it reserves the lock for."""
    return rwsem_try_write_lock(s, i, lock, handoff_stops_first=True)


def recheck_skipped(s, i, arg):
    """Broken: trusts the lockless check, so a writer that locked the VMA in between is missed."""
    return push(s, i, (Frame("check_detached"),))


def detached_ignored(s, i, arg):
    """Broken: goes on with a VMA that munmap has already taken out of the tree."""
    return push(s, i, (Frame("check_range"),))


def vma_end_read_without_rcu(s, i, v):
    """Broken: releases the rwsem outside RCU, so the VMA may be freed under up_read's feet."""
    return (Frame("up_read", v),)


def vmf_anon_prepare_blocking(s, i, mode):
    """Broken: sleeps for mmap_lock while holding the VMA's read lock (inverts the lock order)."""
    s = push(s, i, (Frame("__anon_vma_prepare"), Frame("mmap_read_unlock"), Frame("do_anonymous_page", mode)))
    return down_read(s, i, MM)


def vma_start_write_without_rwsem(s, i, v):
    """Broken: stores vm_lock_seq without taking the VMA's rwsem, so it never waits for readers."""
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:
        return ()
    return (Frame("vma_write_seq", v),)


def mmap_region_without_unmap(s, i, arg):
    """Broken: stores the new VMA over [start, end) without gathering what is mapped there."""
    return (Frame("vma_merge_new_range", arg),)


def mprotect_fixup_without_vma_lock(s, i, arg):
    """Broken (like the mempolicy and dup_anon_vma bugs Jann Horn found in 6.4): changes vm_flags of
    a whole VMA without write-locking it first, so faults under the VMA lock see it change."""
    v, prev, start, end, prot = arg
    if (s.vmas[v].start, s.vmas[v].end) == (start, end) and prot != s.vmas[v].prot:
        return (Frame("vm_flags_reset", (v,) + mprotect_newflags(s.vmas[v], prot)),)
    return mprotect_fixup(s, i, arg)


def dup_mmap_without_vma_locks(s, i, arg):
    """Broken (fixed by fb49c455323f): copies the parent's VMAs without write-locking them, so a
    fault under a VMA lock can change them while fork copies."""
    return tuple(Frame("copy_page_range", v) for v in s.mm.tree)
