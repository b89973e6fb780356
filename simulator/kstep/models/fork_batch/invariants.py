"""The checks of fork's page-table copy, computed from the raw page tables.

None of them calls the model's copying code (folio_pte_batch, the arch helpers in pgtable.py):
each recomputes what Linux 6.12 promises from the parent's and the child's PTE arrays, the folio
table, and the record of the copies made (``ghost_batches``: where each copy started, how many
PTEs it took and which path it took) against the parent's PTEs as ``copy_page_range`` found them
(``ghost_snap``).  Only the PTE bit layout is shared with the model.

The copier's own references and mapcounts run ahead of its page tables in the middle of a batch
(``folio_ref_add`` comes before ``set_ptes``), so the accounting checks look only at states where
no batch is in progress (the copier's ``folio`` local is -1), as the kernel's own accounting does
once the page-table lock is dropped.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Optional

from ...engine import HARM, Invariant, thread_index
from .state import (ANON, BATCH, COPIED, GUP_PIN_COUNTING_BIAS, MM_ANONPAGES, MM_FILEPAGES, MM_SHMEMPAGES, MM_SWAPENTS,
                    NO_LARGE_MAPCOUNT, SHARED, SHMEM, SWAP)
from ..rcu import RCU_ACTOR
from ..vma_locks.invariants import INVARIANTS as VMA_LOCKS_INVARIANTS
from ..vma_locks.state import LIVE
from .pgtable import (ARM64, CONT_PTES, PFN_PTE_SHIFT, PTE_CONT, PTE_DIRTY, PTE_PRESENT, PTE_SOFT_DIRTY, PTE_SPECIAL,
                      PTE_SWP, PTE_SWP_EXCLUSIVE, PTE_UFFD_WP, PTE_WRITE, PTE_YOUNG, PTRS_PER_PTE)

def pfn(pte: int) -> int:
    return pte >> PFN_PTE_SHIFT


def present(pte: int) -> bool:
    return bool(pte & PTE_PRESENT)


def folio_at(s, p: int) -> int:
    """The index of the folio holding PFN p, or -1."""
    k = bisect_right([f.pfn for f in s.folios], p) - 1
    return k if k >= 0 and p < s.folios[k].pfn + (1 << s.folios[k].order) else -1


def changed(before: tuple, after: tuple) -> list:
    """The pages whose PTE a step changed."""
    if before is after:
        return []
    return [p for p, (x, y) in enumerate(zip(before, after)) if x != y]


def vma_of(s, a: int) -> int:
    for v, vma in enumerate(s.vmas):
        if vma.start <= a < vma.end and vma.status == LIVE and not vma.detached:
            return v
    return -1


def seen(s, ptes: tuple, a: int) -> int:
    """The PTE at a as ptep_get returns it: on arm64 an entry of a folded block carries the access
    and dirty bits of the whole block."""
    pte = ptes[a]
    if s.fmt != ARM64 or not (present(pte) and pte & PTE_CONT):
        return pte
    start = a - a % CONT_PTES
    for k in range(start, start + CONT_PTES):
        pte |= ptes[k] & (PTE_DIRTY | PTE_YOUNG)
    return pte


def ignored(s, v: int) -> int:
    """The bits 6.12 lets differ inside a batch: access and write always, dirty in a shared mapping,
    soft-dirty unless the VMA tracks it."""
    vm = s.vm[v]
    bits = PTE_YOUNG | PTE_WRITE
    if vm.kind == SHARED:
        bits |= PTE_DIRTY
    if not vm.soft_dirty:
        bits |= PTE_SOFT_DIRTY
    return bits


def expected_child(s, b, k: int) -> int:
    """What 6.12 puts in the child at page b.addr + k of a batch or a single copy: the first PTE's bits
    (made writable if any later one was), the PFN advancing, write-protected in a COW mapping, clean
    in a shared one, old, uffd-wp only if the child's VMA keeps it."""
    snap = s.ghost_snap
    first = seen(s, snap, b.addr)
    if any(snap[b.addr + j] & PTE_WRITE for j in range(1, b.nr)):
        first |= PTE_WRITE
    vm = s.vm[b.vma]
    pte = first + (k << PFN_PTE_SHIFT)
    if vm.kind != SHARED:
        pte &= ~PTE_WRITE
    else:
        pte &= ~PTE_DIRTY
    pte &= ~PTE_YOUNG
    if not vm.uffd_wp:
        pte &= ~PTE_UFFD_WP
    return pte & ~PTE_CONT


