"""Fork batching on real kernels: forkbench in QEMU, Linux 6.1 (PTE by PTE) against 6.12 (batched).

copy_present_ptes() batches the PTEs of one large folio (folio_pte_batch()) from 6.9 on; bookworm's
6.1 copies every PTE alone.  Each kernel boots BOOTS times, alternating, with only the fork probe
(kernel-lab/guest/forkbench.c via /init's probe_fork).  Two of its modes are the A/B: ``4k`` (order-0
folios, nothing to batch on either kernel) and ``2m-pte`` (PMD-split 2M folios: order-9 folios mapped
by PTEs, which 6.12 batches and 6.1 does not).  Each boot gives the first fork's time (writable,
exclusive PTEs, write-protected as they are copied) and the median of the later ones; the result is
each one's mean over the boots with a 95% Student t interval (bench/ab.py's).  The probe's
``64k`` mode has no counterpart on 6.1 (per-size mTHP came in 6.8: there it maps 2M THPs) and ``2m``
is PMD-mapped on both (copy_huge_pmd()): both are recorded per boot but not compared.

Times are TCG's (see bench/ab.py): only a difference far outside the interval says anything.

    python bench/fork_ab.py [--base-kernel PATH] [--boots N] [--arch x86_64|arm64] [--out FILE]
    make lab-fork-ab    make bench BENCH=fork-ab
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))
sys.path.insert(0, str(ROOT))

from bench import ab  # noqa: E402
from kstep.lab.guest import base_kernel, probes  # noqa: E402

MODES = ("4k", "2m-pte")  # order-0 and PTE-mapped order-9: the modes both kernels map the same way
KEYS = ("first_us", "median_us")
SMP = 2
BOOTS = 3


def one(uname_r: str, data: list) -> dict:
    """A boot's record: forkbench's statistics per mode, once both compared modes are what they claim."""
    st = probes.fork_stats(data)
    missing = [m for m in MODES if m not in st or "first_us" not in st[m]]
    if missing:
        raise SystemExit(f"fork_ab: {uname_r}: no first_us for mode {', '.join(missing)}")
    pte = st["2m-pte"]
    if not (pte["anon_huge_kb"] == 0 and pte["split_pmd"] > 0 and pte["split_page"] == 0):
        raise SystemExit(f"fork_ab: {uname_r}: 2m-pte is not PTE-mapped 2M folios: {pte}")
    return {"uname_r": uname_r, "modes": st}


def measure(base: Path, boots: int, arch: str, out: Path, say=print) -> dict:
    """Boot each kernel ``boots`` times, alternating; write and return the result."""
    result = ab.alternate("fork-ab", "fork", base, boots, arch, SMP, one,
                          lambda r: " ".join(f"{m}:{key}={r['modes'][m][key]:.0f}" for m in MODES for key in KEYS), say)
    summary = {name: {m: {key: ab.interval([r["modes"][m][key] for r in rs]) for key in KEYS} for m in MODES}
               for name, rs in result["boots"].items()}
    result = {**result, "summary": summary}
    ab.write(result, out)
    for m in MODES:
        for key in KEYS:
            old, new = summary["6.1"][m][key], summary["6.12"][m][key]
            say(f"fork_ab: {arch} {m} {key[:-3]}: 6.1 {old['mean']:.0f} ± {old['ci95']:.0f} us, "
                f"6.12 {new['mean']:.0f} ± {new['ci95']:.0f} us (95%, {boots} boots each)")
    say(f"fork_ab: wrote {out}")
    return result


def run(out_dir: Path, say=print) -> dict:
    """``make bench``'s entry: bookworm's 6.1, fetched if need be, against the lab's 6.12 on x86_64."""
    return measure(base_kernel.fetch(say), BOOTS, "x86_64", out_dir / "fork-ab.json", say)


def main() -> int:
    return ab.main(__doc__, measure, BOOTS, "fork-ab.json")


if __name__ == "__main__":
    sys.exit(main())
