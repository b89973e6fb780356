"""DAMON's hot-range gap on the real kernel: what brings a hot page's accessed bit back.

The lab's DAMON probe sees a hot range's mean nr_accesses far below the samples per aggregation
although its workload writes the range all the time; the model, whose process sets the bit on
every touch, reads about 17 of 20.  damon_ptep_mkold() clears the bit with
ptep_test_and_clear_young() and flushes no TLB (x86, arm64 and powerpc alike), so a vCPU that
keeps the page's translation writes it without setting the bit: the bit comes back only once the
entry has gone from QEMU's TLB.  This boots a lab kernel with only the DAMON probe (seed 1) once
per setting and boot, and prints the hot range's mean, its share of the samples, the model's
mean for the same maps, hot range and seed, and how many passes over the hot range the workload's
two threads made per sampling interval (fewer than one: some hot pages go unwritten in a sample):

- ``--tlb``: what empties the hot threads' TLBs (kernel-lab/guest/vmaprobe.c): ``alone`` nothing
  but the guest's own switches, ``yield`` a process switch on their vCPUs all the time, ``flush`` a
  whole-mm TLB flush every millisecond besides;
- ``--hot-kib``: the hot range's size (8192 KiB), against the number of pages QEMU's TLB holds;
- ``--sample-us``: the sampling interval (aggregation 100 ms), which moves nothing if the bit
  comes back only with the TLB entry.

    python bench/damon_gap.py [--arch ARCH ...] [--tlb MODE ...] [--hot-kib KIB ...] [--sample-us US ...] [--boots N]
    make bench BENCH=damon-gap      (x86_64, each TLB mode, two boots)
"""

import argparse
import itertools
import json
import os
import platform
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))

from kstep.lab.guest import kernels, probes, qemu as guest  # noqa: E402

AGGR_US = 100_000  # what /init writes to aggr_us
TLB_MODES = ("alone", "yield", "flush")
SEED = 1
HOT_KIB = 8192  # the DAMON probe's hot range


def one_boot(arch: str, k: kernels.Kernels, initrd: Path, tlb: str, hot_kib: int, sample_us: int) -> dict:
    nonce = secrets.token_hex(8)
    cmd = guest.qemu_command(arch, k, initrd, guest.SMP,
                             f"kstep_nonce={nonce} kstep_probes=damon kstep_seed={SEED} "
                             f"kstep_damon_sample_us={sample_us} kstep_damon_tlb={tlb} kstep_damon_hot_kib={hot_kib}")
    b = guest.boot(cmd, nonce, guest.TIMEOUT_S, lambda line: None)
    cases = b.console.cases
    if b.timed_out or [c.name for c in cases] != ["damon"] or not cases[0].ok:
        raise SystemExit(f"damon_gap: the DAMON probe did not run:\n{b.log[-2000:]}")
    case = {"data": cases[0].data, "raw": cases[0].raw}
    fields, aggs, hot = probes.damon_facts(case)
    if (fields.get("tlb"), fields.get("hot_kib")) != (tlb, str(hot_kib)):
        raise SystemExit(f"damon_gap: the guest ran tlb={fields.get('tlb')} hot_kib={fields.get('hot_kib')}, "
                         f"not {tlb} and {hot_kib}")
    ran = next((d for d in case["data"] if "passes" in d), None)
    if ran is None:
        raise SystemExit("damon_gap: the guest did not say how many passes the hot threads made")
    per_sample = sample_us / 1e6 / float(ran["seconds"])
    result = {"arch": arch, "seed": SEED, "kernel": {"abi": k.abi}}
    hot_mean, rest_mean = probes.damon_ratio(aggs, hot)
    model_mean, _ = probes.damon_ratio(probes.damon_model(case, result), hot)
    return {"arch": arch, "uname_r": b.console.uname_r, "tlb": tlb, "hot_kib": hot_kib, "sample_us": sample_us,
            "samples_per_aggregation": AGGR_US // sample_us, "aggregations": len(aggs),
            "hot_mean": round(hot_mean, 3), "rest_mean": round(rest_mean, 5), "model_hot_mean": round(model_mean, 3),
            "passes_per_sample": round(int(ran["passes"]) * per_sample, 2),
            **({"flushes_per_sample": round(int(ran["flushes"]) * per_sample, 2)} if tlb == "flush" else {})}


