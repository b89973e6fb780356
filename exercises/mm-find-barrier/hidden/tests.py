"""Hidden tests of mm-find-barrier: the student's one change forbids the bad outcome on x86, arm64
and POWER, at the least cost the committed table allows (kstep.grading.missing).

CANARY-KSTEP-HIDDEN-mm-find-barrier: this line must never reach a student's output.
"""

from kstep.grading import missing


def test_restores(ctx):
    missing.check_restores(ctx)


def test_cheapest(ctx):
    missing.check_cheapest(ctx)
