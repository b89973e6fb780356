"""The DAMON view: the region list over the address space, what DAMON saw against what happened.

What a student should see: a handful of regions covering gigabytes, one sampled page each
(the ticks under the strip); neighbours that look alike merging at an aggregation and every
region splitting in two or three when there are few of them; a region's colour is its
nr_accesses so far; the band above the strip is the ground truth (the workload's hot blocks in
this sampling interval), so a hot block that no region's colour shows is one DAMON missed.  Below:
nr_accesses of every aggregation over time (the heatmap, with the true hot blocks outlined),
nr_regions against min_nr_regions and max_nr_regions, and what each scheme did.

The address axis joins the monitored ranges and drops the unmapped gaps between them (a process's
heap and stack lie terabytes apart); every range is drawn at least ``MIN_SHARE`` of the width so
a 1 MiB stack stays visible beside a 1 GiB heap.  Its ticks give each range's start address and
offsets from it in KiB, MiB or GiB; a target of 16 GiB or more is drawn on a log scale of the
offset, so that its small regions stay visible beside its huge ones.
"""

from __future__ import annotations

from bisect import bisect_right
from math import log2

import numpy as np
from bokeh.models import FixedTicker, Range1d, Span
from bokeh.plotting import figure

from ..models.damon.core import PAGE_SIZE, damon_max_nr_accesses
from ..models.damon.model import INIT, RESET, covered, size_text
from ..models.damon.workload import hot_ranges
from . import style
from .counters import counters_figure
from .player import Player
from .registry import register
from .timeline import add_cursor

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
        i = max(bisect_right([a for a, _ in self.spans], addr) - 1, 0)
        a, b = self.spans[i]
        return self.x0[i] + self.widths[i] * self.fraction(min(max(addr, a), b) - a, b - a)

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

    def style(self, ax, short: bool = False) -> None:
        ticks = self.ticks()
        ax.ticker = FixedTicker(ticks=sorted(ticks))
        ax.major_label_overrides = ticks
        ax.axis_label = self.label(short)


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


def origin(before: tuple, r) -> str:
    """What made region r from the list before the step: a split, a merge, or neither."""
    spans = {(p.start, p.end) for p in before}
    if (r.start, r.end) in spans or not before:
        return ""
    inside = [p for p in before if r.start <= p.start and p.end <= r.end]
    return MERGE_LINE[1] if len(inside) > 1 else SPLIT_LINE[1]


def strip_rows(axis: AddressAxis, top: int, pair) -> dict:
    before, s, sample = pair
    rows = {"left": [], "right": [], "top": [], "bottom": [], "fill": [], "line": [], "width": []}

    def add(lo, hi, y0, y1, fill, line=style.DARK, width=1.0):
        rows["left"].append(axis(lo))
        rows["right"].append(axis(hi))
        rows["bottom"].append(y0)
        rows["top"].append(y1)
        rows["fill"].append(fill)
        rows["line"].append(line)
        rows["width"].append(width)

    for r in s.regions:
        made = origin(before, r)
        add(r.start, r.end, 0.5, 1.0, heat(r.nr_accesses, top), made or style.DARK, 4.0 if made else 1.0)
        add(r.start, r.end, 0.0, 0.5, heat(r.last_nr_accesses, top), made or style.DARK, 4.0 if made else 1.0)
    for lo, hi, _ in hot_ranges(s.cfg.workload, sample):
        add(lo, hi, 1.15, 1.45, TRUTH[1], TRUTH[1])
    for r in s.regions:
        if r.start <= r.sampling_addr < r.end and s.k.phase != INIT:
            x = r.sampling_addr
            add(x, x, -0.3, -0.05, style.INK, style.INK, 2.0)
    return rows


def strip_figure(player: Player, axis: AddressAxis) -> figure:
    states = player.trace.states
    top = damon_max_nr_accesses(states[0].cfg.attrs)
    p = figure(name="kstep-plot-regions", title="regions: nr_accesses so far (top half), at the last aggregation (bottom)",
               width=style.WIDTH, height=230, tools="", toolbar_location=None,
               x_range=Range1d(-0.01, 1.01, name="kstep-x-regions"), y_range=Range1d(-0.4, 1.6, name="kstep-y-regions"))
    style.style_figure(p)
    axis.style(p.xaxis)
    p.yaxis.visible = False
    frames = [((), states[0], states[0].k.passed_sample_intervals)]
    frames += [(a.regions, b, b.k.passed_sample_intervals) for a, b in zip(states, states[1:])]
    src = player.frame_source("regions", {c: float for c in ("left", "right", "top", "bottom", "width")}
                              | {"fill": str, "line": str}, lambda f: strip_rows(axis, top, f),
                              key=lambda f: (f[0], f[1].regions, f[2], f[1].k.phase == INIT), frames=frames)
    p.quad(left="left", right="right", top="top", bottom="bottom", source=src, fill_color="fill",
           line_color="line", line_width="width", name="kstep-plot-regions-quads")
    return p


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


