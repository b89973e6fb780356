"""The variants of the fork model: the copying strategies of the 2023 review, each its own program:
two releases (``folio-batch`` of 6.12.117, ``v6.12.0-batch``) and three other implementations
(``no-batch-hint``, ``per-pte``, ``arch-hint``); and bugs, the broken twins of broken.py.
"""

from __future__ import annotations

from ...engine import MADE_UP, Variant
from .broken import (dup_mmap_without_vma_locks, gup_fast_ignoring_seq, keep_pin_regardless, wrprotect_first_only,
                     wrprotect_unfolding_every_block)
from .internal import folio_pte_batch
from .state import ARCH_HINT, FOLIO_BATCH, NO_HINT, PER_PTE, V6_12_0_BATCH


def _broken(name, doc, fixed="", unfixed="", **replaces):
    """A broken variant of 6.12.117's folio batching."""
    return Variant.bug(name, doc, params={"program": FOLIO_BATCH}, fixed=fixed, unfixed=unfixed, **replaces)


VARIANTS = {
    FOLIO_BATCH: Variant.release(
        FOLIO_BATCH, "Linux 6.12.117: folio_pte_batch batches the PTEs that map consecutive "
        "pages of one large folio, max_nr clamped to the folio's end first (6.12.29)",
        "6.12.117", params={"program": FOLIO_BATCH}),
    V6_12_0_BATCH: Variant.release(
        V6_12_0_BATCH, "Linux 6.12.0's folio_pte_batch: the same batches, but it reads the "
        "PTE past the folio's end before stopping there. The bug 6.12.29 fixed (\"mm: fix folio_pte_batch() on "
        "XEN PV\") is not shown, only that read: on XEN PV, pte_advance_pfn past the folio's end can give a none "
        "PTE (the next PFN has no machine frame), which a none PTE in the table matches and whose PFN passes the "
        "end check, so the batch runs on over unmapped addresses; the model's PTEs have no PFN-to-frame "
        "translation, so the PTE past a folio never matches", "6.12.0", params={"program": V6_12_0_BATCH}),
    NO_HINT: Variant.implementation(
        NO_HINT, "6.12's batching with the generic pte_batch_hint (1), as in David Hildenbrand's "
        "December 2023 prototype: every PTE read with ptep_get, which on arm64 gathers a folded "
        "entry's whole block each time", params={"program": NO_HINT}),
    PER_PTE: Variant.implementation(
        PER_PTE, "one PTE at a time, 6.12's single-PTE path for every PTE: fork before 6.9 "
        "(on arm64 with contiguous PTEs a thought experiment: both landed in 6.9)", params={"program": PER_PTE}),
    ARCH_HINT: Variant.implementation(
        ARCH_HINT, "Ryan Roberts' v4 (December 2023): an arch hook, pte_batch_remaining, sizes "
        "each batch: the rest of a folded arm64 block, else one PTE. Only the sizing is v4's: the batch is then "
        "copied by 6.12.117's code (folio_ref_add, folio_try_dup_anon_rmap_ptes, wrprotect_ptes, set_ptes), not "
        "by v4's own copy loop", params={"program": ARCH_HINT}),
    "batch-crosses-folio": _broken(
        "batch-crosses-folio", "folio_pte_batch has no limit at the folio's end (no clamp of max_nr, no PFN "
        "check), so a batch runs on into the next folio when its pages follow on with the same bits", unfixed=MADE_UP,
        folio_pte_batch=folio_pte_batch(clamp=False, pfn_check=False)),
    "any-writable-dropped": _broken(
        "any-writable-dropped", "copy_present_ptes drops 'if (any_writable) pte = pte_mkwrite(pte)': a batch "
        "whose first PTE is read-only is not write-protected, and the parent keeps writable PTEs to pages it "
        "now shares with the child", unfixed=MADE_UP, pte_mkwrite=lambda s, i, arg: s),
    "wrprotect-first-only": _broken(
        "wrprotect-first-only", "__copy_present_ptes write-protects only the first PTE of a batch in the "
        "parent (ptep_set_wrprotect, as the single-PTE code did), not all nr", unfixed=MADE_UP,
        __copy_present_ptes=wrprotect_first_only),
    "wrprotect-unfolds-blocks": _broken(
        "wrprotect-unfolds-blocks", "contpte_wrprotect_ptes unfolds every folded block it write-protects, not "
        "only one the range covers in part: the parent's 64 KiB blocks are broken up and nothing folds them "
        "again", unfixed=MADE_UP, wrprotect_ptes=wrprotect_unfolding_every_block),
    "gup-fast-ignores-seq": _broken(
        "gup-fast-ignores-seq", "GUP-fast as before write_protect_seq (57efa1fe5957, Linux 5.11): it neither "
        "gives up while a fork is write-protecting nor drops a pin taken meanwhile", fixed="57efa1fe5957",
        gup_fast=gup_fast_ignoring_seq, read_seqcount_retry=keep_pin_regardless),
    "fork-without-vma-locks": _broken(
        "fork-without-vma-locks", "dup_mmap copies the parent's VMAs without write-locking them (the memory "
        "corruption fixed by fb49c455323f): a page fault under a VMA lock changes the page table fork copies",
        fixed="fb49c455323f",
        dup_mmap=dup_mmap_without_vma_locks),
}
