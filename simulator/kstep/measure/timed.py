"""Measurements on timed runs (engine/timed.py): nanoseconds from a cost table, not rounds.

``vma_faults`` compares per-VMA locks with ``no-per-vma-lock`` on a vma-locks scenario: makespan, the
time the last fault thread finished, which thread finished last, fault latency percentiles, time
faults spent blocked, cache-line transfers and time queued for lines, in all and for the ``mmap_lock``
line alone (``MMAP_LOCK``: the one line every fault takes without per-VMA locks), and the same two by
who paid them (``paid_by``: the fault threads' and the writers', each actor's steps and spinning by the
kind of its thread), so that a fault's own transfers are not the writers' over the faults.  A fault's latency
runs from the first step its thread takes after its previous fault ended to the end of the step
that counts it handled (``vma_lock_success``, a fault completed under mmap_lock, or SIGSEGV).
``qspinlock_transfers`` counts cache-line transfers per lock acquisition for each variant.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Optional

from ..engine import costs
from ..engine.costs import CostTable
from ..engine.timed import ACTOR_LINE_QUEUE, ACTOR_LINE_TRANSFERS, STEP_COSTS, Timed
from ..experiment import open as open_scenario

FAULT_ENDS = ("vma_lock_success", "mmap_lock_faults", "sigsegv")  # the counters that count a fault done
MMAP_LOCK = "mm.mmap_lock"  # the mmap_lock's cache line, as the timed stats name it


def timed_run(mech: str, scenario: str, variant: Optional[str], overrides: Iterable[str] = (),
              table: Optional[CostTable] = None):
    """(experiment, trace) of a timed run of ``scenario`` under ``variant`` (None: the scenario's own, else the
    kernel's), with the committed table by default."""
    ex = open_scenario(mech, scenario, variant, list(overrides))
    trace = ex.run(Timed(table or costs.load()))
    if trace.outcome != "finished":
        raise RuntimeError(f"{mech}/{variant} on {scenario} did not finish: {trace.outcome}")
    return ex, trace


def _clocked(trace):
    """Each step of a timed run with its actor's clock when it started and ended: an actor's clock
    moves only by its own steps' waits, work and transfers, so it is summed from those."""
    clock: dict = {}
    for a, before, after, (work, wait, transfer) in zip(trace.actions, trace.states, trace.states[1:],
                                                        trace.stats[STEP_COSTS]):
        start = clock.get(a.actor, 0.0) + wait
        clock[a.actor] = start + work + transfer
        yield a, before, after, start, clock[a.actor]


def fault_latencies(trace) -> list[float]:
    """Each fault's latency in ns (see the module docstring), in the order they ended."""
    out: list[float] = []
    started: dict = {}
    for a, before, after, start, end in _clocked(trace):
        started.setdefault(a.actor, start)
        if any(getattr(after.counters, c) > getattr(before.counters, c) for c in FAULT_ENDS):
            out.append(end - started.pop(a.actor))
    return out


def actor_ends(trace) -> dict[str, float]:
    """The ns at which each actor took the end of its last step."""
    return {a.actor: end for a, _, _, _, end in _clocked(trace)}


def percentile(values: list[float], p: int) -> float:
    """The nearest-rank ``p``-th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)] if ordered else 0.0


def vma_faults(scenario: str = "android-app-launch", overrides: Iterable[str] = (),
               variants: tuple = ("no-per-vma-lock", "v6.12"), table: Optional[CostTable] = None) -> dict:
    out = {}
    for v in variants:
        ex, trace = timed_run("vma-locks", scenario, v, overrides, table)
        kinds = {t.name: t.kind for t in trace.states[0].threads}
        lat = fault_latencies(trace)
        waits = trace.stats["waiting_ns"]
        ends = actor_ends(trace)
        last = max(ends, key=lambda a: (ends[a], a))
        out[v] = {
            "makespan_ns": trace.stats["makespan_ns"],
            "faults_done_ns": round(max(e for a, e in ends.items() if kinds.get(a) == "fault"), 1),
            "last": f"{kinds[last]} {last}",
            "faults": len(lat),
            "fault_latency_ns": {f"p{p}": round(percentile(lat, p), 1) for p in (50, 90, 99)},
            "fault_waiting_ns": round(sum(w for a, w in waits.items() if kinds.get(a) == "fault"), 1),
            "transfers": sum(trace.stats["transfers"].values()),
            "work_ns": round(sum(c[0] for c in trace.stats[STEP_COSTS]), 1),
            "transfer_ns": round(sum(c[2] for c in trace.stats[STEP_COSTS]), 1),
            "queue_ns": round(sum(trace.stats["line_queue_ns"].values()), 1),
            "mmap_lock": {"transfers": trace.stats["line_transfers"].get(MMAP_LOCK, 0),
                          "queue_ns": trace.stats["line_queue_ns"].get(MMAP_LOCK, 0.0)},
            "paid_by": paid_by(trace.stats, kinds),
        }
    return out


def paid_by(stats: dict, kinds: dict[str, str]) -> dict:
    """Per kind of thread (``fault``, ``writer``; an actor that is no thread, the ``rcu`` daemon that frees
    detached VMAs, under its own name): the transfers its actors' CPUs took and the ns their steps queued for
    lines, in all and for mmap_lock's line, from a timed run's per-actor stats."""
    def kind(actor: str) -> str:
        return kinds.get(actor, actor)

    transfers: Counter = Counter()
    mmap_lock: Counter = Counter()
    queue: defaultdict[str, float] = defaultdict(float)
    mmap_lock_queue: defaultdict[str, float] = defaultdict(float)
    for actor, lines in stats[ACTOR_LINE_TRANSFERS].items():
        transfers[kind(actor)] += sum(lines.values())
        mmap_lock[kind(actor)] += lines.get(MMAP_LOCK, 0)
    for actor, lines in stats[ACTOR_LINE_QUEUE].items():
        queue[kind(actor)] += sum(lines.values())
        mmap_lock_queue[kind(actor)] += lines.get(MMAP_LOCK, 0.0)
    return {k: {"transfers": transfers[k], "queue_ns": round(queue[k], 1),
                "mmap_lock": {"transfers": mmap_lock[k], "queue_ns": round(mmap_lock_queue[k], 1)}}
            for k in sorted({kind(a) for a in kinds} | set(transfers) | set(queue))}


def qspinlock_transfers(scenario: str, variants: tuple = ("v6.12", "before-set-locked"),
                        table: Optional[CostTable] = None) -> dict:
    out = {}
    for v in variants:
        ex, trace = timed_run("qspinlock", scenario, v, (), table)
        acquisitions = sum(1 for a in trace.actions if a.label == "critical_section")
        transfers = sum(trace.stats["transfers"].values())
        out[v] = {"acquisitions": acquisitions, "transfers": transfers,
                  "transfers_per_acquisition": round(transfers / acquisitions, 2),
                  "makespan_ns": trace.stats["makespan_ns"]}
    return out
