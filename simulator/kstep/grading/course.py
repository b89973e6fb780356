"""The instructor's course configuration, and the release manifest that pins what was handed out.

    # course.toml: only the instructor has it (and the Gradescope autograder zips carry it)
    name = "Concurrent memory management, spring term"
    secret = "a long random string: it decides every student's variant"
    exercises = "exercises"        # the exercise folders, relative to this file
    id_field = "email"             # Gradescope's submission_metadata.json field the roster's ids are
    weak_sandbox = false           # Gradescope only: grade with the weaker "user" sandbox when
                                   # bubblewrap cannot run there (docs/instructor/gradescope.md)

A release's ``manifest.json`` records the kstep version and a fingerprint of its files, and each
exercise's version and fingerprint; grading with ``--manifest`` refuses to go on when anything it
would use differs, so a student is never graded against tests other than those released.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import NamedTuple

import kstep

from ..scenario_spec.scenario import Bool, Invalid, Key, Str, Table, read_toml
from ..errors import UserError
from ..files import SMALL_CAP, read_text
from .exercise import Exercise

SCHEMA = Table({
    "name": Key(Str(doc="the course's name", max_len=200)),
    "secret": Key(Str(doc="decides every student's variant; keep it private", max_len=500)),
    "exercises": Key(Str(doc="the folder of exercise folders, relative to this file", max_len=500), "exercises"),
    "id_field": Key(Str(("email", "sid", "id"), doc="which Gradescope user field the roster's ids are"), "email"),
    "weak_sandbox": Key(Bool(doc="on Gradescope, fall back to the weaker user sandbox"), False),
})
MIN_SECRET = 16


class Course(NamedTuple):
    name: str
    secret: str
    exercises: Path
    id_field: str
    weak_sandbox: bool


def load(path: str | Path) -> Course:
    path = Path(path)
    data = read_toml(read_text(path, SMALL_CAP, "course file"), str(path))
    try:
        c = SCHEMA.check(data, "")
    except Invalid as e:
        raise UserError(f"{path}: {e}") from None
    if len(c["secret"]) < MIN_SECRET:
        raise UserError(f"{path}: secret: at least {MIN_SECRET} characters (it decides every variant)")
    return Course(c["name"], c["secret"], (path.parent / c["exercises"]).resolve(), c["id_field"], c["weak_sandbox"])


def kstep_fingerprint() -> str:
    """A hash of the installed kstep package's own files."""
    root = Path(kstep.__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def manifest(course_name: str, exercises: list[Exercise]) -> dict:
    return {"format": "kstep-release", "version": 1, "course": course_name,
            "kstep": {"version": kstep.__version__, "fingerprint": kstep_fingerprint()},
            "exercises": {e.id: {"version": e.version, "fingerprint": e.fingerprint(), "graded": not e.practice}
                          for e in exercises}}


def check_manifest(path: str | Path, exercise: Exercise) -> None:
    """Refuse (UserError) unless this kstep and this exercise are the ones the release pinned."""
    path = Path(path)
    text = read_text(path, SMALL_CAP, "manifest")
    try:
        m = json.loads(text)
        pinned_kstep, pinned = m["kstep"], m["exercises"]
    except (ValueError, KeyError, TypeError, RecursionError):  # ValueError: JSON's, or a huge number's
        raise UserError(f"{path}: not a kstep release manifest") from None
    if pinned_kstep.get("fingerprint") != kstep_fingerprint():
        raise UserError(f"{path}: released with kstep {pinned_kstep.get('version')} as it was then; this kstep "
                        f"({kstep.__version__}) differs: grade with the kstep the release was made with")
    if exercise.id not in pinned:
        raise UserError(f"{path}: exercise {exercise.id} was not part of this release")
    if pinned[exercise.id].get("graded") is False:
        raise UserError(f"{path}: exercise {exercise.id} was released for practice, not for a grade: "
                        f"{exercise.practice or 'see its exercise.toml'}")
    if pinned[exercise.id].get("fingerprint") != exercise.fingerprint():
        raise UserError(f"{path}: exercise {exercise.id} has changed since the release "
                        f"(released version {pinned[exercise.id].get('version')}, now {exercise.version})")
