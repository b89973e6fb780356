"""kstep explore says what it found: the reachable states and the state graph written out, a
bound that is never called clean, hash compaction that never says clean, the broken variants'
scenarios from the verdict table, an idle daemon, and Ctrl-C with the partial result."""

import json
import os
import signal
import subprocess
import sys

import pytest
from support import load, reachable

from kstep.cli import main
from kstep.engine import explore


def kstep(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_states_file_holds_one_json_line_per_stored_state_projected_to_the_columns(capsys, tmp_path):
    path = tmp_path / "states.jsonl"
    rc, out, _ = kstep(capsys, "explore", "qspinlock", "--scenario", "two-waiters", "--no-symmetry",
                       "--states", path, "--columns", "words,count")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rc == 0 and f"states: {len(rows)} (dead locals forgotten: val)\n" in out
    assert rows[0] == {"words": [0], "count": [0, 0, 0]} and all(set(r) == {"words", "count"} for r in rows)
    assert len({json.dumps(r) for r in rows}) < len(rows)  # projections of distinct states repeat


def test_dot_draws_a_small_state_graph_and_refuses_a_big_one(capsys, tmp_path):
    path = tmp_path / "g.dot"
    rc, _, _ = kstep(capsys, "explore", "qspinlock", "--scenario", "two-waiters", "--dot", path)
    m, _, s0 = load("qspinlock", "two-waiters")
    text = path.read_text()
    assert rc == 0 and text.startswith("digraph states {") and text.count(" -> ") == \
        sum(len(m.actions(s)) for s in reachable(m, s0))
    rc, _, err = kstep(capsys, "explore", "qspinlock", "--scenario", "three-waiters", "--dot", tmp_path / "big.dot")
    assert rc == 2 and "more than 2,000 reachable states" in err and not (tmp_path / "big.dot").exists()


@pytest.mark.parametrize("extra", [(), ("--no-por",)])
def test_max_states_stores_n_then_stops_at_the_first_state_not_stored(capsys, extra):
    args = ("explore", "qspinlock", "--scenario", "three-waiters", *extra)
    rc, out, _ = kstep(capsys, *args)
    n = int(out.split("states: ")[1].split()[0])
    assert rc == 0
    assert kstep(capsys, *args, "--max-states", n)[0] == 0  # all N stored and expanded: exhausted, clean
    rc, out, _ = kstep(capsys, *args, "--max-states", n - 1)
    assert rc == 3 and f"states: {n - 1}" in out and "NOT clean" in out


def test_hash_compaction_never_says_clean_but_finds_violations(capsys):
    rc, out, _ = kstep(capsys, "explore", "qspinlock", "--scenario", "three-waiters", "--hash-compact")
    assert rc == 3 and "no violation among 391 fingerprints, omission probability <= 4.1e-15" in out
    assert "verdict: clean" not in out
    rc, out, _ = kstep(capsys, "explore", "qspinlock", "--scenario", "two-waiters", "--variant",
                       "head-ignores-pending", "--hash-compact")
    assert rc == 1 and "VIOLATED (harm) mutual-exclusion" in out and "shortest counterexample" in out
    assert "the states of two searches" in out


def test_list_shows_what_each_broken_variant_breaks_and_where(capsys):
    rc, out, _ = kstep(capsys, "list", "qspinlock")
    after = out.split("count-after-init (broken; fixed in 11dc13224c97)")[1]
    assert rc == 0 and "breaks mcs-nodes-per-cpu: explore catches it on nesting\n" in after.split("(broken)")[0]
    rc, out, _ = kstep(capsys, "explore", "qspinlock", "--scenario", "two-waiters", "--variant", "count-after-init")
    assert rc == 0 and "clean for this scenario: it cannot show count-after-init's bug; scenario nesting does" in out


def test_an_idle_daemon_is_idle_not_finished(capsys):
    rc, _, err = kstep(capsys, "run", "rcu", "--scenario", "synchronize-rcu-vs-reader", "--schedule", "rcu")
    assert rc == 2 and "names rcu, which is idle (nothing it can do yet)" in err


def test_a_search_stopped_by_ctrl_c_reports_what_it_found():
    m, _, s0 = load("qspinlock", "three-waiters")

    def interrupt(*progress):
        raise KeyboardInterrupt

    r = explore(m, s0, progress=interrupt, progress_every=0)
    assert r.interrupted and r.verdict == "interrupted" and 1 < r.states < 1172


def test_ctrl_c_on_the_command_line_exits_130_with_the_partial_result():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # A shell without job control starts background jobs (``make test &``) with SIGINT ignored, and
    # Python keeps an ignored SIGINT ignored: give the child the default a terminal's Ctrl-C meets.
    p = subprocess.Popen([sys.executable, "-m", "kstep", "explore", "qspinlock", "--scenario", "three-waiters",
                          "--no-symmetry", "--set", "cpus.0.repeat=3"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = p.stderr.readline()  # the first progress line: the search is under way
    assert "states, frontier" in line and "states/s" in line and "MiB" in line, line
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130 and "verdict: INTERRUPTED" in out and "states: " in out
