"""Predict exercises: a run's questions (kstep.engine.questions), answered by the student.

A predict exercise's variant is a scenario file of its ``data/`` folder, which carries
``[[questions]]``, and a seed.  The student runs ``kstep run MECH --scenario data/S.toml -s SEED``,
sees the step table and the questions with ``?``, and hands in ``answers.toml``::

    [answers]
    seq-after-epoch = 1
    holders = ["T1"]

Grading computes every answer from the same run (nobody writes answers down) and gives credit per
question answered right.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..engine import Random, questions, scenario, simulate
from ..models import make_model
from .harness import Fail


def run(mechanism: str, exercise_path: Path, scenario_file: str, seed: int):
    """(model, scenario, trace) of a variant's run: the scenario file under a seeded random schedule."""
    m = make_model(mechanism)
    sc = scenario.load(mechanism, m.scenario_schema, str(exercise_path / scenario_file))
    if sc.variant:
        m = make_model(mechanism, sc.variant)
    questions.validate(m, sc.questions)
    trace = simulate(m, m.initial(sc.config), Random(seed), scenario=sc.name, config=sc.config)
    return m, sc, trace


def answers(mechanism: str, exercise_path: Path, variant: dict) -> list[questions.Answer]:
    m, sc, trace = run(mechanism, exercise_path, variant["scenario"], variant["seed"])
    return questions.answers(m, sc.questions, trace)


def solution_toml(computed: list[questions.Answer]) -> str:
    """An answers.toml holding the computed answers (what a solution hands in)."""
    return "\n".join(["[answers]"] + [f"{a.question.id} = {_toml(a.value)}" for a in computed]) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value - questions.ULONG if value >= questions.ULONG // 2 else value)  # as the table shows it
    if isinstance(value, tuple):
        return "[" + ", ".join(json.dumps(n) for n in value) + "]"
    return json.dumps(value)


def check(ctx, mechanism: str) -> None:
    """The hidden test: credit for each question of the student's run answered right."""
    given = ctx.toml("answers.toml").get("answers")
    if not isinstance(given, dict):
        raise Fail("answers.toml has no [answers] table")
    computed = answers(mechanism, ctx.exercise.path, ctx.variant)
    wrong = [a.question.id for a in computed if a.question.id not in given or not questions.matches(a, given[a.question.id])]
    if wrong:
        right = len(computed) - len(wrong)
        raise Fail(f"{right} of {len(computed)} answers are right; not right: {', '.join(wrong)}",
                   credit=right / len(computed))


def well_formed(mechanism: str, folder: Path = Path(".")) -> list[str]:
    """What is wrong with the form of answers.toml (a missing id, a choice not offered, a number
    given as text), without revealing a single answer: the public test of predict exercises."""
    import tomllib

    variant = tomllib.loads((folder / "variant.toml").read_text())
    m = make_model(mechanism)
    sc = scenario.load(mechanism, m.scenario_schema, str(folder / variant["scenario"]))
    try:
        given = tomllib.loads((folder / "answers.toml").read_text()).get("answers", {})
    except (OSError, tomllib.TOMLDecodeError) as e:
        return [f"answers.toml: {e}"]
    names = {t["name"] for t in sc.config["threads"]} if "threads" in sc.config else set()
    out = []
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
