"""The state of the fork model: the folios, the VMAs with their two PTE arrays (parent and child),
the threads and the copy in progress, with the ghost record of every batch the checks read; and
small pure helpers over it (a folio's refcount and mapcount, the rss counters, is_cow_mapping of
include/linux/mm.h, the child's PTE template of mm/memory.c).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from ...engine import Frame, push
from ..vma_locks import state as vl
from . import pgtable as pt
from .pgtable import Ops, PTRS_PER_PTE, REFS


ZERO_PFN = 1  # the shared zero page (a special PTE: vm_normal_page gives no page)
FIRST_PFN = 1 << 10  # where folios start; each is aligned to its own size, as the buddy allocator gives them
# A large folio's large_mapcount in a kernel that keeps no folio->_large_mapcount (the thread's December 2023
# kernels): dup'ing a PTE's rmap is then one atomic, on page->_mapcount (the scenario's large_mapcount = false).
NO_LARGE_MAPCOUNT = -1
GUP_PIN_COUNTING_BIAS = 1 << 10  # include/linux/mm.h: a FOLL_PIN of a small folio adds this to its refcount
ORDERS = (0, 4, 9)  # 4 KiB, 64 KiB (arm64's contiguous block) and 2 MiB (a PMD's worth, PTE-mapped)
MAX_PAGES = 4 * PTRS_PER_PTE  # the address space a scenario may use: four PTE tables
ANON, FILE, SHMEM = "anon", "file", "shmem"
MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES = range(4)  # include/linux/mm_types_task.h
PRIVATE_ANON, PRIVATE_FILE, SHARED = "private-anon", "private-file", "shared"
FOLIO_BATCH, V6_12_0_BATCH, NO_HINT = "folio-batch", "v6.12.0-batch", "no-batch-hint"
PER_PTE, ARCH_HINT = "per-pte", "arch-hint"
STRATEGIES = (FOLIO_BATCH, V6_12_0_BATCH, NO_HINT, PER_PTE, ARCH_HINT)
# How each copy was made, as the checks read it: a folio_pte_batch batch, a v4 hint batch, the
# single-PTE path, the zero page, a copy of a maybe-pinned page, a swap entry.
BATCH, HINT, SINGLE, ZERO, COPIED, SWAP = "batch", "hint", "single", "zero", "copied", "swap"
FPB_IGNORE_DIRTY, FPB_IGNORE_SOFT_DIRTY = 1 << 0, 1 << 1  # mm/internal.h fpb_t


class Folio(NamedTuple):
    pfn: int  # folio_pfn: its first page
    order: int
    kind: str  # ANON, FILE (page cache) or SHMEM
    refcount: int  # folio->_refcount
    pincount: int  # folio->_pincount (large folios; a small one counts pins in its refcount)
    mapcount: tuple  # per page: how many PTEs map it (page->_mapcount + 1; a small folio's folio->_mapcount + 1)
    large_mapcount: int  # folio->_large_mapcount + 1 (large folios); NO_LARGE_MAPCOUNT: a kernel without it
    exclusive: int  # bit k: PageAnonExclusive of page k
    held: int  # references no page table and no pin of this run holds (the page cache's, older pins)

    @property
    def nr_pages(self) -> int:
        return 1 << self.order


class Vm(NamedTuple):
    """What copy_page_range reads of a VMA besides vma-locks' Vma."""

    kind: str  # PRIVATE_ANON, PRIVATE_FILE or SHARED (VM_SHARED)
    soft_dirty: bool  # vma_soft_dirty_enabled: VM_SOFTDIRTY clear with soft-dirty compiled in
    uffd_wp: bool  # userfaultfd_wp(dst_vma): the child's VMA keeps VM_UFFD_WP


class Copy(NamedTuple):
    """The locals of the copier, from copy_page_range down to folio_pte_batch."""

    vma: int = -1  # the VMA copy_page_range is copying (-1: none)
    addr: int = 0  # the PTE copy_pte_range's loop is at
    end: int = 0  # the end of this PTE table's range
    pte: int = 0  # ptent: what ptep_get read there; then the template the child gets
    nr: int = 0  # the batch so far
    max_nr: int = 0
    expected: int = 0  # folio_pte_batch's expected_pte
    flags: int = 0  # folio_pte_batch's fpb_t flags
    any_writable: bool = False
    folio: int = -1  # index of the batch's folio
    prealloc: int = -1  # index of the preallocated folio (-1: none)
    rss: tuple = (0, 0, 0, 0)  # the rss vector not yet added to the child's mm
    how: str = ""  # which path the copy in progress takes: BATCH, HINT, SINGLE or ZERO


class Thread(NamedTuple):
    """vma-locks' thread, and what a GUP-fast pin keeps in its locals."""

    name: str
    frames: tuple
    kind: str  # "fork", "fault" or "gup"
    addr: int = -1
    vma: int = -1
    work: int = 1
    died: str = ""
    ghost_writer_since_walk: bool = False
    tries: int = 0
    seq: int = 0  # gup: write_protect_seq as gup_fast read it
    pte: int = 0  # gup: what ptep_get_lockless read
    folio: int = -1  # gup: the folio it holds a pin on (-1: none)
    pinned: bool = False  # gup: pin_user_pages_fast returned the page pinned


