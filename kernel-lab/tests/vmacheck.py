"""The per-VMA lock port's checks (kernel-lab/vma-locks), for every architecture.

labcheck.py adds these to its list, so ``make -C kernel-lab test`` and
``simulator/tests/test_kernel_lab.py`` run them with the qspinlock checks.  Logs are replayed as
``kstep check vma-locks`` replays them, by one ``python -m kstep.lab.replay vma-locks`` for every
check of the process, from the project's virtual environment (``make setup``).

The torture mode runs every variant through one fixed menu of configurations (seeds, random step
delays, a stall before one step that widens a race window), the same for all: v6.12, v6.12.0 and
no-per-vma-lock must come through every run with the checker accepting the log; each broken
variant must be caught in some run, by the port itself (a use-after-free on a poisoned VMA, a
hang) or by the checker (a step the model does not allow, a broken invariant, a run that did not
finish).
"""

from __future__ import annotations

import atexit
import select
import subprocess
import tempfile
from pathlib import Path

TOOL = "vma-locks-torture"
CORRECT = ("v6.12", "v6.12.0", "no-per-vma-lock")
BROKEN = ("no-recheck", "free-immediately", "no-detached-check", "end-read-outside-rcu", "no-seq-bump",
          "write-lock-without-rwsem", "anon-prepare-blocks", "mprotect-without-vma-lock",
          "map-fixed-without-unmap", "fork-without-vma-locks", "gp-ends-early", "early-callback")
# The menu: (extra arguments) in the order tried; every run also has a seed of SEEDS.
# The stall before __vmf_anon_prepare holds a fault under its VMA lock, with no anon_vma yet, while a
# writer takes mmap_lock and waits for that VMA: the window anon-prepare-blocks deadlocks in, which
# the other runs reach only by chance (under qemu-aarch64, in none of nine runs).
MENU = ((), ("--stall-before", "vma_start_read:1000"), ("--stall-before", "rwsem_wake:20000"),
        ("--stall-before", "__vmf_anon_prepare:20000"))
SEEDS = (1, 2, 3)
BASE = ["--faulters", "3", "--repeat", "3", "--writer-repeat", "10", "--step-delay", "20000", "--hang-seconds", "3"]
CAUGHT_BY_CHECKER = "NOT"  # the checker's verdicts for a rejected log start with it


REPLAY_TIMEOUT_S = 600
_REPLAYER: dict = {}  # the replaying process, started by the first check that needs it


def replayer(lab, repo: Path) -> subprocess.Popen:
    """``python -m kstep.lab.replay vma-locks`` from the project's virtual environment, started once for
    every check this process runs (Python and the model take longer to load than a log of the menu
    takes to replay): it answers each log path it is given with one line."""
    if "process" not in _REPLAYER:
        python = repo / ".venv" / "bin" / "python"
        if not python.exists():
            raise lab.LabFailure(f"{python.relative_to(repo)} is missing: run 'make setup' (kstep check replays the logs)")
        p = subprocess.Popen([str(python), "-m", "kstep.lab.replay", "vma-locks"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo / "simulator")
        atexit.register(_stop, p)
        _REPLAYER["process"] = p
    return _REPLAYER["process"]


def _stop(p: subprocess.Popen) -> None:
    p.stdin.close()
    p.wait()


def kstep_check(lab, repo: Path, log: Path) -> tuple[int, str]:
    """(exit status, verdict) of ``kstep check vma-locks LOG``, from the replaying process."""
    p = replayer(lab, repo)
    p.stdin.write(f"{log}\n")
    p.stdin.flush()
    ready, _, _ = select.select([p.stdout], [], [], REPLAY_TIMEOUT_S)
    line = p.stdout.readline() if ready else ""
    if not line:
        _REPLAYER.clear()
        p.kill()
        stderr = p.communicate()[1].strip()[-2000:]
        why = f"exited: {stderr}" if ready else f"gave no answer in {REPLAY_TIMEOUT_S} s"
        raise lab.LabFailure(f"python -m kstep.lab.replay vma-locks {why} (replaying {log.name})")
    status, verdict = line.rstrip("\n").split(" ", 1)
    return int(status), verdict


def run(lab, arch: str, variant: str, seed: int, extra: tuple, log: Path):
    return lab.run_tool(arch, TOOL, ["--variant", variant, "--seed", seed, "--log", log] + BASE + list(extra),
                        timeout=300)


def check_clean(lab, arch: str, variant: str) -> str:
    """Every run of the menu finishes cleanly and kstep check accepts its log."""
    steps = 0
    with tempfile.TemporaryDirectory() as tmp:
        for extra in MENU:
            for seed in SEEDS:
                log = Path(tmp) / "run.log"
                r = run(lab, arch, variant, seed, extra, log)
                if r.rc != 0:
                    raise lab.LabFailure(f"{r.describe()}: exit {r.rc}: {r.stderr}")
                rc, verdict = kstep_check(lab, lab.REPO, log)
                if rc != 0:
                    raise lab.LabFailure(f"{r.describe()}: kstep check vma-locks rejects the log: {verdict}")
                steps += len(log.read_text().splitlines()) - 2
    return f"{len(MENU) * len(SEEDS)} runs, {steps} steps, every log accepted"


def check_caught(lab, arch: str, variant: str) -> str:
    """Some run of the menu catches the broken variant (the port, or kstep check on its log)."""
    tried = []
    with tempfile.TemporaryDirectory() as tmp:
        for extra in MENU:
            for seed in SEEDS:
                log = Path(tmp) / "run.log"
                r = run(lab, arch, variant, seed, extra, log)
                rc, verdict = kstep_check(lab, lab.REPO, log)
                what = " ".join(extra) or "no stall"
                if r.rc == 1:
                    return f"seed {seed}, {what}: the port: {r.stderr.splitlines()[-1]}; kstep check: {verdict}"
                if r.rc != 0:
                    raise lab.LabFailure(f"{r.describe()}: exit {r.rc}: {r.stderr}")
                if rc == 1 and verdict.startswith(CAUGHT_BY_CHECKER):
                    return f"seed {seed}, {what}: kstep check: {verdict}"
                tried.append(f"seed {seed}, {what}: {verdict}")
    raise lab.LabFailure(f"{arch}: no run caught {variant}: " + "; ".join(tried))


def check_bad_input(lab, arch: str) -> str:
    r = lab.run_tool(arch, TOOL, ["--variant", "no-such-variant"], timeout=60)
    if r.rc != 2 or len(r.stderr.splitlines()) != 1:
        raise lab.LabFailure(f"{r.describe()}: expected exit 2 and one line, got exit {r.rc}: {r.stderr!r}")
    return r.stderr


def checks(lab) -> list:
    out = []
    for arch in lab.ARCHES:
        out.append(lab.Check(f"{arch}-vma-locks-bad-input", check_bad_input, (lab, arch)))
        for variant in CORRECT:
            out.append(lab.Check(f"{arch}-vma-locks-{variant}-torture-clean", check_clean, (lab, arch, variant)))
        for variant in BROKEN:
            out.append(lab.Check(f"{arch}-vma-locks-{variant}-caught", check_caught, (lab, arch, variant)))
    return out
