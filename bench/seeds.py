"""Each seed thread's number beside kstep's (issue 25 §2): one table per mechanism.

A row holds the thread's number and where in the thread it is (``/work/shared/seeds``' files, by
line), the model's number counted (steps, transfers, operations) and timed under the committed cost
table (simulator/kstep/costs.json), the real kernel's where one is measured, and a sentence on what
can and cannot be compared.  A row that disagrees stays, with its reason; nothing is tuned.  The
qspinlock table's last row is the thread's microbenchmark on the lab's C port, quoted from the run
bench/qspinlock_ab.py wrote and kernel-lab/qspinlock/recorded/ keeps; DAMON's port row likewise quotes
the run bench/damon_port.py wrote and kernel-lab/damon/recorded/ keeps, its flatness computed from the raw runs.

``model_tables(names)`` computes the model's part alone and is cheap for the bundled sizes; DAMON's
rows take minutes (kdamond's run on a busy 1 TiB target), so its slice is ``damon(...)``'s arguments.
``python bench/run.py seeds`` writes bench/results/seeds.json, seeds.png and seeds-damon.png, and the same JSON to
simulator/kstep/seeds.json, committed, which the chapters are to quote (nothing typed by hand);
``python bench/run.py seeds --only vma-locks`` (or another of ``MECHANISMS``) remakes that table alone:
simulator/tests/test_seeds.py regenerates its bundled slice and compares.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import damon_port
from bench.damon import OVERHEAD_AGGREGATIONS, SCHEME_AGGREGATIONS
from kstep.engine import costs
from kstep.lab.guest import probes as lab_probes
from kstep.lab.guest import qemu as guest
from kstep.measure import damon as dc
from kstep.measure import timed
from kstep.measure.fork_batch import FIRST, FORKS, LATER, per_gib, strategy_table
from kstep.models.fork_batch.pgtable import OPS_COST

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "simulator" / "kstep" / "seeds.json"
RECORDED = ROOT / "kernel-lab" / "guest" / "recorded"  # real-kernel runs, each with where and when it ran
DAMONCPU = "x86_64-damoncpu-*.json"  # the seed table's real kernel: x86_64, as the thread's machines were
DAMON_GAP = RECORDED / "damon-gap"  # bench/damon_gap.py's runs (not lab results: kept out of recorded/*.json)
NOT_MEASURED = "not measured"  # the real-kernel column until a lab target measures the row

VMA_SIZES = {  # scenario -> size -> overrides; the thread's ~100 threads, simulated (not explored)
    "android-app-launch": {
        "bundled": [],
        "12 faulting threads, 4 mappers": ["threads.0.count=12", "threads.0.repeat=10",
                                           "threads.1.count=4", "threads.1.repeat=5"],
        "100 threads: 96 faulting, 4 mappers": ["threads.0.count=96", "threads.0.repeat=10",
                                                "threads.1.count=4", "threads.1.repeat=5"],
        "100 threads: 75 faulting, 25 mappers": ["threads.0.count=75", "threads.0.repeat=10",
                                                 "threads.1.count=25", "threads.1.repeat=5"],
    },
    "tcp-zerocopy-vs-madvise": {
        "bundled": [],
        "15 receivers": ["threads.0.count=15"],
        "99 receivers": ["threads.0.count=99"],
    },
}
BUNDLED = {scenario: {"bundled": []} for scenario in VMA_SIZES}
VMA_SCENARIOS = {
    "android-app-launch": ("000_715feacf55d79653.txt:80",
                           "app launch with ~100 threads: up to 20% faster"),
    "tcp-zerocopy-vs-madvise": ("000_715feacf55d79653.txt:129-140",
                                "mmap_lock contention 0.7% of cycles; TCP zerocopy receive 0.5%+ fewer cycles"),
}
QSPINLOCK_SCENARIOS = ("two-waiters", "three-waiters", "set-locked-contended")
CONTPTE_UNTIMED = ("not timed: argued in reads per folded block (16 with the hook against 256 without); the "
                   "thread-rmap contpte rows (patch 15/16's hook, and David's batching without it) time the argument")
PATCH_15_UNTIMED = ("no number: the thread lists v4 patch 15/16 (arm64's pte_batch_remaining on contiguous PTEs, with "
                    "the batched write-protect and set) but quotes no measurement of it; Ryan argues it in reads per "
                    "folded block, 16 with the hook against 256 without")
NO_HINT_UNTIMED = ("no number: Ryan's objection to David's batching once arm64 has contiguous PTEs, ptep_get() of "
                   "each PTE of a folded block reading all 16, '16 x 16 reads, which kills performance'")
NOT_THREADS = "not the thread's configuration: 6.12's rmap also counts folio->_large_mapcount"
THREAD_RMAP, RMAP_6_12 = "one _mapcount atomic per PTE (the thread's)", "6.12 (and _large_mapcount)"
# The fork rows' configurations, each against per-pte on the same format and rmap: (PTE format, whether
# folios keep _large_mapcount, the strategy), the thread's own first.
FORK_CONFIGS = (("x86-64", False, "folio-batch"), ("x86-64", True, "folio-batch"),
                ("arm64-4K", False, "folio-batch"), ("arm64-4K", True, "folio-batch"),
                ("arm64-4K", False, "arch-hint"), ("arm64-4K", False, "per-pte"),
                ("arm64-4K-contpte", True, "folio-batch"), ("arm64-4K-contpte", False, "arch-hint"),
                ("arm64-4K-contpte", False, "no-batch-hint"))
V4_PATCH_02 = "v4 patch 02 alone, the hook a compile-time 1"
# Ryan's arm64 tables (001_d9d6ae4fc76baf55.txt:280-306): each kernel's mean against mm-unstable, in %, (M2, Altra).
# David's prototype sits on his rmap series (hugetlb-rmap-cleanups), so the model's per-pte baseline is that
# kernel, and the prototype's own change is measured against it.
RYAN_ARM64 = {0: {"hugetlb-rmap-cleanups": (1.3, 3.2), "fork-batching": (3.5, 5.5)},
              9: {"hugetlb-rmap-cleanups": (0.9, 0.5), "fork-batching": (-35.6, -10.3)}}


def _ryan(order: int, kernel: str) -> str:
    """Ryan's number for ``kernel`` at ``order``; the prototype's also against its own base."""
    said = " / ".join(f"{x:+.1f}% {m}" for x, m in zip(RYAN_ARM64[order][kernel], ("M2", "Altra")))
    if kernel == "hugetlb-rmap-cleanups":
        return f"{said} (hugetlb-rmap-cleanups, the prototype's base, against mm-unstable)"
    own = " / ".join(f"{100 * ((100 + x) / (100 + b) - 1):+.1f}%"
                     for x, b in zip(RYAN_ARM64[order][kernel], RYAN_ARM64[order]["hugetlb-rmap-cleanups"]))
    return f"{said} against mm-unstable, {own} against its base (David's prototype; no contpte)"


FORK_THREAD = {  # (format, strategy, order) -> (where, the thread's number on its kernels)
    ("x86-64", "folio-batch", 0): ("001_d9d6ae4fc76baf55.txt:209-211", "-1.7% (Xeon 4210R, David's prototype)"),
    ("x86-64", "folio-batch", 9): ("001_d9d6ae4fc76baf55.txt:213-215", "-36.3% (Xeon 4210R, David's prototype)"),
    ("arm64-4K", "folio-batch", 0): ("001_d9d6ae4fc76baf55.txt:280-299", _ryan(0, "fork-batching")),
    ("arm64-4K", "folio-batch", 9): ("001_d9d6ae4fc76baf55.txt:287-306", _ryan(9, "fork-batching")),
    ("arm64-4K", "per-pte", 0): ("001_d9d6ae4fc76baf55.txt:280-299", _ryan(0, "hugetlb-rmap-cleanups")),
    ("arm64-4K", "per-pte", 9): ("001_d9d6ae4fc76baf55.txt:287-306", _ryan(9, "hugetlb-rmap-cleanups")),
    ("arm64-4K", "arch-hint", 0): ("001_d9d6ae4fc76baf55.txt:91-103", f"-1.0% M2 / -0.1% Altra ({V4_PATCH_02})"),
    ("arm64-4K", "arch-hint", 9): ("001_d9d6ae4fc76baf55.txt:91-103", f"-0.1% M2 / -0.1% Altra ({V4_PATCH_02})"),
    ("arm64-4K-contpte", "folio-batch", 0): ("001_d9d6ae4fc76baf55.txt:227-240", CONTPTE_UNTIMED),
    ("arm64-4K-contpte", "folio-batch", 9): ("001_d9d6ae4fc76baf55.txt:227-240", CONTPTE_UNTIMED),
    ("arm64-4K-contpte", "arch-hint", 0): ("001_d9d6ae4fc76baf55.txt:383,227-240", PATCH_15_UNTIMED),
    ("arm64-4K-contpte", "arch-hint", 9): ("001_d9d6ae4fc76baf55.txt:383,227-240", PATCH_15_UNTIMED),
    ("arm64-4K-contpte", "no-batch-hint", 0): ("001_d9d6ae4fc76baf55.txt:227-240", NO_HINT_UNTIMED),
    ("arm64-4K-contpte", "no-batch-hint", 9): ("001_d9d6ae4fc76baf55.txt:227-240", NO_HINT_UNTIMED),
}
THREADS_TIMED = {(fmt, strategy) for fmt, large_mapcount, strategy in FORK_CONFIGS if not large_mapcount}


def _change(new: float, old: float) -> float:
    return round(new / old - 1, 4)

# The real kernels' A/B (bench/launch_ab.py, bench/fork_ab.py), recorded under kernel-lab/guest/recorded/ab/
# as they wrote them; a row's "real" cell is built from these files alone.
RECORDED_AB = Path(__file__).resolve().parent.parent / "kernel-lab" / "guest" / "recorded" / "ab"
TCG = "TCG (QEMU without KVM: every guest instruction translated, vCPUs are host threads on a shared host)"
VMA_CHANGED = ("6.1 → 6.12 changes more than per-VMA locks (6.4): the maple tree's and mmap_lock's code, "
               "lock_vma_under_rcu's retry paths, the page allocator and the scheduler (EEVDF, 6.6)")
FORK_CHANGED = ("6.1 → 6.12 changes more than fork batching (folio_pte_batch, 6.9): the rmap's folio functions "
                "and _large_mapcount (6.10), per-size mTHP (6.8), arm64 contpte (6.9), the page allocator")
FORK_MODES = {0: "4k", 9: "2m-pte"}  # forkbench's mode for each order of the fork rows
# the fork row the 6.12 kernel is: 6.12's rmap keeps _large_mapcount; Debian's arm64 6.12 has CONFIG_ARM64_CONTPTE
FORK_ROW_ARCH = {("x86-64", True, "folio-batch"): "x86_64", ("arm64-4K-contpte", True, "folio-batch"): "arm64"}


def _recorded_ab(bench: str, arch: str) -> dict | None:
    path = RECORDED_AB / f"{bench}-{arch}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _ci(x: dict, scale: float, unit: str) -> str:
    return f"{x['mean'] / scale:.1f} ± {x['ci95'] / scale:.1f} {unit}"


def _apart(old: dict, new: dict) -> str:
    """Whether two 95% intervals overlap: if they do, these boots cannot tell the kernels apart."""
    overlap = abs(new["mean"] - old["mean"]) <= old["ci95"] + new["ci95"]
    return "intervals overlap" if overlap else "intervals apart"


def _provenance(r: dict) -> str:
    load = r["host_load_1min"]
    boots = len(r["boots"]["6.1"])
    failed = r.get("failed_boots", [])
    rebooted = "".join(f"; a {f['uname_r'] or f['kernel']} boot stopped before its probe ({f['why']}) and was booted "
                       "again" for f in failed)
    return (f"{r['arch']}, {r['kernels']['6.1']} → {r['kernels']['6.12']}, {boots} boots each, 95% intervals, "
            f"{r['date']}, host load {load['before']:.1f}→{load['after']:.1f} on {r['host_cpus']} CPUs"
            f"{rebooted}; {TCG}")


def real_vma(scenario: str, size: str) -> str:
    """The launch A/B's cell for a vma-locks row: its makespan and fault percentiles, 6.1 → 6.12, per arch."""
    if scenario != "android-app-launch":
        return f"{NOT_MEASURED}: no lab probe runs TCP zerocopy receive against madvise"
    cells = []
    for arch in ("x86_64", "arm64"):
        r = _recorded_ab("launch-ab", arch)
        if r is None:
            cells.append(f"{arch}: {NOT_MEASURED} (no recorded launch A/B)")
            continue
        old, new = r["summary"]["6.1"], r["summary"]["6.12"]
        lat = "; ".join(f"fault {k[:-3]} {_ci(old[k], 1e3, 'us')} → {_ci(new[k], 1e3, 'us')} ({_apart(old[k], new[k])})"
                        for k in ("p50_ns", "p90_ns", "p99_ns"))
        cells.append(f"launchbench (2 mappers, 2 faulters, not the row's thread counts) 6.1 → 6.12: makespan "
                     f"{_ci(old['makespan_ns'], 1e6, 'ms')} → {_ci(new['makespan_ns'], 1e6, 'ms')} "
                     f"({_apart(old['makespan_ns'], new['makespan_ns'])}); {lat} "
                     f"({_provenance(r)})")
    return " | ".join(cells) + f". {VMA_CHANGED}"


