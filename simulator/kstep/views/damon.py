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

from bokeh.models import FixedTicker, Range1d, Span
from bokeh.plotting import figure

from ..models.damon.core import damon_max_nr_accesses
from . import style
from .board import board_source
from .boxes import BoardSource
from .counters import counters_figure
from .boards.damon import (HEAT, MERGE_LINE, SPLIT_LINE, TRUTH, AddressAxis, board_sources, chart_sources,
                           counter_names, monitored, planned)
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


def heatmap_figure(player: Player, axis: AddressAxis, chart: dict) -> figure:
    p = figure(name="kstep-plot-heatmap", title="nr_accesses of each aggregation interval (outlined: the true "
                                                "hot blocks)", width=style.WIDTH, height=320,
               x_range=Range1d(0, 1, name="kstep-x-heatmap"), y_range=Range1d(-0.01, 1.01, name="kstep-y-heatmap"),
               tools="xpan,xwheel_zoom,reset", toolbar_location="right")
    player.fit(p.x_range)  # every step of the run
    style.style_figure(p)
    p.quad(source=board_source(player, chart["heatmap-cells"]), left="left", right="right", bottom="bottom",
           top="top", fill_color="fill", line_color=style.DARK, line_width=0.5, name="kstep-plot-heatmap-cells")
    p.quad(source=board_source(player, chart["heatmap-truth"]), left="left", right="right", bottom="bottom",
           top="top", fill_color=None, line_color=TRUTH[1], line_width=1.5, name="kstep-plot-heatmap-truth")
    style_axis(axis, p.yaxis, short=True)
    p.xaxis.axis_label = "step"
    add_cursor(p, player)
    return p


def nr_regions_figure(player: Player, x_range: Range1d, src: BoardSource) -> figure:
    attrs = player.trace.states[0].cfg.attrs
    bounds = ("the fewest and the most observed" if player.trace.scheduler == "observed"
              else "min_nr_regions and max_nr_regions")
    p = figure(name="kstep-plot-nr-regions", title=f"nr_regions (dashed: {bounds})",
               width=style.WIDTH, height=200, x_range=x_range, y_range=Range1d(0, 1, name="kstep-y-nr-regions"),
               tools="", toolbar_location=None)
    style.style_figure(p)
    p.step("x", "y", source=board_source(player, src), mode="after", line_width=3, color=style.DARK, name="kstep-plot-nr-regions-line")
    player.fit(p.y_range, src.name, "y", scale=1.1, add=1, least=attrs.max_nr_regions * 1.1 + 1)
    for what, v in (("min", attrs.min_nr_regions), ("max", attrs.max_nr_regions)):
        p.add_layout(Span(location=v, dimension="width", line_dash="dashed", line_color=style.DARK,
                          name=f"kstep-plot-nr-regions-{what}"))
    p.yaxis.axis_label = "regions"
    add_cursor(p, player)
    return p


@register("damon")
def damon_view(trace, model):
    player = Player(trace, model)
    # A recording's ranges are what it saw; a simulated run's are the ones its program maps, as in
    # interactive mode, whose runs share this page's axis.
    axis = AddressAxis(monitored(trace.states) if trace.scheduler == "observed" else planned(trace.states[0]))
    observed = trace.scheduler == "observed"
    chart = {c.name: c for c in chart_sources(trace.states[0], model, axis, observed=observed)}
    strip = strip_figure(player, axis)
    heatmap = heatmap_figure(player, axis, chart)
    regions = nr_regions_figure(player, heatmap.x_range, chart["nr-regions"])
    counters = counters_figure(player, "counters so far", counter_names(trace.states[0], observed=observed),
                               chart["counters"])
    top = damon_max_nr_accesses(trace.states[0].cfg.attrs)
    key = (style.key_html(f"nr_accesses (of {top} samples):", [("0", HEAT[0]), ("some", HEAT[3]),
                                                               (str(top), HEAT[-1])],
                          outline=[SPLIT_LINE, MERGE_LINE]))
    if trace.scheduler != "observed":  # a real kernel's run has no known workload
        key += style.key_html("ground truth:", [], marks=[("▬", TRUTH[1], TRUTH[0])])
    return player.layout(strip, heatmap, regions, counters, key=key)

