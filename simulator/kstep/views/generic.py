"""The view of a mechanism that has none of its own: each actor working, blocked or done.

It needs nothing but the Model contract, so a new model animates (with source-linked status
lines) before anyone writes its view.
"""

from __future__ import annotations

import numpy as np

from . import style
from .player import Player
from .timeline import actor_marks, lanes_figure, phase_bars

PHASES = (("can take a step", style.FREE), ("blocked", style.WAITS), style.DONE)
WORKING, BLOCKED, DONE = range(len(PHASES))


def phases(model, state) -> list[int]:
    enabled = {a.actor for a in model.actions(state)}
    return [DONE if model.done(state, a) else WORKING if a in enabled else BLOCKED for a in model.actors(state)]


def generic_view(trace, model):
    player = Player(trace, model)
    actors = list(model.actors(trace.states[0]))
    timeline = lanes_figure(player, "timeline", "who can move, step by step", actors)
    table = np.array([phases(model, s) for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "phases", table, [c for _, c in PHASES], skip=(DONE,))
    actor_marks(timeline, player, list(range(len(actors))))
    key = style.key_html("actors:", [(w, c) for w, c in PHASES[:2]],
                         marks=[("▲", style.DARK, "took a step")])
    return player.layout(timeline, key=key)
