"""Predict exercises: a run's questions (kstep.scenario_spec.questions), answered by the student.

A predict exercise's variant is a scenario file of its ``data/`` folder, which carries
``[[questions]]``, and a seed.  The student runs ``kstep run MECH --scenario data/S.toml -s SEED``,
sees the step table and the questions with ``?``, and hands in ``answers.toml``::

    [answers]            # practice, not graded: `kstep run ... -c` prints these
    seq-after-epoch = 1
    holders = ["T1"]

    [decided]            # graded: the step after which no schedule could change the answer
    seq-after-epoch = 14
    holders = 9

The answers themselves are what ``-c`` prints, so grading them would grade copying.  What is graded
is what no kstep command prints: for each question anchored to a step, which step of the run
decided its answer (kstep.grading.decided).  Grading computes every answer and every deciding step
from the same run (nobody writes them down) and gives credit per question.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..engine.schedule import LONGEST_RUN
from ..experiment import open as open_experiment
from ..scenario_spec import questions
from . import decided
from .harness import Fail


def run(mechanism: str, exercise_path: Path, scenario_file: str, seed: int):
    """(model, scenario, trace) of a variant's run: the scenario file under a seeded random schedule."""
    ex = open_experiment(mechanism, str(exercise_path / scenario_file))
    questions.validate(ex.model, ex.scenario.questions)
    return ex.model, ex.scenario, ex.run(seed=seed, max_steps=LONGEST_RUN)


def answers(mechanism: str, exercise_path: Path, variant: dict) -> list[questions.Answer]:
    m, sc, trace = run(mechanism, exercise_path, variant["scenario"], variant["seed"])
    return questions.answers(m, sc.questions, trace)


def graded(qs) -> list:
    """The questions whose deciding step is graded: those anchored to a step of the run (a question
    about the start or the end of a run asks about every step at once)."""
    return [q for q in qs if q.at.label]


def deciding_steps(mechanism: str, exercise_path: Path, variant: dict) -> dict[str, int]:
    """Each graded question's deciding step in the variant's run (every one is reached: test_exercises)."""
    m, sc, trace = run(mechanism, exercise_path, variant["scenario"], variant["seed"])
    return {q.id: decided.decided(m, q, trace) for q in graded(sc.questions)}


def solution_toml(computed: list[questions.Answer], steps: dict[str, int]) -> str:
    """An answers.toml holding the computed answers and deciding steps (what a solution hands in)."""
    return "\n".join(["[answers]"] + [f"{a.question.id} = {_toml(a.value)}" for a in computed] +
                     ["", "[decided]"] + [f"{qid} = {step}" for qid, step in steps.items()]) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value - questions.ULONG if value >= questions.ULONG // 2 else value)  # as the table shows it
    if isinstance(value, tuple):
        return "[" + ", ".join(json.dumps(n) for n in value) + "]"
    return json.dumps(value)


def check(ctx, mechanism: str) -> None:
    """The hidden test: credit for each graded question whose deciding step the student named."""
    given = ctx.toml("answers.toml").get("decided")
    if not isinstance(given, dict):
        raise Fail("answers.toml has no [decided] table")
    steps = deciding_steps(mechanism, ctx.exercise.path, ctx.variant)
    wrong = [qid for qid, step in steps.items()
             if not (isinstance(given.get(qid), int) and not isinstance(given.get(qid), bool) and given[qid] == step)]
    if wrong:
        right = len(steps) - len(wrong)
        raise Fail(f"{right} of {len(steps)} deciding steps are right; not right: {', '.join(wrong)}",
                   credit=right / len(steps))


def check_values(ctx, mechanism: str) -> None:
    """The hidden test of a practice predict exercise, whose runs have one schedule only
    (damon-predict, fork-predict: every step is decided from the start): credit for each answer
    right.  ``-c`` prints these answers, so a release never makes it a grade (exercise.toml's
    ``practice``); ``kstep grade`` runs it to check a lab session's answers."""
    given = ctx.toml("answers.toml").get("answers")
    if not isinstance(given, dict):
        raise Fail("answers.toml has no [answers] table")
    computed = answers(mechanism, ctx.exercise.path, ctx.variant)
    wrong = [a.question.id for a in computed if a.question.id not in given or not questions.matches(a, given[a.question.id])]
    if wrong:
        right = len(computed) - len(wrong)
        raise Fail(f"{right} of {len(computed)} answers are right; not right: {', '.join(wrong)}",
                   credit=right / len(computed))


def well_formed(mechanism: str, folder: Path = Path("."), decided: bool = True) -> list[str]:
    """What is wrong with the form of answers.toml (a missing id, a choice not offered, a number
    given as text, a missing deciding step when ``decided`` steps are graded), without revealing a
    single answer: the public test of predict exercises."""
    import tomllib

    variant = tomllib.loads((folder / "variant.toml").read_text())
    sc = open_experiment(mechanism, str(folder / variant["scenario"])).scenario
    try:
        doc = tomllib.loads((folder / "answers.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        return [f"answers.toml: {e}"]
    given, steps = doc.get("answers", {}), doc.get("decided", {})
    if not isinstance(given, dict) or not isinstance(steps, dict):
        return ["answers.toml: [answers] and [decided] must be tables"]
    names = {t["name"] for t in sc.config["threads"]} if "threads" in sc.config else set()
    out = []
    for q in graded(sc.questions) if decided else ():
        v = steps.get(q.id)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            out.append(f"{q.id}: no deciding step in [decided] (a step number of the table, 0 for the start)")
    for q in sc.questions:
        if q.id not in given:
            out.append(f"{q.id}: no answer")
            continue
        v = given[q.id]
        if q.kind == "choose" and questions.text(v) not in q.choices:
            out.append(f"{q.id}: {v!r} is not one of {', '.join(q.choices)}")
        elif q.kind == "thread" and not (isinstance(v, list) and all(isinstance(n, str) for n in v)):
            out.append(f"{q.id}: a list of thread names, e.g. [\"T1\"] (or [] for none)")
        elif q.kind == "thread" and names and not set(v) <= names:
            out.append(f"{q.id}: {sorted(set(v) - names)[0]!r} is not a thread of this scenario")
        elif q.kind == "value" and not isinstance(v, (int, str)):
            out.append(f"{q.id}: a number, a word or true/false")
    return out
