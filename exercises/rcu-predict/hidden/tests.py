"""Hidden test of rcu-predict: for each question, the step of the student's run that decided its answer.

CANARY-KSTEP-HIDDEN-rcu-predict: this line must never reach a student's output.
"""

from kstep.grading import predict


def test_decided(ctx):
    predict.check(ctx, "rcu")