def measure(arches, modes, hot_sizes, intervals, boots: int, out: Path | None, say=print) -> dict:
    """Boot every setting ``boots`` times per architecture; return (and write to ``out`` after each
    boot) every run with where and when it was measured."""
    k = kernels.load()
    if k is None:
        print("damon_gap: no kernels fetched: run 'make lab-kernels'", file=sys.stderr)
        raise SystemExit(2)
    result = {"seed": SEED, "aggr_us": AGGR_US, "smp": guest.SMP,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "load_1min": os.getloadavg()[0]},
              "kernels": {a: {"release": k.release(a), "package_version": k.package_version(a)} for a in arches},
              "qemu": {a: guest.qemu_version(guest.MACHINES[a].qemu) for a in arches}, "runs": []}
    for arch in arches:
        with tempfile.TemporaryDirectory() as tmp:
            initrd = guest.build_initramfs(arch, k, Path(tmp), ["damon"])
            for i in range(boots):  # each boot goes through every setting, so the host's load falls on all
                for tlb, kib, us in itertools.product(modes, hot_sizes, intervals):
                    r = one_boot(arch, k, initrd, tlb, kib, us)
                    result["runs"].append(r)
                    most = r["samples_per_aggregation"]
                    say(f"damon_gap: {arch} boot {i + 1}/{boots} tlb={tlb} hot {kib} KiB sample {us} us: hot "
                        f"mean nr_accesses {r['hot_mean']:.2f} of {most} ({r['hot_mean'] / most:.1%} of samples) "
                        f"over {r['aggregations']} aggregations; model {r['model_hot_mean']:.2f}; the hot threads "
                        f"passed over the range {r['passes_per_sample']:.1f} times per sample"
                        + (f", the flush thread flushed {r['flushes_per_sample']:.1f} times" if tlb == "flush" else ""))
                    if out is not None:
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_text(json.dumps(result, indent=1) + "\n")
    return result


def run(out_dir: Path, say=print) -> dict:
    """``make bench``'s entry: x86_64, every TLB mode, two boots, the thread's 5 ms sampling."""
    return measure(["x86_64"], TLB_MODES, [HOT_KIB], [5000], 2, out_dir / "damon-gap.json", say)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", nargs="+", default=["x86_64"], choices=list(guest.MACHINES))
    ap.add_argument("--tlb", nargs="+", default=list(TLB_MODES), choices=TLB_MODES)
    ap.add_argument("--hot-kib", nargs="+", type=int, default=[HOT_KIB], metavar="KIB",
                    help=f"hot range sizes in KiB, whole pages below 64 MiB (default {HOT_KIB})")
    ap.add_argument("--sample-us", nargs="+", type=int, default=[5000], metavar="US",
                    help=f"sampling intervals in whole microseconds, 1000..{AGGR_US} (default 5000)")
    ap.add_argument("--boots", type=int, default=1, help="boots per setting (1..30; default 1)")
    ap.add_argument("--out", type=Path, help="also write every run as JSON here")
    a = ap.parse_args()
    if any(not 1000 <= us <= AGGR_US for us in a.sample_us):
        ap.error(f"each --sample-us must be 1000..{AGGR_US}")
    if any(not 0 < kib < 65536 or kib % 64 for kib in a.hot_kib):
        ap.error("each --hot-kib must be a multiple of 64 below 65536")
    if not 1 <= a.boots <= 30:
        ap.error(f"--boots must be 1..30, not {a.boots}")
    measure(a.arch, a.tlb, a.hot_kib, a.sample_us, a.boots, a.out, lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
