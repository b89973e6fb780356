"""What every mechanism's model tests share: loading a bundled scenario, and the check that an
invariant is violated by its breaker alone while the correct model of that scenario stays clean."""

from kstep.engine import explore, scenario
from kstep.models import MODELS, make_model


def load(mech, name, variant=None, overrides=()):
    """(model, scenario, initial state) of a bundled scenario."""
    m = make_model(mech, variant)
    sc = scenario.load(mech, m.scenario_schema, name, list(overrides))
    return m, sc, m.initial(sc.config)


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
    ok, _, s0 = load(mech, name)
    ok.invariants = m.invariants
    assert explore(ok, s0, harm_first=False).clean
