"""Graded predict exercises grade which step decided each answer, which no kstep command prints.

The deciding step is checked against runs made independently of its search (seeded random
continuations of the student's run, answered by kstep.scenario_spec.questions), and a released
``qspin-predict`` bundle is worked as its README says, every suggested command included: what those
commands print does not earn full marks, while the computed deciding steps do.
"""

from pathlib import Path
from types import SimpleNamespace

import pytest
import readme_bundle

from kstep.engine import Random, simulate
from kstep.scenario_spec import questions
from kstep.grading import decided, exercise, predict, variants

ROOT = Path(__file__).resolve().parents[2]
QSPIN = ROOT / "exercises" / "qspin-predict"
CONTINUATIONS = 100


def answer_of(model, actions, states, q):
    (a,) = questions.answers(model, (q,), SimpleNamespace(actions=actions, states=states))
    return None if a.step is None else decided._key(a.value)


def continued(model, trace, k: int, seed: int, q):
    """The answer to ``q`` of the run that follows ``trace`` for k steps, then a seeded random schedule."""
    rest = simulate(model, trace.states[k], Random(seed))
    return answer_of(model, trace.actions[:k] + rest.actions, trace.states[:k] + rest.states, q)


def another_answer(model, trace, k: int, q, want) -> bool:
    """Is there a run that follows ``trace`` for k steps and answers ``q`` otherwise?  A plain search
    over whole runs, each answered by kstep.scenario_spec.questions (not by the search under test)."""
    stack = [(list(trace.actions[:k]), list(trace.states[:k + 1]))]
    seen = set()
    while stack:
        actions, states = stack.pop()
        got = answer_of(model, actions, states, q)
        enabled = model.actions(states[-1])
        if (got is not None or not enabled) and got != want:
            return True
        key = (states[-1], sum(a.label == q.at.label for a in actions))
        if got is not None or key in seen:
            continue
        seen.add(key)
        stack.extend((actions + [a], states + [model.step(states[-1], a)]) for a in enabled)
    return False


@pytest.mark.parametrize("scenario_file, seed", [("data/three-cpus.toml", 17), ("data/three-cpus.toml", 5),
                                                 ("data/irq-nesting.toml", 17), ("data/irq-nesting.toml", 40)])
def test_the_deciding_step_is_where_the_answer_stops_depending_on_the_schedule(scenario_file, seed):
    """From the deciding step on, every random continuation gives the run's answer; from the step
    before it, some run gives another (so the step is neither too late nor too early)."""
    model, sc, trace = predict.run("qspinlock", QSPIN, scenario_file, seed)
    for a in questions.answers(model, predict.graded(sc.questions), trace):
        k = decided.decided(model, a.question, trace)
        want = decided._key(a.value)
        assert all(continued(model, trace, k, s, a.question) == want for s in range(CONTINUATIONS)), (a.question.id, k)
        if k:
            assert another_answer(model, trace, k - 1, a.question, want), (a.question.id, k)


def test_following_the_readme_with_every_command_it_suggests_cannot_earn_full_marks(tmp_path, capsys, monkeypatch):
    r = readme_bundle.release(tmp_path, QSPIN, capsys)
    asked, revealed = readme_bundle.run_readme(r, capsys, monkeypatch)
    printed = readme_bundle.printed_answers(revealed)
    variant = r.variant
    ex = exercise.load(QSPIN)
    model, sc, trace = predict.run("qspinlock", QSPIN, variant["scenario"], variant["seed"])
    graded = predict.graded(sc.questions)
    assert set(printed) == {q.id for q in sc.questions} and all(f"[{q.id}]" in asked for q in sc.questions)

    # Every copy of what was printed: the answers, and for the deciding steps each step number -c
    # names for the question, or 0 ("no schedule changes it").
    best = 0.0
    for pick in ("printed", "zero"):
        lines = ["[answers]"] + [f"{q.id} = {readme_bundle.toml_value(q, printed[q.id][0])}" for q in sc.questions]
        lines += ["[decided]"] + [f"{q.id} = {printed[q.id][1][0] if pick == 'printed' else 0}" for q in graded]
        (r.bundle / "answers.toml").write_text("\n".join(lines) + "\n")
        status, said = readme_bundle.grade(r, "qspin-predict", capsys)
        score, most = readme_bundle.score(said, "qspin-predict")
        best = max(best, score)
    assert best < most, "what kstep prints earned full marks"

    # The deciding steps kstep computes for this student's run earn them: the bar is reachable.
    steps = predict.deciding_steps(ex.mechanism, QSPIN, variant)
    (r.bundle / "answers.toml").write_text(predict.solution_toml(questions.answers(model, sc.questions, trace), steps))
    status, said = readme_bundle.grade(r, "qspin-predict", capsys)
    assert status == 0 and readme_bundle.score(said, "qspin-predict") == (most, most)
    assert variant == variants.for_student(ex, readme_bundle.STUDENT, readme_bundle.SECRET)
