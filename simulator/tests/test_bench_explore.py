"""The explore bench's bookkeeping, without running a search: rows over budget are reported, never
run; a measured unreduced count that differs from the known one stops the bench; and the targets are
judged from the fastest Python row that reached a verdict."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "explore.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_explore", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_over_budget_are_reported_not_run(bench, monkeypatch):
    monkeypatch.setattr(bench, "_python_search", lambda *a: pytest.fail("an over-budget search was run"))
    assert bench.python_row(4, 2, (False, False, False)) == {"verdict": "not run (exceeds budget)"}
    assert bench.spin_row(4, 2, False) == {"verdict": "not run (exceeds budget)"}


def test_a_wrong_unreduced_count_stops_the_bench(bench, monkeypatch):
    row = {"verdict": "clean", "states": 213_008, "cpu_seconds": 1.0, "peak_mib": 50.0}
    monkeypatch.setattr(bench, "_python_search", lambda *a: row)
    with pytest.raises(RuntimeError, match="213008 states, not 213009"):
        bench.python_row(3, 2, (False, False, False))
    assert bench.python_row(3, 2, (True, False, False)) == row  # a reduced search stores fewer, as it should


def test_targets_are_judged_from_the_fastest_row_with_a_verdict(bench):
    def row(verdict, seconds, mib=100.0):
        return {"verdict": verdict, "cpu_seconds": seconds, "peak_mib": mib}

    rows = {"3x2": {"python, no reduction": row("clean", 9.0), "python, symmetry": row("clean", 2.0),
                    "spin, no partial-order reduction": row("clean", 1.0)},
            "3x3": {"python, no reduction": row("stopped (exceeds budget)", 0.0),
                    "python, symmetry": row("clean", 40.0), "spin, no partial-order reduction": row("clean", 12.0)},
            "4x2": {"python, symmetry": row("clean", 500.0, 5000.0)}}
    met = bench.against_targets(rows)
    assert met["3x2_vs_spin_without_por"] == 2.0 and met["3x2_within_3x_of_spin"]
    assert met["3x3_vs_spin_without_por"] == 3.33 and not met["3x3_within_3x_of_spin"]
    assert not met["3x3"]  # 40 s: over 30 s
    assert not met["4x2"]  # 5000 MiB: over 4 GiB
