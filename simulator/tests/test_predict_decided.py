"""Graded predict exercises grade which step decided each answer, which no kstep command prints.

The deciding step is checked against runs made independently of its search (seeded random
continuations of the student's run, answered by kstep.scenario_spec.questions), and a released
``qspin-predict`` bundle is worked as its README says, every suggested command included: what those
commands print does not earn full marks, while the computed deciding steps do.
"""

import csv
import re
import shlex
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from kstep.cli import main
from kstep.engine import Random, simulate
from kstep.scenario_spec import questions
from kstep.grading import decided, exercise, predict, variants

ROOT = Path(__file__).resolve().parents[2]
QSPIN = ROOT / "exercises" / "qspin-predict"
SECRET = "predict-decided-test-secret"
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


def readme_commands(readme: str) -> list[list[str]]:
    """The shell commands of a README's ``sh`` blocks, comments dropped."""
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    return [shlex.split(line, comments=True) for b in blocks for line in b.splitlines() if line.strip()]


def printed_answers(out: str) -> dict[str, tuple[str, list[int]]]:
    """What ``kstep run -c`` prints per question: its answer's text and every step number it names."""
    got = {}
    for qid, body in re.findall(r"\[([a-z0-9-]+)\](.*?)(?=\n  \[|\n\n)", out, re.S):
        m = re.search(r"answer: (.*?)  \(state after step (\d+)\)", body)
        got[qid] = (m.group(1), [int(m.group(2))])
    return got


def toml_value(q, text: str) -> str:
    if q.kind == "thread":
        names = [] if text == "none" else text.split(", ")
        return "[" + ", ".join(f'"{n}"' for n in names) + "]"
    return text if re.fullmatch(r"-?[0-9]+|true|false", text) else f'"{text}"'


def grade(config: Path, student: str, folder: Path, capsys) -> tuple[float, float]:
    assert main(["grade", "qspin-predict", str(folder / "answers.toml"), "--config", str(config),
                 "--student", student]) == 0
    out = capsys.readouterr().out
    score, most = re.search(r"qspin-predict \(version \d+\): ([0-9.]+)/([0-9.]+)", out).groups()
    return float(score), float(most)


def test_following_the_readme_with_every_command_it_suggests_cannot_earn_full_marks(tmp_path, capsys, monkeypatch):
    exercises = tmp_path / "exercises"
    exercises.mkdir()
    (exercises / "qspin-predict").symlink_to(QSPIN)
    config = tmp_path / "course.toml"
    config.write_text(f'name = "Predict course"\nsecret = "{SECRET}"\nexercises = "exercises"\n')
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([["student"], ["carol@uni.example"]])
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    bundle = tmp_path / "out" / "students" / "carol@uni.example" / "qspin-predict"
    variant = tomllib.loads((bundle / "variant.toml").read_text())

    # The README's command, for this student's scenario and seed, then again with -c as it suggests.
    (command,) = readme_commands((bundle / "README.md").read_text())
    assert command[:2] == ["kstep", "run"] and "-c" not in command
    argv = command[1:]
    argv[argv.index("--scenario") + 1] = variant["scenario"]
    argv[argv.index("-s") + 1] = str(variant["seed"])
    with monkeypatch.context() as m:  # run where the student runs it: in the bundle
        m.chdir(bundle)
        main(argv)
        asked = capsys.readouterr().out
        main(argv + ["-c"])
        revealed = capsys.readouterr().out
    printed = printed_answers(revealed)
    ex = exercise.load(QSPIN)
    model, sc, trace = predict.run("qspinlock", QSPIN, variant["scenario"], variant["seed"])
    graded = predict.graded(sc.questions)
    assert set(printed) == {q.id for q in sc.questions} and all(f"[{q.id}]" in asked for q in sc.questions)

    # Every copy of what was printed: the answers, and for the deciding steps each step number -c
    # names for the question, or 0 ("no schedule changes it").
    best = 0.0
    for pick in ("printed", "zero"):
        lines = ["[answers]"] + [f"{q.id} = {toml_value(q, printed[q.id][0])}" for q in sc.questions]
        lines += ["[decided]"] + [f"{q.id} = {printed[q.id][1][0] if pick == 'printed' else 0}" for q in graded]
        (bundle / "answers.toml").write_text("\n".join(lines) + "\n")
        score, most = grade(config, "carol@uni.example", bundle, capsys)
        best = max(best, score)
    assert best < most, "what kstep prints earned full marks"

    # The deciding steps kstep computes for this student's run earn them: the bar is reachable.
    steps = predict.deciding_steps(ex.mechanism, QSPIN, variant)
    (bundle / "answers.toml").write_text(predict.solution_toml(questions.answers(model, sc.questions, trace), steps))
    assert grade(config, "carol@uni.example", bundle, capsys) == (most, most)
    assert variant == variants.for_student(ex, "carol@uni.example", SECRET)
