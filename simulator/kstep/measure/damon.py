"""What DAMON's monitoring costs and what it finds, counted by running the damon model.

Every number comes from kdamond's own run, one model step at a time (no clock is read; where a
count becomes nanoseconds, a cost table prices it):

**Overhead.**  An access check is one region's sampled folio read by ``damon_va_check_accesses``;
the checks of an aggregation interval are the regions of every check step in it, summed.  The
patch thread's claim is that this is at most ``max_nr_regions`` x the sampling intervals of an
aggregation, whatever the size of the target, where checking every page at every sampling
interval (page-granularity scanning) costs pages x samples.  ``access_check_ns`` prices one check.

**Accuracy.**  After an aggregation, rank the regions as ``kdamond_reset_aggregated`` reported them
by nr_accesses, hottest first, and take the smallest set whose total size is at least the true
hot size (the bytes the workload touched during that aggregation interval); the accuracy is the
share of the true hot bytes inside that set.  Regions with equal nr_accesses cannot be told apart,
so the group that crosses the hot size counts in proportion to the part of it taken: the share
expected when ties are broken at random.

**Schemes.**  The model does not keep which pages are resident or huge: the bench follows the
actions DAMOS applied (``kdamond_apply_schemes``) and the workload's accesses at every sampling
interval beside the run.  ``pageout`` makes its pages non-resident; the workload's next access to
such a page is a refault, charged ``refault_ns`` of the cost table (simulator/kstep/costs.json):
a page fault's entry and return and a 4 KiB copy, the least a swap-in from zram does (its
decompression is more than a copy, and the table does not measure it).  ``hugepage`` makes every
2 MiB-aligned block inside the region a huge page at once (khugepaged's collapse, without its
delay) and ``nohugepage`` makes them regular again (the thread's ethp: "use regular pages").
Hot bytes are those inside the workload's active blocks in a sampling interval; cold bytes in huge
pages are what THP wastes.
"""

from __future__ import annotations

from typing import Callable, Iterator, NamedTuple, Optional

from ..engine import costs
from ..scenario_spec import scenario
from ..scenario_spec.scenario import to_config
from ..models.damon.core import PAGE_SIZE
from ..models.damon.model import APPLY, CHECK, RESET, SCHEMA, SLEEP, DamonModel, covered
from ..models.damon.vaddr import HPAGE_PMD_SIZE
from ..models.damon.workload import accessed, hot_ranges

GIB = 1 << 30
MIB = 1 << 20
SIZES_GIB = (1, 4, 16, 64, 256, 1024)
HEAP = (0x555555550000, 0x555555550000 + 8 * MIB)
AREA = 0x600000000000  # the big mapping, between heap and stack with room for 1 TiB
STACK = (0x7FFC00000000, 0x7FFC00000000 + MIB)


class Aggregation(NamedTuple):
    checks: int  # access checks in this aggregation interval
    samples: int  # its sampling intervals
    first_sample: int  # the index of its first sampling interval
    regions: tuple  # as kdamond_reset_aggregated reported them


def config(vmas, access, *, aggregations: int, seed: int = 1, max_nr_regions: int = 1000, min_nr_regions: int = 10,
           schemes=(), sample_us: int = 5000, aggr_us: int = 100_000) -> dict:
    """A scenario's configuration, checked by the model's own schema."""
    data = {"aggregations": aggregations, "seed": seed,
            "attrs": {"sample_us": sample_us, "aggr_us": aggr_us, "update_us": 60 * aggr_us,
                      "min_nr_regions": min_nr_regions, "max_nr_regions": max_nr_regions},
            "vmas": [{"start": a, "end": b} for a, b in vmas], "access": list(access), "schemes": list(schemes)}
    return to_config(SCHEMA.check(data, ""))


def steps(model: DamonModel, cfg: dict) -> Iterator[tuple]:
    """(label, state before, state after) of every step of kdamond's run, without keeping a trace."""
    s = model.initial(cfg)
    while True:
        actions = model.actions(s)
        if not actions:
            return
        t = model.step(s, actions[0])
        yield actions[0].label, s, t
        s = t


def aggregations(model: DamonModel, cfg: dict, on_step: Optional[Callable] = None) -> list[Aggregation]:
    """Every aggregation interval of the run: its access checks, samples and reported regions."""
    out, checks, samples, first = [], 0, 0, 0
    for label, s, t in steps(model, cfg):
        if on_step:
            on_step(label, s, t)
        if label == CHECK:
            checks += len(s.regions)
        elif label == SLEEP and t.k.passed_sample_intervals > s.k.passed_sample_intervals:
            samples += 1
        elif label == RESET:
            out.append(Aggregation(checks, samples, first, s.regions))
            first += samples
            checks = samples = 0
    return out


