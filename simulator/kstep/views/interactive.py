"""Interactive scheduling: the student picks who runs next, steps back, and branches.

A ``Session`` is a run of one bundled scenario built by hand, one chosen action at a time.  It
offers every enabled action, says why each other actor cannot move (its next step, and the lock it
waits for when the model says), checks the invariants after every step exactly as ``simulate``
does (harm ends the run; a broken assertion is kept and the run goes on), and gives the board's
rows for the current step and the columns of the whole prefix: the trace's, each step's call stack
and object, and every board and chart the mechanism's view declares (its module in boards/), so that the
player draws the student's run as it draws a recorded one.

The page's interactive mode runs this module in the browser, in Pyodide's core runtime
(interactive.js), so it imports only the standard library and kstep's stdlib modules; the tests
and the benchmark use it directly.  Every answer is plain JSON data.

After each move the page takes only what changed (``page_json``): the columns it already holds stay,
and a step sends the rows that step adds, so a step costs about the same at step 150 as at step 1.
``patched`` is the reference for how interactive.js applies such a change.
"""

from __future__ import annotations

import json
from array import array
from typing import Any, Callable, Optional

from ..engine import HARM, Action, Trace, display
from ..engine.memory_model import DRAIN, StoreBuffered
from ..engine.trace import recorded
from ..engine.model import FULL, Checks, Violation, deadlock
from ..engine.schedule import deadlock_message
from ..errors import UserError
from .. import experiment
from . import context, phases
from .boards import damon, fork_batch, qspinlock, rcu, store_buffers, vma_locks
from .boxes import BoardSource, frames
from .call_stacks import stack_replay
from .columns import FrameColumns, Strings
from .presentation import present

# Each mechanism's boards and charts, given the model and the initial state: the sources its view draws
# for playback, declared in its standard-library module.  A mechanism without a view of its own gets
# the generic view's charts and shows its state as text.
BOARDS: dict[str, Callable[[Any, Any], list[BoardSource]]] = {
    "vma-locks": lambda s0, model: vma_locks.board_sources(s0),
    "rcu": lambda s0, model: rcu.board_sources(s0),
    "qspinlock": lambda s0, model: qspinlock.board_sources(s0),
    "damon": damon.board_sources,
    "fork-batch": fork_batch.board_sources,
}
CHARTS: dict[str, Callable[[Any, Any], list[BoardSource]]] = {
    "vma-locks": lambda s0, model: vma_locks.chart_sources(s0),
    "rcu": lambda s0, model: rcu.chart_sources(s0),
    "qspinlock": qspinlock.chart_sources,
    "damon": damon.chart_sources,
    "fork-batch": fork_batch.chart_sources,
}


