"""Timelines: one lane per thread (or per RCU fact) over the steps of a trace, drawn with Bokeh.

Their rows are declared in the standard library (charts.py), over the trace: frame k's state
occupies x in [k, k + 1), and the action that led to frame k is marked inside that column, at
x = k + 0.5.  A curtain covers every column after the current frame's, so a timeline shows the run
only as far as it has been played: what comes next is for the student to predict, not to read off
the chart.  Bars are small ints whose colours go through a colour mapper over phase numbers; bars,
labels and marks are shown one page of steps at a time (BokehJS would otherwise paint every bar of
a 50,000-step run on each frame).
"""

from __future__ import annotations

from typing import Sequence

from bokeh.models import BoxAnnotation, FixedTicker, LinearColorMapper, Range1d
from bokeh.plotting import figure

from . import style
from .board import board_source
from .boxes import BoardSource
from .player import Player


def lanes_figure(player: Player, name: str, title: str, lanes: Sequence[str], *, x_range: Range1d | None = None,
                 lane_height: int = 46) -> figure:
    """A figure with one lane per name, a cursor over the current step, paging along long traces."""
    own_range = x_range is None
    if own_range:
        x_range = Range1d(0, 1, name=f"kstep-x-{name}")
    # A long trace's timeline holds one page at a time (windowed sources), so panning away would
    # show nothing: only a trace that fits on one page gets pan and zoom.
    tools = "" if player.paged else "xpan,xwheel_zoom,reset"
    p = figure(name=f"kstep-plot-{name}", title=title, width=style.WIDTH, height=60 + lane_height * len(lanes),
               x_range=x_range, y_range=Range1d(-len(lanes) + 0.5, 0.5, name=f"kstep-y-{name}"),
               tools=tools, toolbar_location="right" if tools else None)
    style.style_figure(p)
    p.yaxis.ticker = FixedTicker(ticks=[-i for i in range(len(lanes))])
    p.yaxis.major_label_overrides = {-i: lane for i, lane in enumerate(lanes)}
    p.yaxis.major_label_text_font_size = style.TEXT_SIZE
    p.xaxis.axis_label = "step"
    if own_range:
        player.follow(x_range)
    add_cursor(p, player)
    return p


def add_cursor(p: figure, player: Player) -> None:
    """A translucent column over the current step and a curtain over the steps to come, moved by the
    player."""
    curtain = BoxAnnotation(fill_color=style.WHITE, fill_alpha=1.0, line_alpha=0.0, name=f"{p.name}-curtain")
    cursor = BoxAnnotation(fill_color=style.STEP, fill_alpha=0.15, line_color=style.STEP, line_alpha=0.7,
                           name=f"{p.name}-cursor")
    p.add_layout(curtain)
    p.add_layout(cursor)
    player.curtain(curtain)
    player.cursor(cursor)


def phase_bars(p: figure, player: Player, src: BoardSource, palette: Sequence[str], *, height: float = 0.62) -> None:
    """The bars of ``src`` (charts.phase_bars): ``phase`` indexes ``palette``."""
    mapper = LinearColorMapper(palette=list(palette), low=-0.5, high=len(palette) - 0.5)
    p.hbar(y="y", left="left", right="right", height=height, source=board_source(player, src),
           fill_color={"field": "phase", "transform": mapper}, line_color=style.DARK, line_width=0.5,
           name=f"kstep-plot-{src.name}")


def interval_lane(p: figure, player: Player, bars: BoardSource, labels: BoardSource, colour: str,
                  text_color: str) -> None:
    """One lane of intervals (a grace period running, mmap_lock write-held), each labelled where it
    starts (charts.interval_labels)."""
    phase_bars(p, player, bars, [style.FREE, colour])
    p.text("x", "y", "text", source=board_source(player, labels), name=f"{p.name}-{labels.name}",
           text_font_size=style.SMALL_SIZE, text_baseline="middle", text_color=text_color, text_font_style="bold")


def marks(p: figure, player: Player, src: BoardSource, *, color: str = style.INK, marker: str = "triangle",
          size: int = 9) -> None:
    """Point marks (charts.marks): who took each step, where a quiescent state was reported."""
    p.scatter("x", "y", source=board_source(player, src), marker=marker, size=size, color=color,
              name=f"kstep-plot-{src.name}")


def actor_marks(p: figure, player: Player, sources: Sequence[BoardSource]) -> None:
    """Who took each step, a lasso's cycle (cycle_band), and the step that broke the invariant
    (charts.actor_marks), where the student will look for it: a box in data units, exactly its column."""
    taken, broke = sources
    marks(p, player, taken, color=style.DARK, size=7)
    cycle_band(p, player)
    p.rect("x", "y", width=0.9, height=0.9, source=board_source(player, broke), fill_color=style.HARM,
           fill_alpha=0.35, line_color=style.HARM, line_width=4, name=f"kstep-plot-{broke.name}")


def cycle_band(p: figure, player: Player) -> None:
    """A lasso's cycle (liveness): a band over its steps, from the step after ``cycle_start`` to the
    last, marked where it starts; the steps under it repeat forever.  Drawn as glyphs, so the curtain
    uncovers it step by step like the marks."""
    t = player.trace
    if t.cycle_start is None:
        return
    lanes = len(p.yaxis.major_label_overrides)
    first, last = t.cycle_start + 1, len(t)
    band = player.static_source(f"{p.name}-cycle", {"x": [(first + last + 1) / 2], "y": [-(lanes - 1) / 2],
                                                    "w": [last - first + 1], "h": [lanes - 0.1]})
    p.rect("x", "y", "w", "h", source=band, fill_color=style.HARM, fill_alpha=0.12, line_color=style.HARM,
           line_dash="dashed", line_width=2, name=f"{p.name}-cycle")
    label = player.static_source(f"{p.name}-cycle-label", {"x": [first + 0.1], "y": [-(lanes - 1) - 0.45],
                                                          "text": ["↻ cycle: repeats forever"]})
    p.text("x", "y", "text", source=label, name=f"{p.name}-cycle-label", text_font_size=style.SMALL_SIZE,
           text_baseline="bottom", text_color=style.HARM, text_font_style="bold",
           background_fill_color=style.WHITE, background_fill_alpha=0.85)
