"""Builds the kernel lab's torture tool with your head_claim.c and runs it.

    export KSTEP_KERNEL_LAB=/path/to/kstep/kernel-lab      # built with make lab
    echo '{"arch": "x86_64", "pending_bits": 8, "args": ["--threads", "2"]}' | python driver.py

Your file replaces the queue head's claim and hand-off in the lab's Linux 6.12 qspinlock (the
v6.12 variant, both pending-bit layouts); everything else links from the lab's own build
(make lab).  arm64 and ppc64le binaries run under qemu-user.  The race runs with the request's
"seed" (default 1); a run that never took the queue's paths (exit 4, inconclusive: whether racing
CPUs ever queue is the host's timing) is run again with the next seed, up to TRIES seeds, while a
violation, a hang or anything else is the answer at once.  The answer is one JSON line: whether it
built (and the compiler's complaints if not), the seed of the run it reports, the torture tool's
exit status (0 clean, 1 violation, 3 hang, 4 inconclusive) or how it ended without one ("was killed
by signal SIGSEGV", "wrote more output than allowed (an output flood)": its output is read up to
OUTPUT bytes), and its summary.
"""

import json
import os
import sys
from pathlib import Path

from kstep.grading.sandbox import Limits, capture

CC = {"x86_64": "gcc", "arm64": "aarch64-linux-gnu-gcc", "ppc64le": "powerpc64le-linux-gnu-gcc"}
RUN = {"x86_64": [], "arm64": ["qemu-aarch64"], "ppc64le": ["qemu-ppc64le"]}
NR_CPUS = {8: 64, 1: 16384}
CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-sign-compare",
          "-fno-strict-aliasing", "-ftls-model=local-exec", "-pthread"]
OUTPUT = 4 << 20  # bytes: the torture tool prints one summary line (its log goes to a file)
INCONCLUSIVE = 4  # the torture tool's exit status for a run that never took the queue's paths
TRIES = 3  # seeds tried while a run is inconclusive


def build(root: Path, arch: str) -> tuple[Path, str]:
    """(the torture binary, the compiler's output): built once per architecture."""
    here = Path.cwd()
    binary = here / f"torture-{arch}"
    if binary.exists():
        return binary, ""
    objs = sorted((root / "build" / arch / "obj" / "torture").glob("*.o"))
    if not objs:
        raise SystemExit(f"driver: {root}/build/{arch} has no objects: run make lab first")
    mine = []
    for bits, cpus in NR_CPUS.items():
        out = here / f"head_claim-{arch}-pb{bits}.o"
        # the kernel's qspinlock.c and the headers it includes are in build/src (make lab made them)
        cmd = [CC[arch], *CFLAGS, f"-I{root}/include", f"-I{root}/arch/{arch}/include", f"-I{root}/common",
               "-iquote", f"{root}/build/src/kernel/locking", f"-I{root}/build/src/include",
               "-DLAB_HOOKS=1", "-DLAB_VARIANT_ID=V6_12", "-DLAB_VARIANT_V6_12", f"-DLAB_PENDING_BITS={bits}",
               f"-DCONFIG_NR_CPUS={cpus}", f'-DLAB_HEAD_CLAIM="{here / "head_claim.c"}"',
               "-c", str(root / "qspinlock" / "lock_ops.c"), "-o", str(out)]
        r = capture(cmd, Limits(output=OUTPUT, wall=7200))
        if r.verdict != "ok":
            return None, complaints(r)
        mine.append(out)
    others = [o for o in objs if not o.name.startswith("qspinlock-V6_12-")]
    r = capture([CC[arch], "-static", "-pthread", *map(str, others + mine), "-o", str(binary)],
                Limits(output=OUTPUT, wall=7200))
    return (binary, "") if r.verdict == "ok" else (None, complaints(r))


def complaints(r) -> str:
    """What a compiler or linker that failed said, and how it ended if it did not just exit."""
    said = r.stderr.decode(errors="replace")[-3000:]
    return said if r.verdict == "failed" else f"{said}\n(the compiler {r.why})".strip()


def main():
    request = json.loads(sys.stdin.read())
    arch = request.get("arch", "x86_64")
    root = request.get("lab") or os.environ.get("KSTEP_KERNEL_LAB")
    if not root:
        raise SystemExit("driver: say where kstep's kernel-lab is: KSTEP_KERNEL_LAB=/path/to/kstep/kernel-lab")
    binary, errors = build(Path(root), arch)
    if binary is None:
        print(json.dumps({"built": False, "errors": errors}))
        return
    cmd = RUN[arch] + [str(binary), "--variant", "v6.12", "--pending-bits", str(request.get("pending_bits", 8)),
                       *request.get("args", [])]
    first = int(request.get("seed", 1))
    for seed in range(first, first + TRIES):
        # the sandbox's own wall-clock limit stops a program that hangs: this one only caps the output
        r = capture(cmd + ["--seed", str(seed)], Limits(output=OUTPUT, wall=7200))
        if r.verdict != "failed" or r.status != INCONCLUSIVE:
            break
    lines = r.stdout.decode(errors="replace").strip().splitlines()
    try:
        summary = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        summary = None
    ended = r.status if r.verdict in ("ok", "failed") else r.why
    print(json.dumps({"built": True, "seed": seed, "status": ended, "summary": summary,
                      "stderr": r.stderr.decode(errors="replace")[-2000:]}))


if __name__ == "__main__":
    main()
