"""The kstep command line, driven in-process: every command, every exit status, every kind of bad input."""

import functools
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from kstep.engine import Variant

from kstep import experiment
from kstep.cli import main
from kstep.engine import explore as engine_explore
from kstep.scenario_spec import scenario as scenarios
from kstep.models import MODELS
from kstep.models.rcu import RcuModel
from kstep.views.presentation import present
from kstep.views.presentation.rcu import RcuPresentation

from support import table_first

RCU = ["rcu", "--scenario", "grace-period-basics"]  # has its own worked schedule
RCU_UNSCRIPTED = ["rcu", "--scenario", "call-rcu-callback", "--set", 'schedule=""']
BROKEN_RCU = ["gp-ends-early", "early-callback"]
ROOT = Path(__file__).resolve().parents[2]


def kstep(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def bad_input(capsys, *argv, says=()):
    """Run, expect exit 2 and exactly one 'kstep: ' line on stderr; return that line."""
    rc, out, err = kstep(capsys, *argv)
    lines = err.splitlines()
    assert rc == 2, (rc, out, err)
    assert len(lines) == 1 and lines[0].startswith("kstep: "), err
    assert "Traceback" not in err
    for fragment in [says] if isinstance(says, str) else says:
        assert fragment in lines[0], lines[0]
    return lines[0]


def table(out):
    """The rows of the first step table in ``out``, as dicts keyed by column name.

    step and tick are right-aligned; every other column starts where its name starts in the header
    (cells may contain single spaces: "running, waits for R").
    """
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("step  tick  actor"))
    spans = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", lines[start])]
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        numbers = line[:spans[2][0]].split()
        row = {"step": numbers[0], "tick": numbers[1] if len(numbers) > 1 else ""}
        for k in range(2, len(spans)):
            end = spans[k + 1][0] if k + 1 < len(spans) else None
            row[spans[k][1]] = line[spans[k][0]:end].strip()
        rows.append(row)
    return rows


def column(out, name):
    return [row[name] for row in table(out)]


STEP_COLUMNS = ("step", "tick", "actor", "label", "kernel function")


def steps_only(rows):
    return [{k: row[k] for k in STEP_COLUMNS} for row in rows]


def write_scenario(path, body, description="test", look_for="test"):
    path.write_text(f'description = "{description}"\nlook_for = "{look_for}"\n{body}')
    return path


# --- help and list --------------------------------------------------------------------------------------


def test_help_lists_every_mechanism_and_scenario(capsys):
    rc, out, err = kstep(capsys, "--help")
    assert rc == 0 and err == ""
    for name, cls in MODELS.items():
        assert name in out and cls.title in out
        for sc in scenarios.bundled(name):
            assert sc in out


def test_version(capsys):
    rc, out, _ = kstep(capsys, "--version")
    assert rc == 0 and out.startswith("kstep ")


def test_no_command_is_bad_input(capsys):
    bad_input(capsys, says="choose a command")


def test_list_marks_default_and_broken_variants(capsys):
    rc, out, err = kstep(capsys, "list")
    assert rc == 0 and err == ""
    for name, cls in MODELS.items():
        assert f"{name} — {cls.title}" in out
        for sc in scenarios.bundled(name):
            assert sc in out
    for line in ("  releases:        v6.12 (default; 6.12.117)",
                 "  implementations: tas, ticket, powerpc",
                 "  bugs:            gp-ends-early (broken), early-callback (broken)"):
        assert line + "\n" in out
    assert "count-after-init (broken; fixed in 11dc13224c97)" in out


def test_list_one_mechanism_explains_scenarios_and_variants(capsys):
    rc, out, _ = kstep(capsys, "list", "rcu")
    assert rc == 0
    assert "grace-period-basics" in out and "One reader runs two read-side sections" in out
    assert "rcu_gp_cleanup ends the grace period as soon as one CPU" in out
    assert "integer 1..20" not in out


def test_list_schema_documents_legal_ranges(capsys):
    rc, out, _ = kstep(capsys, "list", "rcu", "--schema")
    assert rc == 0
    assert "sections: integer 1..20 (default 1)" in out
    assert "threads: list of 1..8" in out
    assert "kind: one of reader, updater (required)" in out
    assert "schedule: string (default '')" in out


def test_list_schema_needs_a_mechanism(capsys):
    bad_input(capsys, "list", "--schema", says="--schema needs a mechanism")


def test_list_unknown_mechanism(capsys):
    bad_input(capsys, "list", "nope", says=("unknown mechanism 'nope'", "rcu"))


# --- run ------------------------------------------------------------------------------------------------


