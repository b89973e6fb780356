"""Schedulers and ``simulate``: who takes the next step.

- ``Scripted``: an explicit list of actors (OSTEP's ``-P``), e.g. ``"T1*3 W T1"``; an entry
  ``ACTOR:label`` takes that step (how a schedule names an optional step, such as a CPU's
  ``R:rcu_report_qs_rdp``); after the script the run goes on round-robin, so a worked
  interleaving still finishes.
- ``RoundRobin``: rounds in which every runnable actor takes one step, in actor order (an enabled
  optional step first); it counts the rounds each actor spent blocked, which is how kstep
  measures waiting.
- ``Random``: a uniformly chosen enabled action from the seeded SplitMix64.
- ``Replay``: a scripted schedule of exact actions (``ACTOR:label``): an explore counterexample.

Every scheduler says what it is with ``params()`` (kind, seed, script), which a trace records and
``scheduler_for`` turns back into the same scheduler.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Optional

from ..errors import UserError, shorten
from .model import HARM, Action, Checks, Model, State, deadlock, without_cyclic_gc
from . import timing
from .prng import SplitMix64
from .timed import Timed
from .trace import Trace

_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)(:[A-Za-z_][A-Za-z0-9_]*)?(?:\*([0-9]+))?")
MAX_REPEAT = 10_000  # the largest N in ACTOR*N
# The most steps a run someone asks for, a script or a trace file may have: a million steps are gigabytes of trace.
LONGEST_RUN = 1_000_000
# The cap on a run kept in memory only for what it counts, never written or shown (measure/, the lab's runs beside
# the C ports' and the real kernels'): such a run must finish, and the cap only stops one that never would.
COUNTED_RUN = 10_000_000


class RoundRobin:
    """Rounds in which every runnable actor takes one step, in actor order.

    A step of cost c keeps its actor busy for c rounds (busy is not blocked); steps of cost 0
    (CPU-local work) do not end the actor's turn.  With every cost 1 this is plain round-robin.
    An actor's enabled optional step is taken first in its turn, its next frame after it.
    """

    name = "round-robin"

    def __init__(self) -> None:
        self.round = 0
        self.cursor = 0
        self.blocked: Counter = Counter()
        self.busy: Counter = Counter()
        self._idle = 0  # actors passed in a row that neither moved nor were busy
        self._in_turn = False  # the actor at the cursor has taken free steps this turn
        self._tick = 0  # the round of the last chosen step
        self._end = 0  # the round by which every chosen step has finished

    def choose(self, model: Model, state: State, enabled: list[Action]) -> Optional[Action]:
        actors = model.actors(state)
        by_actor: dict[str, Action] = {}
        for a in enabled:
            if a.actor not in by_actor or model.is_optional(a) and not model.is_optional(by_actor[a.actor]):
                by_actor[a.actor] = a
        while self._idle < len(actors):
            actor = actors[self.cursor]
            if self.busy[actor] and not self._in_turn:
                self.busy[actor] -= 1
                self._idle = 0
                self._advance(len(actors))
                continue
            if actor in by_actor:
                action = by_actor[actor]
                cost = timing.of(model).cost(state, action)
                self._idle = 0
                self._tick = self.round
                self._end = max(self._end, self.round + max(cost, 1))
                if cost == 0:
                    self._in_turn = True
                else:
                    self.busy[actor] = cost - 1
                    self._advance(len(actors))
                return action
            if not self._in_turn and not model.done(state, actor):
                self.blocked[actor] += 1
            self._idle += 1
            self._advance(len(actors))
        return None

    def _advance(self, n: int) -> None:
        self._in_turn = False
        self.cursor += 1
        if self.cursor == n:
            self.cursor = 0
            self.round += 1

    @property
    def tick(self) -> int:
        return self._tick

    def stats(self) -> dict:
        return {"rounds": self._end, "blocked_rounds": dict(sorted(self.blocked.items()))}

    def params(self) -> dict:
        return {"kind": self.name, "seed": None, "script": None}


class Random:
    name = "random"

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = SplitMix64(seed)
        self.steps = 0

    def choose(self, model: Model, state: State, enabled: list[Action]) -> Optional[Action]:
        if not enabled:
            return None
        self.steps += 1
        return enabled[self.rng.below(len(enabled))]

    @property
    def tick(self) -> int:
        return self.steps

    def stats(self) -> dict:
        return {}

    def params(self) -> dict:
        return {"kind": self.name, "seed": self.seed, "script": None}


class Scripted:
    """Follow a list of actor names, then finish round-robin.

    An entry ``ACTOR`` takes the actor's next step (never an optional one); ``ACTOR:label`` takes
    the step ``label`` of that actor, which must be enabled.
    """

    name = "scripted"

    def __init__(self, schedule: str) -> None:
        self.text = schedule
        self.script = parse_schedule(schedule)
        self.pos = 0
        self.steps = 0
        self.then = RoundRobin()

    def choose(self, model: Model, state: State, enabled: list[Action]) -> Optional[Action]:
        action = self._next(model, state, enabled)
        if action is not None:
            self.steps += 1
        return action

    def _next(self, model: Model, state: State, enabled: list[Action]) -> Optional[Action]:
        if self.pos < len(self.script):
            entry = self.script[self.pos]
            actor, _, label = entry.partition(":")
            if actor not in model.actors(state):
                raise UserError(f"schedule entry {self.pos + 1} names {actor!r}, which is not an actor "
                                f"(actors: {', '.join(model.actors(state))})")
            self.pos += 1
            for a in enabled:
                if a.actor == actor and (a.label == label if label else not model.is_optional(a)):
                    return a
            if label and any(a.actor == actor for a in enabled):
                raise UserError(f"schedule entry {self.pos} names {entry}, which is not enabled at that point")
            if model.is_daemon(actor):  # a daemon never finishes: it waits for work
                why = "is idle (nothing it can do yet)"
            else:
                why = "has finished" if model.done(state, actor) else "is blocked"
            raise UserError(f"schedule entry {self.pos} names {actor}, which {why} at that point")
        return self.then.choose(model, state, enabled)

    @property
    def tick(self) -> int:
        return self.steps

    def stats(self) -> dict:
        return {}

    def params(self) -> dict:
        return {"kind": self.name, "seed": None, "script": self.text}



class Replay(Scripted):
    """An explore counterexample run again: its exact actions as ``ACTOR:label`` entries.  Its trace
    records max_steps = the number of actions, so no step follows them."""

    name = "explore"

    @classmethod
    def of(cls, actions: list[Action]) -> "Replay":
        return cls(" ".join(map(str, actions)))


def scheduler_for(params: dict):
    """The scheduler a trace's ``params`` describe (kind, seed, script), ready to run from the start."""
    kind, seed, script = params["kind"], params["seed"], params["script"]
    given = {"seed": seed is not None, "script": script is not None}
    needs = {"random": {"seed"}, "scripted": {"script"}, "explore": {"script"}, "round-robin": set(),
             "timed": {"script"}}[kind]
    for name, present in given.items():
        if present != (name in needs):
            raise UserError(f"a {kind} scheduler {'needs' if name in needs else 'has no'} {name}")
    if kind == "random":
        return Random(seed)
    if kind == "scripted":
        return Scripted(script)
    if kind == "explore":
        return Replay(script)
    if kind == "timed":
        return Timed.of(script)
    return RoundRobin()


