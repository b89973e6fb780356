"""An exercise released to a small class by ``kstep release``, as an instructor does it (shared by
the memory-ordering exercises' tests)."""

import csv
from pathlib import Path

from kstep.cli import main

STUDENTS = ["ada", "grace", "linus"]


def release(tmp: Path, exercise: Path, secret: str) -> tuple[Path, dict[str, Path]]:
    """Release ``exercise`` (a folder) to STUDENTS under ``tmp``: the release folder, and each
    student's bundle of the exercise."""
    (tmp / "exercises").mkdir()
    (tmp / "exercises" / exercise.name).symlink_to(exercise)
    config = tmp / "course.toml"
    config.write_text(f'name = "t"\nsecret = "{secret}"\nexercises = "exercises"\n')
    roster, out = tmp / "roster.csv", tmp / "out"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([["student", "name"]] + [[s, s] for s in STUDENTS])
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(out)]) == 0
    return out, {s: out / "students" / s / exercise.name for s in STUDENTS}
