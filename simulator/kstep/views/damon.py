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
a 1 MiB stack stays visible beside a 1 GiB heap, and its ticks say where it starts and how big it is.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
from bokeh.models import FixedTicker, Range1d, Span
from bokeh.plotting import figure

from ..models.damon.core import damon_max_nr_accesses
from ..models.damon.model import INIT, RESET, covered, size_text
from ..models.damon.workload import hot_ranges
from . import style
from .counters import counters_figure
from .player import Player
from .registry import register
from .timeline import add_cursor

MIN_SHARE = 0.08  # the least share of the axis one monitored range gets
GAP = 0.02  # the share of the axis between two ranges (an unmapped gap, not to scale)
HEAT = ("#FFFFFF", "#FDE0C5", "#FACBA0", "#F5A66B", "#E8803E", "#D55E00", "#9E3D00")  # 0 .. max nr_accesses
SPLIT_LINE = ("made by a split", style.PURPLE)
MERGE_LINE = ("made by a merge", style.BLUE)
TRUTH = ("hot in this sampling interval (the workload)", style.VERMILLION)


class AddressAxis:
    """Addresses to x in [0, 1]: the monitored ranges side by side, gaps dropped."""

    def __init__(self, spans):
        spans = covered(spans) or [(0, 1)]
        total = sum(b - a for a, b in spans)
        shares = [max((b - a) / total, MIN_SHARE) for a, b in spans]
        scale = (1 - GAP * (len(spans) - 1)) / sum(shares)
        self.spans, self.x0, self.widths = spans, [], []
        x = 0.0
        for share in shares:
            self.x0.append(x)
            self.widths.append(share * scale)
            x += share * scale + GAP

    def __call__(self, addr: int) -> float:
        """x of ``addr``; an address in a gap is drawn at the edge of the range before it."""
        i = max(bisect_right([a for a, _ in self.spans], addr) - 1, 0)
        a, b = self.spans[i]
        return self.x0[i] + self.widths[i] * (min(max(addr, a), b) - a) / (b - a)

    def ticks(self) -> dict[float, str]:
        """One tick in the middle of each range: where it starts and how big it is."""
        return {round(x0 + w / 2, 4): f"{hex(a)}\n{size_text(b - a)}"
                for (a, b), x0, w in zip(self.spans, self.x0, self.widths)}

    def style(self, ax) -> None:
        ticks = self.ticks()
        ax.ticker = FixedTicker(ticks=sorted(ticks))
        ax.major_label_overrides = ticks


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
    p.xaxis.axis_label = "monitored address ranges (unmapped gaps between them dropped)"
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
           top="top", fill_color="fill", line_color=style.GREY, line_width=0.5, name="kstep-plot-heatmap-cells")
    truth = {"left": [], "right": [], "bottom": [], "top": []}
    for k0, k1, hot in truth_spans(states):
        for lo, hi, _ in hot:
            truth["left"].append(k0)
            truth["right"].append(k1)
            truth["bottom"].append(axis(lo))
            truth["top"].append(axis(hi))
    p.quad(source=player.static_source("heatmap-truth", truth), left="left", right="right", bottom="bottom",
           top="top", fill_color=None, line_color=TRUTH[1], line_width=1.5, name="kstep-plot-heatmap-truth")
    axis.style(p.yaxis)
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
    p.step("x", "y", source=src, mode="after", line_width=3, color=style.BLUE, name="kstep-plot-nr-regions-line")
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
    colors = [style.GREEN, style.SKY, style.GREY][:len(names) - 2 * len(cfg.schemes)]
    colors += [style.ORANGE, style.VERMILLION] * len(cfg.schemes)
    return counters_figure(player, "counters", "counters so far", names, np.array(values), colors)


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
        key += style.key_html("ground truth:", [TRUTH])
    return player.layout(strip, heatmap, regions, counters, key=key)