def heatmap_figure(player: Player, axis: AddressAxis) -> figure:
    states = player.trace.states
    top = damon_max_nr_accesses(states[0].cfg.attrs)
    n = len(states)
    p = figure(name="kstep-plot-heatmap", title="nr_accesses of each aggregation interval (outlined: the true "
                                                "hot blocks)", width=style.WIDTH, height=320,
               x_range=Range1d(0, n, name="kstep-x-heatmap"), y_range=Range1d(-0.01, 1.01, name="kstep-y-heatmap"),
               tools="xpan,xwheel_zoom,reset", toolbar_location="right")
    style.style_figure(p)
    cells = {"left": [], "right": [], "bottom": [], "top": [], "fill": []}
    for k0, k1, regions in aggregations(states):
        for r in regions:
            cells["left"].append(k0)
            cells["right"].append(k1 + 1)
            cells["bottom"].append(axis(r.start))
            cells["top"].append(axis(r.end))
            cells["fill"].append(heat(r.nr_accesses, top))
    p.quad(source=player.static_source("heatmap-cells", cells), left="left", right="right", bottom="bottom",
           top="top", fill_color="fill", line_color=style.DARK, line_width=0.5, name="kstep-plot-heatmap-cells")
    truth = {"left": [], "right": [], "bottom": [], "top": []}
    for k0, k1, hot in truth_spans(states):
        for lo, hi, _ in hot:
            truth["left"].append(k0)
            truth["right"].append(k1)
            truth["bottom"].append(axis(lo))
            truth["top"].append(axis(hi))
    p.quad(source=player.static_source("heatmap-truth", truth), left="left", right="right", bottom="bottom",
           top="top", fill_color=None, line_color=TRUTH[1], line_width=1.5, name="kstep-plot-heatmap-truth")
    axis.style(p.yaxis, short=True)
    p.xaxis.axis_label = "step"
    add_cursor(p, player)
    return p


def nr_regions_figure(player: Player, x_range: Range1d) -> figure:
    states = player.trace.states
    attrs = states[0].cfg.attrs
    counts = np.array([len(s.regions) for s in states], dtype=np.int32)
    bounds = ("the fewest and the most observed" if player.trace.scheduler == "observed"
              else "min_nr_regions and max_nr_regions")
    p = figure(name="kstep-plot-nr-regions", title=f"nr_regions (dashed: {bounds})",
               width=style.WIDTH, height=200, x_range=x_range,
               y_range=Range1d(0, max(attrs.max_nr_regions, int(counts.max())) * 1.1 + 1, name="kstep-y-nr-regions"),
               tools="", toolbar_location=None)
    style.style_figure(p)
    src = player.static_source("nr-regions", {"x": np.arange(len(counts), dtype=np.int32), "y": counts})
    p.step("x", "y", source=src, mode="after", line_width=3, color=style.DARK, name="kstep-plot-nr-regions-line")
    for what, v in (("min", attrs.min_nr_regions), ("max", attrs.max_nr_regions)):
        p.add_layout(Span(location=v, dimension="width", line_dash="dashed", line_color=style.DARK,
                          name=f"kstep-plot-nr-regions-{what}"))
    p.yaxis.axis_label = "regions"
    add_cursor(p, player)
    return p


def scheme_counters(player: Player) -> figure:
    states = player.trace.states
    cfg = states[0].cfg
    if player.trace.scheduler == "observed":  # a kernel's samples and draws were not recorded
        names = ["aggregations"]
        values = [[s.k.aggregations] for s in states]
    else:
        names = ["aggregations", "sampling intervals", "random draws"]
        values = [[s.k.aggregations, s.k.passed_sample_intervals, s.k.rng.draws] for s in states]
    for k, sc in enumerate(cfg.schemes):
        names += [f"scheme {k} {sc.action}: KiB applied", f"scheme {k}: quota exceeded"]
    for row, s in zip(values, states):
        for ss in s.schemes:
            row += [ss.stat.sz_applied // 1024, ss.stat.qt_exceeds]
    return counters_figure(player, "counters", "counters so far", names, np.array(values))


@register("damon")
def damon_view(trace, model):
    player = Player(trace, model)
    axis = AddressAxis(monitored(trace.states))
    strip = strip_figure(player, axis)
    heatmap = heatmap_figure(player, axis)
    regions = nr_regions_figure(player, heatmap.x_range)
    counters = scheme_counters(player)
    top = damon_max_nr_accesses(trace.states[0].cfg.attrs)
    key = (style.key_html(f"nr_accesses (of {top} samples):", [("0", HEAT[0]), ("some", HEAT[3]),
                                                               (str(top), HEAT[-1])],
                          outline=[SPLIT_LINE, MERGE_LINE]))
    if trace.scheduler != "observed":  # a real kernel's run has no known workload
        key += style.key_html("ground truth:", [], marks=[("▬", TRUTH[1], TRUTH[0])])
    return player.layout(strip, heatmap, regions, counters, key=key)