class Session:
    """A hand-scheduled run of scenario ``name`` of ``mechanism`` (under ``variant``, else the
    scenario's own variant, else the model's default).  ``calls``: which of the model's functions
    call which in the 6.12 code, as JSON pairs (context.call_pairs; the page carries them), for the
    call stack of each step.

    ``memory_model`` "tso" runs it on x86-TSO (``Experiment.under``: a model or variant that has no
    tso model is a UserError saying so): the choices are then the model's, each thread's next step and
    the drain of the oldest store in each non-empty store buffer, and the board has the store-buffer
    panel the static player draws under the mechanism's (boards/store_buffers.py)."""

    def __init__(self, mechanism: str, name: str, variant: Optional[str] = None, calls: str = "[]",
                 memory_model: str = "sc") -> None:
        ex = experiment.open(mechanism, name, variant or None).under(memory_model)
        sc, model, s0 = ex.scenario, ex.model, ex.start
        board = BOARDS.get(mechanism, lambda s, model: [])(s0, model)
        if isinstance(model, StoreBuffered):
            board.append(store_buffers.board_source(model))
        self._begin(sc, model, board, CHARTS.get(mechanism, phases.chart_sources)(s0, model), calls)

    def _begin(self, sc, model, board: list[BoardSource], charts: list[BoardSource], calls: str) -> None:
        """A run of ``model`` from the initial state of ``sc`` (its ``name`` and ``config``), drawn by
        ``board`` and ``charts``: what every session starts from, whatever it runs (litmus_live.py too)."""
        self.scenario, self.model, self.presentation = sc, model, present(model)
        self.checks = Checks(self.model.invariants)
        s0 = self.model.initial(self.scenario.config)
        self.states = [s0]
        self.actions: list[Action] = []
        self.violations = [self.checks.after(None, None, s0, 0)]  # per frame: the run's verdict so far
        self.board, self.charts = board, charts
        self.sources = self.model.sources()
        pairs = {tuple(p) for p in json.loads(calls)}
        self.calls = lambda caller, callee: (caller, callee) in pairs
        # Each step's call stack (None: the replay cannot tell it) and what it acts on, as the step is taken.
        self._replay = stack_replay(self.model, self.scenario.config, s0, self.calls)
        self._stacks: list = [()]
        self._on = [""]
        # Per source: its rows by key, kept over every step of the student's run; the frames laid out so
        # far of each board of the states, and one string table for all.
        self._memo: dict = {src.name: {} for src in self.board + self.charts}
        self._laid: dict[str, FrameColumns] = {}
        self._strings = Strings()
        self._view: tuple = (None, -1, None)  # the last view: of which state, at which step
        self._laid_at: tuple = (None, -1, None)  # each source's frames over the run: of which state, at which step
        self._sent: dict = {}  # the columns as the page holds them

    # -- moving -------------------------------------------------------------------------------
    def step(self, action: str, at: Optional[int] = None) -> dict:
        """Take ``action`` ("ACTOR:label", or just "ACTOR" for its one enabled action) and show it;
        ``at`` (a step of the run so far) first drops every step after it: the run branches there."""
        if at is not None and not 0 <= at <= len(self.actions):
            raise UserError(f"step {at} is not in the run (it has steps 0 to {len(self.actions)})")
        if at is not None and at < len(self.actions):
            self._enabled_match(action, at)  # a choice that is not there leaves the run as it was
            self._keep(at)
        state = self.states[-1]
        chosen = self._enabled_match(action, len(self.actions))
        nxt = self.model.step(state, chosen)
        k = len(self.actions) + 1
        before = self.violations[-1]
        found = self.checks.harm(state, chosen, nxt, k) or before or self.checks.assertion(state, chosen, nxt, k)
        self._stacks.append(None if self._replay is None else self._replay.step(state, chosen, nxt))
        self._on.append(display.of(self.model).acts_on(state, chosen))
        self.states.append(nxt)
        self.actions.append(chosen)
        if found is None and not self.model.actions(nxt) and not self.model.finished(nxt):
            found = deadlock(deadlock_message(self.model, nxt), k)
        self.violations.append(found)
        return self.view()

    def back(self) -> dict:
        """Undo the last step (choosing another action next branches the run)."""
        self._keep(max(0, len(self.actions) - 1))
        return self.view()

    def reset(self) -> dict:
        self._keep(0)
        return self.view()

    def _keep(self, k: int) -> None:
        """Keep the first k steps of the run."""
        del self.actions[k:], self.states[k + 1:], self.violations[k + 1:], self._stacks[k + 1:], self._on[k + 1:]
        if self._replay is not None:
            self._replay.back(k)
        for fc in self._laid.values():
            fc.truncate(k + 1)

    def _enabled_match(self, text: str, k: int) -> Action:
        """The enabled action at step ``k`` that ``text`` names."""
        v = self.violations[k]
        if v is not None and v.kind == HARM:
            raise UserError(f"the run is over ({v.title}): step back to go on")
        enabled = self.model.actions(self.states[k])
        actor, _, label = text.partition(":")
        match = [a for a in enabled if a.actor == actor and (a.label == label or not label)]
        if not label and len(match) > 1:  # a thread's next step, not an optional one beside it
            match = [a for a in match if not self.model.is_optional(a)] or match
        if len(match) != 1:
            raise UserError(f"{text} is not an enabled action here (enabled: {', '.join(map(str, enabled)) or 'none'})")
        return match[0]

    def over(self, k: int = -1) -> bool:
        """The run has done harm by step k (default: its last): no step can follow."""
        v = self.violations[k]
        return v is not None and v.kind == HARM

    # -- what the page shows ------------------------------------------------------------------
    def view(self, k: Optional[int] = None) -> dict:
        """Step ``k`` of the run so far (default: its last): who did what, the choices there (taking one
        from an earlier step branches the run there), the verdict and the board."""
        k = len(self.actions) if k is None else k
        if not 0 <= k <= len(self.actions):
            raise UserError(f"step {k} is not in the run (it has steps 0 to {len(self.actions)})")
        state = self.states[k]
        if self._view[0] is state and self._view[1] == k:  # asked again for the same step (page_json)
            return self._view[2]
        self._view = (state, k, self._view_of(k, state))
        return self._view[2]

    def view_json(self, k: int) -> str:
        """``view(k)`` as JSON text: what the panel shows when the player's slider is at step k."""
        return json.dumps(self.view(k))

    def _view_of(self, k: int, state) -> dict:
        last = self.actions[k - 1] if k else None
        v = self.violations[k]
        enabled = [] if self.over(k) else self.model.actions(state)
        movers = {a.actor for a in enabled}
        return {
            "step": k,
            "steps": len(self.actions),
            "actor": last.actor if last else None,
            "label": last.label if last else None,
            "where": str(self.sources[last.label]) if last else None,
            "what": self._what(last.label) if last else None,
            "choices": [{"action": str(a), "actor": a.actor, "label": a.label, "text": self._choice_text(state, a),
                         "where": str(self.sources[a.label]), "what": self._what(a.label)} for a in enabled],
            "waiting": [{"actor": actor, "why": self.why(state, actor, k)} for actor in self._actors(state)
                        if actor not in movers and not self.model.done(state, actor)],
            "done": [actor for actor in self._actors(state) if self.model.done(state, actor)],
            # How an actor ended that did not run to its end ("killed by SIGSEGV"), as the player's banner says.
            "ended": {actor: how for actor in self._actors(state)
                      if self.model.done(state, actor) and (how := self._how_ended(state, actor))},
            # Under x86-TSO, the bound on each CPU's store buffer (the scenario's store_buffer): None under sc.
            "memory_model": recorded(self.model).memory_model,
            "violation": None if v is None else {**v._asdict(), "title": v.title, "new": self._new_violation(k)},
            "outcome": self.outcome(k),
            "schedule": self.schedule(k),
            "board": self.rows(k, self.board),
            # Without a board here, the state as the step table shows it (short columns), else whole.
            "state": None if self.board else {k: str(v) for k, v in (
                self.presentation.summary(state) or recorded(self.model).describe(state)).items()},
        }

    def _actors(self, state) -> tuple[str, ...]:
        """The threads and daemons of ``state``: under tso not the store buffers, whose drains are
        choices when they hold a store and the board draws them (an empty one is neither done nor waiting)."""
        if isinstance(self.model, StoreBuffered):
            return self.model.inner.actors(self.model.memory(state))
        return self.model.actors(state)

    def _choice_text(self, state, action: Action) -> str:
        """A choice as its button says it: a thread's next step, or under tso which CPU's oldest store
        reaches memory, written as the store-buffer panel draws it."""
        if isinstance(self.model, StoreBuffered) and action.label == DRAIN:
            return f"CPU {action.actor[2:]} drains {self.model.acts_on(state, action)} to memory"
        return f"{action.actor} → {action.label}"

    def why(self, state, actor: str, k: int = -1) -> str:
        """Why an unfinished actor has no enabled action in ``state`` (step k of the run): its next
        step, and the lock it waits on, or under tso the stores its CPU must drain first."""
        if self.over(k):
            return "the run is over"
        t = next((t for t in getattr(state, "threads", ()) if t.name == actor), None)
        if t is None or not t.frames:  # a daemon (the RCU kthread, a kdamond) with nothing to do
            return "idle: none of its steps has work to do"
        label = t.frames[0].label
        where = self.sources.get(label)
        said = f"blocked at {label}" + (f" in {where.function}" if where and where.function != label else "")
        fence = self._fenced(state, actor)
        if fence is not None:
            return (f"{said}: {label} is a full barrier on x86 (a locked instruction or smp_mb()), so it waits "
                    f"until CPU {fence}'s store buffer has drained")
        on = self.presentation.blocked_on(state, actor)
        return f"{said}: waits for {on}" if on else said

    def _fenced(self, state, actor: str) -> Optional[int]:
        """Under tso, the CPU of thread ``actor`` when its next step is a full barrier that the model
        enables on the CPU's view but its store buffer, not empty, holds back; else None."""
        m = self.model
        if not isinstance(m, StoreBuffered):
            return None
        view = m.view_of(state, actor)
        mem = m.memory(state)
        i = next(i for i, t in enumerate(mem.threads) if t.name == actor)
        cpu = m.cpu(mem, i)
        if not state[-1][cpu]:
            return None
        full = [a for a in m.inner.actions(view) if a.actor == actor and m.inner.ordering(view, a) == FULL]
        return cpu if full else None

    def _how_ended(self, state, actor: str) -> str:
        return display.of(self.model).how_ended(state, actor)

    def _what(self, label: str) -> str:
        return display.of(self.model).what(label)

    def _new_violation(self, k: int) -> bool:
        """True when step k is the one that broke the invariant (the moment to celebrate)."""
        v = self.violations[k]
        return v is not None and (k == 0 or self.violations[k - 1] != v)

    def outcome(self, k: int = -1) -> str:
        """How the run stands at step k (default: its last)."""
        v = self.violations[k]
        if v is not None and v.kind == HARM:
            return "deadlock" if v.invariant == "deadlock" else "violation"
        return "finished" if self.model.finished(self.states[k]) else "running"

    def schedule(self, k: Optional[int] = None) -> str:
        """The run's first k steps (default: all) as a scripted schedule: ``kstep simulate ... -P``
        replays it."""
        return " ".join(map(str, self.actions[:k]))

    def rows(self, k: int, sources: Optional[list[BoardSource]] = None) -> dict[str, dict]:
        """The rows of the boards and charts (or of ``sources``) at frame k of the run so far."""
        sources = self.board + self.charts if sources is None else sources
        return {src.name: rows(values[k]) for src, (values, rows, _, _) in zip(sources, self._frames(sources))}

    def _frames(self, sources: list[BoardSource]) -> list[tuple]:
        """Each source's frames over the run so far (computed once per step: the view and the columns
        both ask)."""
        k, state = len(self.actions), self.states[-1]
        if self._laid_at[0] is not state or self._laid_at[1] != k:
            trace = self.trace()
            self._laid_at = (state, k, {src.name: frames(src, trace, self._memo[src.name])
                                        for src in self.board + self.charts})
        return [self._laid_at[2][src.name] for src in sources]

    # -- the prefix as a trace ------------------------------------------------------------------
    def trace(self) -> Trace:
        """The run so far as a scripted trace (``script``: the schedule that replays it)."""
        v: Optional[Violation] = self.violations[-1]
        if v is not None:  # as simulate has it: any violation kept names the outcome
            outcome = "deadlock" if v.invariant == "deadlock" else "violation"
        else:
            outcome = "finished" if self.model.finished(self.states[-1]) else "schedule-end"
        return Trace(self.model.name, self.model.variant.name, self.scenario.name, self.scenario.config, "scripted",
                     None, list(self.states), list(self.actions), list(range(1, len(self.actions) + 1)),
                     outcome=outcome, violation=v, script=self.schedule())

    def columns(self) -> dict[str, Any]:
        """The trace columns of the prefix (step, tick, actor, label; each label's source and text under
        this variant; each step's call stack and object, as string indices) and the boards' and charts'
        frame-indexed columns (columns.py's store, start and stop), as the player ships them."""
        boards = {}
        shown = self.board + self.charts
        trace = self.trace()
        for src, (values, rows, key, kinds) in zip(shown, self._frames(shown)):
            fc = self._laid.get(src.name)
            if fc is None:
                fc = self._laid[src.name] = FrameColumns(src.name, kinds, rows, self._strings, key=key)
            if src.over is None:  # a board of the states: a step adds a frame (back and branch truncate)
                for value in values[len(fc):]:
                    fc.add(value)
            else:  # frames over the run (a chart's pages) may change anywhere as it grows
                fc.lay_out(values)
            boards[src.name] = fc.export()
        cols = trace.columns(self.model)
        where = [str(self.sources[label]) for label in cols["labels"]]
        known = None not in self._stacks  # as the player has it: no stack is better than a wrong one
        stack = [context.stack_line(s, self.calls) if known else "" for s in self._stacks]
        return {**cols, "where": where, "what": [self._what(label) for label in cols["labels"]], "board": boards,
                "stack": [self._strings.index(s) for s in stack], "on": [self._strings.index(s) for s in self._on],
                "strings": self._strings.table}

    def page_json(self) -> str:
        """``view()`` and what changed in ``columns()`` since the last call, as one JSON text: what the
        page takes after each move (``patched`` applies it).  The first call sends every column."""
        now = self.columns()
        out = json.dumps({"view": self.view(), "columns": change(self._sent, now)})
        self._sent = _copy(now)
        return out