class Batch(NamedTuple):
    vma: int
    addr: int
    nr: int
    how: str  # BATCH, HINT, SINGLE, ZERO, COPIED or SWAP


class ForkState(NamedTuple):
    threads: tuple
    mm: vl.Mm
    vmas: tuple  # vma-locks' Vma, by id
    rcu: object
    counters: vl.Counters
    fmt: str  # the PTE format
    vm: tuple  # Vm, by VMA id
    parent: tuple  # the parent's PTEs, one per page
    child: tuple  # the child's PTEs
    folios: tuple  # Folio, in PFN order (new ones get higher PFNs)
    copy: Copy
    ops: Ops
    rss: tuple  # the child mm's rss counters (MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES)
    write_protect_seq: int  # mm->write_protect_seq of the parent
    mmf_has_pinned: bool  # MMF_HAS_PINNED in the parent's mm->flags
    next_pfn: int  # where the page allocator puts the next new page
    ghost_snap: tuple  # the parent's PTEs as copy_page_range of the current VMA found them
    ghost_batches: tuple  # Batch: every copy made so far, in order
    handoff_after: object = 0  # vma-locks' rwsem timeout (the default: the first failed try may set HANDOFF)
    forever: bool = False  # no thread repeats forever here


def folio_index(s, pfn: int) -> int:
    """page_folio(pfn_to_page(pfn)): the index of the folio holding this PFN, or -1."""
    k = bisect_right(s.folios, pfn, key=lambda f: f.pfn) - 1
    if k >= 0 and pfn < s.folios[k].pfn + s.folios[k].nr_pages:
        return k
    return -1


def folio_span(s):
    """For set_ptes' fold check: pfn -> (first pfn, pages) of its folio."""

    def span(pfn):
        k = folio_index(s, pfn)
        return None if k < 0 else (s.folios[k].pfn, s.folios[k].nr_pages)

    return span


def set_folio(s, k: int, **changes):
    return s._replace(folios=s.folios[:k] + (s.folios[k]._replace(**changes),) + s.folios[k + 1:])


def folio_ref(s, k: int, n: int):
    """folio_ref_add/_sub, folio_get/_put: n references more (or fewer) on folio k, one atomic operation."""
    return bump(set_folio(s, k, refcount=s.folios[k].refcount + n), REFS)


def set_copy(s, **changes):
    return s._replace(copy=s.copy._replace(**changes))


def add_ops(s, ops: list):
    return s._replace(ops=Ops(*ops))


def bump(s, which: int, n: int = 1):
    ops = list(s.ops)
    ops[which] += n
    return add_ops(s, ops)


def new_folio(s, kind: str, refcount: int, mapped: int, exclusive: int):
    """The page allocator hands out an order-0 folio above every other one: (state, its index)."""
    f = Folio(s.next_pfn, 0, kind, refcount, 0, (mapped,), 0, exclusive, 0)
    return s._replace(folios=s.folios + (f,), next_pfn=s.next_pfn + 1), len(s.folios)


def is_cow_mapping(vm: Vm) -> bool:
    """(vm_flags & (VM_SHARED | VM_MAYWRITE)) == VM_MAYWRITE: every private mapping here may be written."""
    return vm.kind != SHARED


def rss_counter(folio: Folio) -> int:
    """mm_counter / mm_counter_file."""
    return {ANON: MM_ANONPAGES, FILE: MM_FILEPAGES, SHMEM: MM_SHMEMPAGES}[folio.kind]


def with_rss(s, counter: int, n: int):
    rss = list(s.copy.rss)
    rss[counter] += n
    return set_copy(s, rss=tuple(rss))


def record(s, how: str, nr: int):
    """Ghost: remember the copy just made, for the checks and the view."""
    c = s.copy
    return s._replace(ghost_batches=s.ghost_batches + (Batch(c.vma, c.addr, nr, how),))


def advance(s, i: int, nr: int):
    """copy_pte_range's loop moves on by nr PTEs: to the next PTE, or out of the loop at the table's end.
    A preallocated page nobody used is dropped (folio_put(prealloc))."""
    c = s.copy
    if c.prealloc >= 0:
        s = folio_ref(s, c.prealloc, -1)
        s = set_copy(s, prealloc=-1)
    s = set_copy(s, addr=c.addr + nr, nr=0, folio=-1, any_writable=False, how="")
    return push(s, i, (Frame("ptep_get" if c.addr + nr != c.end else "add_mm_rss_vec", False),))


def child_pte_template(s) -> tuple[int, bool]:
    """__copy_present_ptes: (the PTE the child gets, whether the parent must be write-protected)."""
    vm = s.vm[s.copy.vma]
    pte = s.copy.pte
    wrprotect = is_cow_mapping(vm) and pt.pte_write(pte)
    if wrprotect:
        pte = pt.pte_wrprotect(pte)
    if vm.kind == SHARED:
        pte = pt.pte_mkclean(pte)
    pte = pt.pte_mkold(pte)
    if not vm.uffd_wp:
        pte = pt.pte_clear_uffd_wp(pte)
    return pte, wrprotect
