"""Scenario expectations: the claims of a scenario's text, checked against its own scripted run.

Every bundled scenario's claims hold on its run, each claim quotes the scenario's own text, and
the claims are tight enough that dropping one entry of the schedule breaks at least one of them.
A scenario whose run is the only one it has (one step enabled in every state: one thread copying
page tables, a kdamond alone) needs no schedule; its claims are about that one run, so they must
fail on the run stopped before its first step.
"""

import dataclasses
import functools

import pytest

import kstep
from kstep.cli import main
from kstep.experiment import from_text
from kstep.engine import RoundRobin, Scripted, parse_schedule, simulate
from kstep.scenario_spec import expect, scenario
from kstep.errors import UserError
from kstep.models import MODELS

RCU_TEXT = """
description = "R reads inside a section while U replaces the object and frees the old one with call_rcu."
look_for = "the grace period waiting for R; kfree only after it ends"
schedule = "R U U rcu R R R rcu rcu rcu"
[[threads]]
name = "R"
kind = "reader"
[[threads]]
name = "U"
kind = "updater"
"""


def rcu(expects, text=RCU_TEXT):
    ex = from_text("rcu", text + expects, where="x.toml")
    sc = ex.scenario
    return ex.model, sc, simulate(ex.model, ex.start, Scripted(sc.schedule), config=sc.config)


def failures(expects, text=RCU_TEXT):
    m, sc, tr = rcu(expects, text)
    return [why for _, why in expect.check(m, tr, sc.expect)]


def test_each_form_holds_or_says_why_not():
    assert failures("""
[[expect]]
claim = "the grace period waiting for R"
sometime = "gp_seq() == -1199 and in_section('R')"
[[expect]]
claim = "kfree only after it ends"
order = ["rcu:rcu_gp_cleanup", "rcu:rcu_do_batch"]
[[expect]]
claim = "the old object is freed"
at_end = "objects[0] == 'freed' and done('U') and not enabled('rcu:rcu_do_batch')"
[[expect]]
claim = "R never sees a freed object"
never = "took('R:reader_uses_object') and objects[thread('R').obj] == 'freed'"
[[expect]]
claim = "one object is live throughout"
always = "len(objects) - 1 <= 1"
""") == []
    assert failures("""
[[expect]]
claim = "c"
order = ["rcu:rcu_do_batch", "rcu:rcu_gp_cleanup"]
[[expect]]
claim = "c"
never = "gp_seq() == -1199"
[[expect]]
claim = "c"
always = "objects[0] == 'live'"
[[expect]]
claim = "c"
at_end = "not done('U')"
[[expect]]
claim = "c"
sometime = "gp_seq() == -1198"
""") == ["order rcu:rcu_do_batch -> rcu:rcu_gp_cleanup: rcu:rcu_gp_cleanup is not taken after rcu:rcu_do_batch",
         "never gp_seq() == -1199: holds at step 4 (rcu:rcu_gp_init)",
         "always objects[0] == 'live': does not hold at step 10 (rcu:rcu_do_batch)",
         "at_end not done('U'): does not hold at the end (step 10)",
         "sometime gp_seq() == -1198: holds in none of the 11 states of the run"]


@pytest.mark.parametrize("entry, message", [
    ('claim = "c"', "needs exactly one of always, never, sometime, at_end, order (got none)"),
    ('claim = "c"\nalways = "1"\nnever = "0"', "(got always, never)"),
    ('claim = "c"\nalways = "__import__(\'os\')"', "'__import__' is not a state field or function"),
    ('claim = "c"\nalways = "rcu.count(1)"', "only plain calls"),
    ('claim = "c"\nalways = "[x for x in threads]"', "ListComp is not allowed"),
    ('claim = "c"\nalways = "rcu.__class__"', "'__class__' is not a state field or function"),
    ('claim = "c"\nalways = "1.5 > 1"', "only integers, strings"),
    ('claim = "c"\nalways = "rcu.gp_seq =="', "not an expression"),
    ('claim = "c"\norder = ["rcu"]', "'rcu' is not ACTOR:label"),
    ('always = "1"', "claim: missing"),
])
def test_malformed_expectations_are_one_line_scenario_errors(entry, message):
    with pytest.raises(UserError) as e:
        rcu(f"[[expect]]\n{entry}\n")
    assert message in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("x.toml: expect[0]")


