"""`kstep explore --memory-model tso` against sc on the whole mechanism models, in the same run.

For qspinlock two-waiters and vma-locks recheck-race (their kernel variants, each scenario's own
store_buffer bound), one search per memory model, each in a fresh child process: the verdict,
states stored, transitions, CPU seconds to the verdict and peak resident memory.  Each memory model
runs with every reduction explore uses by default (symmetry, partial-order reduction; the store
buffers take part in both: engine/memory_model.py) and without them, so the rows say how much of
the difference is the reductions and how much the buffers.

``python bench/run.py explore-tso`` runs it alone (writes bench/results/explore_tso.json);
`make bench` runs it with the others.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = (("qspinlock", "two-waiters"), ("vma-locks", "recheck-race"))
ROWS = (("sc", "sc", True), ("sc, no symmetry/por", "sc", False), ("tso", "tso", True),
        ("tso, no symmetry/por", "tso", False))

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {simulator!r})
import kstep
from kstep.models import MODELS
ex = kstep.open({mech!r}, {name!r}, MODELS[{mech!r}].default_variant).under({memory!r})
start = time.process_time()
r = ex.explore(symmetry={reduce!r}, por={reduce!r})
print(json.dumps({{"verdict": r.verdict, "states": r.states, "transitions": r.transitions,
                  "cpu_seconds": round(time.process_time() - start, 3), "store_buffer": ex.scenario.store_buffer,
                  "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}}))
"""


def search(mech: str, name: str, memory: str, reduce: bool) -> dict:
    code = CHILD.format(simulator=str(ROOT / "simulator"), mech=mech, name=name, memory=memory, reduce=reduce)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run(out_dir, say=print) -> dict:
    rows: dict = {}
    for mech, name in RUNS:
        key = f"{mech} {name}"
        rows[key] = {}
        for label, memory, reduce in ROWS:
            say(f"explore_tso bench: {key} {label} ...")
            rows[key][label] = row = {**search(mech, name, memory, reduce),
                                      "load_average_1min": round(os.getloadavg()[0], 2)}
            say(f"explore_tso bench: {key} {label}: {row}")
        rows[key]["tso / sc states"] = round(rows[key]["tso"]["states"] / rows[key]["sc"]["states"], 1)
    result = {
        "machine": {"host": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "measured": "per search in a child process: verdict, states stored, transitions, CPU seconds, peak "
                    "resident MiB; the kernel variant; store buffers as deep as the scenario's store_buffer",
        "rows": rows,
    }
    (Path(out_dir) / "explore_tso.json").write_text(json.dumps(result, indent=1) + "\n")
    return result