def parse_schedule(text: str, limit: int = LONGEST_RUN) -> list[str]:
    """``"T1*3, W T1:store"`` -> ``["T1", "T1", "T1", "W", "T1:store"]``, at most ``limit`` entries."""
    out: list[str] = []
    for entry in text.replace(",", " ").split():
        m = _ENTRY.fullmatch(entry)
        if not m:
            raise UserError(f"schedule: {_shown(entry)} is not ACTOR, ACTOR:label or either with *COUNT")
        digits = m.group(3) or "1"
        # the length first: int() of thousands of digits is an error of its own
        if len(digits) > len(str(MAX_REPEAT)) or not 1 <= int(digits) <= MAX_REPEAT:
            raise UserError(f"schedule: count in {_shown(entry)} must be 1..{MAX_REPEAT}")
        if len(out) + int(digits) > limit:
            raise UserError(f"schedule: more than {limit:,} steps")
        out.extend([m.group(1) + (m.group(2) or "")] * int(digits))
    if not out:
        raise UserError("schedule: empty")
    return out


def schedule_text(actors: Iterable[str]) -> str:
    """Who took each step, as ``parse_schedule`` reads it back: ``["C0", "C1", "C1"]`` -> ``"C0 C1*2"``.
    ``-P`` replays it, and the C ports take it (qspinlock-torture's --schedule, fork-batch's schedule=)."""
    runs: list[list] = []
    for actor in actors:
        if runs and runs[-1][0] == actor:
            runs[-1][1] += 1
        else:
            runs.append([actor, 1])
    return " ".join(actor if n == 1 else f"{actor}*{n}" for actor, n in runs)


