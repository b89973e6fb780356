"""What each actor of any model is doing, from the Model contract alone: it can take a step, it is
blocked, or it is done (the generic view's lanes, fork-batch's threads), in the standard library only."""

from __future__ import annotations

from . import charts, style
from .boxes import BoardSource

PHASES = (("can take a step", style.FREE), ("blocked", style.WAITS), style.DONE)
WORKING, BLOCKED, DONE = range(len(PHASES))


def phases(model, state) -> list[int]:
    enabled = {a.actor for a in model.actions(state)}
    return [DONE if model.done(state, a) else WORKING if a in enabled else BLOCKED for a in model.actors(state)]


def chart_sources(s0, model) -> list[BoardSource]:
    """Each actor's lane (can take a step, blocked; nothing once done) and who took each step."""
    actors = list(model.actors(s0))
    return [charts.phase_bars("timeline-phases", lambda s: phases(model, s), skip=(DONE,)),
            *charts.actor_marks("timeline", {a: i for i, a in enumerate(actors)})]
