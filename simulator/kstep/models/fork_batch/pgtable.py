"""Page-table entries and the arch helpers fork's copy calls, in four PTE formats.

Core mm copies PTEs through a handful of helpers each architecture may override:
``ptep_get``, ``pte_batch_hint``, ``wrprotect_ptes`` and ``set_ptes``.  This module implements
them for four formats and counts what each does to page-table memory, as Linux 6.12 does it
with ``CONFIG_DEBUG_VM`` and ``CONFIG_PAGE_TABLE_CHECK`` off (as in Debian's kernels):

``x86-64``
    include/linux/pgtable.h's generic ``ptep_get`` (one ``READ_ONCE``), ``pte_batch_hint`` (1),
    ``wrprotect_ptes`` and ``set_ptes`` loops; arch/x86's ``ptep_set_wrprotect`` reads the PTE and
    clears ``_PAGE_RW`` with ``try_cmpxchg``.  Soft-dirty and uffd-wp bits exist.
``arm64-4K-contpte``
    arch/arm64 with ``CONFIG_ARM64_CONTPTE`` and 4 KiB pages: ``CONT_PTES`` = 16 entries (64 KiB)
    may be *folded* into one TLB entry with the contiguous bit (arch/arm64/mm/contpte.c).
    ``ptep_get`` of a folded entry reads all 16 to gather their access and dirty bits;
    ``pte_batch_hint`` says how many entries of the block are left; ``wrprotect_ptes`` unfolds a
    block only when its range covers part of it; ``set_ptes`` folds whole aligned blocks as it
    writes them and a single ``set_ptes`` tries to fold the block it completes.  A fold or unfold
    is ``contpte_convert``: 16 atomic clears, one TLB flush, 16 stores.  uffd-wp exists,
    soft-dirty does not.
``arm64-4K``
    arch/arm64 with 4 KiB pages and without ``CONFIG_ARM64_CONTPTE`` (every arm64 kernel before
    6.9, and the kernels the December 2023 thread timed): ``ptep_get`` is ``__ptep_get`` (one
    ``READ_ONCE``), ``pte_batch_hint`` the generic 1, ``wrprotect_ptes`` is ``__wrprotect_ptes``,
    whose ``__ptep_set_wrprotect`` reads the PTE and clears its write permission in
    ``___ptep_set_wrprotect``'s ``cmpxchg_relaxed`` loop, and ``set_ptes`` is ``__set_ptes``'
    loop of ``__set_pte`` (no barrier for a user PTE).  Nothing folds or unfolds.  uffd-wp exists,
    soft-dirty does not.
``generic``
    the generic ``ptep_get`` (one ``READ_ONCE``) and ``pte_batch_hint`` (1), with ppc64le
    Book3S-64 radix's PTE helpers: ``ptep_set_wrprotect`` reads the PTE and, only if it is
    writable, ``pte_update``s it (an ``ldarx``/``stdcx.`` loop); ``set_ptes`` stores.  Soft-dirty
    exists, uffd-wp does not.

A PTE is an int in kstep's own layout, the same for all four formats, so one picture shows
them all: the PFN from ``PFN_PTE_SHIFT`` up and one bit per property below it.  The real
positions differ (x86: RW bit 1, ACCESSED 5, DIRTY 6, SPECIAL 9, UFFD_WP 10, SOFT_DIRTY 11;
arm64: VALID 0, RDONLY 7, AF 10, DBM/WRITE 51, CONT 52, DIRTY 55, SPECIAL 56, UFFD_WP 58), and
arm64 encodes "dirty" as hardware-dirty (writable and not RDONLY) or its software DIRTY bit:
``dirty`` here is what ``pte_dirty()`` answers on each.

Counted, in ``Ops`` (what a benchmark of the copy would pay for): ``loads`` (every
``READ_ONCE``/``__ptep_get`` of one PTE, so a folded ``ptep_get`` is 1 + 16), ``stores`` (every
``set_pte``), ``atomics`` (read-modify-writes of a PTE: ``try_cmpxchg``, ``cmpxchg_relaxed``,
``ldarx``/``stdcx.``, ``xchg_relaxed``), ``tlb_flushes``, ``folds`` and ``unfolds``.  A step
takes a list copy of a page table and an ``Ops`` accumulator and the helpers change both, so the
step stays a pure function of the state.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

# --- the PTE layout ---------------------------------------------------------------------------------

PTE_PRESENT = 1 << 0
PTE_WRITE = 1 << 1
PTE_DIRTY = 1 << 2
PTE_YOUNG = 1 << 3  # the accessed bit
PTE_SOFT_DIRTY = 1 << 4
PTE_UFFD_WP = 1 << 5
PTE_SPECIAL = 1 << 6  # no struct page behind it for vm_normal_page (here: the shared zero page)
PTE_CONT = 1 << 7  # arm64's contiguous bit
PTE_SWP = 1 << 8  # a non-present swap entry (its offset sits where a PFN would)
PTE_SWP_EXCLUSIVE = 1 << 9  # pte_swp_exclusive(): the swapped-out page was PageAnonExclusive
PFN_PTE_SHIFT = 12
BITS = {"present": PTE_PRESENT, "write": PTE_WRITE, "dirty": PTE_DIRTY, "young": PTE_YOUNG,
        "soft_dirty": PTE_SOFT_DIRTY, "uffd_wp": PTE_UFFD_WP, "special": PTE_SPECIAL, "cont": PTE_CONT,
        "swap": PTE_SWP, "swp_exclusive": PTE_SWP_EXCLUSIVE}

PTRS_PER_PTE = 512  # 4 KiB pages: one PTE table maps 2 MiB, a PMD's worth


def pte_pfn(pte: int) -> int:
    return pte >> PFN_PTE_SHIFT


def pfn_pte(pfn: int, prot: int) -> int:
    return pfn << PFN_PTE_SHIFT | prot & ((1 << PFN_PTE_SHIFT) - 1)


def pte_advance_pfn(pte: int, nr: int) -> int:
    return pte + (nr << PFN_PTE_SHIFT)


def pte_none(pte: int) -> bool:
    return pte == 0


def pte_present(pte: int) -> bool:
    return bool(pte & PTE_PRESENT)


def pte_write(pte: int) -> bool:
    return bool(pte & PTE_WRITE)


def pte_dirty(pte: int) -> bool:
    return bool(pte & PTE_DIRTY)


def pte_young(pte: int) -> bool:
    return bool(pte & PTE_YOUNG)


def pte_special(pte: int) -> bool:
    return bool(pte & PTE_SPECIAL)


def pte_uffd_wp(pte: int) -> bool:
    return bool(pte & PTE_UFFD_WP)


def pte_cont(pte: int) -> bool:
    return bool(pte & PTE_CONT)


def pte_valid_cont(pte: int) -> bool:
    return bool(pte & PTE_PRESENT) and bool(pte & PTE_CONT)


def pte_wrprotect(pte: int) -> int:
    return pte & ~PTE_WRITE


def pte_mkwrite(pte: int) -> int:
    return pte | PTE_WRITE


def pte_mkclean(pte: int) -> int:
    return pte & ~PTE_DIRTY


def pte_mkdirty(fmt: str, pte: int) -> int:
    """pte_mkdirty as the format's architecture builds it: x86-64's and ppc64's (every architecture with
    CONFIG_HAVE_ARCH_SOFT_DIRTY) set the soft-dirty bit with the dirty one; arm64's has none to set."""
    return pte | PTE_DIRTY | (PTE_SOFT_DIRTY if HAS_SOFT_DIRTY[fmt] else 0)


