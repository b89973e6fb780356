"""Hidden tests of mm-predict: each model's verdict on the exists clause, and the execution that
reaches it (allowed) or the axiom its candidate breaks (forbidden), checked by the models
(kstep.grading.outcomes).

CANARY-KSTEP-HIDDEN-mm-predict: this line must never reach a student's output.
"""

from kstep.grading import outcomes


def test_verdicts(ctx):
    outcomes.check_verdicts(ctx)


def test_executions(ctx):
    outcomes.check_executions(ctx)