def test_run_prints_a_problem_without_answers(capsys):
    rc, out, err = kstep(capsys, "run", *RCU, "-s", "3")
    assert rc == 0 and err == ""
    assert "scheduler: random, seed 3" in out
    rows = table(out)
    assert rows[0]["step"] == "0" and rows[0]["label"] == "(initial)"
    assert rows[0]["gp_seq"] == "-1200" and rows[0]["grace period"] == "idle"  # the initial state is given
    assert [(r["step"], r["tick"]) for r in rows[1:4]] == [("1", "1"), ("2", "2"), ("3", "3")]
    assert all(r[c] == "?" for r in rows[1:] for c in ("gp_seq", "grace period", "callbacks", "objects"))
    assert "kernel/rcu/tree.c:rcu_gp_init" in column(out, "kernel function")
    assert "rerun with -c" in out
    assert "Answers:" not in out and "outcome:" not in out


def test_run_compute_shows_answers_and_outcome(capsys):
    _, problem, _ = kstep(capsys, "run", *RCU, "-s", "3")
    rc, out, _ = kstep(capsys, "run", *RCU, "-s", "3", "-c")
    assert rc == 0
    rows = table(out)
    assert steps_only(rows) == steps_only(table(problem))  # the same run, with the answers filled in
    assert "?" not in [cell for row in rows for cell in row.values()]
    assert rows[-1]["gp_seq"] == "-1196" and rows[-1]["objects"] == "0:freed 1:live"  # rcu_seq_end, kfree
    assert "Answers:" in out and "  outcome: finished" in out
    assert f"  steps: {len(rows) - 1}" in out
    assert "  grace_periods: 1" in out and "  objects_freed: 1" in out
    assert "rerun with -c" not in out


def test_run_with_a_seed_is_reproducible(capsys):
    first = kstep(capsys, "run", *RCU, "-s", "11", "-c")
    assert first == kstep(capsys, "run", *RCU, "-s", "11", "-c")
    runs = {tuple(column(kstep(capsys, "run", *RCU, "-s", s)[1], "actor")) for s in range(6)}
    assert len(runs) > 1  # the seed does choose the interleaving


def test_run_without_a_scheduler_uses_seed_1(capsys):
    _, default, _ = kstep(capsys, "run", *RCU_UNSCRIPTED)
    _, seeded, _ = kstep(capsys, "run", *RCU_UNSCRIPTED, "-s", "1")
    assert "random, seed 1" in default and default == seeded


def test_run_uses_the_scenarios_own_schedule(capsys, tmp_path):
    rc, out, _ = kstep(capsys, "run", *RCU)
    assert rc == 0 and "scheduler: the scenario's own" in out
    assert column(out, "actor")[1:13] == "R R U U rcu rcu R R R rcu R rcu".split()
    assert column(out, "label")[9] == "rcu_report_qs_rdp"  # the schedule's R:rcu_report_qs_rdp
    path = write_scenario(tmp_path / "worked.toml", 'schedule = "U*2 R"\n'
                          '[[threads]]\nname = "R"\nkind = "reader"\n[[threads]]\nname = "U"\nkind = "updater"\n')
    rc, out, _ = kstep(capsys, "run", "rcu", "--scenario", path, "-c")
    assert rc == 0 and "scheduler: the scenario's own" in out
    assert [(r["actor"], r["label"]) for r in table(out)[1:4]] == [
        ("U", "rcu_assign_pointer"), ("U", "call_rcu"), ("R", "rcu_read_lock")]
    # an explicit scheduler wins over the scenario's
    rc, out, _ = kstep(capsys, "run", "rcu", "--scenario", path, "-s", "5")
    assert "random, seed 5" in out


def test_run_scripted_schedule_then_round_robin(capsys):
    rc, out, _ = kstep(capsys, "run", *RCU, "-P", "R*2 U*2 rcu", "-c")
    assert rc == 0 and "scheduler: scripted -P 'R*2 U*2 rcu', then round-robin" in out
    rows = table(out)
    assert [r["actor"] for r in rows[1:6]] == ["R", "R", "U", "U", "rcu"]
    assert rows[5]["label"] == "rcu_gp_init" and rows[5]["gp_seq"] == "-1199"
    assert "outcome: finished" in out


def test_run_round_robin_counts_rounds(capsys):
    rc, out, _ = kstep(capsys, "run", *RCU, "--round-robin", "-c")
    assert rc == 0 and "scheduler: round-robin" in out
    rows = table(out)
    rounds = int(re.search(r"^  rounds: (\d+)$", out, re.M).group(1))
    assert rounds == int(rows[-1]["tick"]) + 1  # ticks are rounds, counted from 0
    assert "  blocked_rounds: none" in out


def test_run_steps_caps_the_run(capsys):
    rc, out, _ = kstep(capsys, "run", *RCU, "--steps", "3", "-c")
    assert rc == 0
    assert len(table(out)) == 4
    assert "outcome: max-steps" in out


def test_run_set_overrides_the_scenario(capsys):
    rc, out, _ = kstep(capsys, "run", *RCU_UNSCRIPTED, "--set", "threads.0.sections=3", "-c")
    assert rc == 0
    rows = table(out)
    assert sum(r["label"] == "rcu_read_lock" and r["actor"] == "R1" for r in rows) == 3


