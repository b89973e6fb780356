"""A class's worth of submissions, hostile ones mixed in: ``make test-grade-batch``.

One hundred students hand in answer-ex (the grader's test exercise): most are right, some wrong,
and the rest are every hostile case of test_grading.py, as folders, single ``<id>.py`` files and
zip archives: code that loops, sleeps, forks, floods, crashes or exits, and entries that are no
file to read (a FIFO, a link to /dev/zero, a folder where a file belongs, an oversized file, damaged
deflate and LZMA streams, zip bombs).  The batch must finish, write every result, score each as it
deserves, say why in one line, leave nothing running, and a second run must skip them all.  Marked
``batch``: it takes minutes, so make test leaves it out (it runs one of each kind, test_grading.py).
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kstep.grading import batch, exercise

from test_grading import CANARIES, FORK_BOMB, GOOD, bomb, damaged_zip, sandbox_processes

HERE = Path(__file__).resolve().parent
HOSTILE = {
    "loop": "while True:\n    pass\n",
    "sleep": "import time\ntime.sleep(3600)\n",
    "segfault": "import ctypes\nctypes.string_at(0)\n",
    "output": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
    "memory": "x = bytearray(1 << 34)\n",
    "fork-bomb": FORK_BOMB,
    "network": "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=3)\ndef answer():\n    return 42\n",
    "escape": "open('/tmp/kstep-batch-escaped', 'w').write('x')\ndef answer():\n    return 42\n",
    "sys-exit": "import sys\nsys.exit(0)\n",
    "os-exit": "import os\nos._exit(0)\n",
}
WRONG = "def answer():\n    return 41\n"
# Entries that are no file to read, and the line that says so in the student's summary.
SPECIAL = {"s090": "is a FIFO", "s091": "a symbolic link", "s092": "is a directory (a file was expected)",
           "s093": "larger than", "s094": "damaged in the archive", "s095": "damaged in the archive",
           "s096": "compressed with zip method 12", "s097": "larger than"}


def special_entry(subs: Path, student: str) -> None:
    if student == "s090":
        os.mkfifo(subs / f"{student}.py")
    elif student == "s091":
        (subs / f"{student}.py").symlink_to("/dev/zero")
    elif student == "s092":
        (subs / f"{student}.py").mkdir()
    elif student == "s093":
        (subs / f"{student}.py").write_text("#" * (1 << 20))
    elif student in ("s094", "s095"):
        damaged_zip(subs / f"{student}.zip", zipfile.ZIP_DEFLATED if student == "s094" else zipfile.ZIP_LZMA)
    elif student == "s096":
        bomb(subs / f"{student}.zip", zipfile.ZIP_BZIP2, 1024)
    else:
        bomb(subs / f"{student}.zip", zipfile.ZIP_LZMA, 768)


@pytest.mark.batch
def test_a_batch_of_one_hundred_finishes_and_loses_nothing(tmp_path):
    folder = tmp_path / "exercises" / "answer-ex"
    shutil.copytree(HERE / "data" / "grading" / "answer-ex", folder)
    ex = exercise.load(folder)._replace(wall=20)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    out.mkdir()
    expected = {}
    for k in range(100):
        student = f"s{k:03d}"
        expected[student] = 0
        if student in SPECIAL:
            special_entry(subs, student)
            continue
        if k < len(HOSTILE):
            name = list(HOSTILE)[k]
            code, score = HOSTILE[name], 0
        elif k % 10 == 9:
            code, score = WRONG, 0
        else:
            code, score = GOOD, 4
        if k % 3 == 0:  # some as zip archives, one of them with a zip-slip entry beside the file
            with zipfile.ZipFile(subs / f"{student}.zip", "w") as z:
                z.writestr("folder/sub.py", code)
                if k == 12:
                    z.writestr("../../evil.py", "x")
        elif k % 3 == 1:  # some as the single file <id>.py, which is the exercise's sub.py
            (subs / f"{student}.py").write_text(code)
        else:
            (subs / student).mkdir()
            (subs / student / "sub.py").write_text(code)
        expected[student] = score
    graded, done = batch.grade_batch(ex, subs, out, secret="batch-secret-0123456789", mode="bwrap", jobs=2,
                                     read_only=(), progress=batch.say)
    assert (graded, done) == (100, 0)
    got = {}
    for student in expected:
        results = json.loads((out / student / "results.json").read_text())
        got[student] = results["score"]
        text = "".join((out / student / f).read_text() for f in ("results.json", "junit.xml", "summary.txt"))
        assert not any(c in text for c in CANARIES)
    assert got == expected
    for student, why in SPECIAL.items():
        problems = [line for line in (out / student / "summary.txt").read_text().splitlines()
                    if line.startswith("submission: ")]
        assert len(problems) == 1 and why in problems[0], (student, problems)
    for name in ("sys-exit", "os-exit"):
        public = json.loads((out / f"s{list(HOSTILE).index(name):03d}" / "results.json").read_text())["tests"][0]
        assert "sys.exit(0)" in public["output"] or "sys.exit() or os._exit()" in public["output"], public
    assert "zip-slip" in (out / "s012" / "summary.txt").read_text()
    assert not Path("/tmp/kstep-batch-escaped").exists() and not (tmp_path.parent / "evil.py").exists()
    assert not sandbox_processes()
    assert batch.grade_batch(ex, subs, out, secret="batch-secret-0123456789", mode="bwrap", jobs=2,
                             read_only=()) == (0, 100)


@pytest.mark.batch
def test_a_zip_bomb_is_read_in_bounded_memory(tmp_path):
    """A 1 GiB LZMA member (about 150 KB in the archive) read by the intake of a process that may
    use 384 MiB: it is refused at its size cap, decompressed no further."""
    path = bomb(tmp_path / "bomb.zip", zipfile.ZIP_LZMA, 1024)
    probe = ("from kstep.grading import submission\n"
             f"t = submission.take({str(path)!r}, ('sub.py',), 256 << 10)\nprint(t.problems)\n")
    limit = 384 << 20
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)))
    assert r.returncode == 0 and "sub.py: larger than 262144 bytes, refused" in r.stdout, r.stderr[-2000:]


# The C exercise's own hostile cases (test_grading.py runs them through the driver's capture alone): a
# program of the class that crashes or floods as it starts, beside a right one, graded to the end.
ROOT = HERE.parents[1]
C_HOSTILE = {
    # the pointer and the store are volatile: GCC drops a plain store through NULL as undefined behaviour
    "c-segfault": ("__attribute__((constructor)) static void crash(void) { volatile int *volatile p = 0; *p = 1; }",
                   "was killed by signal SIGSEGV"),
    "c-flood": ("#include <stdio.h>\n__attribute__((constructor)) static void flood(void) {\n"
                "    for (long i = 0; i < (1L << 30) / 64; i++)\n"
                '        fputs("0123456789012345678901234567890123456789012345678901234567890123", stdout);\n}',
                "wrote more output than allowed (an output flood)"),
}


@pytest.mark.batch
def test_a_c_batch_names_a_segfault_and_a_flood_and_grades_the_rest(tmp_path):
    lab = ROOT / "kernel-lab"
    assert all((lab / "build" / a / "obj" / "torture").is_dir() for a in ("x86_64", "arm64", "ppc64le")), \
        "the kernel lab is not built: make lab"
    ex = exercise.load(ROOT / "exercises" / "qspin-head-claim")
    solution = (ex.path / "solution" / "head_claim.c").read_text()
    subs, out = tmp_path / "subs", tmp_path / "out"
    out.mkdir()
    for student, code in {"right": solution, **{k: solution + "\n" + c for k, (c, _) in C_HOSTILE.items()}}.items():
        (subs / student).mkdir(parents=True)
        (subs / student / "head_claim.c").write_text(code)
    graded, _ = batch.grade_batch(ex, subs, out, secret="batch-secret-0123456789", mode="bwrap", jobs=1,
                                  read_only=(lab,))
    assert graded == 3
    results = {s: json.loads((out / s / "results.json").read_text()) for s in ("right", *C_HOSTILE)}
    assert results["right"]["score"] == 10, results["right"]
    for student, (_, why) in C_HOSTILE.items():
        assert results[student]["score"] == 0
        for t in results[student]["tests"]:
            assert why in t["output"], (student, t["name"], t["output"][-500:])
    assert not sandbox_processes()
