"""What the committed verdict table (verdicts.json, written by ``make verdicts``) says about each
broken variant: which invariant explore finds it breaking, on which bundled scenarios.  ``kstep
list`` shows it and ``kstep explore`` names a scenario that shows a bug; neither explores."""

from __future__ import annotations

import json
from importlib import resources


def caught(mechanism: str) -> dict[str, dict[str, list[str]]]:
    """Per variant: invariant (or "deadlock") -> the scenarios on which explore reports it."""
    table = json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())["verdicts"]
    out: dict = {}
    for scenario, rows in table.get(mechanism, {}).items():
        for variant, row in rows.items():
            if row["verdict"] == "violation":
                out.setdefault(variant, {}).setdefault(row["invariant"], []).append(scenario)
    return out
