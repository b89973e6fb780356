"""Symmetry reduction: one state per orbit of interchangeable CPUs, exactly."""

import pytest
from support import bundled_runs, load, reachable

from kstep.engine import explore
from kstep.engine.codec import Codec
from kstep.engine.symmetry import Symmetry

QSPINLOCK = [p for p in bundled_runs(small=1_000, every_variant=True) if p.values[0] == "qspinlock"]


@pytest.mark.parametrize("mech,name,variant", QSPINLOCK)
def test_orbits_of_the_representatives_cover_the_unreduced_state_space_exactly(mech, name, variant):
    m, _, s0 = load(mech, name, variant)
    codec = Codec(s0)
    group = Symmetry(m, s0, codec)
    if not group:  # no interchangeable units (powerpc's words name CPUs): each state is its own orbit
        assert group.canon(s0) == codec.encode(s0)
        return
    everything = list(reachable(m, s0))
    codes = {codec.encode(s) for s in everything}
    rep = {}  # encoding -> the representative of its orbit: each orbit is renamed out once, from its first state met
    for s in everything:
        code, canon = codec.encode(s), group.canon(s)
        if code in rep:
            assert canon == rep[code]  # one representative per orbit
            continue
        orbit = group.orbit(s)
        assert code in orbit and canon in orbit and orbit.isdisjoint(rep)  # the orbits partition the states
        assert orbit <= codes  # every renaming of a reached state is reachable
        rep.update(dict.fromkeys(orbit, canon))
    assert len(rep) == len(codes) == len(everything)  # the orbits of the representatives hold every state once


@pytest.mark.parametrize("name", ["three-waiters", "nesting"])
def test_renaming_the_encoding_gives_the_encoding_of_the_renamed_state(name):
    m, _, s0 = load("qspinlock", name)
    codec = Codec(s0)
    group = Symmetry(m, s0, codec)
    for s in reachable(m, s0):  # canon renames component indices; permute renames the state itself
        assert group.canon(s) == min(codec.encode(m.permute(s, p)) for p in group.perms(s))


@pytest.mark.parametrize("mech,name,variant", QSPINLOCK)
def test_symmetry_keeps_every_verdict_and_counterexample_length(mech, name, variant):
    m, sc, s0 = load(mech, name, variant)
    codec = Codec(s0)
    group = Symmetry(m, s0, codec)
    if not group:  # powerpc's: nothing to reduce, the search with symmetry is the one without
        assert group.canon(s0) == codec.encode(s0)
        return
    full = explore(m, s0, symmetry=False, scenario=sc.name, config=sc.config)
    reduced = explore(m, s0, scenario=sc.name, config=sc.config)
    assert reduced.verdict == full.verdict
    assert reduced.states <= full.states
    if full.violation is None:
        return
    assert (reduced.violation.invariant, reduced.violation.kind) == (full.violation.invariant, full.violation.kind)
    cex = reduced.counterexample
    assert len(cex) == len(full.counterexample)
    for s, a, t in zip(cex.states, cex.actions, cex.states[1:]):  # a concrete run of the model
        assert a in m.actions(s) and m.step(s, a) == t
    assert cex.states[0] == s0 and reduced.violation.message


def test_the_search_orders_the_units_of_each_concrete_state_once(monkeypatch):
    """A successor met before as the same concrete state (most are: breadth-first search meets a
    state once from each of its parents) is known by its encoding, not renamed again."""
    m, _, s0 = load("qspinlock", "three-waiters")
    ordered = []
    perms = Symmetry.perms
    monkeypatch.setattr(Symmetry, "perms", lambda self, s: ordered.append(s) or perms(self, s))
    r = explore(m, s0, por=False)
    assert r.clean and r.transitions > r.states
    assert len(ordered) == len(set(ordered))


def test_two_interchangeable_cpus_halve_the_stored_states():
    m, _, s0 = load("qspinlock", "set-locked-contended")  # C0 locks twice, C1 and C2 once
    assert [c for c in m.symmetric_units(s0) if len(c) > 1] == [(1, 2)]
    full, reduced = explore(m, s0, symmetry=False), explore(m, s0)
    assert full.clean and reduced.clean
    assert full.states / 2 <= reduced.states < full.states * 0.6
