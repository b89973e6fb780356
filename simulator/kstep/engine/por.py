"""Partial-order reduction: ample sets built from the steps' declared footprints.

At a state, the enabled steps of one actor form an ample set, and are the only ones the search
expands there, when

- (C1) each is independent of everything any other actor may still do: its footprint conflicts
  with no other actor's ``Reductions.future_footprint`` (all it may read or write from now on);
- (C2) each is invisible: it writes no location a state invariant reads (``Invariant.reads``;
  of its own context's record, only when its label is one the invariant names in
  ``Invariant.steps``), and its label is none that can fire a transition invariant (``steps``);
- (C3) each leads to a state not stored yet, the proviso of a breadth-first search: every reduced
  step then goes to a newer state, so every cycle passes a fully expanded one.

An actor with no enabled step, a step without a footprint, an actor without a future footprint or
an invariant without ``reads`` make no ample set; the state is then fully expanded.  Deadlocks and
every invariant's verdict are kept; the first counterexample may be longer than the shortest, which
is why ``explore`` searches again without the reduction, up to the depth it found.
"""

from __future__ import annotations

from typing import Optional

from . import reductions
from .model import Action, Model, State
from .reductions import Footprint


class Reduction:
    def __init__(self, model: Model, initial: State):
        self.model = model
        self.declared = reductions.of(model)  # the footprints it declares, if any
        self.fields: set = set()  # the fields some state invariant reads, besides the contexts' records
        self.threads_read = False  # some state invariant reads other contexts' records
        self.labels: Optional[set] = set()  # labels visible through a context's own record (None: all)
        self.on = any(self.declared.future_footprint(initial, a) is not None for a in model.actors(initial))
        for inv in model.invariants:
            if inv.reads is None:
                self.on = False
                continue
            if not inv.transition:
                self.fields.update(f for f in inv.reads if f != "threads")
            if inv.transition or "threads" in inv.reads:
                self.threads_read |= not inv.transition
                if inv.steps is None:
                    self.labels = None
                elif self.labels is not None:
                    self.labels.update(inv.steps)

    def __bool__(self) -> bool:
        return self.on

    def visible(self, action: Action, fp: Footprint) -> bool:
        if self.labels is None or action.label in self.labels:
            return True
        for loc in fp.writes:
            if loc[0] in self.fields or (loc[0] == "threads" and self.threads_read and loc != fp.own):
                return True
        return False

    def candidates(self, state: State, enabled: list) -> list:
        """The ample sets C1 and C2 allow at ``state``, smallest first (C3 is the search's to check)."""
        by_actor: dict = {}
        for a in enabled:
            acts = by_actor.get(a.actor)
            if acts is None:
                by_actor[a.actor] = [a]
            else:
                acts.append(a)
        labels = self.labels
        if len(by_actor) < 2 or labels is None:  # None: every step is visible by its label alone
            return []
        model, declared, visible = self.model, self.declared, self.visible
        invisible = []
        for actor, acts in by_actor.items():
            fps = []
            for a in acts:  # each step must be invisible: by its label, then by what it writes
                if a.label in labels:
                    break
                fp = declared.footprint(state, a)
                if fp is None or visible(a, fp):
                    break
                fps.append(fp)
            else:
                invisible.append((actor, acts, fps))
        if not invisible:  # the common case: no future footprint is needed
            return []
        futures: dict = {}  # each computed when first needed: most actors fail on the first other one
        out = []
        for actor, acts, fps in invisible:
            for other in model.actors(state):
                if other == actor:
                    continue
                f = futures.get(other, futures)
                if f is futures:
                    f = futures[other] = declared.future_footprint(state, other)
                if f is None or any(fp.conflicts(f) for fp in fps):
                    break
            else:
                out.append(acts)
        out.sort(key=len)
        return out