def pte_mkold(pte: int) -> int:
    return pte & ~PTE_YOUNG


def pte_mkyoung(pte: int) -> int:
    return pte | PTE_YOUNG


def pte_clear_soft_dirty(pte: int) -> int:
    return pte & ~PTE_SOFT_DIRTY


def pte_clear_uffd_wp(pte: int) -> int:
    return pte & ~PTE_UFFD_WP


def pte_mkcont(pte: int) -> int:
    return pte | PTE_CONT


def pte_mknoncont(pte: int) -> int:
    return pte & ~PTE_CONT


def swp_entry_pte(offset: int, prot: int) -> int:
    """A swap PTE: not present, not none; ``prot`` carries its swp bits (exclusive, soft-dirty, uffd-wp)."""
    return offset << PFN_PTE_SHIFT | PTE_SWP | prot


# --- what the copy counts -----------------------------------------------------------------------------

class Ops(NamedTuple):
    """Operations on page-table memory and on folios, as the copier has done them so far."""

    loads: int = 0  # READ_ONCE of one PTE
    stores: int = 0  # set_pte of one PTE
    atomics: int = 0  # atomic read-modify-writes of one PTE
    tlb_flushes: int = 0  # contpte_convert's __flush_tlb_range, and dup_mmap's flush_tlb_mm
    folds: int = 0  # arm64: contpte_convert into a folded block
    unfolds: int = 0  # arm64: contpte_convert out of one
    refs: int = 0  # atomic folio refcount operations (folio_ref_add/_sub, folio_get/_put)
    rmap: int = 0  # atomic mapcount operations (page->_mapcount, folio->_mapcount, _large_mapcount)
    batches: int = 0  # copy_present_ptes calls that copied PTEs


