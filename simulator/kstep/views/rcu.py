"""The RCU view, and the RCU panels every view of a model built on ``add_rcu`` reuses.

What a student should see: a CPU inside a read-side section holds up the grace period that
started while it was inside (its quiescent state stays pending, drawn as an orange outline), the
grace period ends only when every CPU has reported, and a callback (kfree) runs only after the
grace period it waits for has ended.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import AdaptiveTicker, Range1d
from bokeh.plotting import figure

from ..models.rcu import FREED, RCU_ACTOR, gp_running
from . import style
from .board import board_figure, box_source, draw_boxes
from .counters import counters_figure
from .player import Player
from .rcu_board import (CB_READY, CB_WAITING, DONE, GP_RUNNING, OBJ_CURRENT, OBJ_FREED, OBJ_OLD, OBJ_UAF, PHASES,
                        QS_PENDING, board_sources, grace_periods_completed, phase)
from .registry import register
from .timeline import actor_marks, add_cursor, interval_lane, lanes_figure, marks, phase_bars

# --- RCU pieces shared with other views -------------------------------------------------------------

def qs_reports(states) -> list[tuple[int, int]]:
    """(frame, cpu) for every quiescent state reported: the CPU's bit in qsmask is cleared."""
    out = []
    for k in range(1, len(states)):
        cleared = states[k - 1].rcu.qsmask & ~states[k].rcu.qsmask
        out += [(k, c) for c in range(len(states[k].rcu.nesting)) if cleared >> c & 1]
    return out


def gp_lane(p: figure, player: Player, lane: int) -> None:
    """Grace periods as bars in ``lane``, numbered from 1 in this run."""
    states = player.trace.states
    done = grace_periods_completed(states)
    interval_lane(p, player, "gp", [gp_running(s.rcu) for s in states], GP_RUNNING[1], lane,
                  "gp-numbers", lambda k: f"GP {done[k] + 1}", style.INK)


def qs_marks(p: figure, player: Player, lane_of_cpu) -> None:
    reports = qs_reports(player.trace.states)
    marks(p, player, "qs", np.array([k for k, _ in reports], dtype=np.int32),
          np.array([lane_of_cpu[c] for _, c in reports], dtype=np.int16), color=style.INK, marker="diamond",
          size=14, dy=0.0)


def callbacks_figure(player: Player, x_range: Range1d) -> figure:
    """How many callbacks wait, step by step, below the timeline it shares its x range with."""
    counts = np.array([len(s.rcu.callbacks) for s in player.trace.states], dtype=np.int16)
    p = figure(name="kstep-plot-callbacks", title="callbacks queued (call_rcu) and not yet invoked",
               width=style.WIDTH, height=150, x_range=x_range,
               y_range=Range1d(0, max(1, int(counts.max())) + 0.5, name="kstep-y-callbacks"),
               tools="", toolbar_location=None)
    style.style_figure(p)
    src = player.windowed_source("callbacks-count", {"x": np.arange(len(counts) + 1, dtype=np.int32),
                                                     "y": np.append(counts, counts[-1])}, "x", "x")
    p.step("x", "y", source=src, mode="after", line_width=3, color=style.DARK, name="kstep-plot-callbacks-count")
    p.yaxis.axis_label = "pending"
    p.yaxis.ticker = AdaptiveTicker(min_interval=1, num_minor_ticks=0)
    add_cursor(p, player)
    return p


def invoked_so_far(trace) -> np.ndarray:
    """Callbacks invoked up to each frame (the rcu kthread's rcu_do_batch steps)."""
    did = [1 if a.actor == RCU_ACTOR and a.label == "rcu_do_batch" else 0 for a in trace.actions]
    return np.concatenate([[0], np.cumsum(did, dtype=np.int64)])


def freed_so_far(states) -> list[int]:
    """Objects freed at each frame; the table is recounted only when it changed."""
    out, last, count = [], None, 0
    for s in states:
        if s.objects is not last:
            last, count = s.objects, s.objects.count(FREED)
        out.append(count)
    return out


@register("rcu")
def rcu_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    names = [t.name for t in s0.threads]

    board = board_figure("state", "state after this step", [(3, "CPUs"), (2, "grace period"), (1, "callbacks"),
                                                             (0, "objects")], height=470, y_range=(-0.55, 3.5))
    for src in board_sources(s0):
        draw_boxes(board, box_source(player, src.name, src.rows, key=src.key))

    lanes = [f"{n} (CPU {i})" for i, n in enumerate(names)] + ["grace period"]
    timeline = lanes_figure(player, "timeline", "who did what: CPUs and grace periods over time", lanes)
    phases = np.array([[phase(s, i) for i in range(len(names))] for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "phases", phases, [c for _, c in PHASES], skip=(DONE,))
    gp_lane(timeline, player, len(names))
    qs_marks(timeline, player, list(range(len(names))))
    actor_marks(timeline, player, list(range(len(names))) + [len(names)])
    pending = callbacks_figure(player, timeline.x_range)

    counts = np.column_stack([
        grace_periods_completed(trace.states),
        [len(s.rcu.callbacks) for s in trace.states],
        invoked_so_far(trace),
        freed_so_far(trace.states),
    ])
    counters = counters_figure(player, "counters", "counters so far",
                               ["grace periods completed", "callbacks pending", "callbacks invoked",
                                "objects freed"], counts)
    key = (style.key_html("threads:", [(what, c) for what, c in PHASES[:3]], outline=[QS_PENDING])
           + style.key_html("RCU:", [GP_RUNNING, CB_READY, CB_WAITING])
           + style.key_html("objects:", [OBJ_CURRENT, OBJ_OLD, OBJ_FREED, OBJ_UAF])
           + style.key_html("timeline:", [], marks=[("◆", style.INK, "quiescent state reported"),
                                                    ("▲", style.DARK, "took a step")]))
    return player.layout(board, timeline, pending, counters, key=key)

