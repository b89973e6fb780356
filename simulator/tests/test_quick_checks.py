"""The quick checks that ``simulate`` and ``explore`` make (``engine.model.Quick``: only the transition
invariants that can fire on a step's label, and no state invariant whose declared ``reads`` the step
left alone) find, at every step, exactly the first violation that checking every invariant finds:
along seeded random runs of every mechanism under every variant and of every bundled scenario of its
default variant, and along the counterexamples of the small searches that the committed verdict
table (made with every invariant checked) records as violations, which the search must find again.
And a declaration the quick checks would trust wrongly is caught."""

import json
from importlib import resources

import pytest
from support import load

from kstep.engine import Invariant, Random, explore, simulate
from kstep.engine.model import Checks
from kstep.models import MODELS
from kstep.scenario_spec import scenario

STEPS = 300  # per run: enough to pass every kind of step of a scenario's threads at least once


def quick_agrees(model, s0, seed: int) -> int:
    """Compare quick and full checks over a seeded run (run on past assertions, to its first harm);
    return how many steps were compared."""
    return quick_agrees_along(model, s0, simulate(model, s0, Random(seed), check=False, max_steps=STEPS), seed)


def quick_agrees_along(model, s0, trace, seed=None) -> int:
    checks = Checks(model.invariants)
    steps = list(zip(trace.states, trace.actions, trace.states[1:]))
    harm_at = next((k for k, (s, a, t) in enumerate(steps) if checks.harm(s, a, t, 0)), len(steps))
    compared = 0
    for quick, full in ((checks.quick_harm, checks.harm), (checks.quick_assertion, checks.assertion)):
        passed = full(None, None, s0, 0) is None  # the quick checks assume the state stepped from passed
        for s, a, t in steps[:harm_at + 1]:
            want = full(s, a, t, 0)
            if passed:
                got = quick.step(s, a, t) or quick.state(s, t)
                assert got == (want and want.message), f"{model.name}/{model.variant.name} seed {seed} at {a}"
                compared += 1
            passed = want is None
    return compared


def runs():
    """(mechanism, scenario, variant): each variant with one scenario (in turn), and each scenario with
    the default variant."""
    out = []
    for mech in sorted(MODELS):
        names = scenario.bundled(mech)
        out += [(mech, name, MODELS[mech].default_variant) for name in names]
        out += [(mech, names[k % len(names)], variant)
                for k, variant in enumerate(MODELS[mech].variants) if variant != MODELS[mech].default_variant]
    return out


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_quick_checks_find_what_every_check_finds(mech):
    mine = [r for r in runs() if r[0] == mech]
    compared = 0
    for seed, (_, name, variant) in enumerate(mine):
        m, _, s0 = load(mech, name, variant)
        compared += quick_agrees(m, s0, seed)
    assert compared >= 10 * len(mine)  # the runs are not all cut short at their start


SMALL = 500  # the searches of at most this many states (about 80 of the table's violations, 10^4 states)


def small_violations():
    table = json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())["verdicts"]
    return [(mech, name, variant, row) for mech in table for name in table[mech]
            for variant, row in table[mech][name].items() if row["verdict"] == "violation" and row["states"] <= SMALL]


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_searches_find_the_recorded_violations_and_quick_checks_agree_along_them(mech):
    for _, name, variant, row in (r for r in small_violations() if r[0] == mech):
        m, _, s0 = load(mech, name, variant)
        r = explore(m, s0)
        assert (r.violation.invariant, r.violation.kind, len(r.counterexample), r.states) == \
            (row["invariant"], row["kind"], row["steps"], row["states"]), (name, variant)
        assert quick_agrees_along(m, s0, r.counterexample) >= len(r.counterexample)


def test_a_wrong_declaration_is_caught():
    """A transition invariant whose ``steps`` leave out the label it fires on, and a state invariant
    whose ``reads`` leave out the field it looks at: the quick checks skip them, and the comparison fails."""
    m, _, s0 = load("vma-locks", "android-app-launch")
    fires_on = Invariant("fires-on-mas-walk", "", lambda s, a, t: "walked" if a.label == "mas_walk" else None,
                         transition=True, steps=frozenset({"check_range"}))
    m.invariants = [fires_on]
    with pytest.raises(AssertionError, match="at F.:mas_walk"):
        quick_agrees(m, s0, 1)
    looks_at_threads = Invariant("f1-runs", "", lambda s: "F1 finished" if not s.threads[0].frames else None,
                                 reads=("mm",))  # F1's last step, vma_lock_success, leaves mm alone
    m.invariants = [looks_at_threads]
    with pytest.raises(AssertionError):
        quick_agrees(m, s0, 1)
