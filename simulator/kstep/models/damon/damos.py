"""DAMOS of Linux 6.12.117 (mm/damon/core.c, mm/damon/ops-common.c): schemes, quotas, watermarks.

A scheme's configuration (``Scheme``) never changes while kdamond runs; its run-time state
(``SchemeState``: the quota's charge window, the effective quota, the charge cursor, the
statistics, the watermark state) is part of the model's state.  The functions mirror the
kernel's, in its order, over the regions of one target (the model monitors one process).

Time: the kernel measures the quota's charge window in jiffies and the time a scheme took with
``ktime_get_coarse_ts64()``.  Here jiffies follow the model's clock with HZ = 250 (Debian's
kernels) from INITIAL_JIFFIES, five minutes before the 32-bit wrap as in include/linux/jiffies.h;
the time an action takes is its bytes times the scenario's ``ns_per_byte`` of the action, a
stated stand-in for a measurement.  Quota goals are of the ``user_input`` kind only: their
current value is a time series from the scenario, as a user would write it into sysfs.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

from .core import (DAMON_MIN_REGION, DAMOS_MAX_SCORE, U32, ULONG, Attrs, Region, align_down,
                   damon_feed_loop_next_input, damon_max_nr_accesses, damon_split_region_at, damon_sz_region)

HZ = 250
INITIAL_JIFFIES = ((-300 * HZ) & U32)  # (unsigned long)(unsigned int)(-300 * HZ)
DAMON_MAX_SUBSCORE = 100
DAMON_MAX_AGE_IN_LOG = 32
ACTIONS = ("willneed", "cold", "pageout", "hugepage", "nohugepage", "lru_prio", "lru_deprio",
           "migrate_hot", "migrate_cold", "stat")


def jiffies(now_us: int) -> int:
    return (INITIAL_JIFFIES + now_us * HZ // 1_000_000) & ULONG


def msecs_to_jiffies(m: int) -> int:
    return (m + 1000 // HZ - 1) // (1000 // HZ)


def time_after_eq(a: int, b: int) -> bool:
    return (a - b) & ULONG < 1 << 63  # (long)(a - b) >= 0


def time_in_range_open(a: int, b: int, c: int) -> bool:
    return time_after_eq(a, b) and not time_after_eq(a, c)


# --- configuration -------------------------------------------------------------------------------------


class Pattern(NamedTuple):
    """struct damos_access_pattern: inclusive bounds."""

    min_sz_region: int = 0
    max_sz_region: int = ULONG
    min_nr_accesses: int = 0
    max_nr_accesses: int = U32
    min_age_region: int = 0
    max_age_region: int = U32


class Goal(NamedTuple):
    """A quota goal of the user_input metric: what the user writes, over time."""

    target_value: int
    current: tuple  # (from_us, current_value) pairs, sorted by time


class Quota(NamedTuple):
    ms: int = 0  # time quota per charge window
    sz: int = 0  # size quota per charge window
    reset_interval: int = 0  # the charge window, in ms
    weight_sz: int = 0
    weight_nr_accesses: int = 0
    weight_age: int = 0
    goals: tuple = ()


class Wmarks(NamedTuple):
    metric: str = "none"  # or "free_mem_rate": free memory in per-mille of total RAM
    interval: int = 0  # µs between checks while deactivated
    high: int = 0
    mid: int = 0
    low: int = 0


class AddrFilter(NamedTuple):
    """A DAMOS_FILTER_TYPE_ADDR filter: ``matching`` true filters out what is inside [start, end)."""

    start: int
    end: int
    matching: bool = True


class Scheme(NamedTuple):
    action: str
    pattern: Pattern = Pattern()
    apply_interval_us: int = 0  # 0: the aggregation interval
    quota: Quota = Quota()
    wmarks: Wmarks = Wmarks()
    filters: tuple = ()


# --- run-time state ------------------------------------------------------------------------------------


class Stat(NamedTuple):
    nr_tried: int = 0
    sz_tried: int = 0
    nr_applied: int = 0
    sz_applied: int = 0
    qt_exceeds: int = 0


class SchemeState(NamedTuple):
    next_apply_sis: int = 0
    activated: bool = True  # damon_new_scheme() starts every scheme activated
    esz: int = 0  # the effective size quota of this charge window; 0: no limit
    esz_bp: int = 0
    charged_sz: int = 0
    charged_from: int = 0  # jiffies at which this charge window started
    total_charged_sz: int = 0
    total_charged_ns: int = 0
    charge_target_from: bool = False  # the quota ran out inside this (the only) target
    charge_addr_from: int = 0
    min_score: int = 0
    stat: Stat = Stat()
    ghost_window_bytes: int = 0  # bytes acted on in this charge window, charged or not (never read by DAMON)
    ghost_windows: int = 0  # charge windows whose effective quota was computed (never read by DAMON)


class Applied(NamedTuple):
    """One action a scheme applied to a region, as the invariants and views see it."""

    scheme: int
    start: int
    end: int
    checked_sz: int  # the region's size when damos_valid_target() accepted it
    nr_accesses: int  # nr_accesses_bp / 10000 then
    age: int
    sz_applied: int  # what the operations set reports (0 when madvise failed)


class Fixes(NamedTuple):
    """Which 6.12.y fixes to DAMOS a kernel carries (variants.py names them)."""

    first_charge_window: bool = True  # 6.12.48
    zero_esz: bool = True  # 6.12.90
    charge_addr_from: bool = True  # 6.12.97
    hot_score: bool = True  # 6.12.110: score from nr_accesses_bp, not nr_accesses
    charged_region_walk: bool = True  # 6.12.113: non-safe walk, last region no longer skipped
    filter_charge: bool = True  # 6.12.117: charge only what the filter left


def series_at(series: tuple, now_us: int, default: int) -> int:
    """The value of a (from_us, value) time series at ``now_us``."""
    value = default
    for at, v in series:
        if at > now_us:
            break
        value = v
    return value


# --- scores (mm/damon/ops-common.c) ------------------------------------------------------------------


def mult_frac(x: int, n: int, d: int) -> int:
    q, r = divmod(x, d)
    return q * n + r * n // d


def damon_hot_score(r: Region, attrs: Attrs, quota: Quota, *, hot_score_fix: bool = True) -> int:
    freq = r.nr_accesses_bp // 10000 if hot_score_fix else r.nr_accesses
    freq_subscore = mult_frac(freq, DAMON_MAX_SUBSCORE, damon_max_nr_accesses(attrs))
    age_in_sec = r.age * attrs.aggr_interval // 1_000_000 & U32
    age_in_log = 0
    while age_in_log < DAMON_MAX_AGE_IN_LOG and age_in_sec:
        age_in_log += 1
        age_in_sec >>= 1
    # If frequency is 0, higher age means it's colder
    if freq_subscore == 0:
        age_in_log = -age_in_log
    age_in_log += DAMON_MAX_AGE_IN_LOG
    age_subscore = age_in_log * DAMON_MAX_SUBSCORE // DAMON_MAX_AGE_IN_LOG // 2
    hotness = quota.weight_nr_accesses * freq_subscore + quota.weight_age * age_subscore
    if quota.weight_nr_accesses + quota.weight_age:
        hotness //= quota.weight_nr_accesses + quota.weight_age
    hotness = hotness * DAMOS_MAX_SCORE // DAMON_MAX_SUBSCORE
    return max(min(hotness, DAMOS_MAX_SCORE), 0)


def damon_va_scheme_score(r: Region, s: Scheme, attrs: Attrs, fixes: Fixes) -> int:
    """vaddr's get_scheme_score: pageout prefers the coldest regions, every other action scores 99."""
    if s.action == "pageout":
        return DAMOS_MAX_SCORE - damon_hot_score(r, attrs, s.quota, hot_score_fix=fixes.hot_score)
    return DAMOS_MAX_SCORE


