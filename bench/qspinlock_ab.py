"""Patch 07/11's microbenchmark on the lab's port: 6.12's qspinlock against ``before-set-locked``.

The thread (002_2d9274d1d3d00671.txt:34-45) times "the 5M loop micro-benchmark" on a 4-socket
Westmere-EX: 3 to 8 tasks each taking and releasing one lock 5M times (read as 5M per task: the
thread's times then give about 150 ns per acquisition at every task count, 2324 ms / 15M and
5759 ms / 40M), and finds the queue head's plain ``set_locked()`` store 2-3% faster than its
``cmpxchg``.  Here each run is qspinlock-torture with no delays (an empty critical section that
bumps a counter on a line of its own: the thread's "standalone" column), ``--acquisitions LOOPS``
per thread.  The torture build, not qspinlock-bench, because its step counts say how each run took
the lock (from pending, by the head's store, by the head's cmpxchg) and because it yields a waiter
every 256 polls when there are more threads than processors: without that an MCS queue whose next
waiter is preempted stalls until the host's scheduler runs it (3 threads x 1M loops of qspinlock-bench
had not ended after 11 minutes on this 2-CPU host at load 25).  Both variants pay the same counters.

x86_64 runs natively and is timed: PAIRS pairs per thread count, interleaved, the first of a pair
alternating (AB BA AB ...) so that a load drifting during a pair falls on each variant first as
often as second.  Each pair gives the ratio of the two runs' times (6.12 / before-set-locked); the
result is the mean of the pairs' log-ratios with a two-sided 95% Student t interval (bench/ab.py's
``interval``), given back as a ratio.  Every run is kept, none is dropped to narrow the interval,
and the host's load average is recorded before and after.  A thread count above the host's CPUs is
oversubscribed: its time is the host scheduler's as much as the lock's, which the kernel's spinners
(preemption off) never see; so the seed's counts that fit the host are run, or 3 (the fewest that
queue a waiter behind the head, where set_locked applies) when none fit.

arm64 and ppc64le run under qemu-user on the same host, where time measures the emulator, so they
report counts only: acquisitions and the port's step counts, per run, no times.

    python bench/qspinlock_ab.py [--loops N] [--threads 3,4] [--pairs N] [--qemu-loops N] [--out FILE]
    make bench BENCH=qspinlock-ab
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ab import interval  # noqa: E402
from bench.qspinlock import _lab  # noqa: E402

LABCHECK = _lab("labcheck")

VARIANTS = ("v6.12", "before-set-locked")
SEED_LOOPS = 5_000_000
SEED_THREADS = (3, 4, 5, 6, 7, 8)
SEED_CHANGE = (-0.03, -0.02)  # the thread's same-node %Change, 3 to 8 tasks
PAIRS = 10
QEMU_ARCHES = ("arm64", "ppc64le")
QEMU_LOOPS = 20_000  # per thread; emulated runs give counts, and counts need no 5M
QEMU_RUNS = 3
DELAYS = ["--delay-in", "0", "--delay-out", "0"]
HANG_S = 120
# How a run took the lock, by the port's step labels (kernel/locking/qspinlock.c).
EVENTS = {
    "pending": "clear_pending_set_locked",  # took it from pending: *,1,0 -> *,0,1
    "queued": "xchg_tail",  # queued behind an MCS tail
    "head_store": "set_locked",  # the queue head's plain store (patch 07/11), others queued behind
    "head_cmpxchg": "claim_cmpxchg",  # the head's cmpxchg attempts: alone in the queue, or always before 07/11
}


def events(steps: dict) -> dict:
    """A run's ``EVENTS``, from the step counts of its summary."""
    return {name: steps.get(label, 0) for name, label in EVENTS.items()}


def thread_counts(cpus: int) -> tuple[int, ...]:
    """The seed's task counts that fit the host's CPUs, or the fewest that queue behind a head."""
    return tuple(n for n in SEED_THREADS if n <= cpus) or SEED_THREADS[:1]


