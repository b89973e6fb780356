"""Hidden test of damon-predict: each answer against the one computed from the student's run.

CANARY-KSTEP-HIDDEN-damon-predict: this line must never reach a student's output.
"""

from kstep.grading import predict


def test_answers(ctx):
    predict.check_values(ctx, "damon")
