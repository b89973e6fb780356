"""The view of a mechanism that has none of its own: each actor working, blocked or done.

It needs nothing but the Model contract, so a new model animates (with source-linked status
lines) before anyone writes its view.
"""

from __future__ import annotations

from . import style
from .phases import PHASES, chart_sources
from .player import Player
from .timeline import actor_marks, lanes_figure, phase_bars


def generic_view(trace, model):
    player = Player(trace, model)
    actors = list(model.actors(trace.states[0]))
    timeline = lanes_figure(player, "timeline", "who can move, step by step", actors)
    chart = {c.name: c for c in chart_sources(trace.states[0], model)}
    phase_bars(timeline, player, chart["timeline-phases"], [c for _, c in PHASES])
    actor_marks(timeline, player, [chart["timeline-actions"], chart["timeline-violation"]])
    key = style.key_html("actors:", [(w, c) for w, c in PHASES[:2]],
                         marks=[("▲", style.DARK, "took a step")])
    return player.layout(timeline, key=key)
