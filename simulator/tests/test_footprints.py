"""Footprints and live locals, checked on every reachable state of every bundled scenario: a step
changes only what it declares, two steps whose footprints are apart commute and neither enables nor
disables the other, a blocked thread stays blocked while others write nothing it reads, a state
invariant's verdict changes only with the fields it declares it reads, a step the partial-order
reduction counts as invisible changes no invariant's verdict, and an actor's future footprint covers
its step and never grows.  And the dead-variable reduction's premise: the state with its dead locals
forgotten (``Model.forget``) enables the same steps, leads to states equal to the state's own
successors once forgotten and gives every invariant the same verdict (test_dead_vars checks that
forgetting commutes with renaming interchangeable CPUs).  Generic: a model plugs in by declaring
footprints (an undeclared step may touch anything and is not checked) and locals."""

import pytest
from support import bundled_runs, load, reachable

from kstep.engine import Action
from kstep.engine.reductions import changed, covers
from kstep.engine.por import Reduction
from kstep.models import make_model


def footprint_problems(m, s):
    """Every way state ``s`` contradicts a declared footprint or live local, as sentences."""
    out = []
    enabled = m.actions(s)
    steps = {a: m.step(s, a) for a in enabled}
    out += forget_problems(m, s, steps)
    fps = {a: m.footprint(s, a) for a in enabled}
    for a, t in steps.items():
        fp = fps[a]
        if fp is not None:
            out += [f"{a} changed {loc}, undeclared" for loc in changed(s, t) if not covers(fp.writes, loc)]
    for a in enabled:
        for b in enabled:
            if a.actor >= b.actor or fps[a] is None or fps[b] is None or fps[a].conflicts(fps[b]):
                continue
            ab, ba = steps[a], steps[b]
            if b not in m.actions(ab) or a not in m.actions(ba):
                out.append(f"{a} and {b} are declared apart, yet one disables the other")
            elif m.step(ab, b) != m.step(ba, a):
                out.append(f"{a} and {b} are declared apart, yet do not commute")
    for t in s.threads:
        if not t.frames or any(a.actor == t.name for a in enabled):
            continue
        head = Action(t.name, t.frames[0][0])
        fp = m.footprint(s, head)
        if fp is None:
            continue
        for b in enabled:
            fb = fps[b]
            if fb is not None and not fb.conflicts(fp) and head in m.actions(steps[b]):
                out.append(f"{b} writes nothing {head} declares it reads, yet it unblocks {head}")
    for inv in m.state_invariants():
        if inv.reads is None:
            continue
        before = bool(inv.check(s))
        for a, t in steps.items():
            if not {loc[0] for loc in changed(s, t)} & set(inv.reads) and bool(inv.check(t)) != before:
                out.append(f"{inv.name} changed its verdict across {a}, which wrote none of {inv.reads}")
    return out + reduction_problems(m, s, steps, fps)


def forget_problems(m, s, steps):
    """Every way state ``s`` (whose steps lead to ``steps``) contradicts the model's declaration of
    which locals are live, as sentences."""
    u = m.forget(s)
    if u == s:
        return []
    if m.actions(u) != list(steps):
        return [f"forgetting dead locals changes the enabled steps: {list(steps)} vs {m.actions(u)}"]
    out = []
    if m.finished(u) != m.finished(s):
        out.append("forgetting dead locals changes whether the run has finished")
    for inv in m.state_invariants():
        if bool(inv.check(s)) != bool(inv.check(u)):
            out.append(f"forgetting dead locals changes {inv.name}'s verdict")
    for a, t in steps.items():
        tu = m.step(u, a)
        if m.forget(t) != m.forget(tu):
            out.append(f"{a} reads a local declared dead: once forgotten, its successors differ")
        for inv in m.transition_invariants():
            if bool(inv.check(s, a, t)) != bool(inv.check(u, a, tu)):
                out.append(f"forgetting dead locals changes {inv.name}'s verdict on {a}")
    return out


def reduction_problems(m, s, steps, fps):
    """What the partial-order reduction relies on and ``s`` contradicts: invisible steps change no
    invariant's verdict; an actor's future footprint covers each of its steps and never grows."""
    out = []
    red = Reduction(m, s)
    for a, t in steps.items():
        if fps[a] is None or red.visible(a, fps[a]):
            continue
        for inv in m.invariants:
            if inv.transition and inv.check(s, a, t):
                out.append(f"{a} is counted invisible, yet {inv.name} fires on it")
            elif not inv.transition and bool(inv.check(s)) != bool(inv.check(t)):
                out.append(f"{a} is counted invisible, yet {inv.name} changed its verdict across it")
    for actor in m.actors(s):
        future = m.future_footprint(s, actor)
        if future is None:
            continue
        for a in (a for a in steps if a.actor == actor and fps[a] is not None):
            if not all(covers(future.reads, x) for x in fps[a].reads) or \
                    not all(covers(future.writes, x) for x in fps[a].writes):
                out.append(f"{a}'s footprint is outside {actor}'s future footprint")
        for b, t in steps.items():
            later = m.future_footprint(t, actor)
            if later is None or not all(covers(future.reads, x) for x in later.reads) or \
                    not all(covers(future.writes, x) for x in later.writes):
                out.append(f"{actor}'s future footprint grew across {b}")
    return out


def declares_footprints(mech):
    """Does the mechanism's model declare a footprint or a local (the others have nothing to check)?"""
    m = make_model(mech)
    return bool(m.locals) or any(st.footprint for st in getattr(m, "_steps", {}).values())


# ~0.2 ms of checks per state: past 10,000 states a run is make test-heavy's (vma-locks alone has
# 3.4M states in its 153 runs, 154k of them in runs of at most 10,000)
FOOTPRINTED = [p for p in bundled_runs(small=3_000, every_variant=True, heavy=10_000)
               if declares_footprints(p.values[0])]


@pytest.mark.parametrize("mech,name,variant", FOOTPRINTED)
def test_every_step_keeps_to_its_footprint_and_live_locals(mech, name, variant):
    m, _, s0 = load(mech, name, variant)
    for s in reachable(m, s0):
        assert footprint_problems(m, s) == [], s


def test_the_check_catches_an_undeclared_write_and_an_undeclared_read():
    m, _, s0 = load("qspinlock", "two-waiters")
    states = list(reachable(m, s0))
    assert not any(footprint_problems(m, s) for s in states)
    steps = m._steps
    steps["queued_spin_unlock"] = steps["queued_spin_unlock"]._replace(footprint=lambda s, i, arg: ((), ()))
    assert any("queued_spin_unlock changed ('words', 0), undeclared" in p for s in states for p in footprint_problems(m, s))
    m, _, s0 = load("qspinlock", "two-waiters")
    m._steps["wait_locked_clear"] = m._steps["wait_locked_clear"]._replace(footprint=lambda s, i, arg: ((), ()))
    assert any("unblocks" in p or "commute" in p for s in states for p in footprint_problems(m, s))


def test_the_check_catches_a_local_declared_dead_that_a_step_reads():
    m, _, s0 = load("qspinlock", "two-waiters")
    states = list(reachable(m, s0))
    assert sum(m.forget(s) != s for s in states) > len(states) / 2  # most states hold a dead val
    assert not any(footprint_problems(m, s) for s in states)
    m._dead["claim_cmpxchg"] = ("val",)  # as if the queue head's cmpxchg did not compare the word with val
    m._forget_plans.clear()
    assert any("claim_cmpxchg reads a local declared dead" in p for s in states for p in footprint_problems(m, s))
