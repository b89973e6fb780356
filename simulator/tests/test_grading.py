"""The grader against hostile submissions: each is graded (zero where it hurts, with a clear
message), never obeyed, and the host is checked as well as the score.

The exercise is simulator/tests/data/grading/answer-ex (answer() must return 42), copied into a
temporary folder so that the test can prove the tree around the scratch folder is unchanged.
"""

import fcntl
import hashlib
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from kstep.cli import main
from kstep.grading import batch, exercise, harness, report, sandbox, submission

HERE = Path(__file__).resolve().parent
CANARIES = ("CANARY-KSTEP-HIDDEN", "CANARY-KSTEP-SOLUTION")
GOOD = "def answer():\n    return 42\n"
FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
# A bomb whose children sleep while its first process spins: the CPU-time limit ends it, not the
# wall clock, and it must still be reported as the fork bomb it is.
SPINNING_BOMB = ("import os, time\nfor _ in range(100):\n    try:\n        if os.fork() == 0:\n"
                 "            time.sleep(3600)\n    except OSError:\n        break\nwhile True:\n    pass\n")


@pytest.fixture
def ex(tmp_path):
    folder = tmp_path / "exercises" / "answer-ex"
    shutil.copytree(HERE / "data" / "grading" / "answer-ex", folder)
    return exercise.load(folder)


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if "__pycache__" in p.parts:
            continue
        st = p.lstat()
        h.update(f"{p.relative_to(root)} {stat.S_IFMT(st.st_mode)} {st.st_mode & 0o7777}".encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def sandbox_processes() -> list:
    """Processes of sandbox uids that no grading holds (none may outlive its grading).  Gradings
    running meanwhile elsewhere on the machine hold their uids and are not counted.  A zombie is not
    running: bubblewrap's init inside the sandbox exits last, after the kernel has killed and reaped
    everything else of its PID namespace, and the machine's init reaps it."""
    return sandbox.unclaimed_processes()


def outputs(g: harness.Grade) -> str:
    return report.results_json(g) + report.junit_xml(g) + report.summary(g)


def grade_code(ex, tmp_path, code: str, **limits) -> harness.Grade:
    sub = tmp_path / "submission"
    sub.mkdir(exist_ok=True)
    (sub / "sub.py").write_text(code)
    before = tree_digest(ex.path)
    g = harness.grade(ex._replace(**limits), sub, student="s1", secret="x" * 16)
    assert tree_digest(ex.path) == before
    assert not sandbox_processes()
    text = outputs(g)
    assert not any(c in text for c in CANARIES)
    return g


def by_name(g):
    return {t.name: t for t in g.tests}


def test_a_correct_submission_scores_full_marks(ex, tmp_path):
    g = grade_code(ex, tmp_path, GOOD)
    assert g.score == g.max_score == 4


# One of each hostile kind, against answer-ex with its limits scaled down as make test's budget wants
# (test_grade_batch.py grades them all again in a batch of a hundred).
SMALL = {"cpu": 2, "wall": 5}
HOSTILE = {
    # on a loaded machine 5 s of wall-clock time may pass before 2 s of CPU time do: either limit
    "endless-loop": ("while True:\n    pass\n", ("ran out of CPU time", "ran past the wall-clock limit")),
    "sleeps": ("import time\ntime.sleep(3600)\n", "ran past the wall-clock limit"),
    "fork-bomb": (FORK_BOMB, "kept starting processes up to the limit (a fork bomb?)"),
    "spinning-bomb": (SPINNING_BOMB, "kept starting processes up to the limit (a fork bomb?)"),
    "segfault": ("import ctypes\nctypes.string_at(0)\n", "was killed by signal SIGSEGV"),
    "abort": ("import os\nos.abort()\n", "was killed by signal SIGABRT"),
    "huge-output": ("import os\nwhile True:\n    os.write(1, b'x' * 65536)\n",
                    "wrote more output than allowed (an output flood)"),
    "memory": ("x = bytearray(1 << 34)\n", "ran out of memory"),
    "exit-status": ("raise SystemExit(3)\n", "exited with status 3"),
}
# Limits of their own: a sleeper uses no CPU time, so nothing but the wall-clock limit ends it,
# however loaded the machine (1 s is enough).  The spinning bomb is there to be ended by its CPU-time
# limit, and at load 20 to 25 its 2 s of CPU time took 6 to 10 s: its wall-clock limit is a backstop.
OWN_LIMITS = {"sleeps": {"wall": 1}, "spinning-bomb": {"wall": 60}}
# these stop at a limit: run once, no more
LIMITED = ("endless-loop", "sleeps", "fork-bomb", "spinning-bomb", "huge-output")


def counting_runs(monkeypatch) -> list:
    """Every sandboxed run of the grading, as (argv, result)."""
    runs, real = [], sandbox.run

    def run(argv, *args, **kwargs):
        r = real(argv, *args, **kwargs)
        runs.append((argv, r))
        return r

    monkeypatch.setattr(sandbox, "run", run)
    return runs


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_submission_gets_zero_with_a_clear_message(ex, tmp_path, monkeypatch, kind):
    """Each test says why; a submission that hits a limit runs once, and every later test says it
    was not run and why (a loop is not run again at its full limit, test after test)."""
    code, whys = HOSTILE[kind]
    whys = (whys,) if isinstance(whys, str) else whys
    runs = counting_runs(monkeypatch)
    g = grade_code(ex, tmp_path, code, **{**SMALL, **OWN_LIMITS.get(kind, {})})
    assert g.score == 0
    messages = [t.output for t in g.tests]
    said = tuple(f"{start}your code {why}" for why in whys for start in ("", "not run: "))
    assert all(m.startswith(said) for m in messages[1:]), messages
    if kind in LIMITED:
        assert len(runs) == 1 and runs[0][1].verdict in sandbox.LIMITS, runs
        assert messages[0].startswith(said[::2])
        assert messages[1] == f"not run: your code {runs[0][1].why} in test " \
                              f"public-answer, and a submission that hits a limit is not run again"
    assert by_name(g)["public-answer"].score == 0 and by_name(g)["public-answer"].output


@pytest.mark.parametrize("code", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"],
                         ids=["sys.exit", "os._exit"])
def test_a_test_ended_by_the_submission_says_what_happened(ex, tmp_path, code):
    """sys.exit() inside a doctest is the doctest's failure (SystemExit: 0); os._exit(), or either
    in the driver, ends the run with no result, and the message asks about them."""
    g = grade_code(ex, tmp_path, code)
    assert g.score == 0
    for t in g.tests:
        said = "SystemExit: 0" in t.output if "sys" in code and t.name == "public-answer" else \
            t.output == "your code ended the run before it had a result: does it call sys.exit() or os._exit()?"
        assert said, t


def test_it_cannot_read_hidden_tests_or_solutions(ex, tmp_path):
    """It looks everywhere it can for the canaries: the exercise's folders are not there at all."""
    code = f"""
import os
found, looked = [], 0
runtime = ("/proc", "/sys", "/dev", "/usr", {str(Path(sys.prefix).resolve())!r}, {str(Path(sys.base_prefix).resolve())!r})
for root in ("/", {str(ex.path)!r}, {str(ex.path / "hidden")!r}, {str(HERE)!r}):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.join(folder, d).startswith(runtime + (os.getcwd(),))]
        for f in files:
            looked += 1
            try:
                if b"CANARY-KSTEP-" in open(os.path.join(folder, f), "rb").read(1 << 20):
                    found.append(os.path.join(folder, f))
            except OSError:
                pass
print("looked at", looked, "files; found", found)
def answer():
    return 42 if looked > 10 and not found else found
"""
    g = grade_code(ex, tmp_path, code, cpu=20)
    assert by_name(g)["answer"].passed, by_name(g)["answer"].output


def test_it_cannot_write_outside_its_scratch_folder(ex, tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    (host / "keep.txt").write_text("mine")
    before = tree_digest(host)
    targets = [host / "keep.txt", host / "new.txt", ex.path / "hidden" / "tests.py", Path("/tmp/kstep-escaped"),
               Path(sys.prefix) / "escaped", Path("/usr/escaped")]
    code = "import os\nwritten = []\n" + "".join(
        f"try:\n    open({str(t)!r}, 'w').write('x')\n    written.append({str(t)!r})\nexcept OSError:\n    pass\n"
        for t in targets) + "def answer():\n    return 42 if not written else written\n"
    g = grade_code(ex, tmp_path, code)
    assert by_name(g)["answer"].passed, by_name(g)["answer"].output
    assert tree_digest(host) == before and not Path("/tmp/kstep-escaped").exists()


def test_it_cannot_reach_the_network(ex, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = f"""
import socket
def answer():
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
        return "connected"
    except OSError as e:
        return 42
"""
    g = grade_code(ex, tmp_path, code)
    assert by_name(g)["answer"].passed, by_name(g)["answer"].output
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()


def test_a_process_left_running_dies_with_the_sandbox(ex, tmp_path):
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(3600)\n"
            "def answer():\n    return 42\n")
    g = grade_code(ex, tmp_path, code)  # grade_code finds no process of the sandbox's uid left
    assert g.score == g.max_score


def test_the_leftover_check_finds_a_process_of_a_uid_no_grading_holds(tmp_path, monkeypatch):
    """What grade_code's check rests on: a process of a sandbox uid whose lock nobody holds is
    named, one of a held uid is not.  Both uids are claimed for real, so no grading beside this
    test sweeps them; the check reads locks from a folder where only the second one is held."""
    with sandbox.claim() as left, sandbox.claim() as held:
        sleepers = {uid: subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                                           "sleep", "600"]) for uid in (left, held)}
        try:
            for uid, p in sleepers.items():  # until setpriv has taken the uid
                while f"Uid:\t{uid}\t" not in Path(f"/proc/{p.pid}/status").read_text():
                    assert p.poll() is None
            monkeypatch.setattr(sandbox, "_lock_dir", lambda: tmp_path)
            lock = os.open(tmp_path / f"{held}.lock", os.O_RDWR | os.O_CREAT)
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = sandbox.unclaimed_processes()
            assert f"{sleepers[left].pid} uid {left}" in found and f"{sleepers[held].pid} uid {held}" not in found
            os.close(lock)
        finally:
            for p in sleepers.values():
                p.kill()
                p.wait()


