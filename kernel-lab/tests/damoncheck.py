"""The DAMON port's checks (kernel-lab/damon), for every architecture.

labcheck.py adds these to its list, so ``make -C kernel-lab test`` and
``simulator/tests/test_kernel_lab.py`` run them with the others.  The simulator writes every
bundled damon scenario's parameters and its own output (``python -m kstep.lab.replay.damon DIR``, from
the project's virtual environment, ``make setup``); each run of the port happens in a directory
holding nothing but its parameter file, and must print exactly the simulator's text.  The build
with ``<`` for ``<=`` in damon_merge_regions_of()'s threshold test must differ on some scenario.
The KUnit cases run as damon-kunit, in KTAP.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

KUNIT_LINE = re.compile(r"    (ok|not ok) (\d+) (\w+)( # SKIP .*)?$")
_CASES: dict = {}  # the simulator's cases, written once per process: (directory, names)


def simulator_cases(lab) -> tuple[Path, list[str]]:
    if not _CASES:
        tmp = Path(tempfile.mkdtemp(prefix="damoncheck-"))
        atexit.register(shutil.rmtree, tmp, True)
        _CASES["cases"] = (tmp, write_cases(lab, tmp))
    return _CASES["cases"]


def write_cases(lab, tmp: Path) -> list[str]:
    python = lab.REPO / ".venv" / "bin" / "python"
    if not python.exists():
        raise lab.LabFailure(f"{python.relative_to(lab.REPO)} is missing: run 'make setup' (the simulator writes "
                             "the expected outputs)")
    p = subprocess.run([str(python), "-m", "kstep.lab.replay.damon", str(tmp)], capture_output=True, text=True,
                       timeout=600, cwd=lab.REPO)
    if p.returncode:
        raise lab.LabFailure(f"python -m kstep.lab.replay.damon failed: {p.stderr.strip()[-2000:]}")
    return p.stdout.split()


def run_port(lab, arch: str, binary: str, run_dir: Path) -> subprocess.CompletedProcess:
    """The port on run_dir/params, in run_dir, which must still hold nothing else afterwards."""
    p = subprocess.run(lab.QEMU[arch] + [str(lab.tool(arch, binary)), "params"], cwd=run_dir, capture_output=True,
                       text=True, timeout=300)
    if sorted(q.name for q in run_dir.iterdir()) != ["params"]:
        raise lab.LabFailure(f"{arch}: {binary} wrote into its directory")
    return p


def differences(lab, arch: str, binary: str) -> list[str]:
    """The bundled scenarios on which the port's output is not the simulator's."""
    tmp, names = simulator_cases(lab)
    out = []
    for name in names:
        p = run_port(lab, arch, binary, tmp / name)
        if p.returncode or p.stderr:
            raise lab.LabFailure(f"{arch}: {binary} on {name}: exit {p.returncode}: {p.stderr.strip()}")
        if p.stdout != (tmp / f"{name}.expected").read_text():
            out.append(name)
    return out


def check_identity(lab, arch: str) -> str:
    differ = differences(lab, arch, "damon")
    if differ:
        raise lab.LabFailure(f"{arch}: the port's output differs from the simulator's on {', '.join(differ)}")
    return "every bundled damon scenario: the simulator's output, byte for byte"


def check_mutation_caught(lab, arch: str) -> str:
    differ = differences(lab, arch, "damon-merge-lt")
    if not differ:
        raise lab.LabFailure(f"{arch}: damon-merge-lt (< for <= in the merge threshold test) printed the "
                             "simulator's output on every scenario")
    return f"damon-merge-lt differs on {len(differ)} scenarios ({', '.join(differ[:3])} ...)"


def kunit_results(lab, arch: str) -> dict[str, str]:
    """{case: "ok" | "not ok" | "skip"} from damon-kunit's KTAP, in order."""
    p = subprocess.run(lab.QEMU[arch] + [str(lab.tool(arch, "damon-kunit"))], capture_output=True, text=True,
                       timeout=120)
    out = {}
    for line in p.stdout.splitlines():
        m = KUNIT_LINE.match(line)
        if m:
            out[m.group(3)] = "skip" if m.group(4) else m.group(1)
    if p.returncode != (1 if "not ok" in out.values() else 0):
        raise lab.LabFailure(f"{arch}: damon-kunit exit {p.returncode} disagrees with its KTAP: {p.stderr.strip()}")
    return out


def check_kunit(lab, arch: str) -> str:
    results = kunit_results(lab, arch)
    failed = [name for name, r in results.items() if r == "not ok"]
    if failed:
        raise lab.LabFailure(f"{arch}: damon-kunit: {', '.join(failed)} failed")
    ran = sum(r == "ok" for r in results.values())
    return f"{ran} KUnit cases pass, {len(results) - ran} not applicable"


def checks(lab) -> list:
    out = []
    for arch in lab.ARCHES:
        out += [lab.Check(f"{arch}-damon-kunit", check_kunit, (lab, arch)),
                lab.Check(f"{arch}-damon-identity", check_identity, (lab, arch)),
                lab.Check(f"{arch}-damon-merge-lt-caught", check_mutation_caught, (lab, arch))]
    return out