# the model of each kernel of the fork A/B, as (PTE format, whether folios keep _large_mapcount, strategy): 6.1
# copies PTE by PTE with one _mapcount atomic each and, on arm64, no contiguous PTEs; Debian's 6.12.95 batches
# (folio-batch, 6.12.29 on), keeps _large_mapcount and on arm64 has CONFIG_ARM64_CONTPTE
AB_KERNELS = {"x86_64": {"6.1": ("x86-64", False, "per-pte"), "6.12": ("x86-64", True, "folio-batch")},
              "arm64": {"6.1": ("arm64-4K", False, "per-pte"), "6.12": ("arm64-4K-contpte", True, "folio-batch")}}
AB_KEYS = {FIRST: ("first fork", "first_us"), LATER: ("later forks' median", "median_us")}


def ab_model(arch: str, order: int) -> dict:
    """The model's 6.1 → 6.12 change of a fork's time per GiB (committed cost table), for the first fork and
    for a later one, each copying its own state (kstep.measure.fork_batch.FORKS)."""
    split = FORK_MODES[order] == "2m-pte"  # its PMDs split by mprotect as forkbench's mode splits them
    ns = {fork: {k: per_gib(fmt, strategy, order, large_mapcount, timed=True, fork=fork,
                            split=split)["makespan_ns"]["gib"]
                 for k, (fmt, large_mapcount, strategy) in AB_KERNELS[arch].items()} for fork in FORKS}
    return {fork: _change(t["6.12"], t["6.1"]) for fork, t in ns.items()}


