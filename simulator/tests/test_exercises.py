"""Every exercise: well formed, enough variants, and graded as it must be.

The solution scores full marks, the starter less, the starter holds none of the solution's own
text, and a submission that hard-codes the public answers (the committed solution of a data
exercise, handed in by another student; a code exercise's hidden/hardcoded/ submission) loses
hidden points.  Grading needs the sandbox (bubblewrap, from scripts/setup-system).
"""

import importlib.machinery
import importlib.util
import shutil
from pathlib import Path

import pytest

import labmake

from kstep.scenario_spec import questions
from kstep.grading import exercise, harness, predict, variants

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = sorted(p.name for p in (ROOT / "exercises").iterdir() if (p / "exercise.toml").is_file())
SECRET = "test-secret-of-the-exercise-tests"
MECHANISMS = ("rcu", "vma-locks", "qspinlock", "fork-batch")


def load(name):
    return exercise.load(ROOT / "exercises" / name)


@pytest.fixture(scope="module")
def solutions():
    """scripts/exercise-solutions, imported: run in this process, it shares the deciding steps'
    search from a scenario's start (kstep.grading.decided, the costly part) with the gradings here."""
    loader = importlib.machinery.SourceFileLoader("exercise_solutions", str(ROOT / "scripts" / "exercise-solutions"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def lab(ex):
    """The kernel lab, built (make is a no-op when it is), for exercises that build against it."""
    if not ex.kernel_lab:
        return ()
    labmake.make("-s").check_returncode()
    return (ROOT / "kernel-lab",)


def graded(names):
    """Exercises to grade, those that run qemu-user marked as such."""
    return [pytest.param(n, marks=pytest.mark.qemu) if load(n).kernel_lab else n for n in names]


def grade(ex, path, student=variants.EXAMPLE):
    return harness.grade(ex, path, student=student, secret=SECRET, read_only=lab(ex))


def hidden_score(g):
    return sum(t.score for t in g.tests if t.visibility == harness.HIDDEN)


def hidden_max(g):
    return sum(t.max_score for t in g.tests if t.visibility == harness.HIDDEN)


def test_ten_exercises_cover_every_mechanism_and_kind():
    loaded = [load(n) for n in EXERCISES]
    assert len(loaded) >= 10
    for mech in MECHANISMS:
        assert sum(e.mechanism == mech for e in loaded) >= 2, mech
    assert {e.kind for e in loaded} == set(exercise.KINDS)


@pytest.mark.parametrize("name", EXERCISES)
def test_exercise_is_well_formed(name):
    ex = load(name)
    assert variants.size(ex.variants) >= variants.MIN_VARIANTS
    readme = (ex.path / "README.md").read_text()
    assert "## Learning goals" in readme
    assert ("## Practice, not graded" if ex.practice else "## How it is graded") in readme
    names = ex.public_tests + [n for n, _ in harness.hidden_tests(ex)]
    assert sorted(names) == sorted(ex.points), "every test has points and every points entry a test"
    assert ex.public_tests and len(names) > len(ex.public_tests)
    for f in ex.submission:
        solution = ex.solution(f)
        own = exercise.solution_lines(solution)
        assert own, f"{f}: no text between the solution markers"
        starter = ex.starter(f)
        assert not [line for line in own if line in starter], f"{f}: the starter holds solution text"
        assert f"CANARY-KSTEP-SOLUTION-{name}" in solution and "CANARY" not in starter


@pytest.mark.slow  # grades every variant of each predict exercise: integration-sized
@pytest.mark.parametrize("name", [n for n in EXERCISES if load(n).kind == "predict"])
def test_predict_variants_ask_different_questions_and_solutions_are_current(name, solutions, capsys):
    """Every variant's run reaches every question, at least K variants differ in their answers, and
    the committed solution is what kstep computes for the example (not written by hand)."""
    ex = load(name)
    distinct = set()
    for v in variants.all_variants(ex.variants):
        got = predict.answers(ex.mechanism, ex.path, v)
        assert all(a.step is not None for a in got), (v, [a.question.id for a in got if a.step is None])
        distinct.add((v["scenario"],) + tuple(questions.text(a.value) for a in got))
    assert len(distinct) >= variants.MIN_VARIANTS
    assert solutions.main(["--check", name]) == 0, capsys.readouterr().out


@pytest.mark.slow  # three full gradings per exercise: integration-sized
@pytest.mark.parametrize("name", graded(EXERCISES))
def test_solution_full_starter_less_hardcoded_fails_hidden(name, tmp_path):
    ex = load(name)
    solution = ex.path / "solution"
    full = grade(ex, solution)
    assert full.score == full.max_score, [t for t in full.tests if not t.passed]
    starter = tmp_path / "starter"
    starter.mkdir()
    for f in ex.submission:
        (starter / f).write_text(ex.starter(f))
    assert grade(ex, starter).score < full.max_score
    hardcoded = ex.path / "hidden" / "hardcoded"
    student = next(s for s in (f"student{k}" for k in range(100))
                   if variants.for_student(ex, s, SECRET) != variants.for_student(ex, variants.EXAMPLE, SECRET))
    g = grade(ex, hardcoded if hardcoded.is_dir() else solution, student)
    assert hidden_score(g) < hidden_max(g), g.tests


def test_a_declared_check_is_written_as_a_public_test_and_a_wrong_kind_is_one_line(tmp_path):
    from kstep.errors import UserError
    from kstep.grading import ok

    ex = load("vma-predict")
    assert ex.checks == {"answers-complete": "predict-well-formed"} and "answers-complete" in ex.public_tests
    ex.write_checks(tmp_path / "tests")
    test = ok.load_test(tmp_path / "tests" / "answers-complete.py")
    assert test["name"] == "answers-complete"
    assert "predict.well_formed('vma-locks')" in test["suites"][0]["cases"][0]["code"]
    copy = tmp_path / "vma-predict"
    shutil.copytree(ex.path, copy)
    toml = (copy / "exercise.toml").read_text()
    (copy / "exercise.toml").write_text(toml.replace('"predict-well-formed"', '"answers-right"'))
    with pytest.raises(UserError, match="'answers-right' is not a kind of check"):
        exercise.load(copy)
