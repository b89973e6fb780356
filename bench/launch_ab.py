"""Per-VMA locks on real kernels: launchbench in QEMU, Linux 6.1 (no CONFIG_PER_VMA_LOCK) against 6.12.

Each kernel is booted BOOTS times with only the launch probe (kernel-lab/guest/launchbench.c: two
threads creating stacks with mmap + mprotect of a guard page while two fault their working sets);
each boot gives one p50, p90, p99 fault latency and one makespan, and the result is each one's mean
over the boots with a 95% Student t interval.  The 6.12 kernel is the one ``kstep lab fetch``
cached; the 6.1 one is bookworm's newest ``linux-image-6.1.0-*-{amd64,arm64}-unsigned``, which
``kstep.lab.guest.base_kernel`` fetches the first time (or a ``vmlinuz`` given by path).

Times are TCG's: QEMU translates every guest instruction, so a fault costs tens of microseconds
instead of about one, a contended cache line costs what the host's does for QEMU's own memory, and
the vCPUs are host threads that the host's scheduler (and its load) interleaves.  Only a
difference far outside the interval says anything, and then about TCG as much as about the kernel.

    python bench/launch_ab.py [--base-kernel PATH] [--boots N] [--arch x86_64|arm64] [--out FILE]
    make bench BENCH=launch-ab
"""

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))

from kstep.lab.guest import base_kernel, kernels, probes, qemu as guest  # noqa: E402

KEYS = ("p50_ns", "p90_ns", "p99_ns", "makespan_ns")
SMP = 4  # two mappers and two faulters, each with a vCPU
BOOTS = 5
# two-sided 95% Student t quantiles by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}


def interval(xs: list[float]) -> dict:
    mean = statistics.fmean(xs)
    if len(xs) < 2:
        return {"mean": mean, "ci95": None, "n": len(xs)}
    df = len(xs) - 1
    t = T95[max(d for d in T95 if d <= df)]  # the nearest tabulated df below: a wider interval, never narrower
    return {"mean": mean, "ci95": t * statistics.stdev(xs) / len(xs) ** 0.5, "n": len(xs)}


def one_boot(arch: str, k: kernels.Kernels, kernel: Path, initrd: Path) -> dict:
    nonce = secrets.token_hex(8)
    cmd = guest.qemu_command(arch, k, initrd, SMP, f"kstep_nonce={nonce} kstep_probes=launch")
    cmd[cmd.index("-kernel") + 1] = str(kernel)
    b = guest.boot(cmd, nonce, guest.TIMEOUT_S, lambda line: None)
    cases = b.console.cases
    if b.timed_out or [c.name for c in cases] != ["launch"] or not cases[0].ok:
        raise SystemExit(f"launch_ab: {kernel} did not run the launch probe:\n{b.log[-2000:]}")
    data = cases[0].data
    checks = probes.judge_launch(data)
    failed = [c for c in checks if not c.ok]
    if failed:
        raise SystemExit(f"launch_ab: {kernel}: {failed}")
    fields = probes.launch_fields(data)
    return {"uname_r": b.console.uname_r, **fields}


def measure(base: Path, boots: int, arch: str, out: Path, say=print) -> dict:
    """Boot each kernel ``boots`` times, alternating; write and return the result."""
    k = kernels.load()
    if k is None:  # one line and exit 2, from make bench as from the command line
        print("launch_ab: no 6.12 kernels fetched: run 'make lab-kernels'", file=sys.stderr)
        raise SystemExit(2)
    load_before = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory() as tmp:
        initrd = guest.build_initramfs(arch, k, Path(tmp), ["launch"])
        runs: dict[str, list[dict]] = {"6.1": [], "6.12": []}
        for i in range(boots):  # alternate the kernels so a change in the host's load falls on both
            for name, kernel in (("6.1", base), ("6.12", k.kernel(arch))):
                r = one_boot(arch, k, kernel, initrd)
                runs[name].append(r)
                say(f"launch_ab: {name} boot {i + 1}/{boots}: " + " ".join(f"{key}={r[key]}" for key in KEYS)
                    + f" per_vma={r['per_vma']}")
    summary = {name: {key: interval([r[key] for r in rs]) for key in KEYS} for name, rs in runs.items()}
    result = {"bench": "launch-ab", "arch": arch, "smp": SMP, "host_cpus": os.cpu_count(),
              "host": os.uname().nodename, "date": started, "base_kernel": base.name,
              "kernels": {name: rs[0]["uname_r"] for name, rs in runs.items()},
              "host_load_1min": {"before": load_before, "after": os.getloadavg()[0]},
              "timing": "TCG (no KVM): guest times are QEMU's, see bench/launch_ab.py",
              "summary": summary, "boots": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for key in KEYS:
        old, new = summary["6.1"][key], summary["6.12"][key]
        scale, unit = (1e6, "ms") if key == "makespan_ns" else (1e3, "us")
        say(f"launch_ab: {key[:-3]}: 6.1 {old['mean'] / scale:.1f} ± {old['ci95'] / scale:.1f} {unit}, "
            f"6.12 {new['mean'] / scale:.1f} ± {new['ci95'] / scale:.1f} {unit} (95%, {boots} boots each)")
    say(f"launch_ab: wrote {out}")
    return result


def run(out_dir: Path, say=print) -> dict:
    """``make bench``'s entry: bookworm's 6.1, fetched if need be, against the lab's 6.12 on x86_64."""
    return measure(base_kernel.fetch(say), BOOTS, "x86_64", out_dir / "launch-ab.json", say)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-kernel", type=Path, help="a 6.1 vmlinuz for the same architecture "
                    "(default: bookworm's newest, fetched the first time)")
    ap.add_argument("--boots", type=int, default=BOOTS, help=f"boots per kernel (2..30; default {BOOTS})")
    ap.add_argument("--arch", default="x86_64", choices=sorted(base_kernel.DEB_ARCH))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "launch-ab.json")
    a = ap.parse_args()
    if not 2 <= a.boots <= 30:
        ap.error(f"--boots must be 2..30, not {a.boots}")
    if a.base_kernel is not None and not a.base_kernel.is_file():
        ap.error(f"--base-kernel {a.base_kernel}: no such file")
    measure(a.base_kernel or base_kernel.fetch(arch=a.arch), a.boots, a.arch, a.out, lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
