"""A model under tso: its mechanism's columns read from memory, plus what each store buffer holds."""

from __future__ import annotations

from ...engine.memory_model import StoreBuffered
from .base import Presentation


class StoreBuffersPresentation(Presentation):
    def __init__(self, model: StoreBuffered, inner: Presentation):
        super().__init__(model)
        self.buffered, self.inner = model, inner

    def summary(self, state):
        m = self.buffered
        out = dict(self.inner.summary(m.memory(state)))
        out["store buffers"] = " | ".join(
            f"CPU{b}: " + ("; ".join(m.entry_text(state, e) for e in buf) or "-") for b, buf in enumerate(state[-1]))
        return out

    def blocked_on(self, state, actor):
        """What the actor waits for as its own CPU sees memory (its buffered stores applied)."""
        view = self.buffered.view_of(state, actor)
        return "" if view is None else self.inner.blocked_on(view, actor)
