"""The DAMON board's rows and charts, in the standard library only (boxes.py says why): the region list
over the address space, each region coloured by its nr_accesses, the true hot blocks above it and the
sampled addresses under it; the heatmap of every aggregation, nr_regions and the counters.  damon.py
draws them; the page's interactive mode computes them for a student's own run, on the same axis.
"""

from __future__ import annotations

from bisect import bisect_right
from math import log2

from ...models.damon.core import PAGE_SIZE, damon_max_nr_accesses
from ...models.damon.model import INIT, RESET, covered, size_text, unmap
from ...models.damon.vaddr import __damon_va_three_regions as three_regions
from ...models.damon.workload import hot_ranges
from .. import charts, style
from ..boxes import BoardSource

MIN_SHARE = 0.12  # the least share of the axis one monitored range gets: room for its start address
GAP = 0.02  # the share of the axis between two ranges (an unmapped gap, not to scale)
LOG_FROM = 16 << 30  # a target of this many bytes or more is drawn on a log axis inside each range
TICKS_PER_AXIS = 8  # about how many offset ticks a linear axis gets across its width
CHAR = 0.009  # the share of the axis one character of a tick label takes (Bokeh's 11 px font, 1000 px)
TICK_GAP = 0.02  # the least share of the axis between two tick labels' edges
HEAT = style.HEAT  # 0 .. max nr_accesses
SPLIT_LINE = ("made by a split", style.tint(style.STEP, 0.5))
MERGE_LINE = ("made by a merge", style.STEP)
TRUTH = ("hot in this sampling interval (the workload)", style.INK)


