"""Timing: what a model may declare of how long its steps take.

An optional interface beside the semantics (``model.Model``), as ``reductions.Reductions`` is:
``cost`` is the round-robin scheduler's rounds (schedule.py), ``work`` the timed scheduler's work
besides memory accesses (costs.py, timed.py).  A model opts in by inheriting ``Timing`` (every
``ProgramModel`` does: its steps declare ``cost=``) and overriding what it declares; ``of(model)``
gives the defaults, every step one round and no work, for a model that declares none.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from .model import Action, State


class Timing:
    """How long a model's steps take; these defaults: one round each, no work beside memory accesses."""

    step_work: Mapping[str, tuple] = {}  # label -> its work besides memory accesses (costs.WORK_KINDS)

    def cost(self, state: State, action: Action) -> int:
        """Rounds the step keeps its actor busy under round-robin (0: CPU-local, takes no turn)."""
        return 1

    def work(self, state: State, action: Action, after: State) -> Mapping[str, int]:
        """What the step does besides its accesses to shared memory, as a count per kind of cost
        (costs.py's KINDS) for the timed scheduler: by default its label's ``step_work``."""
        return Counter(self.step_work.get(action.label, ()))


NONE = Timing()


def of(model: Any) -> Timing:
    """What ``model`` declares of its steps' time: the model itself when it opts in, else the defaults."""
    return model if isinstance(model, Timing) else NONE