def test_run_scenario_from_a_file(capsys, tmp_path):
    path = write_scenario(tmp_path / "mine.toml", '[[threads]]\nname = "A"\nkind = "reader"\nsections = 4\n')
    rc, out, _ = kstep(capsys, "run", "rcu", "--scenario", path, "-c")
    assert rc == 0 and "scenario mine:" in out
    assert column(out, "label").count("rcu_read_lock") == 4


def test_run_on_a_broken_variant_shows_the_violation_only_with_c_and_exits_1(capsys):
    # the scripted interleaving of explore's counterexample for gp-ends-early
    argv = ["run", *RCU, "--variant", "gp-ends-early", "-P", "R U U rcu rcu rcu"]
    rc, out, _ = kstep(capsys, *argv)
    assert rc == 1 and "grace-period-waits-for-readers" not in out
    rc, out, _ = kstep(capsys, *argv, "-c")
    assert rc == 1
    assert ("outcome: broken assertion: grace-period-waits-for-readers at step 6: the grace period at gp_seq "
            "-1199 ended" in out)
    assert table(out)[6]["in section"] == "R"  # the reader is still inside when gp_seq says it ended


def test_a_model_without_state_columns_gets_the_step_columns_only(capsys, monkeypatch):
    monkeypatch.setattr(RcuPresentation, "summary", lambda self, s: {})
    _, out, _ = kstep(capsys, "run", *RCU)
    assert list(table(out)[0]) == list(STEP_COLUMNS)


@pytest.mark.slow  # every scenario through kstep run twice: integration-sized (72 s for damon's on a loaded machine)
@pytest.mark.parametrize("mechanism", sorted(MODELS))
def test_every_bundled_scenario_runs(capsys, mechanism):
    for sc in scenarios.bundled(mechanism):
        ex = experiment.open(mechanism, sc)  # the variant kstep run runs: its own columns
        columns = list(present(ex.model).summary(ex.start))
        rc, out, err = kstep(capsys, "run", mechanism, "--scenario", sc)
        assert rc == 0 and err == "", (sc, err)
        rows = table(out)
        header = list(rows[0])  # later states may add columns (a VMA that mmap creates)
        assert header[:len(STEP_COLUMNS) + len(columns)] == list(STEP_COLUMNS) + columns
        assert all(r[c] == "?" for r in rows[1:] for c in header[len(STEP_COLUMNS):])
        rc, out, err = kstep(capsys, "run", mechanism, "--scenario", sc, "-c")
        assert rc == 0 and "outcome: " in out
        assert "?" not in [cell for row in table(out) for cell in row.values()]


# --- run: output files --------------------------------------------------------------------------------


def test_run_json_replaces_the_file_and_show_replays_it(capsys, tmp_path):
    out_json = tmp_path / "t.json"
    out_json.write_text("old contents the user asked us to replace")
    rc, out, _ = kstep(capsys, "run", *RCU, "-s", "4", "-c", "--json", out_json)
    assert rc == 0 and f"wrote trace {out_json}" in out
    data = json.loads(out_json.read_text())
    assert data["format"] == "kstep-trace" and data["scheduler"]["seed"] == 4 and len(data["steps"]) == 15
    rc, shown, err = kstep(capsys, "show", out_json)
    assert rc == 0 and err == ""
    assert table(shown) == table(out)
    assert "outcome: finished" in shown and "seed 4" in shown


def test_output_in_a_missing_directory_is_an_error_and_creates_nothing(capsys, tmp_path):
    target = tmp_path / "no" / "such" / "t.json"
    bad_input(capsys, "run", *RCU, "--json", target, says=("--json", "does not exist"))
    bad_input(capsys, "run", *RCU, "--html", target.with_suffix(".html"), says=("--html", "does not exist"))
    bad_input(capsys, "explore", *RCU, "--json", target, says="does not exist")
    assert not (tmp_path / "no").exists()


def test_output_that_is_a_directory_is_an_error(capsys, tmp_path):
    bad_input(capsys, "run", *RCU, "--json", tmp_path, says="is a directory")
    bad_input(capsys, "show", tmp_path / "whatever.json", "--html", tmp_path, says="is a directory")


def test_output_paths_are_checked_before_the_work(capsys, tmp_path, monkeypatch):
    def must_not_run(*a, **k):
        raise AssertionError("explored before checking the output path")

    monkeypatch.setattr(experiment, "explore", must_not_run)
    bad_input(capsys, "explore", *RCU, "--html", tmp_path / "gone" / "x.html", says="does not exist")


def test_json_and_html_must_differ(capsys, tmp_path):
    same = tmp_path / "same"
    bad_input(capsys, "run", *RCU, "--json", same, "--html", same, says="both name")