def change(old: dict, new: dict) -> dict:
    """What turns the columns ``old`` into ``new``: per key whose value differs, a dict's change, or
    for a list ``[kept, items]`` (keep its first ``kept`` items, then append ``items``), for any other
    value ``[value]``, for a key ``new`` lacks ``[]``."""
    out: dict = {key: [] for key in old if key not in new}
    for key, v in new.items():
        was = old.get(key)
        if isinstance(v, dict):
            d = change(was if isinstance(was, dict) else {}, v)
            if d or not isinstance(was, dict):
                out[key] = d
        elif isinstance(v, (list, array)):
            same = isinstance(was, type(v))
            kept = _kept(was, v) if same else 0
            if not same or kept < len(v) or kept < len(was):
                out[key] = [kept, v[kept:].tolist() if isinstance(v, array) else v[kept:]]
        elif key not in old or was != v:
            out[key] = [v]
    return out


def patched(old: dict, d: dict) -> dict:
    """The columns ``old`` with the change ``d`` applied: what interactive.js does with each page_json."""
    out = dict(old)
    for key, v in d.items():
        if isinstance(v, dict):
            out[key] = patched(old[key] if isinstance(old.get(key), dict) else {}, v)
        elif not v:
            del out[key]
        elif len(v) == 1:
            out[key] = v[0]
        else:
            out[key] = list(old.get(key, ()))[:v[0]] + v[1]
    return out


def _kept(old, new) -> int:
    """How many first items ``new`` has in common with ``old`` (slices compare in C: a binary search)."""
    n = min(len(old), len(new))
    if old[:n] == new[:n]:
        return n
    lo, hi = 0, n  # old[:lo] == new[:lo], old[:hi] != new[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _copy(value: Any) -> Any:
    """The columns as they are now (the string table grows in place)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value[:] if isinstance(value, (list, array)) else value
