"""Liveness: lassos in which an actor starves, or nobody progresses, under per-actor weak fairness.

A run that goes on forever (a scenario with ``repeat = "forever"``) is a *lasso*: a stem from the
initial state, then a cycle that comes back to the state the stem ended in and repeats.  An actor
*progresses* when it takes one of the steps its model declares progress (``progress.Progress``; for
a lock: entering its critical section).  A cycle is *fair* (weak fairness, per actor) when every
actor that is enabled in every state of the cycle takes a step in it: a scheduler that lets an
actor wait forever while it could always run is not one the kernel's CPUs are.

- **Starvation of A**: a fair cycle, A unfinished, in which A never progresses while another
  actor does.
- **Livelock**: a fair cycle in which actors keep taking steps and nobody progresses.
- **Deadlock**: a reachable state in which no actor can move and some have not finished (the
  safety search reports it too).

The search stores the whole reachable graph, with no reduction: partial-order reduction keeps
safety verdicts but not these, and symmetry would need the cycle's renaming tracked.  Tarjan's
algorithm splits it into strongly connected components, once with every progress step left out
(livelock) and once per actor with only that actor's progress steps left out (its starvation).
Within one component the cycle that takes every edge is the fairest, so a component holds a fair
cycle exactly when every actor enabled in all of its states has an edge in it; the lasso is then
built from a shortest stem into it and a walk that takes another actor's progress step and, for
each actor, one of its steps or a state where it cannot move.  Every lasso is run again through
``simulate`` and judged on that concrete run by ``judge``, which is also what a trace file's
``cycle_start`` is held to when it is loaded.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from ..errors import UserError
from .progress import of as declared_progress
from .model import Action, Model, State, without_cyclic_gc
from .schedule import Replay, simulate
from .trace import Trace

STARVATION, LIVELOCK = "starvation", "livelock"


@dataclass
class LivenessResult:
    states: int
    transitions: int
    seconds: float
    exhausted: bool  # every reachable state stored: a verdict of freedom holds
    actors: tuple  # the actors judged: those that can progress
    lassos: dict = field(default_factory=dict)  # actor -> Trace of a lasso in which it starves
    livelock: Optional[Trace] = None
    deadlock: Optional[Trace] = None
    interrupted: bool = False
    cyclic: bool = True  # some run goes on forever (False: every run ends, so every verdict of freedom is empty)

    @property
    def free(self) -> bool:
        return self.exhausted and not self.lassos and self.livelock is None and self.deadlock is None

    @property
    def verdict(self) -> str:
        """One word, as the verdict table records it: deadlock, livelock, starvation, free or bounded."""
        if self.deadlock is not None:
            return "deadlock"
        if self.livelock is not None:
            return "livelock"
        if self.lassos:
            return STARVATION
        return "free" if self.exhausted else "bounded"


def judge(model: Model, trace: Trace, cycle_start: int) -> dict:
    """What the cycle of a lasso trace shows, computed on its concrete states: ``{"kind", "actors",
    "stem", "cycle"}``.  Raises UserError when it is no fair cycle or shows nothing."""
    n = len(trace)
    if not 0 <= cycle_start < n:
        raise UserError(f"cycle_start {cycle_start} is not a step before the last ({n})")
    first, last = trace.states[cycle_start], trace.states[n]
    if first != last:
        raise UserError(f"the cycle does not close: the state after step {n} is not the state after step "
                        f"{cycle_start}")
    progress = declared_progress(model).progress_labels
    cycle = trace.actions[cycle_start:]
    states = trace.states[cycle_start:n]
    stepped = {a.actor for a in cycle}
    for actor in model.actors(first):
        if actor not in stepped and all(any(a.actor == actor for a in model.actions(s)) for s in states):
            raise UserError(f"the cycle is not fair: {actor} can move in every state of it and never does")
    progressed = {a.actor for a in cycle if a.label in progress}
    waiting = [a for a in model.actors(first) if not model.is_daemon(a) and not model.done(first, a)
               and a not in progressed]
    if not waiting:
        raise UserError("the cycle shows no starvation: every unfinished actor progresses in it")
    return {"kind": STARVATION if progressed else LIVELOCK, "actors": waiting, "stem": cycle_start, "cycle": n - cycle_start}


def describe(verdict: dict) -> str:
    """``starvation of C1: lasso with stem 5 steps, cycle 4 steps``."""
    who = " and ".join(verdict["actors"])
    what = f"starvation of {who}" if verdict["kind"] == STARVATION else f"livelock ({who} never progress)"
    return f"{what}: lasso with stem {verdict['stem']} steps, cycle {verdict['cycle']} steps"


@without_cyclic_gc
def liveness(model: Model, initial: State, *, max_states: int = 1_000_000, scenario: str = "",
             config: Optional[dict] = None, progress: Optional[Callable[[int, int, int, int], None]] = None,
             progress_every: float = 1.0) -> LivenessResult:
    """Store the reachable graph (at most ``max_states`` states) and look for a deadlock, a livelock and,
    per actor, a starvation lasso.  Each lasso found is a concrete Trace with ``cycle_start`` set."""
    if not declared_progress(model).progress_labels:
        raise UserError(f"{model.name} names no progress step: liveness is not defined for it")
    start = time.perf_counter()
    graph = _Graph(model, initial, max_states, progress, progress_every)
    actors = tuple(a for a in model.actors(initial) if not model.is_daemon(a))
    result = LivenessResult(len(graph.states), graph.transitions, 0.0, graph.exhausted, actors,
                            interrupted=graph.interrupted)

    def run(actions, cycle_start=None):
        t = simulate(model, initial, Replay.of(actions), max_steps=len(actions), scenario=scenario, config=config)
        if cycle_start is not None:
            t.cycle_start = cycle_start
            t.lasso = judge(model, t, cycle_start)
        return t

    if graph.deadlocked is not None:
        result.deadlock = run(graph.stem(graph.deadlocked))
    if not graph.interrupted:
        result.cyclic = graph.cyclic()
        progress_labels = declared_progress(model).progress_labels
        found = graph.fair_cycle(lambda a: a.label in progress_labels, None)
        if found is not None:
            result.livelock = run(*found)
        else:
            def progress_of(actor: str) -> Callable[[Action], bool]:
                return lambda a: a.actor == actor and a.label in progress_labels

            for actor in actors:
                found = graph.fair_cycle(progress_of(actor), actor)
                if found is not None:
                    result.lassos[actor] = run(*found)
    result.seconds = time.perf_counter() - start
    return result


class _Graph:
    """The reachable states (ids in breadth-first order), their edges and a shortest-path tree."""

    def __init__(self, model, initial, max_states, progress, progress_every):
        self.model = model
        self.states = [initial]
        self.index = {initial: 0}
        self.parent = [None]  # id -> (parent id, action)
        self.depth = [0]
        self.edges = []  # id -> [(action, target id)]
        self.enabled = []  # id -> frozenset of actors that can move
        self.transitions = 0
        self.exhausted = True
        self.interrupted = False
        self.deadlocked = None
        next_report = time.perf_counter() + progress_every
        k = 0
        try:
            while k < len(self.states):
                s = self.states[k]
                out = []
                acts = model.actions(s)
                if not acts and self.deadlocked is None and not model.finished(s):
                    self.deadlocked = k
                for a in acts:
                    t = model.step(s, a)
                    self.transitions += 1
                    j = self.index.get(t)
                    if j is None:
                        if len(self.states) >= max_states:
                            self.exhausted = False
                            raise _Full
                        j = self.index[t] = len(self.states)
                        self.states.append(t)
                        self.parent.append((k, a))
                        self.depth.append(self.depth[k] + 1)
                    out.append((a, j))
                self.edges.append(out)
                self.enabled.append(frozenset(a.actor for a in acts))
                k += 1
                if progress and time.perf_counter() >= next_report:
                    progress(len(self.states), self.transitions, self.depth[k - 1], len(self.states) - k)
                    next_report = time.perf_counter() + progress_every
        except _Full:
            pass
        except KeyboardInterrupt:
            self.exhausted = False
            self.interrupted = True
        self.expanded = len(self.edges)

    def cyclic(self) -> bool:
        """Does the graph hold a cycle (a run that can go on forever)?"""
        return any(len(c) > 1 or any(j == c[0] for _, j in self.edges[c[0]])
                   for c in _components(self.expanded, lambda v: (j for _, j in self.edges[v] if j < self.expanded)))

    def stem(self, k: int) -> list[Action]:
        path = []
        while self.parent[k] is not None:
            k, a = self.parent[k]
            path.append(a)
        return path[::-1]

    def fair_cycle(self, left_out: Callable[[Action], bool], victim: Optional[str]):
        """(actions, cycle_start) of a lasso into a component of the graph without the edges
        ``left_out`` says, that holds a fair cycle in which (victim given) the victim is unfinished and
        another actor progresses, or (no victim) somebody moves; the one with the shortest stem."""
        model = self.model
        progress = declared_progress(model).progress_labels
        best = None
        for comp in _components(self.expanded, lambda v: (j for a, j in self.edges[v] if not left_out(a)
                                                          and j < self.expanded)):
            members = set(comp)
            inner = [(v, a, j) for v in comp for a, j in self.edges[v] if j in members and not left_out(a)]
            if not inner:
                continue
            s = self.states[comp[0]]
            if victim is not None:
                if model.done(s, victim) or not any(a.label in progress for _, a, _ in inner):
                    continue
            elif all(model.is_daemon(a) or model.done(s, a) for a in model.actors(s)):
                continue  # only daemons run: they wait for work, nobody waits on them
            movers = {a.actor for _, a, _ in inner}
            everywhere = frozenset.intersection(*(self.enabled[v] for v in comp))
            if not everywhere <= movers:
                continue  # an actor can always move and never does: no cycle in here is fair
            entry = min(comp, key=lambda v: self.depth[v])
            if best is None or self.depth[entry] < self.depth[best[0]]:
                best = (entry, members, inner)
        if best is None:
            return None
        entry, members, inner = best
        cycle = self._walk(entry, members, inner, left_out, victim)
        stem = self.stem(entry)
        return stem + cycle, len(stem)

    def _walk(self, entry, members, inner, left_out, victim):
        """A closed walk from ``entry`` inside the component: another actor's progress step (victim
        given), then for every actor one of its steps or a state where it cannot move, then back."""
        progress = declared_progress(self.model).progress_labels
        goals = []
        if victim is not None:
            goals.append(lambda v, a, j: a is not None and a.label in progress)
        for actor in sorted({a.actor for _, a, _ in inner} | set().union(*(self.enabled[v] for v in members))):
            goals.append(lambda v, a, j, x=actor: (a is not None and a.actor == x) or (a is None and x not in
                                                                                      self.enabled[v]))
        actions, cur = [], entry
        while goals:
            path, cur, met = self._nearest(cur, members, left_out, goals)
            actions += path
            goals = [g for g in goals if g not in met]
        back = [lambda v, a, j: v == entry if a is None else j == entry]
        path, cur, _ = self._nearest(cur, members, left_out, back, leave=not actions)
        return actions + path

    def _nearest(self, start, members, left_out, goals, leave=False):
        """Breadth-first from ``start`` inside the component to the nearest state or edge that meets a
        goal (``goal(v, None, None)`` for a state, ``goal(v, a, j)`` for an edge): (actions, the state
        reached, the goals met there).  ``leave``: the start state itself does not count."""
        seen = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            if not (leave and v == start):
                met = [g for g in goals if g(v, None, None)]
                if met:
                    return _path(seen, v), v, met
            for a, j in self.edges[v]:
                if j not in members or left_out(a):
                    continue
                met = [g for g in goals if g(v, a, j)]
                if met:
                    return _path(seen, v) + [a], j, met
                if j not in seen:
                    seen[j] = (v, a)
                    queue.append(j)
        raise AssertionError("a component's goal is out of reach inside it")


def _path(seen, v):
    out = []
    while seen[v] is not None:
        v, a = seen[v]
        out.append(a)
    return out[::-1]


class _Full(Exception):
    pass


def _components(n: int, succ: Callable[[int], Iterable[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components of the graph on 0 .. n-1, iteratively."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    out = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, it = work[-1]
            for w in it:
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(succ(w))))
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work and low[v] < low[work[-1][0]]:
                    low[work[-1][0]] = low[v]
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out
