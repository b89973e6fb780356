"""Every variant is one of three kinds, and the kind is what the committed verdicts show it to be:
a bug is caught (explore finds a violation or a deadlock, or explore --liveness a livelock on some
bundled scenario, or, for a bug only weaker memory models show, its litmus test allows the bad outcome
on one of them), a release or an implementation never breaks an invariant on any of them."""

import pytest

from kstep.caught import caught, lively
from kstep.engine.liveness import LIVELOCK
from kstep.engine.model import BUG, KINDS, RELEASE
from kstep.memory import bundled
from kstep.models import MODELS

ALL = [(mech, name) for mech, cls in MODELS.items() for name in cls.variants]


@pytest.mark.parametrize("mech, name", ALL, ids=[f"{m}-{n}" for m, n in ALL])
def test_each_variant_has_one_kind_and_bugs_are_the_caught_ones(mech, name):
    variant = MODELS[mech].variants[name]
    assert variant.kind in KINDS
    assert variant.broken == (variant.kind == BUG)
    if variant.kind == RELEASE:
        assert variant.when, f"{mech} {name}: a release says which kernel version (or year) it is"
    shown = bool(caught(mech).get(name)) or LIVELOCK in lively(mech).get(name, {})
    if "litmus" in variant.params:  # a bug only a weaker memory model shows: its litmus test must show it
        shown = shown or any(r != "Never" for r in bundled.verdicts(variant.params["litmus"]).values())
    assert shown == variant.broken, (f"{mech} {name} ({variant.kind}): yet the verdicts "
                                     f"{'catch' if shown else 'never catch'} it")


def test_every_mechanism_defaults_to_a_release():
    for cls in MODELS.values():
        assert cls.variants[cls.default_variant].kind == RELEASE
