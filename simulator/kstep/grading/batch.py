"""``kstep grade EXERCISE --batch DIR --out OUT``: many submissions, none lost, none graded twice.

DIR holds one entry per student, named by the student's id: a folder, a zip archive ``<id>.zip``,
or a single file ``<id>.<ext>``.  Each student's results appear in ``OUT/<id>/`` whole or not at all
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


def entries(folder: Path) -> list[tuple[str, Path]]:
    """(student id, submission path) for every entry of the batch folder, by id."""
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        student = p.name[:-4] if p.name.endswith(".zip") else p.name if p.is_dir() else p.name.split(".")[0]
        if not STUDENT_ID.fullmatch(student):
            raise UserError(f"{p}: {student!r} is not a student id (letters, digits and . _ @ + -)")
        out.append((student, p))
    ids = [s for s, _ in out]
    twice = sorted({s for s in ids if ids.count(s) > 1})
    if twice:
        raise UserError(f"{folder}: two submissions of student {twice[0]!r}")
    return out


def grade_batch(exercise: Exercise, folder: Path, out: Path, *, secret: str, mode: str, jobs: int,
                read_only: tuple, progress: Optional[Callable[[str], None]] = None) -> tuple[int, int]:
    """Grade every student without results in ``out``; returns (graded now, already done)."""
    todo = [(s, p) for s, p in entries(folder) if not (out / s).exists()]
    done = len(entries(folder)) - len(todo)

    def one(item):  # each grading claims a sandbox uid of its own
        student, path = item
        g = grade(exercise, path, student=student, secret=secret, mode=mode, read_only=read_only)
        report.write_batch_entry(g, out)
        if progress:
            progress(f"{student}: {g.score:g}/{g.max_score:g}")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(one, todo):
            pass
    return len(todo), done


def say(line: str) -> None:
    print(f"grade: {line}", file=sys.stderr, flush=True)
