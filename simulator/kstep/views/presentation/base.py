"""What a model's states and runs look like to a reader, beside what the model does.

A ``Presentation`` gives the step table its columns (``summary``), tells a student choosing who
runs next what a blocked actor waits for (``blocked_on``) and lists what ``-c`` reveals after a
run (``answers``).  These defaults show the scheduler's counters and nothing else; each mechanism's
module says more.  The model stays what the kernel does: it never imports this.
"""

from __future__ import annotations

from typing import Any

from ...engine.model import Model, State


class Presentation:
    def __init__(self, model: Model):
        self.model = model

    def summary(self, state: State) -> dict[str, str]:
        """A few short columns of the state for the step table (what a student predicts)."""
        return {}

    def blocked_on(self, state: State, actor: str) -> str:
        """What a blocked actor waits for, in a few words ("mmap_lock, held for write by W"), for a
        student choosing who runs next; empty when the mechanism does not say."""
        return ""

    def answers(self, trace: Any) -> dict[str, Any]:
        """What ``-c`` reveals after a run: counters, who waited how long."""
        return dict(trace.stats)
