"""mm/damon/vaddr.c of Linux 6.12.117: the virtual-address operations set, as pure functions.

The target's mappings are a tuple of ``Vma`` (sorted, non-overlapping); the page tables are not
modelled beyond what DAMON reads from them: whether a page is mapped, its folio (4 KiB, or a
PMD-mapped 2 MiB THP in a ``thp`` mapping), and the accessed ("young") bit of the folios DAMON
sampled, which ``damon_va_mkold`` clears and the workload sets.  The kernel also keeps the page
idle flag (``folio_set_idle``) so that an accessed bit cleared by someone else still counts;
nothing else clears accessed bits here, so the one bit is enough.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from .core import (DAMON_MIN_REGION, DAMOS_MAX_SCORE, EINVAL, PAGE_SIZE, Attrs, Region, align, align_down,
                   damon_new_region, damon_set_regions, damon_sz_region, damon_update_region_access_rate)
from .rand import Rng, damon_rand

HPAGE_PMD_SIZE = 2 << 20


class Vma(NamedTuple):
    start: int
    end: int
    thp: bool = False  # transparent huge pages: every 2 MiB-aligned block inside is one PMD-mapped folio


# --- the initial regions ------------------------------------------------------------------------------


def damon_va_evenly_split_region(regions: tuple, i: int, nr_pieces: int, min_region: int = DAMON_MIN_REGION,
                                 *, evenly_split_fix: bool = True) -> tuple[int, tuple]:
    """Split ``regions[i]`` into ``nr_pieces`` pieces of equal size; the last one takes the rest.

    6.12.4 made the loop run exactly ``nr_pieces - 1`` times; v6.12.0 looped while another whole
    piece fitted (``start + sz_piece <= orig_end``), so [0, 3) in two pieces became three.
    """
    if i is None or not nr_pieces:
        return -EINVAL, regions
    r = regions[i]
    orig_end = r.end
    sz_piece = align_down(damon_sz_region(r) // nr_pieces, min_region)
    if not sz_piece:
        return -EINVAL, regions
    pieces = [r._replace(end=r.start + sz_piece)]
    start = pieces[0].end
    if evenly_split_fix:
        for _ in range(1, nr_pieces):
            pieces.append(damon_new_region(start, start + sz_piece))
            start += sz_piece
    else:
        while start + sz_piece <= orig_end:
            pieces.append(damon_new_region(start, start + sz_piece))
            start += sz_piece
    if len(pieces) > 1:  # complement last region for possible rounding error
        pieces[-1] = pieces[-1]._replace(end=orig_end)
    return 0, regions[:i] + tuple(pieces) + regions[i + 1:]


def __damon_va_three_regions(vmas: tuple, min_region: int = DAMON_MIN_REGION) -> tuple[int, tuple]:
    """The three regions that cover every mapping except the two biggest gaps between them."""
    first_gap = second_gap = (0, 0)
    start = prev_end = None
    for vma in vmas:
        if prev_end is None:
            start = vma.start
        else:
            gap = vma.start - prev_end
            if gap > first_gap[1] - first_gap[0]:
                second_gap = first_gap
                first_gap = (prev_end, vma.start)
            elif gap > second_gap[1] - second_gap[0]:
                second_gap = (prev_end, vma.start)
        prev_end = vma.end
    if second_gap[1] == second_gap[0] or first_gap[1] == first_gap[0]:
        return -EINVAL, ()
    assert start is not None and prev_end is not None  # two gaps: at least three mappings
    # Sort the two biggest gaps by address
    if first_gap[0] > second_gap[0]:
        first_gap, second_gap = second_gap, first_gap
    return 0, ((align(start, min_region), align(first_gap[0], min_region)),
               (align(first_gap[1], min_region), align(second_gap[0], min_region)),
               (align(second_gap[1], min_region), align(prev_end, min_region)))


def __damon_va_init_regions(vmas: tuple, attrs: Attrs, min_region: int = DAMON_MIN_REGION, *,
                            evenly_split_fix: bool = True) -> tuple:
    """The target's first regions: the three regions, each split into pieces of about
    (their total size / min_nr_regions); no regions if the three cannot be found."""
    rc, ranges = __damon_va_three_regions(vmas, min_region)
    if rc:
        return ()
    sz = sum(e - s for s, e in ranges)
    if attrs.min_nr_regions:
        sz //= attrs.min_nr_regions
    sz = max(sz, min_region)
    regions: tuple = ()
    for s, e in ranges:
        regions += (damon_new_region(s, e),)
        _, regions = damon_va_evenly_split_region(regions, len(regions) - 1, (e - s) // sz, min_region,
                                                  evenly_split_fix=evenly_split_fix)
    return regions


def damon_va_update(regions: tuple, vmas: tuple, min_region: int = DAMON_MIN_REGION, *,
                    set_regions_checks: bool = True) -> tuple[tuple, Optional[tuple]]:
    """Fit the regions to the current three regions; (regions, the ranges applied or None)."""
    rc, ranges = __damon_va_three_regions(vmas, min_region)
    if rc:
        return regions, None
    _, regions = damon_set_regions(regions, ranges, min_region, validate=set_regions_checks)
    return regions, ranges


# --- access checks -------------------------------------------------------------------------------------


def vma_of(vmas: tuple, addr: int) -> Optional[Vma]:
    for v in vmas:
        if v.start <= addr < v.end:
            return v
    return None


def folio_of(vmas: tuple, addr: int) -> Optional[tuple[int, int]]:
    """(first address, size) of the folio mapped at ``addr``, or None where nothing is mapped."""
    v = vma_of(vmas, addr)
    if v is None:
        return None
    if v.thp:
        head = align_down(addr, HPAGE_PMD_SIZE)
        if v.start <= head and head + HPAGE_PMD_SIZE <= v.end:
            return head, HPAGE_PMD_SIZE
    return align_down(addr, PAGE_SIZE), PAGE_SIZE


def damon_va_prepare_access_checks(regions: tuple, vmas: tuple, young: frozenset,
                                   rng: Rng) -> tuple[tuple, frozenset, Rng]:
    """Pick each region's sampling address (one draw per region, in list order) and clear the
    accessed bit of the folio mapped there (damon_va_mkold)."""
    out = []
    mkold = set()
    for r in regions:
        addr, rng = damon_rand(rng, r.start, r.end)
        out.append(r._replace(sampling_addr=addr))
        folio = folio_of(vmas, addr)
        if folio is not None:
            mkold.add(folio[0])
    return tuple(out), young - mkold, rng


class FolioCache(NamedTuple):
    """The function-static variables of v6.12.0's __damon_va_check_access()."""

    last_addr: int = 0
    last_folio_sz: int = PAGE_SIZE
    last_accessed: bool = False


