"""Exhaustive breadth-first exploration with a visited set.

Breadth-first, one depth layer at a time, so the first violation reported has the shortest
possible trace: a deadlock found in layer d (length d) beats any violation reached from that layer
(length d + 1).  "Clean" is only ever claimed when the search exhausted the state space.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from .model import Model, State, Violation, first_violation, without_cyclic_gc
from .schedule import Replay, deadlock_message, simulate
from .trace import Trace


@dataclass
class ExploreResult:
    states: int
    transitions: int
    depth: int
    exhausted: bool  # True only when every reachable state was expanded
    seconds: float
    violation: Optional[Violation] = None
    counterexample: Optional[Trace] = None

    @property
    def clean(self) -> bool:
        return self.exhausted and self.violation is None

    @property
    def verdict(self) -> str:
        """"clean" (exhausted, every invariant held), "violation", or "bounded" (never clean)."""
        if self.violation is not None:
            return "violation"
        return "clean" if self.exhausted else "bounded"


@without_cyclic_gc
def explore(
    model: Model,
    initial: State,
    *,
    max_states: int = 1_000_000,
    progress: Optional[Callable[[int, int, int], None]] = None,
    progress_every: float = 1.0,
    scenario: str = "",
    config: Optional[dict] = None,
) -> ExploreResult:
    start = time.perf_counter()
    state_checks = model.state_invariants()
    step_checks = model.transition_invariants()
    step_fns = [inv.check for inv in step_checks]  # the hot loop calls these directly
    state_fns = [inv.check for inv in state_checks]
    parent: dict = {initial: None}  # state -> (previous state, action)
    transitions = 0
    depth = 0
    next_report = start + progress_every

    def result(violation=None, end=None, exhausted=False):
        cex = None if violation is None else _path(model, parent, end, scenario, config)
        return ExploreResult(len(parent), transitions, depth, exhausted, time.perf_counter() - start,
                             violation, cex)

    v = first_violation(state_checks, (initial,))
    if v:
        return result(v, initial)
    layer = [initial]
    while layer:
        found = None  # (violation, end) of length depth + 1, reported unless a deadlock is at depth
        bounded = False
        nxt_layer = []
        for s in layer:
            enabled = model.actions(s)
            if not enabled and not model.finished(s):
                return result(Violation("deadlock", deadlock_message(model, s)), s)
            for a in enabled:
                t = model.step(s, a)
                transitions += 1
                if found is None:
                    for f in step_fns:
                        if f(s, a, t):
                            found = (first_violation(step_checks, (s, a, t)), _Tail(s, a, t))
                            break
                    if found:
                        continue
                if t in parent or bounded:
                    continue
                parent[t] = (s, a)
                if found is None:
                    for f in state_fns:
                        if f(t):
                            found = (first_violation(state_checks, (t,)), t)
                            break
                    if found:
                        continue
                nxt_layer.append(t)
                bounded = len(parent) >= max_states
            if progress and time.perf_counter() >= next_report:
                progress(len(parent), transitions, depth)
                next_report = time.perf_counter() + progress_every
        if found:
            depth += 1
            return result(*found)
        if bounded:
            return result()
        layer = nxt_layer
        if layer:
            depth += 1
    return result(exhausted=True)


class _Tail:
    """The end of a counterexample whose last state was already reached another way."""

    def __init__(self, s, a, t):
        self.s, self.a, self.t = s, a, t


def _path(model, parent, end, scenario, config) -> Trace:
    """The counterexample ending at ``end``, run again by ``simulate`` through its exact actions, so it
    is the trace a reader of the file recomputes."""
    tail = []
    if isinstance(end, _Tail):
        tail = [end.a]
        end = end.s
    actions = []
    while parent[end] is not None:
        end, a = parent[end]
        actions.append(a)
    actions.reverse()
    actions += tail
    return simulate(model, end, Replay.of(actions), max_steps=len(actions), scenario=scenario, config=config)
