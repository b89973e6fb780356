"""Linux 6.1 against 6.12 in QEMU: what the real-kernel A/B benches share (bench/launch_ab.py, bench/fork_ab.py).

Each A/B boots bookworm's 6.1 (``kstep.lab.guest.base_kernel``) and the lab's 6.12 alternately, BOOTS
times each, with one probe in the lab's initramfs, so that a change in the host's load falls on both
kernels; a boot gives one record, and each figure is summarised over the boots by ``interval``: the
mean and a two-sided 95% Student t interval.  The result file names the bench, the architecture, the
host and its load, when it ran, and both kernels' ``uname -r``.  ``main`` is the benches' command line;
bad options are one line and exit 2.

Times are TCG's: QEMU translates every guest instruction, so a fault costs tens of microseconds
instead of about one, a contended cache line costs what the host's does for QEMU's own memory, and
the vCPUs are host threads that the host's scheduler (and its load) interleaves.  Only a difference
far outside the interval says anything, and then about TCG as much as about the kernel.
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
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))

from kstep.lab.guest import base_kernel, kernels, qemu as guest  # noqa: E402

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


def boot_probe(bench: str, probe: str, arch: str, k: kernels.Kernels, kernel: Path, initrd: Path, smp: int,
               failed: list[dict]):
    """Boot ``kernel`` with only ``probe``; its case, or SystemExit saying what went wrong.

    A boot that ends without the guest's end marker (a kernel crash before the probe finished, or
    QEMU killed at the time limit) is booted once more, as ``kstep lab run`` does, and appended to
    ``failed`` with the first line of what stopped it; a probe that reports a failure is not retried."""
    def once():
        nonce = secrets.token_hex(8)
        cmd = guest.qemu_command(arch, k, initrd, smp, f"kstep_nonce={nonce} kstep_probes={probe}")
        cmd[cmd.index("-kernel") + 1] = str(kernel)
        return guest.boot(cmd, nonce, guest.TIMEOUT_S, lambda line: None)

    b = once()
    if not b.console.finished:
        c = b.console
        why = c.crash.splitlines()[0] if c.crash else f"no end marker after {b.seconds:.0f} s"
        failed.append({"kernel": kernel.name, "uname_r": c.uname_r, "why": why})
        print(f"{bench}: {kernel.name} stopped before its end marker ({why}); booting it once more",
              file=sys.stderr, flush=True)
        b = once()
    cases = b.console.cases
    if b.timed_out or [c.name for c in cases] != [probe] or not cases[0].ok:
        raise SystemExit(f"{bench}: {kernel} did not run the {probe} probe:\n{b.log[-2000:]}")
    return b.console.uname_r, cases[0].data


def alternate(bench: str, probe: str, base: Path, boots: int, arch: str, smp: int,
              one: Callable[[str, dict], dict], said: Callable[[dict], str], say=print) -> dict:
    """Boot 6.1 and 6.12 ``boots`` times each, alternating; ``one(uname_r, data)`` turns a boot's probe
    data into its record, ``said(record)`` into a line of progress.  The result without its summary."""
    k = kernels.load()
    if k is None:  # one line and exit 2, from make bench as from the command line
        print(f"{bench}: no 6.12 kernels fetched: run 'make lab-kernels'", file=sys.stderr)
        raise SystemExit(2)
    load_before = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory() as tmp:
        initrd = guest.build_initramfs(arch, k, Path(tmp), [probe])
        runs: dict[str, list[dict]] = {"6.1": [], "6.12": []}
        failed: list[dict] = []
        for i in range(boots):
            for name, kernel in (("6.1", base), ("6.12", k.kernel(arch))):
                r = one(*boot_probe(bench, probe, arch, k, kernel, initrd, smp, failed))
                runs[name].append(r)
                say(f"{bench}: {arch} {name} boot {i + 1}/{boots}: {said(r)}")
    return {"bench": bench, "arch": arch, "smp": smp, "host_cpus": os.cpu_count(), "host": os.uname().nodename,
            "date": started, "base_kernel": base.name, "kernels": {n: rs[0]["uname_r"] for n, rs in runs.items()},
            "host_load_1min": {"before": load_before, "after": os.getloadavg()[0]},
            "timing": "TCG (no KVM): guest times are QEMU's, see bench/ab.py", "boots": runs,
            "failed_boots": failed}


def write(result: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


def main(doc: str, measure: Callable, boots: int, out_name: str) -> int:
    """The command line of an A/B bench whose ``measure(base, boots, arch, out, say)`` does the work."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--base-kernel", type=Path, help="a 6.1 vmlinuz for the same architecture "
                    "(default: bookworm's newest, fetched the first time)")
    ap.add_argument("--boots", type=int, default=boots, help=f"boots per kernel (2..30; default {boots})")
    ap.add_argument("--arch", default="x86_64", choices=sorted(base_kernel.DEB_ARCH))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / out_name)
    a = ap.parse_args()
    if not 2 <= a.boots <= 30:
        ap.error(f"--boots must be 2..30, not {a.boots}")
    if a.base_kernel is not None and not a.base_kernel.is_file():
        ap.error(f"--base-kernel {a.base_kernel}: no such file")
    measure(a.base_kernel or base_kernel.fetch(arch=a.arch), a.boots, a.arch, a.out, lambda m: print(m, flush=True))
    return 0
