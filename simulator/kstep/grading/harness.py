"""Grading one submission: public tests in the sandbox, hidden tests here, in kstep's own process.

The submission's files are taken in as data (submission.py) and written into a fresh scratch
folder beside the exercise's public files (``driver.py``, ``tests/``, ``data/``) and the student's
``variant.toml``.  Each public test runs in its own sandboxed child (``python -m kstep.grading.ok``),
since it imports the student's code.  Each hidden test is a function ``test_<name>(ctx)`` of the
exercise's ``hidden/tests.py``, called here: it reads the submission's data through ``ctx``, runs
the submission's code only through ``ctx.run``/``ctx.driver`` (the sandbox), computes what is right
with kstep itself, and raises ``Fail`` with the message the student reads.  The hidden tests and
the solutions are never in the scratch folder, and the sandbox sees nothing else of the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, NamedTuple, Optional

from . import sandbox, variants
from .exercise import PUBLIC, Exercise
from .submission import take

VISIBLE, HIDDEN = "visible", "after_published"  # Gradescope's visibility of public and hidden tests
MAX_RESULT = 1 << 20  # bytes of JSON a driver may answer with
EXITED = "ended the run before it had a result: does it call sys.exit() or os._exit()?"


class Fail(Exception):
    """A failed hidden test: ``message`` is what the student reads; ``details`` (a counterexample
    table, a failing interleaving) goes into the readable summary and the test's output; ``credit``
    is the share of the test's points still earned (partly right answers)."""

    def __init__(self, message: str, details: str = "", credit: float = 0.0):
        super().__init__(message)
        self.message, self.details, self.credit = message, details, min(max(credit, 0.0), 1.0)


class TestResult(NamedTuple):
    name: str
    visibility: str
    score: float
    max_score: float
    output: str

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


class Grade(NamedTuple):
    exercise: str
    version: int
    student: str
    variant: dict
    tests: list
    problems: list  # what the intake refused, one line each
    seconds: float

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests)


