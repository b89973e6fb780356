"""fork() copying page tables as Linux 6.12 does it: PTE batching over folios.

Read this beside ``mm/memory.c:copy_pte_range``, ``copy_present_ptes`` and ``mm/internal.h:
folio_pte_batch``.  ``dup_mmap`` holds the parent's ``mmap_lock`` for write and write-locks each
VMA before ``copy_page_range`` copies its page tables into the child.  For each present PTE,
``copy_present_ptes`` takes the page's folio and, if the folio is large and more than one PTE is
left in this table, asks ``folio_pte_batch`` how many of the following PTEs map the following
pages of the same folio with the same bits (ignoring the access and write bits, the dirty bit in a
shared mapping, and the soft-dirty bit unless the VMA tracks it).  The whole batch is then copied
at once: one ``folio_ref_add``, one rmap duplication, one ``wrprotect_ptes`` in the parent (a
private mapping is copy-on-write: parent and child both lose write access) and one ``set_ptes``
in the child.  If any later PTE of the batch was writable (``any_writable``), the template is made
writable first so the write-protect covers them all.  A page that may be pinned for DMA and is
still exclusive to the parent cannot be shared: the rmap duplication fails, the batch is undone
(``-EAGAIN``), a page is preallocated outside the page-table locks, and ``copy_present_page``
gives the child its own copy.

This is the batching that landed in Linux 6.9 (David Hildenbrand's "mm/memory: optimize fork()
with PTE-mapped THP"), after the December 2023 review of Ryan Roberts' "mm: Batch-copy PTE
ranges during fork()" (v4 02/16), whose arch hook ``pte_batch_remaining`` sized a batch by what
arm64's contiguous-PTE blocks allowed.  The variants are the strategies of that argument:

- ``folio-batch``: Linux 6.12.117 (the default);
- ``v6.12.0-batch``: Linux 6.12.0's ``folio_pte_batch``, which loops up to ``max_nr`` and stops
  at the folio's end only after reading the PTE past it (6.12.29 clamps ``max_nr`` first).
  Checked against the 6.12-stable review posting of that fix, "[PATCH 6.12 073/184] mm: fix
  folio_pte_batch() on XEN PV" (12 May 2025; upstream 7b08b74f3d99, Fixes: f8d937761d65): its
  removed lines are the 6.12.y loop before it (``end_ptep = start_ptep + max_nr``, ``while (ptep <
  end_ptep)``, ``pte_same``, then ``if (pte_pfn(pte) >= folio_end_pfn) break``, ``return
  min(ptep - start_ptep, max_nr)``; ``ptep - start_ptep`` is this model's ``nr``), its added lines
  are 6.12.117's function (Debian's linux-source-6.12).  Debian's changelog (in every binary
  package of linux 6.12.117-1~deb12u1, e.g. linux-kbuild's ``changelog.Debian.gz``) lists the fix
  under upstream ChangeLog-6.12.29, merged in Debian's 6.12.29-1, and names no other
  ``folio_pte_batch`` change in 6.12.y.  Not checked: a v6.12.0 tree itself (none was at hand);
- ``no-batch-hint``: 6.12's batching with the generic ``pte_batch_hint`` (always 1), the shape of
  David Hildenbrand's December 2023 prototype: every PTE of a batch is read with ``ptep_get``,
  which on arm64 gathers a folded entry's whole block each time (the thread's "16 x 16 reads");
- ``per-pte``: 6.12's single-PTE path for every PTE, the copy before 6.9;
- ``arch-hint``: v4's ``pte_batch_remaining`` in place of ``folio_pte_batch``: a batch is the
  rest of a folded arm64 block, else one PTE.

The PTE format (x86-64, arm64 with contiguous PTEs, or generic) is a scenario parameter;
``models/pgtable.py`` implements the arch helpers and counts what each does.  On arm64 the
``per-pte`` strategy is the thread's thought experiment (contiguous PTEs and fork batching
landed together in 6.9): every folded block is unfolded in the parent and folded again in the
child.

The concurrency around the copy is vma-locks' (``models/vma_locks/``): this model runs that
model's program, fork's ``sys_fork`` -> ``dup_mmap`` and its page faults, with ``copy_page_range``
filled in, so a scenario can show that a fault in the parent cannot race with the copy.  The one
real race is GUP-fast pinning a page while fork shares it: ``write_protect_seq`` makes GUP-fast
give up, and ``folio_maybe_dma_pinned`` makes fork copy a page pinned before it looked.

Simplifications, each deliberate: one fork at a time, copying into an empty child; addresses are
page numbers and the page tables are two arrays over them (``PTRS_PER_PTE`` entries per table,
so a table boundary is a multiple of 512); no preemption or lock contention breaks
``copy_pte_range``'s loop (``need_resched()`` is false); swap entries are the only non-present
PTEs (no migration or device entries, no ``-EIO`` swap-count continuation, no hwpoison);
``vma_needs_copy`` knows the anon_vma, the child's uffd-wp and nothing else (no
``VM_PFNMAP``/``VM_MIXEDMAP``, ``VM_WIPEONFORK`` or ``VM_DONTCOPY``); the special PTEs are the
shared zero page's; a fault maps a fresh order-0 page at a hole; GUP's slow path is one step
under ``mmap_lock`` that breaks COW with a copy if the page is shared.  Memory is sequentially
consistent, and arm64's ``contpte_convert`` is one step.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from ..engine import Frame, Program, Variant, push, set_thread
from ..engine.expect import ExpectError
from ..engine.scenario import Bool, Int, Key, List, Name, Str, Table, bad, unique_names
from . import pgtable as pt
from .vma_locks import broken as vl_broken
from .vma_locks import fork as vl_fork
from .vma_locks import memory as vl_memory
from .vma_locks import mmap_lock as vl_mmap_lock
from .vma_locks import model as vl_model
from .vma_locks import rwsem
from .vma_locks import state as vl
from .pgtable import (ARM64, BATCHES, FORMATS, HAS_SOFT_DIRTY, HAS_UFFD_WP, LOADS, PTE_DIRTY, PTE_PRESENT,
                      PTE_SOFT_DIRTY, PTE_SPECIAL, PTE_SWP_EXCLUSIVE, PTE_UFFD_WP, PTE_WRITE, PTE_YOUNG,
                      PTRS_PER_PTE, REFS, RMAP, X86_64, Ops)
from .rcu import RCU_ACTOR, rcu_expect_functions, rcu_init

# --- constants ---------------------------------------------------------------------------------------

ZERO_PFN = 1  # the shared zero page (a special PTE: vm_normal_page gives no page)
FIRST_PFN = 1 << 10  # where folios start; each is aligned to its own size, as the buddy allocator gives them
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


# --- the state -----------------------------------------------------------------------------------------

class Folio(NamedTuple):
    pfn: int  # folio_pfn: its first page
    order: int
    kind: str  # ANON, FILE (page cache) or SHMEM
    refcount: int  # folio->_refcount
    pincount: int  # folio->_pincount (large folios; a small one counts pins in its refcount)
    mapcount: tuple  # per page: how many PTEs map it (page->_mapcount + 1; a small folio's folio->_mapcount + 1)
    large_mapcount: int  # folio->_large_mapcount + 1 (large folios)
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


# --- small pure helpers -----------------------------------------------------------------------------

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


# --- the program --------------------------------------------------------------------------------------

def build(strategy: str) -> Program:
    """The program of one copying strategy, on vma-locks' program."""
    program = Program()
    program.include(vl_model.program, without=("copy_page_range", "dup_mmap", "handle_mm_fault", "do_anonymous_page"))
    add_dup_mmap(program)
    add_faults(program)
    add_copy(program, strategy)
    add_gup(program)
    return program


