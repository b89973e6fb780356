"""Find-the-bug exercises: more than a schedule.

A student gets a broken variant and a scenario (``case = [variant, scenario, budget]``) and hands in
``answer.toml``::

    line = "mm/memory.c:6276"         # the Linux 6.12 line the broken variant changes
    schedule = "T1*2 W*10 T1*9"       # or a trace.json written by kstep run/explore --json

Students have ``kstep explore``, which finds a shortest counterexample at once; so the schedule
must reach the harm (a harm invariant broken, or a deadlock) within ``budget`` context switches,
which explore's shortest-in-steps interleaving often exceeds, and it is re-verified here from the
actors it names (a trace's recorded states and verdict are not trusted), then replayed on v6.12,
where it must break nothing.  The line is checked against the exercise's keys
(``hidden/keys.toml``: the accepted line ranges of each variant's change).
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import NamedTuple, Optional

from ..engine import HARM, parse_schedule
from ..engine.model import Checks, Violation
from ..errors import UserError
from ..experiment import open as open_experiment
from ..models import MODELS
from .harness import Fail

# The longest schedule a find-the-bug answer may hold: a grading bound, far below the engine's
# LONGEST_RUN (what a run may take at all), since every submission is replayed on two variants and a
# schedule that needs more steps than this is no answer to a scenario of a few actors.
LONGEST_ANSWER = 2000
_LINE = re.compile(r"^([A-Za-z0-9_./-]+):([1-9][0-9]{0,6})$")


class Replay(NamedTuple):
    actions: list  # the steps taken
    harm: Optional[Violation]  # the first harm (or deadlock), with the step it happened at
    assertion: Optional[Violation]  # the first broken assertion
    stuck: Optional[str]  # why the schedule could not go on, if it could not


def switches(actors: list) -> int:
    """Context switches: how often the next step is another actor's."""
    return sum(a != b for a, b in zip(actors, actors[1:]))


def replay(model, state, actors: list) -> Replay:
    """Take each named actor's next step in turn, checking every step; stop at the first harm."""
    checks = Checks(model.invariants)
    taken, assertion = [], None
    for k, actor in enumerate(actors, start=1):
        enabled = [a for a in model.actions(state) if a.actor == actor]
        if not enabled:
            why = "has finished" if actor in model.actors(state) and model.done(state, actor) else \
                "is not an actor" if actor not in model.actors(state) else "is blocked"
            return Replay(taken, None, assertion, f"schedule entry {k} names {actor}, which {why} there")
        nxt = model.step(state, enabled[0])
        taken.append(enabled[0])
        harm = checks.harm(state, enabled[0], nxt, k)
        assertion = assertion or checks.assertion(state, enabled[0], nxt, k)
        state = nxt
        if harm:
            return Replay(taken, harm, assertion, None)
    if not model.actions(state) and not model.finished(state):
        return Replay(taken, Violation("deadlock", "no actor can move", HARM, len(taken)), assertion, None)
    return Replay(taken, None, assertion, None)


def fewest_switches(model, state) -> Optional[list]:
    """An interleaving reaching harm or a deadlock with the fewest context switches (0-1 BFS over
    states and the actor that moved last), as its list of actions; None if none reaches harm."""
    checks = Checks([i for i in model.invariants if i.kind == HARM])
    best = {(state, None): 0}
    parent: dict = {(state, None): None}
    todo = deque([(0, state, None)])
    found: Optional[tuple] = None  # (switches, the node before the last step, the last action)
    while todo:
        d, s, last = todo.popleft()
        if found is not None and d >= found[0]:
            break  # nodes come out in order of switches: nothing left can do better
        if best.get((s, last), d) < d:
            continue
        actions = model.actions(s)
        if not actions and not model.finished(s):
            found = (d, (s, last), None)
            continue
        for a in actions:
            cost = 0 if last in (None, a.actor) else 1
            t = model.step(s, a)
            if checks.harm(s, a, t, 0):
                if found is None or d + cost < found[0]:
                    found = (d + cost, (s, last), a)
                continue
            key = (t, a.actor)
            if d + cost < best.get(key, d + cost + 1):
                best[key] = d + cost
                parent[key] = ((s, last), a)
                (todo.appendleft if cost == 0 else todo.append)((d + cost, t, a.actor))
    if found is None:
        return None
    path, node = ([found[2]] if found[2] else []), found[1]
    while parent[node] is not None:
        node, a = parent[node]
        path.append(a)
    return path[::-1]


def schedule_text(actions: list) -> str:
    """Actions as a schedule: ``T1*3 W*4 T1``."""
    runs: list = []
    for a in actions:
        if runs and runs[-1][0] == a.actor:
            runs[-1][1] += 1
        else:
            runs.append([a.actor, 1])
    return " ".join(f"{who}*{n}" if n > 1 else who for who, n in runs)


def case(ctx) -> tuple[str, str, int, list]:
    """(broken variant, scenario, budget, scenario overrides) of the student's variant."""
    variant, scenario_name, budget = ctx.variant["case"]
    overrides = [f"pending_bits={ctx.variant['pending_bits']}"] if "pending_bits" in ctx.variant else []
    return variant, scenario_name, budget, overrides