# --- which regions a scheme acts on -------------------------------------------------------------------


def __damos_valid_target(r: Region, p: Pattern) -> bool:
    sz = damon_sz_region(r)
    nr_accesses = r.nr_accesses_bp // 10000
    return (p.min_sz_region <= sz <= p.max_sz_region and p.min_nr_accesses <= nr_accesses <= p.max_nr_accesses
            and p.min_age_region <= r.age <= p.max_age_region)


def damos_valid_target(r: Region, s: Scheme, ss: SchemeState, attrs: Attrs, fixes: Fixes) -> bool:
    ret = __damos_valid_target(r, s.pattern)
    if not ret or not ss.esz:
        return ret
    return damon_va_scheme_score(r, s, attrs, fixes) >= ss.min_score


def damos_skip_charged_region(regions: tuple, i: int, ss: SchemeState,
                              min_region: int = DAMON_MIN_REGION) -> tuple[bool, tuple, SchemeState]:
    """6.12.117: skip what the previous charge window already covered; (skip, regions, state).

    A region that straddles the cursor is split, and skipped: the walk visits its tail next.
    Reaching the last region resets the cursor, whatever else was decided.
    """
    r = regions[i]
    skip = False
    if ss.charge_target_from:
        if ss.charge_addr_from and r.end <= ss.charge_addr_from:
            skip = True
        elif ss.charge_addr_from and r.start < ss.charge_addr_from:
            sz_to_skip = align_down(ss.charge_addr_from - r.start, min_region)
            if not sz_to_skip:
                if damon_sz_region(r) <= min_region:
                    skip = True
                else:
                    sz_to_skip = min_region
            if sz_to_skip:
                regions = damon_split_region_at(regions, i, sz_to_skip)
                skip = True
    if i == len(regions) - 1:  # r == damon_last_region(t): a split left r before its new tail
        ss = ss._replace(charge_target_from=False, charge_addr_from=0)
    return skip, regions, ss


