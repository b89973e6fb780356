"""klitmus-style runs at length: every litmus test the hardware models accept, 10^5 iterations on
each architecture (x86_64 natively, arm64 and ppc64le under qemu-user), every final state seen
checked against the architecture's model (kernel-lab/scripts/klitmus), the counts in
bench/results/klitmus.json.  make test runs the same with 2,000 iterations.  A final state a model
does not allow fails the benchmark.

``python bench/run.py klitmus`` runs it alone; `make bench` runs it with the others.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS, SIZE = 100, 1000


def run(out: Path, say) -> list:
    path = out / "klitmus.json"
    say(f"klitmus: {RUNS * SIZE} iterations of each test on x86_64, arm64 and ppc64le")
    done = subprocess.run([sys.executable, str(ROOT / "kernel-lab/scripts/klitmus"), "--runs", str(RUNS),
                           "--size", str(SIZE), "--json", str(path)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"klitmus: a final state no model allows, or a failed run:\n{done.stdout}{done.stderr}")
    results = json.loads(path.read_text())
    for r in results:
        if r["weak"]:
            say(f"  {r['test']} on {r['arch']}: weak states seen: "
                + ", ".join(f"{s} ({r['seen'][s]})" for s in r["weak"]))
    return results

