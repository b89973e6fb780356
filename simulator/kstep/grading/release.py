"""``kstep release``: one bundle per student, and a Gradescope autograder zip per exercise.

    OUT/manifest.json                       what was released (no secret)
    OUT/students/<student>/<exercise>/      README.md, the starter, tests/, driver.py, data/,
                                            variant.toml (this student's variant only), manifest.json
    OUT/gradescope/<exercise>.zip           setup.sh, run_autograder, course.toml (with the secret),
                                            manifest.json, kstep's source, the exercise (hidden tests
                                            included), the kernel lab for C exercises

A bundle holds no solution and no hidden test, and no other student's variant.  An exercise that
exercise.toml marks ``practice`` (its answers are what ``kstep run -c`` prints, so a grade would
measure copying) gets its bundles but no autograder zip, and the manifest records it as not graded:
grading against the release refuses it.  The roster is a
CSV file with a ``student`` column (the ids grading will be given: Gradescope's email or student
id, as ``id_field`` of course.toml says).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import subprocess
import zipfile
from importlib import resources
from pathlib import Path

import kstep

from ..errors import UserError
from ..files import SMALL_CAP, read_text
from . import variants
from .course import Course, manifest
from .exercise import PUBLIC, Exercise
from .harness import variant_toml

MAX_ROSTER = 5000
# What of the repository a Gradescope zip carries to install kstep and build the kernel lab.
KSTEP_FILES = ("pyproject.toml", "README.md", "LICENSE")
LAB_SKIP = ("build",)
# The kernel's files the lab compiles (kernel-lab/Makefile's KERNEL_FILES), made from the instructor's
# linux-source tree: the zip carries them, since the autograder has no Debian archive to fetch it.
LAB_SOURCES = Path("build") / "src"


def read_roster(path: Path) -> list[str]:
    text = read_text(path, SMALL_CAP, "roster")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise UserError(f"{path}: not a CSV file: {e}") from None
    if not rows or "student" not in rows[0]:
        raise UserError(f"{path}: needs a header row with a 'student' column")
    if len(rows) > MAX_ROSTER:
        raise UserError(f"{path}: more than {MAX_ROSTER} students")
    ids = []
    for k, row in enumerate(rows, start=2):
        sid = (row.get("student") or "").strip()
        try:
            variants.check_student(sid)
        except UserError as e:
            raise UserError(f"{path}: line {k}: {e}") from None
        if sid == variants.EXAMPLE or sid in ids:
            raise UserError(f"{path}: line {k}: student {sid!r} is {'reserved' if sid == variants.EXAMPLE else 'listed twice'}")
        ids.append(sid)
    return ids


def bundle(exercise: Exercise, variant: dict, out: Path, pinned: dict) -> None:
    """A student's folder for one exercise: public files, the starter, their variant."""
    out.mkdir(parents=True)
    for name in PUBLIC:
        src = exercise.path / name
        if src.is_dir():
            shutil.copytree(src, out / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy(src, out / name)
    exercise.write_checks(out / "tests")
    for name in exercise.submission:
        (out / name).write_text(exercise.starter(name))
    (out / "variant.toml").write_text(variant_toml(exercise, variant))
    (out / "manifest.json").write_text(json.dumps(pinned, indent=1) + "\n")


def source_checkout() -> Path:
    """The kstep checkout kstep runs from: its source goes into every autograder zip."""
    repo = Path(kstep.__file__).resolve().parents[2]
    if not all((repo / name).is_file() for name in KSTEP_FILES):
        raise UserError(f"kstep release needs kstep's source checkout (pyproject.toml beside simulator/), "
                        f"and kstep runs from {Path(kstep.__file__).resolve().parent}")
    return repo


def release(course: Course, exercises: list[Exercise], roster: list[str], out: Path) -> dict:
    repo = source_checkout()
    if out.exists():
        raise UserError(f"{out}: already exists (a release is written once; choose a new folder)")
    if not out.parent.is_dir():
        raise UserError(f"{out}: directory {out.parent} does not exist")
    pinned = manifest(course.name, exercises)
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps(pinned, indent=1) + "\n")
    for student in roster:
        for e in exercises:
            bundle(e, variants.for_student(e, student, course.secret), out / "students" / student / e.id, pinned)
    (out / "gradescope").mkdir()
    for e in exercises:
        if not e.practice:
            autograder_zip(course, e, pinned, repo, out / "gradescope" / f"{e.id}.zip")
    return pinned


def lab_sources(lab: Path) -> Path:
    """kernel-lab/build/src, made (or brought up to date) from the linux-source tree."""
    run = subprocess.run(["make", "-s", "-C", str(lab), "sources"], capture_output=True, text=True)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["make failed"])[-1]
        raise UserError(f"kstep release: the kernel lab's kernel sources: {last}")
    return lab / LAB_SOURCES


def _add_tree(z: zipfile.ZipFile, src: Path, prefix: str, skip: tuple = ()) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if "__pycache__" in rel.parts or (rel.parts and rel.parts[0] in skip) or not path.is_file():
            continue
        _add(z, f"{prefix}/{rel.as_posix()}", path.read_bytes(), path.stat().st_mode)


def _add(z: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | (0o755 if mode & 0o111 else 0o644)) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def autograder_zip(course: Course, exercise: Exercise, pinned: dict, repo: Path, path: Path) -> None:
    """Gradescope's autograder: setup.sh and run_autograder at the top, everything they use beside."""
    scripts = resources.files("kstep.grading").joinpath("gradescope")
    config = (f'name = {json.dumps(course.name)}\nsecret = {json.dumps(course.secret)}\n'
              f'exercises = "exercises"\nid_field = "{course.id_field}"\n'
              f'weak_sandbox = {"true" if course.weak_sandbox else "false"}\n')
    with zipfile.ZipFile(path, "w") as z:
        for name in ("setup.sh", "run_autograder"):
            _add(z, name, scripts.joinpath(name).read_bytes(), 0o755)
        _add(z, "course.toml", config.encode())
        _add(z, "manifest.json", (json.dumps(pinned, indent=1) + "\n").encode())
        _add(z, "exercise-id", (exercise.id + "\n").encode())
        for name in KSTEP_FILES:
            _add(z, f"kstep/{name}", (repo / name).read_bytes())
        _add_tree(z, Path(kstep.__file__).resolve().parent, "kstep/simulator/kstep")
        _add_tree(z, exercise.path, f"exercises/{exercise.id}")
        if exercise.kernel_lab:
            _add_tree(z, repo / "kernel-lab", "kernel-lab", LAB_SKIP)
            _add_tree(z, lab_sources(repo / "kernel-lab"), f"kernel-lab/{LAB_SOURCES.as_posix()}")
    os.chmod(path, 0o600)  # it holds the course secret