def damon_va_young(vmas: tuple, young: frozenset, addr: int) -> tuple[bool, Optional[int]]:
    """Whether the folio at ``addr`` was accessed since damon_va_mkold; and its size (None: unmapped)."""
    folio = folio_of(vmas, addr)
    if folio is None:
        return False, None
    return folio[0] in young, folio[1]


def damon_va_check_accesses(regions: tuple, vmas: tuple, young: frozenset, attrs: Attrs, *,
                            cache: Optional[FolioCache] = None) -> tuple[tuple, int, Optional[FolioCache]]:
    """Update every region's access rate from its sampled folio; (regions, max nr_accesses, cache).

    With ``cache`` (v6.12.0 until 6.12.110 dropped it), a region whose sampling address lies in
    the folio checked last, as far as the cached folio size tells, reuses that result; the size
    is updated only when a folio is found, so after an unmapped address it is stale.
    """
    out = []
    max_nr_accesses = 0
    same_target = False
    for r in regions:
        if cache is None:
            accessed, _ = damon_va_young(vmas, young, r.sampling_addr)
        elif same_target and (align_down(cache.last_addr, cache.last_folio_sz)
                              == align_down(r.sampling_addr, cache.last_folio_sz)):
            accessed = cache.last_accessed  # "If the region is in the last checked page, reuse the result"
        else:
            accessed, size = damon_va_young(vmas, young, r.sampling_addr)
            cache = FolioCache(r.sampling_addr, cache.last_folio_sz if size is None else size, accessed)
        r = damon_update_region_access_rate(r, accessed, attrs)
        out.append(r)
        max_nr_accesses = max(r.nr_accesses, max_nr_accesses)
        same_target = True
    return tuple(out), max_nr_accesses, cache


# --- DAMOS -------------------------------------------------------------------------------------------

MADVISE = {"willneed": "MADV_WILLNEED", "cold": "MADV_COLD", "pageout": "MADV_PAGEOUT",
           "hugepage": "MADV_HUGEPAGE", "nohugepage": "MADV_NOHUGEPAGE"}


def entirely_mapped(vmas: tuple, start: int, end: int) -> bool:
    at = start
    for v in vmas:
        if v.end <= at:
            continue
        if v.start > at:
            return False
        at = v.end
        if at >= end:
            return True
    return at >= end


def damon_va_apply_scheme(vmas: tuple, r: Region, action: str) -> int:
    """The bytes the action applied to: do_madvise() over the region, for the actions vaddr
    supports (stat and the rest: 0).  madvise fails with -ENOMEM when part of the range is
    unmapped (after acting on the mapped part), and then DAMON counts nothing applied."""
    if action not in MADVISE:
        return 0
    start = align(r.start, PAGE_SIZE)
    length = align(damon_sz_region(r), PAGE_SIZE)
    return length if entirely_mapped(vmas, start, start + length) else 0


def damon_va_scheme_score(r: Region, action: str, hot_score: Callable[[Region], int]) -> int:
    return DAMOS_MAX_SCORE - hot_score(r) if action == "pageout" else DAMOS_MAX_SCORE