class AddressAxis:
    """Addresses to x in [0, 1]: the monitored ranges side by side, gaps dropped.

    Inside a range, x follows the offset from its start: linearly, or -- for a target of
    ``LOG_FROM`` bytes or more, where a page-sized region would be a millionth of the width --
    logarithmically (log2 of 1 + offset in pages), so regions from 4 KiB to hundreds of GiB are all
    drawn.  The ticks mark each range's start address and offsets from it in KiB, MiB, GiB or TiB;
    the region strip and the heatmap take the same axis, so they always agree.
    """

    def __init__(self, spans):
        spans = covered(spans) or [(0, 1)]
        self.log = sum(b - a for a, b in spans) >= LOG_FROM
        self.spans, self.x0, self.widths = spans, [], widths(spans, 1 - GAP * (len(spans) - 1))
        self.starts = [a for a, _ in spans]
        self.known: dict[int, float] = {}  # x of each address asked: a run's regions share their edges
        x = 0.0
        for w in self.widths:
            self.x0.append(x)
            x += w + GAP

    def fraction(self, offset: int, size: int) -> float:
        """Where ``offset`` into a range of ``size`` bytes lies across that range's width."""
        if self.log:
            return log2(1 + offset / PAGE_SIZE) / log2(1 + size / PAGE_SIZE)
        return offset / size

    def __call__(self, addr: int) -> float:
        """x of ``addr``; an address in a gap is drawn at the edge of the range before it."""
        x = self.known.get(addr)
        if x is None:
            i = max(bisect_right(self.starts, addr) - 1, 0)
            a, b = self.spans[i]
            x = self.known[addr] = self.x0[i] + self.widths[i] * self.fraction(min(max(addr, a), b) - a, b - a)
        return x

    def offsets(self, size: int) -> list[int]:
        """Candidate tick offsets: powers of 16 pages on a log axis, multiples of a power of two
        that gives about TICKS_PER_AXIS ticks across the whole width on a linear one."""
        if self.log:
            return [PAGE_SIZE << 4 * k for k in range(1, 16) if PAGE_SIZE << 4 * k <= size]
        total = sum(b - a for a, b in self.spans)
        step = 1 << max(PAGE_SIZE.bit_length() - 1, (max(total // TICKS_PER_AXIS, 1)).bit_length() - 1)
        return list(range(step, size + 1, step))

    def ticks(self) -> dict[float, str]:
        """Each range's start address, then offsets from it where their labels do not touch."""
        out = {round(x0, 4): hex(a) for (a, _), x0 in zip(self.spans, self.x0)}
        for (a, b), x0, w in zip(self.spans, self.x0, self.widths):
            for off in self.offsets(b - a):
                x, text = round(x0 + w * self.fraction(off, b - a), 4), f"+{size_text(off)}"
                if all(abs(x - t) >= CHAR * (len(text) + len(other)) / 2 + TICK_GAP for t, other in out.items()):
                    out[x] = text
        return out

    def label(self, short: bool = False) -> str:
        scale = "log offsets" if self.log else "linear offsets"
        if short:
            return f"address ({scale})"
        return f"monitored address ranges, unmapped gaps between them dropped ({scale} in each range)"


def widths(spans, room: float) -> list[float]:
    """Each range's share of ``room``: in proportion to its size, but never below MIN_SHARE (the
    ranges that would be narrower get MIN_SHARE, the others share the rest)."""
    small: set = set()
    while True:
        rest = room - MIN_SHARE * len(small)
        big = sum(b - a for k, (a, b) in enumerate(spans) if k not in small)
        if rest <= 0 or not big:
            return [room / len(spans)] * len(spans)
        out = [MIN_SHARE if k in small else rest * (b - a) / big for k, (a, b) in enumerate(spans)]
        narrow = {k for k, w in enumerate(out) if w < MIN_SHARE}
        if narrow <= small:
            return out
        small |= narrow


def monitored(states) -> list:
    """Every byte some state's regions cover (an mmap or munmap changes them over a run)."""
    spans = set()
    last = None
    for s in states:
        if s.regions is not last:
            last = s.regions
            spans.update((r.start, r.end) for r in s.regions)
    return spans


def heat(n: int, top: int) -> str:
    return HEAT[min(len(HEAT) - 1, (n * (len(HEAT) - 1) + top - 1) // top)] if n and top else HEAT[0]


def origin(before: tuple, spans: set, r) -> str:
    """What made region r from the list ``before`` the step (``spans``: their (start, end)): a split, a
    merge, or neither."""
    if (r.start, r.end) in spans or not before:
        return ""
    inside = [p for p in before if r.start <= p.start and p.end <= r.end]
    return MERGE_LINE[1] if len(inside) > 1 else SPLIT_LINE[1]


STRIP = ("left", "right", "bottom", "top", "fill", "line", "width")  # strip_rows' columns, in its rows' order


def strip_rows(axis: AddressAxis, top: int, pair) -> dict:
    before, s, sample = pair
    rows = []  # one tuple per box, in STRIP's order: a run lays out thousands of frames of ~100 boxes
    spans = set() if before is s.regions else {(p.start, p.end) for p in before}  # unchanged: nothing was made
    for r in s.regions:
        made = origin(before, spans, r) if spans else ""
        lo, hi = axis(r.start), axis(r.end)
        line, width = (made, 4.0) if made else (style.DARK, 1.0)
        rows.append((lo, hi, 0.5, 1.0, heat(r.nr_accesses, top), line, width))
        rows.append((lo, hi, 0.0, 0.5, heat(r.last_nr_accesses, top), line, width))
    for lo, hi, _ in hot_ranges(s.cfg.workload, sample):
        rows.append((axis(lo), axis(hi), 1.15, 1.45, TRUTH[1], TRUTH[1], 1.0))
    for r in s.regions:
        if r.start <= r.sampling_addr < r.end and s.k.phase != INIT:
            x = axis(r.sampling_addr)
            rows.append((x, x, -0.3, -0.05, style.INK, style.INK, 2.0))
    return {c: list(v) for c, v in zip(STRIP, zip(*rows))} if rows else {c: [] for c in STRIP}


def planned(s0) -> list:
    """The address ranges a run from ``s0`` can monitor: the three regions of the process's mappings at
    the start and after each mmap() or munmap() its program makes (a run from the same start, whatever
    its schedule, covers them with regions, so the student's run and the recorded one share an axis)."""
    vmas, spans = s0.vmas, set()
    for frame in [None] + [f for t in s0.threads for f in t.frames]:
        if frame is not None and frame.label == "do_mmap":
            start, end, thp = frame.arg
            vmas = tuple(sorted(vmas + (type(vmas[0])(start, end, thp),)))
        elif frame is not None and frame.label == "__vm_munmap":
            vmas = unmap(vmas, *frame.arg)
        rc, ranges = three_regions(vmas, s0.cfg.min_region)
        if not rc:
            spans.update(ranges)
    return spans


def strip_frames(trace) -> list[tuple]:
    """Per frame: the regions before the step, the state, and its sampling interval (the workload's)."""
    states = trace.states
    return [((), states[0], states[0].k.passed_sample_intervals)] + [
        (a.regions, b, b.k.passed_sample_intervals) for a, b in zip(states, states[1:])]


def board_sources(s0, model, axis: AddressAxis | None = None) -> list[BoardSource]:
    """The board of a run starting at ``s0``: the region strip on ``axis`` (the ranges ``planned``)."""
    axis = axis or AddressAxis(planned(s0))
    top = damon_max_nr_accesses(s0.cfg.attrs)
    return [BoardSource("regions", lambda f: strip_rows(axis, top, f),
                        lambda f: (f[0], f[1].regions, f[2], f[1].k.phase == INIT),
                        {c: float for c in ("left", "right", "top", "bottom", "width")} | {"fill": str, "line": str},
                        strip_frames)]


def aggregations(states) -> list[tuple[int, int, tuple]]:
    """(first frame, last frame, regions) of every aggregation interval: the regions as
    kdamond_reset_aggregated reports them (the damon_aggregated tracepoint)."""
    out, start = [], 0
    for k, s in enumerate(states):
        if s.k.phase == RESET:
            out.append((start, k, s.regions))
            start = k + 1
    return out


def truth_spans(states) -> list[tuple[int, int, tuple]]:
    """(first frame, last frame, hot ranges) of every run of sampling intervals in which the workload's
    hot blocks stay the same."""
    out = []
    workload = states[0].cfg.workload
    start, hot = 0, hot_ranges(workload, states[0].k.passed_sample_intervals)
    for k in range(1, len(states) + 1):
        now = hot_ranges(workload, states[k].k.passed_sample_intervals) if k < len(states) else None
        if now != hot:
            out.append((start, k, hot))
            start, hot = k, now
    return out


QUADS = {"left": float, "right": float, "bottom": float, "top": float}


def chart_sources(s0, model, axis: AddressAxis | None = None, *, observed: bool = False) -> list[BoardSource]:
    """The heatmap (each aggregation's regions coloured by the nr_accesses it reported, the true hot
    blocks outlined), nr_regions at every step, and the counters (a recording's: aggregations only,
    since a kernel's samples and draws were not recorded)."""
    axis = axis or AddressAxis(planned(s0))
    top = damon_max_nr_accesses(s0.cfg.attrs)

    def cells(trace):
        out = {c: [] for c in (*QUADS, "fill")}
        for k0, k1, regions in aggregations(trace.states):
            for r in regions:
                for c, v in zip(out, (k0, k1 + 1, axis(r.start), axis(r.end), heat(r.nr_accesses, top))):
                    out[c].append(v)
        return out

    def truth(trace):
        out = {c: [] for c in QUADS}
        for k0, k1, hot in truth_spans(trace.states):
            for lo, hi, _ in hot:
                for c, v in zip(out, (k0, k1, axis(lo), axis(hi))):
                    out[c].append(v)
        return out

    def nr_regions(trace):
        return {"x": list(range(len(trace.states))), "y": [len(s.regions) for s in trace.states]}

    size = (1 if observed else 3) + 2 * len(s0.cfg.schemes)

    def counts(s):
        kd = [s.k.aggregations] if observed else [s.k.aggregations, s.k.passed_sample_intervals, s.k.rng.draws]
        return kd + [v for ss in s.schemes for v in (ss.stat.sz_applied // 1024, ss.stat.qt_exceeds)]

    return [charts.whole_run("heatmap-cells", {**QUADS, "fill": str}, cells),
            charts.whole_run("heatmap-truth", QUADS, truth),
            charts.whole_run("nr-regions", {"x": int, "y": int}, nr_regions),
            charts.counters("counters", size, lambda t: [counts(s) for s in t.states])]


def counter_names(s0, *, observed: bool = False) -> list[str]:
    """The names of chart_sources' counters, in its order: kdamond's, then two per scheme."""
    names = ["aggregations"] if observed else ["aggregations", "sampling intervals", "random draws"]
    for k, sc in enumerate(s0.cfg.schemes):
        names += [f"scheme {k} {sc.action}: KiB applied", f"scheme {k}: quota exceeded"]
    return names
