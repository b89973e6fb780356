"""An exercise folder, validated: exercise.toml, the solution and the starter made from it.

    exercises/<id>/
      exercise.toml    id, title, mechanism, kind, version, the files a student hands in, limits,
                       points per test, variant parameters
      README.md        the learning goals and the task (goes into every student bundle)
      solution/        the files a student hands in, solved, with the answers between markers
      tests/           public tests (Otter-Grader's OK format), run by students and by the grader
                       (and [checks] in exercise.toml: public tests of a kind kstep writes, checks.py)
      hidden/tests.py  hidden tests: ``test_<name>(ctx)`` functions, run by the grader only
      driver.py        (optional) how the submission's code is run (public: students use it too)
      data/            (optional) public inputs: scenario files with questions, ...

The starter a student gets is the solution with every region between a ``BEGIN SOLUTION`` and an
``END SOLUTION`` comment line replaced by a one-line hint in the file's language.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from ..scenario_spec.scenario import Bool, Int, Invalid, Key, List, Str, Table
from ..errors import UserError, shorten
from . import checks as declared

KINDS = ("predict", "python", "c", "find-bug", "measure", "litmus")
PUBLIC = ("README.md", "driver.py", "tests", "data")  # what a student bundle holds besides the starter
_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")  # both matched whole (fullmatch)
_TEST = re.compile(r"[a-z0-9][a-z0-9-]{0,59}")
BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
HINT = {".py": "raise NotImplementedError(\"your code here\")", ".c": "/* your code here */",
        ".h": "/* your code here */", ".toml": "# your answers here", ".md": "(your answer here)",
        ".jsonl": "# your runs here, one summary line each",
        ".litmus": "(* your test here: the README says where to copy it from *)"}


def _files(names: tuple, path: str) -> None:
    for n in names:
        if not _FILE.fullmatch(n):
            raise Invalid(f"{path}: {n!r} is not a plain file name")


SCHEMA = Table({
    "id": Key(Str(doc="the exercise's name (its folder's name)", max_len=60)),
    "title": Key(Str(doc="one line", max_len=200)),
    "mechanism": Key(Str(doc="the kstep mechanism it is about", max_len=40)),
    "kind": Key(Str(KINDS, doc="what the student does")),
    "version": Key(Int(1, 10_000, "bumped whenever the exercise changes what it asks or grades")),
    "submission": Key(List(Str(max_len=64), 1, 8, "the files a student hands in")),
    "optional": Key(List(Str(max_len=64), 0, 8, "files a student may also hand in"), []),
    "max_bytes": Key(Int(1, 4 << 20, "the largest file a submission may contain"), 256 << 10),
    "cpu": Key(Int(1, 3600, "CPU seconds one sandboxed run may use")),
    "memory": Key(Int(16, 8192, "MiB of memory one sandboxed run may use")),
    "wall": Key(Int(1, 7200, "seconds after which a sandboxed run is stopped whatever it does (a backstop)")),
    "kernel_lab": Key(Bool(doc="its sandboxed runs read the kernel lab (sources and build)"), False),
    "practice": Key(Str(doc="why it is released for practice only, never for a grade (empty: it is graded)",
                        max_len=500), ""),
})
# and three open tables, whose keys are the exercise's own: [points] (test name = points),
# [variants] (parameter = a list of values, or {from, to}) and [checks] (test name = a kind of
# checks.KINDS: a public test kstep writes).


class Exercise(NamedTuple):
    path: Path
    id: str
    title: str
    mechanism: str
    kind: str
    version: int
    submission: tuple
    optional: tuple
    max_bytes: int
    cpu: int
    memory: int
    wall: int
    kernel_lab: bool
    practice: str  # why a release gives it to students without an autograder ("" for a graded exercise)
    points: dict  # test name -> points
    variants: dict  # parameter -> tuple of values
    checks: dict  # test name -> a kind of checks.KINDS

    @property
    def public_tests(self) -> list[str]:
        """The names of the public tests: the files of tests/ and the declared checks."""
        folder = self.path / "tests"
        return sorted([p.stem for p in folder.glob("*.py")] if folder.is_dir() else []) + list(self.checks)

    def write_checks(self, tests: Path) -> None:
        """Write the declared checks as OK-format files into ``tests`` (created if missing)."""
        if self.checks:
            tests.mkdir(exist_ok=True)
        for name, kind in self.checks.items():
            (tests / f"{name}.py").write_text(declared.ok_test(name, kind, self.mechanism, self.points.get(name, 0)))

    def solution(self, name: str) -> str:
        return (self.path / "solution" / name).read_text()

    def starter(self, name: str) -> str:
        return starter(self.solution(name), Path(name).suffix)

    def fingerprint(self) -> str:
        """A hash of every file of the exercise: a release pins it, grading checks it."""
        h = hashlib.sha256()
        for f in sorted(p for p in self.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(f.relative_to(self.path)).encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()


def load(path: str | Path) -> Exercise:
    """Read and check an exercise folder; every mistake is one line (UserError)."""
    path = Path(path)
    where = path / "exercise.toml"
    try:
        data = tomllib.loads(where.read_text())
    except OSError as e:
        raise UserError(f"{where}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where}: not valid TOML: {e}") from None
    try:
        raw_points, raw_variants, raw_checks = data.pop("points", None), data.pop("variants", None), \
            data.pop("checks", {})
        checked = SCHEMA.check(data, "")
        _files(checked["submission"] + checked["optional"], "submission")
        clash = set(checked["submission"] + checked["optional"]) & {*PUBLIC, "variant.toml", "manifest.json"}
        if clash:
            raise Invalid(f"submission: {sorted(clash)[0]} is a name the bundle already uses")
        points = _points(raw_points)
        variants = _variants(raw_variants)
        checks = _checks(raw_checks, path / "tests")
    except Invalid as e:
        raise UserError(f"{where}: {e}") from None
    if checked["id"] != path.resolve().name:
        raise UserError(f"{where}: id {checked['id']!r} is not the folder's name {path.resolve().name!r}")
    return Exercise(path.resolve(), checked["id"], checked["title"], checked["mechanism"], checked["kind"],
                    checked["version"], checked["submission"], checked["optional"], checked["max_bytes"],
                    checked["cpu"], checked["memory"], checked["wall"], checked["kernel_lab"], checked["practice"],
                    points, variants, checks)


def _points(raw: Any) -> dict:
    if not isinstance(raw, dict) or not raw:
        raise Invalid("points: expected a table of test name = points")
    for name, p in raw.items():
        if not _TEST.fullmatch(name):
            raise Invalid(f"points.{name}: not a test name (lower-case letters, digits, '-')")
        Int(0, 1000).check(p, f"points.{name}")
    return dict(raw)


def _checks(raw: Any, tests: Path) -> dict:
    if not isinstance(raw, dict):
        raise Invalid("checks: expected a table of test name = kind")
    for name, kind in raw.items():
        if not _TEST.fullmatch(name):
            raise Invalid(f"checks.{name}: not a test name (lower-case letters, digits, '-')")
        if kind not in declared.KINDS:
            raise Invalid(f"checks.{name}: {shorten(repr(kind))} is not a kind of check "
                          f"({', '.join(declared.KINDS)})")
        if (tests / f"{name}.py").exists():
            raise Invalid(f"checks.{name}: tests/{name}.py is a test of that name already")
    return dict(raw)


def _variants(raw: Any) -> dict:
    if not isinstance(raw, dict) or not raw:
        raise Invalid("variants: expected a table of parameter = [values] or {from, to}")
    out = {}
    for name, values in raw.items():
        if isinstance(values, dict):
            Table({"from": Key(Int(0, 1 << 31)), "to": Key(Int(0, 1 << 31))}).check(values, f"variants.{name}")
            if values["to"] < values["from"]:
                raise Invalid(f"variants.{name}: 'to' is below 'from'")
            out[name] = tuple(range(values["from"], values["to"] + 1))
        elif isinstance(values, list) and values:
            out[name] = tuple(tuple(v) if isinstance(v, list) else v for v in values)
        else:
            raise Invalid(f"variants.{name}: expected a non-empty list or {{from, to}}")
        if len(set(out[name])) != len(out[name]):
            raise Invalid(f"variants.{name}: a value is listed twice")
    return out


def starter(text: str, suffix: str) -> str:
    """The solution with each marked region replaced by a hint, indented as the BEGIN line is."""
    out, inside = [], False
    for n, line in enumerate(text.splitlines(keepends=True), start=1):
        if BEGIN in line:
            if inside:
                raise ValueError(f"line {n}: {BEGIN} inside another")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + HINT.get(suffix, "(your answer here)") + "\n")
        elif END in line:
            if not inside:
                raise ValueError(f"line {n}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN} is never closed")
    return "".join(out)


def solution_lines(text: str) -> list[str]:
    """The stripped lines between the markers that appear nowhere outside them: the solution's own text."""
    inside, ins, outs = False, [], set()
    for line in text.splitlines():
        if BEGIN in line or END in line:
            inside = BEGIN in line
            continue
        (ins.append if inside else outs.add)(line.strip())
    return [s for s in ins if s and s not in outs]


def find(name_or_path: str, exercises: Path) -> Exercise:
    """An exercise by id (a folder of ``exercises``) or by the path of its folder."""
    p = Path(name_or_path)
    if not (p / "exercise.toml").is_file():
        p = exercises / name_or_path
        if not (p / "exercise.toml").is_file():
            known = sorted(d.name for d in exercises.iterdir() if (d / "exercise.toml").is_file()) \
                if exercises.is_dir() else []
            raise UserError(f"unknown exercise {name_or_path!r} (in {exercises}: {', '.join(known) or 'none'})")
    return load(p)