def test_unwritable_output_is_bad_input(capsys, tmp_path):
    if os.geteuid() == 0:  # root writes into read-only directories; no one can write /proc/version
        bad_input(capsys, "run", *RCU, "--json", "/proc/version", says="/proc/version: cannot write")
        return
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        bad_input(capsys, "run", *RCU, "--json", locked / "t.json", says="cannot write")
    finally:
        locked.chmod(0o700)


# --- explore --------------------------------------------------------------------------------------------


def test_explore_clean(capsys):
    rc, out, _ = kstep(capsys, "explore", *RCU)
    assert rc == 0
    assert "states: 272" in out and "transitions: 451" in out and "depth: 14" in out and "seconds: " in out
    assert "verdict: clean" in out
    assert "checks: grace-period-waits-for-readers, callbacks-after-grace-period, no-use-after-free, deadlock" in out


@pytest.mark.parametrize("variant,steps", [("gp-ends-early", 9), ("early-callback", 7)])
def test_explore_finds_the_broken_variants(capsys, variant, steps):
    """Both broken variants break an assertion first; explore goes on to show the harm."""
    rc, out, _ = kstep(capsys, "explore", *RCU, "--variant", variant)
    assert rc == 1
    assert "verdict: VIOLATED (harm) no-use-after-free: R reads object 0 after it was freed" in out
    assert f"shortest counterexample ({steps} steps):" in out
    rows = table(out)
    assert len(rows) == steps + 1 and rows[-1]["label"] == "reader_uses_object"


def test_explore_reports_a_broken_assertion_when_no_harm_is_reachable(capsys, monkeypatch):
    harmless = [i for i in RcuModel.invariants if i.name != "no-use-after-free"]
    monkeypatch.setattr(RcuModel, "invariants", harmless)
    rc, out, _ = kstep(capsys, "explore", *RCU, "--variant", "gp-ends-early")
    assert rc == 1
    assert "verdict: VIOLATED (broken assertion) grace-period-waits-for-readers: " in out
    assert "no harm invariant is violated in any reachable state (the search was exhausted)" in out
    assert "shortest counterexample to the broken assertion (6 steps):" in out


def test_explore_bounded_is_not_clean(capsys):
    rc, out, _ = kstep(capsys, "explore", *RCU, "--max-states", "5")
    assert rc == 3
    assert "states: 5" in out
    assert "verdict: NOT clean" in out and "verdict: clean" not in out


def test_explore_bound_does_not_hide_a_violation_found_first(capsys):
    rc, out, _ = kstep(capsys, "explore", *RCU, "--variant", "early-callback", "--max-states", "1000")
    assert rc == 1


def test_explore_reports_a_deadlock(capsys, monkeypatch):
    # a reader whose rcu_read_unlock never becomes enabled: nobody can move, and the reader is not done
    stuck = Variant.release("v6.12", "rcu_read_unlock never enabled", "6.12", replaces={"rcu_read_unlock": (None, lambda s, i, a: False)})
    monkeypatch.setitem(RcuModel.variants, "v6.12", stuck)
    rc, out, _ = kstep(capsys, "explore", *RCU)
    assert rc == 1 and "verdict: DEADLOCK: no actor can move; still waiting: R" in out


def test_explore_counterexample_written_and_replayable(capsys, tmp_path):
    cex = tmp_path / "cex.json"
    rc, out, _ = kstep(capsys, "explore", *RCU, "--variant", "gp-ends-early", "--json", cex)
    assert rc == 1 and f"wrote trace {cex}" in out
    rc, shown, _ = kstep(capsys, "show", cex)
    assert rc == 1
    assert table(shown) == table(out)
    assert "outcome: harm: no-use-after-free at step 9: R reads object 0" in shown


def test_explore_clean_writes_nothing_and_keeps_the_file(capsys, tmp_path):
    keep = tmp_path / "keep.json"
    keep.write_text("mine")
    rc, out, _ = kstep(capsys, "explore", *RCU, "--json", keep)
    assert rc == 0 and f"no counterexample: {keep} not written" in out
    assert keep.read_text() == "mine"


def test_explore_shows_progress_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(experiment, "explore", functools.partial(engine_explore, progress_every=0.0))
    rc, out, err = kstep(capsys, "explore", *RCU)
    assert rc == 0
    lines = err.splitlines()
    assert lines and all(line.startswith("explore: ") and " states, " in line for line in lines)
    assert "explore:" not in out


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", sorted(MODELS))
def test_every_bundled_scenario_is_clean_with_the_kernels_variant(capsys, mechanism):
    for sc in explorable(mechanism):
        rc, out, _ = kstep(capsys, "explore", mechanism, "--scenario", sc)
        assert rc == 0, (sc, out)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism,variant", [(m, v) for m, cls in sorted(MODELS.items())
                                               for v, var in cls.variants.items()
                                               if var.broken and "litmus" not in var.params])