def _order(model: float, measured: float) -> str:
    """The measured change held to the model's order with no margin: the same sign agrees."""
    if not model:
        return "the model times both kernels the same: no order to hold"
    return ("agreement" if (model < 0) == (measured < 0) and measured else "a disagreement") + " with the model's order"


def real_fork(fmt: str, large_mapcount: bool, strategy: str, order: int, model: dict | None = None) -> str:
    """The fork A/B's cell for a fork row: the 6.1 → 6.12 fork time of forkbench's mode for ``order``, the
    first fork and the later ones each beside ``model``, :func:`ab_model`'s prediction for that fork."""
    arch = FORK_ROW_ARCH.get((fmt, large_mapcount, strategy))
    if arch is None:
        return (f"{NOT_MEASURED}: no real kernel is this configuration (6.12 keeps _large_mapcount and batches; "
                "its x86-64 stands beside the x86-64 6.12-rmap row, its arm64 (CONFIG_ARM64_CONTPTE) beside the "
                "arm64-4K-contpte 6.12-rmap row)")
    r = _recorded_ab("fork-ab", arch)
    if r is None:
        return f"{NOT_MEASURED}: no recorded fork A/B for {arch}"
    mode = FORK_MODES[order]
    old, new = r["summary"]["6.1"][mode], r["summary"]["6.12"][mode]
    cells = []
    for fork, (what, k) in AB_KEYS.items():
        measured = _change(new[k]["mean"], old[k]["mean"])
        cells.append(f"{what} {_ci(old[k], 1e3, 'ms')} → {_ci(new[k], 1e3, 'ms')} ({measured:+.1%}, "
                     f"{_apart(old[k], new[k])}; model {model[fork]:+.1%}: {_order(model[fork], measured)})")
    return (f"fork() of 256 MiB, forkbench {mode}, 6.1 → 6.12: {'; '.join(cells)} ({_provenance(r)}). "
            f"{boot_orders(r)} "
            f"The model's 6.1 is {_kernel(AB_KERNELS[arch]['6.1'])}, its 6.12 {_kernel(AB_KERNELS[arch]['6.12'])}; "
            "the first fork copies writable, exclusive PTEs and write-protects them, the later ones (the median "
            "is of all forks, all but one of them later) copy the read-only PTEs it left. "
            + (FORK_CHANGED + (": 6.1 has no contpte, so 6.12 also folds the PTEs into contiguous blocks"
                               if arch == "arm64" else "")))


def boot_orders(r: dict) -> str:
    """The lab's 64k-against-4k check (kstep.lab.guest.probes.fork_orders, no margin) on each 6.12 boot of
    the recorded fork A/B ``r``: how many of its checks agree with the model's order, each disagreement
    named with its numbers."""
    checks, inconclusive = [], []
    for n, boot in enumerate(r["boots"]["6.12"], 1):
        kernel = {"arch": r["arch"], "kernel": {"abi": boot["uname_r"]}}
        orders = lab_probes.fork_orders(boot["modes"], lab_probes.fork_predictions_64k(kernel))
        checks += [(n, fork, c) for fork, c in orders.items()]
        if not orders:
            inconclusive.append(f"boot {n}")
    wrong = [f"boot {n}'s {lab_probes.FORK_TIMES[fork][0]} ({c.detail.split(': a disagreement')[0]})"
             for n, fork, c in checks if not c.ok]
    return (f"Forkbench's 64k mode (64K mTHP folios; 6.1 has no mTHP, so it is not in the A/B) against its 4k on "
            f"each 6.12 boot, the first fork and the median each held to the model's order for that fork with no "
            f"margin (the lab's check): {len(checks) - len(wrong)} of {len(checks)} agree"
            + (f"; {len(wrong)} {'disagrees' if len(wrong) == 1 else 'disagree'}: " + "; ".join(wrong)
               if wrong else "")
            + (f"; {', '.join(inconclusive)} got no 64K folios (inconclusive)" if inconclusive else "") + ".")


def _kernel(config: tuple) -> str:
    fmt, large_mapcount, strategy = config
    return f"{strategy} on {fmt} PTEs with {RMAP_6_12 if large_mapcount else THREAD_RMAP}"


def vma_locks(sizes=VMA_SIZES) -> list:
    return [vma_row(scenario, size, timed.vma_faults(scenario, overrides))
            for scenario in VMA_SCENARIOS for size, overrides in sizes[scenario].items()]


