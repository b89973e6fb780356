"""fork's page-table copy, counted by the fork-batch model and timed in the kernel lab's C port.

Counts: operations per copied GiB for order-0, order-4 and order-9 folios under each strategy of the
December 2023 thread, on every PTE format, with the change relative to per-pte (the shape of the
thread's tables); the model is run, never timed.  The lab's memory modes relative to 4K are given for
the real-kernel lab's first fork and for a later one (kstep.measure.fork_batch.FORKS).

Times: kernel-lab's fork-batch-bench copies 1 GiB of populated memory (512 PTE tables) and times
each dup_mmap: mean and standard deviation over the repetitions, change of the mean relative to
per-pte.  They time the port's synthetic page tables, not a kernel's fork: what they can show is
the shape of the counts, in time.  x86_64 runs natively, every format; arm64 and ppc64le run
under qemu-user, their own format only, and are marked emulated (the emulator's translation, not
those machines).  The C counts of every run must equal the model's: a difference fails the bench.
"""

import json
import statistics
import subprocess

from kstep.measure.fork_batch import FORKS, GIB_TABLES, STRATEGIES, per_gib, predicted_relative_cost, strategy_table
from kstep.models.fork_batch.pgtable import ARM64, FORMATS, GENERIC, Ops
from kstep.models.fork_batch.state import PER_PTE

from bench.qspinlock import LAB, QEMU

TIMED = {"x86_64": (FORMATS, (0, 4, 9), 5), "arm64": ((ARM64,), (0, 9), 3), "ppc64le": ((GENERIC,), (0, 9), 3)}


def c_run(arch, fmt, strategy, order, reps):
    exe = LAB / "build" / arch / "fork-batch-bench"
    p = subprocess.run(QEMU[arch] + [str(exe), fmt, strategy, str(order), str(reps)], capture_output=True,
                       text=True, check=True, timeout=1800)
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    ns = [int(x) for x in lines["ns"].split()]
    ops = dict(zip(Ops._fields, map(int, lines["ops"].split())))
    model = per_gib(fmt, strategy, order)["gib"]
    if ops != model:
        raise RuntimeError(f"fork-batch-bench {arch} {fmt} {strategy} order {order}: C counts {ops}, model {model}")
    return ns


def timings(say) -> dict:
    subprocess.run(["make", "-s", "-C", str(LAB), "-j2"], check=True)
    out = {}
    for arch, (formats, orders, reps) in TIMED.items():
        for fmt in formats:
            say(f"fork-batch: timing the C port, {arch}, {fmt} ...")
            rows = {}
            for order in orders:
                ms = {s: [n / 1e6 for n in c_run(arch, fmt, s, order, reps)] for s in STRATEGIES}
                base = statistics.mean(ms[PER_PTE])
                rows[f"order-{order}"] = {s: {"mean_ms": round(statistics.mean(v), 3),
                                              "stdev_ms": round(statistics.stdev(v), 3),
                                              "change_vs_per_pte": round(statistics.mean(v) / base - 1, 4)}
                                          for s, v in ms.items()}
            out[f"{arch} {fmt}"] = {"emulated": arch != "x86_64", "repetitions": reps, "orders": rows}
    return out


def run(out_dir, say=print) -> dict:
    result = {"unit": f"counted operations per GiB copied (4 KiB pages, {GIB_TABLES} PTE tables)",
              "strategies": list(STRATEGIES), "formats": {}}
    for fmt in FORMATS:
        say(f"fork-batch: {fmt} ...")
        result["formats"][fmt] = {"strategies": strategy_table(fmt),
                                  "lab_modes_relative_to_4K": {fork: predicted_relative_cost(fmt, fork=fork)
                                                               for fork in FORKS}}
    result["c_port_times"] = timings(say)
    (out_dir / "fork-batch.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