def test_every_broken_variant_is_caught_on_some_bundled_scenario(capsys, mechanism, variant):
    """A bug only a weaker memory model shows is caught by its litmus test instead (test_variant_kinds)."""
    schema = MODELS[mechanism].scenario_schema
    for sc in scenarios.bundled(mechanism):  # a livelock breaks no invariant: --liveness catches it
        if scenarios.load(mechanism, schema, sc).forever:
            rc, out, _ = kstep(capsys, "explore", mechanism, "--scenario", sc, "--variant", variant, "--liveness")
            if rc == 1 and "verdict: LIVELOCK" in out:
                return
    codes = []
    caught = table_first(mechanism, variant, explorable(mechanism), lambda row: row.get("verdict") == "violation")
    for sc in caught:  # stop at the first scenario that catches it, the table's first
        codes.append(kstep(capsys, "explore", mechanism, "--scenario", sc, "--variant", variant)[0])
        if codes[-1] == 1:
            break
    assert 1 in codes, codes


def explorable(mechanism):
    """The bundled scenarios an exhaustive search can finish (the others are scripted demonstrations)."""
    schema = MODELS[mechanism].scenario_schema
    return [sc for sc in scenarios.bundled(mechanism) if scenarios.load(mechanism, schema, sc).explorable]


# --- vma-locks ------------------------------------------------------------------------------------------

VMA = ["vma-locks", "--scenario", "recheck-race"]


def test_vma_locks_list_and_schema(capsys):
    rc, out, _ = kstep(capsys, "list", "vma-locks", "--schema")
    assert rc == 0
    assert "recheck-race" in out and "no-recheck (broken)" in out
    assert "v6.12 (default; 6.12.117)" in out and "v6.12.0 (6.12.0)" in out
    assert "anon_vma: true or false (default True)" in out
    assert "kind: one of fault, writer (required)" in out


def test_vma_locks_worked_interleaving_with_answers(capsys):
    rc, out, _ = kstep(capsys, "run", *VMA)
    assert rc == 0 and "scheduler: the scenario's own" in out
    assert "?" in column(out, "mm_lock_seq")
    rc, out, _ = kstep(capsys, "run", *VMA, "-c")
    rows = table(out)
    assert [r["actor"] for r in rows[1:14]] == "T1 T1 T1 W W W W W T1 T1 T1 T1 T1".split()
    assert "vma_lock_abort" in column(out, "label")
    assert "  vma_lock_abort: 1" in out and "  mmap_lock_faults: 1" in out and "  outcome: finished" in out


def test_vma_locks_explore_verdicts(capsys):
    rc, out, _ = kstep(capsys, "explore", *VMA)
    assert rc == 0 and "verdict: clean" in out
    rc, out, _ = kstep(capsys, "explore", *VMA, "--variant", "no-recheck")
    assert rc == 1 and "verdict: VIOLATED (harm) read-locked-vma-unchanged: " in out
    assert "vma_start_read" in column(out, "label")
    rc, out, _ = kstep(capsys, "explore", *VMA, "--max-states", "5")
    assert rc == 3 and "verdict: NOT clean" in out


def test_vma_locks_deadlock_verdict(capsys):
    rc, out, _ = kstep(capsys, "explore", "vma-locks", "--scenario", "fork-vs-fault", "--variant",
                       "anon-prepare-blocks")
    assert rc == 1 and "verdict: DEADLOCK: no actor can move" in out


def test_vma_locks_counterexample_round_trip(capsys, tmp_path):
    cex = tmp_path / "cex.json"
    rc, out, _ = kstep(capsys, "explore", *VMA, "--variant", "no-recheck", "--json", cex)
    assert rc == 1
    rc, shown, _ = kstep(capsys, "show", cex)
    assert rc == 1 and table(shown) == table(out)
    assert "outcome: harm: read-locked-vma-unchanged at step 11: " in shown


@pytest.mark.parametrize("argv,says", [
    ([*VMA, "--set", "vmas.0.end=65"], "vmas[0].end: 65 is out of range 1..64"),
    ([*VMA, "--set", "vmas.0.anon_vma=1"], "vmas[0].anon_vma: expected true or false"),
    ([*VMA, "--set", "vmas.0.start=9"], "vmas[0]: start 9 must be below end 4"),
    ([*VMA, "--set", 'threads.2.ops.0.op="mremap"'], "'mremap' is not one of"),
    ([*VMA, "--set", "threads.0.faults=[]"], "threads[0].faults: a fault thread needs at least one address"),
    ([*VMA, "--set", "vmas.1.start=2"], "vmas: [0, 4) and [2, 8) overlap"),
    ([*VMA, "--set", 'threads.1.name="T1"'], "'T1'"),
    ([*VMA, "--set", 'threads.0.name="rcu"'], "'rcu'"),
    ([*VMA, "--variant", "nope"], "unknown variant 'nope' for vma-locks"),
    ([*VMA, "-P", "T1*3 T2*40"], "names T2, which has finished"),
])
def test_vma_locks_bad_input(capsys, argv, says):
    bad_input(capsys, "run", *argv, says=says)