def vma_row(scenario: str, size: str, r: dict) -> dict:
    """One per-VMA lock row from the model's timed runs ``r`` of both variants: every other cell of the
    row follows from them, so a test can hold a committed row to its own numbers without rerunning it.
    Its why gives the issue's two causes apart: the faults' waiting behind writers, and per fault the
    faulting threads' own transfers and queueing on the mmap_lock line beside the other lines (the VMAs',
    mm_lock_seq's, the VMA tree's), which are what per-VMA locks take instead; the writers' (the threads in mm
    syscalls) own come apart from them, in all, so that a fault is charged only what it paid."""
    where, said = VMA_SCENARIOS[scenario]
    old, new = r["no-per-vma-lock"], r["v6.12"]
    per = {v: _lines(m["paid_by"]["fault"], m["faults"]) for v, m in r.items()}
    writers = {v: _lines(m["paid_by"]["writer"]) for v, m in r.items()}
    was, now = per["no-per-vma-lock"], per["v6.12"]
    w_was, w_now = writers["no-per-vma-lock"], writers["v6.12"]
    return {
        "scenario": scenario, "size": size, "thread": said, "where": where,
        "model": r,
        "makespan_change": _change(new["makespan_ns"], old["makespan_ns"]),
        "per_fault": per,
        "writers": writers,
        "real": real_vma(scenario, size),
        "why": (f"the run ends with {old['last']} without per-VMA locks and with {new['last']} with them; "
                f"the faults are done at {old['faults_done_ns']:g} → {new['faults_done_ns']:g} ns; they waited "
                f"{old['fault_waiting_ns']} ns without per-VMA locks and "
                f"{new['fault_waiting_ns']} ns with them; per fault handled, the faulting threads' own transfers: "
                f"the mmap_lock line moved to them {was['mmap_lock_transfers']:g} against "
                f"{now['mmap_lock_transfers']:g} times and they queued {was['mmap_lock_queue_ns']:g} against "
                f"{now['mmap_lock_queue_ns']:g} ns for it, the other lines (VMAs, mm_lock_seq, the VMA tree) "
                f"{was['other_transfers']:g} against {now['other_transfers']:g} times and "
                f"{was['other_queue_ns']:g} against {now['other_queue_ns']:g} ns; the writers' (threads in mm "
                f"syscalls) in all: the mmap_lock line {w_was['mmap_lock_transfers']:g} against "
                f"{w_now['mmap_lock_transfers']:g} times, queued {w_was['mmap_lock_queue_ns']:g} against "
                f"{w_now['mmap_lock_queue_ns']:g} ns, the other lines {w_was['other_transfers']:g} against "
                f"{w_now['other_transfers']:g} times and {w_was['other_queue_ns']:g} against "
                f"{w_now['other_queue_ns']:g} ns; all threads' transfers took {old['transfer_ns']} against "
                f"{new['transfer_ns']} ns"),
    }


def _lines(paid: dict, n: int = 1) -> dict:
    """What one kind of thread paid in a timed run (measure.timed.paid_by), over ``n`` (its faults, or 1:
    in all), for the mmap_lock line and for the other lines."""
    own = paid["mmap_lock"]
    return {"mmap_lock_transfers": round(own["transfers"] / n, 2), "mmap_lock_queue_ns": round(own["queue_ns"] / n, 1),
            "other_transfers": round((paid["transfers"] - own["transfers"]) / n, 2),
            "other_queue_ns": round((paid["queue_ns"] - own["queue_ns"]) / n, 1)}


QSPINLOCK_THREAD = ("-2%..-3% time for 3-8 tasks (5M-loop microbenchmark)", "002_2d9274d1d3d00671.txt:34-45")
# bench/qspinlock_ab.py's run of the seed's microbenchmark on the lab's port, as it wrote it
RECORDED_PORT = ROOT / "kernel-lab" / "qspinlock" / "recorded" / "qspinlock-ab.json"
PORT_SCENARIO = "the thread's microbenchmark on the C port"


def _ratio(ci: dict) -> str:
    return f"{ci['ratio']:.3f}, 95% [{ci['low']:.3f}, {ci['high']:.3f}]"


def port_cell(r: dict) -> str:
    """The port row's cell: each thread count's time ratio and interval, how the heads claimed the lock, and
    the emulated architectures' counts, with the run's size, host and load."""
    native = []
    for n, t in r["x86_64"].items():
        s = t["summary"]
        new, old = s["events_per_acquisition"]["v6.12"], s["events_per_acquisition"]["before-set-locked"]
        native.append(f"{n} threads: time 6.12 / before-set-locked {_ratio(s['time_ratio'])} over "
                      f"{s['time_ratio']['n']} pairs ({s['verdict']}); CPU time {_ratio(s['cpu_ratio'])}; "
                      f"per acquisition, queued {new['queued']:g} against {old['queued']:g}, from pending "
                      f"{new['pending']:g} against {old['pending']:g}, head claims by store {new['head_store']:g} "
                      f"and by cmpxchg {new['head_cmpxchg']:g} (6.12), by cmpxchg {old['head_cmpxchg']:g} "
                      "(before-set-locked)")
    e = r["emulated"]
    emulated = []
    for arch, by_threads in e["counts"].items():
        for n, runs in by_threads.items():
            said = "; ".join(f"{v} head stores {[x['events']['head_store'] for x in rs]}, head cmpxchg "
                             f"{[x['events']['head_cmpxchg'] for x in rs]}" for v, rs in runs.items())
            emulated.append(f"{arch}, {n} threads: {said}")
    load = r["host_load"]
    fewer = r["seed_loops_per_thread"] // r["loops_per_thread"]
    return (f"qspinlock-torture without delays, 6.12 and before-set-locked in userspace, "
            f"{r['loops_per_thread']:,} loops per thread ({fewer}x fewer than the thread's, for the time this "
            "host had). x86_64, natively, timed: " + " | ".join(native)
            + f". Under qemu-user, counted (no times), {e['loops_per_thread']:,} loops per thread of "
            f"{e['runs']} runs each: " + " | ".join(emulated)
            + f". {r['date']}, {r['host_cpus']} CPUs at load {load['before'][0]:.1f}→{load['after'][0]:.1f}: "
            "more threads than CPUs, so a waiter is preempted in the queue and the times are the host "
            "scheduler's as much as the lock's (bench/qspinlock_ab.py)")


def port_row() -> dict:
    thread, where = QSPINLOCK_THREAD
    r = json.loads(RECORDED_PORT.read_text()) if RECORDED_PORT.is_file() else None
    return {"scenario": PORT_SCENARIO, "thread": thread, "where": where,
            "port": port_cell(r) if r else f"{NOT_MEASURED}: no recorded bench/qspinlock_ab.py run",
            "real": NOT_MEASURED}


def qspinlock(scenarios=QSPINLOCK_SCENARIOS) -> list:
    table = costs.load()
    rows = []
    thread, where = QSPINLOCK_THREAD
    for scenario in scenarios:
        r = timed.qspinlock_transfers(scenario, table=table)
        for v in r.values():
            v["transfer_ns_per_acquisition"] = round(v["transfers"] * table.ns["transfer"] / v["acquisitions"], 1)
        rows.append({"scenario": scenario, "thread": thread, "where": where, "model": r, "real": NOT_MEASURED})
    return rows + [port_row()]


