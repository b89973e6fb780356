"""Engine speed on the per-VMA lock model, android-app-launch: simulated and explored states/s,
and the peak memory of a 10^6-state exploration (measured in a child process)."""

import json
import os
import platform
import resource
import subprocess
import sys
import time

import kstep
from kstep.engine import Random, explore, simulate

MECH, SCENARIO = "vma-locks", "android-app-launch"
SIM_SIZE = ["threads.0.count=8", "threads.0.repeat=20", "threads.1.repeat=10"]
EXPLORE_SIZE = ["threads.0.count=3"]
TARGETS = {"steps_per_s": 100_000, "states_per_s": 30_000, "peak_mib_1e6_states": 1024}


def _initial(overrides):
    ex = kstep.open(MECH, SCENARIO, overrides=overrides)
    return ex.model, ex.start


def steps_per_s(check: bool, seconds: float = 3.0) -> tuple[float, float]:
    """(steps per CPU second, per wall second): the machine may be shared, the CPU time is ours."""
    model, s0 = _initial(SIM_SIZE)
    steps, cpu, wall, seed = 0, time.process_time(), time.perf_counter(), 1
    while time.process_time() - cpu < seconds:
        steps += len(simulate(model, s0, Random(seed), check=check, max_steps=1_000_000))
        seed += 1
    return steps / (time.process_time() - cpu), steps / (time.perf_counter() - wall)


def states_per_s(max_states: int = 300_000) -> tuple[float, float, int]:
    model, s0 = _initial(EXPLORE_SIZE)
    cpu, wall = time.process_time(), time.perf_counter()
    r = explore(model, s0, max_states=max_states)
    return r.states / (time.process_time() - cpu), r.states / (time.perf_counter() - wall), r.states


def peak_mib(states: int) -> float:
    """Explore `states` states in a fresh interpreter and read its peak resident set."""
    code = (f"import sys; sys.argv=['x']; from bench.engine import _initial; from kstep.engine import explore;"
            f"m, s0 = _initial({EXPLORE_SIZE!r}); r = explore(m, s0, max_states={states}); print(r.states)")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the only child: its peak


def run(out_dir, say=print) -> dict:
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})  # the targets are per core
    try:
        return _measure(out_dir, say)
    finally:
        os.sched_setaffinity(0, cpus)


def _measure(out_dir, say) -> dict:
    say("engine: simulating without checks ...")
    plain, plain_wall = steps_per_s(check=False)
    say("engine: simulating with every invariant checked ...")
    checked, checked_wall = steps_per_s(check=True)
    say("engine: exploring 300,000 states ...")
    explored, explored_wall, n = states_per_s()
    say("engine: exploring 10^6 states in a child process for peak memory (about a minute) ...")
    mib = peak_mib(1_000_000)
    result = {
        "model": f"{MECH} / {SCENARIO}",
        "python": platform.python_version(),
        "steps_per_s": round(plain),
        "checked_steps_per_s": round(checked),
        "states_per_s": round(explored),
        "explored_states": n,
        "rates_are": "per second of this process's CPU time on one pinned core",
        "wall_clock": {"steps_per_s": round(plain_wall), "checked_steps_per_s": round(checked_wall),
                       "states_per_s": round(explored_wall)},
        "load_average_1min": round(os.getloadavg()[0], 2),
        "peak_mib_1e6_states": round(mib, 1),
        "targets": TARGETS,
    }
    (out_dir / "engine.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
