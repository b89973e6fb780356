"""What the committed verdict table (verdicts.json, written by ``make verdicts``) says about each
broken variant: which invariant explore finds it breaking, on which bundled scenarios.  ``kstep
list`` shows it and ``kstep explore`` names a scenario that shows a bug; neither explores."""

from __future__ import annotations

import json
from importlib import resources


def caught(mechanism: str) -> dict[str, dict[str, list[str]]]:
    """Per variant: invariant (or "deadlock") -> the scenarios on which explore reports it."""
    out: dict = {}
    for scenario, rows in _table().get(mechanism, {}).items():
        for variant, row in rows.items():
            if row["verdict"] == "violation":
                out.setdefault(variant, {}).setdefault(row["invariant"], []).append(scenario)
    return out


def lively(mechanism: str) -> dict[str, dict[str, list[str]]]:
    """Per variant: liveness verdict (starvation, livelock, deadlock, free, bounded) -> the bundled
    scenarios whose runs never end on which ``explore --liveness`` concludes it."""
    out: dict = {}
    for scenario, rows in _table().get(mechanism, {}).items():
        for variant, row in rows.items():
            if "liveness" in row:
                out.setdefault(variant, {}).setdefault(row["liveness"], []).append(scenario)
    return out


def _table() -> dict:
    return json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())["verdicts"]
