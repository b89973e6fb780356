"""The broken twins of the fork model's steps: each replaces the step(s) a kernel bug (or a design
the review thread rejected) changes, and variants.py names them.
"""

from __future__ import annotations

from ...engine import Frame, push, set_thread
from ..vma_locks import broken as vl_broken
from . import pgtable as pt
from .pgtable import ARM64, LOADS
from .state import add_ops, child_pte_template


def gup_fast_ignoring_seq(s, i, addr):
    """Broken (before 57efa1fe5957, Linux 5.11): gup_fast does not look at write_protect_seq."""
    return push(set_thread(s, i, s.threads[i]._replace(seq=s.write_protect_seq)), i, (Frame("ptep_get_lockless"),))


def keep_pin_regardless(s, i, arg):
    """Broken: the pin stands whether or not write_protect_seq moved."""
    t = s.threads[i]
    if t.folio >= 0:
        return set_thread(s, i, t._replace(pinned=True))
    return push(s, i, (Frame("__get_user_pages_locked"),))


def wrprotect_first_only(s, i, nr):
    """Broken: __copy_present_ptes write-protects only the batch's first PTE in the parent, as the
    single-PTE code's ptep_set_wrprotect(src_mm, addr, src_pte) did."""
    pte, wrprotect = child_pte_template(s)
    addr = s.copy.addr
    return ((Frame("wrprotect_ptes", (addr, 1)),) if wrprotect else ()) + (Frame("set_ptes", (addr, nr, pte)),)


def wrprotect_unfolding_every_block(s, i, arg):
    """Broken: contpte_wrprotect_ptes unfolds every folded block in its range, whole or not, and
    nothing folds them again."""
    addr, nr = arg
    ops = list(s.ops)
    parent = list(s.parent)
    if s.fmt == ARM64:
        for k in range(addr, addr + nr):
            ops[LOADS] += 1
            pt.contpte_try_unfold(parent, k, parent[k], ops)
    pt.wrprotect_ptes(s.fmt, parent, addr, nr, ops)
    return add_ops(s._replace(parent=tuple(parent)), ops)


def dup_mmap_without_vma_locks(s, i, arg):
    """Broken (fixed by fb49c455323f, vma-locks' variant): dup_mmap copies the parent's VMAs without
    write-locking them, so a fault under a VMA lock can change a page table fork is copying."""
    return vl_broken.dup_mmap_without_vma_locks(s, i, arg) + (Frame("flush_tlb_mm"),)