def start(mechanism: str, variant: str, scenario_name: str, overrides: list = ()):
    ex = open_experiment(mechanism, scenario_name, variant, overrides)
    return ex.model, ex.start


def submitted_schedule(ctx) -> list:
    """The actors of the submitted schedule: trace.json's steps if handed in, else answer.toml's."""
    if ctx.has("trace.json"):
        try:
            data = json.loads(ctx.text("trace.json"))
            actors = [step["actor"] for step in data["steps"]]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError):
            raise Fail("trace.json is not a kstep trace (kstep run ... --json trace.json writes one)") from None
        if not all(isinstance(a, str) for a in actors):
            raise Fail("trace.json: a step's actor is not a name")
    else:
        text = ctx.toml("answer.toml").get("schedule")
        if not isinstance(text, str):
            raise Fail("answer.toml has no schedule (and there is no trace.json)")
        try:
            actors = parse_schedule(text)
        except UserError as e:
            raise Fail(f"answer.toml: {e}") from None
    if len(actors) > LONGEST_ANSWER:
        raise Fail(f"the schedule has {len(actors)} steps; at most {LONGEST_ANSWER}")
    return actors


def check_harm(ctx, mechanism: str) -> Replay:
    """The schedule reaches the harm on the broken variant within the budget."""
    variant, scenario_name, budget, overrides = case(ctx)
    m, s0 = start(mechanism, variant, scenario_name, overrides)
    actors = submitted_schedule(ctx)
    r = replay(m, s0, actors)
    if r.stuck:
        raise Fail(f"on {variant}: {r.stuck}", " ".join(map(str, r.actions)))
    if r.harm is None:
        more = f" (it breaks {r.assertion.invariant}, an assertion, but nothing a user would suffer)" \
            if r.assertion else ""
        raise Fail(f"on {variant}, {scenario_name}: the schedule reaches no harm{more}")
    used = switches([a.actor for a in r.actions])
    if used > budget:
        raise Fail(f"the schedule reaches {r.harm.title} after step {r.harm.step}, with {used} context switches; "
                   f"the budget is {budget}", " ".join(map(str, r.actions)))
    return r


def check_clean(ctx, mechanism: str) -> None:
    """The same schedule on Linux 6.12 breaks nothing (as far as 6.12 lets it run)."""
    variant, scenario_name, _, overrides = case(ctx)
    check_harm(ctx, mechanism)
    m, s0 = start(mechanism, MODELS[mechanism].default_variant, scenario_name, overrides)
    r = replay(m, s0, submitted_schedule(ctx))
    broken = r.harm or r.assertion
    if broken:
        raise Fail(f"on {m.variant.name} the same schedule breaks {broken.invariant} too: it shows a race of "
                   f"the kernel, not the bug of {variant}", " ".join(map(str, r.actions)))


def check_line(ctx, keys: dict) -> None:
    variant = case(ctx)[0]
    given = ctx.toml("answer.toml").get("line")
    m = _LINE.match(given.strip()) if isinstance(given, str) else None
    if not m:
        raise Fail('answer.toml: line must be "path/in/linux:NUMBER", e.g. "mm/memory.c:6276"')
    path, number = m.group(1).removeprefix("./"), int(m.group(2))
    key = keys[variant]
    if path != key["path"]:
        raise Fail(f"{path} is not the file {variant} changes")
    if not any(lo <= number <= hi for lo, hi in key["lines"]):
        raise Fail(f"{path}:{number} is in the right file, not at the line {variant} changes")


def well_formed(mechanism: str, folder=".") -> list[str]:
    """What is wrong with the form of answer.toml (not whether it is right): the public test."""
    import tomllib
    from pathlib import Path

    folder = Path(folder)
    variant = tomllib.loads((folder / "variant.toml").read_text())
    broken, scenario_name, _ = variant["case"]
    overrides = [f"pending_bits={variant['pending_bits']}"] if "pending_bits" in variant else []
    m, s0 = start(mechanism, broken, scenario_name, overrides)
    try:
        answer = tomllib.loads((folder / "answer.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        return [f"answer.toml: {e}"]
    out = []
    line = answer.get("line")
    if not isinstance(line, str) or not _LINE.match(line.strip()):
        out.append('line: "path/in/linux:NUMBER", e.g. "mm/memory.c:6276"')
    if (folder / "trace.json").exists():
        return out
    try:
        actors = parse_schedule(answer.get("schedule") or "")
    except UserError as e:
        return out + [f"schedule: {e}"]
    unknown = sorted(set(actors) - set(m.actors(s0)))
    if unknown:
        out.append(f"schedule: {unknown[0]} is not an actor of {scenario_name} ({', '.join(m.actors(s0))})")
    return out


def hidden_tests(mechanism: str, keys_path) -> tuple:
    """The three hidden tests of a find-bug exercise, given its keys.toml."""
    import tomllib
    from pathlib import Path

    keys = tomllib.loads(Path(keys_path).read_text())

    def test_line(ctx):
        check_line(ctx, keys)

    def test_reaches_the_harm(ctx):
        check_harm(ctx, mechanism)

    def test_clean_on_v6_12(ctx):
        check_clean(ctx, mechanism)

    return test_line, test_reaches_the_harm, test_clean_on_v6_12
