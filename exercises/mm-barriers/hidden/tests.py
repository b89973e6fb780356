"""Hidden tests of mm-barriers: the bad outcome forbidden on x86 and the variant's architectures,
at the least cost the committed table allows (kstep.grading.barriers).

CANARY-KSTEP-HIDDEN-mm-barriers: this line must never reach a student's output.
"""

from kstep.grading import barriers


def test_forbidden(ctx):
    barriers.check_forbidden(ctx)


def test_least_cost(ctx):
    barriers.check_least_cost(ctx)
