"""Exhaustive breadth-first exploration with a visited set.

Breadth-first, one depth layer at a time, so the first violation reported has the shortest
possible trace: a deadlock found in layer d (length d) beats any violation reached from that layer
(length d + 1).  Harm is sought first: a broken assertion (a protocol rule) is noted and the
search goes on through it, so a counterexample shows what a user would suffer whenever anything
reachable does; only when no harm is reachable is the shortest broken assertion reported.
"Clean" is only ever claimed when the search exhausted the state space.

The visited set holds each state's compact encoding (``codec``) mapped to its parent's, full states
only for the layer being expanded and the next; a counterexample is rebuilt by decoding the chain
of parents and finding, at each link, the first enabled action that leads to the next state (the one
the search took, since it records a state at its first discovery and tries actions in order), and
that run is then made again by ``simulate`` through its exact actions, so the trace is the one a
reader of the file recomputes.
"""

from __future__ import annotations

import time
from hashlib import blake2b
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import reductions
from .codec import Codec
from .model import HARM, Checks, Model, Quick, State, Violation, deadlock, without_cyclic_gc
from .por import Reduction
from .schedule import Replay, deadlock_message, simulate
from .symmetry import Symmetry
from .trace import Trace


# A violation found and where its run ends (a stored state's encoding, or a _Tail), if any.
Found = Optional[tuple[Optional[Violation], Any]]


class FixedChoices:
    """What a model may declare of the choices its runs make that ``explore`` does not branch on (the
    scenario fixes them, as DAMON's seed fixes its random draws): an exhausted search is clean only
    for those, and says so.  An optional interface beside the semantics (``model.Model``)."""

    fixed_choices: str = ""  # those choices in a few words; none: ""


def fixed_choices(model: Any) -> str:
    """The choices ``model``'s runs fix and ``explore`` does not branch on, in a few words ("": none)."""
    return model.fixed_choices if isinstance(model, FixedChoices) else ""


@dataclass
class ExploreResult:
    states: int
    transitions: int
    depth: int
    exhausted: bool  # True only when every reachable state was expanded
    seconds: float
    violation: Optional[Violation] = None
    counterexample: Optional[Trace] = None
    interrupted: bool = False  # stopped by Ctrl-C: what it found so far
    reduced: int = 0  # states expanded through an ample set only (partial-order reduction)
    searches: int = 1  # 2: a reduced or hash-compacted search, then an exact one for the shortest counterexample

    @property
    def clean(self) -> bool:
        return self.exhausted and self.violation is None

    @property
    def harm(self) -> bool:
        """The counterexample reaches harm (or a deadlock), not only a broken assertion."""
        return self.violation is not None and self.violation.kind == HARM

    @property
    def verdict(self) -> str:
        """"clean" (exhausted, every invariant held), "violation", or "bounded" (never clean)."""
        if self.violation is not None:
            return "violation"
        return "clean" if self.exhausted else "interrupted" if self.interrupted else "bounded"


def explore(model: Model, initial: State, *, por: bool = True, **options) -> ExploreResult:
    """Search every interleaving breadth-first (see ``search`` for the options).

    Its reductions are on by default: ``por`` here, ``symmetry`` and ``dead_vars`` in ``search``.
    The verdict is the same without them, but ``model.step`` is called only for the steps the
    reduced search takes: code that wraps or counts ``model.step``, or reads every state through
    ``visit``, sees a subset of the interleavings unless it passes ``por=False, symmetry=False,
    dead_vars=False``.

    With ``por`` (and a model that declares footprints) each state expands only an ample set of its
    steps (``por.Reduction``).  That keeps every verdict but may find a longer counterexample first,
    so a violation is then searched for again without the reduction, only as deep as the first one,
    and the shortest is reported; ``states`` and ``transitions`` count both searches.  A search with
    ``fingerprints`` (which keeps no way back to the initial state) is followed the same way by an
    exact one when it finds a violation.
    """
    first = search(model, initial, por=por, **options)
    if first.violation is None or first.interrupted or not (first.reduced or first.counterexample is None):
        return first  # nothing was left out: its counterexample is the shortest
    options.pop("max_depth", None)
    options.pop("visit", None)  # the states stored are the first search's
    options["fingerprints"] = False
    again = search(model, initial, por=False, max_depth=first.violation.step, **options)
    if again.violation is None:
        return first
    again.states += first.states
    again.transitions += first.transitions
    again.seconds += first.seconds
    again.exhausted = first.exhausted
    again.searches = 2
    return again


