"""Dead-variable reduction (``explore``'s ``dead_vars``, on by default): a state is stored with its
dead locals forgotten, and that keeps every verdict, the length of every shortest counterexample and
every value the reachable states' live parts take; forgetting commutes with renaming CPUs.  Its
premise, that a state and the state with its dead locals forgotten have the same future, is checked
on every reachable state of every bundled scenario by test_footprints."""

import re
from pathlib import Path

import pytest
from support import load, reachable, variants

from kstep.cli import main
from kstep.engine import explore
from kstep.models import make_model

EQUIVALENT = ([("two-waiters", v) for v in sum(variants("qspinlock"), [])] +
              [(name, "v6.12") for name in ("three-waiters", "pending-path", "set-locked-contended")])


@pytest.mark.parametrize("name", ["three-waiters", "set-locked-contended", "nesting"])
def test_forgetting_commutes_with_renaming_interchangeable_cpus(name):
    """The search stores the orbit representative of the forgotten state, so one orbit must hold the
    forgotten versions of the states of one orbit."""
    m, _, s0 = load("qspinlock", name)
    classes = [c for c in m.symmetric_units(s0) if len(c) > 1]
    perms = []
    for cls in classes:  # in each class, every unit moves: its units in reverse order
        perm = list(range(m.unit_count(s0)))
        for old, new in zip(cls, reversed(cls)):
            perm[old] = new
        perms.append(tuple(perm))
    assert perms
    for s in reachable(m, s0):
        for perm in perms:
            assert m.forget(m.permute(s, perm)) == m.permute(m.forget(s), perm), (s, perm)


@pytest.mark.parametrize("name,variant", EQUIVALENT)
def test_the_reduction_keeps_verdicts_counterexamples_and_every_live_value(name, variant):
    m, sc, s0 = load("qspinlock", name, variant)
    full, fewer = [], []
    a = explore(m, s0, symmetry=False, por=False, dead_vars=False, visit=full.append, scenario=sc.name, config=sc.config)
    b = explore(m, s0, symmetry=False, por=False, visit=fewer.append, scenario=sc.name, config=sc.config)
    assert b.verdict == a.verdict and b.states <= a.states
    if a.violation is not None:
        assert (b.violation.invariant, b.violation.kind, len(b.counterexample)) == \
            (a.violation.invariant, a.violation.kind, len(a.counterexample))
        for s, act, t in zip(b.counterexample.states, b.counterexample.actions, b.counterexample.states[1:]):
            assert act in m.actions(s) and m.step(s, act) == t  # a concrete run, dead values and all
    else:
        assert {m.forget(s) for s in fewer} == {m.forget(s) for s in full}
        assert set(fewer) <= set(full)  # what the search visits is reachable as it is, not forgotten


def test_the_reduction_stores_fewer_states_and_the_flag_switches_it_off(capsys):
    m, _, s0 = load("qspinlock", "three-waiters")
    on, off = explore(m, s0), explore(m, s0, dead_vars=False)
    assert on.clean and off.clean and on.states * 2 < off.states
    counts = {}
    for flags in ([], ["--no-dead-vars"]):
        assert main(["explore", "qspinlock", "--scenario", "three-waiters", *flags]) == 0
        out = capsys.readouterr().out
        counts[bool(flags)] = int(out.split("states: ")[1].split()[0])
        assert ("dead locals forgotten: val" in out) != bool(flags)
    assert counts == {False: on.states, True: off.states}


@pytest.mark.slow
def test_the_chapter_s_four_cpu_search_gives_what_it_says(capsys):
    text = (Path(__file__).resolve().parents[2] / "docs" / "chapters" / "qspinlock.md").read_text()
    section = text.split("## Every interleaving of four CPUs")[1].split("\n## ")[0]
    command = re.search(r"```\n(kstep explore .*)\n```", section).group(1).split()
    states = int(re.search(r"clean after storing ([\d,]+) states", section).group(1).replace(",", ""))
    assert main(command[1:]) == 0
    out = capsys.readouterr().out
    assert f"states: {states} (one per symmetry orbit; interchangeable units: 0 1 2 3; dead locals forgotten: val)" in out
    assert "verdict: clean" in out and "partial-order reduction:" not in out  # it finds nothing to skip
    m = make_model("qspinlock")
    assert {"claim_cmpxchg", "wait_head"} <= set(m.sources()) and m._steps["claim_cmpxchg"].live == ("val",)
