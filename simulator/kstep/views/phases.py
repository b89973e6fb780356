"""What each actor of any model is doing, from the Model contract alone: it can take a step, it is
blocked, or it is done (the generic view's lanes, fork-batch's threads), in the standard library only."""

from __future__ import annotations

from . import style

PHASES = (("can take a step", style.LIGHT), ("blocked", style.ORANGE), style.DONE)
WORKING, BLOCKED, DONE = range(len(PHASES))


def phases(model, state) -> list[int]:
    enabled = {a.actor for a in model.actions(state)}
    return [DONE if model.done(state, a) else WORKING if a in enabled else BLOCKED for a in model.actors(state)]
