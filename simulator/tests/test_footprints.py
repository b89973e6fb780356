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
from support import breadth_first, bundled_runs, load, reachable

from kstep.engine import Action
from kstep.engine.model import Checks
from kstep.engine.reductions import changed, covers
from kstep.engine.por import Reduction
from kstep.models import make_model


class Known:
    """A model's answers about the states of one run, each worked out once: the checks of a state
    ask about its successors and theirs, and most states are the successor of several (the
    whole file took a fifth less CPU time so, qspinlock's largest runs a third).  ``known(s)`` is state ``s``'s
    ``Node``; equal states have one node."""

    def __init__(self, m, s0):
        self.m, self.s0 = m, s0
        self.nodes = {}
        self.state_invariants = m.state_invariants()
        self.index = {inv.name: k for k, inv in enumerate(self.state_invariants)}
        self.reduction = Reduction(m, s0)  # what it counts visible does not depend on the state

    def __call__(self, s):
        n = self.nodes.get(s)
        if n is None:
            n = self.nodes[s] = Node(self, s)
        return n

    def reachable(self):
        """The nodes of ``support.reachable``'s states, in its order.  A layer's nodes forget their
        answers once the layer after next is reached: their states are not asked about again, but
        as a successor's (the memo then is the visited set's size, not its size many times over)."""
        harm = Checks(self.m.invariants).harm
        layers = []
        for layer in breadth_first(self(self.s0), lambda n: ((a, n.step(a)) for a in n.enabled),
                                   lambda n, a, t: not harm(n and n.state, a, t.state, 0)):
            yield from layer
            layers.append(layer)
            if len(layers) > 3:
                for n in layers.pop(0):
                    n.__init__(self, n.state)


class Node:
    """One state and what the model says of it, asked lazily: a broken model past harm may fail on
    what no check asks."""

    __slots__ = ("known", "state", "_enabled", "_steps", "_fps", "_forgotten", "_verdicts", "_futures")

    def __init__(self, known, state):
        self.known, self.state = known, state
        self._enabled = self._forgotten = self._verdicts = None
        self._steps, self._fps, self._futures = {}, {}, {}

    @property
    def enabled(self):
        if self._enabled is None:
            self._enabled = self.known.m.actions(self.state)
        return self._enabled

    def step(self, a):
        """The node of the state step ``a`` leads to."""
        t = self._steps.get(a)
        if t is None:
            t = self._steps[a] = self.known(self.known.m.step(self.state, a))
        return t

    def footprint(self, a):
        if a not in self._fps:
            self._fps[a] = self.known.m.footprint(self.state, a)
        return self._fps[a]

    def future(self, actor):
        if actor not in self._futures:
            self._futures[actor] = self.known.m.future_footprint(self.state, actor)
        return self._futures[actor]

    @property
    def forgotten(self):
        if self._forgotten is None:
            self._forgotten = self.known.m.forget(self.state)
        return self._forgotten

    @property
    def verdicts(self):
        """Per state invariant (``Known.index``), whether it finds a problem in the state."""
        if self._verdicts is None:
            self._verdicts = tuple(bool(inv.check(self.state)) for inv in self.known.state_invariants)
        return self._verdicts


def within(locations, inner):
    """Does ``locations`` cover every location of ``inner``?"""
    return inner <= locations or all(covers(locations, x) for x in inner)


def footprint_problems(known, n):
    """Every way node ``n``'s state contradicts a declared footprint or live local, as sentences."""
    s = n.state
    out = []
    enabled = n.enabled
    steps = {a: n.step(a) for a in enabled}
    out += forget_problems(known, n, steps)
    fps = {a: n.footprint(a) for a in enabled}
    diffs = {a: changed(s, t.state) for a, t in steps.items()}
    for a, diff in diffs.items():
        fp = fps[a]
        if fp is not None:
            out += [f"{a} changed {loc}, undeclared" for loc in diff if not covers(fp.writes, loc)]
    for a in enabled:
        for b in enabled:
            if a.actor >= b.actor or fps[a] is None or fps[b] is None or fps[a].conflicts(fps[b]):
                continue
            ab, ba = steps[a], steps[b]
            if b not in ab.enabled or a not in ba.enabled:
                out.append(f"{a} and {b} are declared apart, yet one disables the other")
            elif ab.step(b) is not ba.step(a):  # one node per state: the same node or different states
                out.append(f"{a} and {b} are declared apart, yet do not commute")
    for t in s.threads:
        if not t.frames or any(a.actor == t.name for a in enabled):
            continue
        head = Action(t.name, t.frames[0][0])
        fp = n.footprint(head)
        if fp is None:
            continue
        for b in enabled:
            fb = fps[b]
            if fb is not None and not fb.conflicts(fp) and head in steps[b].enabled:
                out.append(f"{b} writes nothing {head} declares it reads, yet it unblocks {head}")
    fields = {a: {loc[0] for loc in diff} for a, diff in diffs.items()}
    for k, inv in enumerate(known.state_invariants):
        if inv.reads is None:
            continue
        reads = set(inv.reads)
        for a, t in steps.items():
            if not fields[a] & reads and t.verdicts[k] != n.verdicts[k]:
                out.append(f"{inv.name} changed its verdict across {a}, which wrote none of {inv.reads}")
    return out + reduction_problems(known, n, steps, fps)


