"""Partial-order reduction keeps what a search reports: the verdict, the shortest counterexample
and, field by field, every value a non-ghost part of the state takes (each thread's record, each
lock word, node and count), compared with the unreduced search (symmetry and the dead-variable
reduction off in both)."""

from typing import NamedTuple

import pytest
from support import load

from kstep.engine import HARM, Action, Footprint, Invariant, Model, Reductions, Variant, explore
from kstep.engine import reductions
from kstep.engine.explore import search

SMALLER_NESTING = ['cpus.2.locks=["B"]']  # C2 takes only B: the reduction finds ample sets
EQUIVALENT = [
    ("qspinlock", "two-waiters", None, ()),
    ("qspinlock", "nesting", "count-after-init", ()),
    ("qspinlock", "nesting", "count-after-init", SMALLER_NESTING),
    ("qspinlock", "nesting", "link-before-init", SMALLER_NESTING),
    ("rcu", "synchronize-rcu-vs-reader", "gp-ends-early", ()),
]


def projections(states):
    """Per non-ghost field (and per element of a tuple field): the set of values it takes."""
    out = {}
    for s in states:
        for name, value in zip(s._fields, s):
            if name.startswith("ghost"):
                continue
            if type(value) is tuple:
                for k, x in enumerate(value):
                    out.setdefault((name, k), set()).add(x)
            else:
                out.setdefault((name,), set()).add(value)
    return out


@pytest.mark.parametrize("mech,name,variant,overrides", EQUIVALENT)
def test_reduction_keeps_verdicts_counterexamples_and_projections(mech, name, variant, overrides):
    m, sc, s0 = load(mech, name, variant, overrides)
    full = search(m, s0)
    if full.violation is not None:  # the shortest counterexample again, after the reduced search
        short = explore(m, s0, scenario=sc.name, config=sc.config)
        assert (short.violation.invariant, short.violation.kind, len(short.counterexample)) == \
            (full.violation.invariant, full.violation.kind, len(full.counterexample))
        return
    seen = {True: [], False: []}
    runs = {por: search(m, s0, symmetry=False, dead_vars=False, por=por, visit=seen[por].append)
            for por in (False, True)}
    assert runs[True].verdict == runs[False].verdict == "clean" and runs[True].states <= runs[False].states
    assert projections(seen[True]) == projections(seen[False])


def test_no_por_switches_the_reduction_off():
    m, _, s0 = load("qspinlock", "two-waiters")
    assert search(m, s0, por=False).reduced == 0


class Apart(NamedTuple):
    a: int  # actor A's private counter
    flag: int  # what B sets and the invariant reads


class TwoActorsSemantics(Model):
    """A counts to 3 in steps no invariant sees; B sets the flag the invariant forbids, at once."""

    name = "two-actors"
    variants = {"only": Variant.implementation("only", "the one variant")}
    default_variant = "only"
    invariants = [Invariant("no-flag", "the flag stays down", lambda s: "flag up" if s.flag else None,
                            kind=HARM, reads=("flag",), steps=frozenset())]

    def initial(self, config):
        return Apart(0, 0)

    def actors(self, state):
        return ("A", "B")

    def actions(self, s):
        return [Action("A", "inc")] * (s.a < 3) + [Action("B", "boom")] * (not s.flag)

    def step(self, s, action):
        return s._replace(a=s.a + 1) if action.actor == "A" else s._replace(flag=1)

    def done(self, s, actor):
        return s.a == 3 if actor == "A" else bool(s.flag)

    def sources(self):
        return {}


class TwoActors(TwoActorsSemantics, Reductions):
    """The same, declaring what each step touches: partial-order reduction may apply."""

    def footprint(self, s, action):
        loc = frozenset({("a",)} if action.actor == "A" else {("flag",)})
        return Footprint(loc, loc)

    def future_footprint(self, s, actor):
        loc = frozenset({("a",)} if actor == "A" and s.a < 3 else {("flag",)} if actor == "B" and not s.flag else ())
        return Footprint(loc, loc)


def test_reduction_leaves_out_interleavings_and_the_shortest_counterexample_is_found_again():
    m = TwoActors()
    first = search(m, Apart(0, 0), por=True)  # A's invisible steps are ample: B's step comes last
    assert first.reduced == 3 and [str(a) for a in first.counterexample.actions] == ["A:inc"] * 3 + ["B:boom"]
    full = search(m, Apart(0, 0), por=False)
    assert full.reduced == 0 and len(full.counterexample) == 1
    r = explore(m, Apart(0, 0))
    assert [str(a) for a in r.counterexample.actions] == ["B:boom"]
    assert r.states == first.states + full.states


def test_a_model_that_declares_no_reductions_is_searched_in_full():
    m = TwoActorsSemantics()
    assert reductions.of(m) is reductions.NONE
    r = search(m, Apart(0, 0), por=True)
    assert r.reduced == 0 and [str(a) for a in r.counterexample.actions] == ["B:boom"]


def test_a_model_explored_on_another_scenario_first_gives_the_same_future_footprints():
    """One model instance explores scenario after scenario (the course's counterexample search, the
    notebooks): a context's future footprint reads the contexts nested with it, so the same record
    in a run without that nesting must not answer for it."""
    used, s0 = load("qspinlock", "three-waiters")[0], load("qspinlock", "three-waiters")[2]
    for t in s0.threads:
        used.future_footprint(s0, t.name)
    fresh, _, nested = load("qspinlock", "nesting")
    assert nested.nest and any(a == b for a, b in zip(s0.threads, nested.threads))  # a record both runs have
    assert [used.future_footprint(nested, t.name) for t in nested.threads] == [
        fresh.future_footprint(nested, t.name) for t in nested.threads]
