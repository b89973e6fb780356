"""DAMON on the real kernel, read from recorded boots (no QEMU here): the damoncpu probe's kdamond
CPU time against its target's size, and the DAMON probe's TLB modes that bench/damon_gap.py boots.
Booting the damoncpu probe takes half a minute per target, so `make test` never does; its parser
and checks are held to the recorded output, and to broken copies of it."""

import copy
import json
import sys
from pathlib import Path

import pytest

from kstep.cli import main
from kstep.errors import UserError
from kstep.lab.guest import probes, qemu as guest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import seeds  # noqa: E402

RECORDED = seeds._recorded(seeds.DAMONCPU)
RESULT = guest.load_result(RECORDED)
CASE = next(c for c in RESULT["cases"] if c["name"] == "damoncpu")


def failed(data):
    return [c.name for c in probes.judge_damoncpu(data) if not c.ok and not c.timing]


def test_the_recorded_boot_reads_as_three_targets_spanning_64x():
    sizes = probes.damoncpu_sizes(CASE["data"])
    assert [s["map_mib"] for s in sizes] == [8, 64, 512]
    for s, line in zip(sizes, sorted(CASE["data"], key=lambda d: int(d["map_mib"]))):
        seconds = int(line["window_cs"]) / 100
        assert s["kdamond_cpu"] == int(line["kdamond_ticks"]) / int(line["clk_tck"]) / seconds
        assert s["kdamond_per_workload"] == int(line["kdamond_ticks"]) / int(line["workload_ticks"])
    assert failed(CASE["data"]) == []


def test_the_checks_fail_on_a_boot_that_did_not_measure_what_they_ask():
    """Two targets only, or a kdamond that never ran in a window, fail their checks."""
    two = [d for d in CASE["data"] if d["map_mib"] != "512"]
    assert failed(two) == ["at least three targets spanning 64x"]
    idle = copy.deepcopy(CASE["data"])
    idle[1]["kdamond_ticks"] = "0"
    assert failed(idle) == ["kdamond and the workload both ran in every window"]
    flat = [c for c in probes.judge_damoncpu(CASE["data"]) if c.name.startswith("kdamond's CPU share at the largest")]
    assert len(flat) == 1 and flat[0].timing  # measured times: shown by kstep lab show, never asserted


@pytest.mark.parametrize("key, value", [("kdamond_ticks", "many"), ("window_cs", "0"), ("workload_ticks", "-3")])
def test_a_damoncpu_line_that_cannot_be_is_one_user_error(key, value):
    bad = copy.deepcopy(CASE["data"])
    bad[0][key] = value
    with pytest.raises(UserError, match="damoncpu"):
        probes.damoncpu_sizes(bad)


def test_lab_show_prints_kdamonds_share_per_target_and_refuses_a_broken_line(capsys, tmp_path):
    assert main(["lab", "show", str(RECORDED)]) == 0
    out = capsys.readouterr().out
    assert all(f"{mib:>4} MiB: kdamond " in out for mib in (8, 64, 512)) and "for 64x the size" in out
    broken = copy.deepcopy(RESULT)
    next(c for c in broken["cases"] if c["name"] == "damoncpu")["data"][0].pop("kdamond_ns")
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    assert main(["lab", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kdamond_ns" in err


def test_the_seed_tables_real_cell_is_the_recorded_boots():
    cell = seeds.damon_real_overhead()
    sizes = probes.damoncpu_sizes(CASE["data"])
    assert all(f"{s['map_mib']} MiB {100 * s['kdamond_cpu']:.2f}%" in cell for s in sizes)
    assert RESULT["uname_r"] in cell and str(RECORDED.relative_to(ROOT)) in cell and RESULT["date"][:10] in cell