def forget_problems(known, n, steps):
    """Every way node ``n``'s state (whose steps lead to the nodes ``steps``) contradicts the model's
    declaration of which locals are live, as sentences."""
    m, s, u = known.m, n.state, n.forgotten
    if u == s:
        return []
    nu = known(u)
    if nu.enabled != list(steps):
        return [f"forgetting dead locals changes the enabled steps: {list(steps)} vs {nu.enabled}"]
    out = []
    if m.finished(u) != m.finished(s):
        out.append("forgetting dead locals changes whether the run has finished")
    for inv, before, after in zip(known.state_invariants, n.verdicts, nu.verdicts):
        if before != after:
            out.append(f"forgetting dead locals changes {inv.name}'s verdict")
    for a, t in steps.items():
        tu = nu.step(a)
        if t.forgotten != tu.forgotten:
            out.append(f"{a} reads a local declared dead: once forgotten, its successors differ")
        for inv in m.transition_invariants():
            if bool(inv.check(s, a, t.state)) != bool(inv.check(u, a, tu.state)):
                out.append(f"forgetting dead locals changes {inv.name}'s verdict on {a}")
    return out


def reduction_problems(known, n, steps, fps):
    """What the partial-order reduction relies on and node ``n``'s state contradicts: invisible steps
    change no invariant's verdict; an actor's future footprint covers each of its steps and never grows."""
    m, s = known.m, n.state
    out = []
    for a, t in steps.items():
        if fps[a] is None or known.reduction.visible(a, fps[a]):
            continue
        for inv in m.invariants:
            if inv.transition and inv.check(s, a, t.state):
                out.append(f"{a} is counted invisible, yet {inv.name} fires on it")
            elif not inv.transition and n.verdicts[known.index[inv.name]] != t.verdicts[known.index[inv.name]]:
                out.append(f"{a} is counted invisible, yet {inv.name} changed its verdict across it")
    for actor in m.actors(s):
        future = n.future(actor)
        if future is None:
            continue
        for a in (a for a in steps if a.actor == actor and fps[a] is not None):
            if not within(future.reads, fps[a].reads) or not within(future.writes, fps[a].writes):
                out.append(f"{a}'s footprint is outside {actor}'s future footprint")
        for b, t in steps.items():
            later = t.future(actor)
            if later is None or not within(future.reads, later.reads) or not within(future.writes, later.writes):
                out.append(f"{actor}'s future footprint grew across {b}")
    return out


def declares_footprints(mech):
    """Does the mechanism's model declare a footprint or a local (the others have nothing to check)?"""
    m = make_model(mech)
    return bool(m.locals) or any(st.footprint for st in getattr(m, "_steps", {}).values())


# ~0.2 ms of checks per state, each memoised: past 1,000 states a run is make test's (the 33 runs of
# 1,000 to 3,000 states took 14 of make test-fast's 24 s here, the 200 smaller ones 10), past 10,000
# make test-heavy's (vma-locks alone has 3.4M states in its 153 runs, 154k of them in runs of at
# most 10,000)
FOOTPRINTED = [p for p in bundled_runs(small=1_000, every_variant=True, heavy=10_000)
               if declares_footprints(p.values[0])]


@pytest.mark.parametrize("mech,name,variant", FOOTPRINTED)
def test_every_step_keeps_to_its_footprint_and_live_locals(mech, name, variant):
    m, _, s0 = load(mech, name, variant)
    known = Known(m, s0)
    for n in known.reachable():
        assert footprint_problems(known, n) == [], n.state


def problems(m, s0, states):
    """Every problem ``footprint_problems`` finds in ``states`` (of the run from ``s0``)."""
    known = Known(m, s0)
    return [p for s in states for p in footprint_problems(known, known(s))]


def test_the_check_catches_an_undeclared_write_and_an_undeclared_read():
    m, _, s0 = load("qspinlock", "two-waiters")
    states = list(reachable(m, s0))
    assert not problems(m, s0, states)
    steps = m._steps
    steps["queued_spin_unlock"] = steps["queued_spin_unlock"]._replace(footprint=lambda s, i, arg: ((), ()))
    assert any("queued_spin_unlock changed ('words', 0), undeclared" in p for p in problems(m, s0, states))
    m, _, s0 = load("qspinlock", "two-waiters")
    m._steps["wait_locked_clear"] = m._steps["wait_locked_clear"]._replace(footprint=lambda s, i, arg: ((), ()))
    assert any("unblocks" in p or "commute" in p for p in problems(m, s0, states))


def test_the_check_catches_a_local_declared_dead_that_a_step_reads():
    m, _, s0 = load("qspinlock", "two-waiters")
    states = list(reachable(m, s0))
    assert sum(m.forget(s) != s for s in states) > len(states) / 2  # most states hold a dead val
    assert not problems(m, s0, states)
    m._dead["claim_cmpxchg"] = ("val",)  # as if the queue head's cmpxchg did not compare the word with val
    m._forget_plans.clear()
    assert any("claim_cmpxchg reads a local declared dead" in p for p in problems(m, s0, states))
