"""kdamond's CPU time on the real kernel against its target's size (issue 25 §2, DAMON).

The thread's claim is that DAMON's overhead is bounded whatever the size of the target.  This
boots one lab kernel BOOTS times with only the ``damoncpu`` probe (kernel-lab/guest/init): DAMON
(sysfs, vaddr, the thread's 5 ms sampling, 100 ms aggregation, 10..1000 regions) monitors a
process that writes 1 MiB of an 8, 64 and 512 MiB mapping, and kdamond's utime + stime is read
over 10 s of each.  Per size the result is kdamond's share of one CPU and its time over the
workload's, mean and 95% Student t interval and median over the boots, and the largest target's
share over the smallest's.

The guest runs under TCG: every instruction is translated, so each share is an emulated CPU's and
far above what a machine would spend; what compares with the thread is how the share moves (or
does not) with the size.  The thread's 0.76% is the workloads' slowdown on KVM, not a share.

    python bench/damon_cpu.py [--boots N] [--arch ARCH] [--out FILE]
    make bench BENCH=damon-cpu
"""

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))
sys.path.insert(0, str(ROOT))

from bench.ab import interval  # noqa: E402
from kstep.lab.guest import kernels, probes, qemu as guest  # noqa: E402

BOOTS = 3
KEYS = ("kdamond_cpu", "workload_cpu", "kdamond_per_workload")


def _summary(xs: list[float]) -> dict:
    """Mean and 95% interval, and the median: a boot whose vCPU the busy host descheduled charges kdamond
    for time it never ran, one outlier that moves the mean and not the median."""
    return {**interval(xs), "median": statistics.median(xs)}


def one_boot(arch: str, k: kernels.Kernels, initrd: Path) -> list[dict]:
    nonce = secrets.token_hex(8)
    cmd = guest.qemu_command(arch, k, initrd, guest.SMP,
                             f"kstep_nonce={nonce} kstep_probes=damoncpu kstep_seed={secrets.randbits(32)}")
    b = guest.boot(cmd, nonce, guest.TIMEOUT_S, lambda line: None)
    cases = b.console.cases
    if b.timed_out or [c.name for c in cases] != ["damoncpu"] or not cases[0].ok:
        raise SystemExit(f"damon_cpu: the damoncpu probe did not run on {arch}:\n{b.log[-2000:]}")
    failed = [c for c in probes.judge_damoncpu(cases[0].data) if not c.ok and not c.timing]
    if failed:
        raise SystemExit(f"damon_cpu: {arch}: {failed}")
    return probes.damoncpu_sizes(cases[0].data)


def measure(boots: int, arch: str, out: Path, say=print) -> dict:
    """Boot ``boots`` times; write and return each size's interval and every boot's sizes."""
    k = kernels.load()
    if k is None:  # one line and exit 2, from make bench as from the command line
        print("damon_cpu: no kernels fetched: run 'make lab-kernels'", file=sys.stderr)
        raise SystemExit(2)
    load_before = os.getloadavg()[0]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        initrd = guest.build_initramfs(arch, k, Path(tmp), ["damoncpu"])
        for i in range(boots):
            sizes = one_boot(arch, k, initrd)
            runs.append(sizes)
            say(f"damon_cpu: {arch} boot {i + 1}/{boots}: "
                + ", ".join(f"{s['map_mib']} MiB kdamond {100 * s['kdamond_cpu']:.2f}%" for s in sizes))
    mib = [s["map_mib"] for s in runs[0]]
    summary = {f"{m} MiB": {key: _summary([r[j][key] for r in runs if r[j][key] is not None]) for key in KEYS}
               for j, m in enumerate(mib)}
    spreads = [s for s in (probes.damoncpu_spread(r) for r in runs) if s is not None]
    result = {"arch": arch, "kernel": k.release(arch), "package_version": k.package_version(arch),
              "smp": guest.SMP, "host_cpus": os.cpu_count(),
              "host_load_1min": {"before": load_before, "after": os.getloadavg()[0]},
              "timing": "TCG (no KVM): guest CPU time is QEMU's, see bench/damon_cpu.py",
              "summary": summary, "spread": _summary(spreads), "boots": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for size, s in summary.items():
        kd = s["kdamond_cpu"]
        say(f"damon_cpu: {size}: kdamond {100 * kd['mean']:.2f}% ± {100 * (kd['ci95'] or 0):.2f}% of a CPU "
            f"(95%, {kd['n']} boots; median {100 * kd['median']:.2f}%)")
    sp = result["spread"]
    say(f"damon_cpu: largest / smallest target: {sp['mean']:.2f} ± {sp['ci95'] or 0:.2f} (median {sp['median']:.2f}) "
        f"for {mib[-1] // mib[0]}x the size; wrote {out}")
    return result


def run(out_dir: Path, say=print) -> dict:
    """``make bench``'s entry: x86_64, BOOTS boots."""
    return measure(BOOTS, "x86_64", out_dir / "damon-cpu.json", say)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boots", type=int, default=BOOTS, help=f"boots (2..30; default {BOOTS})")
    ap.add_argument("--arch", default="x86_64", choices=list(guest.MACHINES))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "damon-cpu.json")
    a = ap.parse_args()
    if not 2 <= a.boots <= 30:
        ap.error(f"--boots must be 2..30, not {a.boots}")
    measure(a.boots, a.arch, a.out, lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
