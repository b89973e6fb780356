"""The models checked against each other on one generated test (issue 24, section 1, "Inclusions").

On a test from :mod:`kstep.memory.generate`, every final state one model allows must be allowed by
the weaker one:

* sc by x86-TSO (TSO only adds the store buffer);
* x86-TSO by arm64, unless a thread has a release followed in program order by an acquire:
  arm64 orders ``stlr`` before a later ``ldar`` (RCsc), while x86's plain moves let the store sit
  in the buffer past the load;
* x86, arm64 and POWER by the LKMM, unless the LKMM flags a data race: the LKMM is meant to be
  no stronger than the hardware (tools/memory-model/Documentation/litmus-tests.txt, LIMITATIONS).

No inclusion between arm64 and POWER is claimed. And every model must give the same verdict and
the same final states, renamed, when the test's threads and locations are renamed.
"""

from __future__ import annotations

from collections.abc import Iterable

from kstep.engine.prng import SplitMix64
from kstep.memory import arm64, lkmm, power, sc, tso
from kstep.memory import verdict as verdicts
from kstep.memory.generate import LOCATIONS, Test, render
from kstep.memory.litmus import parse

MODELS = (sc, tso, arm64, power, lkmm)
# (weaker, stronger) pairs: every state the stronger allows, the weaker allows too
INCLUSIONS = (("tso", "sc"), ("arm64", "tso"), ("lkmm", "tso"), ("lkmm", "arm64"), ("lkmm", "power"))
# the renamed test's location names: none of them is one of LOCATIONS, and sorted they come in
# another order, so the events are numbered differently too
RENAMED = ("q", "n", "p", "m")


def release_then_acquire(test: Test) -> bool:
    """Whether a thread has a release (a store or an RMW's write) before an acquire in program order."""
    for ops in test.threads:
        names = [op[1] for op in ops if op[0] != "fence"]
        first = next((i for i, name in enumerate(names) if name.endswith("release")), None)
        if first is not None and any(name.endswith("acquire") for name in names[first + 1:]):
            return True
    return False


def renaming(test: Test, seed: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """A seeded shuffle of the threads (``order[i]`` is the old thread of the new Pi) and new
    location names (``names[i]`` replaces ``LOCATIONS[i]``)."""
    rng = SplitMix64(seed)
    return tuple(_shuffled(rng, list(range(len(test.threads))))), tuple(_shuffled(rng, list(RENAMED)))


def _shuffled(rng: SplitMix64, deck: list) -> list:
    for i in range(len(deck) - 1, 0, -1):  # Fisher-Yates
        j = rng.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def _renamed_state(state: Iterable[tuple[str, object]], order: tuple[int, ...], names: tuple[str, ...]) -> frozenset:
    new_of = {old: new for new, old in enumerate(order)}
    out = set()
    for place, value in state:
        tid, sep, reg = place.partition(":")
        if isinstance(value, str):  # an address: the name of the location it points at
            value = names[LOCATIONS.index(value)]
        out.add((f"{new_of[int(tid)]}:{reg}" if sep else names[LOCATIONS.index(place)], value))
    return frozenset(out)


def _shown(state) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(state))


def cross_check(test: Test, check=verdicts.check, rename_seed: int | None = None) -> list[str]:
    """Every disagreement on ``test``, one line each (none: the models agree).

    ``check(litmus, model)`` gives a model's verdict (the bench passes a timed one); the test is
    renamed with :func:`renaming` of ``rename_seed`` (by default the test's own seed).
    """
    order, names = renaming(test, test.seed if rename_seed is None else rename_seed)
    original, renamed = parse(render(test)), parse(render(test, order, names))
    got = {m.NAME: check(original, m) for m in MODELS}
    states = {name: {frozenset(s) for s in v.states} for name, v in got.items()}
    out = []
    for weak, strong in INCLUSIONS:
        if (weak, strong) == ("arm64", "tso") and release_then_acquire(test):
            continue
        if weak == "lkmm" and "data-race" in got["lkmm"].flags:
            continue
        for extra in sorted(states[strong] - states[weak], key=_shown):
            out.append(f"random-{test.seed}: {strong} allows {_shown(extra)}, which {weak} forbids")
    for m in MODELS:
        again = check(renamed, m)
        expected = {_renamed_state(s, order, names) for s in states[m.NAME]}
        if again.result != got[m.NAME].result or {frozenset(s) for s in again.states} != expected:
            out.append(f"random-{test.seed}: {m.NAME} says {got[m.NAME].result} with {len(expected)} final "
                       f"states, but {again.result} with {len(again.states)} once threads and locations are "
                       f"renamed (threads {order}, locations {names})")
    return out