LOADS, STORES, ATOMICS, TLB_FLUSHES, FOLDS, UNFOLDS, REFS, RMAP, BATCHES = range(len(Ops._fields))
# The kind of cost (engine/costs.py's KINDS) of each counted operation: folds and unfolds are paid in
# their own atomics, flush and stores, and batches are calls, no memory operation.
OPS_COST = {"loads": "load", "stores": "store", "atomics": "atomic", "tlb_flushes": "tlb_flush", "refs": "atomic",
            "rmap": "atomic"}


# --- the formats ----------------------------------------------------------------------------------------

X86_64, ARM64, GENERIC, ARM64_4K = "x86-64", "arm64-4K-contpte", "generic", "arm64-4K"
FORMATS = (X86_64, ARM64, GENERIC, ARM64_4K)  # the C port's enum pte_format, in its order
# whose kernel build each format's helpers are (source/excerpts.py's BUILDS)
ARCH = {X86_64: "x86-64", ARM64: "arm64", GENERIC: "ppc64le", ARM64_4K: "arm64-no-contpte"}
CONT_PTES = 16  # arm64, 4 KiB pages: 1 << CONFIG_ARM64_CONT_PTE_SHIFT (4)
HAS_SOFT_DIRTY = {X86_64: True, ARM64: False, GENERIC: True, ARM64_4K: False}  # CONFIG_HAVE_ARCH_SOFT_DIRTY
HAS_UFFD_WP = {X86_64: True, ARM64: True, GENERIC: False, ARM64_4K: True}  # CONFIG_HAVE_ARCH_USERFAULTFD_WP

FolioSpan = Callable[[int], Optional[tuple]]  # pfn -> (first pfn, nr pages) of its folio, None if none


def block_start(i: int) -> int:
    """contpte_align_down: the first entry of the 16-entry block entry i is in."""
    return i & ~(CONT_PTES - 1)


def ptep_get(fmt: str, pt: list, i: int, ops: list) -> int:
    """ptep_get: one READ_ONCE; on arm64 a folded entry also reads its whole block (contpte_ptep_get)
    and ORs every entry's access and dirty bits into the one it returns."""
    pte = pt[i]
    ops[LOADS] += 1
    if fmt != ARM64 or not pte_valid_cont(pte):
        return pte
    for k in range(block_start(i), block_start(i) + CONT_PTES):
        sub = pt[k]
        ops[LOADS] += 1
        if pte_dirty(sub):
            pte = pte_mkdirty(ARM64, pte)
        if pte_young(sub):
            pte = pte_mkyoung(pte)
    return pte