# --- show -----------------------------------------------------------------------------------------------


@pytest.fixture
def saved_trace(tmp_path, capsys):
    path = tmp_path / "t.json"
    assert main(["run", *RCU, "-s", "9", "--json", str(path)]) == 0
    capsys.readouterr()
    return path


def tampered(saved_trace, change):
    data = json.loads(saved_trace.read_text())
    change(data)
    saved_trace.write_text(json.dumps(data))
    return saved_trace


def test_show_rejects_what_is_not_a_kstep_trace(capsys, tmp_path, saved_trace):
    bad_input(capsys, "show", tmp_path / "missing.json", says="cannot read")
    bad_input(capsys, "show", tmp_path, says="cannot read")
    (tmp_path / "text.json").write_text("hello")
    bad_input(capsys, "show", tmp_path / "text.json", says="not a kstep trace: expected '{' at character 0")
    (tmp_path / "half.json").write_text('{"format": "kstep-trace", "version": [1, 2')
    bad_input(capsys, "show", tmp_path / "half.json", says="not JSON")
    (tmp_path / "bytes.json").write_bytes(b"\xff\xfe\x00garbage")
    bad_input(capsys, "show", tmp_path / "bytes.json", says="not a text file")
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    bad_input(capsys, "show", tmp_path / "other.json", says="not a kstep trace")
    (tmp_path / "deep.json").write_text('{"format": ' + "[" * 100_000)
    bad_input(capsys, "show", tmp_path / "deep.json", says="nested too deeply")


@pytest.mark.parametrize("change,says", [
    (lambda d: d.update(mechanism="nope"), "unknown mechanism"),
    (lambda d: d.update(variant="nope"), "unknown variant"),
    (lambda d: d.update(config={}), "config.threads: missing"),
    (lambda d: d["config"]["threads"][0].update(sections=99), "out of range"),
    (lambda d: d["config"]["threads"][1].update(name="R"), "two threads are named 'R'"),
    (lambda d: d["config"]["threads"][0].update(sections=3), "initial state does not match"),
    (lambda d: d["steps"][3]["state"].update(gp=7), "step 4 (R:rcu_read_unlock): records a state the "
                                                    "model does not reach"),
    (lambda d: d["steps"][0].update(label="kfree"), "step 1: label is 'kfree', the scheduler's run has 'rcu_read_lock'"),
    (lambda d: d["steps"][0].update(tick=-1), "step 1: tick is -1, the scheduler's run has 1"),
    (lambda d: d["steps"][0].update(tick=True), "step 1: tick is True"),
    (lambda d: d["steps"][0].update(extra=1), "step 1 is not an object with exactly actor, label, source, state, tick"),
])
def test_show_rejects_a_tampered_trace(capsys, saved_trace, change, says):
    bad_input(capsys, "show", tampered(saved_trace, change), says=says)


def test_show_html_checks_the_path_first(capsys, saved_trace, tmp_path):
    bad_input(capsys, "show", saved_trace, "--html", tmp_path / "gone" / "a.html", says="does not exist")


# --- the animation (needs kstep.views) ---------------------------------------------------------------


def views():
    import kstep.views
    return kstep.views


def says_its_purpose(page: Path, mech: str, name: str) -> None:
    """The page states what its scenario is about and what to look for, as the scenario file words it."""
    import html

    sc = scenarios.load(mech, MODELS[mech].scenario_schema, name)
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page.read_text())).split())
    for sentence in (sc.description, "What to look for: " + sc.look_for):
        assert " ".join(sentence.split()) in text


def test_run_writes_html(capsys, tmp_path):
    views()
    page = tmp_path / "run.html"
    page.write_text("old")
    rc, out, _ = kstep(capsys, "run", *RCU, "-s", "2", "--html", page)
    assert rc == 0 and f"wrote animation {page}" in out
    assert page.read_text() != "old" and "<html" in page.read_text().lower()
    says_its_purpose(page, "rcu", "grace-period-basics")


def test_explore_writes_counterexample_html(capsys, tmp_path):
    views()
    page = tmp_path / "cex.html"
    rc, out, _ = kstep(capsys, "explore", *RCU, "--variant", "early-callback", "--html", page)
    assert rc == 1 and page.stat().st_size > 0
    says_its_purpose(page, "rcu", "grace-period-basics")


def test_show_renders_html(capsys, tmp_path, saved_trace):
    views()
    page = tmp_path / "show.html"
    rc, out, _ = kstep(capsys, "show", saved_trace, "--html", page)
    assert rc == 0 and "<html" in page.read_text().lower()


