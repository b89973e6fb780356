"""CANARY-KSTEP-HIDDEN-answer-ex: the grader's tests check this never reaches any output."""

from kstep.grading.harness import Fail


def test_answer(ctx):
    got = ctx.driver({"offset": ctx.variant["offset"]})
    if not isinstance(got, dict) or got.get("answer") != 42:
        raise Fail(f"answer() gave {got.get('answer') if isinstance(got, dict) else got!r}, not 42")


def test_answer_again(ctx):
    """The same question twice runs the submission once (ctx.driver remembers)."""
    test_answer(ctx)
