"""What every mechanism's model tests share: loading a bundled scenario, and the check that an
invariant is violated by its breaker alone while the correct model of that scenario stays clean."""

import functools
from typing import Optional

import kstep
from kstep.engine import explore
from kstep.scenario_spec import scenario
from kstep.engine.model import Checks
from kstep.models import MODELS


def load(mech, name, variant=None, overrides=()):
    """(model, scenario, initial state) of a bundled scenario, under ``variant`` (None: the
    mechanism's default, even where the scenario names another)."""
    ex = kstep.open(mech, name, variant or MODELS[mech].default_variant, overrides)
    return ex.model, ex.scenario, ex.start


def variants(mech):
    """(correct variant names, broken variant names)."""
    all_ = MODELS[mech].variants
    return [n for n, v in all_.items() if not v.broken], [n for n, v in all_.items() if v.broken]


def labels_of(trace, actor):
    return [a.label for a in trace.actions if a.actor == actor]


def assert_breaker_catches(mech, invariant, variant, name):
    """Exploring with only ``invariant`` finds it violated on ``variant``; the correct model of the
    same scenario, checked the same way, is clean."""
    m, _, s0 = load(mech, name, variant)
    m.invariants = [i for i in MODELS[mech].invariants if i.name == invariant]
    r = explore(m, s0, harm_first=False)
    assert r.violation is not None and r.violation.invariant == invariant, r.violation
    assert correct_is_clean(mech, name)


@functools.cache
def correct_is_clean(mech, name):
    """The correct model of a bundled scenario, explored to its end, breaks none of its invariants
    (so none alone): one search per scenario and test process, where several breakers share it."""
    ok, _, s0 = load(mech, name)
    r = explore(ok, s0, harm_first=False)
    return r.exhausted and r.clean


def reachable(model, s0):
    """Every state reachable from ``s0`` without passing through harm, breadth-first: the states
    ``explore`` may store (it stops at the first harm; a broken model past harm may even fail)."""
    harm = Checks(model.invariants).harm
    for layer in breadth_first(s0, lambda s: ((a, model.step(s, a)) for a in model.actions(s)),
                               lambda s, a, t: not harm(s, a, t, 0)):
        yield from layer


def breadth_first(start, successors, passable):
    """``start`` and everything reachable from it by ``successors(x) -> ((step, y), ...)``, each once, a
    layer (a list, ``start`` alone first) at a time; ``y`` reached where ``passable(x, step, y)`` is false
    (``x`` and ``step`` None for ``start``) is in its layer but leads nowhere."""
    seen = {start}
    yield [start]
    layer = [start] if passable(None, None, start) else []
    while layer:
        new, nxt = [], []
        for x in layer:
            for step, y in successors(x):
                if y not in seen:
                    seen.add(y)
                    new.append(y)
                    if passable(x, step, y):
                        nxt.append(y)
        yield new
        layer = nxt


def committed_verdicts(mech):
    """The committed verdict table's rows of ``mech`` (verdicts.json, written by ``make verdicts``):
    scenario -> variant -> row."""
    import json
    from importlib import resources

    return json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())["verdicts"].get(mech, {})


def table_first(mech, variant, names, shows):
    """``names`` (bundled scenarios) with those whose committed row for ``variant`` ``shows(row)``
    first, fewest states first, then the rest in their order: a test that stops at the first
    scenario catching a bug goes straight to it, and searches the others to their end only if the
    table is out of date."""
    table = committed_verdicts(mech)
    rows = {n: table.get(n, {}).get(variant, {}) for n in names}
    return sorted(names, key=lambda n: (0, rows[n].get("states", 0)) if shows(rows[n]) else (1, 0))


@functools.cache
def symmetry_order(mech, name, variant) -> int:
    """How many states one stored state of the scenario's search stands for at most: the order of its
    symmetry group.  Kept: four test files ask for every scenario and variant when they are collected,
    in every worker."""
    from math import factorial, prod

    ex = kstep.open(mech, bundled_scenario(mech, name), variant)
    return prod(factorial(len(c)) for c in ex.model.symmetric_units(ex.start))


@functools.cache
def bundled_scenario(mech, name):
    """A bundled scenario as read: the same under every variant, and reading it (its TOML checked, its
    expectations compiled) took nine tenths of the time of collecting the tests that ask for every
    variant's symmetry order."""
    return scenario.load(mech, MODELS[mech].scenario_schema, name)


def bundled_runs(small: int, every_variant: bool = False, heavy: Optional[int] = None):
    """pytest params (mechanism, scenario, variant) of every bundled scenario under its default variant
    (or every variant), marked slow unless the committed verdicts show a search that exhausted the
    state space in at most ``small`` states, counted without symmetry (a stored state stands for at
    most the symmetry group's order of them; a rough count, since it also stands for every state
    that differs from it only in dead locals).  A scenario that says ``explorable = false`` (the table's "not
    explored": written for its scripted run, with no end to its state space) is left out, since these
    tests search every run unreduced.  With ``heavy``, a run of more states than that (or of no
    exhausted search) is marked ``heavy`` too: make test leaves it to make test-heavy."""
    import pytest

    out = []
    for mech in sorted(MODELS):
        table = committed_verdicts(mech)
        names = list(MODELS[mech].variants) if every_variant else [MODELS[mech].default_variant]
        for name in scenario.bundled(mech):
            for variant in names:
                row = table.get(name, {}).get(variant)
                if row is not None and row.get("verdict") == "not explored":
                    continue
                exhausted = row is not None and row.get("exhausted")
                count = row["states"] * symmetry_order(mech, name, variant) if exhausted else None
                marks = [pytest.mark.slow] if count is None or count > small else []
                if heavy is not None and (count is None or count > heavy):
                    marks.append(pytest.mark.heavy)
                out.append(pytest.param(mech, name, variant, id=f"{mech}-{name}-{variant}", marks=marks))
    return out