# --- bad input everywhere -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv,says", [
    (["bogus"], "invalid choice: 'bogus'"),
    (["run"], "required: MECH, --scenario"),
    (["run", "rcu"], "required: --scenario"),
    (["run", "nope", "--scenario", "x"], "unknown mechanism 'nope'"),
    (["run", "rcu", "--scenario", "nope"], "unknown scenario 'nope' for rcu"),
    (["explore", "rcu", "--scenario", "nope"], "unknown scenario"),
    (["run", *RCU, "--variant", "v5"], "unknown variant 'v5'"),
    (["explore", *RCU, "--variant", "v5"], "unknown variant 'v5'"),
    (["run", *RCU, "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["run", *RCU, "--sc", "x"], "unrecognized arguments"),  # no abbreviations
    (["run", *RCU, "-s", "abc"], "argument -s/--seed: 'abc' is not a whole number"),
    (["run", *RCU, "-s", "-1"], "out of range 0..18446744073709551615"),
    (["run", *RCU, "-s", str(2**64)], "out of range"),
    (["run", *RCU, "-s", "1", "-P", "R"], "not allowed with"),
    (["run", *RCU, "--round-robin", "-s", "1"], "not allowed with"),
    (["run", *RCU, "--steps", "0"], "argument --steps: 0 is out of range 1..1000000"),
    (["run", *RCU, "--steps", "-4"], "-4 is out of range"),
    (["run", *RCU, "--steps", "1000001"], "out of range 1..1000000"),
    (["run", *RCU, "--steps", "lots"], "not a whole number"),
    (["explore", *RCU, "--max-states", "0"], "argument --max-states: 0 is out of range 1..100000000"),
    (["explore", *RCU, "--max-states", "x"], "not a whole number"),
    (["explore", *RCU, "-c"], "unrecognized arguments: -c"),
    (["run", *RCU, "-P", "R!"], "-P: schedule: 'R!' is not ACTOR, ACTOR:label or either with *COUNT"),
    (["run", *RCU, "-P", ""], "schedule: empty"),
    (["run", *RCU, "-P", "R*0"], "count in 'R*0' must be 1..10000"),
    (["run", *RCU, "-P", "X"], "'X', which is not an actor (actors: R, U, rcu)"),
    (["run", *RCU, "-P", "U*9"], "names U, which has finished"),
    (["run", *RCU, "-P", "rcu"], "names rcu, which is idle"),  # nothing for the kthread to do yet
    (["run", *RCU, "--set", "threads"], "expected KEY=VALUE"),
    (["run", *RCU, "--set", "=1"], "expected KEY=VALUE"),
    (["run", *RCU, "--set", "threads.0.kind=writer"], "is not a TOML value (strings need quotes)"),
    (["run", *RCU, "--set", 'threads.0.kind="writer"'], "threads[0].kind: 'writer' is not one of reader, updater"),
    (["run", *RCU, "--set", "threads.0.sections=21"], "threads[0].sections: 21 is out of range 1..20"),
    (["run", *RCU, "--set", "threads.5.sections=2"], "no entry 5 in threads"),
    (["run", *RCU, "--set", "nope.deep=1"], "no key nope"),
    (["run", *RCU, "--set", "bogus=1"], "bogus: unknown key"),
    (["run", *RCU, "--set", 'threads.1.name="rcu"'], "'rcu' is the name of the mechanism's own actor"),
    (["run", *RCU, "--set", 'threads.1.name=""'], "'' is not a name"),
    (["run", *RCU, "--set", "threads=[" + "[" * 5000], "nested too deeply"),
    (["run", *RCU, "--json", "a\x00b"], "contains a NUL character"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, says):
    bad_input(capsys, *argv, says=says)


@pytest.mark.parametrize("body,says", [
    ("threads = [", "not valid TOML"),
    ("[[threads]]\nname = 'A'\nkind = 'reader'\nsections = 0\n", "threads[0].sections: 0 is out of range 1..20"),
    ("[[threads]]\nname = 'A'\nkind = 'reader'\nsections = '3'\n", "expected an integer, got a string"),
    ("[[threads]]\nname = 'A'\nkind = 'reader'\nsections = true\n", "expected an integer, got a boolean"),
    ("[[threads]]\nname = 'A'\n", "threads[0].kind: missing"),
    ("[[threads]]\nname = 'A'\nkind = 'reader'\ncolour = 'red'\n", "threads[0].colour: unknown key"),
    ("threads = []\n", "has 0 entries; allowed 1..8"),
    ("threads = 3\n", "expected a list, got an integer"),
    ("", "threads: missing"),
    ('"odd\\nkey" = 1\n[[threads]]\nname = "A"\nkind = "reader"\n', "odd\\nkey: unknown key"),
    ('schedule = "A!"\n[[threads]]\nname = "A"\nkind = "reader"\n', "scenario bad: schedule: 'A!'"),
])
def test_bad_scenario_files(capsys, tmp_path, body, says):
    path = write_scenario(tmp_path / "bad.toml", body)
    line = bad_input(capsys, "run", "rcu", "--scenario", path, says=says)
    assert str(path) in line or "scenario bad" in line


def test_scenario_files_that_cannot_be_read(capsys, tmp_path):
    bad_input(capsys, "run", "rcu", "--scenario", tmp_path / "missing.toml", says="cannot read")
    (tmp_path / "dir.toml").mkdir()
    bad_input(capsys, "run", "rcu", "--scenario", tmp_path / "dir.toml", says="cannot read")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\xfd")
    bad_input(capsys, "run", "rcu", "--scenario", tmp_path / "binary.toml", says="not a text file")
    (tmp_path / "nodesc.toml").write_text('look_for = "x"\n[[threads]]\nname = "A"\nkind = "reader"\n')
    bad_input(capsys, "explore", "rcu", "--scenario", tmp_path / "nodesc.toml", says="description: missing")


def test_error_lines_escape_control_characters(capsys, tmp_path):
    line = bad_input(capsys, "run", "rcu", "--scenario", "no\nsuch\u2028name")
    assert "no\\nsuch\\u2028name" in line


# --- bugs are not bad input -----------------------------------------------------------------------------


def broken_step(self, state, action):
    raise RuntimeError("a bug in a model step")


def test_internal_errors_are_not_disguised_as_bad_input_or_a_verdict(capsys, monkeypatch):
    monkeypatch.setattr(RcuModel, "step", broken_step)
    for argv in (["run", *RCU], ["explore", *RCU]):
        rc, out, err = kstep(capsys, *argv)
        assert rc == 70, (rc, err)
        assert err.startswith("Traceback (most recent call last):") and "RuntimeError: a bug in a model step" in err
        assert "kstep: " not in err


def test_internal_errors_exit_70_with_a_traceback():
    program = ("import sys\nfrom kstep.models.rcu import RcuModel\nfrom kstep.cli import main\n"
               "def broken(self, state, action):\n    raise ValueError('a bug in a model step')\n"
               "RcuModel.step = broken\n"
               "sys.exit(main(['run', 'rcu', '--scenario', 'grace-period-basics']))\n")
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 70
    assert "Traceback" in proc.stderr and "ValueError: a bug in a model step" in proc.stderr
    assert "kstep: " not in proc.stderr


def test_an_os_error_while_replaying_a_trace_is_a_bug_not_bad_input(capsys, monkeypatch, saved_trace):
    def failing_step(self, state, action):
        raise OSError(5, "Input/output error")  # not the read: the file was read without a problem

    monkeypatch.setattr(RcuModel, "step", failing_step)
    rc, _, err = kstep(capsys, "show", saved_trace)
    assert rc == 70 and "OSError: [Errno 5] Input/output error" in err and "kstep: " not in err


def test_the_installed_command(tmp_path):
    """`python -m kstep` is the console script's main: real exit statuses, real stderr."""
    run = functools.partial(subprocess.run, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    ok = run([sys.executable, "-m", "kstep", "explore", *RCU, "--variant", "gp-ends-early"])
    assert ok.returncode == 1 and "VIOLATED" in ok.stdout
    bad = run([sys.executable, "-m", "kstep", "run", *RCU, "-s", "x"])
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("kstep: ")
    bounded = run([sys.executable, "-m", "kstep", "explore", *RCU, "--max-states", "5"])
    assert bounded.returncode == 3


def test_a_scenario_may_name_its_variant_and_the_option_overrides_it(capsys, tmp_path):
    rc, out, _ = kstep(capsys, "run", "qspinlock", "--scenario", "powerpc-stealing", "-s", "1")
    assert rc == 0 and "variant powerpc" in out
    rc, out, _ = kstep(capsys, "run", "qspinlock", "--scenario", "powerpc-stealing", "-s", "1", "--variant", "v6.12")
    assert rc == 0 and "variant v6.12" in out
    text = resources.files("kstep.scenarios").joinpath("rcu", "grace-period-basics.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text('variant = "no-such"\n' + text)
    bad_input(capsys, "run", "rcu", "--scenario", str(bad), says=f"{bad}: variant: 'no-such' is no variant of rcu")


def test_questions_under_a_variant_without_their_step_are_never_reached_not_refused(capsys):
    """munmap-vs-fault asks about vma_end_write_all, which no-per-vma-lock does not have: run under that
    variant, the question says this run never gets there.  A question naming a step its own variant
    lacks is still a mistake in the file."""
    assert main(["run", "vma-locks", "--scenario", "munmap-vs-fault", "--variant", "no-per-vma-lock",
                 "-s", "7"]) in (0, 1)
    out = capsys.readouterr().out
    assert "[seq-after-epoch]" in out and "(this run never gets there: no answer)" in out
    assert main(["run", "vma-locks", "--scenario", "munmap-vs-fault", "--set",
                 'questions.0.at="after the first W:no_such_step"']) == 2
    assert "question seq-after-epoch: vma-locks has no step 'no_such_step'" in capsys.readouterr().err