class Context:
    """What a hidden test gets: the variant, the submission's files and the sandbox to run them in."""

    def __init__(self, exercise: Exercise, student: str, variant: dict, files: dict, problems: list,
                 scratch: Path, mode: str, uid: Optional[int], read_only: tuple):
        self.exercise, self.student, self.variant = exercise, student, variant
        self._files, self._problems = files, problems
        self.scratch, self._mode, self._uid, self.read_only = scratch, mode, uid, read_only
        self._driven: dict = {}
        self.test = ""  # the test now running (harness), named when a limit stops the submission
        self.stopped: Optional[str] = None  # why the submission is not run again, once a run hit a limit
        # An exercise built against the kernel lab finds it where the sandbox shows it read-only.
        self._env = {"KSTEP_KERNEL_LAB": str(read_only[0])} if exercise.kernel_lab and read_only else {}

    def file(self, name: str) -> bytes:
        if name not in self._files:
            # a refusal of the whole submission (a FIFO, /dev/zero) names no file: it is the reason
            refused = [p for p in self._problems if name in p] or (self._problems if not self._files else [])
            raise Fail(f"{name} is missing from the submission" + (f" ({refused[0]})" if refused else ""))
        return self._files[name]

    def has(self, name: str) -> bool:
        return name in self._files

    def text(self, name: str) -> str:
        try:
            return self.file(name).decode()
        except UnicodeDecodeError:
            raise Fail(f"{name} is not UTF-8 text") from None

    def toml(self, name: str) -> dict:
        try:
            return tomllib.loads(self.text(name))
        except tomllib.TOMLDecodeError as e:
            raise Fail(f"{name} is not valid TOML: {e}") from None
        except RecursionError:
            raise Fail(f"{name}: nested too deeply to read") from None

    def run(self, argv: list, stdin: bytes = b"") -> sandbox.Result:
        """Run a command on the submission in the sandbox, under the exercise's limits.

        Once a run has hit a limit, the submission is not run again: every later run fails at once
        with that reason (a loop or a fork bomb would hit it again, test after test, at full cost).
        """
        for name in self.exercise.submission:
            self.file(name)  # a missing file fails here, saying why the intake refused it
        if self.stopped:
            raise Fail(self.stopped)
        ex = self.exercise
        limits = sandbox.Limits(cpu=ex.cpu, memory=ex.memory, wall=ex.wall)
        r = sandbox.run(argv, self.scratch, limits, stdin=stdin, read_only=self.read_only,
                        mode=self._mode, uid=self._uid, env=self._env)
        if r.verdict in sandbox.LIMITS:
            self.stopped = (f"not run: your code {r.why} in test {self.test}, and a submission that hits "
                            f"a limit is not run again")
        return r

    def output(self, name: str, max_bytes: int = 16 << 20) -> bytes:
        """A file the submission's run left in the scratch folder, read as data: never through a
        symbolic link (the grader may be root), never more than ``max_bytes``."""
        try:
            fd = os.open(self.scratch / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as e:
            raise Fail(f"{name}: the run left no readable file ({e.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise Fail(f"{name}: not a plain file")
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise Fail(f"{name}: larger than {max_bytes} bytes")
        return data

    def driver(self, request: dict) -> Any:
        """Ask the exercise's driver.py (running the submission's code in the sandbox) one question.

        The driver answers with one JSON line on stdout; anything else is the submission's failure.
        Answers are remembered, so tests asking the same question run the submission once.
        """
        key = json.dumps(request, sort_keys=True)
        if key not in self._driven:
            r = self.run([sys.executable, "driver.py"], stdin=key.encode())
            self._driven[key] = r
        r = self._driven[key]
        if r.verdict != "ok":
            tail = r.stderr.decode(errors="replace").strip().splitlines()[-6:]
            raise Fail(f"your code {r.why}", "\n".join(tail))
        answer = _last_json(r.stdout)
        if answer is None and not r.stdout.strip():
            raise Fail(f"your code {EXITED}")
        if answer is None:
            raise Fail("the driver's answer is not JSON (does your code print to stdout?)")
        return answer


def grade(exercise: Exercise, submission: Path, *, student: str = variants.EXAMPLE, secret: str = "",
          mode: str = "bwrap", read_only: tuple = (), workdir: Optional[Path] = None,
          as_name: Optional[str] = None) -> Grade:
    """``as_name``: a submission that is one file is taken as this file of the exercise (a batch's
    ``<id>.py``)."""
    start = time.monotonic()
    variant = variants.for_student(exercise, student, secret)
    wanted = exercise.submission + exercise.optional
    taken = take(submission, wanted, exercise.max_bytes, as_name)
    scratch = Path(tempfile.mkdtemp(prefix="kstep-grade-", dir=workdir))
    try:
        _fill(scratch, exercise, variant, taken.files)
        with sandbox.claim() as uid:
            sandbox.prepare_scratch(scratch, uid)
            ctx = Context(exercise, student, variant, taken.files, taken.problems, scratch, mode, uid, read_only)
            results = _public(exercise, ctx) + _hidden(exercise, ctx)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    missing = sorted(set(exercise.points) - {r.name for r in results})
    if missing:
        raise ValueError(f"exercise {exercise.id}: no test named {missing[0]} (listed in [points])")
    return Grade(exercise.id, exercise.version, student, variant, results, taken.problems,
                 time.monotonic() - start)


def _fill(scratch: Path, exercise: Exercise, variant: dict, files: dict) -> None:
    for name in PUBLIC:
        src = exercise.path / name
        if src.is_dir():
            shutil.copytree(src, scratch / name)
        elif src.is_file():
            shutil.copy(src, scratch / name)
    exercise.write_checks(scratch / "tests")
    (scratch / "variant.toml").write_text(variant_toml(exercise, variant))
    for name, data in files.items():
        (scratch / name).write_bytes(data)


def variant_toml(exercise: Exercise, variant: dict) -> str:
    """The student's variant as the bundle and the scratch folder hold it."""
    lines = [f"# {exercise.id}: your variant of this exercise (kstep release wrote it; do not edit)"]
    for k, v in variant.items():
        lines.append(f"{k} = {json.dumps(list(v) if isinstance(v, tuple) else v)}")
    return "\n".join(lines) + "\n"


def _points(exercise: Exercise, name: str) -> float:
    if name not in exercise.points:
        raise ValueError(f"exercise {exercise.id}: test {name!r} has no points in exercise.toml")
    return exercise.points[name]


def _public(exercise: Exercise, ctx: Context) -> list[TestResult]:
    out = []
    for name in exercise.public_tests:
        ctx.test = name
        points = _points(exercise, name)
        try:
            r = ctx.run([sys.executable, "-m", "kstep.grading.ok", "--json", f"tests/{name}.py"])
        except Fail as f:
            out.append(TestResult(name, VISIBLE, 0, points, f.message))
            continue
        got = _last_json(r.stdout)
        if r.verdict not in ("ok", "failed") or not isinstance(got, dict):
            why = r.why if r.verdict not in ("ok", "failed") else EXITED
            tail = "\n".join(r.stderr.decode(errors="replace").strip().splitlines()[-6:])
            out.append(TestResult(name, VISIBLE, 0, points, f"your code {why}\n{tail}".strip()))
        else:
            passed = got.get("passed") is True
            out.append(TestResult(name, VISIBLE, points if passed else 0, points,
                                  "passed" if passed else str(got.get("output", ""))[-4000:]))
    return out


def _last_json(stdout: bytes) -> Any:
    """The last line of a sandboxed run's output as JSON, or None."""
    lines = stdout.decode(errors="replace").strip().splitlines()
    try:
        return json.loads(lines[-1][:MAX_RESULT]) if lines else None
    except (json.JSONDecodeError, RecursionError):
        return None


def hidden_tests(exercise: Exercise) -> list:
    """The ``test_<name>`` functions of hidden/tests.py, in the order written."""
    path = exercise.path / "hidden" / "tests.py"
    spec = importlib.util.spec_from_file_location(f"kstep_hidden_{exercise.id.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(name[len("test_"):].replace("_", "-"), fn) for name, fn in vars(module).items()
            if name.startswith("test_") and callable(fn)]


def _hidden(exercise: Exercise, ctx: Context) -> list[TestResult]:
    out = []
    for name, fn in hidden_tests(exercise):
        ctx.test = name
        points = _points(exercise, name)
        try:
            fn(ctx)
        except Fail as f:
            out.append(TestResult(name, HIDDEN, round(points * f.credit, 2), points,
                                  f.message + (f"\n{f.details}" if f.details else "")))
            continue
        out.append(TestResult(name, HIDDEN, points, points, "passed"))
    return out