def damos_skip_charged_region_v6_12_0(regions: tuple, i: int, ss: SchemeState,
                                      min_region: int = DAMON_MIN_REGION) -> tuple[bool, tuple, SchemeState, int]:
    """Before 6.12.113: the last region is always skipped once a cursor is set; a straddling
    region is split and the scheme goes on with its tail (``*rp``); (skip, regions, state, i)."""
    r = regions[i]
    if ss.charge_target_from:
        if i == len(regions) - 1:
            return True, regions, ss._replace(charge_target_from=False, charge_addr_from=0), i
        if ss.charge_addr_from and r.end <= ss.charge_addr_from:
            return True, regions, ss, i
        if ss.charge_addr_from and r.start < ss.charge_addr_from:
            sz_to_skip = align_down(ss.charge_addr_from - r.start, min_region)
            if not sz_to_skip:
                if damon_sz_region(r) <= min_region:
                    return True, regions, ss, i
                sz_to_skip = min_region
            regions = damon_split_region_at(regions, i, sz_to_skip)
            i += 1
        ss = ss._replace(charge_target_from=False, charge_addr_from=0)
    return False, regions, ss, i


def __damos_filter_out(regions: tuple, i: int, f: AddrFilter,
                       min_region: int = DAMON_MIN_REGION) -> tuple[bool, tuple]:
    """An address filter: split a region that straddles the range's edge so that only the part on
    this side is judged; (filtered out, regions)."""
    r = regions[i]
    start, end = align_down(f.start, min_region), align_down(f.end, min_region)
    if start <= r.start and r.end <= end:  # inside the range
        matched = True
    elif r.end <= start or end <= r.start:  # outside of the range
        matched = False
    elif r.start < start:  # start before the range and overlap
        regions = damon_split_region_at(regions, i, start - r.start)
        matched = False
    else:  # start inside the range
        regions = damon_split_region_at(regions, i, end - r.start)
        matched = True
    return matched == f.matching, regions


def damos_filter_out(regions: tuple, i: int, s: Scheme, min_region: int) -> tuple[bool, tuple]:
    for f in s.filters:
        out, regions = __damos_filter_out(regions, i, f, min_region)
        if out:
            return True, regions
    return False, regions


# --- applying ------------------------------------------------------------------------------------------


class Ctx(NamedTuple):
    """What the apply functions read of the kdamond and its target besides regions and schemes."""

    attrs: Attrs
    passed_sample_intervals: int
    now_us: int
    vmas: tuple
    ns_per_byte: dict
    apply: Callable  # damon_va_apply_scheme(vmas, region, action) -> bytes applied
    min_region: int = DAMON_MIN_REGION


def damos_update_stat(st: Stat, sz_tried: int, sz_applied: int) -> Stat:
    return Stat(st.nr_tried + 1, st.sz_tried + sz_tried, st.nr_applied + (1 if sz_applied else 0),
                st.sz_applied + sz_applied, st.qt_exceeds)


