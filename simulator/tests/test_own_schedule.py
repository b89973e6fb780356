"""A bundled schedule is written for its scenario's variant; run under another correct variant, it is
followed as far as that variant lets it, then round-robin takes over, and the run says so."""

import kstep
from kstep.cli import main
from kstep.engine import RoundRobin, Scripted, simulate
from kstep.scenario_spec.runs import own_schedule


def test_a_schedule_another_variant_cannot_follow_is_cut_where_it_stops_fitting():
    ex = kstep.open("vma-locks", "recheck-race", "v6.12.0")
    schedule, note = own_schedule(ex.model, ex.scenario)
    assert "entry 30 names W, which has finished" in note and "its first 29 entries are followed" in note
    trace = ex.run()
    assert trace.script == schedule and len(schedule.split()) == 29
    assert trace.actions[:29] == simulate(ex.model, ex.start, Scripted(schedule)).actions[:29]
    assert trace.outcome == "finished"


def test_the_scenarios_own_variant_follows_its_whole_schedule_without_a_note():
    ex = kstep.open("vma-locks", "recheck-race")
    assert own_schedule(ex.model, ex.scenario) == (ex.scenario.schedule, "")
    assert ex.run().actions != simulate(ex.model, ex.start, RoundRobin()).actions


def test_kstep_run_prints_the_note(capsys):
    assert main(["run", "vma-locks", "--scenario", "fork-vs-fault", "--variant", "v6.12.0", "-c"]) in (0, 1)
    out = capsys.readouterr().out
    assert "scheduler: the scenario's own schedule, written for v6.12: under v6.12.0 its schedule entry 20" in out


def test_a_claim_another_variant_cannot_read_is_unmet_with_why_and_on_its_own_variant_an_error():
    """rwsem-reader-steals' W never finishes under its own variant; under another it does, and a claim
    reading W's frame is then marked unmet with the reason, not an error that ends the run."""
    from kstep.errors import UserError
    from kstep.scenario_spec import expect

    ex = kstep.open("vma-locks", "rwsem-reader-steals", "anon-prepare-blocks")
    trace = ex.run(max_steps=2000)  # past its 11 steps, to where W has finished
    why = dict(expect.check(ex.model, trace, ex.scenario.expect, strict=False))
    (claim,) = [e for e in why if "frames[0]" in e.text]
    assert "cannot be read at step" in why[claim] and "no such entry" in why[claim]
    try:
        expect.check(ex.model, trace, ex.scenario.expect)
    except UserError as e:
        assert "no such entry" in str(e)
    else:
        raise AssertionError("strict checking let an unreadable claim pass")