def pte_batch_hint(fmt: str, i: int, pte: int) -> int:
    """pte_batch_hint: 1, or on arm64 the entries left in a folded block from entry i on."""
    if fmt != ARM64 or not pte_valid_cont(pte):
        return 1
    return CONT_PTES - (i & (CONT_PTES - 1))


def pte_batch_remaining(fmt: str, i: int, pte: int, end: int) -> int:
    """v4's pte_batch_remaining(pte, addr, end) (Ryan Roberts, December 2023): the entries left in a
    folded arm64 block, no further than ``end``; 1 everywhere else."""
    if fmt != ARM64 or not pte_valid_cont(pte):
        return 1
    return min(CONT_PTES - (i & (CONT_PTES - 1)), end - i)


def contpte_convert(pt: list, i: int, pte: int, ops: list) -> None:
    """arch/arm64/mm/contpte.c:contpte_convert: break-before-make over the block of entry i:
    clear all 16 (collecting their dirty and access bits), flush the TLB for the block, and
    write them back from ``pte`` (folded if it carries PTE_CONT, unfolded if not)."""
    start = block_start(i)
    pte = pfn_pte(pte_pfn(pte) & ~(CONT_PTES - 1), pte)
    for k in range(start, start + CONT_PTES):
        sub = pt[k]
        pt[k] = 0
        ops[ATOMICS] += 1  # __ptep_get_and_clear: xchg_relaxed
        if pte_dirty(sub):
            pte = pte_mkdirty(ARM64, pte)
        if pte_young(sub):
            pte = pte_mkyoung(pte)
    ops[TLB_FLUSHES] += 1
    for k in range(CONT_PTES):
        pt[start + k] = pte_advance_pfn(pte, k)
        ops[STORES] += 1
    ops[FOLDS if pte_cont(pte) else UNFOLDS] += 1


def contpte_try_unfold(pt: list, i: int, pte: int, ops: list) -> None:
    if pte_valid_cont(pte):
        contpte_convert(pt, i, pte_mknoncont(pte), ops)  # __contpte_try_unfold


def _cmpxchg_wrprotect(pt: list, i: int, seen: int, ops: list) -> None:
    """arm64's ___ptep_set_wrprotect loop: cmpxchg from the value it was given; if the entry changed
    meanwhile (a contpte_convert gathered new access/dirty bits into it), one more round."""
    ops[ATOMICS] += 1
    if pt[i] != seen:
        ops[ATOMICS] += 1
    pt[i] = pte_wrprotect(pt[i])


def wrprotect_ptes(fmt: str, pt: list, i: int, nr: int, ops: list) -> None:
    """wrprotect_ptes: write-protect nr entries from entry i (they map one folio, one PTE table)."""
    if fmt == X86_64:
        for k in range(i, i + nr):  # ptep_set_wrprotect: READ_ONCE, then try_cmpxchg
            ops[LOADS] += 1
            ops[ATOMICS] += 1
            pt[k] = pte_wrprotect(pt[k])
    elif fmt == GENERIC:
        for k in range(i, i + nr):  # Book3S-64: if (pte_write(*ptep)) pte_update(...)
            ops[LOADS] += 1
            if pte_write(pt[k]):
                ops[ATOMICS] += 1
                pt[k] = pte_wrprotect(pt[k])
    elif fmt == ARM64_4K:
        for k in range(i, i + nr):  # __wrprotect_ptes: __ptep_get, then ___ptep_set_wrprotect's cmpxchg
            ops[LOADS] += 1
            _cmpxchg_wrprotect(pt, k, pt[k], ops)
    elif nr == 1:  # arm64: unfold a folded entry first, then write-protect the one
        orig = pt[i]
        ops[LOADS] += 1
        if pte_cont(orig):
            contpte_convert(pt, i, pte_mknoncont(orig), ops)
            orig = pte_mknoncont(orig)
        _cmpxchg_wrprotect(pt, i, orig, ops)
    else:  # contpte_wrprotect_ptes: unfold only blocks covered in part, leave whole ones folded
        contpte_try_unfold_partial(pt, i, nr, ops)
        for k in range(i, i + nr):  # __wrprotect_ptes: __ptep_get, then cmpxchg
            ops[LOADS] += 1
            _cmpxchg_wrprotect(pt, k, pt[k], ops)


