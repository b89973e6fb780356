"""The RCU view, and the RCU panels every view of a model built on ``add_rcu`` reuses.

What a student should see: a CPU inside a read-side section holds up the grace period that
started while it was inside (its quiescent state stays pending, drawn as an orange outline), the
grace period ends only when every CPU has reported, and a callback (kfree) runs only after the
grace period it waits for has ended.
"""

from __future__ import annotations

from bokeh.models import AdaptiveTicker, Range1d
from bokeh.plotting import figure

from . import style
from .board import board_figure, board_source, draw_boxes
from .boxes import BoardSource
from .counters import counters_figure
from .player import Player
from .boards.rcu import (CB_READY, CB_WAITING, COUNTERS, GP_RUNNING, OBJ_CURRENT, OBJ_FREED, OBJ_OLD, OBJ_UAF, PHASES,
                         QS_PENDING, board_sources, chart_sources)
from .registry import register
from .timeline import actor_marks, add_cursor, interval_lane, lanes_figure, marks, phase_bars


def callbacks_figure(player: Player, x_range: Range1d, src: BoardSource) -> figure:
    """How many callbacks wait, step by step (boards.rcu.rcu_charts), below the timeline it shares its x
    range with."""
    p = figure(name="kstep-plot-callbacks", title="callbacks queued (call_rcu) and not yet invoked",
               width=style.WIDTH, height=150, x_range=x_range, y_range=Range1d(0, 1, name="kstep-y-callbacks"),
               tools="", toolbar_location=None)
    style.style_figure(p)
    p.step("x", "y", source=board_source(player, src), mode="after", line_width=3, color=style.DARK,
           name="kstep-plot-callbacks-count")
    player.fit(p.y_range, src.name, "y", add=0.5, least=1.5)
    p.yaxis.axis_label = "pending"
    p.yaxis.ticker = AdaptiveTicker(min_interval=1, num_minor_ticks=0)
    add_cursor(p, player)
    return p


def rcu_timeline(timeline: figure, player: Player, chart: dict) -> None:
    """The RCU pieces of a timeline (boards.rcu.rcu_charts): grace periods and quiescent states."""
    interval_lane(timeline, player, chart["timeline-gp"], chart["gp-numbers"], GP_RUNNING[1], style.INK)
    marks(timeline, player, chart["timeline-qs"], color=style.INK, marker="diamond", size=14)


@register("rcu")
def rcu_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    names = [t.name for t in s0.threads]

    board = board_figure("state", "state after this step", [(3, "CPUs"), (2, "grace period"), (1, "callbacks"),
                                                             (0, "objects")], height=470, y_range=(-0.55, 3.5))
    for src in board_sources(s0):
        draw_boxes(board, board_source(player, src))

    lanes = [f"{n} (CPU {i})" for i, n in enumerate(names)] + ["grace period"]
    timeline = lanes_figure(player, "timeline", "who did what: CPUs and grace periods over time", lanes)
    chart = {c.name: c for c in chart_sources(s0)}
    phase_bars(timeline, player, chart["timeline-phases"], [c for _, c in PHASES])
    rcu_timeline(timeline, player, chart)
    actor_marks(timeline, player, [chart["timeline-actions"], chart["timeline-violation"]])
    pending = callbacks_figure(player, timeline.x_range, chart["callbacks-count"])
    counters = counters_figure(player, "counters so far", list(COUNTERS), chart["counters"])
    key = (style.key_html("threads:", [(what, c) for what, c in PHASES[:3]], outline=[QS_PENDING])
           + style.key_html("RCU:", [GP_RUNNING, CB_READY, CB_WAITING])
           + style.key_html("objects:", [OBJ_CURRENT, OBJ_OLD, OBJ_FREED, OBJ_UAF])
           + style.key_html("timeline:", [], marks=[("◆", style.INK, "quiescent state reported"),
                                                    ("▲", style.DARK, "took a step")]))
    return player.layout(board, timeline, pending, counters, key=key)