def add_dup_mmap(program: Program) -> None:
    @program.call("dup_mmap", "kernel/fork.c:dup_mmap")
    def dup_mmap(s, i, arg):
        return vl_fork.dup_mmap(s, i, arg) + (Frame("flush_tlb_mm"),)

    @program.step("flush_tlb_mm", "arch/x86/include/asm/tlbflush.h:flush_tlb_mm",
                  "dup_mmap ends with flush_tlb_mm(oldmm): one flush of the parent's TLB entries, so no "
                  "CPU keeps a writable translation of a page the copy write-protected")
    def flush_tlb_mm(s, i, arg):
        return bump(s, pt.TLB_FLUSHES)

    @program.step("copy_page_range", "mm/memory.c:copy_page_range",
                  "vma_needs_copy (the VMA has an anon_vma, or the child keeps uffd-wp) else nothing to do; "
                  "for a private (COW) mapping raw_write_seqcount_begin(write_protect_seq), then walk the "
                  "page tables down to each PTE table (copy_pmd_range)")
    def copy_page_range(s, i, v):
        vma, vm = s.vmas[v], s.vm[v]
        if not (vm.uffd_wp or vma.anon_vma != vl.NO_ANON_VMA):
            return s
        cow = is_cow_mapping(vm)
        s = s._replace(copy=Copy(vma=v), ghost_snap=s.parent,
                       write_protect_seq=s.write_protect_seq + 1 if cow else s.write_protect_seq)
        frames = []
        addr = vma.start
        while addr != vma.end:  # copy_pmd_range: pmd_addr_end, one copy_pte_range per PTE table
            nxt = min((addr // PTRS_PER_PTE + 1) * PTRS_PER_PTE, vma.end)
            frames.append(Frame("copy_pte_range", (addr, nxt)))
            addr = nxt
        if cow:
            frames.append(Frame("raw_write_seqcount_end"))
        return push(s, i, frames)

    @program.step("raw_write_seqcount_end", "include/linux/seqlock.h:raw_write_seqcount_end",
                  "copy_page_range is done with a COW mapping: write_protect_seq becomes even again, and a "
                  "GUP-fast that starts from here on may pin")
    def raw_write_seqcount_end(s, i, arg):
        return s._replace(write_protect_seq=s.write_protect_seq + 1)


def add_faults(program: Program) -> None:
    """vma-locks' fault steps, and a page really mapped in the parent's page table when they map one."""

    def mapping(label, run):
        st = vl_model.program.steps[label]

        def mapped(s, i, mode):
            done = vl_memory.anon_vma_present(s, i, mode)
            s = run(s, i, mode)
            return map_zeroed_page(s, s.threads[i].addr) if done else s

        program.step(label, str(st.source), st.what, cost=st.cost)(mapped)

    mapping("handle_mm_fault", vl_memory.handle_mm_fault)
    mapping("do_anonymous_page", vl_memory.do_anonymous_page)


def map_zeroed_page(s, addr: int):
    """do_anonymous_page: a new exclusive order-0 anon folio, mapped writable, dirty and young (the
    address is a hole: a scenario's faults are)."""
    s, k = new_folio(s, ANON, 1, 1, 1)
    pte = pt.pfn_pte(s.folios[k].pfn, PTE_PRESENT | PTE_WRITE | PTE_DIRTY | PTE_YOUNG)
    return s._replace(parent=s.parent[:addr] + (pte,) + s.parent[addr + 1:])


def add_copy(program: Program, strategy: str) -> None:
    @program.step("copy_pte_range", "mm/memory.c:copy_pte_range",
                  "start on one PTE table (again after an allocation): map and lock the child's table "
                  "(pte_alloc_map_lock) and the parent's, enter lazy MMU mode, zero the rss vector")
    def copy_pte_range(s, i, arg):
        addr, end = arg
        s = set_copy(s, addr=addr, end=end, rss=(0, 0, 0, 0))
        return push(s, i, (Frame("ptep_get", False),))

    @program.step("ptep_get", "include/linux/pgtable.h:ptep_get",
                  "copy_pte_range's loop reads the next parent PTE with ptep_get (on arm64 a folded entry "
                  "reads its whole block); none: go on; not present: copy_nonpresent_pte; present: "
                  "copy_present_ptes with max_nr the PTEs left in this table")
    def ptep_get(s, i, arg):
        c = s.copy
        ops = list(s.ops)
        pte = pt.ptep_get(s.fmt, s.parent, c.addr, ops)
        s = add_ops(s, ops)
        if pt.pte_none(pte):
            return advance(s, i, 1)
        if not pt.pte_present(pte):
            return push(s, i, (Frame("copy_nonpresent_pte"),))
        return push(set_copy(s, pte=pte, max_nr=c.end - c.addr), i, (Frame("copy_present_ptes"),))

    @program.step("copy_nonpresent_pte", "mm/memory.c:copy_nonpresent_pte",
                  "a swap entry: swap_duplicate, mark the parent's entry shared (clear its swp-exclusive "
                  "bit), count it in rss[MM_SWAPENTS] and set the same entry in the child (uffd-wp only if "
                  "the child keeps it)")
    def copy_nonpresent_pte(s, i, arg):
        c = s.copy
        ops = list(s.ops)
        parent, child = list(s.parent), list(s.child)
        span = folio_span(s)
        orig = pt.ptep_get(s.fmt, parent, c.addr, ops)
        pte = orig
        if orig & PTE_SWP_EXCLUSIVE:
            pte = orig & ~PTE_SWP_EXCLUSIVE
            pt.set_pte_at(s.fmt, parent, c.addr, pte, ops, span)
        if not s.vm[c.vma].uffd_wp:
            pte = pt.pte_clear_uffd_wp(pte)
        pt.set_pte_at(s.fmt, child, c.addr, pte, ops, span)
        s = add_ops(s._replace(parent=tuple(parent), child=tuple(child)), ops)
        s = record(with_rss(s, MM_SWAPENTS, 1), SWAP, 1)
        return advance(s, i, 1)

    add_copy_present_ptes(program, strategy)
    add_folio_pte_batch(program, strategy)

    @program.step("folio_ref_add", "include/linux/page_ref.h:folio_ref_add",
                  "take one reference on the folio for every PTE of the batch")
    def folio_ref_add(s, i, arg):
        c = s.copy
        f = s.folios[c.folio]
        s = folio_ref(s, c.folio, c.nr)
        rmap = "folio_try_dup_anon_rmap_ptes" if f.kind == ANON else "folio_dup_file_rmap_ptes"
        return push(s, i, (Frame(rmap),))

    @program.step("folio_try_dup_anon_rmap_ptes", "include/linux/rmap.h:folio_try_dup_anon_rmap_ptes",
                  "if MMF_HAS_PINNED and folio_maybe_dma_pinned and any page of the batch is "
                  "PageAnonExclusive: -EBUSY (it must be copied, not shared); else clear PageAnonExclusive "
                  "and raise each page's mapcount, and count the batch in rss[MM_ANONPAGES]")
    def folio_try_dup_anon_rmap_ptes(s, i, arg):
        c = s.copy
        s, ok = try_dup_anon_rmap(s, c.folio, pt.pte_pfn(c.pte), c.nr)
        if not ok:
            return push(s, i, (Frame("folio_ref_sub"),))
        return push(with_rss(s, MM_ANONPAGES, c.nr), i, after_rmap(s))

    @program.step("folio_dup_file_rmap_ptes", "include/linux/rmap.h:folio_dup_file_rmap_ptes",
                  "a page-cache folio: raise each page's mapcount (sharing it is always allowed) and count "
                  "the batch in rss[MM_FILEPAGES] or rss[MM_SHMEMPAGES]")
    def folio_dup_file_rmap_ptes(s, i, arg):
        c = s.copy
        s = dup_file_rmap(s, c.folio, pt.pte_pfn(c.pte), c.nr)
        return push(with_rss(s, rss_counter(s.folios[c.folio]), c.nr), i, after_rmap(s))

    @program.step("folio_ref_sub", "include/linux/page_ref.h:folio_ref_sub",
                  "the batch may be pinned: give its references back and return -EAGAIN, so that "
                  "copy_pte_range leaves its loop to preallocate a page")
    def folio_ref_sub(s, i, arg):
        c = s.copy
        s = folio_ref(s, c.folio, -c.nr)
        s = set_copy(s, nr=0, folio=-1, any_writable=False, how="")
        return push(s, i, (Frame("add_mm_rss_vec", True),))

    @program.step("pte_mkwrite", "include/linux/pgtable.h:pte_mkwrite",
                  "copy_present_ptes: a PTE of the batch after the first was writable (any_writable), so "
                  "make the template writable: the write-protect below then covers the whole batch")
    def pte_mkwrite(s, i, arg):
        return set_copy(s, pte=pt.pte_mkwrite(s.copy.pte))

    @program.call("__copy_present_ptes", "mm/memory.c:__copy_present_ptes")
    def copy_present_ptes_tail(s, i, nr):
        """COW mapping with a writable template: write-protect the parent's batch first.  The child
        gets the template write-protected, clean in a shared mapping, old, without uffd-wp unless
        its VMA keeps it."""
        pte, wrprotect = child_pte_template(s)
        addr = s.copy.addr
        return ((Frame("wrprotect_ptes", (addr, nr)),) if wrprotect else ()) + (Frame("set_ptes", (addr, nr, pte)),)

    @program.step("wrprotect_ptes", "include/linux/pgtable.h:wrprotect_ptes",
                  "write-protect the batch's PTEs in the parent, each with ptep_set_wrprotect (arm64: "
                  "contpte_wrprotect_ptes unfolds only a block the range covers in part)")
    def wrprotect_ptes(s, i, arg):
        addr, nr = arg
        ops = list(s.ops)
        parent = list(s.parent)
        pt.wrprotect_ptes(s.fmt, parent, addr, nr, ops)
        return add_ops(s._replace(parent=tuple(parent)), ops)

    @program.step("set_ptes", "include/linux/pgtable.h:set_ptes",
                  "map the batch in the child: nr PTEs from the template, the PFN advancing (arm64 folds each "
                  "whole aligned block as it writes it, and a single PTE that completes a block tries to fold it)")
    def set_ptes(s, i, arg):
        addr, nr, pte = arg
        c = s.copy
        ops = list(s.ops)
        child = list(s.child)
        pt.set_ptes(s.fmt, child, addr, pte, nr, ops, folio_span(s))
        ops[BATCHES] += 1
        s = record(add_ops(s._replace(child=tuple(child)), ops), c.how, nr)
        return advance(s, i, nr)

    @program.step("folio_get", "include/linux/mm.h:folio_get",
                  "the single-PTE path: take one reference on the folio")
    def folio_get(s, i, arg):
        c = s.copy
        f = s.folios[c.folio]
        s = set_copy(folio_ref(s, c.folio, 1), nr=1, how=SINGLE)
        rmap = "folio_try_dup_anon_rmap_pte" if f.kind == ANON else "folio_dup_file_rmap_pte"
        return push(s, i, (Frame(rmap),))

    @program.step("folio_try_dup_anon_rmap_pte", "include/linux/rmap.h:folio_try_dup_anon_rmap_pte",
                  "one page: if it may be pinned (MMF_HAS_PINNED, folio_maybe_dma_pinned) and is "
                  "PageAnonExclusive: fail, the child needs a copy; else clear PageAnonExclusive, raise its "
                  "mapcount and count it in rss[MM_ANONPAGES]")
    def folio_try_dup_anon_rmap_pte(s, i, arg):
        c = s.copy
        s, ok = try_dup_anon_rmap(s, c.folio, pt.pte_pfn(c.pte), 1)
        if not ok:
            return push(s, i, (Frame("folio_put"),))
        return push(with_rss(s, MM_ANONPAGES, 1), i, (Frame("__copy_present_ptes", 1),))

    @program.step("folio_dup_file_rmap_pte", "include/linux/rmap.h:folio_dup_file_rmap_pte",
                  "one page-cache page: raise its mapcount and count it in rss[MM_FILEPAGES] or "
                  "rss[MM_SHMEMPAGES]")
    def folio_dup_file_rmap_pte(s, i, arg):
        c = s.copy
        s = dup_file_rmap(s, c.folio, pt.pte_pfn(c.pte), 1)
        return push(with_rss(s, rss_counter(s.folios[c.folio]), 1), i, (Frame("__copy_present_ptes", 1),))

    @program.step("folio_put", "include/linux/mm.h:folio_put",
                  "the page may be pinned: drop the reference just taken and give the child a copy instead "
                  "(copy_present_page)")
    def folio_put(s, i, arg):
        c = s.copy
        s = folio_ref(s, c.folio, -1)
        return push(s, i, (Frame("copy_present_page"),))

    @program.step("copy_present_page", "mm/memory.c:copy_present_page",
                  "no preallocated page: -EAGAIN; else copy the page into it, map it exclusive in the child "
                  "(folio_add_new_anon_rmap), writable and dirty, uffd-wp as the parent's PTE has it; the "
                  "parent keeps its page as it was")
    def copy_present_page(s, i, arg):
        c = s.copy
        if c.prealloc < 0:
            return push(set_copy(s, nr=0, folio=-1, how=""), i, (Frame("add_mm_rss_vec", True),))
        new = s.folios[c.prealloc]
        s = bump(set_folio(s, c.prealloc, mapcount=(1,), exclusive=1), RMAP)  # folio_add_new_anon_rmap
        ops = list(s.ops)
        child = list(s.child)
        src = pt.ptep_get(s.fmt, s.parent, c.addr, ops)
        pte = pt.pfn_pte(new.pfn, PTE_PRESENT | PTE_DIRTY | PTE_YOUNG)
        if "w" in s.vmas[c.vma].prot:  # maybe_mkwrite
            pte = pt.pte_mkwrite(pte)
        if s.vm[c.vma].uffd_wp and pt.pte_uffd_wp(src):  # userfaultfd_pte_wp(dst_vma, ptep_get(src_pte))
            pte |= PTE_UFFD_WP
        pt.set_pte_at(s.fmt, child, c.addr, pte, ops, folio_span(s))
        ops[BATCHES] += 1
        s = add_ops(s._replace(child=tuple(child)), ops)
        s = record(set_copy(with_rss(s, MM_ANONPAGES, 1), prealloc=-1), COPIED, 1)
        return advance(s, i, 1)

    @program.step("add_mm_rss_vec", "mm/memory.c:add_mm_rss_vec",
                  "copy_pte_range leaves its loop (at the table's end, or with -EAGAIN): leave lazy MMU "
                  "mode, unlock both tables and add the rss vector to the child's counters")
    def add_mm_rss_vec(s, i, eagain):
        c = s.copy
        s = s._replace(rss=tuple(a + b for a, b in zip(s.rss, c.rss)))
        if eagain:
            return push(set_copy(s, rss=(0, 0, 0, 0)), i, (Frame("folio_prealloc"),))
        if c.addr == s.vmas[c.vma].end:  # the VMA's last table: copy_page_range is done with it
            return s._replace(copy=Copy())
        return set_copy(s, rss=(0, 0, 0, 0))

    @program.step("folio_prealloc", "mm/memory.c:folio_prealloc",
                  "-EAGAIN: with no page-table lock held, allocate the page the copy needs, then start "
                  "copy_pte_range again at the same address")
    def folio_prealloc(s, i, arg):
        c = s.copy
        s, k = new_folio(s, ANON, 1, 0, 0)
        return push(set_copy(s, prealloc=k), i, (Frame("copy_pte_range", (c.addr, c.end)),))


def try_dup_anon_rmap(s, k: int, pfn: int, nr: int):
    """include/linux/rmap.h:__folio_try_dup_anon_rmap at PTE level: (state, succeeded).

    The mapcounts are raised page by page (``page + i``), so the pages may lie past the folio's end
    when a broken batch crosses it: each page's own folio gets its mapcount raised, ``folio`` its
    _large_mapcount."""
    f = s.folios[k]
    maybe_pinned = s.mmf_has_pinned and folio_maybe_dma_pinned(f)
    pages = [(folio_index(s, p), p) for p in range(pfn, pfn + nr)]
    if maybe_pinned and any(s.folios[j].exclusive >> (p - s.folios[j].pfn) & 1 for j, p in pages):
        return s, False
    for j, p in pages:
        g = s.folios[j]
        off = p - g.pfn
        s = set_folio(s, j, exclusive=g.exclusive & ~(1 << off),
                      mapcount=g.mapcount[:off] + (g.mapcount[off] + 1,) + g.mapcount[off + 1:])
    if f.order:
        s = set_folio(s, k, large_mapcount=s.folios[k].large_mapcount + nr)
        return bump(s, RMAP, nr + 1), True
    return bump(s, RMAP), True


def dup_file_rmap(s, k: int, pfn: int, nr: int):
    """__folio_dup_file_rmap at PTE level: every page's mapcount, and a large folio's _large_mapcount."""
    for p in range(pfn, pfn + nr):
        j = folio_index(s, p)
        g = s.folios[j]
        off = p - g.pfn
        s = set_folio(s, j, mapcount=g.mapcount[:off] + (g.mapcount[off] + 1,) + g.mapcount[off + 1:])
    if s.folios[k].order:
        return bump(set_folio(s, k, large_mapcount=s.folios[k].large_mapcount + nr), RMAP, nr + 1)
    return bump(s, RMAP)


def folio_maybe_dma_pinned(f: Folio) -> bool:
    """include/linux/mm.h: a large folio counts pins in _pincount, a small one in its refcount."""
    if f.order:
        return f.pincount > 0
    return f.refcount >= GUP_PIN_COUNTING_BIAS


def after_rmap(s) -> tuple:
    """What copy_present_ptes does after a batch's rmap: pte_mkwrite if any later PTE was writable,
    then __copy_present_ptes."""
    c = s.copy
    return ((Frame("pte_mkwrite"),) if c.any_writable else ()) + (Frame("__copy_present_ptes", c.nr),)


COPY_PRESENT_PTES_WHAT = {
    FOLIO_BATCH: "vm_normal_page finds the page (none for the zero page: that one PTE is copied as it is); "
                 "a large folio with more than one PTE left in the table and no page preallocated takes the "
                 "batch path (folio_pte_batch), anything else the single-PTE path (folio_get)",
    V6_12_0_BATCH: None,  # as FOLIO_BATCH
    NO_HINT: None,
    ARCH_HINT: "vm_normal_page finds the page (none for the zero page: that one PTE is copied as it is); "
               "a large folio with more than one PTE left in the table and no page preallocated takes the "
               "batch path, sized by v4's pte_batch_remaining; anything else the single-PTE path (folio_get)",
    PER_PTE: "vm_normal_page finds the page (none for the zero page: that one PTE is copied as it is); every "
             "PTE takes 6.12's single-PTE path (folio_get), as fork copied before 6.9 batched it",
}


def add_copy_present_ptes(program: Program, strategy: str) -> None:
    what = COPY_PRESENT_PTES_WHAT[strategy] or COPY_PRESENT_PTES_WHAT[FOLIO_BATCH]
    batch, how = {FOLIO_BATCH: ("folio_pte_batch", BATCH), V6_12_0_BATCH: ("folio_pte_batch", BATCH),
                  NO_HINT: ("folio_pte_batch", BATCH), ARCH_HINT: ("pte_batch_hint", HINT),
                  PER_PTE: (None, SINGLE)}[strategy]

    @program.step("copy_present_ptes", "mm/memory.c:copy_present_ptes", what)
    def copy_present_ptes(s, i, arg):
        c = s.copy
        if pt.pte_special(c.pte):  # vm_normal_page: NULL
            return push(set_copy(s, nr=1, folio=-1, how=ZERO), i, (Frame("__copy_present_ptes", 1),))
        k = folio_index(s, pt.pte_pfn(c.pte))
        s = set_copy(s, folio=k)
        if batch and c.prealloc < 0 and s.folios[k].order and c.max_nr != 1:
            return push(set_copy(s, how=how), i, (Frame(batch, None),))
        return push(s, i, (Frame("folio_get"),))


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


# --- GUP-fast: pin_user_pages_fast(addr, 1, FOLL_WRITE) in the parent ------------------------------------

def add_gup(program: Program) -> None:
    @program.call("pin_user_pages_fast", "mm/gup.c:pin_user_pages_fast")
    def pin_user_pages_fast(s, i, addr):
        return (Frame("mm_set_has_pinned_flag", addr), Frame("gup_fast", addr))

    @program.step("mm_set_has_pinned_flag", "mm/gup.c:mm_set_has_pinned_flag",
                  "gup_fast_fallback with FOLL_PIN: set MMF_HAS_PINNED in the mm's flags (it stays set), "
                  "so that fork checks its pages for pins")
    def mm_set_has_pinned_flag(s, i, addr):
        return set_thread(s._replace(mmf_has_pinned=True), i, s.threads[i]._replace(addr=addr))

    @program.step("gup_fast", "mm/gup.c:gup_fast",
                  "FOLL_PIN: raw_read_seqcount(write_protect_seq); odd means a fork is write-protecting this "
                  "mm: give up on GUP-fast (the slow path takes mmap_lock)")
    def gup_fast(s, i, addr):
        seq = s.write_protect_seq
        s = set_thread(s, i, s.threads[i]._replace(seq=seq))
        if seq & 1:
            return push(s, i, (Frame("__get_user_pages_locked"),))
        return push(s, i, (Frame("ptep_get_lockless"),))

    @program.step("ptep_get_lockless", "include/linux/pgtable.h:ptep_get_lockless",
                  "gup_fast_pte_range, interrupts off and no lock held: read the PTE; unless it maps a "
                  "present, writable, normal page, pin nothing")
    def ptep_get_lockless(s, i, arg):
        t = s.threads[i]
        pte = s.parent[t.addr]
        s = set_thread(s, i, t._replace(pte=pte))
        if not pt.pte_present(pte) or not pt.pte_write(pte) or pt.pte_special(pte):
            return push(s, i, (Frame("read_seqcount_retry"),))
        return push(s, i, (Frame("try_grab_folio_fast"),))

    @program.step("try_grab_folio_fast", "mm/gup.c:try_grab_folio_fast",
                  "pin the folio: a large one gets a reference and _pincount + 1, a small one "
                  "GUP_PIN_COUNTING_BIAS references (what folio_maybe_dma_pinned reads); then smp_mb")
    def try_grab_folio_fast(s, i, arg):
        t = s.threads[i]
        k = folio_index(s, pt.pte_pfn(t.pte))
        s = pin(s, k, +1)
        return push(set_thread(s, i, t._replace(folio=k)), i, (Frame("gup_fast_pte_range"),))

    @program.step("gup_fast_pte_range", "mm/gup.c:gup_fast_pte_range",
                  "read the PTE again: if it changed since ptep_get_lockless (fork write-protected it), drop "
                  "the pin (gup_put_folio) and stop")
    def gup_fast_pte_range(s, i, arg):
        t = s.threads[i]
        if s.parent[t.addr] != t.pte:
            s = set_thread(pin(s, t.folio, -1), i, t._replace(folio=-1))
        return push(s, i, (Frame("read_seqcount_retry"),))

    @program.step("read_seqcount_retry", "include/linux/seqlock.h:read_seqcount_retry",
                  "gup_fast: if write_protect_seq moved since it was read, a fork may be sharing the page: "
                  "unpin and take the slow path; else keep the pin (no pin: the slow path)")
    def read_seqcount_retry(s, i, arg):
        t = s.threads[i]
        if t.folio >= 0 and s.write_protect_seq == t.seq:
            return set_thread(s, i, t._replace(pinned=True))
        if t.folio >= 0:
            s = set_thread(pin(s, t.folio, -1), i, t._replace(folio=-1))
        return push(s, i, (Frame("__get_user_pages_locked"),))

    @program.step("__get_user_pages_locked", "mm/gup.c:__get_user_pages_locked",
                  "the slow path: mmap_read_lock, sleeping behind a fork that holds mmap_lock for write")
    def get_user_pages_locked(s, i, arg):
        s = push(s, i, (Frame("__get_user_pages"), Frame("mmap_read_unlock")))
        return vl_mmap_lock.down_read(s, i, vl.MM)

    @program.step("__get_user_pages", "mm/gup.c:__get_user_pages",
                  "follow the PTE under mmap_lock; FOLL_WRITE on a PTE that is not writable faults first "
                  "(do_wp_page: an exclusive page is made writable again, a page shared with a child is copied "
                  "and the copy mapped writable in the parent), then pin the page")
    def get_user_pages(s, i, arg):
        t = s.threads[i]
        if not pt.pte_write(s.parent[t.addr]):
            s = do_wp_page(s, t.addr)
        pte = s.parent[t.addr]
        k = folio_index(s, pt.pte_pfn(pte))
        return set_thread(pin(s, k, +1), i, s.threads[i]._replace(pte=pte, folio=k, pinned=True))


def pin(s, k: int, n: int):
    """FOLL_PIN references on folio k: n = +1 pins (try_grab_folio_fast), -1 unpins (gup_put_folio)."""
    f = s.folios[k]
    if f.order:
        return set_folio(s, k, refcount=f.refcount + n, pincount=f.pincount + n)
    return set_folio(s, k, refcount=f.refcount + n * GUP_PIN_COUNTING_BIAS)


def do_wp_page(s, addr: int):
    """A write fault on a present read-only PTE: a PageAnonExclusive page is reused (made writable);
    else wp_page_copy gives the parent a new exclusive copy, mapped writable, and drops its mapping
    of the old page."""
    old = s.parent[addr]
    k = folio_index(s, pt.pte_pfn(old))
    f = s.folios[k]
    off = pt.pte_pfn(old) - f.pfn
    if f.exclusive >> off & 1:
        return s._replace(parent=s.parent[:addr] + (pt.pte_mkdirty(pt.pte_mkwrite(old)),) + s.parent[addr + 1:])
    s = set_folio(s, k, refcount=f.refcount - 1, large_mapcount=f.large_mapcount - 1 if f.order else 0,
                  mapcount=f.mapcount[:off] + (f.mapcount[off] - 1,) + f.mapcount[off + 1:])
    s, j = new_folio(s, ANON, 1, 1, 1)
    pte = pt.pfn_pte(s.folios[j].pfn, PTE_PRESENT | PTE_WRITE | PTE_DIRTY | PTE_YOUNG)
    return s._replace(parent=s.parent[:addr] + (pte,) + s.parent[addr + 1:])


# --- the variants ---------------------------------------------------------------------------------------

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


PROGRAMS = {name: build(name) for name in STRATEGIES}


def _broken(name, doc, **replaces):
    """A broken variant of 6.12.117's folio batching."""
    return Variant.bug(name, doc, params={"program": FOLIO_BATCH}, **replaces)


VARIANTS = {
    FOLIO_BATCH: Variant(FOLIO_BATCH, "Linux 6.12.117: folio_pte_batch batches the PTEs that map consecutive "
                         "pages of one large folio, max_nr clamped to the folio's end first (6.12.29)",
                         params={"program": FOLIO_BATCH}),
    V6_12_0_BATCH: Variant(V6_12_0_BATCH, "Linux 6.12.0's folio_pte_batch: the same batches, but it reads the "
                           "PTE past the folio's end before stopping there", params={"program": V6_12_0_BATCH}),
    NO_HINT: Variant(NO_HINT, "6.12's batching with the generic pte_batch_hint (1), as in David Hildenbrand's "
                     "December 2023 prototype: every PTE read with ptep_get, which on arm64 gathers a folded "
                     "entry's whole block each time", params={"program": NO_HINT}),
    PER_PTE: Variant(PER_PTE, "one PTE at a time, 6.12's single-PTE path for every PTE: fork before 6.9 "
                     "(on arm64 with contiguous PTEs a thought experiment: both landed in 6.9)",
                     params={"program": PER_PTE}),
    ARCH_HINT: Variant(ARCH_HINT, "Ryan Roberts' v4 (December 2023): an arch hook, pte_batch_remaining, sizes "
                       "each batch: the rest of a folded arm64 block, else one PTE", params={"program": ARCH_HINT}),
    "batch-crosses-folio": _broken(
        "batch-crosses-folio", "folio_pte_batch has no limit at the folio's end (no clamp of max_nr, no PFN "
        "check), so a batch runs on into the next folio when its pages follow on with the same bits",
        folio_pte_batch=folio_pte_batch(clamp=False, pfn_check=False)),
    "any-writable-dropped": _broken(
        "any-writable-dropped", "copy_present_ptes drops 'if (any_writable) pte = pte_mkwrite(pte)': a batch "
        "whose first PTE is read-only is not write-protected, and the parent keeps writable PTEs to pages it "
        "now shares with the child", pte_mkwrite=lambda s, i, arg: s),
    "wrprotect-first-only": _broken(
        "wrprotect-first-only", "__copy_present_ptes write-protects only the first PTE of a batch in the "
        "parent (ptep_set_wrprotect, as the single-PTE code did), not all nr", __copy_present_ptes=wrprotect_first_only),
    "wrprotect-unfolds-blocks": _broken(
        "wrprotect-unfolds-blocks", "contpte_wrprotect_ptes unfolds every folded block it write-protects, not "
        "only one the range covers in part: the parent's 64 KiB blocks are broken up and nothing folds them "
        "again", wrprotect_ptes=wrprotect_unfolding_every_block),
    "gup-fast-ignores-seq": _broken(
        "gup-fast-ignores-seq", "GUP-fast as before write_protect_seq (57efa1fe5957, Linux 5.11): it neither "
        "gives up while a fork is write-protecting nor drops a pin taken meanwhile",
        gup_fast=gup_fast_ignoring_seq, read_seqcount_retry=keep_pin_regardless),
    "fork-without-vma-locks": _broken(
        "fork-without-vma-locks", "dup_mmap copies the parent's VMAs without write-locking them (the memory "
        "corruption fixed by fb49c455323f): a page fault under a VMA lock changes the page table fork copies",
        dup_mmap=dup_mmap_without_vma_locks),
}


# --- scenarios ----------------------------------------------------------------------------------------------

VMA_KINDS = (PRIVATE_ANON, PRIVATE_FILE, SHARED)
FOLIO_KINDS = (ANON, FILE, SHMEM)
ZERO_MAP, SWAP_MAP = "zero", "swap"
TOGGLES = ("write", "dirty", "young", "soft_dirty", "uffd_wp")
BIT = {"write": PTE_WRITE, "dirty": PTE_DIRTY, "young": PTE_YOUNG, "soft_dirty": PTE_SOFT_DIRTY,
       "uffd_wp": PTE_UFFD_WP}
A_AND_D = PTE_DIRTY | PTE_YOUNG  # what hardware sets in one sub-PTE of a folded block, without unfolding
MAX_THREADS = 6
MAX_MAPS = 64  # [[folios]] and [[maps]] entries a scenario may have (the C port's MAX_ITEMS)


def _vma_rules(v, path):
    if v["start"] >= v["end"]:
        raise bad(path, f"start {v['start']} must be below end {v['end']}")


def folio_pages(order: int) -> int:
    return 1 << order


def _scenario_rules(sc, path):
    fmt = sc["format"]
    vmas = sorted(sc["vmas"], key=lambda v: v["start"])
    for a, b in zip(vmas, vmas[1:]):
        if b["start"] < a["end"]:
            raise bad("vmas", f"[{a['start']}, {a['end']}) and [{b['start']}, {b['end']}) overlap")
    for k, v in enumerate(sc["vmas"]):
        if v["soft_dirty"] and not HAS_SOFT_DIRTY[fmt]:
            raise bad(f"vmas[{k}].soft_dirty", f"{fmt} has no soft-dirty tracking")
        if v["uffd_wp"] and not HAS_UFFD_WP[fmt]:
            raise bad(f"vmas[{k}].uffd_wp", f"{fmt} has no uffd-wp")
    names = [f["name"] for f in sc["folios"]]
    unique_names(names, (ZERO_MAP, SWAP_MAP), "folios")
    for k, f in enumerate(sc["folios"]):
        if f["order"] not in ORDERS:
            raise bad(f"folios[{k}].order", f"{f['order']} is not one of {', '.join(map(str, ORDERS))}")
        if f["pinned"] and not sc["mmf_has_pinned"]:
            raise bad(f"folios[{k}].pinned", "a pinned folio needs mmf_has_pinned = true (FOLL_PIN sets it)")
        if f["pinned"] and f["kind"] != ANON:
            raise bad(f"folios[{k}].pinned", "only anonymous folios are pinned here")
    folios = {f["name"]: f for f in sc["folios"]}
    used = {}
    for k, m in enumerate(sc["maps"]):
        where = f"maps[{k}]"
        _map_rules(sc, m, where, folios, fmt)
        for a in range(m["at"], m["at"] + map_pages(m, folios)):
            if a in used:
                raise bad(where, f"page {a} is already mapped by maps[{used[a]}]")
            used[a] = k
        if m["folio"] in folios:
            name = m["folio"]
            for p in range(m["first"], m["first"] + map_pages(m, folios)):
                if (name, p) in used:
                    raise bad(where, f"page {p} of folio {name} is already mapped by maps[{used[(name, p)]}]")
                used[(name, p)] = k
    threads = sc["threads"]
    unique_names([t["name"] for t in threads], (RCU_ACTOR,), "threads")
    if [t["kind"] for t in threads].count("fork") != 1:
        raise bad("threads", "exactly one thread forks")
    for k, t in enumerate(threads):
        _thread_rules(sc, t, f"threads[{k}]", used, folios)


def map_pages(m, folios) -> int:
    if m["folio"] in folios:
        return m["pages"] or folio_pages(folios[m["folio"]]["order"]) - m["first"]
    return m["pages"] or 1


def _map_rules(sc, m, where, folios, fmt):
    vma = next((v for v in sc["vmas"] if v["start"] <= m["at"] < v["end"]), None)
    if vma is None:
        raise bad(where, f"page {m['at']} is in no VMA")
    n = map_pages(m, folios)
    if m["at"] + n > vma["end"]:
        raise bad(where, f"pages {m['at']}..{m['at'] + n - 1} run past the end of their VMA ({vma['end']})")
    name = m["folio"]
    if name not in folios and name not in (ZERO_MAP, SWAP_MAP):
        raise bad(where + ".folio", f"{name!r} is not a folio's name, 'zero' or 'swap'")
    if name in folios:
        f = folios[name]
        if m["first"] + n > folio_pages(f["order"]):
            raise bad(where, f"folio {name} has {folio_pages(f['order'])} pages; this maps up to page "
                             f"{m['first'] + n - 1}")
        if f["kind"] == ANON and vma["kind"] == SHARED:
            raise bad(where, "an anonymous folio in a shared mapping")
        if f["kind"] != ANON and vma["kind"] == PRIVATE_ANON:
            raise bad(where, f"a {f['kind']} folio in a private anonymous mapping")
        if f["kind"] == SHMEM and vma["kind"] != SHARED:
            raise bad(where, "a shmem folio outside a shared mapping")
    elif m["first"]:
        raise bad(where + ".first", f"the {name} entries have no folio pages to start at")
    if name in (ZERO_MAP, SWAP_MAP) and vma["kind"] != PRIVATE_ANON:
        raise bad(where, f"{name} entries belong to private anonymous mappings")
    for bit in TOGGLES:
        for off in m["toggle_" + bit]:
            if off >= n:
                raise bad(f"{where}.toggle_{bit}", f"{off} is not one of this entry's {n} pages")
    for k in range(n):
        bits = map_bits(m, k)
        page = f"{where} page {m['at'] + k}"
        if bits & PTE_SOFT_DIRTY and not HAS_SOFT_DIRTY[fmt]:
            raise bad(page, f"{fmt} has no soft-dirty bit")
        if bits & PTE_UFFD_WP and not HAS_UFFD_WP[fmt]:
            raise bad(page, f"{fmt} has no uffd-wp bit")
        if bits & PTE_WRITE and ("w" not in vma["prot"] or name in (ZERO_MAP, SWAP_MAP)):
            raise bad(page, "is writable, but " + ("its VMA is read-only" if "w" not in vma["prot"]
                                                   else f"a {name} entry never is"))
        anon = name == SWAP_MAP or name in folios and folios[name]["kind"] == ANON
        if bits & PTE_WRITE and anon and not m["exclusive"]:
            raise bad(page, "is a writable PTE to an anonymous page that is not exclusive")
        if name in folios and folios[name]["pinned"] and anon and not m["exclusive"]:
            raise bad(page, "a pinned anonymous page is always exclusive (sanity_check_pinned_pages)")


def map_bits(m, k: int) -> int:
    """The PTE bits of page k of a [[maps]] entry, toggles applied."""
    bits = 0
    for bit in TOGGLES:
        if m[bit] != (k in m["toggle_" + bit]):
            bits |= BIT[bit]
    return bits


def _thread_rules(sc, t, where, used, folios):
    if t["kind"] == "fault":
        if not t["faults"]:
            raise bad(where + ".faults", "a fault thread needs at least one address")
        for a in t["faults"]:
            vma = next((v for v in sc["vmas"] if v["start"] <= a < v["end"]), None)
            if vma is None or vma["kind"] != PRIVATE_ANON or a in used:
                raise bad(where + ".faults", f"{a} is not a hole in a private anonymous mapping")
    elif t["faults"]:
        raise bad(where + ".faults", "only a fault thread takes faults")
    if t["kind"] == "gup":
        m = sc["maps"][used[t["addr"]]] if t["addr"] in used else None
        if m is None or m["folio"] not in folios or folios[m["folio"]]["kind"] != ANON:
            raise bad(where + ".addr", f"page {t['addr']} does not map an anonymous folio")


SCHEMA = Table({
    "format": Key(Str(FORMATS, doc="the PTE format: x86-64, arm64 with 4 KiB pages and contiguous PTEs, or "
                                   "generic (the generic hint and ptep_get, as on ppc64le radix)"), X86_64),
    "mmf_has_pinned": Key(Bool(doc="MMF_HAS_PINNED: the process has pinned pages with FOLL_PIN before"), False),
    "vmas": Key(List(Table({
        "start": Key(Int(0, MAX_PAGES - 1, "vm_start, a page number (a PTE table maps 512 pages)")),
        "end": Key(Int(1, MAX_PAGES, "vm_end (exclusive)")),
        "kind": Key(Str(VMA_KINDS, doc="private anonymous memory, a private file mapping, or a shared mapping"),
                    PRIVATE_ANON),
        "prot": Key(Str(("r", "rw"), doc="protection"), "rw"),
        "anon_vma": Key(Bool(doc="has an anon_vma (without one, and without uffd-wp, fork copies nothing)"),
                        True),
        "soft_dirty": Key(Bool(doc="soft-dirty tracking is on (VM_SOFTDIRTY clear): the bit then ends batches"),
                          False),
        "uffd_wp": Key(Bool(doc="the child's VMA keeps VM_UFFD_WP (a uffd with the fork event)"), False),
    }, rules=_vma_rules), 1, 8, "the parent's VMAs, non-overlapping")),
    "folios": Key(List(Table({
        "name": Key(Name(doc="what [[maps]] entries call it")),
        "order": Key(Int(0, 9, "0 (4 KiB), 4 (64 KiB) or 9 (2 MiB)")),
        "kind": Key(Str(FOLIO_KINDS, doc="anonymous, page cache (file), or shmem"), ANON),
        "pinned": Key(Bool(doc="pinned for DMA (FOLL_PIN) before the fork"), False),
    }), 0, MAX_MAPS, "the folios the parent maps; each gets PFNs aligned to its size, in this order")),
    "maps": Key(List(Table({
        "at": Key(Int(0, MAX_PAGES - 1, "the first page it maps")),
        "folio": Key(Str(doc="a folio's name, 'zero' (the shared zero page, read-only) or 'swap' (swapped-out "
                             "anonymous pages)", max_len=12)),
        "first": Key(Int(0, 511, "which page of the folio it maps first"), 0),
        "pages": Key(Int(0, 512, "how many PTEs (0: to the end of the folio; one for zero or swap)"), 0),
        "write": Key(Bool(doc="writable"), True),
        "dirty": Key(Bool(doc="dirty"), True),
        "young": Key(Bool(doc="accessed"), True),
        "soft_dirty": Key(Bool(doc="soft-dirty (x86-64 and generic)"), False),
        "uffd_wp": Key(Bool(doc="uffd write-protected (x86-64 and arm64)"), False),
        "exclusive": Key(Bool(doc="PageAnonExclusive (anonymous pages; for swap: the swp-exclusive bit)"), True),
        **{f"toggle_{b}": Key(List(Int(0, 511), 0, 512, f"pages of this entry whose {b} bit is the opposite"), [])
           for b in TOGGLES},
    }), 0, MAX_MAPS, "the parent's PTEs: each entry as one set_ptes() at fault time (arm64 folds whole aligned "
               "blocks), then its toggles (a write, soft-dirty or uffd-wp toggle unfolds its block)")),
    "threads": Key(List(Table({
        "name": Key(Name(doc="actor name")),
        "kind": Key(Str(("fork", "fault", "gup"), doc="fork: forks once; fault: page faults (vma-locks' "
                                                     "fault path); gup: pin_user_pages_fast(addr, FOLL_WRITE)")),
        "faults": Key(List(Int(0, MAX_PAGES - 1), 0, 8, "fault: the holes it faults on, in order"), []),
        "addr": Key(Int(0, MAX_PAGES - 1, "gup: the page it pins"), 0),
    }), 1, MAX_THREADS, "the threads, each on its own CPU; exactly one forks")),
}, rules=_scenario_rules)


def initial_state(config) -> ForkState:
    fmt = config["format"]
    folios, pfn = {}, FIRST_PFN
    for f in config["folios"]:
        n = folio_pages(f["order"])
        pfn = (pfn + n - 1) // n * n
        folios[f["name"]] = (len(folios), pfn, f)
        pfn += n
    npages = max(v["end"] for v in config["vmas"])
    parent = [0] * npages
    refs = {name: [0] * folio_pages(f["order"]) for name, (_, _, f) in folios.items()}
    excl = {name: 0 for name in folios}
    swap = 0
    for m in config["maps"]:
        name = m["folio"]
        n = map_pages(m, {k: f for k, (_, _, f) in folios.items()})
        if name == SWAP_MAP:
            swap += 1
            prot = map_bits(m, 0) & (PTE_SOFT_DIRTY | PTE_UFFD_WP) | (PTE_SWP_EXCLUSIVE if m["exclusive"] else 0)
            parent[m["at"]] = pt.swp_entry_pte(swap, prot)
            continue
        first_pfn = ZERO_PFN if name == ZERO_MAP else folios[name][1] + m["first"]
        base = PTE_PRESENT | (PTE_SPECIAL if name == ZERO_MAP else 0)
        pte = pt.pfn_pte(first_pfn, base | sum(BIT[b] for b in TOGGLES if m[b]))
        if fmt == ARM64 and name != ZERO_MAP:  # contpte_set_ptes folds the whole aligned blocks
            pt.set_ptes(fmt, parent, m["at"], pte, n, [0] * len(Ops._fields), lambda pfn: None)
        else:
            for k in range(n):
                parent[m["at"] + k] = pt.pte_advance_pfn(pte, k)
        _toggle(fmt, parent, m)
        if name in folios:
            for k in range(n):
                refs[name][m["first"] + k] += 1
                if m["exclusive"] and folios[name][2]["kind"] == ANON:
                    excl[name] |= 1 << (m["first"] + k)
    folio_table = []
    for name, (_, start, f) in folios.items():
        n = folio_pages(f["order"])
        mapped = tuple(refs[name])
        held = (n if f["kind"] != ANON else 0) + (1 if f["order"] else GUP_PIN_COUNTING_BIAS) * f["pinned"]
        folio_table.append(Folio(start, f["order"], f["kind"], sum(mapped) + held, int(f["pinned"]) * (f["order"] > 0),
                                 mapped, sum(mapped) if f["order"] else 0, excl[name], held))
    vmas, vms = [], []
    for k, v in enumerate(sorted(config["vmas"], key=lambda v: v["start"])):
        vmas.append(vl.Vma(v["start"], v["end"], vl.VM_LOCK_SEQ_INIT, False, rwsem.FREE, v["prot"],
                           k if v["anon_vma"] else vl.NO_ANON_VMA, vl.LIVE, vl.accountable(v["prot"])))
        vms.append(Vm(v["kind"], v["soft_dirty"], v["uffd_wp"]))
    threads = tuple(Thread(t["name"], _program(t), t["kind"]) for t in config["threads"])
    mm = vl.Mm(rwsem.FREE, 0, tuple(range(len(vmas))))
    return ForkState(threads, mm, tuple(vmas), rcu_init(len(threads)), vl.Counters(), fmt, tuple(vms),
                     tuple(parent), (0,) * npages, tuple(folio_table), Copy(), Ops(), (0, 0, 0, 0), 0,
                     config["mmf_has_pinned"], pfn, (), ())


def _toggle(fmt, parent, m):
    """Apply a [[maps]] entry's toggles after its set_ptes: hardware sets access and dirty bits in one
    sub-PTE of a folded block; any other change goes through one PTE, which unfolds its block first."""
    for bit in TOGGLES:
        for k in m["toggle_" + bit]:
            a = m["at"] + k
            if fmt == ARM64 and BIT[bit] & ~A_AND_D:
                pt.contpte_try_unfold(parent, a, parent[a], [0] * len(Ops._fields))
            parent[a] ^= BIT[bit]


def _program(t):
    if t["kind"] == "fork":
        return (Frame("sys_fork"),)
    if t["kind"] == "fault":
        return tuple(Frame("do_user_addr_fault", a) for a in t["faults"])
    return (Frame("pin_user_pages_fast", t["addr"]),)


# --- the model ----------------------------------------------------------------------------------------------

from .fork_invariants import INVARIANTS  # noqa: E402  (the checks read this module's state and constants)


class ForkBatchModel(vl_model.VmaLocksModel):
    """vma-locks' model with fork's page-table copy filled in, and vma-locks' checks among its own."""

    name = "fork-batch"
    title = "fork(): copying page tables in batches of PTEs"
    default_variant = FOLIO_BATCH
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA

    def __init__(self, variant=None):
        self.program = PROGRAMS[self.variants[variant or self.default_variant].params["program"]]
        super().__init__(variant)

    def unstarted(self, config):
        return initial_state(config)

    def summary(self, s):
        c = s.copy
        out = {"mmap_lock": vl_model.sem_text(s.mm.mmap_lock, [t.name for t in s.threads]),
               "write_protect_seq": str(s.write_protect_seq)}
        if c.vma >= 0:
            out["copying"] = f"vma{c.vma} page {c.addr}" + (f" batch {c.nr}" if c.nr else "")
        out.update({k: str(v) for k, v in s.ops._asdict().items() if v})
        for t in s.threads:
            if t.kind == "gup" and t.folio >= 0:
                out[f"{t.name} pin"] = f"page {t.addr}" + (" (pinned)" if t.pinned else "")
        return out

    def expect_functions(self):
        return {**rcu_expect_functions(), **expect_functions()}

    def answers(self, trace):
        final = trace.states[-1]
        copies = {}
        for b in final.ghost_batches:
            copies[b.how] = copies.get(b.how, 0) + 1
        return {**final.ops._asdict(), "largest batch": max((b.nr for b in final.ghost_batches), default=0),
                "copies by kind": copies or "none", "child rss": dict(zip(("file", "anon", "swap", "shmem"), final.rss)),
                **trace.stats}


def expect_functions() -> dict:
    """What a scenario's [[expect]] may ask about the copy."""

    def batch(s, k):
        if not -len(s.ghost_batches) <= k < len(s.ghost_batches):
            raise ExpectError(f"batch({k}): only {len(s.ghost_batches)} copies so far")
        return s.ghost_batches[k]

    return {
        "batches": lambda s: len(s.ghost_batches),
        "batch": batch,  # batch(k).nr, .addr, .how
        "pte": lambda s, side, addr: pte_fields(s.parent if side == "parent" else s.child, addr),
        "bits": lambda s, value: pte_fields((value,), 0),  # a PTE value's fields: bits(copy.pte).write
        "folded": lambda s, side, addr: pt.pte_cont((s.parent if side == "parent" else s.child)[addr]),
        "folio": lambda s, addr: folio_fields(s, s.parent[addr]),
    }


class PteFields(NamedTuple):
    pfn: int
    present: bool
    write: bool
    dirty: bool
    young: bool
    soft_dirty: bool
    uffd_wp: bool
    cont: bool


def pte_fields(ptes: tuple, addr: int) -> PteFields:
    if not 0 <= addr < len(ptes):
        raise ExpectError(f"pte: page {addr} is outside the page tables")
    p = ptes[addr]
    return PteFields(pt.pte_pfn(p), pt.pte_present(p), pt.pte_write(p), pt.pte_dirty(p), pt.pte_young(p),
                     bool(p & PTE_SOFT_DIRTY), pt.pte_uffd_wp(p), pt.pte_cont(p))


def folio_fields(s, pte: int):
    k = folio_index(s, pt.pte_pfn(pte))
    if k < 0:
        raise ExpectError("folio: that PTE maps no folio")
    return s.folios[k]
