"""Public checks an exercise declares instead of writing them: ``[checks]`` in exercise.toml.

    [checks]
    answers-complete = "predict-well-formed"

Each kind is one public test in Otter's OK format (ok.py), the same for every exercise of its kind
but for the exercise's mechanism.  kstep writes it as ``tests/<name>.py`` wherever the exercise's
public tests go (a student's bundle, the grader's scratch folder), so students run it like any
other public test.  A kind checks the form of what the student hands in, never an answer, so it
gives nothing away: the library function it calls says what is malformed, line by line.
"""

from __future__ import annotations

import pprint

# kind -> (what it checks, in a comment the student reads; the grading module whose well_formed runs it;
# that call's further arguments)
KINDS = {
    "predict-well-formed": ("every question of your run has an answer and a deciding step of the right form "
                            "(not: the right ones)", "predict", ""),
    # damon- and fork-predict run one actor, whose answers are settled before its first step: no
    # deciding step is asked for, and they are practice (docs/instructor/grading.md)
    "predict-values-well-formed": ("every question of your run has an answer of the right form (not: the right "
                                   "answer)", "predict", ", decided=False"),
    "find-bug-well-formed": ("a line as path:NUMBER, and a schedule naming your scenario's actors (not: the "
                             "right ones)", "findbug", ""),
    "litmus-well-formed": ("answer.litmus parses and is your variant's test with only barriers or acquire/release "
                           "changed (not: that it forbids anything)", "barriers", ""),
    "find-barrier-well-formed": ("answer.toml names a line of mutant.litmus and a barrier that fits there, changing "
                                 "only ordering (not: that it forbids anything)", "missing", ""),
    "outcome-well-formed": ("answer.toml has a verdict for each model, reads and writes of test.litmus in rf and "
                            "co, and a model's axiom where forbidden (not: the right ones)", "outcomes", ""),
}


def ok_test(name: str, kind: str, mechanism: str, points: int) -> str:
    """The OK-format test file of a declared check."""
    what, module, more = KINDS[kind]
    code = f">>> # {what}\n>>> from kstep.grading import {module}\n>>> {module}.well_formed({mechanism!r}{more})\n[]"
    test = {"name": name, "points": points,
            "suites": [{"type": "doctest", "scored": True, "setup": "", "teardown": "",
                        "cases": [{"code": code, "hidden": False, "locked": False}]}]}
    return (f"# Written by kstep from exercise.toml's [checks]: {name} = {kind!r}\n"
            f"OK_FORMAT = True\n\ntest = {pprint.pformat(test, width=100, sort_dicts=False)}\n")
