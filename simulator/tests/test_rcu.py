"""The RCU model: gp_seq arithmetic as in kernel/rcu/rcu.h, and its invariants both ways."""

import pytest

from kstep.engine import Scripted, explore, scenario, simulate
from kstep.models.rcu import RcuModel, rcu_seq_snap

from support import assert_breaker_catches, load

MECH = "rcu"
SCENARIOS = scenario.bundled(MECH)
BREAKERS = {
    "grace-period-waits-for-readers": ("gp-ends-early", "grace-period-basics"),
    "callbacks-after-grace-period": ("early-callback", "grace-period-basics"),
    "no-use-after-free": ("early-callback", "synchronize-rcu-vs-reader"),
}



def test_rcu_seq_snap_waits_for_the_next_full_grace_period():
    assert [rcu_seq_snap(s) for s in (0, 1, 4, 5, 8)] == [4, 8, 8, 12, 12]


def test_grace_period_basics_frees_only_after_the_grace_period():
    m, sc, s0 = load(MECH, "grace-period-basics")
    tr = simulate(m, s0, Scripted(sc.schedule))
    assert tr.outcome == "finished"
    labels = [str(a) for a in tr.actions]
    gp_start, qs, gp_end, free = (labels.index(x) for x in
                                  ("rcu:rcu_gp_init", "rcu:rcu_qs", "rcu:rcu_gp_cleanup", "rcu:rcu_do_batch"))
    first_unlock = labels.index("R:rcu_read_unlock")
    assert gp_start < first_unlock < qs < gp_end < free
    assert [s.rcu.gp_seq for s in tr.states][-1] == 4


def test_a_callback_queued_during_a_grace_period_waits_for_the_next():
    m, sc, s0 = load(MECH, "call-rcu-callback")
    r = explore(m, s0)
    assert r.clean
    # Walk one run where the second call_rcu happens while a grace period is running.
    tr = simulate(m, s0, Scripted("R1 U U rcu U U"))
    queued = tr.states[6].rcu.callbacks
    assert [cb.wait for cb in queued] == [4, 8]


def test_synchronize_rcu_sleeps_until_its_wakeme_callback_runs():
    m, sc, s0 = load(MECH, "synchronize-rcu-vs-reader")
    tr = simulate(m, s0, Scripted(sc.schedule))
    labels = [str(a) for a in tr.actions]
    assert labels.index("U:wait_rcu_gp") > labels.index("rcu:rcu_do_batch") > labels.index("R:rcu_read_unlock")


@pytest.mark.parametrize("name", SCENARIOS)
def test_explore_exhausts_the_correct_model_cleanly(name):
    m, sc, s0 = load(MECH, name)
    r = explore(m, s0)
    assert r.exhausted and r.clean


@pytest.mark.parametrize("variant", [n for n, v in RcuModel.variants.items() if v.broken])
def test_explore_finds_each_broken_variant_in_every_scenario(variant):
    for name in SCENARIOS:
        m, sc, s0 = load(MECH, name, variant)
        r = explore(m, s0)
        # every broken RCU variant lets a reader touch freed memory, and explore shows that harm
        assert r.harm and r.violation.invariant == "no-use-after-free", (name, r.violation)
        assert len(r.counterexample) <= 12


def test_every_invariant_has_a_breaker():
    assert set(BREAKERS) == {i.name for i in RcuModel.invariants}


@pytest.mark.parametrize("invariant", sorted(BREAKERS))
def test_each_invariant_alone_catches_its_breaker(invariant):
    assert_breaker_catches(MECH, invariant, *BREAKERS[invariant])