def fork(configs=FORK_CONFIGS) -> list:
    """One row per configuration and order: the first fork's counts and times against per-pte's, the
    later forks' beside them, and for a row a real kernel is, the model's prediction of its A/B."""
    ns = costs.load().ns
    rows = []
    for fmt, large_mapcount, strategy in configs:
        t = {fork: strategy_table(fmt, orders=(0, 9), strategies=("per-pte", strategy), large_mapcount=large_mapcount,
                                  timed=True, fork=fork) for fork in FORKS}
        arch = FORK_ROW_ARCH.get((fmt, large_mapcount, strategy))
        for order in (0, 9):
            runs = {s: t[FIRST][f"order-{order}"][s] for s in ("per-pte", strategy)}
            where, said = FORK_THREAD[(fmt, strategy, order)]
            if large_mapcount and (fmt, strategy) in THREADS_TIMED:
                said = NOT_THREADS
            later = {s: t[LATER][f"order-{order}"][s] for s in runs}
            model = ab_model(arch, order) if arch else None
            rows.append({"format": fmt, "order": order, "strategy": strategy,
                         "rmap": RMAP_6_12 if large_mapcount else THREAD_RMAP, "thread": said, "where": where,
                         **_fork_numbers(runs, strategy),
                         "later": {**_fork_numbers(later, strategy), "why": _why(later, strategy, ns)},
                         "why": _why(runs, strategy, ns),
                         **({"ab_model": model} if model else {}),
                         "real": real_fork(fmt, large_mapcount, strategy, order, model)})
    return rows


def _why(runs: dict, strategy: str, ns) -> str:
    return RMAP_SERIES if strategy == "per-pte" else _fork_why(runs["per-pte"], runs[strategy], ns)


def _fork_numbers(runs: dict, strategy: str) -> dict:
    """Per GiB, per-pte's and the strategy's operations counted and time under the committed costs, and
    the strategy's change against per-pte in each."""
    timed_ns = {s: r["makespan_ns"]["gib"] for s, r in runs.items()}
    return {"counted_per_gib": {s: r["operations"] for s, r in runs.items()},
            "counted_change": runs[strategy]["change_vs_per_pte"],
            "timed_ns_per_gib": timed_ns, "timed_change": _change(timed_ns[strategy], timed_ns["per-pte"])}


SAME_WORK = ("the same steps and operations either way: copy_present_ptes sends a small folio down the single-PTE "
             "path whatever the strategy; what the thread measured at order 0 (a branch more per PTE, code "
             "layout) is below what a step or an operation costs here")
RMAP_SERIES = ("one configuration in the model: mm-unstable and hugetlb-rmap-cleanups both copy one PTE at a time with "
               "one _mapcount atomic and one folio reference per PTE; David's rmap series moved those into folio "
               "functions (folio_try_dup_anon_rmap_pte for page_try_dup_anon_rmap) without changing how many, so "
               "the model gives both kernels one time; David asked whether code layout explains the difference")
COST_NAMES = {"step": "steps", "load": "loads", "store": "stores", "atomic": "atomics", "tlb_flush": "TLB flushes"}


def _fork_why(base: dict, batch: dict, ns) -> str:
    """Where a strategy's time per GiB differs from per-pte's, by kind of cost, the largest first."""
    parts = {"step": (batch["steps"]["gib"] - base["steps"]["gib"]) * ns["step"]}
    for field, kind in OPS_COST.items():
        parts[kind] = parts.get(kind, 0) + (batch["gib"][field] - base["gib"][field]) * ns[kind]
    total = batch["makespan_ns"]["gib"] - base["makespan_ns"]["gib"]
    if not total and not any(parts.values()):
        return SAME_WORK
    named = sorted((k for k in parts if parts[k]), key=lambda k: -abs(parts[k]))
    rest = total - sum(parts.values())
    return (f"per GiB {abs(total) / 1e6:.2f} ms {'less' if total < 0 else 'more'}: "
            + ", ".join(f"{COST_NAMES[k]} {parts[k] / 1e6:+.2f} ms" for k in named)
            + (f", other {rest / 1e6:+.2f} ms" if round(rest / 1e6, 2) else "")
            + f"; {COST_NAMES[named[0]]} decide")
DAMON_THREAD = {  # kind -> (where, the thread's number)
    "overhead": ("003_dabe899d077ece47.txt:50-54,87,201,236",
                 "overhead bounded whatever the target's size; 'rec' 0.76% slower in total (25 workloads)"),
    "prcl": ("003_dabe899d077ece47.txt:201,272-273,306-308",
             "+4.84% runtime in total; resident sets -23.59% in total"),
    "ethp": ("003_dabe899d077ece47.txt:258-260", "40.67% of THP's speedup kept, 83.66% of its memory waste removed"),
}
DAMON_OVERHEAD_WORKLOADS = tuple(dc.OVERHEAD_DOC)
FLAT = 1.2  # the "flat within 20%": the largest target's cost over the smallest's, at most


def _recorded(pattern: str) -> Path:
    """The newest recorded real-kernel run whose name matches (names end in their UTC date)."""
    found = list(RECORDED.glob(pattern))
    if not found:
        raise FileNotFoundError(f"no {pattern} in {RECORDED}: record one (kernel-lab/guest/README.md)")
    return max(found, key=lambda p: p.stem.rsplit("-", 1)[-1])


def damon_real_overhead() -> str:
    """The real-kernel cell of the overhead rows: kdamond's CPU time in the recorded damoncpu boot."""
    path = _recorded(DAMONCPU)
    result = guest.load_result(path)
    sizes = lab_probes.damoncpu_sizes(next(c for c in result["cases"] if c["name"] == "damoncpu")["data"])
    spread = lab_probes.damoncpu_spread(sizes)
    return (f"kdamond's utime + stime over {min(s['seconds'] for s in sizes):g}-{max(s['seconds'] for s in sizes):g} "
            f"s while the workload writes {int(sizes[0]['hot_kib']) // 1024} MiB of its target: "
            + ", ".join(f"{s['map_mib']} MiB {100 * s['kdamond_cpu']:.2f}%" for s in sizes)
            + f" of one emulated CPU (largest / smallest {spread:.2f} for "
            f"{sizes[-1]['map_mib'] // sizes[0]['map_mib']}x the size), "
            + "/".join(f"{100 * s['kdamond_per_workload']:.2f}" for s in sizes) + "% of the workload's CPU time. "
            f"Debian {result['uname_r']} in {result['qemu']['version'].split(' (')[0]} under TCG, {result['arch']}, "
            f"smp {result['smp']}, {result['date'][:10]} ({path.relative_to(ROOT)}; bench/damon_cpu.py repeats it). "
            "TCG inflates every instruction: only the flatness compares with the thread")