def damos_apply_scheme(c: Ctx, regions: tuple, i: int, k: int, s: Scheme, ss: SchemeState, fixes: Fixes,
                       applied: list, *, charge: bool = True) -> tuple[tuple, SchemeState]:
    """Apply scheme ``k`` to ``regions[i]``: cut the region to what the quota has left, let the
    filters split off what they exclude, act, charge the bytes and the (stand-in) time."""
    r = regions[i]
    sz = damon_sz_region(r)
    checked_sz = sz
    sz_applied = 0
    if ss.esz and ss.charged_sz + sz > ss.esz:
        sz = align_down(ss.esz - ss.charged_sz, c.min_region)
        if not sz:
            return regions, ss._replace(stat=damos_update_stat(ss.stat, sz, sz_applied))
        regions = damon_split_region_at(regions, i, sz)
    out, regions = damos_filter_out(regions, i, s, c.min_region)
    if out:
        return regions, ss
    r = regions[i]
    if fixes.filter_charge:
        sz = damon_sz_region(r)
    sz_applied = c.apply(c.vmas, r, s.action)
    applied.append(Applied(k, r.start, r.end, checked_sz, r.nr_accesses_bp // 10000, r.age, sz_applied))
    ss = ss._replace(total_charged_ns=ss.total_charged_ns + damon_sz_region(r) * c.ns_per_byte.get(s.action, 0),
                     ghost_window_bytes=ss.ghost_window_bytes + damon_sz_region(r))
    if charge:
        ss = ss._replace(charged_sz=ss.charged_sz + sz)
    if ss.esz and ss.charged_sz >= ss.esz:
        ss = ss._replace(charge_target_from=True,
                         charge_addr_from=r.end if fixes.charge_addr_from else r.end + 1)
    if s.action != "stat":
        regions = regions[:i] + (regions[i]._replace(age=0),) + regions[i + 1:]
    return regions, ss._replace(stat=damos_update_stat(ss.stat, sz, sz_applied))


def damon_do_apply_schemes(c: Ctx, regions: tuple, i: int, schemes: tuple, states: Sequence, fixes: Fixes,
                           applied: list, *, charge: bool = True) -> tuple[tuple, tuple, int]:
    """Every scheme, in order, on ``regions[i]``; (regions, states, index of the region the
    schemes ended on: before 6.12.113 a skipped prefix moves them on to its tail)."""
    states = list(states)
    for k, (s, ss) in enumerate(zip(schemes, states)):
        if c.passed_sample_intervals < ss.next_apply_sis or not ss.activated:
            continue
        # Check the quota
        if ss.esz and ss.charged_sz >= ss.esz:
            continue
        if fixes.charged_region_walk:
            skip, regions, ss = damos_skip_charged_region(regions, i, ss, c.min_region)
        else:
            skip, regions, ss, i = damos_skip_charged_region_v6_12_0(regions, i, ss, c.min_region)
        states[k] = ss
        if skip or not damos_valid_target(regions[i], s, ss, c.attrs, fixes):
            continue
        regions, states[k] = damos_apply_scheme(c, regions, i, k, s, ss, fixes, applied, charge=charge)
    return regions, tuple(states), i


def damos_quota_score(q: Quota, now_us: int) -> int:
    """The highest goal score (10000 means the goal is met): the least aggressive wins."""
    highest = 0
    for g in q.goals:
        current = series_at(g.current, now_us, 0)
        highest = max(highest, current * 10000 // g.target_value)
    return highest


def damos_set_effective_quota(q: Quota, ss: SchemeState, now_us: int, fixes: Fixes) -> SchemeState:
    if not q.ms and not q.goals:
        return ss._replace(esz=q.sz)
    esz = ULONG
    if q.goals:
        esz_bp = damon_feed_loop_next_input(max(ss.esz_bp, 10000), damos_quota_score(q, now_us))
        ss = ss._replace(esz_bp=esz_bp)
        esz = esz_bp // 10000
    if q.ms:
        if ss.total_charged_ns:
            throughput = ss.total_charged_sz * 1_000_000 // ss.total_charged_ns
        else:
            throughput = 4096 * 1024  # PAGE_SIZE * 1024
        esz = min(throughput * q.ms & ULONG, esz)
        if fixes.zero_esz:
            esz = max(DAMON_MIN_REGION, esz)
    if q.sz and q.sz < esz:
        esz = q.sz
    return ss._replace(esz=esz)


def damos_adjust_quota(c: Ctx, regions: tuple, s: Scheme, ss: SchemeState, fixes: Fixes) -> SchemeState:
    """Start a new charge window when the last one is over, and set the minimum score that keeps
    the prioritised regions within the effective quota."""
    q = s.quota
    if not ss.esz and not q.ms and not q.sz and not q.goals:
        return ss
    now = jiffies(c.now_us)
    if fixes.first_charge_window:
        if not ss.total_charged_sz and not ss.charged_from:  # First charge window
            ss = ss._replace(charged_from=now)
        new_window = not time_in_range_open(now, ss.charged_from,
                                            ss.charged_from + msecs_to_jiffies(q.reset_interval))
    else:
        new_window = time_after_eq(now, ss.charged_from + msecs_to_jiffies(q.reset_interval))
    if new_window:
        stat = ss.stat
        if ss.esz and ss.charged_sz >= ss.esz:
            stat = stat._replace(qt_exceeds=stat.qt_exceeds + 1)
        ss = ss._replace(stat=stat, total_charged_sz=ss.total_charged_sz + ss.charged_sz, charged_from=now,
                         charged_sz=0, ghost_window_bytes=0, ghost_windows=ss.ghost_windows + 1)
        ss = damos_set_effective_quota(q, ss, c.now_us, fixes)
    # Fill up the score histogram
    histogram = [0] * (DAMOS_MAX_SCORE + 1)
    max_score = 0
    for r in regions:
        if not __damos_valid_target(r, s.pattern):
            continue
        score = damon_va_scheme_score(r, s, c.attrs, fixes)
        histogram[score] += damon_sz_region(r)
        max_score = max(max_score, score)
    # Set the min score limit
    cumulated_sz, score = 0, max_score
    while True:
        cumulated_sz += histogram[score]
        if cumulated_sz >= ss.esz or not score:
            break
        score -= 1
    return ss._replace(min_score=score)


def kdamond_apply_schemes(c: Ctx, regions: tuple, schemes: tuple, states: Sequence, fixes: Fixes, *,
                          charge: bool = True) -> tuple[tuple, tuple, tuple]:
    """Adjust the quotas of the schemes due, then walk the regions once applying every scheme;
    (regions, states, the Applied actions in order)."""
    states = list(states)
    has_schemes_to_apply = False
    for k, (s, ss) in enumerate(zip(schemes, states)):
        if c.passed_sample_intervals < ss.next_apply_sis or not ss.activated:
            continue
        has_schemes_to_apply = True
        states[k] = damos_adjust_quota(c, regions, s, ss, fixes)
    if not has_schemes_to_apply:
        return regions, tuple(states), ()
    applied: list = []
    states_t = tuple(states)
    i = 0
    while i < len(regions):
        after = len(regions) - i - 1  # regions after this one: a safe walk goes on with the first of them
        regions, states_t, i = damon_do_apply_schemes(c, regions, i, schemes, states_t, fixes, applied,
                                                      charge=charge)
        i = i + 1 if fixes.charged_region_walk else len(regions) - after
    sample_interval = c.attrs.sample_interval or 1
    states = list(states_t)
    for k, (s, ss) in enumerate(zip(schemes, states)):
        if c.passed_sample_intervals < ss.next_apply_sis:
            continue
        interval = s.apply_interval_us or c.attrs.aggr_interval
        states[k] = ss._replace(next_apply_sis=c.passed_sample_intervals + interval // sample_interval)
    return regions, tuple(states), tuple(applied)


# --- watermarks ----------------------------------------------------------------------------------------


def damos_wmark_wait_us(w: Wmarks, ss: SchemeState, free_mem_rate: Optional[int]) -> tuple[int, SchemeState]:
    """0 if the scheme is active, else the µs to wait before checking again; and its new state."""
    if w.metric == "none" or free_mem_rate is None:
        return 0, ss
    metric = free_mem_rate
    # higher than high watermark or lower than low watermark
    if metric > w.high or w.low > metric:
        return w.interval, ss._replace(activated=False)
    # inactive and higher than middle watermark
    if w.high >= metric >= w.mid and not ss.activated:
        return w.interval, ss
    return 0, ss._replace(activated=True)


def kdamond_wait_activation(schemes: tuple, states: tuple, free_mem_rate: Optional[int]) -> tuple[int, tuple]:
    """One round of kdamond_wait_activation()'s loop: (µs to sleep, 0 when some scheme is active; states)."""
    min_wait_time = 0
    init_wait_time = False
    out = []
    for s, ss in zip(schemes, states):
        wait_time, ss = damos_wmark_wait_us(s.wmarks, ss, free_mem_rate)
        out.append(ss)
        if not init_wait_time or wait_time < min_wait_time:
            init_wait_time = True
            min_wait_time = wait_time
    return min_wait_time, tuple(out)
