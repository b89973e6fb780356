"""DAMON as Linux 6.12.117 runs it for one process (the vaddr operations set), one kdamond_fn phase a step.

**Actors.**  The ``kdamond`` daemon takes one step per phase of ``kdamond_fn()``'s loop, over the
whole region list and in 6.12's order: ``kdamond_wait_activation`` (the watermarks),
``damon_va_prepare_access_checks``, ``kdamond_usleep`` (one sampling interval), then
``damon_va_check_accesses``; when an aggregation interval is complete ``kdamond_merge_regions``;
``kdamond_apply_schemes`` when a scheme is due; at the aggregation ``kdamond_reset_aggregated``
and ``kdamond_split_regions``; and ``damon_va_update`` when the operations update interval has
passed.  The first step, ``damon_va_init``, is kdamond_fn's start (the interval counters, the
three initial regions, ``sz_limit``).  A run ends after ``aggregations`` aggregation intervals:
the loop then sees ``kthread_should_stop()``.  The optional actor ``M`` is the monitored process
calling mmap() and munmap(); each call is one step, serialised against kdamond's steps as
mmap_lock serialises them in vaddr.c (which takes it per region; a step here holds it for the
whole list).

**Time and accesses.**  Time advances only in ``kdamond_usleep``: a sampling interval, or the
watermark check interval while every scheme is deactivated.  In a sampling interval the
workload (workload.py) touches pages; only the folios DAMON sampled keep an accessed bit (at
most one per region), so nothing is stored per page.  A folio's bit is set when any of its pages
is touched: a PMD-mapped THP has one accessed bit, in its PMD, for all 2 MiB.  The workload's
clock is DAMON's count of sampling intervals.

**Randomness.**  ``damon_rand()`` draws from the state's SplitMix64 word in the kernel's order:
one per region in ``damon_va_prepare_access_checks``, in list order, and one per split point in
``damon_split_regions_of``.

**Variants.**  ``v6.12.117`` is the default.  Each fix of variants.FIXES has a variant without
it (``pre-6.12.N-name``), and ``as-of-6.12.N`` is Debian's 6.12.N as DAMON goes: releases, or bugs
when an invariant catches a fix they lack.  The made-up bugs break one rule each:
``merge-ignores-sz-limit``, ``split-loses-a-byte``, ``aging-after-merge``, ``quota-never-charged``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from ...engine import HARM, MADE_UP, Frame, Invariant, Program, ProgramModel, Replacement, Variant
from ...engine.explore import FixedChoices
from ...engine.trace import Recorded
from ...scenario_spec.expect import Expectations, ExpectError
from ...scenario_spec.scenario import Bool, Int, Key, List, Str, Table, bad
from . import damos as dm
from . import variants as fx
from .core import (DAMON_MIN_REGION, PAGE_SIZE, ULONG, Attrs, damon_max_nr_accesses, damon_merge_regions_of,
                   damon_region_sz_limit, damon_set_attrs, damon_split_regions_of, damon_sz_region,
                   kdamond_merge_regions, kdamond_reset_aggregated, kdamond_split_regions)
from .damos import Fixes, Scheme, SchemeState
from .rand import Rng, seeded
from .vaddr import (FolioCache, Vma, __damon_va_init_regions, __damon_va_three_regions, damon_va_apply_scheme,
                    damon_va_check_accesses, damon_va_prepare_access_checks, damon_va_update, folio_of)
from .workload import Access, folio_accessed

KDAMOND = "kdamond"
MMAP_ACTOR = "M"

INIT = "damon_va_init"
WAIT = "kdamond_wait_activation"
PREPARE = "damon_va_prepare_access_checks"
SLEEP = "kdamond_usleep"
CHECK = "damon_va_check_accesses"
MERGE = "kdamond_merge_regions"
APPLY = "kdamond_apply_schemes"
RESET = "kdamond_reset_aggregated"
SPLIT = "kdamond_split_regions"
UPDATE = "damon_va_update"
KDAMOND_STEPS = (INIT, WAIT, SLEEP, PREPARE, CHECK, MERGE, APPLY, RESET, SPLIT, UPDATE)

# What kdamond does next: a step's label, or one of the two sleeps that share kdamond_usleep.
SAMPLE_SLEEP = "usleep(sample_interval)"
WMARK_SLEEP = "usleep(watermark interval)"


class Config(NamedTuple):
    """A scenario's parameters, fixed for the run."""

    attrs: Attrs
    aggregations: int  # the run ends after this many aggregation intervals
    seed: int  # the SplitMix64 seed: DAMON's draws and the workload's accesses
    vmas: tuple  # the process's mappings when kdamond starts
    workload: tuple  # workload.Access entries
    schemes: tuple  # damos.Scheme entries
    free_mem_rate: tuple  # (from_us, per-mille of RAM free): what the free_mem_rate watermark reads
    ns_per_byte: tuple  # (action, ns): the stand-in for the time an action takes per byte
    min_region: int = DAMON_MIN_REGION


class Kdamond(NamedTuple):
    phase: str  # the step kdamond takes next (or one of the two sleeps)
    now_us: int = 0
    passed_sample_intervals: int = 0
    next_aggregation_sis: int = 0
    next_ops_update_sis: int = 0
    sz_limit: int = 0
    max_nr_accesses: int = 0  # what the last damon_va_check_accesses returned
    last_nr_regions: int = 0  # kdamond_split_regions()'s function-static variable
    rng: Rng = Rng(0)
    aggregations: int = 0  # aggregation intervals completed
    sleep_us: int = 0  # what the next kdamond_usleep sleeps
    merge_passes: int = 0  # passes of the last kdamond_merge_regions
    cache: FolioCache = FolioCache()  # v6.12.0's last-checked-folio statics (unused from 6.12.110)


