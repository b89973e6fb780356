"""``kstep grade EXERCISE --batch DIR --out OUT``: many submissions, none lost, none graded twice.

DIR holds one entry per student, named by the student's id: a folder, a zip archive ``<id>.zip``,
or a single file ``<id>.<ext>``, taken as the exercise's file of that extension (``alice.py`` is
the ``sub.py`` of an exercise that takes one ``.py`` file).  Every entry is read as a submission
is (submission.py): a FIFO, a device or a damaged archive scores 0 with its line, and the batch
goes on to the next student.  Each student's results appear in ``OUT/<id>/`` whole or not at all
(report.write_batch_entry), so a batch stopped half way and started again skips exactly the
students already graded.  ``jobs`` graders run side by side, each with its own sandbox uid, so one
student's fork bomb counts against nobody else's process limit.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Optional

from ..errors import UserError
from . import report
from .exercise import Exercise
from .harness import grade
from .variants import STUDENT_ID


def entries(folder: Path, exercise: Optional[Exercise] = None) -> list[tuple[str, Path, Optional[str]]]:
    """(student id, submission path, the exercise's file it stands for) of every entry of the batch
    folder, by id.  An entry named ``<id>.zip``, or ``<id>.<ext>`` with the extension of one file
    of the exercise, is that student's archive or file (a folder of that name is then refused by
    the intake: a file was expected); any other folder is the submission of the student it names."""
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        name = as_name(exercise, p.name) if exercise else None
        folder_entry = p.is_dir() and not p.is_symlink() and name is None and not p.name.endswith(".zip")
        student = p.name if folder_entry else p.name.rsplit(".", 1)[0]
        if not STUDENT_ID.fullmatch(student):
            raise UserError(f"{p}: {student!r} is not a student id (letters, digits and . _ @ + -)")
        out.append((student, p, name))
    ids = [s for s, _, _ in out]
    twice = sorted({s for s in ids if ids.count(s) > 1})
    if twice:
        raise UserError(f"{folder}: two submissions of student {twice[0]!r}")
    return out


def as_name(exercise: Exercise, entry: str) -> Optional[str]:
    """The exercise's file an entry named ``<id>.<ext>`` stands for: the one it takes with that
    extension (None for a zip, or an extension that names no file or several)."""
    suffix = Path(entry).suffix
    same = [f for f in exercise.submission + exercise.optional if Path(f).suffix == suffix]
    return same[0] if suffix not in ("", ".zip") and len(same) == 1 else None


def grade_batch(exercise: Exercise, folder: Path, out: Path, *, secret: str, mode: str, jobs: int,
                read_only: tuple, progress: Optional[Callable[[str], None]] = None) -> tuple[int, int]:
    """Grade every student without results in ``out``; returns (graded now, already done)."""
    every = entries(folder, exercise)
    todo = [e for e in every if not (out / e[0]).exists()]

    def one(item):  # each grading claims a sandbox uid of its own
        student, path, name = item
        g = grade(exercise, path, student=student, secret=secret, mode=mode, read_only=read_only, as_name=name)
        report.write_batch_entry(g, out)
        if progress:
            progress(f"{student}: {g.score:g}/{g.max_score:g}")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(one, todo):
            pass
    return len(todo), len(every) - len(todo)


def say(line: str) -> None:
    print(f"grade: {line}", file=sys.stderr, flush=True)