def test_a_uid_whose_last_process_is_dead_but_not_reaped_is_passed_over():
    """A killed sandbox's tasks count against RLIMIT_NPROC until the machine's init reaps them, so a
    grading given their uid at once would get fewer processes than its limit (the spinning bomb,
    graded right after the fork bomb under its uid, forked to 31 of 32 and was called an endless
    loop).  Here the dead process is this test's own child, reaped only at the end."""
    with sandbox.claim() as uid:
        dead = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "600"])
        status = Path(f"/proc/{dead.pid}/status")
        while f"Uid:\t{uid}\t" not in status.read_text():  # until setpriv has taken the uid
            assert dead.poll() is None
        dead.kill()
        while "(zombie)" not in status.read_text():
            pass
    try:
        with sandbox.claim() as again:
            assert again != uid
    finally:
        dead.wait()


def test_a_uid_a_dead_grading_left_a_process_running_under_is_swept_and_passed_over():
    """A grading killed outright leaves its lock free and maybe its submission running: the next claim
    of that uid kills what runs there and, its task not yet reaped, hands out another uid.  Here the
    leftover is this test's own child, reaped only at the end."""
    with sandbox.claim() as uid:
        left = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "600"])
        status = Path(f"/proc/{left.pid}/status")
        while f"Uid:\t{uid}\t" not in status.read_text():  # until setpriv has taken the uid
            assert left.poll() is None
    try:
        with sandbox.claim() as again:
            assert again != uid
            assert "(zombie)" in status.read_text()  # swept before the claim returned
    finally:
        left.kill()
        left.wait()