# --- overhead ---------------------------------------------------------------------------------------------


def sized_target(size: int) -> list[tuple[int, int]]:
    """A process of ``size`` bytes: an 8 MiB heap, one big mapping and a 1 MiB stack."""
    area = size - (HEAP[1] - HEAP[0]) - (STACK[1] - STACK[0])
    return [HEAP, (AREA, AREA + area), STACK]


def overhead_workloads(size: int) -> dict[str, list]:
    area = size - 9 * MIB
    hot = AREA + area // 8 * 3
    return {
        "hot/cold": [{"start": HEAP[0], "end": HEAP[1]},
                     {"start": hot, "end": hot + area // 16 // PAGE_SIZE * PAGE_SIZE}],
        "every page at 50%": [{"start": AREA, "end": AREA + area, "rate_permil": 500}],
    }


OVERHEAD_DOC = {
    "hot/cold": "the heap and a sixteenth of the big mapping touched in every sampling interval, the rest cold",
    "every page at 50%": "every page of the big mapping touched with chance 1/2 in every sampling interval: "
                         "neighbours keep looking different, so the regions split up to the limit",
}


def overhead(size: int, workload: str, *, aggregations_n: int, max_nr_regions: int = 1000, seed: int = 1,
             model: Optional[DamonModel] = None) -> dict:
    """Access checks per aggregation of a run on a target of ``size`` bytes, against page scanning."""
    cfg = config(sized_target(size), overhead_workloads(size)[workload], aggregations=aggregations_n, seed=seed,
                 max_nr_regions=max_nr_regions)
    aggs = aggregations(model or DamonModel(), cfg)
    samples = aggs[0].samples
    pages = size // PAGE_SIZE
    checks = [a.checks for a in aggs]
    return {"bytes": size, "pages": pages, "aggr_us": cfg["attrs"]["aggr_us"], "samples_per_aggregation": samples,
            "max_nr_regions": max_nr_regions, "bound": max_nr_regions * samples,
            "page_scan_checks_per_aggregation": pages * samples,
            "checks_per_aggregation": checks, "max_checks": max(checks),
            "nr_regions_reported": [len(a.regions) for a in aggs]}


# What one access check does in 6.12 (mm/damon/vaddr.c, ops-common.c), counted per kind of cost:
# damon_va_mkold when the sample is prepared, then damon_va_young when it is checked.  Each takes
# mmap_read_lock and drops it (2 atomics), walks pgd, p4d, pud, pmd and pte to the sampled address
# (walk_page_range: 5 loads), takes and releases the PTE lock (pte_offset_map_lock: an atomic;
# pte_unmap_unlock: a store), and gets and puts the folio (damon_get_folio, folio_put: 2 atomics).
# mkold also clears the accessed bit and marks the folio idle (ptep_clear_young_notify,
# folio_set_idle: 2 atomics); young reads the idle flag (folio_test_idle: a load).
ACCESS_CHECK_WORK = {"step": 2, "load": 2 * 5 + 1, "store": 2, "atomic": 2 * (2 + 1 + 2) + 2,
                     # the sampled PTE's line: a random page of the whole target, not in kdamond's cache
                     "transfer": 1}


def access_check_ns(table: costs.CostTable) -> float:
    """What one access check (one region, one sampling interval) costs under ``table``."""
    return sum(table.ns[kind] * n for kind, n in ACCESS_CHECK_WORK.items())


def bound_broken(row: dict) -> Optional[str]:
    """Why a row breaks the thread's bound, or None."""
    over = [(k, c) for k, c in enumerate(row["checks_per_aggregation"], start=1) if c > row["bound"]]
    if not over:
        return None
    k, c = over[0]
    return (f"aggregation {k} of a {row['bytes'] // GIB} GiB target made {c} access checks, above max_nr_regions "
            f"{row['max_nr_regions']} x {row['samples_per_aggregation']} samples = {row['bound']}")


# --- accuracy ---------------------------------------------------------------------------------------------


def true_hot(workload: tuple, first: int, samples: int) -> list[tuple[int, int]]:
    """The bytes the workload touched (or may touch) during those sampling intervals."""
    return covered((lo, hi) for k in range(first, first + samples) for lo, hi, rate in hot_ranges(workload, k)
                   if rate)


def overlap(spans, lo: int, hi: int) -> int:
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in spans)


def hot_share(regions: tuple, hot: list[tuple[int, int]]) -> float:
    """The share of the true hot bytes inside the hottest regions that add up to the hot size."""
    need = sum(b - a for a, b in hot)
    if not need:
        return 1.0
    levels = sorted({r.nr_accesses for r in regions}, reverse=True)
    found = 0.0
    for level in levels:
        group = [r for r in regions if r.nr_accesses == level]
        size = sum(r.end - r.start for r in group)
        inside = sum(overlap(hot, r.start, r.end) for r in group)
        take = min(1.0, need / size)
        found += inside * take
        need -= size * take
        if need <= 0:
            break
    return found / sum(b - a for a, b in hot)


ACCURACY_AREA = GIB


def accuracy_shapes() -> dict[str, tuple[list, list, str]]:
    """(mappings, workload, what it is) of each workload shape."""
    area = (AREA, AREA + ACCURACY_AREA)
    huge = (AREA, AREA + 16 * GIB)
    return {
        "hot/cold": ([HEAP, area, STACK],
                     [{"start": AREA + 328 * MIB, "end": AREA + 392 * MIB}],
                     "a 64 MiB block of a 1 GiB mapping touched in every sampling interval"),
        "moving hotspot": ([HEAP, area, STACK],
                           [{"start": AREA, "end": area[1], "width": 64 * MIB, "speed": MIB}],
                           "a 64 MiB block moving 1 MiB per sampling interval through a 1 GiB mapping"),
        "sparse hot block": ([HEAP, area, STACK],
                             [{"start": AREA + 560 * MIB, "end": AREA + 564 * MIB}],
                             "a 4 MiB block touched in every sampling interval inside a 1 GiB cold mapping"),
        "sparse block, huge region": ([HEAP, huge, STACK],
                                      [{"start": AREA + 10 * GIB + 300 * MIB, "end": AREA + 10 * GIB + 304 * MIB}],
                                      "a 4 MiB block touched in every sampling interval inside a 16 GiB cold "
                                      "mapping"),
    }


def accuracy(shape: str, max_nr_regions: int, *, aggregations_n: int, seed: int,
             min_nr_regions: int = 10) -> list[float]:
    """The share of the true hot bytes found after each aggregation of one run."""
    vmas, access, _ = accuracy_shapes()[shape]
    cfg = config(vmas, access, aggregations=aggregations_n, seed=seed, max_nr_regions=max_nr_regions,
                 min_nr_regions=min_nr_regions)
    workload = DamonModel().initial(cfg).cfg.workload
    return [hot_share(a.regions, true_hot(workload, a.first_sample, a.samples))
            for a in aggregations(DamonModel(), cfg)]


# --- schemes: prcl and ethp -------------------------------------------------------------------------------


def merge_span(spans: list, lo: int, hi: int) -> list:
    return covered(spans + [(lo, hi)])


def cut_span(spans: list, lo: int, hi: int) -> list:
    out = []
    for a, b in spans:
        if a < lo:
            out.append((a, min(b, lo)))
        if hi < b:
            out.append((max(a, hi), b))
    return out


class Prcl:
    """Residency beside a run: what pageout took out and what the workload faulted back in."""

    def __init__(self, mapped: int):
        self.out: list = []  # non-resident (start, end) spans
        self.refaults = 0
        self.resident_sum = 0
        self.samples = 0
        self.mapped = mapped
        self.paged_out = 0  # bytes pageout applied to, counted once per page each time it goes out

    def on_step(self, label, s, t):
        if label == APPLY:
            for ap in t.applied:
                if t.cfg.schemes[ap.scheme].action == "pageout" and ap.sz_applied:
                    self.paged_out += ap.sz_applied - overlap(self.out, ap.start, ap.end)
                    self.out = merge_span(self.out, ap.start, ap.end)
        elif label == SLEEP and t.k.passed_sample_intervals > s.k.passed_sample_intervals:
            sample = s.k.passed_sample_intervals
            cfg = t.cfg
            for lo, hi, rate in hot_ranges(cfg.workload, sample):
                for a, b in [(max(a, lo), min(b, hi)) for a, b in self.out if a < hi and lo < b]:
                    if rate >= 1000:
                        self.refaults += (b - a) // PAGE_SIZE
                        self.out = cut_span(self.out, a, b)
                        continue
                    for page in range(a // PAGE_SIZE, b // PAGE_SIZE):
                        if accessed(cfg.workload, page, sample, cfg.seed):
                            self.refaults += 1
                            self.out = cut_span(self.out, page * PAGE_SIZE, (page + 1) * PAGE_SIZE)
            self.samples += 1
            self.resident_sum += self.mapped - sum(b - a for a, b in self.out)


def huge_blocks(lo: int, hi: int) -> set:
    """The 2 MiB-aligned blocks wholly inside [lo, hi)."""
    return set(range(-(-lo // HPAGE_PMD_SIZE), hi // HPAGE_PMD_SIZE))


class Ethp:
    """Huge pages beside a run: hot bytes they cover against cold bytes they hold."""

    def __init__(self, huge: set):
        self.huge = set(huge)
        self.hot_covered = 0  # summed over sampling intervals, bytes
        self.hot = 0
        self.cold_in_huge = 0
        self.samples = 0

    def on_step(self, label, s, t):
        if label == APPLY:
            for ap in t.applied:
                action = t.cfg.schemes[ap.scheme].action
                if action == "hugepage" and ap.sz_applied:
                    self.huge |= huge_blocks(ap.start, ap.end)
                elif action == "nohugepage" and ap.sz_applied:
                    self.huge -= huge_blocks(ap.start, ap.end)
        elif label == SLEEP and t.k.passed_sample_intervals > s.k.passed_sample_intervals:
            hot = covered((lo, hi) for lo, hi, rate in hot_ranges(t.cfg.workload, s.k.passed_sample_intervals)
                          if rate)
            covered_hot = sum(overlap(hot, b * HPAGE_PMD_SIZE, (b + 1) * HPAGE_PMD_SIZE) for b in self.huge)
            self.hot += sum(b - a for a, b in hot)
            self.hot_covered += covered_hot
            self.cold_in_huge += len(self.huge) * HPAGE_PMD_SIZE - covered_hot
            self.samples += 1


# the rows of the prcl and ethp tables: the process of a bundled scenario, and accesses added to it
PHASE_BACK = {"start": 0x555555550000, "end": 0x555555D50000, "from_sample": 1400}
SCHEME_WORKLOADS = {"thread's process": ("ethp", []), "hot-block": ("hot-block", []),
                    "moving-hotspot": ("moving-hotspot", []), "phase-change": ("phase-change", []),
                    "phase-change, back at 7 s": ("phase-change", [PHASE_BACK])}


def scheme_config(name: str, schemes_from: str, aggregations_n: int) -> dict:
    """A bundled scenario's process and workload (with SCHEME_WORKLOADS' additions), with the
    schemes of the thread's ethp or prcl."""
    model = DamonModel()
    base, more = SCHEME_WORKLOADS[name]
    cfg = dict(scenario.load("damon", model.scenario_schema, base).config)
    cfg["access"] = cfg["access"] + [dict(a, rate_permil=1000, width=0, speed=0, until_sample=(1 << 63) - 1)
                                     for a in more]
    cfg["schemes"] = scenario.load("damon", model.scenario_schema, schemes_from).config["schemes"]
    cfg["aggregations"] = aggregations_n
    return cfg


def refault_ns(table: costs.CostTable) -> float:
    """What one refault costs: do_swap_page's fault entry and return, and the page's 4 KiB brought back
    (a copy: zram's decompression costs more, and the table has no cost for it)."""
    return table.ns["page_fault"] + table.ns["page_copy"]


def prcl(name: str, aggregations_n: int, table: Optional[costs.CostTable] = None) -> dict:
    """Resident bytes with and without the thread's prcl, and the refaults it costs under ``table``
    (the committed cost table by default)."""
    fault_ns = refault_ns(table or costs.load())
    cfg = scheme_config(name, "prcl", aggregations_n)
    mapped = sum(v["end"] - v["start"] for v in cfg["vmas"])
    acct = Prcl(mapped)
    aggs = aggregations(DamonModel(), cfg, acct.on_step)
    run_us = sum(a.samples for a in aggs) * cfg["attrs"]["sample_us"]
    return {"rss_avg_orig_kib": mapped // 1024, "rss_avg_prcl_kib": round(acct.resident_sum / acct.samples / 1024),
            "paged_out_kib": acct.paged_out // 1024, "refaults": acct.refaults,
            "refault_ns": fault_ns, "runtime_orig_s": run_us / 1e6,
            "runtime_prcl_s": (run_us * 1000 + acct.refaults * fault_ns) / 1e9}


def ethp(name: str, aggregations_n: int) -> dict:
    """Hot bytes covered by huge pages and cold bytes in them: no THP, THP always, the thread's ethp."""
    cfg = scheme_config(name, "ethp", aggregations_n)
    always = set().union(*(huge_blocks(v["start"], v["end"]) for v in cfg["vmas"]))
    out = {}
    for policy, start, schemes in (("orig", set(), []), ("thp", always, []), ("ethp", set(), cfg["schemes"])):
        acct = Ethp(start)
        aggregations(DamonModel(), dict(cfg, schemes=schemes), acct.on_step)
        out[policy] = {"hot_covered_pct": round(100 * acct.hot_covered / acct.hot, 2) if acct.hot else 0.0,
                       "cold_in_huge_avg_kib": round(acct.cold_in_huge / acct.samples / 1024)}
    return out