class Thread(NamedTuple):
    name: str
    frames: tuple


class DamonState(NamedTuple):
    threads: tuple  # the mmap actor, if the scenario has one
    k: Kdamond
    regions: tuple  # the target's regions_list
    vmas: tuple  # the process's mappings now
    young: frozenset  # first addresses of the sampled folios accessed since damon_va_mkold
    schemes: tuple  # SchemeState per configured scheme
    applied: tuple  # damos.Applied: what the last kdamond_apply_schemes step did (empty after other steps)
    ranges: tuple  # ghost: the monitored address ranges (the three regions applied last)
    cfg: Config


# --- steps ------------------------------------------------------------------------------------------------


def aggregation_due(s: DamonState) -> bool:
    return s.k.passed_sample_intervals >= s.k.next_aggregation_sis


def schemes_to_apply(s: DamonState) -> bool:
    """A scheme is due and activated: otherwise kdamond_apply_schemes() returns without a change."""
    return any(s.k.passed_sample_intervals >= ss.next_apply_sis and ss.activated for ss in s.schemes)


def following(s: DamonState, done: str) -> str:
    """The phase after ``done`` in kdamond_fn()'s loop body, skipping the ones not due."""
    if done == CHECK and aggregation_due(s):
        return MERGE
    if done in (CHECK, MERGE) and schemes_to_apply(s):
        return APPLY
    if done in (CHECK, MERGE, APPLY) and aggregation_due(s):
        return RESET
    if done == RESET:
        return SPLIT
    if s.k.passed_sample_intervals >= s.k.next_ops_update_sis:
        return UPDATE
    return WAIT


def then(s: DamonState, done: str, **k) -> DamonState:
    """Finish a kdamond step: its changes to Kdamond, and the phase after it."""
    kd = s.k._replace(**k) if k else s.k
    s = s._replace(k=kd, applied=())
    return s._replace(k=kd._replace(phase=following(s, done)))


def free_mem_rate(s: DamonState) -> Optional[int]:
    series = s.cfg.free_mem_rate
    return dm.series_at(series, s.k.now_us, series[0][1]) if series else None


def ctx(s: DamonState) -> dm.Ctx:
    return dm.Ctx(s.cfg.attrs, s.k.passed_sample_intervals, s.k.now_us, s.vmas, dict(s.cfg.ns_per_byte),
                  damon_va_apply_scheme, s.cfg.min_region)


