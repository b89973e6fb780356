"""``make`` in the kernel lab, one run at a time on this machine: pytest's workers build the ports
they need themselves (make test-fast builds none first), and two makes writing the same objects at
once would race.  A file lock makes the later one wait, then find the ports built."""

import fcntl
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "kernel-lab"


def make(*args: str, lab: Path = LAB) -> subprocess.CompletedProcess:
    """``make -C lab args...``, its output captured as text."""
    (ROOT / "build").mkdir(exist_ok=True)
    with open(ROOT / "build" / "kernel-lab.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(["make", "-C", str(lab), *args], capture_output=True, text=True)
