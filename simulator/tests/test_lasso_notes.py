"""A lasso says what it owes to something besides the mechanism as 6.12 runs it: a disabled
writer timeout, a 2014 code path, a schedule weak fairness allows that real timing rarely keeps."""

import pytest

from kstep.cli import main


def liveness_verdicts(capsys, mech, scenario, variant):
    argv = ["explore", mech, "--scenario", scenario, "--liveness"] + (["--variant", variant] if variant else [])
    assert main(argv) == 1
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("verdict: STARVATION")]


@pytest.mark.parametrize(("mech", "scenario", "variant", "note"), [
    ("vma-locks", "rwsem-reader-steals", None, '(handoff disabled: handoff_after = "never"'),
    ("qspinlock", "fair-qspinlock", "before-set-locked", "the 2014 trylock-or-pending cmpxchg loop's"),
    ("qspinlock", "fair-qspinlock", "tas", "(an adversarial schedule:"),
    ("qspinlock", "fair-qspinlock", "powerpc", "(an adversarial schedule:"),
])
def test_a_starvation_verdict_says_what_its_lasso_needs(capsys, mech, scenario, variant, note):
    verdicts = liveness_verdicts(capsys, mech, scenario, variant)
    assert verdicts and all(note in v for v in verdicts), verdicts


def test_a_lasso_of_the_mechanism_itself_carries_no_note(capsys):
    """head-ignores-pending's starvation is its own bug: nothing to excuse it."""
    verdicts = liveness_verdicts(capsys, "qspinlock", "fair-qspinlock", "head-ignores-pending")
    assert verdicts and not any(v.endswith(")") for v in verdicts), verdicts
