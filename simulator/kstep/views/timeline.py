"""Timelines: one lane per thread (or per RCU fact) over the steps of a trace.

Frame k's state occupies x in [k, k + 1), and the action that led to frame k is marked inside
that column, at x = k + 0.5.  A curtain covers every column after the current frame's, so a
timeline shows the run only as far as it has been played: what comes next is for the student
to predict, not to read off the chart.
Lanes are numbered 0, 1, 2, ... from the top and drawn at y = -lane.  Bars are small ints whose
colours go through a colour mapper over phase numbers, held in windowed sources (one page of
steps at a time, since BokehJS would otherwise paint every bar of a 50,000-step run on each
frame); marks are static markers, which BokehJS culls to the visible page itself.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from bokeh.models import BoxAnnotation, FixedTicker, LinearColorMapper, Range1d
from bokeh.plotting import figure

from . import style
from .player import Player


def runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of equal values: (start index, stop index, value) of each run."""
    values = np.asarray(values)
    if values.size == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, values
    change = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts = np.concatenate([[0], change]).astype(np.int32)
    stops = np.concatenate([change, [values.size]]).astype(np.int32)
    return starts, stops, values[starts]


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


def phase_bars(p: figure, player: Player, name: str, phases: np.ndarray, palette: Sequence[str], *,
               first_lane: int = 0, dy: float = 0.0, height: float = 0.62, skip: Sequence[int] = ()) -> None:
    """Bars of a per-frame phase for lanes ``first_lane``, ...: ``phases[k, j]`` indexes ``palette``.

    Phases listed in ``skip`` are not drawn (an idle CPU needs no bar); ``dy`` moves the bars down
    within their lane (a thin RCU bar under a thread's main bar).
    """
    frames, nlanes = phases.shape
    left, right, lane, phase = [], [], [], []
    for j in range(nlanes):
        starts, stops, values = runs(phases[:, j])
        keep = ~np.isin(values, list(skip))
        left.append(starts[keep])
        right.append(stops[keep])
        phase.append(values[keep])
        lane.append(np.full(int(keep.sum()), -(first_lane + j)))
    data = {
        "left": _small(np.concatenate(left)), "right": _small(np.concatenate(right)),
        "y": _small(np.concatenate(lane)), "phase": _small(np.concatenate(phase)),
    }
    data["y"] = data["y"].astype(np.float32) - np.float32(dy)
    source = player.windowed_source(f"{p.name.removeprefix('kstep-plot-')}-{name}", data, "left", "right")
    mapper = LinearColorMapper(palette=list(palette), low=-0.5, high=len(palette) - 0.5)
    p.hbar(y="y", left="left", right="right", height=height, source=source,
           fill_color={"field": "phase", "transform": mapper}, line_color=style.DARK, line_width=0.5,
           name=f"{p.name}-{name}")


def interval_lane(p: figure, player: Player, name: str, active: Sequence[bool], colour: str, lane: int,
                  labels_name: str, label: Callable[[int], str], text_color: str) -> None:
    """One lane of intervals (a grace period running, mmap_lock write-held), each labelled where it
    starts with ``label(first_step)``; the labels are a windowed source called ``labels_name``."""
    held = np.fromiter((1 if a else 0 for a in active), dtype=np.int8, count=len(active))[:, None]
    phase_bars(p, player, name, held, [style.FREE, colour], skip=(0,), first_lane=lane)
    starts = [k for k in range(len(held)) if held[k, 0] and (k == 0 or not held[k - 1, 0])]
    labels = player.windowed_source(labels_name, {
        "x": np.array(starts, dtype=np.int32) + np.float32(0.15),
        "y": np.full(len(starts), -lane, dtype=np.float32),
        "text": np.array([label(k) for k in starts], dtype=object),
    }, "x", "x")
    p.text("x", "y", "text", source=labels, name=f"{p.name}-{labels_name}", text_font_size=style.SMALL_SIZE,
           text_baseline="middle", text_color=text_color, text_font_style="bold")


def marks(p: figure, player: Player, name: str, x: np.ndarray, lane: np.ndarray, *, color: str = style.INK,
          marker: str = "triangle", size: int = 9, dy: float = 0.38) -> None:
    """Point marks for steps ``x`` in ``lane``: who took each step, where a quiescent state was reported.

    A mark sits in the middle of its step's column, so the curtain hides it whole until that step."""
    data = {"x": np.asarray(x, dtype=np.float32) + np.float32(0.5),
            "y": (-np.asarray(lane, dtype=np.float32) + np.float32(dy))}
    source = player.static_source(f"{p.name}-{name}", data)
    p.scatter("x", "y", source=source, marker=marker, size=size, color=color,
              name=f"{p.name}-{name}")


def actor_marks(p: figure, player: Player, lane_of_actor: Sequence[int]) -> None:
    """A small triangle at step k in the lane of the actor that took step k."""
    actor = np.asarray(player.trace.columns(player.model)["actor"])[1:]
    lane = np.asarray(lane_of_actor, dtype=np.int16)[actor] if len(actor) else np.zeros(0, np.int16)
    keep = lane >= 0
    steps = np.arange(1, len(actor) + 1, dtype=np.int32)
    marks(p, player, "actions", steps[keep], lane[keep], color=style.DARK, size=7)
    cycle_band(p, player)
    v = player.trace.violation
    if v is not None and v.invariant != "deadlock" and v.step and lane[v.step - 1] >= 0:
        # The step that broke the invariant, where the student will look for it: a box in data units,
        # exactly its column, so that no edge of it shows before the curtain uncovers that step.
        source = player.static_source(f"{p.name}-violation", {"x": [v.step + 0.5], "y": [-float(lane[v.step - 1])]})
        p.rect("x", "y", width=0.9, height=0.9, source=source, fill_color=style.HARM, fill_alpha=0.35,
               line_color=style.HARM, line_width=4, name=f"{p.name}-violation")


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


def _small(arr: np.ndarray) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind in "iu":
        hi = int(np.abs(arr).max()) if arr.size else 0
        return arr.astype(np.int16 if hi < 2**15 else np.int32)
    return arr
