"""``Model.actions_along``, the enabled set ``simulate`` keeps from one state to the next, gives at every
state of a run exactly what ``actions`` gives: along seeded random runs of every bundled scenario of
every mechanism under its default variant and of every other variant on one scenario, runs under the
tso memory model of the mechanisms that have one, and under a scripted run that unblocks a thread."""

import pytest
from support import load
from test_quick_checks import runs

import kstep
from kstep.engine import Random, simulate
from kstep.models import MODELS

STEPS = 300


def agrees(model, s0, trace) -> int:
    """Ask ``actions_along`` the states of ``trace`` in order; every answer must be ``actions``'; return
    how many were compared."""
    along = model.actions_along()
    for k, s in enumerate(trace.states):
        assert along(s) == model.actions(s), f"{model.name}/{model.variant.name} after {k} steps"
    return len(trace.states)


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_the_enabled_set_along_a_run_is_the_enabled_set(mech):
    mine = [r for r in runs() if r[0] == mech]
    compared = 0
    for seed, (_, name, variant) in enumerate(mine):
        m, _, s0 = load(mech, name, variant)
        compared += agrees(m, s0, simulate(m, s0, Random(seed), check=False, max_steps=STEPS))
    assert compared >= 10 * len(mine)


@pytest.mark.parametrize("mech, name", [("vma-locks", "munmap-vs-fault"), ("qspinlock", "two-waiters")])
def test_under_tso_too(mech, name):
    ex = kstep.open(mech, name).under("tso")
    for seed in range(3):
        assert agrees(ex.model, ex.start, simulate(ex.model, ex.start, Random(seed), check=False,
                                                   max_steps=STEPS)) > 10


def test_a_run_that_starts_over_or_jumps_is_answered_afresh():
    """Asked a state that is no successor of the one before (a new run, a rewind), it still answers right."""
    m, _, s0 = load("vma-locks", "rwsem-handoff")
    trace = simulate(m, s0, Random(3), check=False, max_steps=STEPS)
    along = m.actions_along()
    for s in trace.states[::-7] + trace.states[::5]:
        assert along(s) == m.actions(s)