def kdamond_runs(fixes: frozenset, *, merge_of=damon_merge_regions_of, merge_again: bool = False,
                 split_of=damon_split_regions_of, charge: bool = True) -> dict[str, Callable]:
    """The kdamond steps of a kernel carrying ``fixes`` (variants.FIXES names); the keywords are
    the broken variants' changes."""
    damos_fixes = Fixes(**{f: f.replace("_", "-") in fixes for f in Fixes._fields})

    def init(s):
        c = s.cfg
        a = c.attrs
        sample = a.sample_interval or 1
        regions = __damon_va_init_regions(s.vmas, a, c.min_region, evenly_split_fix="evenly-split" in fixes)
        rc, ranges = __damon_va_three_regions(s.vmas, c.min_region)
        states = tuple(ss._replace(next_apply_sis=(sc.apply_interval_us or a.aggr_interval) // sample)
                       for sc, ss in zip(c.schemes, s.schemes))
        s = s._replace(regions=regions, ranges=() if rc else ranges, schemes=states)
        return then(s, INIT, passed_sample_intervals=0, next_aggregation_sis=a.aggr_interval // sample,
                    next_ops_update_sis=a.ops_update_interval // sample,
                    sz_limit=damon_region_sz_limit(regions, a, c.min_region))

    def wait_activation(s):
        min_wait, states = dm.kdamond_wait_activation(s.cfg.schemes, s.schemes, free_mem_rate(s))
        s = s._replace(schemes=states, applied=())
        if min_wait:
            return s._replace(k=s.k._replace(phase=WMARK_SLEEP, sleep_us=min_wait))
        return s._replace(k=s.k._replace(phase=PREPARE))

    def prepare(s):
        regions, young, rng = damon_va_prepare_access_checks(s.regions, s.vmas, s.young, s.k.rng)
        s = s._replace(regions=regions, young=young, applied=())
        return s._replace(k=s.k._replace(rng=rng, phase=SAMPLE_SLEEP, sleep_us=s.cfg.attrs.sample_interval))

    def usleep(s):
        kd = s.k._replace(now_us=s.k.now_us + s.k.sleep_us)
        if kd.phase == WMARK_SLEEP:
            return s._replace(k=kd._replace(phase=WAIT), applied=())
        c = s.cfg
        young = set(s.young)
        for r in s.regions:  # the workload runs; only the sampled folios keep an accessed bit
            folio = folio_of(s.vmas, r.sampling_addr)
            if folio is not None and folio_accessed(c.workload, *folio, kd.passed_sample_intervals, c.seed):
                young.add(folio[0])
        kd = kd._replace(passed_sample_intervals=kd.passed_sample_intervals + 1, phase=CHECK)
        return s._replace(k=kd, young=frozenset(young), applied=())

    def check(s):
        cache = None if "folio-cache" in fixes else s.k.cache
        regions, max_nr, cache = damon_va_check_accesses(s.regions, s.vmas, s.young, s.cfg.attrs, cache=cache)
        return then(s._replace(regions=regions), CHECK, max_nr_accesses=max_nr, cache=cache or s.k.cache)

    def merge(s):
        c = s.cfg
        regions, passes = kdamond_merge_regions(s.regions, s.k.max_nr_accesses // 10, s.k.sz_limit, c.attrs,
                                                merge_loop_fix="merge-loop" in fixes,
                                                merge_aging_fix="merge-aging" in fixes, merge_of=merge_of)
        if merge_again:  # the broken variant ages every region once more after merging
            regions = merge_of(regions, s.k.max_nr_accesses // 10, 0, True)
        return then(s._replace(regions=regions), MERGE, merge_passes=passes)

    def apply_schemes(s):
        regions, states, applied = dm.kdamond_apply_schemes(ctx(s), s.regions, s.cfg.schemes, s.schemes,
                                                            damos_fixes, charge=charge)
        s = then(s._replace(regions=regions, schemes=states), APPLY)
        return s._replace(applied=applied)

    def reset(s):
        a = s.cfg.attrs
        sample = a.sample_interval or 1
        s = s._replace(regions=kdamond_reset_aggregated(s.regions))
        return then(s, RESET, next_aggregation_sis=s.k.next_aggregation_sis + a.aggr_interval // sample,
                    aggregations=s.k.aggregations + 1)

    def split(s):
        regions, last, rng = kdamond_split_regions(s.regions, s.cfg.attrs, s.k.last_nr_regions, s.k.rng,
                                                   s.cfg.min_region, split_of=split_of)
        return then(s._replace(regions=regions), SPLIT, last_nr_regions=last, rng=rng)

    def update(s):
        c = s.cfg
        sample = c.attrs.sample_interval or 1
        regions, ranges = damon_va_update(s.regions, s.vmas, c.min_region,
                                          set_regions_checks="set-regions-checks" in fixes)
        s = s._replace(regions=regions, ranges=s.ranges if ranges is None else ranges)
        return then(s, UPDATE, next_ops_update_sis=s.k.next_ops_update_sis + c.attrs.ops_update_interval // sample,
                    sz_limit=damon_region_sz_limit(regions, c.attrs, c.min_region))

    return {INIT: init, WAIT: wait_activation, PREPARE: prepare, SLEEP: usleep, CHECK: check, MERGE: merge,
            APPLY: apply_schemes, RESET: reset, SPLIT: split, UPDATE: update}


program = Program()
STEPS = {
    INIT: ("mm/damon/vaddr.c:damon_va_init",
           "kdamond_fn starts: count intervals in samples (kdamond_init_intervals_sis), build the three regions "
           "that skip the two biggest unmapped gaps and split each evenly (ops.init), and set sz_limit"),
    WAIT: ("mm/damon/core.c:kdamond_wait_activation",
           "check every scheme's watermarks against free memory; go on if one is active, else sleep"),
    PREPARE: ("mm/damon/vaddr.c:damon_va_prepare_access_checks",
              "pick one random sampling address in every region (damon_rand) and clear the accessed bit of "
              "the page there (damon_va_mkold)"),
    SLEEP: ("mm/damon/core.c:kdamond_usleep",
            "sleep one sampling interval while the process runs (passed_sample_intervals++ after it), or the "
            "watermark interval while every scheme is deactivated"),
    CHECK: ("mm/damon/vaddr.c:damon_va_check_accesses",
            "read the accessed bit at each region's sampling address: nr_accesses++ if set, update "
            "nr_accesses_bp; return the largest nr_accesses"),
    MERGE: ("mm/damon/core.c:kdamond_merge_regions",
            "aggregation: age each region, merge neighbours whose nr_accesses differ by at most max/10 while "
            "the sum stays within sz_limit; repeat with a doubled threshold while above max_nr_regions"),
    APPLY: ("mm/damon/core.c:kdamond_apply_schemes",
            "for the schemes due: new quota window and score threshold, then walk the regions applying each "
            "scheme to those that match its access pattern, within the quota"),
    RESET: ("mm/damon/core.c:kdamond_reset_aggregated",
            "report each region (damon_aggregated tracepoint), keep nr_accesses as last_nr_accesses, restart "
            "the count at 0"),
    SPLIT: ("mm/damon/core.c:kdamond_split_regions",
            "if at most max_nr_regions/2 regions: split each at random points into 2 (3 when the count did not "
            "change since the last split)"),
    UPDATE: ("mm/damon/vaddr.c:damon_va_update",
             "re-read the three regions from the process's mappings and fit the regions to them "
             "(damon_set_regions); recompute sz_limit"),
}
_RUNS = kdamond_runs(fx.ALL)
for _label, (_where, _what) in STEPS.items():
    program.step(_label, _where, _what, daemon=True)(_RUNS[_label])

_GUARDS = {
    INIT: lambda s: s.k.phase == INIT,
    WAIT: lambda s: s.k.phase == WAIT and s.k.aggregations < s.cfg.aggregations,
    SLEEP: lambda s: s.k.phase in (SAMPLE_SLEEP, WMARK_SLEEP),
}
for _label in KDAMOND_STEPS:
    program.guard(_label)(_GUARDS.get(_label, lambda s, _l=_label: s.k.phase == _l))


@program.step("do_mmap", "mm/mmap.c:do_mmap", "the process maps a new range (mmap_lock held for write)")
def do_mmap(s, i, arg):
    start, end, thp = arg
    vmas = tuple(sorted(s.vmas + (Vma(start, end, thp),)))
    return s._replace(vmas=vmas)


@program.step("__vm_munmap", "mm/mmap.c:__vm_munmap",
              "the process unmaps a range (mmap_lock held for write): its page tables and accessed bits go")
def vm_munmap(s, i, arg):
    start, end = arg
    return s._replace(vmas=unmap(s.vmas, start, end), young=frozenset(h for h in s.young if not start <= h < end))


def unmap(vmas: tuple, start: int, end: int) -> tuple:
    out = []
    for v in vmas:
        if v.end <= start or end <= v.start:
            out.append(v)
            continue
        if v.start < start:
            out.append(v._replace(end=start))
        if end < v.end:
            out.append(v._replace(start=end))
    return tuple(out)


# --- invariants ---------------------------------------------------------------------------------------------


def covered(spans) -> list[tuple[int, int]]:
    """Adjacent or overlapping (start, end) spans joined, in order."""
    out: list = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def fmt(addr: int) -> str:
    return hex(addr)


def regions_cover_ranges(s: DamonState) -> Optional[str]:
    if s.k.phase == INIT:
        return None
    prev_end = None
    have: list[tuple[int, int]] = []  # the runs of adjacent regions
    for r in s.regions:
        if r.start >= r.end:
            return f"region [{fmt(r.start)}, {fmt(r.end)}) is empty"
        if prev_end is not None and r.start < prev_end:
            return f"region [{fmt(r.start)}, {fmt(r.end)}) overlaps or precedes the region before it"
        if prev_end == r.start:
            have[-1] = (have[-1][0], r.end)
        else:
            have.append((r.start, r.end))
        prev_end = r.end
    want = covered(s.ranges)
    if have != want:
        missing = [f"[{fmt(a)}, {fmt(b)})" for a, b in want if (a, b) not in have][:1]
        return ("the regions do not cover exactly the monitored ranges"
                + (f": {missing[0]} is not covered as one run of regions" if missing else ""))
    return None


def split_respects_max(s, a, t) -> Optional[str]:
    if a.label != SPLIT or s.regions is t.regions:
        return None
    mx = t.cfg.attrs.max_nr_regions
    if len(t.regions) > mx and len(t.regions) != len(s.regions):
        return (f"kdamond_split_regions went from {len(s.regions)} to {len(t.regions)} regions, "
                f"above max_nr_regions {mx}")
    return None


def nr_accesses_bounded(s: DamonState) -> Optional[str]:
    top = damon_max_nr_accesses(s.cfg.attrs)
    for r in s.regions:
        if r.nr_accesses > top:
            return (f"region [{fmt(r.start)}, {fmt(r.end)}) has nr_accesses {r.nr_accesses}, more than the "
                    f"{top} sampling intervals of an aggregation interval")
    return None


def bytes_kept(s, a, t) -> Optional[str]:
    if a.label not in (MERGE, SPLIT) or s.regions is t.regions:
        return None
    before = covered((r.start, r.end) for r in s.regions)
    after = covered((r.start, r.end) for r in t.regions)
    if before != after:
        lost = sum(b - x for x, b in before) - sum(b - x for x, b in after)
        return f"{a.label} changed the bytes the regions cover ({lost:+d} bytes lost)"
    return None


def inputs_of(regions: tuple, start: int, end: int) -> list:
    return [r for r in regions if start <= r.start and r.end <= end]


def merged_within_sz_limit(s, a, t) -> Optional[str]:
    if a.label != MERGE:
        return None
    spans = {(r.start, r.end) for r in s.regions}
    limit = s.k.sz_limit
    for r in t.regions:
        if (r.start, r.end) in spans or damon_sz_region(r) <= limit:
            continue
        parts = inputs_of(s.regions, r.start, r.end)
        if len(parts) > 1 and all(damon_sz_region(p) <= limit for p in parts):
            return (f"merged region [{fmt(r.start)}, {fmt(r.end)}) has {damon_sz_region(r)} bytes, above sz_limit "
                    f"{limit}, from {len(parts)} regions within it")
    return None


def age_grows_at_most_one(s, a, t) -> Optional[str]:
    if s.regions is t.regions:
        return None
    i = 0
    for r in t.regions:
        while i < len(s.regions) and s.regions[i].end <= r.start:
            i += 1
        j, oldest = i, None
        while j < len(s.regions) and s.regions[j].start < r.end:
            oldest = s.regions[j].age if oldest is None else max(oldest, s.regions[j].age)
            j += 1
        if oldest is not None and r.age > oldest + 1:
            return (f"{a.label}: region [{fmt(r.start)}, {fmt(r.end)}) went from age {oldest} to {r.age} "
                    f"in one aggregation")
    return None


def counts_sampled_accesses(s, a, t) -> Optional[str]:
    """After a check, every region counted one access exactly when its sampled folio was accessed."""
    if a.label != CHECK:
        return None
    for before, after in zip(s.regions, t.regions):
        folio = folio_of(s.vmas, before.sampling_addr)
        truth = folio is not None and folio[0] in s.young
        if (after.nr_accesses - before.nr_accesses) != (1 if truth else 0):
            seen = "an access" if truth else "no access"
            return (f"region [{fmt(before.start)}, {fmt(before.end)}): its sampled page {fmt(before.sampling_addr)} "
                    f"had {seen}, but nr_accesses went {before.nr_accesses} -> {after.nr_accesses}")
    return None


def has_quota(sc: Scheme) -> bool:
    return bool(sc.quota.ms or sc.quota.sz or sc.quota.goals)


def quota_limits_actions(s: DamonState) -> Optional[str]:
    for k, (sc, ss) in enumerate(zip(s.cfg.schemes, s.schemes)):
        if not has_quota(sc) or not ss.charged_from:
            continue
        if ss.esz and ss.ghost_window_bytes > ss.esz:
            return (f"scheme {k} ({sc.action}) acted on {ss.ghost_window_bytes} bytes in one charge window, above "
                    f"its effective quota of {ss.esz} bytes")
        if not ss.esz and ss.ghost_windows:
            return (f"scheme {k} ({sc.action}) has a quota but its effective quota came out 0, which DAMOS reads as "
                    f"no limit")
    return None


def actions_on_matching_regions(s, a, t) -> Optional[str]:
    if a.label != APPLY:
        return None
    for ap in t.applied:
        p = t.cfg.schemes[ap.scheme].pattern
        if not (p.min_sz_region <= ap.checked_sz <= p.max_sz_region
                and p.min_nr_accesses <= ap.nr_accesses <= p.max_nr_accesses
                and p.min_age_region <= ap.age <= p.max_age_region):
            return (f"scheme {ap.scheme} acted on [{fmt(ap.start)}, {fmt(ap.end)}) (size {ap.checked_sz}, "
                    f"nr_accesses {ap.nr_accesses}, age {ap.age}), which its access pattern does not match")
    return None


INVARIANTS = [
    Invariant("quota-limits-actions",
              "once a scheme's first charge window is over, its effective quota is set and it acts on at most "
              "that many bytes per window", quota_limits_actions, kind=HARM),
    Invariant("actions-on-matching-regions", "a scheme acts only on regions that match its access pattern",
              actions_on_matching_regions, transition=True, kind=HARM),
    Invariant("regions-cover-monitored-ranges",
              "the regions are sorted, non-empty, do not overlap and cover exactly the monitored ranges",
              regions_cover_ranges),
    Invariant("merge-and-split-keep-every-byte", "merging and splitting never change the bytes monitored",
              bytes_kept, transition=True),
    Invariant("merged-regions-within-sz-limit",
              "a merged region is within sz_limit unless one of its inputs already exceeded it",
              merged_within_sz_limit, transition=True),
    Invariant("split-respects-max-nr-regions",
              "a split never takes nr_regions above max_nr_regions (6.12 sets no lower bound, and merging "
              "may leave more than the maximum)", split_respects_max, transition=True),
    Invariant("nr-accesses-within-samples",
              "no region counts more accesses than an aggregation interval has sampling intervals",
              nr_accesses_bounded),
    Invariant("age-grows-at-most-one", "a region's age grows by at most one per aggregation interval",
              age_grows_at_most_one, transition=True),
    Invariant("counts-sampled-accesses",
              "each access check counts an access exactly when the sampled page's folio was accessed",
              counts_sampled_accesses, transition=True),
]


# --- variants -------------------------------------------------------------------------------------------------

V6_12_117 = "v6.12.117"
# Fixes whose absence an invariant catches: the variants without them are broken.
CAUGHT = {"zero-esz": "quota-limits-actions", "merge-aging": "age-grows-at-most-one",
          "folio-cache": "counts-sampled-accesses"}


def kernel_steps(fixes: frozenset, missing: list) -> dict:
    """Each step a missing fix changes, run as the kernel without those fixes, its text saying what
    that kernel does there instead (one sentence per missing fix)."""
    runs = kdamond_runs(fixes)
    # In the fixes' order: a set's would change with the hash seed, and so would each page listing the steps.
    changed = dict.fromkeys(label for f in missing for label in f.steps)
    return {label: Replacement(runs[label], what="; ".join(
                f"before 6.12.{f.version}: {f.old}" for f in missing if label in f.steps))
            for label in changed}


def kernel_variant(name: str, doc: str, when: str, fixes: frozenset) -> Variant:
    """DAMON as a kernel with only ``fixes`` has it: a release ``when``, or a bug when an invariant
    catches a fix it lacks (then dated by the releases that fixed what is caught)."""
    missing = [fx.BY_NAME[f] for f in sorted(fx.ALL - fixes)]
    caught = [f for f in missing if f.name in CAUGHT]
    replaces = kernel_steps(fixes, missing)
    if not caught:
        return Variant.release(name, doc, when, replaces)
    doc += f" (caught by {', '.join(dict.fromkeys(sorted(CAUGHT[f.name] for f in caught)))})"
    fixed = ", ".join(dict.fromkeys(f"6.12.{f.version}" for f in sorted(caught, key=lambda f: f.version)))
    return Variant.bug(name, doc, fixed=fixed, **replaces)


def _variants() -> dict:
    out = {V6_12_117: Variant.release(V6_12_117, "Linux 6.12.117 (Debian linux-source-6.12 6.12.117-1~deb12u1), "
                                                 "the source every label is checked against", "6.12.117")}
    for f in fx.FIXES:
        name = f"pre-6.12.{f.version}-{f.name}"
        out[name] = kernel_variant(name, f"6.12.117 without \"{f.title}\" (first in 6.12.{f.version}, Debian "
                                         f"{f.debian}): {f.old}", f"6.12.117 without 6.12.{f.version}'s fix",
                                   fx.ALL - {f.name})
    for n in fx.AS_OF:
        name = f"as-of-6.12.{n}"
        lacks = sorted(fx.ALL - fx.fixes_as_of(n))
        out[name] = kernel_variant(name, f"DAMON as Linux 6.12.{n} has it: without {', '.join(lacks)}",
                                   f"6.12.{n}", fx.fixes_as_of(n))

    def never_limits(regions, thres, sz_limit, count_age):
        return damon_merge_regions_of(regions, thres, ULONG, count_age)

    def split_loses_a_byte(regions, nr_subs, rng, min_region):
        out, rng = damon_split_regions_of(regions, nr_subs, rng, min_region)
        shaved = [r if r.start == old.start else r._replace(start=r.start + 1)
                  for r, old in zip(out, _aligned_starts(out, regions))]
        return tuple(shaved), rng

    out["merge-ignores-sz-limit"] = Variant.bug(
        "merge-ignores-sz-limit", "damon_merge_regions_of merges similar neighbours whatever their total size",
        unfixed=MADE_UP,
        kdamond_merge_regions=kdamond_runs(fx.ALL, merge_of=never_limits)[MERGE])
    out["split-loses-a-byte"] = Variant.bug(
        "split-loses-a-byte", "damon_split_region_at starts the new region one byte after the old one ends",
        unfixed=MADE_UP,
        kdamond_split_regions=kdamond_runs(fx.ALL, split_of=split_loses_a_byte)[SPLIT])
    out["aging-after-merge"] = Variant.bug(
        "aging-after-merge", "kdamond_merge_regions ages every region once more after merging", unfixed=MADE_UP,
        kdamond_merge_regions=kdamond_runs(fx.ALL, merge_again=True)[MERGE])
    out["quota-never-charged"] = Variant.bug(
        "quota-never-charged", "damos_apply_scheme acts on a region without charging its bytes to the quota",
        unfixed=MADE_UP,
        kdamond_apply_schemes=kdamond_runs(fx.ALL, charge=False)[APPLY])
    return out


def _aligned_starts(out: tuple, regions: tuple) -> list:
    """For each piece of a split, the region it came from (pieces that start a region are kept)."""
    froms = []
    k = 0
    for r in out:
        while regions[k].end <= r.start:
            k += 1
        froms.append(regions[k])
    return froms


VARIANTS = _variants()


# --- scenarios ----------------------------------------------------------------------------------------------

MAX_ADDR = 1 << 48  # arm64's 48-bit user address space, the largest of the lab's three (x86_64: 1 << 47)
MAX_I64 = (1 << 63) - 1  # TOML integers are signed 64-bit: the largest bound a file can write
MAX_SAMPLES = 200_000  # sampling intervals in one run: a player trace stays well under a million steps


def _page(v: int, path: str, what: str) -> None:
    if v % PAGE_SIZE:
        raise bad(path, f"{what} {fmt(v)} is not page aligned ({PAGE_SIZE} bytes)")


def _range(lo: int, hi: int) -> Key:
    return Key(List(Int(0, MAX_I64), 2, 2, "[min, max], inclusive"), [lo, hi])


SCHEME = Table({
    "action": Key(Str(dm.ACTIONS, doc="the DAMOS action (vaddr applies willneed, cold, pageout, hugepage and "
                                      "nohugepage; the rest do nothing there)")),
    "sz": _range(0, MAX_I64),
    "nr_accesses": _range(0, 0xFFFF_FFFF),
    "age": _range(0, 0xFFFF_FFFF),
    "apply_interval_us": Key(Int(0, 10**10, "how often the scheme is applied; 0: every aggregation"), 0),
    "quota": Key(Table({
        "ms": Key(Int(0, 10**6, "time quota per charge window"), 0),
        "bytes": Key(Int(0, MAX_I64, "size quota per charge window"), 0),
        "reset_interval_ms": Key(Int(0, 10**7, "the charge window"), 0),
        "weight_sz": Key(Int(0, 1000), 0),
        "weight_nr_accesses": Key(Int(0, 1000), 0),
        "weight_age": Key(Int(0, 1000), 0),
        "goals": Key(List(Table({
            "target_value": Key(Int(1, MAX_I64, "the value the user wants current_value to reach")),
            "current": Key(List(List(Int(0, MAX_I64), 2, 2), 1, 64,
                                "[from_us, current_value] pairs: what the user writes, over time")),
        }), 0, 4, "user_input goals: the quota grows while current < target, shrinks above it"), []),
    }, "quotas"), {}),
    "watermarks": Key(Table({
        "metric": Key(Str(("none", "free_mem_rate")), "none"),
        "interval_us": Key(Int(0, 10**9), 0),
        "high": Key(Int(0, 1000), 0),
        "mid": Key(Int(0, 1000), 0),
        "low": Key(Int(0, 1000), 0),
    }, "watermarks on free memory in per-mille"), {}),
    "filters": Key(List(Table({
        "start": Key(Int(0, MAX_ADDR)),
        "end": Key(Int(1, MAX_ADDR)),
        "matching": Key(Bool("true: filter out what is inside; false: what is outside"), True),
    }), 0, 4, "address filters"), []),
})


def _rules(sc: dict, path: str) -> None:
    a = sc["attrs"]
    attrs = Attrs(a["sample_us"], a["aggr_us"], a["update_us"], a["min_nr_regions"], a["max_nr_regions"])
    if damon_set_attrs(attrs):
        raise bad("attrs", "damon_set_attrs() refuses these: min_nr_regions must be at least 3 and at most "
                           "max_nr_regions, sample_us at most aggr_us")
    if a["aggr_us"] // a["sample_us"] > 1000:
        raise bad("attrs", "more than 1000 sampling intervals per aggregation interval")
    if sc["aggregations"] * (a["aggr_us"] // a["sample_us"]) > MAX_SAMPLES:
        raise bad("aggregations", f"the run would take more than {MAX_SAMPLES} sampling intervals")
    vmas = []
    for i, v in enumerate(sc["vmas"]):
        where = f"vmas[{i}]"
        _page(v["start"], where, "start")
        _page(v["end"], where, "end")
        if v["start"] >= v["end"]:
            raise bad(where, f"start {fmt(v['start'])} must be below end {fmt(v['end'])}")
        vmas.append(Vma(v["start"], v["end"], v["thp"]))
    for i, (x, y) in enumerate(zip(vmas, vmas[1:])):
        if y.start < x.end:
            raise bad(f"vmas[{i + 1}]", "mappings must be sorted and must not overlap")
    for i, w in enumerate(sc["access"]):
        if w["start"] >= w["end"]:
            raise bad(f"access[{i}]", "start must be below end")
        if w["from_sample"] >= w["until_sample"]:
            raise bad(f"access[{i}]", "from_sample must be below until_sample")
    current = tuple(vmas)
    for i, op in enumerate(sc["mmap"]):
        where = f"mmap[{i}]"
        _page(op["start"], where, "start")
        _page(op["end"], where, "end")
        if op["start"] >= op["end"]:
            raise bad(where, "start must be below end")
        if op["op"] == "mmap":
            if any(v.start < op["end"] and op["start"] < v.end for v in current):
                raise bad(where, "maps over an existing mapping (the process would get another address)")
            current = tuple(sorted(current + (Vma(op["start"], op["end"], op["thp"]),)))
        else:
            if any(v.thp and v.start < op["end"] and op["start"] < v.end for v in current) and (
                    op["start"] % (2 << 20) or op["end"] % (2 << 20)):
                raise bad(where, "unmaps part of a THP mapping at an address that is not 2 MiB aligned")
            current = unmap(current, op["start"], op["end"])
    uses_free_mem = False
    for i, s in enumerate(sc["schemes"]):
        where = f"schemes[{i}]"
        for key in ("sz", "nr_accesses", "age"):
            if s[key][0] > s[key][1]:
                raise bad(f"{where}.{key}", "min is above max")
        w = s["watermarks"]
        if w["metric"] == "free_mem_rate":
            uses_free_mem = True
            if not w["high"] >= w["mid"] >= w["low"]:
                raise bad(f"{where}.watermarks", "needs high >= mid >= low")
            if not w["interval_us"]:
                raise bad(f"{where}.watermarks", "needs an interval_us to wait between checks")
        q = s["quota"]
        if (q["ms"] or q["bytes"] or q["goals"]) and not q["reset_interval_ms"]:
            raise bad(f"{where}.quota", "a quota needs reset_interval_ms (the charge window)")
        for j, f in enumerate(s["filters"]):
            if f["start"] >= f["end"]:
                raise bad(f"{where}.filters[{j}]", "start must be below end")
    if uses_free_mem and not sc["free_mem_rate"]:
        raise bad("free_mem_rate", "a free_mem_rate watermark needs the free memory series")


SCHEMA = Table({
    "aggregations": Key(Int(1, 2000, "the run ends after this many aggregation intervals")),
    "seed": Key(Int(0, MAX_I64, "seeds DAMON's random draws and the workload's accesses"), 1),
    "attrs": Key(Table({
        "sample_us": Key(Int(1, 10**7, "sampling interval"), 5000),
        "aggr_us": Key(Int(1, 10**9, "aggregation interval"), 100_000),
        "update_us": Key(Int(1, 10**10, "operations update interval (damon_va_update)"), 60_000_000),
        "min_nr_regions": Key(Int(1, 1 << 16), 10),
        "max_nr_regions": Key(Int(1, 1 << 16), 1000),
    }, "monitoring attributes (struct damon_attrs), in microseconds"), {}),
    "vmas": Key(List(Table({
        "start": Key(Int(0, MAX_ADDR)),
        "end": Key(Int(1, MAX_ADDR)),
        "thp": Key(Bool("every 2 MiB-aligned block inside is one PMD-mapped huge page"), False),
    }), 1, 64, "the process's mappings when kdamond starts, sorted")),
    "access": Key(List(Table({
        "start": Key(Int(0, MAX_ADDR)),
        "end": Key(Int(1, MAX_ADDR)),
        "rate_permil": Key(Int(0, 1000, "chance a page of the block is touched in one sampling interval"), 1000),
        "width": Key(Int(0, MAX_ADDR, "the hot block's size; 0: the whole range"), 0),
        "speed": Key(Int(0, MAX_ADDR, "bytes the block moves per sampling interval"), 0),
        "from_sample": Key(Int(0, MAX_I64), 0),
        "until_sample": Key(Int(1, MAX_I64), MAX_I64),
    }), 0, 16, "the workload: blocks of pages the process touches (the rest is cold)"), []),
    "mmap": Key(List(Table({
        "op": Key(Str(("mmap", "munmap"))),
        "start": Key(Int(0, MAX_ADDR)),
        "end": Key(Int(1, MAX_ADDR)),
        "thp": Key(Bool(), False),
    }), 0, 16, f"the calls actor {MMAP_ACTOR} makes, in order"), []),
    "schemes": Key(List(SCHEME, 0, 4, "DAMOS schemes"), []),
    "free_mem_rate": Key(List(List(Int(0, MAX_I64), 2, 2), 0, 64,
                              "[from_us, per-mille free] pairs: the free memory the watermarks read"), []),
    "ns_per_byte": Key(Table({a: Key(Int(0, 10**9), 0) for a in dm.ACTIONS},
                             "nanoseconds an action takes per byte: the stand-in for DAMOS's measured time"), {}),
}, rules=_rules)


def config_from(c: dict) -> Config:
    a = c["attrs"]

    def scheme(s: dict) -> Scheme:
        q, w = s["quota"], s["watermarks"]
        return Scheme(
            s["action"],
            dm.Pattern(*s["sz"], *s["nr_accesses"], *s["age"]),
            s["apply_interval_us"],
            dm.Quota(q["ms"], q["bytes"], q["reset_interval_ms"], q["weight_sz"], q["weight_nr_accesses"],
                     q["weight_age"], tuple(dm.Goal(g["target_value"], tuple(map(tuple, g["current"])))
                                            for g in q["goals"])),
            dm.Wmarks(w["metric"], w["interval_us"], w["high"], w["mid"], w["low"]),
            tuple(dm.AddrFilter(f["start"], f["end"], f["matching"]) for f in s["filters"]))

    return Config(
        Attrs(a["sample_us"], a["aggr_us"], a["update_us"], a["min_nr_regions"], a["max_nr_regions"]),
        c["aggregations"], c["seed"],
        tuple(Vma(v["start"], v["end"], v["thp"]) for v in c["vmas"]),
        tuple(Access(w["start"], w["end"], w["rate_permil"], w["width"], w["speed"], w["from_sample"],
                     w["until_sample"]) for w in c["access"]),
        tuple(scheme(s) for s in c["schemes"]),
        tuple(tuple(p) for p in c["free_mem_rate"]),
        tuple(sorted((a, ns) for a, ns in c["ns_per_byte"].items() if ns)))


# --- the mechanism ------------------------------------------------------------------------------------------


def size_text(n: int) -> str:
    """Bytes as an address axis or a table shows them: 4 KiB, 1.5 MiB, 2 GiB."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


class DamonModel(ProgramModel, Recorded, FixedChoices, Expectations):
    name = "damon"
    title = "DAMON: region-based access sampling, adaptive regions and DAMOS"
    program = program
    daemons = {KDAMOND: KDAMOND_STEPS}
    default_variant = V6_12_117
    variants = VARIANTS
    scenario_schema = SCHEMA
    invariants = INVARIANTS
    fixed_choices = ("the damon_rand draws and the process's accesses, both from the scenario's seed (--set seed=N "
                     "explores another)")

    def unstarted(self, config):
        cfg = config_from(config)
        frames = tuple(Frame("do_mmap", (op["start"], op["end"], op["thp"])) if op["op"] == "mmap"
                       else Frame("__vm_munmap", (op["start"], op["end"])) for op in config["mmap"])
        threads = (Thread(MMAP_ACTOR, frames),) if frames else ()
        return DamonState(threads, Kdamond(INIT, rng=seeded(cfg.seed)), (), cfg.vmas, frozenset(),
                          tuple(SchemeState() for _ in cfg.schemes), (), (), cfg)

    def describe(self, state):
        return super().describe(state._replace(cfg=None))

    def expect_functions(self):
        def region_at(s, addr):
            for r in s.regions:
                if r.start <= addr < r.end:
                    return r
            raise ExpectError(f"region_at({fmt(addr)}): no region holds that address")

        def overlapping(s, lo, hi):
            return [r for r in s.regions if r.start < hi and lo < r.end]

        return {
            "nr_regions": lambda s: len(s.regions),
            "region_at": region_at,
            "regions_in": lambda s, lo, hi: len(overlapping(s, lo, hi)),
            "seen": lambda s, lo, hi: max((r.last_nr_accesses for r in overlapping(s, lo, hi)), default=0),
            # How many regions inside [lo, hi) draw their sampling address ``offset`` bytes or more past their start.
            "sampled_past": lambda s, lo, hi, offset: sum(1 for r in s.regions if lo <= r.start and r.end <= hi
                                                          and r.sampling_addr - r.start >= offset),
            "stat": lambda s, k: s.schemes[k].stat,
            "esz": lambda s, k: s.schemes[k].esz,
            "activated": lambda s, k: s.schemes[k].activated,
            "draws": lambda s: s.k.rng.draws,
            "mapped": lambda s, addr: any(v.start <= addr < v.end for v in s.vmas),
        }
