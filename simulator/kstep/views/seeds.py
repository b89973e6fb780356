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
            f"fault p50/p90/p99 {lat(old)} → {lat(new)} ns", r["why"], r["real"]]


def _qspinlock(r: dict) -> list[str]:
    new, old = r["model"]["v6.12"], r["model"]["before-set-locked"]
    cell = lambda m: f"{m['transfers_per_acquisition']:g} transfers, {m['transfer_ns_per_acquisition']:g} ns"  # noqa: E731
    return [r["scenario"], f"{r['thread']} [{r['where']}]", f"before-set-locked {cell(old)}; 6.12 {cell(new)}",
            r["real"]]


def _fork(r: dict) -> list[str]:
    ms = {s: f"{ns / 1e6:.2f}" for s, ns in r["timed_ns_per_gib"].items()}
    return [f"{r['format']} order-{r['order']}: {r['strategy']}", r["rmap"], f"{r['thread']} [{r['where']}]",
            f"timed {ms['per-pte']} → {ms[r['strategy']]} ms ({_pct(r['timed_change'])}); counted "
            f"{_pct(r['counted_change'])}", r["why"], r["real"]]


HEADERS = {
    "vma-locks": (["scenario", "the thread", "kstep: no-per-vma-lock → v6.12, committed costs", "why",
                   "real kernel"], _vma),
    "qspinlock": (["scenario", "the thread", "kstep per acquisition, committed costs", "real kernel"], _qspinlock),
    "fork-batch": (["format, order: strategy", "rmap", "the thread",
                    "kstep per GiB: per-pte → the strategy, committed costs", "why", "real kernel"], _fork),
}


def table(mech: str, data: dict | None = None) -> tuple[list[list[str]], str]:
    """The header and rows of ``mech``'s seed table, and its sentence on what compares."""
    data = committed() if data is None else data
    header, row = HEADERS[mech]
    return [header] + [row(r) for r in data[mech]["rows"]], data[mech]["comparable"]
