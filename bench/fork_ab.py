"""Fork batching on real kernels: forkbench in QEMU, Linux 6.1 (PTE by PTE) against 6.12 (batched).

copy_present_ptes() batches the PTEs of one large folio (folio_pte_batch()) from 6.9 on; bookworm's
6.1 copies every PTE alone.  Each kernel boots BOOTS times, alternating, with only the fork probe
(kernel-lab/guest/forkbench.c via /init's probe_fork).  Two of its modes are the A/B: ``4k`` (order-0
folios, nothing to batch on either kernel) and ``2m-pte`` (PMD-split 2M folios: order-9 folios mapped
by PTEs, which 6.12 batches and 6.1 does not).  Each boot gives the first fork's time (writable,
exclusive PTEs, write-protected as they are copied) and the median of the later ones; the result is
each one's mean over the boots with a 95% Student t interval (bench/launch_ab.py's).  The probe's
``64k`` mode has no counterpart on 6.1 (per-size mTHP came in 6.8: there it maps 2M THPs) and ``2m``
is PMD-mapped on both (copy_huge_pmd()): both are recorded per boot but not compared.

Times are TCG's (see bench/launch_ab.py): only a difference far outside the interval says anything.

    python bench/fork_ab.py [--base-kernel PATH] [--boots N] [--arch x86_64|arm64] [--out FILE]
    make lab-fork-ab    make bench BENCH=fork-ab
"""

import argparse
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "simulator"))
sys.path.insert(0, str(ROOT))

from bench.launch_ab import interval  # noqa: E402
from kstep.lab.guest import base_kernel, kernels, probes, qemu as guest  # noqa: E402

MODES = ("4k", "2m-pte")  # order-0 and PTE-mapped order-9: the modes both kernels map the same way
KEYS = ("first_us", "median_us")
SMP = 2
BOOTS = 3


def one_boot(arch: str, k: kernels.Kernels, kernel: Path, initrd: Path) -> dict:
    nonce = secrets.token_hex(8)
    cmd = guest.qemu_command(arch, k, initrd, SMP, f"kstep_nonce={nonce} kstep_probes=fork")
    cmd[cmd.index("-kernel") + 1] = str(kernel)
    b = guest.boot(cmd, nonce, guest.TIMEOUT_S, lambda line: None)
    cases = b.console.cases
    if b.timed_out or [c.name for c in cases] != ["fork"] or not cases[0].ok:
        raise SystemExit(f"fork_ab: {kernel} did not run the fork probe:\n{b.log[-2000:]}")
    st = probes.fork_stats(cases[0].data)
    missing = [m for m in MODES if m not in st or "first_us" not in st[m]]
    if missing:
        raise SystemExit(f"fork_ab: {kernel}: no first_us for mode {', '.join(missing)}")
    pte = st["2m-pte"]
    if not (pte["anon_huge_kb"] == 0 and pte["split_pmd"] > 0 and pte["split_page"] == 0):
        raise SystemExit(f"fork_ab: {kernel}: 2m-pte is not PTE-mapped 2M folios: {pte}")
    return {"uname_r": b.console.uname_r, "modes": st}


def measure(base: Path, boots: int, arch: str, out: Path, say=print) -> dict:
    """Boot each kernel ``boots`` times, alternating; write and return the result."""
    k = kernels.load()
    if k is None:
        print("fork_ab: no 6.12 kernels fetched: run 'make lab-kernels'", file=sys.stderr)
        raise SystemExit(2)
    load_before = os.getloadavg()[0]
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        initrd = guest.build_initramfs(arch, k, Path(tmp), ["fork"])
        runs: dict[str, list[dict]] = {"6.1": [], "6.12": []}
        for i in range(boots):  # alternate so a change in the host's load falls on both
            for name, kernel in (("6.1", base), ("6.12", k.kernel(arch))):
                r = one_boot(arch, k, kernel, initrd)
                runs[name].append(r)
                say(f"fork_ab: {arch} {name} boot {i + 1}/{boots}: " + " ".join(
                    f"{m}:{key}={r['modes'][m][key]:.0f}" for m in MODES for key in KEYS))
    summary = {name: {m: {key: interval([r["modes"][m][key] for r in rs]) for key in KEYS} for m in MODES}
               for name, rs in runs.items()}
    result = {"bench": "fork-ab", "arch": arch, "smp": SMP, "host_cpus": os.cpu_count(),
              "host": os.uname().nodename, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
              "base_kernel": base.name, "kernels": {n: rs[0]["uname_r"] for n, rs in runs.items()},
              "host_load_1min": {"before": load_before, "after": os.getloadavg()[0]},
              "timing": "TCG (no KVM): guest times are QEMU's, see bench/launch_ab.py",
              "summary": summary, "boots": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-kernel", type=Path, help="a 6.1 vmlinuz for the same architecture "
                    "(default: bookworm's newest, fetched the first time)")
    ap.add_argument("--boots", type=int, default=BOOTS, help=f"boots per kernel (2..30; default {BOOTS})")
    ap.add_argument("--arch", default="x86_64", choices=sorted(base_kernel.DEB_ARCH))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "fork-ab.json")
    a = ap.parse_args()
    if not 2 <= a.boots <= 30:
        ap.error(f"--boots must be 2..30, not {a.boots}")
    if a.base_kernel is not None and not a.base_kernel.is_file():
        ap.error(f"--base-kernel {a.base_kernel}: no such file")
    measure(a.base_kernel or base_kernel.fetch(arch=a.arch), a.boots, a.arch, a.out, lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