def contpte_try_unfold_partial(pt: list, i: int, nr: int, ops: list) -> None:
    """Unfold the block at either end of [i, i + nr) that the range covers only in part."""
    if i != block_start(i) or nr < CONT_PTES:
        ops[LOADS] += 1
        contpte_try_unfold(pt, i, pt[i], ops)
    if i + nr != block_start(i + nr):
        ops[LOADS] += 1
        contpte_try_unfold(pt, i + nr - 1, pt[i + nr - 1], ops)


def set_ptes(fmt: str, pt: list, i: int, pte: int, nr: int, ops: list, folio_span: FolioSpan) -> None:
    """set_ptes: map nr consecutive pages of one folio at entries i.. (empty ones, if nr > 1)."""
    if fmt != ARM64:
        for k in range(nr):  # the generic loop, and powerpc's: set_pte, pte_next_pfn
            pt[i + k] = pte_advance_pfn(pte, k)
            ops[STORES] += 1
        return
    pte = pte_mknoncont(pte)
    if nr == 1:
        ops[LOADS] += 1
        contpte_try_unfold(pt, i, pt[i], ops)
        pt[i] = pte
        ops[STORES] += 1
        contpte_try_fold(pt, i, pte, ops, folio_span)
        return
    end = i + nr  # contpte_set_ptes: fold each chunk that is a whole aligned block with aligned PFNs
    pfn = pte_pfn(pte)
    while i != end:
        nxt = min(block_start(i) + CONT_PTES, end)
        chunk = pfn_pte(pfn, pte)
        whole = i == block_start(i) and nxt == block_start(nxt) and pfn % CONT_PTES == 0
        if whole:
            chunk = pte_mkcont(chunk)
        for k in range(nxt - i):
            pt[i + k] = pte_advance_pfn(chunk, k)
            ops[STORES] += 1
        pfn += nxt - i
        i = nxt


def contpte_try_fold(pt: list, i: int, pte: int, ops: list, folio_span: FolioSpan) -> None:
    """After writing the last entry of a block whose PFN is aligned likewise: fold the block if one
    folio covers it and all 16 entries are alike but for their PFN, access and dirty bits."""
    mask = CONT_PTES - 1
    if (i & mask) != mask or (pte_pfn(pte) & mask) != mask:
        return
    if not pte_present(pte) or pte_cont(pte) or pte_special(pte):
        return
    span = folio_span(pte_pfn(pte))  # __contpte_try_fold
    if span is None:
        return
    first, nr_pages = span
    folio_start = i - (pte_pfn(pte) - first)
    if folio_start > block_start(i) or folio_start + nr_pages < block_start(i) + CONT_PTES:
        return
    expected = pfn_pte(pte_pfn(pte) & ~mask, pte_mkold(pte_mkclean(pte)))
    for k in range(block_start(i), block_start(i) + CONT_PTES):
        ops[LOADS] += 1
        if pte_mkold(pte_mkclean(pt[k])) != expected:
            return
        expected = pte_advance_pfn(expected, 1)
    contpte_convert(pt, i, pte_mkcont(pte), ops)


def set_pte_at(fmt: str, pt: list, i: int, pte: int, ops: list, folio_span: FolioSpan) -> None:
    set_ptes(fmt, pt, i, pte, 1, ops, folio_span)
