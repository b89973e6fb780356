"""Benchmark make course's site build from scratch: its wall and CPU seconds on every core.

The course site (``python -m kstep.views.course --jobs NPROC``, the Makefile's line) is built into a
fresh temporary folder, so no doctree or executed-notebook cache helps: what a clean clone's ``make
course`` spends after ``make setup``.  Recorded: wall seconds, CPU seconds of the build and its children
(Sphinx's workers and the notebook kernels), the load average before and after (other work on the machine
stretches the wall time, not the CPU time), the pages written, and each notebook's execution time as
MyST-NB reports it.

Target (issue 21): ``make course`` under 5 minutes on 2 cores, of which ``make setup`` takes about 120 s
on a clean clone; so at most TARGET_WALL_S for the build, on a machine doing nothing else.
``run(out_dir, say)`` writes ``course.json`` there and returns the same dict.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_WALL_S = 180
EXECUTED = re.compile(r"notebooks/(\S+)\.ipynb: Executed notebook in ([\d.]+) seconds")


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run(out: Path, say) -> dict:
    jobs = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="kstep-course-bench-") as tmp:
        site = Path(tmp) / "course"
        load_before = os.getloadavg()
        say(f"course: building the site from scratch with --jobs {jobs} (a few minutes)")
        cpu, start = cpu_seconds(), time.perf_counter()
        built = subprocess.run([sys.executable, "-m", "kstep.views.course", "--docs", str(ROOT / "docs"),
                                "--out", str(site), "--jobs", str(jobs)], capture_output=True, text=True)
        wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        if built.returncode != 0:
            raise RuntimeError(f"the course site did not build:\n{built.stderr[-3000:]}")
        pages = sum(1 for _ in site.rglob("*.html"))
    result = {
        "jobs": jobs, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "pages": pages,
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "notebooks_s": {name: float(s) for name, s in EXECUTED.findall(built.stdout + built.stderr)},
        "target_wall_s": TARGET_WALL_S,
    }
    say(f"course: {pages} pages in {wall:.0f} s wall, {cpu:.0f} s CPU on {jobs} cores "
        f"(load {load_before[0]:.1f} before; target {TARGET_WALL_S} s wall on an idle machine)")
    (out / "course.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
