"""kstep.open, the one entry point: which variant it binds, what each way of running gives, and that
``import kstep`` stays light (the browser imports the engine without any model)."""

import subprocess
import sys

import pytest

import kstep
from kstep.engine import Random, RoundRobin, Scripted, explore, simulate
from kstep.errors import UserError
from kstep.models import make_model
from kstep.scenario_spec import scenario


def test_the_variant_is_the_one_asked_else_the_scenarios_own_else_the_default():
    assert kstep.open("qspinlock", "tas-starves").model.variant.name == "tas"  # the scenario names it
    assert kstep.open("qspinlock", "tas-starves", "ticket").model.variant.name == "ticket"
    assert kstep.open("qspinlock", "two-waiters").model.variant.name == "v6.12"
    ex = kstep.open("rcu", "grace-period-basics", overrides=["threads.0.sections=3"])
    assert ex.scenario.config["threads"][0]["sections"] == 3
    assert ex.start == ex.model.initial(ex.scenario.config)
    assert ex.variant("gp-ends-early").model.variant.broken and ex.variant("gp-ends-early").scenario is ex.scenario


def test_a_scenario_already_read_is_bound_as_it_is_not_read_again():
    sc = scenario.load("qspinlock", make_model("qspinlock").scenario_schema, "tas-starves", ["ticket_bits=3"])
    ex = kstep.open("qspinlock", sc, "ticket")
    assert ex.scenario is sc and ex.model.variant.name == "ticket"
    assert ex.start == kstep.open("qspinlock", "tas-starves", "ticket", ["ticket_bits=3"]).start
    assert kstep.open("qspinlock", sc).model.variant.name == "tas"  # the scenario's own, as when read by name
    with pytest.raises(UserError, match="read for qspinlock, not rcu"):
        kstep.open("rcu", sc)
    with pytest.raises(UserError, match="give its overrides when reading it"):
        kstep.open("qspinlock", sc, overrides=["ticket_bits=2"])


def test_each_way_of_running_is_the_engines_own():
    ex = kstep.open("vma-locks", "munmap-vs-fault")
    m = make_model("vma-locks")
    sc = scenario.load("vma-locks", m.scenario_schema, "munmap-vs-fault")
    s0 = m.initial(sc.config)
    for mine, sched in ((ex.run(seed=7), Random(7)), (ex.run(round_robin=True), RoundRobin()),
                        (ex.run(schedule="W T1"), Scripted("W T1"))):
        theirs = simulate(m, s0, sched, max_steps=sc.max_steps, scenario=sc.name, config=sc.config)
        assert mine.actions == theirs.actions and mine.states == theirs.states
        assert (mine.scheduler, mine.seed, mine.scenario) == (theirs.scheduler, theirs.seed, "munmap-vs-fault")
    assert ex.run(seed=7).actions != ex.run(seed=8).actions  # the seed is used, not a fixed schedule
    assert len(ex.run(seed=7, max_steps=3)) == 3


def test_explore_finds_what_the_engine_finds_and_a_bug_is_caught():
    bug = kstep.open("rcu", "synchronize-rcu-vs-reader", "gp-ends-early")
    r = bug.explore()
    direct = explore(bug.model, bug.start)
    assert (r.verdict, r.states, r.violation) == (direct.verdict, direct.states, direct.violation)
    assert r.violation.invariant == "no-use-after-free" and r.counterexample.scenario == "synchronize-rcu-vs-reader"
    assert bug.variant(None).explore().clean


def test_liveness_finds_the_starving_cpu():
    assert kstep.open("qspinlock", "tas-starves").liveness().lassos
    assert not kstep.open("qspinlock", "tas-starves", "ticket").liveness().lassos


@pytest.mark.parametrize("args, says", [(("nope", "x"), "unknown mechanism 'nope'"),
                                        (("rcu", "nope"), "unknown scenario 'nope'"),
                                        (("rcu", "grace-period-basics", "nope"), "unknown variant 'nope'")])
def test_a_bad_name_is_one_user_error(args, says):
    with pytest.raises(UserError, match=says):
        kstep.open(*args)


def test_one_scheduler_at_most():
    with pytest.raises(UserError, match="at most one"):
        kstep.open("rcu", "grace-period-basics").run(seed=1, round_robin=True)


def test_import_kstep_loads_no_model_until_open_is_used():
    code = ("import sys, kstep, kstep.engine; assert 'kstep.models' not in sys.modules; "
            "kstep.open; assert 'kstep.models' in sys.modules; assert 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
