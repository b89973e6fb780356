"""Display: what a model may declare of how its steps read to a person.

An optional interface beside the semantics (``model.Model``), as ``timing.Timing`` is: the player, the
live page and the tso wrapper ask ``of(model)`` what a step does in one line (``what``), what it acts
on, how a finished actor ended and which kernel build's code the code pane shows.  A model opts in by
inheriting ``Display`` (every ``ProgramModel`` does: its steps carry their text) and overriding what it
declares; ``of(model)`` gives the defaults, which say nothing, for a model that declares none.
"""

from __future__ import annotations

from typing import Any, Optional

from .model import Action, State


class Display:
    """How a model's steps read; these defaults: no text, nothing acted on, no other build."""

    kernel_builds: tuple[str, ...] = ()  # the kernel builds a variant may name (source/excerpts.py's BUILDS)

    def what(self, label: str) -> str:
        """What the step ``label`` does, in one line (the player's step text)."""
        return ""

    def acts_on(self, state: State, action: Action) -> str:
        """What the step ``action`` is about to act on in ``state`` ("mmap_lock", "VMA 2's lock"), in a few
        words, or "" when its label says it all: two ``down_write`` steps on different locks must say which."""
        return ""

    def how_ended(self, state: State, actor: str) -> str:
        """How a finished actor ended when it did not run to its end ("killed by SIGSEGV"), else ""."""
        return ""

    def kernel_build(self, state: State) -> Optional[str]:
        """The kernel build whose code the code pane shows (one of ``kernel_builds``), when the run's
        state or variant names one other than the mirrored code; else None."""
        return None


NONE = Display()


def of(model: Any) -> Display:
    """How ``model``'s steps read: the model itself when it opts in, else the defaults."""
    return model if isinstance(model, Display) else NONE