@without_cyclic_gc
def search(
    model: Model,
    initial: State,
    *,
    max_states: int = 1_000_000,
    harm_first: bool = True,
    progress: Optional[Callable[[int, int, int, int], None]] = None,
    progress_every: float = 1.0,
    scenario: str = "",
    config: Optional[dict] = None,
    symmetry: bool = True,
    por: bool = False,
    max_depth: Optional[int] = None,
    visit: Optional[Callable[[State], None]] = None,
    fingerprints: bool = False,
    dead_vars: bool = True,
) -> ExploreResult:
    """One breadth-first search.

    With ``harm_first`` the search stops at the first harm or deadlock, which is therefore the
    shortest trace reaching harm; broken assertions are noted on the way (the shortest one kept)
    and reported only if no harm is found.  Without it, the first violation of any kind stops it.

    With ``symmetry`` (and a model that declares interchangeable units) one state per orbit is
    stored; ``states`` counts those, and the counterexample is replayed as a concrete run.  With
    ``dead_vars`` a state is stored with its dead locals forgotten (``Reductions.forget``): states that
    differ only in values no step will read again are stored once.  Either way the states expanded,
    checked and visited are the concrete ones the steps reach; only what is stored is reduced.

    It stores at most ``max_states`` states; then it expands the states it stored without storing
    more, and stops as bounded at the first successor it has not stored (if none appears, the
    search was exhausted after all).  ``max_depth`` expands no state deeper than that (deadlocks
    there are still seen).  ``visit`` receives every state stored (under a reduction, the first
    concrete state met of each one stored), and progress ``(states, transitions, depth, frontier)`` about once every
    ``progress_every`` seconds.  Ctrl-C stops it with what it found so far (``interrupted``).

    With ``fingerprints`` (SPIN's hash compaction) the visited set keeps a 64-bit hash of each
    state's encoding and no parent links: two states with one hash count as one, so such a search
    never proves a state space clean (``exhausted`` stays False), and a violation it finds has no
    counterexample (``explore`` searches again, exactly).
    """
    start = time.perf_counter()
    checks = Checks(model.invariants)
    # The hot loop calls these directly; each assumes the state stepped from passed every check
    # still made, which every state it expands did (a broken assertion noted turns those off).
    harm_on, harm_states = checks.quick_harm.on_label, checks.quick_harm.state
    assert_on, assert_states = checks.quick_assertion.on_label, checks.quick_assertion.state
    off = Quick((), ())  # the assertion checks once a broken one is noted
    declared = reductions.of(model)
    forget = declared.forget if dead_vars and declared.locals else None
    codec = Codec(initial)
    encode = codec.encode
    group = Symmetry(model, initial, codec) if symmetry else None
    known: Optional[set[bytes]] = None  # under symmetry: the concrete encodings of states met whose orbit is stored
    if group:
        encode = group.canon
        if not fingerprints:
            known = set()
            indices, pack, canon_of = codec.indices, codec.pack, group.canon_of
    if forget is not None:
        stored = encode

        def encode(state):
            return stored(forget(state))

    reduction = Reduction(model, initial) if por else None
    ample = reduction.candidates if reduction else None
    if fingerprints:
        exact = encode

        def encode(state):
            return int.from_bytes(blake2b(exact(state), digest_size=8).digest(), "little")

    code0 = encode(initial)
    if known is not None:
        known.add(codec.encode(forget(initial) if forget else initial))
    parent: dict = {code0: None}  # encoded state -> its parent's encoding
    transitions = 0
    reduced = 0
    depth = 0
    next_report = start + progress_every
    noted: Found = None  # (violation, end) of the shortest broken assertion, while harm is still sought

    def result(found=None, exhausted=False, interrupted=False):
        found = found or noted
        if found is None:
            return ExploreResult(len(parent), transitions, depth, exhausted, time.perf_counter() - start,
                                 interrupted=interrupted, reduced=reduced)
        violation, end = found
        if fingerprints:
            return ExploreResult(len(parent), transitions, depth, False, time.perf_counter() - start, violation,
                                 None, interrupted, reduced)
        tail = []
        if isinstance(end, _Tail):
            tail = [end.t]
            end = end.code
        chain = [end]
        while parent[chain[-1]] is not None:
            chain.append(parent[chain[-1]])
        targets = [codec.decode(c) for c in reversed(chain)][1:] + tail
        actions = _actions(model, checks, encode, initial, targets, violation)
        cex = simulate(model, initial, Replay.of(actions), max_steps=len(actions), scenario=scenario, config=config)
        seen = cex.violation and cex.violation._replace(message=violation.message)
        if seen != violation._replace(step=len(cex)):  # the trace must show what the search saw
            raise RuntimeError(f"explore found {violation}, but its counterexample run gives {cex.violation}")
        return ExploreResult(len(parent), transitions, depth, exhausted, time.perf_counter() - start,
                             cex.violation, cex, interrupted, reduced)

    if visit:
        visit(initial)
    v = checks.after(None, None, initial, 0)
    if v and (v.kind == HARM or not harm_first):
        return result((v, code0))
    if v:
        noted = (v, code0)
        assert_on, assert_states = off.on_label, off.state
    layer = [(initial, code0)]
    try:
        while layer:
            found: Found = None  # (violation, end) of length depth + 1, reported unless a deadlock is at depth
            bounded = False
            nxt_layer = []
            for s, code in layer:
                enabled = model.actions(s)
                if not enabled and not model.finished(s):
                    return result((deadlock(deadlock_message(model, s), depth), code))
                if depth == max_depth:
                    continue
                moves = None
                if ample:
                    for acts in ample(s, enabled):
                        moves = [(a, model.step(s, a)) for a in acts]
                        codes = [encode(t) for _, t in moves]
                        if not any(c in parent for c in codes) and len(set(codes)) == len(codes):  # C3
                            reduced += 1
                            break
                        moves = None
                for a, t in moves or ((a, model.step(s, a)) for a in enabled):
                    transitions += 1
                    if found is None:
                        if harm_on[a[1]](s, a, t):
                            found = (checks.harm(s, a, t, depth + 1), _Tail(code, a, t))
                            continue
                        if assert_on[a[1]](s, a, t):
                            broken = (checks.assertion(s, a, t, depth + 1), _Tail(code, a, t))
                            if not harm_first:
                                found = broken
                                continue
                            noted, assert_on, assert_states = broken, off.on_label, off.state
                    if known is None:
                        tcode = encode(t)
                    else:  # a state met before (most are: BFS meets each one from every parent) costs no renaming
                        u = forget(t) if forget else t
                        tints = indices(u)
                        concrete = pack(tints)
                        if concrete in known:
                            continue
                        tcode = canon_of(u, tints)
                    if tcode in parent:
                        if known is not None:
                            known.add(concrete)
                        continue
                    if len(parent) >= max_states:  # N stored: a state not stored ends the search, bounded
                        bounded = True
                        break
                    parent[tcode] = code
                    if known is not None:
                        known.add(concrete)
                    if visit:
                        visit(t)
                    if found is None:
                        if harm_states(s, t):
                            found = (checks.harm(s, a, t, depth + 1), tcode)
                            continue
                        if assert_states(s, t):
                            broken = (checks.assertion(s, a, t, depth + 1), tcode)
                            if not harm_first:
                                found = broken
                                continue
                            noted, assert_on, assert_states = broken, off.on_label, off.state
                    nxt_layer.append((t, tcode))
                if bounded:
                    break
                if progress and time.perf_counter() >= next_report:
                    progress(len(parent), transitions, depth, len(layer) + len(nxt_layer))
                    next_report = time.perf_counter() + progress_every
            if found:
                depth += 1
                return result(found)
            if bounded or depth == max_depth:
                return result()
            layer = nxt_layer
            if layer:
                depth += 1
    except KeyboardInterrupt:
        return result(interrupted=True)
    return result(exhausted=not fingerprints)


