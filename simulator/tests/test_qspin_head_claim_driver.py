"""qspin-head-claim's driver.py, which its public and its hidden tests both ask for a race: a run
that never took the queue's paths (the torture tool's exit 4, inconclusive: whether racing CPUs
ever queue is the host's timing) runs again with the next seed, up to three; any other ending is
the answer at once.  It runs the starter's head_claim.c (its queue head never takes the lock) on
x86_64, natively."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import labmake

import kstep
from kstep.grading import exercise

ROOT = Path(__file__).resolve().parents[2]
EX = exercise.load(ROOT / "exercises" / "qspin-head-claim")
# It needs the kernel lab's x86_64 torture objects, which make test builds before its workers start
# (the tests then take about 1 CPU s); make test-fast does not, and building them costs 4 CPU s more.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def starter(tmp_path_factory) -> Path:
    """A scratch folder as the grader fills it, with the starter's head_claim.c."""
    p = labmake.make("-s", "ARCH=x86_64", "build/x86_64/qspinlock-torture")  # the objects the driver links
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    work = tmp_path_factory.mktemp("qspin-head-claim")
    shutil.copy(EX.path / "driver.py", work)
    (work / "head_claim.c").write_text(EX.starter("head_claim.c"))
    return work


def race(work: Path, seed: int, *args: str) -> dict:
    env = {**os.environ, "KSTEP_KERNEL_LAB": str(ROOT / "kernel-lab"),
           "PYTHONPATH": str(Path(kstep.__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "driver.py"], cwd=work, env=env, capture_output=True, text=True, timeout=600,
                       input=json.dumps({"arch": "x86_64", "seed": seed, "args": list(args)}))
    assert r.returncode == 0, r.stderr[-2000:]
    answer = json.loads(r.stdout.splitlines()[-1])
    assert answer["built"], answer
    return answer


def test_an_inconclusive_race_runs_again_with_the_next_seed_up_to_three(starter):
    # one acquisition each: two CPUs cannot take the pending path, the queue and set_locked all
    answer = race(starter, 5, "--threads", "2", "--acquisitions", "1")
    assert answer["status"] == 4 and answer["seed"] == answer["summary"]["seed"] == 7, answer


def test_a_hang_is_the_answer_at_once(starter):
    # a logged run steps its CPUs in the seed's order: the third queues, and the head never claims
    answer = race(starter, 5, "--threads", "3", "--acquisitions", "300", "--hang-timeout", "1", "--log", "run.log")
    assert answer["status"] == 3 and answer["seed"] == answer["summary"]["seed"] == 5, answer
