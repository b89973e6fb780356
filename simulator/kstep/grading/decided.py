"""Which step decided an answer: what a graded predict exercise asks, because kstep never prints it.

A question of a scenario (kstep.scenario_spec.questions) has one answer in one run, and ``kstep run -c``
prints it: copying it proves nothing.  What no command prints is *why* the run gave that answer:
the first step after which the answer could no longer have come out otherwise, however the
threads were scheduled from there on.  Before it, some schedule changes the answer (another CPU
wins the cmpxchg, the reader enters before the grace period starts); after it, none does.

``decided(model, question, trace)`` finds that step exactly.  From a state of the run, every
continuation is searched depth-first (every enabled action at every state, as a scheduler may
pick it) until the question's anchor is reached or the run ends, collecting the answers the
continuations give; the search stops at the second distinct answer.  Being decided only becomes
more true along a run (the continuations from step k + 1 are some of those from step k), so a
binary search over the run's steps finds the first one with a single answer.  A continuation
that never reaches the anchor gives the answer "not reached", one answer among the others.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from ..engine.model import HARM, Checks, Model
from ..scenario_spec.questions import Answer, Question, anchored, answers, value_at
from ..errors import UserError

NOT_REACHED = object()  # the answer of a continuation that never gets to the question's anchor
MAX_STATES = 400_000  # per search: the shipped predict scenarios need far fewer


def decided(model: Model, q: Question, trace: Any) -> int:
    """The first step (index into ``trace.states``: 0 is the initial state, k the state after step
    k) after which every continuation of ``trace`` gives ``q`` the answer this run gives."""
    if q.at.where == "start":
        return 0
    k = anchored(q.at, trace)
    last = len(trace.states) - 1
    hi = last if k is None or q.at.where == "end" or q.at.nth < 0 else min(last, k + (q.at.where == "before"))
    checks = Checks([i for i in model.invariants if i.kind == HARM])
    if len(_from_start(model, checks, q, trace)) == 1:  # first: else every probe near the start searches it all again
        return 0
    lo = 1
    while lo < hi:  # invariant: decided at hi; not decided before lo
        mid = (lo + hi) // 2
        if len(answers_from(model, checks, q, trace, mid)) == 1:
            hi = mid
        else:
            lo = mid + 1
    return lo


_START: dict = {}  # (model, variant, initial state, question) -> its answers over every run: seed-independent


def _from_start(model: Model, checks: Checks, q: Question, trace: Any) -> set:
    """The answers of every run of the scenario: the costliest search, and the same for every seed,
    so a batch of students of one scenario makes it once."""
    key = (model.name, model.variant.name, trace.states[0], q.at, q.kind, q.text)
    if key not in _START:
        _START[key] = answers_from(model, checks, q, trace, 0)
    return _START[key]


def answers_from(model: Model, checks: Checks, q: Question, trace: Any, k: int, limit: int = 2) -> set:
    """The answers the continuations of ``trace`` from its k-th state give (at most ``limit`` of them)."""
    at = q.at
    hits = sum(1 for a in trace.actions[:k] if _matches(at, a))
    if at.nth > 0 and hits >= at.nth:  # the anchor is behind: the run already answered
        return {_key(trace_answer(model, q, trace))}
    seen_last = NOT_REACHED
    if at.nth < 0 and hits:
        j = max(i for i, a in enumerate(trace.actions[:k]) if _matches(at, a))
        seen_last = _anchored_value(model, q, trace.states[j], trace.actions[j - 1] if j else None,
                                    trace.states[j + 1], trace.actions[j])
    reads_action = _reads_action(q)
    prev = trace.actions[k - 1] if k and reads_action else None
    start = (trace.states[k], hits, seen_last, prev)
    found: set = set()
    visited = {start}
    stack = [start]
    while stack:
        state, hits, seen_last, prev = stack.pop()
        enabled = model.actions(state)
        if not enabled:
            found.add(_end(model, q, state, prev, seen_last))
        for action in enabled:
            nxt = model.step(state, action)
            n_hits, n_last = hits, seen_last
            if _matches(at, action):
                n_hits += 1
                value = _anchored_value(model, q, state, prev, nxt, action)
                if at.nth == n_hits:
                    found.add(value)
                    if len(found) >= limit:
                        return found
                    continue
                if at.nth < 0:
                    n_last = value
            if checks.harm(state, action, nxt, 0):  # the run stops at harm, as simulate stops it
                found.add(_end(model, q, nxt, action, n_last))
            else:
                node = (nxt, n_hits, n_last, action if reads_action else None)
                if node not in visited:
                    if len(visited) >= MAX_STATES:
                        raise UserError(f"question {q.id}: more than {MAX_STATES} states to search for the "
                                        f"step that decided it (a smaller scenario, please)")
                    visited.add(node)
                    stack.append(node)
            if len(found) >= limit:
                return found
    return found


def trace_answer(model: Model, q: Question, trace: Any) -> Any:
    (a,) = answers(model, (q,), trace)
    return NOT_REACHED if a.step is None else a.value


def _reads_action(q: Question) -> bool:
    """Does the question's field read the step that reached its state (``took(...)``)?  Only then is
    that step part of what the search tells apart (it multiplies the states by their in-degree)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "took"
               for n in ast.walk(q.field))


def _matches(at, action) -> bool:
    return at.label == action.label and (at.actor is None or at.actor == action.actor)


def _anchored_value(model: Model, q: Question, state, prev, nxt, action) -> Any:
    """The answer when the anchor's step ``action`` is taken from ``state`` (reached by ``prev``)."""
    return _key(value_at(model, q, nxt, action) if q.at.where == "after" else value_at(model, q, state, prev))


def _end(model: Model, q: Question, state, prev, seen_last) -> Any:
    """The answer of a continuation that ends in ``state``."""
    if q.at.where == "end":
        return _key(value_at(model, q, state, prev))
    return seen_last  # "last": the value at its last anchor; else the anchor never came


def _key(value: Any) -> Any:
    return tuple(sorted(value)) if isinstance(value, tuple) else value


def for_answers(model: Model, computed: list[Answer], trace: Any) -> dict[str, Optional[int]]:
    """Each question's deciding step in this run (None: the run never reaches the question)."""
    return {a.question.id: (None if a.step is None else decided(model, a.question, trace)) for a in computed}
