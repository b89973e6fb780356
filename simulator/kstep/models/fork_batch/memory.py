"""mm/memory.c of Linux 6.12, fork's copy path: copy_pte_range, copy_nonpresent_pte,
copy_present_ptes with __copy_present_ptes, copy_present_page and the folio_prealloc retry, with the
rmap, refcount and arch helpers they call (include/linux/rmap.h, page_ref.h, pgtable.h); and the
faults this model adds (a fresh page at a hole, do_wp_page breaking COW).
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from ..vma_locks import memory as vl_memory
from ..vma_locks import model as vl_model
from . import pgtable as pt
from .pgtable import BATCHES, PTE_PRESENT, PTE_SWP_EXCLUSIVE, PTE_UFFD_WP, PTE_YOUNG, RMAP
from .internal import add_folio_pte_batch
from .state import (ANON, ARCH_HINT, BATCH, COPIED, Copy, FOLIO_BATCH, Folio, GUP_PIN_COUNTING_BIAS, HINT, MM_ANONPAGES,
                    MM_SWAPENTS, NO_HINT, NO_LARGE_MAPCOUNT, PER_PTE, SINGLE, SWAP, V6_12_0_BATCH, ZERO, add_ops,
                    advance, bump, child_pte_template, folio_index, folio_ref, folio_span, new_folio, record,
                    rss_counter, set_copy, set_folio, with_rss)


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
    """do_anonymous_page: a new exclusive order-0 anon folio, mapped young (mk_pte, pte_sw_mkyoung),
    writable and dirty: pte_mkwrite(pte_mkdirty(entry)), soft-dirty too where the architecture tracks it
    (the address is a hole in a writable private mapping: a scenario's faults are)."""
    s, k = new_folio(s, ANON, 1, 1, 1)
    pte = pt.pte_mkwrite(pt.pte_mkdirty(s.fmt, pt.pfn_pte(s.folios[k].pfn, PTE_PRESENT | PTE_YOUNG)))
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
                  "(folio_add_new_anon_rmap), writable, dirty (soft-dirty too where the architecture tracks it: "
                  "pte_mkdirty), uffd-wp as the parent's PTE has it; the "
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
        pte = pt.pte_mkdirty(s.fmt, pt.pfn_pte(new.pfn, PTE_PRESENT | PTE_YOUNG))  # mk_pte(vm_page_prot: young)
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
    return add_large_mapcount(s, k, nr), True


def dup_file_rmap(s, k: int, pfn: int, nr: int):
    """__folio_dup_file_rmap at PTE level: every page's mapcount, and a large folio's _large_mapcount."""
    for p in range(pfn, pfn + nr):
        j = folio_index(s, p)
        g = s.folios[j]
        off = p - g.pfn
        s = set_folio(s, j, mapcount=g.mapcount[:off] + (g.mapcount[off] + 1,) + g.mapcount[off + 1:])
    return add_large_mapcount(s, k, nr)


def add_large_mapcount(s, k: int, nr: int):
    """Count the rmap's atomics once its nr pages' _mapcount are raised (one each; a small folio's one
    is folio->_mapcount), and raise a large folio's _large_mapcount by nr, one atomic more, where the
    kernel keeps one."""
    f = s.folios[k]
    if f.order and f.large_mapcount != NO_LARGE_MAPCOUNT:
        return bump(set_folio(s, k, large_mapcount=f.large_mapcount + nr), RMAP, nr + 1)
    return bump(s, RMAP, nr)


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


FOLIO_BATCH_WHAT = ("vm_normal_page finds the page (none for the zero page: that one PTE is copied as it is); "
                    "a large folio with more than one PTE left in the table and no page preallocated takes the "
                    "batch path (folio_pte_batch), anything else the single-PTE path (folio_get)")
COPY_PRESENT_PTES_WHAT = {
    FOLIO_BATCH: FOLIO_BATCH_WHAT,
    V6_12_0_BATCH: None,  # as FOLIO_BATCH
    NO_HINT: None,
    ARCH_HINT: "vm_normal_page finds the page (none for the zero page: that one PTE is copied as it is); "
               "a large folio with more than one PTE left in the table and no page preallocated takes the "
               "batch path, sized by v4's pte_batch_remaining; anything else the single-PTE path (folio_get)",
    PER_PTE: "vm_normal_page finds the page (none for the zero page: that one PTE is copied as it is); every "
             "PTE takes 6.12's single-PTE path (folio_get), as fork copied before 6.9 batched it",
}


def add_copy_present_ptes(program: Program, strategy: str) -> None:
    what = COPY_PRESENT_PTES_WHAT[strategy] or FOLIO_BATCH_WHAT
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


def do_wp_page(s, addr: int):
    """A write fault on a present read-only PTE: a PageAnonExclusive page is reused (wp_page_reuse:
    pte_mkyoung, pte_mkdirty, maybe_mkwrite); else wp_page_copy gives the parent a new exclusive copy,
    mapped young, dirty and writable, and drops its mapping of the old page. pte_mkdirty sets soft-dirty
    too where the architecture tracks it, in both. On arm64 an entry of a folded block is unfolded first,
    since its write bit changes: contpte_ptep_set_access_flags (reuse) and ptep_clear_flush (copy) call
    __contpte_try_unfold, whose contpte_convert gives all 16 entries the block's access and dirty bits.
    The fault's operations on page-table memory are not counted: Ops counts the fork's."""
    parent = list(s.parent)
    old = parent[addr]
    if s.fmt == pt.ARM64:
        pt.contpte_try_unfold(parent, addr, old, [0] * len(pt.Ops._fields))
    k = folio_index(s, pt.pte_pfn(old))
    f = s.folios[k]
    off = pt.pte_pfn(old) - f.pfn
    if f.exclusive >> off & 1:
        parent[addr] = pt.pte_mkwrite(pt.pte_mkdirty(s.fmt, pt.pte_mkyoung(parent[addr])))
        return s._replace(parent=tuple(parent))
    kept = f.order > 0 and f.large_mapcount != NO_LARGE_MAPCOUNT
    s = set_folio(s, k, refcount=f.refcount - 1, large_mapcount=f.large_mapcount - kept,
                  mapcount=f.mapcount[:off] + (f.mapcount[off] - 1,) + f.mapcount[off + 1:])
    s, j = new_folio(s, ANON, 1, 1, 1)
    parent[addr] = pt.pte_mkwrite(pt.pte_mkdirty(s.fmt, pt.pfn_pte(s.folios[j].pfn, PTE_PRESENT | PTE_YOUNG)))
    return s._replace(parent=tuple(parent))