def damon_gap_text() -> str:
    """The hot-range gap measured per TLB mode: every recorded bench/damon_gap.py run, with where and when."""
    parts = []
    for path in sorted(DAMON_GAP.glob("*.json")):
        g = json.loads(path.read_text())
        groups: dict[tuple[str, int], list[dict]] = {}
        for r in g["runs"]:
            groups.setdefault((r["arch"], r["hot_kib"]), []).append(r)
        cells = []
        for (arch, kib), runs in groups.items():
            cells.append(f"{arch}, {kib} KiB hot: " + ", ".join(
                f"{r['tlb']} {r['hot_mean']:.2f} (model {r['model_hot_mean']:.2f}"
                + (f"; {r['passes_per_sample']:g} passes per sample" if "passes_per_sample" in r else "")
                + (f", {r['flushes_per_sample']:g} flushes" if "flushes_per_sample" in r else "") + ")"
                for r in runs))
        kernels = ", ".join(sorted({k["release"] for k in g["kernels"].values()}))
        qemu = ", ".join(sorted({q.split(" (")[0] for q in g["qemu"].values()}))
        parts.append("; ".join(cells) + f" [{path.relative_to(ROOT)}: {g['date'][:10]}, Debian {kernels}, {qemu} "
                     f"TCG, smp {g['smp']}, seed {g['seed']}, each figure one boot]")
    return ("Measured with bench/damon_gap.py, the hot range's mean nr_accesses of 20 per mode, the model's for the "
            "same maps, hot range and seed in brackets: " + " | ".join(parts) + ".")


def damon_overhead(workload: str, table) -> dict:
    """One workload's access checks per aggregation on 1 GiB to 1 TiB, timed by the cost of one check."""
    check_ns = dc.access_check_ns(table)
    sizes = {}
    for gib in dc.SIZES_GIB:
        r = dc.overhead(gib * dc.GIB, workload, aggregations_n=OVERHEAD_AGGREGATIONS)
        aggr_ns = r["aggr_us"] * 1000
        sizes[f"{gib} GiB"] = {"max_checks": r["max_checks"], "bound": r["bound"],
                               "ns_per_aggregation": round(r["max_checks"] * check_ns),
                               "cpu_share": round(r["max_checks"] * check_ns / aggr_ns, 5),
                               "page_scan_ns_per_aggregation": round(r["page_scan_checks_per_aggregation"] * check_ns)}
    ns = [s["ns_per_aggregation"] for s in sizes.values()]
    where, said = DAMON_THREAD["overhead"]
    return {"kind": "overhead", "workload": workload, "doc": dc.OVERHEAD_DOC[workload], "thread": said,
            "where": where, "aggregations": OVERHEAD_AGGREGATIONS, "access_check_ns": round(check_ns, 2),
            "sizes": sizes, "spread": round(max(ns) / min(ns), 3), "flat": max(ns) <= FLAT * min(ns),
            "real": damon_real_overhead()}


PORT_WORKLOAD = "the lab's C port: kdamond_fn of 6.12's core.c and vaddr.c in userspace, on this project's host"


def damon_port_row(recorded: dict | None) -> dict:
    """The C port's row: its time per aggregation at each size and whether the largest median over the smallest
    is at most FLAT, all from the raw runs of the recorded bench/damon_port.py run (``None``: none recorded)."""
    where, said = DAMON_THREAD["overhead"]
    row = {"kind": "port", "workload": PORT_WORKLOAD, "thread": said, "where": where}
    if recorded is None:
        return {**row, "sizes": {}, "spread": None, "flat": None, "why": f"{NOT_MEASURED}: no recorded "
                f"bench/damon_port.py run in {damon_port.RECORDED.relative_to(ROOT)}", "real": NOT_MEASURED}
    s = damon_port.summarise(recorded)
    sizes = {f"{gib} GiB": {"aggregations": d["aggregations"], "cpu_ns": d["cpu_ns"],
                            "wall_ns_median": d["wall_ns"]["median"],
                            "access_checks_median": d["access_checks_median"],
                            "unlikely_per_draw": d["unlikely_per_draw"],
                            "page_scan_cpu_ns": s["pages"].get(gib, {}).get("cpu_ns")}
             for gib, d in s["damon"].items()}
    flat = s["cpu_spread"] <= FLAT
    lo, hi = (min(sizes.items(), key=lambda kv: kv[1]["cpu_ns"]["median"]),
              max(sizes.items(), key=lambda kv: kv[1]["cpu_ns"]["median"]))
    checks = ", ".join(f"{d['access_checks_median']:g}" for d in sizes.values())
    why = (f"access checks per aggregation (medians, {next(iter(sizes))} to {list(sizes)[-1]}) {checks}; "
           f"get_random_u32_below()'s "
           f"unlikely() branch took {hi[1]['unlikely_per_draw']:.1%} of the draws at {hi[0]} (the slowest) against "
           f"{lo[1]['unlikely_per_draw']:.1%} at {lo[0]} (the fastest)")
    load = recorded["host_load"]
    return {**row, "sizes": sizes, "spread": s["cpu_spread"], "flat": flat,
            "why": ("" if flat else "NOT ") + f"flat within {FLAT - 1:.0%}: " + why,
            "provenance": (f"{recorded['repeats']} processes per size, {recorded['timed_per_run']} timed aggregations "
                           f"each, the sizes interleaved; x86_64 natively, {recorded['compiler']}, {recorded['date']}, "
                           f"{recorded['host_cpus']} CPUs at load {load['before'][0]:.1f}→{load['after'][0]:.1f} "
                           f"({damon_port.RECORDED.relative_to(ROOT)}, written by bench/damon_port.py)"),
            "real": f"{NOT_MEASURED} for the port: the kernel's kdamond is timed in the overhead rows' cell"}


def damon_prcl(name: str, table) -> dict:
    r = dc.prcl(name, SCHEME_AGGREGATIONS, table)
    where, said = DAMON_THREAD["prcl"]
    return {"kind": "prcl", "workload": name, "thread": said, "where": where, "aggregations": SCHEME_AGGREGATIONS,
            "model": r, "runtime_change": round(r["runtime_prcl_s"] / r["runtime_orig_s"] - 1, 8),  # refaults are µs
            "rss_change": _change(r["rss_avg_prcl_kib"], r["rss_avg_orig_kib"]), "real": NOT_MEASURED}