def child_differs(s, b, k: int) -> Optional[str]:
    a = b.addr + k
    got = s.child[a]
    vm = s.vm[b.vma]
    if b.how == SWAP:
        want = s.ghost_snap[a] & ~PTE_SWP_EXCLUSIVE
        if not vm.uffd_wp:
            want &= ~PTE_UFFD_WP
        return None if got == want else f"the child's swap entry at page {a} is {got:#x}, not {want:#x}"
    if b.how == COPIED:
        src = s.ghost_snap[a]
        if not present(got) or pfn(got) == pfn(src):
            return f"page {a} should be a copy in the child, and the child maps PFN {pfn(got)}"
        k = folio_at(s, pfn(got))
        f = s.folios[k]
        write = "w" in s.vmas[b.vma].prot
        if f.kind != ANON or not f.exclusive & 1 or bool(got & PTE_WRITE) != write or not got & PTE_DIRTY:
            return f"the copy of page {a} is not the child's own exclusive, dirty{', writable' if write else ''} page"
        return None
    want = expected_child(s, b, k)
    mask = ~PTE_CONT
    if got & PTE_CONT and s.fmt == ARM64:  # a folded block's dirty bit is the whole block's
        mask &= ~PTE_DIRTY
    if (got ^ want) & mask:
        return f"the child's PTE at page {a} is {got:#x}, not {want:#x} (from the parent's {s.ghost_snap[b.addr]:#x})"
    return None


# --- the checks ---------------------------------------------------------------------------------------------

def child_maps_parent_pages(s, a, t):
    """Checked where a step changed the child: the copies it made, and any PTE it changed besides
    (arm64 folding a block of earlier copies)."""
    new = t.ghost_batches[len(s.ghost_batches):]
    pages = set(changed(s.child, t.child))
    if not pages and not new:
        return None
    for b in new:
        for k in range(b.nr):
            pages.discard(b.addr + k)
            why = child_differs(t, b, k)
            if why:
                return why
    for p in sorted(pages):
        b = next((b for b in t.ghost_batches if b.addr <= p < b.addr + b.nr), None)
        if b is None:
            if t.child[p]:
                return f"the child maps page {p} ({t.child[p]:#x}), which no copy put there"
            continue
        why = child_differs(t, b, p - b.addr)
        if why:
            return why
    return None


def every_pte_copied(s, a, t):
    """When copy_pte_range leaves a VMA's last table, every PTE of the VMA was copied exactly once."""
    if s.copy.vma < 0 or t.copy.vma >= 0:
        return None
    v = s.copy.vma
    vma = t.vmas[v]
    count = {}
    for b in t.ghost_batches:
        if b.vma == v:
            for k in range(b.nr):
                count[b.addr + k] = count.get(b.addr + k, 0) + 1
    for p in range(vma.start, vma.end):
        want = 1 if t.ghost_snap[p] else 0
        if count.get(p, 0) != want:
            return f"page {p} of VMA {v} was copied {count.get(p, 0)} times"
    return None


def cow_write_protected(s, a, t):
    for p in sorted(set(changed(s.child, t.child) + changed(s.parent, t.parent))):
        c = t.child[p]
        if not present(c) or c & PTE_SPECIAL:
            continue
        q = t.parent[p]
        v = vma_of(t, p)
        if present(q) and pfn(q) == pfn(c) and v >= 0 and t.vm[v].kind != SHARED and (q | c) & PTE_WRITE:
            side = "parent" if q & PTE_WRITE else "child"
            return (f"PFN {pfn(c)} at page {p} is shared by parent and child after a COW copy, and the {side}'s "
                    f"PTE is writable: its writes reach the other process")
    return None


