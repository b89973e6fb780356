"""Measurements on simulated runs, shared by the notebooks and ``make bench``.

Time is counted in rounds of the round-robin scheduler: in each round every runnable thread takes
one step, so a round is "one unit of time with every CPU busy", and a thread that cannot move in
its turn spends that round blocked.  This is how kstep reproduces the patch thread's claim that
faults no longer wait for mmap writers in other VMAs, without pretending to measure nanoseconds.
"""

from __future__ import annotations

import copy
from typing import Iterable, Optional

from ..engine import RoundRobin, simulate
from ..engine.schedule import COUNTED_RUN
from ..scenario_spec import scenario
from ..models import make_model
from ..views.presentation import present


def run_rounds(mechanism: str, variant: str, config: dict, max_steps: int = COUNTED_RUN) -> dict:
    """Simulate under round-robin; report completion rounds, blocked rounds and the counters."""
    model = make_model(mechanism, variant)
    trace = simulate(model, model.initial(config), RoundRobin(), max_steps=max_steps, check=False)
    if trace.outcome != "finished":
        raise RuntimeError(f"{mechanism}/{variant} did not finish: {trace.outcome}")
    answers = present(model).answers(trace)
    kinds = {t.name: t.kind for t in trace.states[0].threads} if hasattr(trace.states[0].threads[0], "kind") else {}
    blocked = trace.stats["blocked_rounds"]
    return {
        "variant": variant,
        "rounds": trace.stats["rounds"],
        "steps": len(trace),
        "fault_blocked_rounds": sum(n for a, n in blocked.items() if kinds.get(a) == "fault"),
        "writer_blocked_rounds": sum(n for a, n in blocked.items() if kinds.get(a) == "writer"),
        "counters": {k: v for k, v in answers.items() if k not in ("rounds", "blocked_rounds")},
    }


def without_writers(config: dict) -> dict:
    """The same scenario with its writer threads removed: the control run."""
    control = copy.deepcopy(config)
    control["threads"] = [t for t in control["threads"] if t["kind"] != "writer"]
    return control


def vma_contention(
    scenario_name: str = "android-app-launch",
    overrides: Optional[Iterable[str]] = None,
    variants: tuple = ("no-per-vma-lock", "v6.12"),
) -> dict:
    """6.12 without per-VMA locks (CONFIG_PER_VMA_LOCK=n) against 6.12 with them, on a scenario with
    and without its writers."""
    schema = make_model("vma-locks").scenario_schema
    config = scenario.load("vma-locks", schema, scenario_name, list(overrides or [])).config
    out = {"scenario": scenario_name, "overrides": list(overrides or [])}
    for label, cfg in (("with_writers", config), ("no_writer_control", without_writers(config))):
        runs = {v: run_rounds("vma-locks", v, cfg) for v in variants}
        base, new = (runs[v]["rounds"] for v in variants)
        out[label] = {"runs": runs, "rounds_ratio": round(base / new, 3)}
    return out
