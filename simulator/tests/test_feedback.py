"""Feedback that teaches (kstep.grading.feedback), on vma-start-read.

A submission whose recheck forgets ``up_read`` (one line of the solution) is the case the issue
names: its public test must name the invariant it breaks and leave the shortest counterexample in
a trace file that ``kstep show --steps`` replays, and its score must follow the protocol step by
step (it used to be 1/10).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kstep.cli import main
from kstep.grading import exercise, feedback, harness

ROOT = Path(__file__).resolve().parents[2]
EXERCISE = ROOT / "exercises" / "vma-start-read"


def without_up_read(folder: Path) -> Path:
    """The solution with the recheck's up_read left out: a reader gives up still holding the lock."""
    folder.mkdir()
    code = (EXERCISE / "solution" / "vma_read.py").read_text()
    assert code.count('Frame("up_read", v), ') == 1
    (folder / "vma_read.py").write_text(code.replace('Frame("up_read", v), ', ""))
    return folder


@pytest.mark.slow  # 5.5 s in session 16's quiet clean clone: make test runs it, make test-fast does not
def test_a_missing_up_read_is_named_shown_and_scored_per_step(tmp_path):
    ex = exercise.load(EXERCISE)
    g = harness.grade(ex, without_up_read(tmp_path / "sub"))
    tests = {t.name: t for t in g.tests}
    public = tests["explores-like-the-kernel"].output
    assert "your steps break the invariant read-locked-vma-unchanged" in public, public
    assert "kstep show counterexample.json --steps vma_read.py replays it" in public
    # the lockless check is right, the recheck is not: half of each explored scenario's points,
    # none of the public exploration's (a doctest passes or fails), all of the public fall-back's
    assert tests["falls-back-when-write-locked"].passed
    for name in ("races-of-your-variant", "other-scenarios", "v6-12-0-kernel"):
        t = tests[name]
        assert t.score == t.max_score / 2, t
        assert "1 of your 2 steps behave as Linux's" in t.output and "vma_start_read: as Linux's" in t.output
        assert "vma_start_read_recheck: your steps break the invariant" in t.output
    assert g.score == 1 + (4 + 2 + 1) / 2


def test_the_public_counterexample_opens_in_kstep_show(tmp_path, capsys):
    """What a student does with the public test's message, in a copy of the student bundle's files."""
    work = without_up_read(tmp_path / "bundle")
    for name in ("driver.py", "data", "tests"):
        src = EXERCISE / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    r = subprocess.run([sys.executable, "-m", "kstep.grading.ok", "tests/explores-like-the-kernel.py"], cwd=work,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and "read-locked-vma-unchanged" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "kstep", "show", "counterexample.json", "--steps", "vma_read.py"],
                       cwd=work, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr  # exit 1: the trace it replays breaks an invariant
    assert "harm: read-locked-vma-unchanged" in r.stdout and "vma_start_read_recheck" in r.stdout
    assert main(["show", str(work / "counterexample.json")]) == 2  # without --steps: one line, no traceback
    err = capsys.readouterr().err
    assert "unknown variant 'v6.12+steps'" in err and err.count("\n") == 1, err


def test_step_credit_shares_by_step_and_never_pays_in_full_for_a_wrong_whole():
    kernel = {"verdict": "clean", "invariant": None, "states": 10}
    broken = {"verdict": "violation", "invariant": "x", "message": "m", "states": 3, "interleaving": ["T:a"]}
    steps = ("a", "b", "c", "d")

    def asking(answers):
        return lambda names: answers[None if names is None else names[0]]

    assert feedback.step_credit(asking({None: kernel}), steps, kernel) == (1.0, "")
    credit, why = feedback.step_credit(asking({None: broken, "a": kernel, "b": broken, "c": kernel,
                                               "d": "your code exited with status 1"}), steps, kernel)
    assert credit == 0.5 and why.splitlines()[0].startswith("2 of your 4 steps behave as Linux's")
    assert "d: your code exited with status 1" in why and "b: your steps break the invariant x (m)" in why
    credit, why = feedback.step_credit(asking({None: broken, **{s: kernel for s in steps}}), steps, kernel)
    assert credit == 0.75 and why.startswith("each of your steps behaves as Linux's alone, but together")
