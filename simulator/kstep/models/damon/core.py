"""mm/damon/core.c of Linux 6.12.117: the region operations, as pure functions over one target's regions.

A target's ``regions_list`` is a tuple of ``Region`` values in address order; every function takes
it and returns the new tuple, so tests, exercises, the bench and the model call the same code.
The functions read in the kernel's order and keep its C arithmetic: ``nr_accesses``, ``age`` and
the threshold are ``unsigned int`` (wrapping at 2^32), sizes ``unsigned long``, and
``abs(a - b)`` of two unsigned ints converts the wrapped difference to ``int`` first.

``min_region`` is ``DAMON_MIN_REGION``: ``PAGE_SIZE`` in a kernel, 1 when the KUnit tests are
built (core.c redefines it under ``CONFIG_DAMON_KUNIT_TEST``), which is how the KUnit vectors
are reproduced.  Where a later 6.12.y changed a function, the function takes the choice as a
keyword (the fix's name) whose default is 6.12.117's code; variants.py lists the fixes.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from .rand import Rng, damon_rand

PAGE_SIZE = 4096
DAMON_MIN_REGION = PAGE_SIZE  # include/linux/damon.h
DAMOS_MAX_SCORE = 99
EINVAL = 22
U32 = 0xFFFF_FFFF
ULONG = (1 << 64) - 1


class Region(NamedTuple):
    """struct damon_region."""

    start: int  # ar.start
    end: int  # ar.end (exclusive)
    nr_accesses: int = 0  # sampling intervals of this aggregation interval that found an access
    nr_accesses_bp: int = 0  # a pseudo moving sum of the same, in basis points; never reset
    age: int = 0  # aggregation intervals its access frequency has stayed similar
    last_nr_accesses: int = 0  # nr_accesses of the previous aggregation interval
    sampling_addr: int = 0  # the address checked in this sampling interval


class Attrs(NamedTuple):
    """struct damon_attrs; every interval in microseconds."""

    sample_interval: int = 5000
    aggr_interval: int = 100_000
    ops_update_interval: int = 60_000_000
    min_nr_regions: int = 10
    max_nr_regions: int = 1000


def align_down(x: int, a: int) -> int:
    return x - x % a


def align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def c_abs(diff: int) -> int:
    """``abs()`` of an ``unsigned int`` difference: converted to ``int`` first (include/linux/math.h)."""
    diff &= U32
    return (1 << 32) - diff if diff >= 1 << 31 else diff


# --- regions ---------------------------------------------------------------------------------------


def damon_new_region(start: int, end: int) -> Region:
    return Region(start, end)


def damon_sz_region(r: Region) -> int:
    return r.end - r.start


def damon_intersect(r: Region, start: int, end: int) -> bool:
    return not (r.end <= start or end <= r.start)


def damon_fill_regions_holes(regions: tuple, first: int, last: int) -> tuple:
    """Insert a new region into every gap between ``regions[first]`` and ``regions[last]``."""
    out = list(regions[:first])
    k = first
    while k < last:
        r, nxt = regions[k], regions[k + 1]
        out.append(r)
        if r.end != nxt.start:
            out.append(damon_new_region(r.end, nxt.start))
        k += 1
    return tuple(out + list(regions[last:]))


def damon_set_regions(regions: tuple, ranges: Sequence[tuple[int, int]], min_region: int = DAMON_MIN_REGION,
                      *, validate: bool = True) -> tuple[int, tuple]:
    """damon_set_regions(): fit the regions to ``ranges`` ((start, end) pairs); (0 or -EINVAL, regions).

    6.12.101 added the validation (each range non-empty once aligned, ranges sorted and not
    overlapping); before it, such ranges silently produced overlapping regions.
    """
    if validate:
        last_end = 0
        for i, (rs, re) in enumerate(ranges):
            start, end = align_down(rs, min_region), align(re, min_region)
            if start >= end:
                return -EINVAL, regions
            if i > 0 and last_end > start:
                return -EINVAL, regions
            last_end = end
    # Remove regions which are not in the new ranges
    regions = tuple(r for r in regions if any(damon_intersect(r, s, e) for s, e in ranges))
    k = 0  # r = damon_first_region(t)
    for rs, re in ranges:
        first = last = None
        # Get the first/last regions intersecting with the range
        while k < len(regions):
            r = regions[k]
            if damon_intersect(r, rs, re):
                if first is None:
                    first = k
                last = k
            if r.start >= re:
                break
            k += 1
        if first is None or last is None:  # both or neither
            # no region intersects with this range: insert before r (at the end if r is the head)
            newr = damon_new_region(align_down(rs, min_region), align(re, min_region))
            regions = regions[:k] + (newr,) + regions[k:]
        else:
            # resize intersecting regions to fit in this range, then fill the holes between them
            regions = (regions[:first] + (regions[first]._replace(start=align_down(rs, min_region)),)
                       + regions[first + 1:])
            regions = regions[:last] + (regions[last]._replace(end=align(re, min_region)),) + regions[last + 1:]
            before = len(regions)
            regions = damon_fill_regions_holes(regions, first, last)
            k += len(regions) - before  # r is still the same region, now further along
    return 0, regions


# --- attributes --------------------------------------------------------------------------------------


def damon_max_nr_accesses(attrs: Attrs) -> int:
    sample_interval = attrs.sample_interval or 1
    return min(attrs.aggr_interval // sample_interval, U32) or 1


def damon_accesses_bp_to_nr_accesses(accesses_bp: int, attrs: Attrs) -> int:
    return (accesses_bp * damon_max_nr_accesses(attrs) & U32) // 10000


def damon_nr_accesses_to_accesses_bp(nr_accesses: int, attrs: Attrs) -> int:
    return (nr_accesses * 10000 & U32) // damon_max_nr_accesses(attrs)


def damon_nr_accesses_for_new_attrs(nr_accesses: int, old: Attrs, new: Attrs) -> int:
    return damon_accesses_bp_to_nr_accesses(damon_nr_accesses_to_accesses_bp(nr_accesses, old), new)


def damon_age_for_new_attrs(age: int, old: Attrs, new: Attrs) -> int:
    return age * old.aggr_interval // new.aggr_interval & U32


def damon_update_monitoring_result(r: Region, old: Attrs, new: Attrs) -> Region:
    nr = damon_nr_accesses_for_new_attrs(r.nr_accesses, old, new)
    return r._replace(nr_accesses=nr, nr_accesses_bp=nr * 10000 & U32, age=damon_age_for_new_attrs(r.age, old, new))


def damon_set_attrs(attrs: Attrs) -> int:
    """damon_set_attrs()'s validation: 0, or -EINVAL for attributes it refuses."""
    if attrs.min_nr_regions < 3:
        return -EINVAL
    if attrs.min_nr_regions > attrs.max_nr_regions:
        return -EINVAL
    if attrs.sample_interval > attrs.aggr_interval:
        return -EINVAL
    return 0


