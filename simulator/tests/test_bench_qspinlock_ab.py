"""bench/qspinlock_ab.py, patch 07/11's microbenchmark on the lab's port: its paired statistics fed
fixed times (nothing here is timed), its command line's bad input, and a smoke run of a few thousand
loops that must come back with both variants' counts and a summary of its own pairs."""

import json
import math
import sys
from pathlib import Path

import pytest

import labmake

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import qspinlock_ab as qab  # noqa: E402


def pairs(ratios, base=1.0):
    return [{"v6.12": {"seconds": base * r, "cpu_seconds": 2 * base * r},
             "before-set-locked": {"seconds": base, "cpu_seconds": 2 * base}} for r in ratios]


def test_the_interval_is_of_the_pairs_log_ratios_and_says_what_it_holds():
    tight = qab.ratio_interval(pairs([0.965, 0.985, 0.975, 0.97, 0.98]), "seconds")
    assert tight["n"] == 5 and tight["high"] < 1 and math.isclose(tight["ratio"], 0.975, abs_tol=0.001)
    assert qab.verdict(tight).startswith("6.12 faster") and qab.verdict(tight).endswith("is inside it too")
    wide = qab.ratio_interval(pairs([0.5, 1.6, 0.9, 1.3]), "seconds")
    assert wide["low"] < 1 < wide["high"]
    assert qab.verdict(wide) == ("no change is inside the interval: these runs cannot tell the variants apart; "
                                 "the thread's -2%..-3% is inside it too")
    partly = qab.ratio_interval(pairs([0.975, 0.985, 0.98, 0.99, 0.978]), "seconds")
    assert qab.verdict(partly).endswith("the thread's -2%..-3% is partly inside it")
    slower = qab.ratio_interval(pairs([1.10, 1.12, 1.11]), "seconds")
    assert qab.verdict(slower).startswith("6.12 slower") and qab.verdict(slower).endswith("is outside it")
    # a pair whose runs took the same time whatever the scale: only the ratio counts
    assert qab.ratio_interval(pairs([0.97] * 3, base=100.0), "cpu_seconds")["ratio"] == pytest.approx(0.97)


def test_the_seeds_thread_counts_that_fit_the_host_or_the_fewest_that_queue_behind_a_head():
    assert qab.thread_counts(2) == (3,)
    assert qab.thread_counts(4) == (3, 4)
    assert qab.thread_counts(64) == qab.SEED_THREADS


@pytest.mark.parametrize("args, said", [
    (["--threads", "3,x"], "not comma-separated integers"),
    (["--threads", "1"], "each count must be 2..64"),
    (["--pairs", "1"], "--pairs must be 2..100"),
    (["--loops", "0"], "--loops must be 1..1000000000"),
    (["--out", "/nonexistent/dir/x.json"], "no directory"),
])
def test_bad_options_are_one_error_line_and_exit_2(args, said, capsys):
    with pytest.raises(SystemExit) as e:
        qab.main(args)
    assert e.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.qemu
def test_a_smoke_run_times_natively_counts_emulated_and_summarises_its_own_pairs(tmp_path):
    """Three threads of 3,000 loops: every run did all its acquisitions, the emulated runs carry no time,
    and the summary is the pairs'.  (Whether these runs contend is the host's load: what they count is
    checked on logged runs, below.)"""
    built = labmake.make("-j2")
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    out = tmp_path / "qspinlock-ab.json"
    r = qab.measure((3,), 3000, 2, 300, out, say=lambda m: None)
    assert json.loads(out.read_text()) == r and out.with_suffix(".png").stat().st_size > 0
    assert set(r["host_load"]) == {"before", "after"}
    native = r["x86_64"]["3"]
    assert [p["first"] for p in native["pairs"]] == ["v6.12", "before-set-locked"]
    runs = [p[v] for p in native["pairs"] for v in qab.VARIANTS]
    assert all(x["acquisitions"] == 9000 and x["seconds"] > 0 for x in runs)
    assert native["summary"] == qab.summarise(native["pairs"])
    for arch in qab.QEMU_ARCHES:
        emulated = r["emulated"]["counts"][arch]["3"]
        for rows in emulated.values():
            assert len(rows) == qab.QEMU_RUNS
            assert all(set(x) == {"verdict", "acquisitions", "events"} and x["acquisitions"] == 900 for x in rows)


@pytest.mark.qemu
def test_the_events_name_the_steps_each_variants_head_takes():
    """Logged runs (the port's steps one at a time in an order drawn from the seed, so they queue the same
    way on any host): 6.12's head claims by store when others queue behind it and by cmpxchg when alone;
    before-set-locked's only ever by cmpxchg; both take the lock from pending too."""
    built = labmake.make("-j2")
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    got = {}
    for variant in qab.VARIANTS:
        r = qab.LABCHECK.run_tool("x86_64", "qspinlock-torture", ["--variant", variant, "--threads", 3,
                                                                  "--acquisitions", 50, "--log", "/dev/null"], 120)
        assert r.rc == 0, r.stderr
        got[variant] = qab.events(r.summary["steps"])
    new, old = got["v6.12"], got["before-set-locked"]
    assert new["head_store"] > 0 and new["head_cmpxchg"] > 0 and new["queued"] >= new["head_store"]
    assert old["head_store"] == 0 and old["head_cmpxchg"] >= old["queued"] > 0
    assert new["pending"] > 0 and old["pending"] > 0
