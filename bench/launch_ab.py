"""Per-VMA locks on real kernels: launchbench in QEMU, Linux 6.1 (no CONFIG_PER_VMA_LOCK) against 6.12.

Each kernel is booted BOOTS times with only the launch probe (kernel-lab/guest/launchbench.c: two
threads creating stacks with mmap + mprotect of a guard page while two fault their working sets);
each boot gives one p50, p90, p99 fault latency and one makespan, and the result is each one's mean
over the boots with a 95% Student t interval.  The 6.12 kernel is the one ``kstep lab fetch``
cached; the 6.1 one is bookworm's newest ``linux-image-6.1.0-*-{amd64,arm64}-unsigned``, which
``kstep.lab.guest.base_kernel`` fetches the first time (or a ``vmlinuz`` given by path).  Times are
TCG's (bench/ab.py says what that does to them).

    python bench/launch_ab.py [--base-kernel PATH] [--boots N] [--arch x86_64|arm64] [--out FILE]
    make bench BENCH=launch-ab
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))
sys.path.insert(0, str(ROOT))

from bench import ab  # noqa: E402
from kstep.lab.guest import base_kernel, probes  # noqa: E402

KEYS = ("p50_ns", "p90_ns", "p99_ns", "makespan_ns")
SMP = 4  # two mappers and two faulters, each with a vCPU
BOOTS = 5


def one(uname_r: str, data: list) -> dict:
    """A boot's record: its fault-latency percentiles and makespan, once the probe's checks hold."""
    failed = [c for c in probes.judge_launch(data) if not c.ok]
    if failed:
        raise SystemExit(f"launch_ab: {uname_r}: {failed}")
    return {"uname_r": uname_r, **probes.launch_fields(data)}


def measure(base: Path, boots: int, arch: str, out: Path, say=print) -> dict:
    """Boot each kernel ``boots`` times, alternating; write and return the result."""
    result = ab.alternate("launch-ab", "launch", base, boots, arch, SMP, one,
                          lambda r: " ".join(f"{key}={r[key]}" for key in KEYS) + f" per_vma={r['per_vma']}", say)
    summary = {name: {key: ab.interval([r[key] for r in rs]) for key in KEYS} for name, rs in result["boots"].items()}
    result = {**result, "summary": summary}
    ab.write(result, out)
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
    return ab.main(__doc__, measure, BOOTS, "launch-ab.json")


if __name__ == "__main__":
    sys.exit(main())
