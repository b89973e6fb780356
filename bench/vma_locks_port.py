"""The kernel lab's per-VMA lock port: fault throughput with a concurrent writer in another VMA.

``vma-locks-torture --bench`` runs N fault threads on one VMA ([0, 16), its anon_vma prepared)
while one writer thread splits and merges another ([32, 48), mprotect of [36, 40) to rw and back),
for --bench seconds, without the log and without the step mutex: each rwsem's wait_lock makes its
steps atomic, as 6.12's slow paths do under sem->wait_lock (its fast paths are lockless atomics
on sem->count; the port takes wait_lock there too).  v6.12 faults under the VMA's lock;
no-per-vma-lock (CONFIG_PER_VMA_LOCK=n) takes mmap_lock for read on every fault, so each of the
writer's mprotect calls holds it off.  A fault's own work is zeroing one 4 KiB page.

Points: 1, 2 and 4 fault threads.  Each point runs both variants REPEATS times, in pairs whose
order alternates (v6.12 first, then no-per-vma-lock first, ...), so a change in the shared host's
load falls on both alike; WARMUP pairs before them are run and thrown away (page cache, CPU
frequency, qemu-user's translation cache).  Reported per variant: every run's faults/s, their
median and interquartile range (IQR: the spread of single runs); per point: the ratio of the
medians, its 95% bootstrap confidence interval (RESAMPLES resamples of each variant's runs, from a
fixed seed), and whether the difference is outside the noise: the interval excludes 1.  More runs
narrow the interval, not the IQR, which is the host's noise itself.  The machine's load average is recorded at the start and the end: on the shared 2-core development
machine single runs of one point have differed by 5x.  x86_64 runs natively; arm64 and ppc64le
run under qemu-user on the same host (marked emulated: they measure the emulator).  The writer and
the grace-period thread run beside the fault threads, so a point with more runnable threads than
the machine has CPUs is marked oversubscribed: a thread holding a lock can be preempted there.

``python bench/run.py vma-locks-port`` runs it alone; `make bench` runs it with the others.
"""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "kernel-lab"
ARCHES = ("x86_64", "arm64", "ppc64le")
QEMU = {"x86_64": [], "arm64": ["qemu-aarch64"], "ppc64le": ["qemu-ppc64le"]}
VARIANTS = ("v6.12", "no-per-vma-lock")
THREADS = (1, 2, 4)
DURATION_S = 1
REPEATS = 21
WARMUP = 1
CONFIDENCE = 0.95
RESAMPLES = 2000
NOISE_RULE = (f"outside the noise when the {CONFIDENCE:.0%} bootstrap confidence interval of the ratio of the "
              f"medians ({RESAMPLES} resamples of each variant's runs, seed 1) excludes 1")


def bench_run(arch: str, variant: str, faulters: int, duration: int) -> float:
    """Faults per second over all fault threads of one run."""
    argv = QEMU[arch] + [str(LAB / "build" / arch / "vma-locks-torture"), "--bench", str(duration),
                         "--variant", variant, "--faulters", str(faulters)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 120)
    if p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["faults"] / r["seconds"]


def summary(rates: list[float]) -> dict:
    """Every run, the median and the interquartile range of one variant at one point."""
    q1, median, q3 = statistics.quantiles(rates, n=4, method="inclusive")
    return {"runs": [round(r) for r in rates], "median": round(median), "q1": round(q1), "q3": round(q3),
            "iqr_over_median": round((q3 - q1) / median, 3) if median else None}


def ratio_interval(per_vma: list[float], baseline: list[float]) -> tuple[float, float]:
    """The CONFIDENCE bootstrap interval of median(per_vma) / median(baseline), from seed 1."""
    rng = random.Random(1)
    ratios = sorted(statistics.median(rng.choices(per_vma, k=len(per_vma))) /
                    max(statistics.median(rng.choices(baseline, k=len(baseline))), 1e-9)
                    for _ in range(RESAMPLES))
    tail = int(RESAMPLES * (1 - CONFIDENCE) / 2)
    return ratios[tail], ratios[RESAMPLES - 1 - tail]


def compare(per_vma: dict, baseline: dict) -> dict:
    """The ratio of the medians, its confidence interval, and whether the difference is outside
    the noise (NOISE_RULE)."""
    lo, hi = ratio_interval(per_vma["runs"], baseline["runs"])
    outside = lo > 1 or hi < 1
    ratio = per_vma["median"] / baseline["median"] if baseline["median"] else None
    if not outside:
        verdict = "no difference outside the noise"
    else:
        verdict = "per-VMA locks faster" if lo > 1 else "per-VMA locks slower"
    return {"per_vma_over_mmap_lock": round(ratio, 3) if ratio else None,
            "ratio_interval": [round(lo, 3), round(hi, 3)],
            "difference_outside_noise": outside, "verdict": verdict}


def measure_point(arch: str, n: int, duration: int, repeats: int, warmup: int) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for k in range(warmup + repeats):
        for variant in (VARIANTS if k % 2 == 0 else VARIANTS[::-1]):
            rate = bench_run(arch, variant, n, duration)
            if k >= warmup:
                rates[variant].append(rate)
    return rates


