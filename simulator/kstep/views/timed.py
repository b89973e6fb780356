"""The player's panel for a timed run (engine/timed.py): time on the x-axis, one lane per actor, each
step a bar from its start, coloured by what it cost: the wait before it, its work, its cache-line
transfers.  A box marks the current step and a curtain covers what starts after it (the timed
scheduler's steps start in time order, so the curtain hides exactly the steps still to come).  Its
title says when the run ends (the stats' makespan, as ``kstep run --timed -c`` prints it)."""

from __future__ import annotations

from bokeh.models import BoxAnnotation, ColumnDataSource, FixedTicker, Range1d
from bokeh.plotting import figure

from ..engine.timed import STEP_COSTS
from . import style

PARTS = (("waiting", style.WAITS), ("work", style.HOLDS), ("cache-line transfers", style.HARM))


def cost_bars(trace, actors: list) -> tuple[dict, list]:
    """The bars of every step (lane, left and right in ns, colour: its wait, work and transfers in
    turn), and each step's (start, end) after its wait."""
    lane = {a: -k for k, a in enumerate(actors)}
    out: dict = {"y": [], "left": [], "right": [], "color": [], "step": []}
    spans = []
    clock: dict = {}
    for k, (action, (work, wait, transfer)) in enumerate(zip(trace.actions, trace.stats[STEP_COSTS]), 1):
        start = clock.get(action.actor, 0.0) + wait
        edges = (start - wait, start, start + work, start + work + transfer)
        clock[action.actor] = edges[-1]
        spans.append((start, edges[-1]))
        for (_, colour), left, right in zip(PARTS, edges, edges[1:]):
            if right > left:
                out["y"].append(lane[action.actor])
                out["left"].append(left)
                out["right"].append(right)
                out["color"].append(colour)
                out["step"].append(k)
    return out, spans


def frame_spans(spans: list) -> tuple[list, list, list]:
    """Per frame k: the current step's [start, end] (nothing at frame 0) and where the curtain starts
    (the next step's start; past the end after the last step)."""
    past = 2 * max((end for _, end in spans), default=0.0) + 1
    left = [0.0] + [start for start, _ in spans]
    right = [0.0] + [end for _, end in spans]
    curtain = [start for start, _ in spans] + [past]
    return left, right, curtain


def cost_timeline(player) -> figure:
    """The panel of ``player`` (a views.player.Player, which adds it to a timed run's layout)."""
    trace, model = player.trace, player.model
    actors = list(model.actors(trace.states[0]))
    bars, spans = cost_bars(trace, actors)
    end = max(bars["right"], default=1.0)
    p = figure(name="kstep-plot-timed", title=title(trace),
               width=style.WIDTH, height=60 + 40 * len(actors), x_range=Range1d(0, end * 1.02, name="kstep-x-timed"),
               y_range=Range1d(-len(actors) + 0.5, 0.5), tools="xpan,xwheel_zoom,reset", toolbar_location="right")
    style.style_figure(p)
    p.yaxis.ticker = FixedTicker(ticks=[-i for i in range(len(actors))])
    p.yaxis.major_label_overrides = {-i: a for i, a in enumerate(actors)}
    p.xaxis.axis_label = "time (ns)"
    p.hbar(y="y", left="left", right="right", height=0.6, fill_color="color", line_color=style.DARK, line_width=0.3,
           source=ColumnDataSource(bars, name="kstep-timed-bars"), name="kstep-timed-bars")
    left, right, curtain = frame_spans(spans)
    cover = BoxAnnotation(fill_color=style.WHITE, fill_alpha=1.0, line_alpha=0.0, name="kstep-plot-timed-curtain")
    box = BoxAnnotation(fill_color=style.STEP, fill_alpha=0.15, line_color=style.STEP, line_alpha=0.7,
                        name="kstep-plot-timed-cursor")
    p.add_layout(cover)
    p.add_layout(box)
    player.cursor_at(cover, curtain, [end * 2 + 2] * len(curtain))
    player.cursor_at(box, left, right)
    return p


def title(trace) -> str:
    return f"time: each step's wait, work and cache-line transfers (ns); the run ends at {makespan(trace)} ns"


def makespan(trace) -> str:
    """The run's makespan as the player and its captions write it: the stats' number, as ``-c`` prints it."""
    return str(trace.stats["makespan_ns"])


def key() -> str:
    return style.key_html("time:", list(PARTS))