class _Tail:
    """The end of a counterexample whose last state was already reached another way: the step
    ``a`` from the stored state encoded ``code`` to ``t``."""

    def __init__(self, code, a, t):
        self.code, self.a, self.t = code, a, t


def _actions(model, checks, canon, initial, targets, violation) -> list:
    """The actions of a run from ``initial`` through ``targets`` (the stored states of a
    counterexample, orbit representatives under symmetry): at each step the first enabled action
    whose successor encodes as the next target (the last one must also show the violation), so the
    run is concrete even when the search stored only representatives."""
    cur, actions = initial, []
    for k, target in enumerate(targets, start=1):
        code = canon(target)
        last = k == len(targets)
        for a in model.actions(cur):
            t = model.step(cur, a)
            if canon(t) == code and (not last or violation.invariant == "deadlock"
                                     or _shows(checks, violation, cur, a, t)):
                break
        else:
            raise AssertionError(f"no step of the concrete run leads into the orbit of step {k}")
        actions.append(a)
        cur = t
    return actions


def _shows(checks, violation, s, a, t):
    """The violation of ``violation``'s invariant that the step (s, a, t) shows, or None."""
    for inv in checks.harm_steps + checks.assert_steps:
        if inv.name == violation.invariant and inv.check(s, a, t):
            return Violation(inv.name, inv.check(s, a, t), inv.kind)
    for inv in checks.harm_states + checks.assert_states:
        if inv.name == violation.invariant and inv.check(t):
            return Violation(inv.name, inv.check(t), inv.kind)
    return None