def load_average() -> dict:
    one, five, fifteen = os.getloadavg()
    return {"1min": round(one, 2), "5min": round(five, 2), "15min": round(fifteen, 2)}


def run(out_dir, say=print, duration: int = DURATION_S, repeats: int = REPEATS, warmup: int = WARMUP,
        arches=ARCHES) -> dict:
    out_dir = Path(out_dir)
    say("vma-locks port: building kernel-lab (make -C kernel-lab -j2) ...")
    subprocess.run(["make", "-C", str(LAB), "-j2"], check=True, capture_output=True)
    cpus = os.cpu_count()
    result = {
        "machine": {"host": platform.machine(), "cpus": cpus},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_start": load_average(),
        "run": {"seconds": duration, "repeats": repeats, "warmup_pairs": warmup,
                "order": "pairs of one run per variant, the order alternating pair by pair",
                "reported": "faults/s over all fault threads: every run, the median, the quartiles q1 and q3",
                "noise": NOISE_RULE,
                "ratio_interval": f"the {CONFIDENCE:.0%} bootstrap confidence interval of per_vma_over_mmap_lock",
                "writer": "one thread: mprotect [36, 40) rw, then r, in VMA [32, 48), over and over",
                "faults": "in VMA [0, 16), 16 addresses per thread, each zeroing a 4 KiB page"},
        "arches": {},
    }
    for arch in arches:
        points = {}
        for n in THREADS:
            rates = measure_point(arch, n, duration, repeats, warmup)
            point = {v: summary(rates[v]) for v in VARIANTS}
            point.update(compare(point["v6.12"], point["no-per-vma-lock"]))
            points[str(n)] = point
            say(f"vma-locks port: {arch:8} {n} thr  " + "  ".join(
                f"{v} {point[v]['median']:>11,}/s (IQR {point[v]['q1']:,}-{point[v]['q3']:,})" for v in VARIANTS)
                + f"  x{point['per_vma_over_mmap_lock']} ({CONFIDENCE:.0%}: {point['ratio_interval'][0]}-"
                  f"{point['ratio_interval'][1]}): {point['verdict']}")
        result["arches"][arch] = {
            "emulated": arch != platform.machine(),
            "points": points,
            # fault threads + the writer against the CPUs (the grace-period thread mostly sleeps)
            "oversubscribed": {str(n): n + 1 > cpus for n in THREADS},
        }
    result["load_average_at_end"] = load_average()
    (out_dir / "vma-locks-port.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def draw(result: dict, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arches = list(result["arches"])
    fig, axes = plt.subplots(1, len(arches), figsize=(5 * len(arches), 4.4), squeeze=False)
    offset = 0.18
    for ax, arch in zip(axes[0], arches):
        a = result["arches"][arch]
        top = 0
        for x, n in enumerate(THREADS):
            point = a["points"][str(n)]
            for k, (variant, colour) in enumerate((("no-per-vma-lock", "#8172B2"), ("v6.12", "#C44E52"))):
                s = point[variant]
                at = x + (k - 0.5) * 2 * offset
                ax.scatter([at + (j % 3 - 1) * 0.03 for j in range(len(s["runs"]))], s["runs"], s=8,
                           color=colour, alpha=0.45, label=f"{variant}: runs" if x == 0 else None)
                ax.vlines(at, s["q1"], s["q3"], color=colour, linewidth=5,
                          label=f"{variant}: interquartile range" if x == 0 else None)
                ax.hlines(s["median"], at - 0.09, at + 0.09, color="black", linewidth=1.5,
                          label="median" if x == 0 and k == 0 else None)
                top = max(top, max(s["runs"]))
            lo, hi = point["ratio_interval"]
            note = f"x{point['per_vma_over_mmap_lock']} [{lo}, {hi}]\n" + (
                "outside the noise" if point["difference_outside_noise"] else "within the noise")
            ax.annotate(note, (x, 1), xycoords=("data", "axes fraction"), xytext=(0, -4),
                        textcoords="offset points", ha="center", va="top", fontsize=7)
        ax.set_ylim(0, top * 1.2)
        ax.set_xticks(list(range(len(THREADS))), [f"{n}{' (oversubscribed)' if a['oversubscribed'][str(n)] else ''}"
                                                   for n in THREADS], fontsize=8)
        ax.set_xlabel("fault threads (+1 writer)")
        ax.set_ylabel("faults per second")
        ax.set_title(f"{arch}{' (emulated, qemu-user)' if a['emulated'] else ''}", fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7)
    run = result["run"]
    start, end = result["load_average_at_start"]["1min"], result["load_average_at_end"]["1min"]
    fig.suptitle("kernel-lab vma-locks port: fault throughput with a writer in another VMA "
                 f"({run['repeats']} runs of {run['seconds']} s per variant and point; "
                 f"load average {start} at the start, {end} at the end)", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)

