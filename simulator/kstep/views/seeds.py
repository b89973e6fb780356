"""The seed tables of the chapters (issue 25 §2): the rows of simulator/kstep/seeds.json, which
`python bench/run.py seeds` writes, as cells of text, for the ``kstep-seeds`` directive.  Every
number here is the bench's; nothing is computed or typed again."""

from __future__ import annotations

import json
from importlib import resources


def committed() -> dict:
    return json.loads(resources.files("kstep").joinpath("seeds.json").read_text())


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _vma(r: dict) -> list[str]:
    old, new = r["model"]["no-per-vma-lock"], r["model"]["v6.12"]
    lat = lambda m: "/".join(f"{m['fault_latency_ns'][p]:g}" for p in ("p50", "p90", "p99"))  # noqa: E731
    return [f"{r['scenario']} ({r['size']})", f"{r['thread']} [{r['where']}]",
            f"makespan {old['makespan_ns']:g} → {new['makespan_ns']:g} ns ({_pct(r['makespan_change'])}); "
            f"faults done at {old['faults_done_ns']:g} → {new['faults_done_ns']:g} ns; "
            f"fault p50/p90/p99 {lat(old)} → {lat(new)} ns", r["why"], r["real"]]


def _qspinlock(r: dict) -> list[str]:
    if "port" in r:  # the thread's microbenchmark on the C port, not a model scenario
        return [r["scenario"], f"{r['thread']} [{r['where']}]", r["port"], r["real"]]
    new, old = r["model"]["v6.12"], r["model"]["before-set-locked"]
    cell = lambda m: f"{m['transfers_per_acquisition']:g} transfers, {m['transfer_ns_per_acquisition']:g} ns"  # noqa: E731
    return [r["scenario"], f"{r['thread']} [{r['where']}]", f"before-set-locked {cell(old)}; 6.12 {cell(new)}",
            r["real"]]


def _fork(r: dict) -> list[str]:
    def numbers(n: dict) -> str:
        ms = {s: f"{ns / 1e6:.2f}" for s, ns in n["timed_ns_per_gib"].items()}
        return (f"timed {ms['per-pte']} → {ms[r['strategy']]} ms ({_pct(n['timed_change'])}); counted "
                f"{_pct(n['counted_change'])}")

    return [f"{r['format']} order-{r['order']}: {r['strategy']}", r["rmap"], f"{r['thread']} [{r['where']}]",
            f"first fork: {numbers(r)}; a later fork: {numbers(r['later'])}",
            r["why"] if r["later"]["why"] == r["why"] else f"first fork {r['why']}; a later one {r['later']['why']}",
            r["real"]]


def _damon_overhead(r: dict) -> list:
    lines = [f"{size}: {s['max_checks']} checks → {s['ns_per_aggregation'] / 1e3:.0f} µs per aggregation "
             f"({100 * s['cpu_share']:.2f}% of a CPU); page scanning {s['page_scan_ns_per_aggregation'] / 1e9:,.1f} s"
             for size, s in r["sizes"].items()]
    flat = "flat within 20%" if r["flat"] else "NOT flat within 20%"
    return [f"monitoring overhead vs target size, {r['workload']} (proxy: the worst of {r['aggregations']} "
            f"aggregations' access checks × {r['access_check_ns']:g} ns per check)",
            f"{r['thread']} [{r['where']}]", lines + [f"largest / smallest: {r['spread']:g}× ({flat})"]]


def _damon_port(r: dict) -> list:
    claim = ("monitoring overhead vs target size, the lab's C port (proxy: the monitoring thread's CPU time per "
             "aggregation, recorded on this project's host)")
    if r["spread"] is None:
        return [claim, f"{r['thread']} [{r['where']}]", [r["why"]]]
    lines = [f"{size}: {s['cpu_ns']['median'] / 1e3:.1f} µs CPU (quartiles {s['cpu_ns']['q1'] / 1e3:.1f}–"
             f"{s['cpu_ns']['q3'] / 1e3:.1f}, {s['aggregations']} aggregations; wall median "
             f"{s['wall_ns_median'] / 1e3:.1f} µs)"
             + (f"; page scanning {s['page_scan_cpu_ns'] / 1e6:,.1f} ms CPU, one run" if s["page_scan_cpu_ns"] else "")
             for size, s in r["sizes"].items()]
    return [claim, f"{r['thread']} [{r['where']}]",
            lines + [f"largest / smallest median {r['spread']:g}×, {r['why']}", r["provenance"]]]


def _damon_prcl(r: dict) -> list:
    m = r["model"]
    return [f"prcl, {r['workload']} (proxy: slowdown = refaults × {m['refault_ns']:g} ns, the table's page_fault "
            f"+ page_copy; memory = resident bytes averaged)", f"{r['thread']} [{r['where']}]",
            f"runtime {100 * r['runtime_change']:+.4f}% ({m['refaults']} refaults in {m['runtime_orig_s']:g} s); "
            f"resident {_pct(r['rss_change'])} ({m['rss_avg_orig_kib']:,} → {m['rss_avg_prcl_kib']:,} KiB)"]


def _damon_ethp(r: dict) -> list:
    thp, ethp = r["model"]["thp"], r["model"]["ethp"]
    return [f"ethp, {r['workload']} (proxy: speedup kept = hot bytes covered by huge pages, ethp's share of thp's; "
            f"waste = cold bytes in huge pages)", f"{r['thread']} [{r['where']}]",
            f"hot covered {thp['hot_covered_pct']:g}% (thp) → {ethp['hot_covered_pct']:g}% (ethp): "
            f"{100 * r['coverage_kept']:.2f}% kept; waste {thp['cold_in_huge_avg_kib']:,} → "
            f"{ethp['cold_in_huge_avg_kib']:,} KiB: {100 * r['waste_removed']:.2f}% removed"]


def _damon(r: dict) -> list:
    return {"overhead": _damon_overhead, "port": _damon_port, "prcl": _damon_prcl,
            "ethp": _damon_ethp}[r["kind"]](r) + [r["real"]]


HEADERS = {
    "vma-locks": (["scenario", "the thread", "kstep: no-per-vma-lock → v6.12, committed costs", "why",
                   "real kernel"], _vma),
    "qspinlock": (["scenario", "the thread", "kstep per acquisition, committed costs (last row: the C port, measured)",
                   "real kernel"], _qspinlock),
    "fork-batch": (["format, order: strategy", "rmap", "the thread",
                    "kstep per GiB: per-pte → the strategy, committed costs", "why", "real kernel"], _fork),
    "damon": (["claim (kstep's proxy)", "the thread", "kstep, committed costs (the port row: measured)", "real kernel"],
              _damon),
}


def table(mech: str, data: dict | None = None) -> tuple[list[list[str]], str]:
    """The header and rows of ``mech``'s seed table, and its sentence on what compares."""
    data = committed() if data is None else data
    header, row = HEADERS[mech]
    return [header] + [row(r) for r in data[mech]["rows"]], data[mech]["comparable"]
