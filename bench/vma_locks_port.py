"""The kernel lab's per-VMA lock port: fault throughput with a concurrent writer in another VMA.

``vma-locks-torture --bench`` runs N fault threads on one VMA ([0, 16), its anon_vma prepared)
while one writer thread splits and merges another ([32, 48), mprotect of [36, 40) to rw and back),
for --bench seconds, without the log and without the step mutex: each rwsem's wait_lock makes its
steps atomic, as 6.12's slow paths do under sem->wait_lock (its fast paths are lockless atomics
on sem->count; the port takes wait_lock there too).  v6.12 faults under the VMA's lock;
no-per-vma-lock (CONFIG_PER_VMA_LOCK=n) takes mmap_lock for read on every fault, so each of the
writer's mprotect calls holds it off.  A fault's own work is zeroing one 4 KiB page.

Points: 1, 2 and 4 fault threads, median of REPEATS runs, with the slowest and fastest beside it:
on the shared 2-core development machine runs of one point have differed by 5x.  x86_64 runs natively; arm64 and ppc64le
run under qemu-user on the same host (marked emulated: they measure the emulator).  The writer and
the grace-period thread run beside the fault threads, so a point with more runnable threads than
the machine has CPUs is marked oversubscribed: a thread holding a lock can be preempted there.

Run alone with ``python bench/vma_locks_port.py``, or through bench/run.py, which calls
run(out_dir, say).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "kernel-lab"
ARCHES = ("x86_64", "arm64", "ppc64le")
QEMU = {"x86_64": [], "arm64": ["qemu-aarch64"], "ppc64le": ["qemu-ppc64le"]}
VARIANTS = ("v6.12", "no-per-vma-lock")
THREADS = (1, 2, 4)
DURATION_S = 1
REPEATS = 5


def bench_run(arch: str, variant: str, faulters: int, duration: int) -> dict:
    argv = QEMU[arch] + [str(LAB / "build" / arch / "vma-locks-torture"), "--bench", str(duration),
                         "--variant", variant, "--faulters", str(faulters)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 120)
    if p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run(out_dir, say=print, duration: int = DURATION_S, repeats: int = REPEATS) -> dict:
    out_dir = Path(out_dir)
    say("vma-locks port: building kernel-lab (make -C kernel-lab -j2) ...")
    subprocess.run(["make", "-C", str(LAB), "-j2"], check=True, capture_output=True)
    cpus = os.cpu_count()
    result = {
        "machine": {"host": platform.machine(), "cpus": cpus},
        "run": {"seconds": duration, "repeats": repeats, "reported": "median faults/s over all fault threads, and the slowest and fastest run",
                "writer": "one thread: mprotect [36, 40) rw, then r, in VMA [32, 48), over and over",
                "faults": "in VMA [0, 16), 16 addresses per thread, each zeroing a 4 KiB page"},
        "arches": {},
    }
    for arch in ARCHES:
        per, spread = {}, {}
        for variant in VARIANTS:
            per[variant], spread[variant] = {}, {}
            for n in THREADS:
                rates = sorted(r["faults"] / r["seconds"] for r in
                               (bench_run(arch, variant, n, duration) for _ in range(repeats)))
                per[variant][str(n)] = round(rates[len(rates) // 2])
                spread[variant][str(n)] = [round(rates[0]), round(rates[-1])]
            say(f"vma-locks port: {arch:8} {variant:16} " +
                "  ".join(f"{n} thr {per[variant][str(n)]:>11,}/s" for n in THREADS))
        result["arches"][arch] = {
            "emulated": arch != platform.machine(),
            "faults_per_s": per,
            "min_max_faults_per_s": spread,
            "per_vma_over_mmap_lock": {str(n): round(per["v6.12"][str(n)] / per["no-per-vma-lock"][str(n)], 3)
                                       for n in THREADS if per["no-per-vma-lock"][str(n)]},
            # fault threads + the writer against the CPUs (the grace-period thread mostly sleeps)
            "oversubscribed": {str(n): n + 1 > cpus for n in THREADS},
        }
    (out_dir / "vma-locks-port.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def draw(result: dict, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arches = list(result["arches"])
    fig, axes = plt.subplots(1, len(arches), figsize=(5 * len(arches), 4), squeeze=False)
    width = 0.38
    for ax, arch in zip(axes[0], arches):
        a = result["arches"][arch]
        xs = range(len(THREADS))
        for k, (variant, colour) in enumerate((("no-per-vma-lock", "#8172B2"), ("v6.12", "#C44E52"))):
            med = [a["faults_per_s"][variant][str(n)] for n in THREADS]
            lo_hi = [a["min_max_faults_per_s"][variant][str(n)] for n in THREADS]
            ax.bar([x + (k - 0.5) * width for x in xs], med, width, label=variant, color=colour,
                   yerr=[[m - lo for m, (lo, _) in zip(med, lo_hi)], [hi - m for m, (_, hi) in zip(med, lo_hi)]],
                   capsize=3)
        ax.set_xticks(list(xs), [f"{n}{' (oversubscribed)' if a['oversubscribed'][str(n)] else ''}"
                                 for n in THREADS], fontsize=8)
        ax.set_xlabel("fault threads (+1 writer)")
        ax.set_ylabel("faults per second")
        ax.set_title(f"{arch}{' (emulated, qemu-user)' if a['emulated'] else ''}", fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle("kernel-lab vma-locks port: fault throughput with a writer in another VMA "
                 "(median, whiskers: slowest and fastest run)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


if __name__ == "__main__":
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    r = run(results, say=lambda m: print(m, flush=True))
    draw(r, results / "vma-locks-port.png")
    print(f"vma-locks port: wrote {results / 'vma-locks-port.json'} and vma-locks-port.png")
