"""scripts/test-timeline: each make-test worker's files in the order it ran them, from pytest-xdist's
verbose lines and --durations=0, and how long the first worker to finish waits for the last."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-timeline"

# Two workers, as pytest -n 2 -v --durations=0 prints them: gw1 runs a.py then c.py, gw0 runs b.py;
# a test's setup and teardown count with its call, and a file left for later (c.py after b.py's
# lines) is still gw1's.
LOG = """\
[gw1] [ 20%] PASSED simulator/tests/test_a.py::test_one
[gw0] [ 40%] PASSED simulator/tests/test_b.py::test_slow[x y]
[gw1] [ 60%] PASSED simulator/tests/test_a.py::test_two
[gw1] [ 80%] FAILED simulator/tests/test_c.py::test_three
[gw0] [100%] PASSED simulator/tests/test_b.py::test_quick
============================== slowest durations ===============================
30.00s call     simulator/tests/test_b.py::test_slow[x y]
4.00s call     simulator/tests/test_c.py::test_three
2.50s setup    simulator/tests/test_a.py::test_one
1.00s call     simulator/tests/test_a.py::test_one
0.50s teardown simulator/tests/test_a.py::test_two
0.25s call     simulator/tests/test_b.py::test_quick
"""


def timeline(tmp_path, text, *args):
    log = tmp_path / "test.log"
    log.write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), *(args or [str(log)])], capture_output=True, text=True)


def test_each_worker_sums_its_files_in_the_order_it_ran_them(tmp_path):
    run = timeline(tmp_path, LOG)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "gw0:    30.2 s busy, 1 files; the last 1:",
        "        0.0-   30.2 s    30.2 s  simulator/tests/test_b.py",
        "gw1:     8.0 s busy, 2 files; the last 2:",
        "        0.0-    4.0 s     4.0 s  simulator/tests/test_a.py",
        "        4.0-    8.0 s     4.0 s  simulator/tests/test_c.py",
        "gw1 waits 22.2 s for gw0 at the end",
    ]


def test_bad_input_is_one_line_and_status_2(tmp_path):
    for args, says in [((), "usage: scripts/test-timeline LOG"), ((str(tmp_path / "none.log"),), "cannot read"),
                       ((str(tmp_path),), "is a directory"), (("/dev/zero",), "is a character device"),
                       (("--help",), "usage:")]:
        run = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
        assert run.returncode == 2 and run.stdout == "", (args, run)
        assert len(run.stderr.splitlines()) == 1 and says in run.stderr, (args, run.stderr)
    run = timeline(tmp_path, "3 passed in 1.00s\n")  # not run with -n and -v
    assert run.returncode == 2 and "no xdist worker lines" in run.stderr


def test_it_reads_standard_input():
    run = subprocess.run([sys.executable, str(SCRIPT), "-"], input=LOG, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.endswith("gw1 waits 22.2 s for gw0 at the end\n")
