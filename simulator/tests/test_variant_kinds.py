"""Every variant is one of three kinds, and the kind is what the committed verdicts show it to be:
a bug is caught (explore finds a violation or a deadlock, or explore --liveness a livelock on some
bundled scenario, or, for a bug only weaker memory models show, its litmus test allows the bad outcome
on one of them), a release or an implementation never breaks an invariant on any of them."""

import re

import pytest

from kstep.caught import caught, lively
from kstep.engine.liveness import LIVELOCK
from kstep.engine.model import BUG, KINDS, RELEASE, by_kind
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


FIX = re.compile(r"[0-9a-f]{12,40}|\d+\.\d+(\.\d+)?(, \d+\.\d+(\.\d+)?)*")  # a commit id, or the releases that fixed it


@pytest.mark.parametrize("mech, name", ALL, ids=[f"{m}-{n}" for m, n in ALL])
def test_a_variant_is_listed_under_one_kind_and_a_bug_names_its_fix_or_why_not(mech, name):
    variant = MODELS[mech].variants[name]
    assert [kind for kind, names in by_kind(MODELS[mech].variants).items() if name in names] == [variant.kind]
    if variant.kind != BUG:
        assert not variant.unfixed, f"{mech} {name}: only a bug lacks a fix"
        return
    assert bool(variant.when) != bool(variant.unfixed), \
        f"{mech} {name}: a bug names the commit or releases that fixed it (fixed=...) or says why not (unfixed=...)"
    assert not variant.when or FIX.fullmatch(variant.when), \
        f"{mech} {name}: fixed={variant.when!r} is no commit id or release list"