@pytest.mark.parametrize("expr, message", [
    ("nosuch > 0", "the state has no field 'nosuch'"),
    ("rcu.nosuch", "rcu has no field 'nosuch'"),
    ("objects[7] == 'live'", "objects[7]: no such entry"),
    ("thread('Z').obj", "thread('Z'): no such thread"),
    ("done('Z')", "done('Z'): no such actor"),
    ("frobnicate()", "unknown function 'frobnicate'"),
    ("len(1, 2)", "len() takes one argument"),
    ("len(rcu.gp_seq)", "len: operands of the wrong type (int)"),
    ("rcu.gp_seq < 'a'", "rcu.gp_seq < 'a': operands of the wrong type (int, str)"),
    ("took(3)", "3 is not a step 'ACTOR:label'"),
])
def test_an_expectation_naming_what_the_state_lacks_is_a_user_error(expr, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        failures(f'[[expect]]\nclaim = "c"\nsometime = "{expr}"\n')


def test_run_c_marks_each_claim_on_the_scenarios_own_schedule(tmp_path, capsys):
    path = tmp_path / "x.toml"
    path.write_text(RCU_TEXT + """
[[expect]]
claim = "the grace period waiting for R"
sometime = "gp_seq() == -1199 and in_section('R')"
[[expect]]
claim = "kfree only after it ends"
order = ["rcu:rcu_do_batch", "rcu:rcu_gp_cleanup"]
""")
    assert main(["run", "rcu", "--scenario", str(path), "-c"]) == 0
    out = capsys.readouterr().out
    assert "  [ok] the grace period waiting for R\n" in out
    assert "  [no] kfree only after it ends (order rcu:rcu_do_batch -> rcu:rcu_gp_cleanup:" in out
    assert main(["run", "rcu", "--scenario", str(path), "-c", "-s", "3"]) == 0
    assert "Claims of the scenario" not in capsys.readouterr().out  # claims are about its own schedule


def test_model_functions_are_offered_to_expressions(monkeypatch):
    monkeypatch.setattr(MODELS["rcu"], "expect_functions",
                        lambda self: {"freed": lambda s, k: s.objects[k] == "freed"})
    assert failures('[[expect]]\nclaim = "c"\nat_end = "freed(0) and not freed(1)"\n') == []


# --- the bundled scenarios -----------------------------------------------------------------------

def bundled():
    for mech in sorted(MODELS):
        for name in scenario.bundled(mech):
            yield pytest.param(mech, name, id=f"{mech}-{name}")


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_every_bundled_scenario_makes_claims(mech):
    """A scenario's text is checked only through its claims: one without any could say anything."""
    unclaimed = [name for name in scenario.bundled(mech)
                 if not scenario.load(mech, MODELS[mech].scenario_schema, name).expect]
    assert unclaimed == [], f"{mech} scenarios with no [[expect]]: {', '.join(unclaimed)}"


@functools.cache
def own_run(mech, name):
    """A bundled scenario bound as kstep binds it, and its own run: two tests read the run of each
    scenario without a schedule (a damon one takes a second)."""
    ex = kstep.open(mech, name)
    return ex, ex.run()


@pytest.mark.parametrize("mech, name", list(bundled()))
def test_bundled_claims_hold_on_the_scenarios_own_run_and_quote_its_text(mech, name):
    ex, tr = own_run(mech, name)
    m, sc = ex.model, ex.scenario
    assert expect.check(m, tr, sc.expect) == []
    text = " ".join((sc.description + " " + sc.look_for).split())
    for e in sc.expect:
        assert " ".join(e.claim.split()) in text, f"claim {e.claim!r} is not a sentence of the scenario's text"


def with_claims(scheduled: bool):
    for p in bundled():
        sc = scenario.load(p.values[0], MODELS[p.values[0]].scenario_schema, p.values[1])
        if sc.expect and bool(sc.schedule) == scheduled:
            yield p


def followed_as_far_as_it_can_be(ex, steps):
    m, sc = ex.model, ex.scenario
    while True:
        sched = Scripted(" ".join(steps)) if steps else RoundRobin()
        try:
            return m, simulate(m, ex.start, sched, max_steps=sc.max_steps, config=sc.config)
        except UserError:  # entry sched.pos names an actor that is blocked or finished there
            steps = steps[:sched.pos - 1]


@pytest.mark.parametrize("mech, name", list(with_claims(scheduled=True)))
def test_dropping_a_schedule_entry_breaks_a_claim(mech, name):
    """The claims are about this interleaving: some one-step change of the schedule breaks them.

    A mutant is the schedule with one entry dropped, followed as far as it can be: where it names an
    actor that cannot take a step at that point (a spinning waiter, which a lock scenario's script
    otherwise reaches only after the holder lets go), it ends there and the run finishes
    round-robin, as any script does."""
    ex = kstep.open(mech, name)
    sc = ex.scenario
    steps = parse_schedule(sc.schedule)
    for k in range(len(steps)):
        m, tr = followed_as_far_as_it_can_be(ex, steps[:k] + steps[k + 1:])
        if expect.check(m, tr, sc.expect):
            return
    pytest.fail(f"no single dropped entry of {sc.schedule!r} breaks any claim of {name}")


@pytest.mark.parametrize("mech, name", list(with_claims(scheduled=False)))
def test_claims_without_a_schedule_are_about_the_only_run(mech, name):
    """No schedule is needed only where no scheduler has a choice; the claims must still say
    something the run makes true: on the run stopped at its initial state, some claim fails."""
    ex, tr = own_run(mech, name)
    m, sc = ex.model, ex.scenario
    choices = [len(m.actions(s)) for s in tr.states]
    assert max(choices) == 1, (f"{name} has claims but no schedule, and its run is not its only one: a state "
                               f"offers {max(choices)} steps")
    tr = dataclasses.replace(tr, actions=[], ticks=[], states=tr.states[:1])
    try:  # a claim that cannot even be evaluated there (it names a region not yet made) does not hold
        assert expect.check(m, tr, sc.expect), f"every claim of {name} already holds before its first step"
    except UserError:
        pass
