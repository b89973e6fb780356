"""Real DAMON results as observation traces: damo's record files and the damon_aggregated tracepoint
text, read into the regions kdamond reported, held to the region invariants, and drawn as observed.

The fixtures in data/damon/ were written by scripts/damon-fixtures from the bundled hot-block run,
the damo ones by damo 3.4.3's own writer (see data/damon/README.md).
"""

import zlib
from pathlib import Path

import pytest

import kstep
from kstep.cli import main
from kstep.lab.replay import damon_observed as observed
from kstep.models.damon.model import RESET

DATA = Path(__file__).parent / "data" / "damon"
FIXTURES = ["hot-block.damo.json.zlib", "hot-block.damo.json", "hot-block.trace"]
LINE = ("       kdamond.0-71      [001] .....     4.100000: damon_aggregated: target_id=0 nr_regions={n} "
        "{start}-{end}: {nr} {age}")


def model_reports():
    tr = kstep.open("damon", "hot-block").run(round_robin=True)
    return [[(r.start, r.end, r.nr_accesses, r.age) for r in s.regions] for s in tr.states if s.k.phase == RESET]


@pytest.mark.parametrize("name", FIXTURES)
def test_each_format_reads_back_the_regions_kdamond_reported(name):
    obs = observed.read(DATA / name)
    assert [[(r.start, r.end, r.nr_accesses, r.age) for r in s.regions] for s in obs.snapshots] == model_reports()
    assert (obs.attrs is None) == name.endswith(".trace")
    if obs.attrs:
        assert (obs.attrs.sample_interval, obs.attrs.aggr_interval) == (5000, 100_000)
    assert [s.time_ns for s in obs.snapshots[:2]] == [4_100_000_000, 4_200_000_000]