def archive(path: Path, entries: list) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            z.writestr(info, data)
    return path


def test_archives_cannot_place_files_where_they_say(ex, tmp_path):
    """zip-slip, absolute paths and symbolic links are refused, each with its line; the good file
    in the same archive is still graded."""
    good = GOOD
    z = archive(tmp_path / "s.zip", [
        ("../../escaped.py", "x", 0o100644),
        ("/tmp/kstep-absolute.py", "x", 0o100644),
        ("link.py", "/etc/shadow", 0o120777),
        ("work/sub.py", good, 0o100644),
    ])
    g = harness.grade(ex, z, student="s1", secret="x" * 16)
    assert g.score == g.max_score
    text = " ".join(g.problems)
    assert "zip-slip" in text and "absolute path" in text and "symbolic link" in text
    assert not (tmp_path.parent / "escaped.py").exists() and not Path("/tmp/kstep-absolute.py").exists()


def test_a_symlink_to_a_solution_is_not_followed(ex, tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "sub.py").symlink_to(ex.path / "solution" / "sub.py")
    g = harness.grade(ex, sub, student="s1", secret="x" * 16)
    assert g.score == 0 and "symbolic link" in by_name(g)["answer"].output
    assert not any(c in outputs(g) for c in CANARIES)


def test_a_damaged_or_oversized_submission_is_refused_with_a_line(ex, tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really a zip" + b"\0" * 64)
    taken = submission.take(bad, ("sub.py",), 1000)
    assert taken.files == {} and taken.problems
    big = tmp_path / "big" / "sub.py"
    big.parent.mkdir()
    big.write_text("#" * 5000)
    assert "larger than 1000 bytes" in submission.take(big.parent, ("sub.py",), 1000).problems[0]


def damaged_zip(path: Path, method: int) -> Path:
    """A zip archive whose sub.py is compressed with ``method`` and then damaged in its compressed
    data (the headers and the central directory stay whole, so only reading the member finds it)."""
    code = "".join(f"def f{k}():\n    return {k * 7919}\n" for k in range(300))
    with zipfile.ZipFile(path, "w", compression=method) as z:
        z.writestr("sub.py", code)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("sub.py")
    start = info.header_offset + 30 + len("sub.py") + 12  # into the compressed stream
    for k in range(start, start + 40):
        data[k] ^= 0x5A
    path.write_bytes(data)
    return path


def bomb(path: Path, method: int, mib: int) -> Path:
    """sub.py of ``mib`` MiB of zeros, compressed with ``method``: a few kilobytes (a few hundred
    bytes for bzip2) that would fill memory if a member were read whole before its size is checked."""
    with zipfile.ZipFile(path, "w", compression=method) as z, z.open("sub.py", "w", force_zip64=True) as f:
        for _ in range(mib):
            f.write(bytes(1 << 20))
    return path


def special(tmp_path: Path, kind: str) -> Path:
    """A submission that is no file to read: the intake must refuse it in one line, at once."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "sub.py")
        return tmp_path / "sub.py"
    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "fifo-in-folder":
        (tmp_path / "work").mkdir()
        os.mkfifo(tmp_path / "work" / "sub.py")
        return tmp_path / "work"
    if kind == "folder-as-file":
        (tmp_path / "work" / "sub.py").mkdir(parents=True)
        return tmp_path / "work"
    if kind == "oversized":
        (tmp_path / "sub.py").write_text("#" * (300 << 10))
        return tmp_path / "sub.py"
    if kind == "deflate-damaged":
        return damaged_zip(tmp_path / "s.zip", zipfile.ZIP_DEFLATED)
    if kind == "lzma-damaged":
        return damaged_zip(tmp_path / "s.zip", zipfile.ZIP_LZMA)
    if kind == "lzma-bomb":  # small here: test_grade_batch.py reads a large one under a memory limit
        return bomb(tmp_path / "s.zip", zipfile.ZIP_LZMA, 8)
    return bomb(tmp_path / "s.zip", zipfile.ZIP_BZIP2, 8)


SPECIAL = {"fifo": "is a FIFO", "dev-zero": "is a character device", "fifo-in-folder": "is a FIFO",
           "folder-as-file": "is a directory (a file was expected)", "oversized": "larger than",
           "deflate-damaged": "damaged in the archive", "lzma-damaged": "damaged in the archive",
           "lzma-bomb": "larger than 262144 bytes", "bzip2-bomb": "compressed with zip method 12"}


@pytest.mark.parametrize("kind", list(SPECIAL))
def test_a_submission_that_is_no_file_to_read_scores_zero_with_one_line(ex, tmp_path, kind):
    """A FIFO or /dev/zero would block or fill memory; a damaged stream would raise from zlib or
    lzma; a bomb would expand before any cap.  Each is refused by the intake, in one line that
    every test repeats, and nothing of the submission runs.  The intake itself is timed out by a
    child process here, so a broken intake fails this test instead of hanging the suite."""
    path = special(tmp_path, kind)
    probe = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))\n"
             "from kstep.grading import submission\n"
             f"t = submission.take({str(path)!r}, ('sub.py',), 256 << 10)\nprint(len(t.files), repr(t.problems))\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("0 ["), r.stderr[-2000:]
    g = harness.grade(ex, path, student="s1", secret="x" * 16)
    assert g.score == 0 and len(g.problems) == 1 and "\n" not in g.problems[0]
    assert SPECIAL[kind] in g.problems[0], g.problems
    for t in g.tests:
        assert t.output.startswith("sub.py is missing from the submission (") and SPECIAL[kind] in t.output, t


def test_grade_cli_takes_a_fifo_and_dev_zero_as_a_zero_with_its_reason(ex, tmp_path):
    os.mkfifo(tmp_path / "sub.py")
    for path, why in ((tmp_path / "sub.py", "is a FIFO"), (Path("/dev/zero"), "is a character device")):
        r = subprocess.run([sys.executable, "-m", "kstep", "grade", str(ex.path), str(path)], capture_output=True,
                           text=True, timeout=300, preexec_fn=lambda: resource.setrlimit(
                               resource.RLIMIT_DATA, (2 << 30, 2 << 30)))
        assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]
        assert "answer-ex (version 1): 0/4" in r.stdout and f"submission: {path}: cannot read: {why}" in r.stdout


def test_reports_are_gradescope_json_junit_and_a_summary(ex, tmp_path):
    g = grade_code(ex, tmp_path, "def answer():\n    return 41\n")
    out = tmp_path / "out"
    out.mkdir()
    report.write(g, out)
    results = json.loads((out / "results.json").read_text())
    assert results["score"] == 0 and len(results["tests"]) == 3
    hidden = next(t for t in results["tests"] if t["name"] == "answer")
    assert hidden == {"name": "answer", "score": 0, "max_score": 2, "status": "failed",
                      "output": "answer() gave 41, not 42", "visibility": "after_published"}
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "3"
    assert "[FAIL] answer (hidden): 0/2" in (out / "summary.txt").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["junit.xml", "results.json", "summary.txt"]


def write_batch(folder: Path, codes: dict) -> None:
    folder.mkdir()
    for student, code in codes.items():
        (folder / student).mkdir()
        (folder / student / "sub.py").write_text(code)


@pytest.mark.slow
def test_a_batch_survives_a_fork_bomb_and_a_rerun_skips_what_is_done(ex, tmp_path):
    """Every forked process has CPU time of its own, so the process limit holds a bomb to its size
    and the wall-clock backstop ends it; nothing of it is left running, and its neighbours in the
    batch score as they deserve.  Slow: the backstop must let the good neighbours finish on a loaded
    machine, so the bomb runs its whole 10 s."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_batch(subs, {"alice": GOOD, "bomb": FORK_BOMB, "carol": GOOD})
    out.mkdir()
    ex = ex._replace(wall=10)
    graded, skipped = batch.grade_batch(ex, subs, out, secret="x" * 16, mode="bwrap", jobs=2, read_only=())
    assert (graded, skipped) == (3, 0)
    scores = {s: json.loads((out / s / "results.json").read_text())["score"] for s in ("alice", "bomb", "carol")}
    assert scores == {"alice": 4, "bomb": 0, "carol": 4}
    assert "your code kept starting processes up to the limit (a fork bomb?)" in (out / "bomb" / "summary.txt").read_text()
    assert not sandbox_processes()
    shutil.rmtree(out / "carol")
    assert batch.grade_batch(ex, subs, out, secret="x" * 16, mode="bwrap", jobs=2, read_only=()) == (1, 2)
    assert sorted(p.name for p in out.iterdir()) == ["alice", "bomb", "carol"]


def test_a_batch_grades_every_entry_to_the_end_whatever_it_is(ex, tmp_path):
    """Single files named ``<id>.py`` are graded as the exercise's sub.py; a FIFO, a link to
    /dev/zero, a folder where a file belongs and damaged archives score 0, each with its line, and
    the students after them are graded."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_batch(subs, {"alice": GOOD})
    out.mkdir()
    (subs / "bob.py").write_text(GOOD)
    (subs / "first.last.py").write_text(GOOD)
    os.mkfifo(subs / "carol.py")
    (subs / "dave.py").symlink_to("/dev/zero")
    (subs / "erin.py").mkdir()
    damaged_zip(subs / "frank.zip", zipfile.ZIP_DEFLATED)
    damaged_zip(subs / "gina.zip", zipfile.ZIP_LZMA)
    (subs / "zoe.py").write_text(GOOD)
    graded, _ = batch.grade_batch(ex, subs, out, secret="x" * 16, mode="bwrap", jobs=1, read_only=())
    assert graded == 9
    scores = {p.name: json.loads((p / "results.json").read_text())["score"] for p in out.iterdir()}
    assert scores == {"alice": 4, "bob": 4, "first.last": 4, "zoe": 4, "carol": 0, "dave": 0, "erin": 0,
                      "frank": 0, "gina": 0}
    for student, why in (("carol", "is a FIFO"), ("dave", "a symbolic link"),
                         ("erin", "is a directory (a file was expected)"),
                         ("frank", "damaged in the archive"), ("gina", "damaged in the archive")):
        problems = [line for line in (out / student / "summary.txt").read_text().splitlines()
                    if line.startswith("submission: ")]
        assert len(problems) == 1 and why in problems[0], (student, problems)


@pytest.mark.parametrize("program, why", [
    ("int main(void) { return *(volatile int *)0; }", "was killed by signal SIGSEGV"),
    ('#include <stdio.h>\nint main(void) { for (long i = 0; i < (1L << 30) / 64; i++)\n'
     '  fputs("0123456789012345678901234567890123456789012345678901234567890123", stdout); }',
     "wrote more output than allowed (an output flood)"),
], ids=["segfault", "output-flood"])
def test_a_driver_names_how_a_c_program_ended(tmp_path, program, why):
    """What a C exercise's driver (qspin-head-claim) runs the student's program with: a segfault is
    named SIGSEGV, not a status of -11, and a 1 GiB flood is stopped at the cap and called one,
    not left to fill the driver's memory."""
    (tmp_path / "p.c").write_text(program + "\n")
    subprocess.run(["gcc", "-O1", "-o", str(tmp_path / "p"), str(tmp_path / "p.c")], check=True)
    r = sandbox.capture([str(tmp_path / "p")], sandbox.Limits(output=4 << 20, wall=600))
    assert r.why == why and len(r.stdout) <= 4 << 20, (r.why, r.status, r.stderr[-500:])


def test_a_result_appears_whole_or_not_at_all(ex, tmp_path, monkeypatch):
    g = grade_code(ex, tmp_path, GOOD)
    out = tmp_path / "out"
    out.mkdir()

    def half(grade, folder):
        (folder / "results.json").write_text("{")
        raise OSError("disk full")

    monkeypatch.setattr(report, "write", half)
    with pytest.raises(OSError):
        report.write_batch_entry(g, out)
    assert list(out.iterdir()) == []


def test_full_marks_twice_under_parallel_cpu_load(ex, tmp_path):
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        subs, out = tmp_path / "subs", tmp_path / "out"
        write_batch(subs, {"first": GOOD, "second": GOOD})
        out.mkdir()
        batch.grade_batch(ex, subs, out, secret="x" * 16, mode="bwrap", jobs=2, read_only=())
    finally:
        for b in burners:
            b.kill()
            b.wait()
    for s in ("first", "second"):
        assert json.loads((out / s / "results.json").read_text())["score"] == 4


def test_gradings_side_by_side_hold_their_own_uids_and_never_kill_each_other(ex, tmp_path):
    """Two graders on one machine (two instructors, two pytest runs) each claim a sandbox uid of
    their own: one grading's sweep of leftover processes never reaches the other's submission.
    The first submission runs until the test says go, which it does once a whole grading has run
    and swept beside it."""
    import threading

    with sandbox.claim() as a, sandbox.claim() as b:
        assert os.geteuid() != 0 or (a is not None and b is not None and a != b)
    scratch = Path(tempfile.mkdtemp(prefix="kstep-test-side-by-side-"))  # where a sandbox uid can reach it
    waiter = ("import os, time\nfor _ in range(1200):\n    if os.path.exists('go'):\n        print('alive')\n"
              "        break\n    time.sleep(0.05)\n")
    got = {}

    def first():
        with sandbox.claim() as uid:
            sandbox.prepare_scratch(scratch, uid)
            got["r"] = sandbox.run([sys.executable, "-c", waiter], scratch, sandbox.Limits(wall=600), uid=uid)

    t = threading.Thread(target=first)
    t.start()
    try:
        assert grade_code(ex, tmp_path, GOOD).score == 4  # claims, runs, sweeps its own uid
    finally:
        (scratch / "go").write_text("")
        t.join()
        shutil.rmtree(scratch)
    assert got["r"].verdict == "ok" and got["r"].stdout == b"alive\n", got["r"]


def test_without_a_working_sandbox_grading_refuses(ex, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no setpriv
    sub = tmp_path / "sub.py"
    sub.write_text(GOOD)
    assert main(["grade", str(ex.path), str(sub)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kstep: no working sandbox, so no grading:") and err.count("\n") == 1


def test_grade_cli_writes_results_and_refuses_bad_input(ex, tmp_path, capsys):
    sub = tmp_path / "sub.py"
    sub.write_text(GOOD)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["grade", str(ex.path), str(sub), "--out", str(out)]) == 0
    assert "answer-ex (version 1): 4/4" in capsys.readouterr().out
    assert json.loads((out / "results.json").read_text())["score"] == 4
    for argv, message in (
            ([str(ex.path), str(tmp_path / "nothing")], "no such file or folder"),
            (["no-such-exercise", str(sub), "--exercises", str(tmp_path)], "unknown exercise 'no-such-exercise'"),
            ([str(ex.path), str(sub), "--out", str(tmp_path / "missing")], "not an existing folder"),
            ([str(ex.path), str(sub), "--student", "bob"], "needs the course secret"),
            ([str(ex.path)], "either SUBMISSION or --batch")):
        assert main(["grade", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_the_weaker_user_mode_still_limits_and_hides_a_closed_folder(ex, tmp_path):
    """Gradescope's fallback: no namespaces, but an unprivileged uid under the same limits, which
    cannot read a folder closed to it (as setup.sh closes /autograder/source).  The sandbox's uid
    must be able to run the grader's Python, which a pyenv under /root is not: the grading runs in
    Debian's own Python, as on Gradescope (test_release's emulated autograder grades this way too)."""
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    (closed / "secret.txt").write_text("CANARY-KSTEP-HIDDEN-closed")
    sub = tmp_path / "submission"
    sub.mkdir()
    reads = f"""
def answer():
    try:
        return open({str(closed / 'secret.txt')!r}).read()
    except OSError:
        return 42
"""
    grading = f"""
import json, sys
from pathlib import Path
from kstep.grading import exercise, harness
ex = exercise.load(Path({str(ex.path)!r}))
if sys.argv[1] == "spin":
    ex = ex._replace(cpu=1)
g = harness.grade(ex, Path({str(sub)!r}), student="s1", secret="x" * 16, mode="user")
print(json.dumps({{"score": g.score, "max": g.max_score, "outputs": {{t.name: t.output for t in g.tests}}}}))
"""
    system_python = "/usr/bin/python3"  # what scripts/setup-system installs
    # The sandbox's uid runs kstep's own grading code too: a copy it can read, wherever the clone lies
    # (a clone in mktemp -d's folder, mode 0700, is closed to it, as /root is)
    shared = Path(tempfile.mkdtemp(prefix="kstep-user-mode-"))
    shared.chmod(0o755)
    shutil.copytree(Path(harness.__file__).resolve().parents[1], shared / "kstep",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(shared)}

    def graded(how: str) -> dict:
        p = subprocess.run([system_python, "-c", grading, how], env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.splitlines()[-1])

    try:
        (sub / "sub.py").write_text(reads)
        g = graded("reads")
        assert g["score"] == g["max"], g
        (sub / "sub.py").write_text("while True:\n    pass\n")
        g = graded("spin")
        assert any(out.startswith("your code ran out of CPU time") for out in g["outputs"].values()), g
    finally:
        shutil.rmtree(shared)
    assert not sandbox_processes()
