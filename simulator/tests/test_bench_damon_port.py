"""bench/damon_port.py, the C port's DAMON aggregation timed at 1 GiB to 1 TiB: the recorded run
(kernel-lab/damon/recorded/damon-port.json) holds what the bench wrote, the DAMON seed table's port
row is computed from its raw runs (the flatness verdict too, so an edited time shows), damon-bench's
line parses or is refused, bad options are one line and exit 2, and a small run of the port itself."""

import copy
import json
import statistics
import sys
from pathlib import Path

import pytest

import labmake

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import damon_port, seeds  # noqa: E402

RECORDED = json.loads(damon_port.RECORDED.read_text())
PORT_ROWS = [r for r in json.loads(seeds.COMMITTED.read_text())["damon"]["rows"] if r["kind"] == "port"]


def test_the_recorded_run_holds_what_its_bench_wrote():
    """Every size of DAMON mode has its processes, each with every timed aggregation in every column, page
    scanning one run per size, where, when, load and how are there, and the summary is the raw runs' own."""
    r = RECORDED
    assert r["bench"] == "damon-port" and r["host"] and r["date"] and r["compiler"] and r["how"]
    assert {"before", "after"} <= set(r["host_load"]) and r["emulated"] is False
    assert list(r["damon"]) == [str(g) for g in damon_port.SIZES_GIB]
    assert r["repeats"] >= 2 and r["timed_per_run"] >= 10
    for gib, runs in r["damon"].items():
        assert len(runs) == r["repeats"], gib
        for run in runs:
            assert damon_port.parse(json.dumps(run), int(gib), "damon", r["timed_per_run"]) == run
            assert max(run["access_checks"]) <= damon_port.MAX_NR_REGIONS * damon_port.SAMPLES
    for gib, run in r["pages"].items():
        assert damon_port.parse(json.dumps(run), int(gib), "pages", 1) == run
    assert r["summary"] == damon_port.summarise(r)


def test_the_port_row_is_the_recorded_file_and_its_verdict_is_computed_from_the_raw_runs():
    """The committed row is what seeds builds from the recorded file now, and its spread is the largest median
    CPU time over the smallest, computed here again from the raw runs alone."""
    assert len(PORT_ROWS) == 1
    row = PORT_ROWS[0]
    assert row == seeds.damon_port_row(RECORDED)
    medians = [statistics.median([x for run in runs for x in run["cpu_ns"]]) for runs in RECORDED["damon"].values()]
    assert row["spread"] == round(max(medians) / min(medians), 3)
    assert row["flat"] == (row["spread"] <= seeds.FLAT)
    assert row["why"].startswith("flat within 20%: " if row["flat"] else "NOT flat within 20%: ")
    assert [s["cpu_ns"]["median"] for s in row["sizes"].values()] == [round(m) for m in medians]


def _with_cpu(recorded: dict, cpu_of) -> dict:
    """The recorded run with every DAMON aggregation's CPU time replaced by ``cpu_of(gib, ns)``."""
    r = copy.deepcopy(recorded)
    for gib, runs in r["damon"].items():
        for run in runs:
            run["cpu_ns"] = [cpu_of(gib, ns) for ns in run["cpu_ns"]]
    return r


def test_the_flatness_verdict_follows_the_raw_times_and_catches_a_doubled_largest_size():
    smallest = RECORDED["damon"]["1"]
    same = _with_cpu(RECORDED, lambda gib, ns: ns)
    for gib in same["damon"]:  # every size timed as 1 GiB was: flat
        for run, like in zip(same["damon"][gib], smallest):
            run["cpu_ns"] = list(like["cpu_ns"])
    flat = seeds.damon_port_row(same)
    assert (flat["spread"], flat["flat"]) == (1.0, True) and flat["why"].startswith("flat within 20%: ")
    doubled = _with_cpu(same, lambda gib, ns: 2 * ns if gib == "1024" else ns)
    row = seeds.damon_port_row(doubled)
    assert (row["spread"], row["flat"]) == (2.0, False) and row["why"].startswith("NOT flat within 20%: ")
    assert row["sizes"]["1024 GiB"]["cpu_ns"]["median"] == 2 * flat["sizes"]["1024 GiB"]["cpu_ns"]["median"]
    # the recorded file with 1 TiB's times doubled is not the committed row
    assert seeds.damon_port_row(_with_cpu(RECORDED, lambda gib, ns: 2 * ns if gib == "1024" else ns)) != PORT_ROWS[0]


def test_no_recorded_run_is_a_row_that_says_so():
    row = seeds.damon_port_row(None)
    assert row["spread"] is None and row["why"].startswith(seeds.NOT_MEASURED)


GOOD = ('{"gib": 4, "mode": "damon", "samples": 20, "warmup_aggregations": 10, "wall_ns": [21000, 20000], '
        '"cpu_ns": [20500, 19900], "access_checks": [640, 960], "random_draws": [674, 995], '
        '"below_unlikely": [5, 7], "nr_regions": 48, "accessed_pages_found": 0, "vm_hwm_kib": 872}\n')


def test_damon_benchs_line_parses_and_anything_else_is_refused():
    r = damon_port.parse(GOOD, 4, "damon", 2)
    assert r["cpu_ns"] == [20500, 19900] and r["below_unlikely"] == [5, 7]
    for bad, said in ((GOOD[:-20], "not one JSON line"), (GOOD, "another size or mode"),
                      (GOOD.replace("[20500, 19900]", "[20500]"), "cpu_ns is not 2 whole numbers"),
                      (GOOD.replace("[5, 7]", "[5, -7]"), "below_unlikely is not 2 whole numbers"),
                      (GOOD.replace("[640, 960]", "[640.5, 960]"), "access_checks is not 2 whole numbers")):
        with pytest.raises(damon_port.BadOutput, match=said):
            damon_port.parse(bad, 1 if said == "another size or mode" else 4, "damon", 2)


@pytest.mark.parametrize("args, said", [
    (["--sizes", "1,x"], "not comma-separated whole numbers"),
    (["--sizes", "2048"], "each size must be 1..1024 GiB"),
    (["--sizes", "0"], "each size must be 1..1024 GiB"),
    (["--pages-sizes", "1,1"], "each size must be 1..1024 GiB, each once"),
    (["--repeats", "1"], "--repeats must be 2..100"),
    (["--timed", "1001"], "--timed must be 1..1000"),
    (["--out", "/nonexistent/dir/x.json"], "no directory"),
])
def test_bad_options_are_one_error_line_and_exit_2(args, said, capsys):
    assert damon_port.main(args) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and err.startswith("damon-port: ")


def test_a_small_run_of_the_port_parses_and_a_bad_size_is_one_line_and_exit_2():
    """damon-bench built and run at 1 GiB and 1 TiB, three timed aggregations each (milliseconds of CPU): the
    lines parse, the bound holds, and the larger target's regions are larger, so more of its draws take
    get_random_u32_below()'s unlikely branch (the row's why)."""
    built = labmake.make("-s", "build/x86_64/damon-bench")
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    small, large = (damon_port.bench_run(gib, "damon", 3) for gib in (1, 1024))
    assert all(x > 0 for r in (small, large) for x in r["cpu_ns"] + r["access_checks"])
    assert sum(large["below_unlikely"]) > 10 * sum(small["below_unlikely"])
    for argv in (["0", "damon"], ["1025", "damon"], ["4x", "damon"], ["1", "damon", "0"], ["1", "pages", "2"]):
        p = damon_port.subprocess.run([str(damon_port.BENCH), *argv], capture_output=True, text=True)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, argv