@pytest.mark.parametrize("name", FIXTURES)
def test_check_holds_an_observation_to_the_region_invariants_and_draws_it(name, tmp_path, capsys):
    html = tmp_path / "observed.html"
    assert main(["check", "damon", str(DATA / name), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "aggregations: 10" in out and "verdict: every observed aggregation keeps the region invariants" in out
    assert ("not checked: nr-accesses-within-samples" in out) == name.endswith(".trace")
    assert "observed on a real kernel" in html.read_text()


def test_the_tracepoint_prefix_may_carry_a_tgid_column_or_no_flags():
    text = "\n".join([
        "  kdamond.0-71    (   71) [000] d..1.  5.000001: damon_aggregated: target_id=0 nr_regions=2 0-4096: 1 0",
        "  kdamond.0-71    [000]  5.000001: damon_aggregated: target_id=0 nr_regions=2 4096-8192: 0 3",
        "  bash-1 [000] .....  5.1: sched_switch: prev_comm=bash",
    ])
    obs = observed.parse_tracepoint_text(text, "t")
    assert [(r.start, r.end, r.nr_accesses, r.age) for r in obs.snapshots[0].regions] == [(0, 4096, 1, 0), (4096, 8192, 0, 3)]


def fixture_lines():
    text = (DATA / "hot-block.trace").read_text().splitlines()
    return [line for line in text if line.startswith("#")], [line for line in text if not line.startswith("#")]


def test_a_capture_started_inside_an_aggregation_drops_that_partial_aggregation(tmp_path, capsys):
    """Tracing enabled while kdamond_reset_aggregated() is half-way down its list (or a ring buffer
    that overwrote its oldest page) starts with the last lines of an aggregation: the fixture's
    first aggregation has 10 regions, so keeping only its last 3 lines starts the text there."""
    header, lines = fixture_lines()
    path = tmp_path / "late.trace"
    path.write_text("\n".join(header + lines[7:]) + "\n")
    assert main(["check", "damon", str(path)]) == 0
    out = capsys.readouterr().out
    assert "skipped the first 3 damon_aggregated lines of target 0" in out, out
    obs = observed.read(path)
    assert [[(r.start, r.end, r.nr_accesses, r.age) for r in s.regions] for s in obs.snapshots] == model_reports()[1:]


def test_a_partial_aggregation_at_each_end_with_the_same_nr_regions_is_not_read_as_whole_ones(tmp_path, capsys):
    """Lines 46..90 of the fixture: the last 10 regions of a 15-region aggregation, two whole ones of
    15, and the first 5 of the next.  Counted off in fifteens from the top, every group would mix
    two aggregations and look unsorted: a broken invariant a real kernel never had."""
    header, lines = fixture_lines()
    path = tmp_path / "cut.trace"
    path.write_text("\n".join(header + lines[46:91]) + "\n")
    assert main(["check", "damon", str(path)]) == 0
    out = capsys.readouterr().out
    assert "skipped the first 10 damon_aggregated lines of target 0" in out, out
    assert "skipped the last 5 damon_aggregated lines of target 0" in out, out
    assert "aggregations: 2" in out
    obs = observed.read(path)
    assert [[(r.start, r.end, r.nr_accesses, r.age) for r in s.regions] for s in obs.snapshots] == model_reports()[4:6]


def test_an_unsorted_first_aggregation_is_not_mistaken_for_a_partial_one(tmp_path, capsys):
    """A list that goes back down is a partial aggregation only if the lines after it start a whole,
    sorted one; otherwise the region invariants judge it."""
    path = write(tmp_path, [dict(n=3, start=8192, end=12288, nr=0, age=0), dict(n=3, start=0, end=4096, nr=0, age=0),
                            dict(n=3, start=12288, end=16384, nr=0, age=0)])
    assert main(["check", "damon", path]) == 1
    assert "aggregation 1 breaks broken assertion: regions-cover-monitored-ranges" in capsys.readouterr().out


def write(tmp_path, lines):
    p = tmp_path / "trace"
    p.write_text("# tracer: nop\n" + "\n".join(LINE.format(**f) for f in lines) + "\n")
    return str(p)


def test_overlapping_regions_in_a_recording_are_a_broken_invariant(tmp_path, capsys):
    path = write(tmp_path, [dict(n=2, start=0, end=8192, nr=0, age=0), dict(n=2, start=4096, end=12288, nr=0, age=0)])
    assert main(["check", "damon", path]) == 1
    assert "aggregation 1 breaks broken assertion: regions-cover-monitored-ranges" in capsys.readouterr().out


def test_an_age_jumping_by_two_in_one_aggregation_is_a_broken_invariant(tmp_path, capsys):
    path = write(tmp_path, [dict(n=1, start=0, end=8192, nr=0, age=0), dict(n=1, start=0, end=8192, nr=0, age=2)])
    assert main(["check", "damon", path]) == 1
    assert "aggregation 2 breaks broken assertion: age-grows-at-most-one" in capsys.readouterr().out


def test_too_many_accesses_for_the_intervals_of_a_damo_record_are_a_broken_invariant(tmp_path, capsys):
    text = (DATA / "hot-block.damo.json").read_text().replace('"samples": 0,', '"samples": 21,', 1)
    (tmp_path / "r.json").write_text(text)
    assert main(["check", "damon", str(tmp_path / "r.json")]) == 1
    assert "breaks broken assertion: nr-accesses-within-samples" in capsys.readouterr().out


@pytest.mark.parametrize("content, why", [
    (b"", "no damon_aggregated lines"),
    (b"\x78\x9c garbage", "not a damo json_compressed record"),
    (zlib.compress(b"[{\"snapshots\": []}]"), "holds no snapshots"),
    (b"[1, 2]", "not a damo record file"),
    (b"[{\"target_id\": 0}]", "a record lacks 'snapshots'"),
    (b"[{\"snapshots\": [{\"end_time\": \"1\", \"regions\": [{\"start\": \"x\", \"end\": 1}]}]}]",
     "start is not a number"),
    (b"[oops", "not JSON"),
    (b"\xff\xfe\x00", "neither a damo record nor tracepoint text"),
    (LINE.format(n=2, start=0, end=4096, nr=0, age=0).encode(), "ends inside an aggregation"),
    (LINE.format(n=2, start=0, end=4096, nr=0, age=0).replace(": 0 0", ": zero").encode(),
     "damon_aggregated fields are not"),
])
def test_a_bad_recording_is_one_line_and_exit_status_2(tmp_path, capsys, content, why):
    path = tmp_path / "rec"
    path.write_bytes(content)
    assert main(["check", "damon", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert why in err and "\n" not in err, err


RECORDED = Path(__file__).resolve().parents[2] / "kernel-lab" / "guest" / "recorded"


def test_what_real_6_12_kernels_printed_in_the_lab_keeps_the_region_invariants():
    """The damon_aggregated lines the real-kernel lab recorded from Debian's 6.12 in QEMU (x86_64,
    arm64, ppc64le), read as tracefs printed them."""
    import json

    arches = set()
    for path in sorted(RECORDED.glob("*.json")):
        result = json.loads(path.read_text())
        for case in result["cases"]:
            lines = case.get("raw", {}).get("trace")
            if case["name"] != "damon" or not lines:  # the vma probe records a trace of its own
                continue
            obs = observed.parse_tracepoint_text("\n".join(lines), path.name)
            trace, _ = observed.observed_trace(obs, path.name)
            assert trace.violation is None, (path.name, trace.violation)
            assert len(obs.snapshots) >= 10 and all(s.regions for s in obs.snapshots)
            arches.add(result["arch"])
    assert arches == {"x86_64", "arm64", "ppc64le"}
