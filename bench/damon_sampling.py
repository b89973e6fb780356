"""DAMON's hot-range gap on the real kernel: does the sampling interval explain it?

The lab's DAMON probe sees a mean nr_accesses of about 3.2 of 20 for a range the workload writes
all the time (the model: 17.41).  If a hot page's accessed bit came back only because time passed
(a pass over the range slower than one sample), a longer sampling interval would raise the share of
samples that find it accessed.  This boots the x86_64 lab kernel once per interval given, with only
the DAMON probe (same seed, aggregation 100 ms), and prints that share: nr_accesses over its
maximum, aggr_us / sample_us.

    python bench/damon_sampling.py [SAMPLE_US ...]     (default: 5000 20000)
"""

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))

from kstep.lab.guest import kernels, probes, qemu as guest  # noqa: E402

AGGR_US = 100_000  # what /init writes to aggr_us


def share(k: kernels.Kernels, sample_us: int, work: Path) -> tuple[float, int, int]:
    initrd = guest.build_initramfs("x86_64", k, work, ["damon"])
    nonce = secrets.token_hex(8)
    cmd = guest.qemu_command("x86_64", k, initrd, guest.SMP,
                             f"kstep_nonce={nonce} kstep_probes=damon kstep_seed=1 kstep_damon_sample_us={sample_us}")
    b = guest.boot(cmd, nonce, guest.TIMEOUT_S, lambda line: None)
    cases = b.console.cases
    if b.timed_out or [c.name for c in cases] != ["damon"] or not cases[0].ok:
        raise SystemExit(f"damon_sampling: the DAMON probe did not run:\n{b.log[-2000:]}")
    _, aggs, hot = probes.damon_facts({"data": cases[0].data, "raw": cases[0].raw})
    hot_mean, _ = probes.damon_ratio(aggs, hot)
    return hot_mean, AGGR_US // sample_us, len(aggs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("intervals", nargs="*", type=int, metavar="SAMPLE_US",
                    help="sampling intervals in whole microseconds (default: 5000 20000)")
    intervals = ap.parse_args().intervals or [5000, 20000]
    if any(not 1000 <= us <= AGGR_US for us in intervals):
        print(f"damon_sampling: each interval must be 1000..{AGGR_US} us", file=sys.stderr)
        return 2
    k = kernels.load()
    if k is None:
        print("damon_sampling: no kernels fetched: run 'make lab-kernels'", file=sys.stderr)
        return 2
    for us in intervals:
        with tempfile.TemporaryDirectory() as tmp:
            hot, most, n = share(k, us, Path(tmp))
        print(f"damon_sampling: sample {us} us: hot mean nr_accesses {hot:.2f} of {most} "
              f"({hot / most:.1%} of samples) over {n} aggregations", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
