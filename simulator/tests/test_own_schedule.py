"""A bundled schedule is written for its scenario's variant; run under another correct variant, it is
followed as far as that variant lets it, then round-robin takes over, and the run says so."""

import kstep
from kstep.cli import main
from kstep.engine import RoundRobin, Scripted, simulate
from kstep.scenario_spec.runs import own_schedule


def test_a_schedule_another_variant_cannot_follow_is_cut_where_it_stops_fitting():
    ex = kstep.open("vma-locks", "recheck-race", "no-per-vma-lock")
    schedule, note = own_schedule(ex.model, ex.scenario)
    assert "entry 10 names T1, which has finished" in note and "its first 9 entries are followed" in note
    trace = ex.run()
    assert trace.script == schedule and len(schedule.split()) == 9
    assert trace.actions[:9] == simulate(ex.model, ex.start, Scripted(schedule)).actions[:9]
    assert trace.outcome == "finished"


def test_the_scenarios_own_variant_follows_its_whole_schedule_without_a_note():
    ex = kstep.open("vma-locks", "recheck-race")
    assert own_schedule(ex.model, ex.scenario) == (ex.scenario.schedule, "")
    assert ex.run().actions != simulate(ex.model, ex.start, RoundRobin()).actions


def test_kstep_run_prints_the_note(capsys):
    assert main(["run", "vma-locks", "--scenario", "fork-vs-fault", "--variant", "seqcount", "-c"]) in (0, 1)
    out = capsys.readouterr().out
    assert "scheduler: the scenario's own schedule, written for v6.12: under seqcount its schedule entry 30" in out