def port_run(arch: str, variant: str, threads: int, loops: int) -> dict:
    """One run of the port: its time (as the harness measured it), the CPU time it took, and its counts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = LABCHECK.run_tool(arch, "qspinlock-torture", ["--variant", variant, "--threads", threads,
                                                      "--acquisitions", loops, "--hang-timeout", HANG_S] + DELAYS,
                          timeout=HANG_S + 3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # inconclusive: the threads never met on a path, as when the load ran them one after another;
    # the run still took its time and says so in its counts
    if r.rc not in (LABCHECK.CLEAN, LABCHECK.INCONCLUSIVE) or r.summary.get("total") != threads * loops:
        raise RuntimeError(f"{r.describe()}: exit {r.rc}: {r.stderr or r.summary}")
    return {"verdict": r.verdict, "acquisitions": r.summary["total"], "events": events(r.summary["steps"]),
            "seconds": r.summary["seconds"],
            "cpu_seconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 3)}


def ratio_interval(pairs: list[dict], key: str) -> dict:
    """The mean of log(6.12 / before-set-locked) over the pairs with its 95% t interval, as ratios."""
    logs = [math.log(p["v6.12"][key] / p["before-set-locked"][key]) for p in pairs]
    i = interval(logs)
    if i["ci95"] is None:
        return {"ratio": math.exp(i["mean"]), "low": None, "high": None, "n": i["n"]}
    return {"ratio": math.exp(i["mean"]), "low": math.exp(i["mean"] - i["ci95"]),
            "high": math.exp(i["mean"] + i["ci95"]), "n": i["n"]}


def verdict(ci: dict) -> str:
    """Whether the interval tells the variants apart, and whether it holds the thread's 2-3%."""
    if ci["low"] is None:
        return "one pair: no interval"
    seed = [1 + c for c in SEED_CHANGE]
    apart = ("no change is inside the interval: these runs cannot tell the variants apart"
             if ci["low"] <= 1 <= ci["high"] else
             f"6.12 {'faster' if ci['high'] < 1 else 'slower'}: no change is outside the interval")
    holds = sum(ci["low"] <= s <= ci["high"] for s in seed)
    return apart + ("; the thread's -2%..-3% is inside it too" if holds == 2 else
                    "; the thread's -2%..-3% is partly inside it" if holds else
                    "; the thread's -2%..-3% is outside it")


def summarise(pairs: list[dict]) -> dict:
    time_ci = ratio_interval(pairs, "seconds")
    return {"time_ratio": time_ci, "cpu_ratio": ratio_interval(pairs, "cpu_seconds"), "verdict": verdict(time_ci),
            "events_per_acquisition": {v: {e: round(sum(p[v]["events"][e] for p in pairs)
                                                    / sum(p[v]["acquisitions"] for p in pairs), 4) for e in EVENTS}
                                       for v in VARIANTS}}


def native(threads: tuple[int, ...], loops: int, pairs: int, say) -> dict:
    out = {}
    for n in threads:
        runs = []
        for i in range(pairs):
            order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
            pair = {"first": order[0], **{v: port_run("x86_64", v, n, loops) for v in order}}
            runs.append(pair)
            say(f"qspinlock-ab: x86_64 {n} threads pair {i + 1}/{pairs}: " + ", ".join(
                f"{v} {pair[v]['seconds']:.3f} s" for v in VARIANTS) + f" (load {os.getloadavg()[0]:.1f})")
        out[str(n)] = {"pairs": runs, "summary": summarise(runs)}
        s = out[str(n)]["summary"]["time_ratio"]
        if s["low"] is not None:
            say(f"qspinlock-ab: x86_64 {n} threads: 6.12 / before-set-locked {s['ratio']:.3f} "
                f"[{s['low']:.3f}, {s['high']:.3f}] (95%, {s['n']} pairs)")
    return out


def emulated(threads: tuple[int, ...], loops: int, runs: int, say) -> dict:
    """Counts under qemu-user: the same runs, interleaved, with their times left out."""
    out: dict = {}
    for arch in QEMU_ARCHES:
        for n in threads:
            rows = out.setdefault(arch, {}).setdefault(str(n), {v: [] for v in VARIANTS})
            for _ in range(runs):
                for v in VARIANTS:
                    r = port_run(arch, v, n, loops)
                    rows[v].append({k: r[k] for k in ("verdict", "acquisitions", "events")})
            say(f"qspinlock-ab: {arch} {n} threads (emulated, counts): " + "; ".join(
                f"{v} head stores {[r['events']['head_store'] for r in rows[v]]}, cmpxchg "
                f"{[r['events']['head_cmpxchg'] for r in rows[v]]}" for v in VARIANTS))
    return out


def build() -> None:
    subprocess.run(["make", "-C", str(ROOT / "kernel-lab"), "-j2"], check=True, capture_output=True)