def _shown(entry: str) -> str:
    return repr(shorten(entry, 40))


@without_cyclic_gc
def simulate(
    model: Model,
    state: State,
    scheduler,
    *,
    max_steps: int = LONGEST_RUN,
    check: bool = True,
    scenario: str = "",
    config: Optional[dict] = None,
) -> Trace:
    """Run the model under a scheduler until it finishes, deadlocks, harms or hits max_steps; the
    trace records the scheduler's parameters, from which the same run can be had again.

    A broken assertion is recorded and the run goes on, so the harm it leads to (if any) is seen;
    the trace keeps the first harm, else the first assertion violation, with the step it was found at.
    """
    params = scheduler.params()
    trace = Trace(model.name, model.variant.name, scenario, config or {}, params["kind"], params["seed"], [state],
                  script=params["script"], max_steps=max_steps)
    checks = Checks(model.invariants if check else ())
    # Each step starts from a state that passed every check still made (a harm ends the run, and
    # once an assertion is broken no other is sought), as the quick checks assume.
    harm_on, harm_state = checks.quick_harm.on_label, checks.quick_harm.state
    assert_on, assert_state = checks.quick_assertion.on_label, checks.quick_assertion.state
    actions, ticks, states = trace.actions, trace.ticks, trace.states
    actions_of, step, choose = model.actions_along(), model.step, scheduler.choose
    trace.violation = checks.after(None, None, state, 0)
    k = 0  # steps taken
    while trace.violation is None or trace.violation.kind != HARM:
        enabled = actions_of(state)
        if enabled and k >= max_steps:  # a run that ends at the limit still ends
            trace.outcome = "max-steps"
            break
        action = choose(model, state, enabled)
        if action is None:
            trace.outcome = "finished" if model.finished(state) else "deadlock"
            if trace.outcome == "deadlock" and check:
                trace.violation = deadlock(deadlock_message(model, state), k)
            break
        ticks.append(scheduler.tick)
        nxt = step(state, action)
        actions.append(action)
        states.append(nxt)
        k += 1
        if not check:  # a plain run (bench, -c answers) asks no invariant at all
            pass
        elif harm_on[action[1]](state, action, nxt) or harm_state(state, nxt):
            trace.violation = checks.harm(state, action, nxt, k)
        elif trace.violation is None and (assert_on[action[1]](state, action, nxt) or assert_state(state, nxt)):
            trace.violation = checks.assertion(state, action, nxt, k)
        state = nxt
    if trace.violation is not None:
        trace.outcome = "deadlock" if trace.violation.invariant == "deadlock" else "violation"
    trace.stats = scheduler.stats()
    return trace


def deadlock_message(model: Model, state: State) -> str:
    stuck = [a for a in model.actors(state) if not model.done(state, a)]
    return f"no actor can move; still waiting: {', '.join(stuck)}"