def damon_region_sz_limit(regions: tuple, attrs: Attrs, min_region: int = DAMON_MIN_REGION) -> int:
    """The size upper limit of each region: the monitored bytes over min_nr_regions."""
    sz = sum(damon_sz_region(r) for r in regions)
    if attrs.min_nr_regions:
        sz //= attrs.min_nr_regions
    return max(sz, min_region)


# --- access rates ------------------------------------------------------------------------------------


def damon_moving_sum(mvsum: int, nomvsum: int, len_window: int, new_value: int) -> int:
    """A pseudo moving sum that keeps no past values: drop nomvsum / len_window, add the new value."""
    return (mvsum - nomvsum // len_window + new_value) & U32


def damon_update_region_access_rate(r: Region, accessed: bool, attrs: Attrs) -> Region:
    len_window = damon_max_nr_accesses(attrs) if attrs.sample_interval else 1
    bp = damon_moving_sum(r.nr_accesses_bp, r.last_nr_accesses * 10000 & U32, len_window,
                          10000 if accessed else 0)
    return r._replace(nr_accesses_bp=bp, nr_accesses=(r.nr_accesses + 1) & U32 if accessed else r.nr_accesses)


def kdamond_reset_aggregated(regions: tuple) -> tuple:
    """Flush this aggregation's nr_accesses into last_nr_accesses (the damon_aggregated tracepoint
    fires here, once per region) and restart the count."""
    return tuple(r._replace(last_nr_accesses=r.nr_accesses, nr_accesses=0) for r in regions)


# --- merge ---------------------------------------------------------------------------------------------


def damon_merge_two_regions(regions: tuple, i: int) -> tuple:
    """Merge ``regions[i + 1]`` into ``regions[i]``: size-weighted nr_accesses and age, computed in
    unsigned long as the kernel does (an unsigned int times a size wraps at 2^64)."""
    l, r = regions[i], regions[i + 1]
    sz_l, sz_r = damon_sz_region(l), damon_sz_region(r)
    sz = (sz_l + sz_r) & ULONG
    nr = ((l.nr_accesses * sz_l & ULONG) + (r.nr_accesses * sz_r & ULONG) & ULONG) // sz & U32
    age = ((l.age * sz_l & ULONG) + (r.age * sz_r & ULONG) & ULONG) // sz & U32
    merged = l._replace(nr_accesses=nr, nr_accesses_bp=nr * 10000 & U32, age=age, end=r.end)
    return regions[:i] + (merged,) + regions[i + 2:]


def damon_merge_regions_of(regions: tuple, thres: int, sz_limit: int, count_age: bool = True) -> tuple:
    """Walk the regions in order: age each, then merge it into the previous one when they are
    adjacent, similar (|nr_accesses difference| <= thres) and together within sz_limit."""
    out: list = []
    prev = None  # index in out
    for r in regions:
        if count_age:
            if c_abs(r.nr_accesses - r.last_nr_accesses) > thres:
                r = r._replace(age=0)
            else:
                r = r._replace(age=(r.age + 1) & U32)
        out.append(r)
        if (prev is not None and out[prev].end == r.start
                and c_abs(out[prev].nr_accesses - r.nr_accesses) <= thres
                and damon_sz_region(out[prev]) + damon_sz_region(r) <= sz_limit):
            merged = damon_merge_two_regions(tuple(out[prev:]), 0)
            out[prev:] = merged
        else:
            prev = len(out) - 1
    return tuple(out)


class MergeLoopHang(Exception):
    """kdamond_merge_regions() would loop forever (the pre-6.12.111 loop with a wrapped threshold)."""


def kdamond_merge_regions(regions: tuple, threshold: int, sz_limit: int, attrs: Attrs, *,
                          merge_loop_fix: bool = True, merge_aging_fix: bool = True,
                          merge_of=damon_merge_regions_of) -> tuple[tuple, int]:
    """Merge until max_nr_regions is met, doubling the threshold up to its maximum; (regions, passes).

    6.12.117 ages regions only in the first pass (6.12.110) and breaks before doubling, capping
    the threshold at max_thres (6.12.111).  v6.12.0 aged in every pass and looped
    ``do { ...; threshold = max(1, threshold * 2); } while (nr > max && threshold / 2 < max_thres)``,
    whose unsigned threshold wraps to 0 once max_thres exceeds UINT_MAX / 2: then it never ends
    while the regions cannot be merged below max_nr_regions (raised here as MergeLoopHang).
    """
    max_thres = attrs.aggr_interval // (attrs.sample_interval or 1) & U32
    count_age = True
    passes = 0
    seen = set()
    while True:
        regions = merge_of(regions, threshold, sz_limit, count_age)
        passes += 1
        if merge_aging_fix:
            count_age = False
        nr_regions = len(regions)
        if merge_loop_fix:
            if nr_regions <= attrs.max_nr_regions or max_thres <= threshold:
                break
            threshold = max(1, threshold * 2 & U32) if threshold < max_thres // 2 else max_thres
        else:
            threshold = max(1, threshold * 2 & U32)
            if not (nr_regions > attrs.max_nr_regions and threshold // 2 < max_thres):
                break
            if (threshold, nr_regions) in seen:  # nothing merged since this threshold came round
                raise MergeLoopHang(f"the threshold wrapped past UINT_MAX (max_thres {max_thres}) with "
                                    f"{nr_regions} regions that cannot merge below max_nr_regions "
                                    f"{attrs.max_nr_regions}")
            seen.add((threshold, nr_regions))
    return regions, passes


# --- split ---------------------------------------------------------------------------------------------


def damon_split_region_at(regions: tuple, i: int, sz_r: int) -> tuple:
    """Split ``regions[i]`` in two; the new right piece inherits age and access counts."""
    r = regions[i]
    new = r._replace(start=r.start + sz_r, sampling_addr=0)
    return regions[:i] + (r._replace(end=new.start), new) + regions[i + 1:]


def damon_split_regions_of(regions: tuple, nr_subs: int, rng: Rng,
                           min_region: int = DAMON_MIN_REGION) -> tuple[tuple, Rng]:
    """Split every region into up to ``nr_subs`` pieces at random 10%..90% points.

    The walk is ``damon_for_each_region_safe``: new pieces are not visited again.  For three
    pieces the *left* piece is split a second time (``sz_region = sz_sub``).
    """
    out: list = []
    for r in regions:
        pieces = [r]  # the current region is pieces[0]; its split-off right parts follow, in order
        sz_region = damon_sz_region(r)
        i = 0
        while i < nr_subs - 1 and sz_region > 2 * min_region:
            tenth, rng = damon_rand(rng, 1, 10)
            sz_sub = align_down(tenth * sz_region // 10, min_region)
            i += 1
            # Do not allow blank region
            if sz_sub == 0 or sz_sub >= sz_region:
                continue
            pieces[:1] = damon_split_region_at((pieces[0],), 0, sz_sub)
            sz_region = sz_sub
        out += pieces
    return tuple(out), rng


def kdamond_split_regions(regions: tuple, attrs: Attrs, last_nr_regions: int, rng: Rng,
                          min_region: int = DAMON_MIN_REGION, *,
                          split_of=damon_split_regions_of) -> tuple[tuple, int, Rng]:
    """Split into two pieces each (three when the count did not change since the last split and is
    below a third of the maximum) unless there are more than max_nr_regions / 2 regions;
    (regions, the function-static last_nr_regions, rng)."""
    nr_regions = len(regions)
    if nr_regions > attrs.max_nr_regions // 2:
        return regions, last_nr_regions, rng
    nr_subregions = 2
    # Maybe the middle of the region has different access frequency
    if last_nr_regions == nr_regions and nr_regions < attrs.max_nr_regions // 3:
        nr_subregions = 3
    regions, rng = split_of(regions, nr_subregions, rng, min_region)
    return regions, nr_regions, rng


# --- quota goals -------------------------------------------------------------------------------------


def damon_feed_loop_next_input(last_input: int, score: int) -> int:
    """The next input that should bring the score to the goal, 10000 (a proportional feedback loop)."""
    goal = 10000
    min_input = 10000
    over_achieving = score > goal
    if score == goal:
        return last_input
    if score >= goal * 2:
        return min_input
    score_goal_diff = score - goal if over_achieving else goal - score
    if last_input < ULONG // score_goal_diff:
        compensation = last_input * score_goal_diff // goal
    else:
        compensation = last_input // goal * score_goal_diff
    if over_achieving:
        return max((last_input - compensation) & ULONG, min_input)
    if last_input < ULONG - compensation:
        return last_input + compensation
    return ULONG