def damon_ethp(name: str) -> dict:
    r = dc.ethp(name, SCHEME_AGGREGATIONS)
    thp, ethp = r["thp"], r["ethp"]
    where, said = DAMON_THREAD["ethp"]
    return {"kind": "ethp", "workload": name, "thread": said, "where": where, "aggregations": SCHEME_AGGREGATIONS,
            "model": r, "coverage_kept": round(ethp["hot_covered_pct"] / thp["hot_covered_pct"], 4),
            "waste_removed": round(1 - ethp["cold_in_huge_avg_kib"] / thp["cold_in_huge_avg_kib"], 4),
            "real": NOT_MEASURED}


def damon(overhead_workloads=DAMON_OVERHEAD_WORKLOADS, prcl=tuple(dc.SCHEME_WORKLOADS),
          ethp=tuple(dc.SCHEME_WORKLOADS)) -> list:
    """DAMON's rows: each overhead workload over every size, the C port's recorded run, then prcl and ethp on the
    named processes."""
    table = costs.load()
    path = damon_port.RECORDED
    port = damon_port_row(json.loads(path.read_text()) if path.is_file() else None)
    return ([damon_overhead(w, table) for w in overhead_workloads] + [port] + [damon_prcl(n, table) for n in prcl]
            + [damon_ethp(n) for n in ethp])


COMPARABLE = {
    "damon": ("The thread times PARSEC3 and SPLASH-2X workloads in a KVM guest on Linux 5.5; the model runs one "
              "process and reads no clock: overhead is its access checks per aggregation (the worst of "
              f"{OVERHEAD_AGGREGATIONS}) times what one check costs under the cost table (damon_va_mkold and "
              "damon_va_young, counted by kind in kstep.measure.damon, with one cache-line transfer for the sampled "
              "PTE). The bound compares: the cost stays flat from 1 GiB to 1 TiB where page scanning grows with the "
              "target. The percentage does not: kdamond's share of a CPU is not the workloads' 0.76% slowdown "
              "(kdamond runs beside them), and the table's transfer is not a cache miss to DRAM. The port row times "
              "the lab's C port of the same code (kdamond_fn over 6.12's core.c and vaddr.c in userspace, the "
              "process's accesses computed, never stored) on one shared x86_64 host: the monitoring thread's CPU time "
              "(CLOCK_THREAD_CPUTIME_ID, which time spent preempted does not stretch) per aggregation, the median of "
              "every timed aggregation at each size, recorded by bench/damon_port.py with where, when and the "
              "host's load; the wall clock is beside it, and page scanning, one run per size, is not part of the "
              "flatness. That is time in kind, but an access check there walks no page table (it reads a computed "
              "bit: no cache miss, no TLB) and get_random_u32() is SplitMix64, not the kernel's ChaCha. Where its "
              "time is not flat although its access checks are the same, the row gives the share of random draws "
              "that took get_random_u32_below()'s unlikely() branch: damon_rand() passes it a region's span as a "
              "u32, so the larger the regions (up to 4 GiB) the more draws take that branch, a 32-bit division and a "
              "branch the CPU cannot predict. valgrind --tool=callgrind --branch-sim=yes on damon-bench 1 and 1024 "
              "damon 200 counted the same instructions within 2% and put the extra mispredicted branches in "
              "damon_va_prepare_access_checks. In the kernel an access check also walks the page table and its draw "
              "runs ChaCha, so the branch may weigh less there (not measured); the model prices every check alike. "
              "prcl: the model charges only refaults (page_fault + page_copy of the table, "
              "the least a zram swap-in costs) over a 10 s run of a small process; the thread's +4.84% also pays "
              "for reclaim's own work (compressing pages into zram), so the model's slowdown is far smaller and "
              "stays so. ethp: the table has no TLB-miss cost, so THP's speedup is proxied by the hot bytes huge "
              "pages cover: the direction compares (most of THP's benefit kept for a small part of its waste), "
              "the percentages do not. The real kernel's hot range: DAMON reads a PTE's accessed bit, and "
              "damon_ptep_mkold() clears it with ptep_test_and_clear_young(), which flushes no TLB on x86, arm64 or "
              "powerpc: a CPU that still holds the page's translation writes the page without setting the bit again, "
              "so the kernel counts a hot page only in the samples where its translation left the TLB between the "
              "clear and the check. In QEMU that happens at a flush (a switch to another address space, a "
              "shootdown) or when the emulated TLB, resized only at a flush, is too small for the range. The lab's "
              "runs differ only in what shares the workload's vCPUs: alone (nothing), yield (a process switching "
              "beside it, the lab probe's default and its recorded boots), flush (that, and a thread flushing the "
              "whole mm's TLB every millisecond at most; on the busy host it managed 0.1 flushes per sample where "
              "counted). Forced flushes raised the count above yield's on every architecture; alone read "
              "high on x86_64 and ppc64le and low on arm64. The model's process sets the bit on every touch (it has "
              "no TLB) and reads the upper end for the 8 MiB range; for the 512 KiB one it reads far less than the "
              "kernel alone (below), a second gap, not measured further: its regions do not single out so small a "
              "range, and the lab's scenario declares no huge pages where Debian's kernel (THP always) may map the "
              "target with them. DAMON is the same in every run: the gap is the TLB's, and how large "
              "it is depends on what runs beside the workload, which the model does not model. " + damon_gap_text()),
    "vma-locks": ("The thread times whole app launches of about 100 threads on phones; the model times faulting "
                  "and mapping threads on its cost table, from the bundled size to 100 threads (simulated, not "
                  "explored). The direction and both causes compare where faults meet writers: with per-VMA locks "
                  "faults stop waiting behind mmap_lock writers, and they stop queueing for mmap_lock's one cache "
                  "line (down_read and up_read each take it; the cost table's transfer is paid in turn by every CPU "
                  "that wants the line), so above the bundled size the launch's p90 fault is at least twice as "
                  "fast, and every launch row ends sooner. At the bundled size, and in every tcp-zerocopy row, "
                  "the faults are done later with per-VMA locks: they had little or no writer to escape, and each "
                  "per-VMA fault takes more lines than a fault under mmap_lock (its VMA's lock, mm_lock_seq, the "
                  "tree); tcp-zerocopy's receivers all fault in one buffer VMA and queue for its lock line. Those "
                  "runs still end sooner, because they end with a writer, and a writer's work is mostly its TLB "
                  "flush and shootdown IPI, the table's largest cost: with per-VMA locks the madvise writer M ends "
                  "at the same time whatever the number of receivers, without them it waits for their hold of "
                  "mmap_lock and ends later the more receivers there are. The scenario gives every receiver the "
                  "same buffer VMA, and receivers in VMAs of their own are not measured here. With 25 of 100 "
                  "threads mapping stacks the run ends with a writer, whose wait for mmap_lock itself, behind the "
                  "other writers, per-VMA locks do not shorten (its queueing for the lock's cache line they do). "
                  "The percentage does not compare: the cost table is one 2-CPU x86 virtual "
                  "machine's, whose IPIs go through the hypervisor, and a phone's cache lines and IPIs come at "
                  "other prices."),
    "qspinlock": ("The thread's -2..-3% is the time of a 5M-loop microbenchmark on a 4-socket machine; the "
                  "model counts cache-line transfers per acquisition and charges each one transfer cost, CPUs "
                  "that want the lock word's line taking it in turn. Which variant moves fewer lines compares; "
                  "the percentage does not. In the timed order of three and four CPUs the model's 6.12 moves "
                  "more lines than before-set-locked, against the thread's direction: the head's plain store "
                  "saves one atomic, but the run's order, set by the queue on the lock word, differs between "
                  "the variants, and with it who fetches which line how often. The row stays as the model gives "
                  "it. The last row runs the thread's microbenchmark itself on the lab's C port (6.12's "
                  "qspinlock.c compiled in userspace, and the slow path as it was before the patch): there the "
                  "time compares in kind, but on a shared 2-CPU x86_64 host instead of 4 sockets, with fewer "
                  "loops and threads that outnumber the CPUs; its cell says whether the 95% interval tells the "
                  "variants apart and whether it holds the thread's 2-3%, and how often each variant queued: where "
                  "they queued at different rates the runs did different work, and the time ratio measures that "
                  "(on an oversubscribed host a fair queue hands the lock to preempted threads), not the head's "
                  "claim."),
    "fork-batch": ("The thread times fork() of 1 GiB; the model times one fork of one and of two PTE tables under "
                   "the committed cost table (each step's own cost, and its PTE loads, stores and atomics, folio "
                   "atomics and TLB flushes) and takes 1 GiB as 512 tables; counted is the same operations, one "
                   "each. The thread's kernels kept no folio->_large_mapcount and its arm64 ones had no "
                   "contiguous PTEs: its numbers stand beside the rows of that rmap on x86-64 and arm64-4K; the "
                   "6.12 rows count 6.12's rmap, and the contpte rows what 6.12's arm64 does, which the thread "
                   "argued about but did not time. The cost table is one x86 machine's: an arm64 row prices arm64's "
                   "operations as x86's. Ryan's arm64 tables are each kernel against mm-unstable, and the "
                   "prototype's base (hugetlb-rmap-cleanups) was already slower there: the per-pte row on arm64-4K "
                   "is that base against mm-unstable, which the model cannot tell apart. Each row times the first "
                   "fork of the written memory, which write-protects its writable, exclusive PTEs, and a later one, "
                   "which copies the read-only PTEs the first left once its child exited (the lab's forkbench: the "
                   "child exits at once, the parent never writes between forks); the thread's loops of 100 forks are "
                   "mostly later forks if their children leave the memory alone, which the thread does not say. "
                   "Neither counts ClearPageAnonExclusive's clear_bit, an atomic per page that only the first fork "
                   "pays. The rows a real kernel stands beside give the model's 6.1 → 6.12 change for the first fork "
                   "and for a later one, each held to the kernels' means by its sign alone."),
}


