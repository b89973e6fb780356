"""A class's worth of submissions, hostile ones mixed in: ``make test-grade-batch``.

One hundred students hand in answer-ex (the grader's test exercise): most are right, some wrong,
and the rest are the hostile cases of test_grading.py, as folders and as zip archives.  The batch
must finish, write every result, score each as it deserves, leave nothing running, and a second
run must skip them all.  Marked ``batch``: it takes minutes, so make test leaves it out.
"""

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from kstep.grading import batch, exercise

from test_grading import CANARIES, FORK_BOMB, GOOD, sandbox_processes

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
}
WRONG = "def answer():\n    return 41\n"


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
    assert "zip-slip" in (out / "s012" / "summary.txt").read_text()
    assert not Path("/tmp/kstep-batch-escaped").exists() and not (tmp_path.parent / "evil.py").exists()
    assert not sandbox_processes()
    assert batch.grade_batch(ex, subs, out, secret="batch-secret-0123456789", mode="bwrap", jobs=2,
                             read_only=()) == (0, 100)