def measure(threads: tuple[int, ...], loops: int, pairs: int, qemu_loops: int, out: Path, say=print) -> dict:
    """Every run on the built port (``build``), the result written to ``out`` and its plot beside it."""
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    result = {
        "bench": "qspinlock-ab", "date": started, "host": os.uname().nodename, "host_cpus": os.cpu_count(),
        "loops_per_thread": loops, "seed_loops_per_thread": SEED_LOOPS, "threads": list(threads),
        "statistic": "paired runs, first of a pair alternating; mean log-ratio with a two-sided 95% Student t "
                     "interval (bench/ab.py), as 6.12 / before-set-locked",
        "x86_64": native(threads, loops, pairs, say),
        "emulated": {"loops_per_thread": qemu_loops, "runs": QEMU_RUNS,
                     "counts": emulated(threads, qemu_loops, QEMU_RUNS, say)},
    }
    result["host_load"] = {"before": list(load_before), "after": list(os.getloadavg())}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    draw(result, out.with_suffix(".png"))
    say(f"qspinlock-ab: wrote {out}")
    return result


def draw(result: dict, path: Path) -> None:
    """Each pair's time ratio per thread count, with the interval and the thread's 2-3%."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for x, r in enumerate(result["x86_64"].values()):
        ax.scatter([x] * len(r["pairs"]), [p["v6.12"]["seconds"] / p["before-set-locked"]["seconds"]
                                           for p in r["pairs"]], s=10, color="#4C72B0")
        ci = r["summary"]["time_ratio"]
        if ci["low"] is not None:
            ax.errorbar([x + 0.15], [ci["ratio"]], yerr=[[ci["ratio"] - ci["low"]], [ci["high"] - ci["ratio"]]],
                        fmt="o", color="black", capsize=4)
    ax.axhspan(1 + SEED_CHANGE[0], 1 + SEED_CHANGE[1], color="#C44E52", alpha=0.3, label="the thread's -2%..-3%")
    ax.axhline(1, color="grey", linestyle="dashed")
    ax.set_xticks(range(len(result["x86_64"])), [f"{n} threads" for n in result["x86_64"]])
    ax.set_yscale("log")  # a pair whose runs one contended and one did not is 1000x either way
    ax.set_ylabel("time, 6.12 / before-set-locked")
    load = result["host_load"]
    ax.set_title(f"C port, {result['loops_per_thread']:,} loops per thread, x86_64 on {result['host_cpus']} CPUs, "
                 f"load {load['before'][0]:.0f}→{load['after'][0]:.0f}\npairs (dots) and 95% interval (bar)",
                 fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(out_dir: Path, say=print) -> dict:
    """``make bench``'s entry: the seed's loop count, the seed's thread counts that fit this host."""
    build()
    return measure(thread_counts(os.cpu_count() or 1), SEED_LOOPS, PAIRS, QEMU_LOOPS,
                   Path(out_dir) / "qspinlock-ab.json", say)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, default=SEED_LOOPS, help=f"per thread (default the seed's {SEED_LOOPS:,})")
    ap.add_argument("--threads", default=None,
                    help="thread counts, comma-separated, each 2..64 (default the seed's 3..8 that fit this host)")
    ap.add_argument("--pairs", type=int, default=PAIRS, help=f"timed pairs per thread count, 2..100 (default {PAIRS})")
    ap.add_argument("--qemu-loops", type=int, default=QEMU_LOOPS, help=f"per thread, emulated (default {QEMU_LOOPS:,})")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "qspinlock-ab.json")
    a = ap.parse_args(argv)
    try:
        threads = tuple(int(t) for t in a.threads.split(",")) if a.threads else thread_counts(os.cpu_count() or 1)
    except ValueError:
        ap.error(f"--threads {a.threads}: not comma-separated integers")
    if not all(2 <= n <= 64 for n in threads):
        ap.error(f"--threads {a.threads}: each count must be 2..64")
    if not 2 <= a.pairs <= 100:
        ap.error(f"--pairs must be 2..100, not {a.pairs}")
    for name, v in (("--loops", a.loops), ("--qemu-loops", a.qemu_loops)):
        if not 1 <= v <= 10**9:
            ap.error(f"{name} must be 1..1000000000, not {v}")
    if not a.out.parent.is_dir():
        ap.error(f"--out {a.out}: no directory {a.out.parent}")
    build()
    measure(threads, a.loops, a.pairs, a.qemu_loops, a.out, lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