def shared_anon_not_exclusive(s, a, t):
    if t.child is s.child and t.folios is s.folios:
        return None
    for p, c in enumerate(t.child):
        if present(c) and not c & PTE_SPECIAL and present(t.parent[p]) and pfn(t.parent[p]) == pfn(c):
            k = folio_at(t, pfn(c))
            f = t.folios[k]
            if f.kind == ANON and f.exclusive >> (pfn(c) - f.pfn) & 1:
                return f"PFN {pfn(c)} is mapped by parent and child and still PageAnonExclusive"
    return None


def gup_refs(s, k: int) -> int:
    f = s.folios[k]
    holders = sum(1 for t in s.threads if t.kind == "gup" and t.folio == k)
    return holders * (1 if f.order else GUP_PIN_COUNTING_BIAS)


def refcounts_follow_mappings(s, a, t):
    if t.copy.folio >= 0 or (t.folios is s.folios and t.parent is s.parent and t.child is s.child
                             and s.copy.folio < 0):
        return None
    maps = [list((0,) * (1 << f.order)) for f in t.folios]
    for ptes in (t.parent, t.child):
        for pte in ptes:
            if present(pte) and not pte & PTE_SPECIAL:
                k = folio_at(t, pfn(pte))
                maps[k][pfn(pte) - t.folios[k].pfn] += 1
    for k, f in enumerate(t.folios):
        want = f.held + sum(maps[k]) + gup_refs(t, k) + (1 if k == t.copy.prealloc else 0)
        if f.refcount != want:
            return (f"folio at PFN {f.pfn} has refcount {f.refcount}, but {sum(maps[k])} PTEs map it and "
                    f"{want - sum(maps[k])} other references are held")
        if tuple(maps[k]) != f.mapcount:
            off = next(j for j, (m, c) in enumerate(zip(maps[k], f.mapcount)) if m != c)
            return (f"page {off} of the folio at PFN {f.pfn} has mapcount {f.mapcount[off]}, but {maps[k][off]} "
                    f"PTEs map it")
        if f.order and f.large_mapcount not in (sum(maps[k]), NO_LARGE_MAPCOUNT):
            return f"folio at PFN {f.pfn} has _large_mapcount {f.large_mapcount}, but {sum(maps[k])} PTEs map it"
    return None


def rss_counts_child_ptes(s, a, t):
    if t.copy.folio >= 0 or t.child is s.child and t.rss is s.rss and t.copy.rss is s.copy.rss:
        return None
    want = [0, 0, 0, 0]
    for pte in t.child:
        if pte & PTE_SWP and not present(pte):
            want[MM_SWAPENTS] += 1
        elif present(pte) and not pte & PTE_SPECIAL:
            f = t.folios[folio_at(t, pfn(pte))]
            want[MM_ANONPAGES if f.kind == ANON else MM_SHMEMPAGES if f.kind == SHMEM else MM_FILEPAGES] += 1
    got = [x + y for x, y in zip(t.rss, t.copy.rss)]
    if got != want:
        return f"the child's rss counters (file, anon, swap, shmem) are {got}, its PTEs say {want}"
    return None


def batch_within_bounds(s, a, t):
    if len(t.ghost_batches) == len(s.ghost_batches):
        return None
    b = t.ghost_batches[-1]
    vma = t.vmas[b.vma]
    if b.nr < 1 or b.addr < vma.start or b.addr + b.nr > vma.end:
        return f"a copy of {b.nr} PTEs at page {b.addr} leaves VMA {b.vma} [{vma.start}, {vma.end})"
    if b.addr // PTRS_PER_PTE != (b.addr + b.nr - 1) // PTRS_PER_PTE:
        return f"a batch of {b.nr} PTEs at page {b.addr} crosses a page-table boundary"
    first = t.ghost_snap[b.addr]
    if b.nr > 1:
        k = folio_at(t, pfn(first))
        f = t.folios[k]
        if pfn(first) + b.nr > f.pfn + (1 << f.order):
            return (f"a batch of {b.nr} PTEs at page {b.addr} runs past the end of the folio at PFN {f.pfn} "
                    f"({1 << f.order} pages) into the next one")
    return None


