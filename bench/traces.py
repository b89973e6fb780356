"""Trace files: peak memory and time of writing one (`kstep run --json`) and of reading it back
(`kstep show`, which re-runs the scheduler and compares every step), as the trace grows.

Each measurement is a separate `python -m kstep` process; its peak resident set comes from
wait4's rusage, so it is the whole process, interpreter and imports included.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# four CPUs taking lock A eight times per round, `repeat` rounds: about 13 steps per acquisition
REPEATS = (5, 25, 100)


def scenario(repeat: int) -> str:
    cpu = f"[[cpus]]\nlocks = {json.dumps(['A'] * 8)}\nrepeat = {repeat}\n"
    return 'description = "bench"\nlook_for = "memory"\n' + cpu * 4


def measure(argv: list) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kstep", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"kstep {' '.join(argv)} failed: {err}")
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def run(out_dir, say=print) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in REPEATS:
            sc, trace = Path(tmp) / f"r{repeat}.toml", Path(tmp) / f"r{repeat}.json"
            sc.write_text(scenario(repeat))
            say(f"traces: writing and showing a qspinlock trace, repeat {repeat} ...")
            write = measure(["run", "qspinlock", "--scenario", str(sc), "-s", "1", "--json", str(trace)])
            with trace.open() as f:
                steps = sum(1 for line in f if line.startswith('{"actor"'))
            show = measure(["show", str(trace)])
            rows.append({"steps": steps, "file_mib": round(trace.stat().st_size / 2**20, 1), "write": write,
                         "show": show})
    result = {"mechanism": "qspinlock", "rows": rows}
    (out_dir / "traces.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