MECHANISMS = ("vma-locks", "qspinlock", "fork-batch", "damon")  # the seed tables, in their order


def model_tables(names=MECHANISMS, vma_sizes=VMA_SIZES) -> dict:
    makers = {"vma-locks": lambda: vma_locks(vma_sizes), "qspinlock": qspinlock, "fork-batch": fork, "damon": damon}
    return {n: {"comparable": COMPARABLE[n], "rows": makers[n]()} for n in names}


def draw(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = result["vma-locks"]["rows"]
    fig, ax = plt.subplots(figsize=(7, 3))
    labels = [f"{r['scenario']}\n{r['size']}" for r in rows]
    ax.barh(labels, [100 * r["makespan_change"] for r in rows])
    ax.set_xlabel("v6.12 makespan vs no-per-vma-lock (%), committed cost table")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw_damon(result: dict, path: Path) -> None:
    """DAMON's overhead rows: kdamond's priced access checks per aggregation against page scanning's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in result["damon"]["rows"] if r["kind"] == "overhead"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    gib = [int(size.split()[0]) for size in rows[0]["sizes"]]
    ax.plot(gib, [s["page_scan_ns_per_aggregation"] / 1e6 for s in rows[0]["sizes"].values()], "s-",
            label="page-granularity scanning")
    for r in rows:
        ax.plot(gib, [s["ns_per_aggregation"] / 1e6 for s in r["sizes"].values()], "o-",
                label=f"DAMON, {r['workload']} (largest / smallest {r['spread']:g})")
    port = next((r for r in result["damon"]["rows"] if r["kind"] == "port" and r["sizes"]), None)
    if port:
        ax.plot([int(size.split()[0]) for size in port["sizes"]],
                [s["cpu_ns"]["median"] / 1e6 for s in port["sizes"].values()], "^--",
                label=f"the C port, CPU time measured (largest / smallest {port['spread']:g})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("target size (GiB)")
    ax.set_ylabel("ms per 100 ms aggregation")
    ax.set_title(f"access checks x {rows[0]['access_check_ns']:g} ns each, committed cost table", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def refuse_only(names: list, only: list) -> str | None:
    """Why `bench/run.py NAMES --only ONLY` cannot run, or None if it can."""
    if only and names != ["seeds"]:
        return "--only remakes seed tables: run it as `bench/run.py seeds --only MECH`"
    strange = [m for m in only if m not in MECHANISMS]
    return f"no seed table is named {strange[0]!r}; they are {', '.join(MECHANISMS)}" if strange else None


def run(out_dir, say=print, only=()) -> dict:
    """Every seed table; with ``only``, those mechanisms' tables, the others as committed (so that one
    mechanism's rows can be had again after a change to it alone)."""
    say(f"seeds: the model's side of {', '.join(only) if only else 'each'} seed table ...")
    result = model_tables(tuple(only) or MECHANISMS)
    if only:
        result = {**json.loads(COMMITTED.read_text()), **result}
    text = json.dumps(result, indent=1) + "\n"
    (out_dir / "seeds.json").write_text(text)
    COMMITTED.write_text(text)
    draw(result, out_dir / "seeds.png")
    draw_damon(result, out_dir / "seeds-damon.png")
    return result
