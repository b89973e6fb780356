"""mm/internal.h of Linux 6.12: folio_pte_batch (and its flags, fpb_t, and
__pte_batch_clear_ignored), in the forms each copying strategy uses: 6.12.117's, 6.12.0's loop,
without the arch hint, and v4's pte_batch_remaining.
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from . import pgtable as pt
from .state import (ARCH_HINT, FOLIO_BATCH, FPB_IGNORE_DIRTY, FPB_IGNORE_SOFT_DIRTY, NO_HINT, PER_PTE, SHARED,
                    V6_12_0_BATCH, Vm, add_ops, set_copy)


def fpb_flags(vm: Vm) -> int:
    flags = 0
    if vm.kind == SHARED:
        flags |= FPB_IGNORE_DIRTY
    if not vm.soft_dirty:
        flags |= FPB_IGNORE_SOFT_DIRTY
    return flags


def pte_batch_clear_ignored(pte: int, flags: int) -> int:
    """__pte_batch_clear_ignored: the bits folio_pte_batch never compares.  The arm64 contiguous bit
    is not among them: ptep_get leaks it, so a folded block and an unfolded entry never batch."""
    if flags & FPB_IGNORE_DIRTY:
        pte = pt.pte_mkclean(pte)
    if flags & FPB_IGNORE_SOFT_DIRTY:
        pte = pt.pte_clear_soft_dirty(pte)
    return pt.pte_wrprotect(pt.pte_mkold(pte))


def add_folio_pte_batch(program: Program, strategy: str) -> None:
    if strategy == ARCH_HINT:
        @program.step("pte_batch_hint", "include/linux/pgtable.h:pte_batch_hint",
                      "v4's pte_batch_remaining(pte, addr, end), which 6.9 renamed pte_batch_hint: the batch is "
                      "the rest of a folded arm64 block, no further than the table's end; 1 everywhere else")
        def pte_batch_remaining(s, i, arg):
            c = s.copy
            nr = pt.pte_batch_remaining(s.fmt, c.addr, c.pte, c.end)
            return push(set_copy(s, nr=nr), i, (Frame("folio_ref_add"),))
        return
    if strategy == PER_PTE:
        return
    v6_12_0 = strategy == V6_12_0_BATCH
    program.step("folio_pte_batch", "mm/internal.h:folio_pte_batch", FOLIO_PTE_BATCH_WHAT[strategy])(
        folio_pte_batch(clamp=not v6_12_0, pfn_check=v6_12_0, hint=strategy != NO_HINT))


FOLIO_PTE_BATCH_WHAT = {
    FOLIO_BATCH: "first clamp max_nr to the folio's pages left and start with pte_batch_hint entries (1, or "
                 "the rest of a folded arm64 block); then each turn reads the next PTE with ptep_get, compares "
                 "it with the expected one (access, write and ignored dirty/soft-dirty bits cleared) and grows "
                 "the batch by pte_batch_hint entries, or ends it",
    V6_12_0_BATCH: "6.12.0: start with pte_batch_hint entries (1, or the rest of a folded arm64 block); each "
                   "turn reads the next PTE with ptep_get, compares it with the expected one (access, write and "
                   "ignored dirty/soft-dirty bits cleared), stops if its PFN is past the folio's end, and grows "
                   "the batch by pte_batch_hint entries; max_nr is the only other limit",
    NO_HINT: "first clamp max_nr to the folio's pages left; then each turn reads the next PTE with ptep_get (on "
             "arm64 a folded entry gathers its whole block, every time), compares it with the expected one "
             "(access, write and ignored dirty/soft-dirty bits cleared) and grows the batch by one, the generic "
             "pte_batch_hint, or ends it",
}


def folio_pte_batch(clamp: bool, pfn_check: bool, hint: bool = True):
    """mm/internal.h:folio_pte_batch as one step per loop turn.  6.12.117 clamps ``max_nr`` to the
    folio's end before the loop (``clamp``); 6.12.0 instead checks each PTE's PFN against the folio's
    end inside it (``pfn_check``).  Without the arch's ``hint`` pte_batch_hint is the generic 1."""

    def batch_hint(fmt, i, pte):
        return pt.pte_batch_hint(fmt, i, pte) if hint else 1

    def start(s, i):
        c = s.copy
        flags = fpb_flags(s.vm[c.vma])
        f = s.folios[c.folio]
        max_nr = min(c.max_nr, f.pfn + f.nr_pages - pt.pte_pfn(c.pte)) if clamp else c.max_nr
        nr = batch_hint(s.fmt, c.addr, c.pte)
        expected = pte_batch_clear_ignored(pt.pte_advance_pfn(c.pte, nr), flags)
        return loop(set_copy(s, nr=nr, max_nr=max_nr, expected=expected, flags=flags, any_writable=False), i)

    def turn(s, i):
        c = s.copy
        ops = list(s.ops)
        ptep = c.addr + c.nr
        pte = pt.ptep_get(s.fmt, s.parent, ptep, ops)
        s = add_ops(s, ops)
        writable = pt.pte_write(pte)
        pte = pte_batch_clear_ignored(pte, c.flags)
        if pte != c.expected:
            return done(s, i)
        f = s.folios[c.folio]
        if pfn_check and pt.pte_pfn(pte) >= f.pfn + f.nr_pages:
            return done(s, i)
        cur = batch_hint(s.fmt, ptep, pte)
        s = set_copy(s, any_writable=c.any_writable or writable, expected=pt.pte_advance_pfn(c.expected, cur),
                     nr=c.nr + cur)
        return loop(s, i)

    def loop(s, i):
        if s.copy.nr < s.copy.max_nr:
            return push(s, i, (Frame("folio_pte_batch", "turn"),))
        return done(s, i)

    def done(s, i):
        """return min(nr, max_nr): on to folio_ref_add."""
        c = s.copy
        return push(set_copy(s, nr=min(c.nr, c.max_nr)), i, (Frame("folio_ref_add"),))

    return lambda s, i, arg: turn(s, i) if arg else start(s, i)