def batches_maximal(s, a, t):
    """A folio_pte_batch batch ends only at max_nr (the table's end), the folio's end, a PTE that is not
    present, a PFN that does not follow on, or a bit 6.12 compares (everything but access, write,
    dirty in a shared mapping and soft-dirty unless tracked; arm64's contiguous bit included)."""
    if len(t.ghost_batches) == len(s.ghost_batches) or t.ghost_batches[-1].how != BATCH:
        return None
    b = t.ghost_batches[-1]
    snap = t.ghost_snap
    first = seen(t, snap, b.addr)
    f = t.folios[folio_at(t, pfn(first))]
    table_end = (b.addr // PTRS_PER_PTE + 1) * PTRS_PER_PTE
    limit = min(table_end, t.vmas[b.vma].end) - b.addr
    limit = min(limit, f.pfn + (1 << f.order) - pfn(first))
    mask = ~ignored(t, b.vma)
    n = 1
    while n < limit and not (seen(t, snap, b.addr + n) ^ (first + (n << PFN_PTE_SHIFT))) & mask:
        n += 1
    if b.nr != n:
        return (f"folio_pte_batch took {b.nr} PTEs at page {b.addr}; 6.12's rules allow exactly {n} "
                f"(first PTE {first:#x})")
    return None


def contpte_well_formed(s, a, t):
    if t.fmt != ARM64 or t.parent is s.parent and t.child is s.child:
        return None
    for side, ptes in (("parent", t.parent), ("child", t.child)):
        for start in range(0, len(ptes) - len(ptes) % CONT_PTES, CONT_PTES):
            block = ptes[start:start + CONT_PTES]
            if not any(p & PTE_CONT for p in block):
                continue
            head = block[0]
            k = folio_at(t, pfn(head))
            same = ~(PTE_DIRTY | PTE_YOUNG)
            if (not all(present(p) and p & PTE_CONT for p in block) or pfn(head) % CONT_PTES or k < 0
                    or any((p ^ (head + (j << PFN_PTE_SHIFT))) & same for j, p in enumerate(block))
                    or pfn(head) + CONT_PTES > t.folios[k].pfn + (1 << t.folios[k].order)):
                return (f"the {side}'s block at page {start} has the contiguous bit but is not 16 aligned PTEs of "
                        f"one folio with the same bits")
    return None


def _arg(s, a):
    i = thread_index(s, a.actor)
    return s.threads[i].frames[0].arg


def whole_blocks_stay_folded(s, a, t):
    """arm64: wrprotect_ptes leaves folded every block its range covers whole, and set_ptes of more
    than one PTE folds every whole aligned block whose PFNs are aligned too."""
    if t.fmt != ARM64 or a.label not in ("wrprotect_ptes", "set_ptes"):
        return None
    arg = _arg(s, a)
    addr, nr = arg[0], arg[1]
    if a.label == "set_ptes" and nr == 1:
        return None
    for start in range(-(-addr // CONT_PTES) * CONT_PTES, addr + nr - CONT_PTES + 1, CONT_PTES):
        if a.label == "wrprotect_ptes":
            if s.parent[start] & PTE_CONT and not t.parent[start] & PTE_CONT:
                return f"write-protecting pages {addr}..{addr + nr - 1} unfolded the whole block at page {start}"
        elif pfn(t.child[start]) % CONT_PTES == 0 and not t.child[start] & PTE_CONT:
            return f"set_ptes of pages {addr}..{addr + nr - 1} left the whole aligned block at page {start} unfolded"
    return None


def pinned_page_not_shared(s, a, t):
    for th in t.threads:
        if th.kind == "gup" and th.pinned and th.folio >= 0:
            for p, c in enumerate(t.child):
                if present(c) and pfn(c) == pfn(th.pte):
                    return (f"{th.name} pinned PFN {pfn(th.pte)} for DMA, and the child maps it at page {p}: the "
                            f"parent's next write copies the page away from the one the device uses")
    return None


def pinned_anon_exclusive(s, a, t):
    """sanity_check_pinned_pages: a pinned anonymous page stays PageAnonExclusive."""
    for th in t.threads:
        if th.kind == "gup" and th.pinned and th.folio >= 0:
            f = t.folios[th.folio]
            if f.kind == ANON and not f.exclusive >> (pfn(th.pte) - f.pfn) & 1:
                return f"{th.name}'s pinned page (PFN {pfn(th.pte)}) is no longer PageAnonExclusive"
    return None


def copy_sees_stable_page_tables(s, a, t):
    v = s.copy.vma
    if v < 0 or t.parent is s.parent or a.actor == RCU_ACTOR:
        return None
    if s.threads[thread_index(s, a.actor)].kind == "fork":
        return None
    vma = s.vmas[v]
    for p in range(vma.start, vma.end):
        if s.parent[p] != t.parent[p]:
            return f"{a} changed the parent's PTE at page {p} while fork copies VMA {v}"
    return None


INVARIANTS = [
    Invariant("child-maps-parent-pages",
              "the child maps exactly the parent's pages, with the bits 6.12 gives a copy: the first PTE's of "
              "its batch, write-protected if COW, clean if shared, old", child_maps_parent_pages,
              transition=True, kind=HARM),
    Invariant("cow-write-protected",
              "after a COW copy neither the parent's nor the child's PTE to a page they share is writable",
              cow_write_protected, transition=True, kind=HARM),
    Invariant("refcounts-follow-mappings",
              "between batches every folio's refcount and mapcounts count exactly its PTEs (and pins): each "
              "copied PTE raised them once", refcounts_follow_mappings, transition=True, kind=HARM),
    Invariant("contpte-well-formed",
              "arm64: a block with the contiguous bit is 16 present PTEs of one folio, PFNs aligned and "
              "consecutive, bits alike but for access and dirty", contpte_well_formed, transition=True, kind=HARM),
    Invariant("pinned-page-not-shared",
              "a page pinned for DMA in the parent is never mapped by the child", pinned_page_not_shared,
              transition=True, kind=HARM),
    Invariant("copy-sees-stable-page-tables",
              "nothing but fork changes the parent's PTEs of a VMA while fork copies it",
              copy_sees_stable_page_tables, transition=True, kind=HARM),
    Invariant("every-pte-copied",
              "when fork is done with a VMA every PTE of it was copied exactly once", every_pte_copied,
              transition=True),
    Invariant("batch-within-bounds",
              "no batch crosses a folio's end, a page-table boundary or its VMA's end", batch_within_bounds,
              transition=True),
    Invariant("batches-maximal",
              "every folio_pte_batch batch ends only where 6.12's rules end it", batches_maximal, transition=True),
    Invariant("shared-anon-not-exclusive",
              "a page the parent shares with the child is not PageAnonExclusive", shared_anon_not_exclusive,
              transition=True),
    Invariant("rss-counts-child-ptes",
              "between batches the child's rss counters count its PTEs", rss_counts_child_ptes, transition=True),
    Invariant("whole-blocks-stay-folded",
              "arm64: write-protecting a whole folded block keeps it folded, and set_ptes folds each whole "
              "aligned block it writes", whole_blocks_stay_folded, transition=True),
    Invariant("pinned-anon-exclusive",
              "a pinned anonymous page stays PageAnonExclusive (sanity_check_pinned_pages)", pinned_anon_exclusive,
              transition=True),
    *VMA_LOCKS_INVARIANTS,
]
