"""An exercise released to a small class by ``kstep release``, as an instructor does it (shared by
the memory-ordering exercises' tests)."""

import csv
from pathlib import Path

from kstep.cli import main
from kstep.grading import harness

STUDENTS = ["ada", "grace", "linus"]


def release(tmp: Path, exercise: Path, secret: str) -> tuple[Path, dict[str, Path]]:
    """Release ``exercise`` (a folder) to STUDENTS under ``tmp``: the release folder (its Gradescope
    zip made), and each student's bundle of the exercise."""
    (tmp / "exercises").mkdir()
    (tmp / "exercises" / exercise.name).symlink_to(exercise)
    config = tmp / "course.toml"
    config.write_text(f'name = "t"\nsecret = "{secret}"\nexercises = "exercises"\n')
    roster, out = tmp / "roster.csv", tmp / "out"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([["student", "name"]] + [[s, s] for s in STUDENTS])
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(out)]) == 0
    assert (out / "gradescope" / f"{exercise.name}.zip").is_file()
    return out, {s: out / "students" / s / exercise.name for s in STUDENTS}


def graded(exercise, folder: Path, student: str, secret: str) -> dict:
    """Each test of ``folder`` graded as ``student``'s submission of ``exercise``, by name."""
    return {t.name: t for t in harness.grade(exercise, folder, student=student, secret=secret).tests}
