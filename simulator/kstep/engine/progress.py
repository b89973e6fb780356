"""Progress: what a model may declare so that liveness can judge its endless runs.

An optional interface beside the semantics (``model.Model``), as ``reductions.Reductions`` is:
liveness.py asks ``of(model).progress_labels`` which steps are an actor's progress (a model that
declares none cannot be judged for starvation), and a verdict prints ``lasso_note`` beside a lasso.
"""

from __future__ import annotations

from typing import Any

from .model import State, Variant


class Progress:
    """Which steps are progress; the defaults: none, and the variant's note."""

    variant: Variant  # the model's own (``Model.__init__`` binds it)
    # the steps that are an actor's progress: e.g. entering a lock's critical section
    progress_labels: frozenset = frozenset()

    def lasso_note(self, state: State) -> str:
        """What a lasso found from ``state`` owes to something other than the mechanism as 6.12 runs
        it (a disabled timeout, an old code path, a schedule real CPUs rarely keep), in a few words,
        printed with the verdict; empty when nothing.  The variant's ``lasso`` parameter by default."""
        return self.variant.params.get("lasso", "")


class _Undeclared(Progress):
    def lasso_note(self, state: State) -> str:
        return ""


NONE = _Undeclared()


def of(model: Any) -> Progress:
    """What ``model`` declares of progress: the model itself when it opts in, else no progress at all."""
    return model if isinstance(model, Progress) else NONE
