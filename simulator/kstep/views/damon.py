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

import numpy as np
from bokeh.models import FixedTicker, Range1d, Span
from bokeh.plotting import figure

from ..models.damon.core import damon_max_nr_accesses
from ..models.damon.model import RESET
from ..models.damon.workload import hot_ranges
from . import style
from .counters import counters_figure
from .damon_board import HEAT, MERGE_LINE, SPLIT_LINE, TRUTH, AddressAxis, board_sources, heat, monitored, planned
from .board import board_source
from .player import Player
from .registry import register
from .timeline import add_cursor

def style_axis(axis: AddressAxis, ax, short: bool = False) -> None:
    ticks = axis.ticks()
    ax.ticker = FixedTicker(ticks=sorted(ticks))
    ax.major_label_overrides = ticks
    ax.axis_label = axis.label(short)


def strip_figure(player: Player, axis: AddressAxis) -> figure:
    s0 = player.trace.states[0]
    p = figure(name="kstep-plot-regions", title="regions: nr_accesses so far (top half), at the last aggregation (bottom)",
               width=style.WIDTH, height=230, tools="", toolbar_location=None,
               x_range=Range1d(-0.01, 1.01, name="kstep-x-regions"), y_range=Range1d(-0.4, 1.6, name="kstep-y-regions"))
    style.style_figure(p)
    style_axis(axis, p.xaxis)
    p.yaxis.visible = False
    src = board_source(player, board_sources(s0, player.model, axis)[0])
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
    style_axis(axis, p.yaxis, short=True)
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
    # A recording's ranges are what it saw; a simulated run's are the ones its program maps, as in
    # interactive mode, whose runs share this page's axis.
    axis = AddressAxis(monitored(trace.states) if trace.scheduler == "observed" else planned(trace.states[0]))
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

