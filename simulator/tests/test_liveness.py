"""Liveness: the textbook verdicts (test-and-set starves a waiter, the ticket lock and 6.12's
qspinlock do not), the lasso a trace file holds judged again when it is loaded (a moved cycle_start
or an unfair cycle is refused), its schema, and explore --liveness on the command line."""

import json
from importlib import resources
from re import escape as re_escape

import pytest

import kstep
from kstep.cli import main
from kstep.engine import Action, Model, Replay, Source, Variant, simulate
from kstep.scenario_spec import scenario
from kstep.engine.liveness import judge, liveness
from kstep.engine.progress import Progress
from kstep.engine.replay import load, validate
from kstep.errors import UserError
from kstep.models import MODELS, make_model

SCENARIO = """description = "every CPU takes lock A, again and again, forever"
look_for = "whether a waiter can wait forever while another CPU keeps taking the lock"
ticket_bits = 2
[[cpus]]
locks = ["A"]
repeat = "forever"
[[cpus]]
locks = ["A"]
repeat = "forever"
"""


def forever(variant, cpus=2):
    m = make_model("qspinlock", variant)
    config = m.scenario_schema.check({"ticket_bits": 2, "cpus": [{"locks": ["A"], "repeat": "forever"}] * cpus},
                                     "scenario")
    return m, config, m.initial(config)


@pytest.fixture(scope="module")
def tas():
    m, config, s0 = forever("tas")
    return m, config, s0, liveness(m, s0, config=config)


def test_test_and_set_starves_a_waiter(tas):
    m, _, _, r = tas
    assert r.exhausted and r.livelock is None and r.deadlock is None and set(r.lassos) == {"C0", "C1"}
    t = r.lassos["C0"]
    assert t.lasso["kind"] == "starvation" and t.lasso["actors"] == ["C0"]
    cycle = t.actions[t.cycle_start:]
    assert all(a.actor == "C1" for a in cycle) and Action("C1", "critical_section") in cycle
    assert t.states[t.cycle_start] == t.states[-1]
    assert "virt_spin_lock" in {f.label for f in t.states[-1].threads[0].frames[:1]}  # C0 spins in the TAS loop


@pytest.mark.parametrize("variant, cpus", [("v6.12", 2), ("ticket", 2), ("ticket", 3)])
def test_fair_locks_starve_nobody(variant, cpus):
    m, config, s0 = forever(variant, cpus)
    r = liveness(m, s0, config=config)
    assert r.free and r.actors == tuple(f"C{k}" for k in range(cpus)) and r.states > 1


def test_a_deadlock_is_reported_with_its_run():
    """clear-tail-always wipes the queue's tail: the queued waiter is never handed the lock."""
    m, config, s0 = forever("clear-tail-always")
    r = liveness(m, s0, config=config)
    assert r.deadlock is not None and r.deadlock.outcome == "deadlock" and not m.actions(r.deadlock.states[-1])
    assert not r.free


def test_a_bounded_search_proves_nothing():
    m, config, s0 = forever("v6.12")
    r = liveness(m, s0, config=config, max_states=100)
    assert not r.exhausted and not r.free


def test_the_trace_file_holds_the_lasso_and_loading_judges_it_again(tas, tmp_path):
    m, _, _, r = tas
    t = r.lassos["C0"]
    path = tmp_path / "lasso.json"
    t.write(m, path)
    data = json.loads(path.read_text())
    validate(data)
    assert data["cycle_start"] == t.cycle_start and data["lasso"] == t.lasso
    again, _ = load(path, make_model)
    assert again.cycle_start == t.cycle_start and again.lasso == t.lasso

    def tampered(**changes):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**data, **changes}))
        with pytest.raises(UserError) as e:
            load(bad, make_model)
        return str(e.value)

    assert "the cycle does not close" in tampered(cycle_start=t.cycle_start + 1)
    assert "lasso is" in tampered(lasso={**t.lasso, "actors": ["C1"]})
    with pytest.raises(UserError, match="cycle_start"):
        validate({k: v for k, v in data.items() if k != "lasso"})


class Polite(Model, Progress):
    """Two actors that each raise a flag, back off while the other's is up, and otherwise enter: the
    corridor dance of the textbooks, which livelocks when both raise their flags together."""

    name = "polite"
    variants = {"textbook": Variant.implementation("textbook", "raise, look, back off while the other's flag is up")}
    default_variant = "textbook"
    progress_labels = frozenset({"enter"})
    NEXT = {"raise": "look", "look": "enter", "enter": "lower", "lower": "raise"}

    def initial(self, config):
        return (("raise", "raise"), (False, False))

    def actors(self, state):
        return ("P0", "P1")

    def actions(self, state):
        return [Action(f"P{k}", pc) for k, pc in enumerate(state[0])]

    def step(self, state, action):
        k = int(action.actor[1])
        pcs, flags = list(state[0]), list(state[1])
        if action.label == "raise":
            flags[k] = True
        elif action.label == "look" and flags[1 - k]:
            flags[k] = False  # back off and try again
            pcs[k] = "raise"
            return tuple(pcs), tuple(flags)
        elif action.label == "lower":
            flags[k] = False
        pcs[k] = self.NEXT[action.label]
        return tuple(pcs), tuple(flags)

    def done(self, state, actor):
        return False

    def sources(self):
        return {label: Source.outside("a textbook's polite lock") for label in self.NEXT}


def test_a_polite_back_off_livelocks():
    m = Polite()
    r = liveness(m, m.initial({}))
    t = r.livelock
    assert t is not None and t.lasso["kind"] == "livelock" and t.lasso["actors"] == ["P0", "P1"]
    cycle = t.actions[t.cycle_start:]
    assert {a.actor for a in cycle} == {"P0", "P1"} and not any(a.label == "enter" for a in cycle)
    assert judge(m, t, t.cycle_start) == t.lasso


def test_an_unfair_cycle_is_no_lasso():
    """C0 takes and drops the lock once; then C1 takes and drops it, back to the same state.  In that
    cycle C0 could always take its fast path and never does: no scheduler the kernel's CPUs are."""
    m, config, s0 = forever("tas")
    actions = [Action("C0", "queued_spin_lock"), Action("C0", "critical_section"), Action("C0", "queued_spin_unlock"),
               Action("C1", "queued_spin_lock"), Action("C1", "critical_section"), Action("C1", "queued_spin_unlock")]
    t = simulate(m, s0, Replay.of(actions), max_steps=len(actions), config=config)
    assert t.states[3] == t.states[6]
    with pytest.raises(UserError, match="not fair: C0 can move in every state of it and never does"):
        judge(m, t, 3)


def test_explore_liveness_on_the_command_line(capsys, tmp_path):
    sc = tmp_path / "forever.toml"
    sc.write_text(SCENARIO)
    out_json, out_html = tmp_path / "lasso.json", tmp_path / "lasso.html"
    rc = main(["explore", "qspinlock", "--variant", "tas", "--scenario", str(sc), "--liveness",
               "--json", str(out_json), "--html", str(out_html)])
    out = capsys.readouterr().out
    assert rc == 1 and "verdict: STARVATION: starvation of C0: lasso with stem 2 steps, cycle 3 steps" in out
    assert "steps 3..5 repeat forever" in out
    page = out_html.read_text()
    assert "\\u21bb starvation of C0: lasso with stem 2 steps" in page and "\\u21bb cycle: repeats forever" in page
    assert main(["show", str(out_json)]) == 0
    assert "lasso: starvation of C0: lasso with stem 2 steps, cycle 3 steps; steps 3..5 repeat forever" in \
        capsys.readouterr().out
    rc = main(["explore", "qspinlock", "--variant", "ticket", "--scenario", str(sc), "--liveness"])
    out = capsys.readouterr().out
    assert rc == 0 and "verdict: C1 starvation-free" in out and "free of starvation, livelock and deadlock" in out
    rc = main(["explore", "qspinlock", "--scenario", "two-waiters", "--liveness"])
    out = capsys.readouterr().out
    assert rc == 0 and "every run of this scenario ends" in out
    rc = main(["explore", "qspinlock", "--scenario", str(sc), "--liveness", "--no-por"])
    assert rc == 2 and "--no-por: not with --liveness" in capsys.readouterr().err


# --- bundled scenarios whose runs never end ----------------------------------------------------------------

def forever_scenarios():
    for mech in sorted(MODELS):
        for name in scenario.bundled(mech):
            sc = scenario.load(mech, MODELS[mech].scenario_schema, name)
            if sc.forever:
                yield pytest.param(mech, sc, id=f"{mech}-{name}")


def test_the_textbook_cases_are_bundled():
    shown = {p.values[1].name: p.values[1] for p in forever_scenarios()}
    assert {"tas-starves", "fair-ticket", "fair-qspinlock"} <= set(shown)
    assert shown["tas-starves"].cycle_start >= 0 and shown["fair-ticket"].cycle_start == -1


@pytest.mark.parametrize("mech, sc", list(forever_scenarios()))
def test_a_forever_scenarios_own_run_is_its_lasso_or_its_declared_steps_and_the_table_agrees(mech, sc):
    """The run a page plays stops at the steps the scenario declares; a declared lasso is judged on it
    and is one explore --liveness finds (the same victims, or a livelock), and the committed verdict
    table says starvation or livelock exactly for the scenarios with a lasso, freedom for the others."""
    ex = kstep.open(mech, sc.name)
    m, t = ex.model, ex.run()
    assert len(t) == sc.steps and t.outcome == "max-steps"
    r = ex.liveness()
    row = json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())["verdicts"][mech][sc.name][
        m.variant.name]
    assert row["liveness"] == r.verdict
    if sc.cycle_start >= 0 and t.lasso["kind"] == "livelock":
        assert t.cycle_start == sc.cycle_start and r.livelock is not None and r.verdict == "livelock"
    elif sc.cycle_start >= 0:
        assert t.cycle_start == sc.cycle_start and t.lasso["kind"] == "starvation"
        assert set(t.lasso["actors"]) <= set(r.lassos) and row["starved"] == sorted(r.lassos)
    else:
        assert t.cycle_start is None and r.free


def test_run_plays_a_bundled_lasso_and_says_which_steps_repeat(capsys):
    assert main(["run", "qspinlock", "--scenario", "tas-starves", "-c"]) == 0
    out = capsys.readouterr().out
    assert "steps 3..5 repeat forever" in out and "outcome: max-steps" in out


def test_list_shows_the_liveness_verdicts(capsys):
    assert main(["list", "qspinlock"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "explore --liveness: starvation on fair-qspinlock, fair-ticket, tas-starves" in out
    assert "explore --liveness: free on fair-qspinlock, fair-ticket, tas-starves" in out


def test_list_says_why_explore_misses_a_variant_only_liveness_catches(capsys):
    assert main(["list", "vma-locks"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    entry = out[out.index("handoff-stops-first (broken)"):]
    assert entry.index("explore catches it on no bundled scenario: it breaks no invariant there, and explore "
                       "--liveness shows its lasso") < entry.index("livelock on rwsem-handoff-livelock")


@pytest.mark.parametrize("keys, says", [("steps = 5\ncycle_start = 5", "cycle_start: a lasso's cycle starts before"),
                                        ("cycle_start = 0", "(steps = 0)")])
def test_a_lasso_starts_inside_the_declared_run(keys, says):
    text = SCENARIO.replace("ticket_bits = 2", f"ticket_bits = 2\n{keys}")
    with pytest.raises(UserError, match=re_escape(says)):
        scenario.parse("qspinlock", MODELS["qspinlock"].scenario_schema, "x", text, "x.toml", [])


def test_powerpc_starves_a_queue_head_that_never_reads_the_lock_held():
    """arch/powerpc/lib/qspinlock.c counts a head's spin only on a read that finds the word locked
    (iters++ after yield_head_to_locked_owner); a trylock_clean_tail that loses to a stealer goes
    back to `again` uncounted.  So stealing is bounded only for a head that ever reads the lock
    held: in the lasso C0 reads it free every time, C1 steals it first, and must-queue never comes."""
    from kstep.models.qspinlock.powerpc import PPC_LOCKED_VAL, PPC_MUST_Q_VAL

    m, config, s0 = forever("powerpc")
    r = liveness(m, s0, config=config)
    assert r.verdict == "starvation" and "C0" in r.lassos
    t = r.lassos["C0"]
    cycle = list(zip(t.states[t.cycle_start:], t.actions[t.cycle_start:]))
    head = [(s, a.label) for s, a in cycle if a.actor == "C0"]
    assert [label for _, label in head] == ["wait_head", "trylock_clean_tail"]
    assert not head[0][0].words[0] & PPC_LOCKED_VAL and head[1][0].words[0] & PPC_LOCKED_VAL  # read free, lost
    assert all(s.threads[0].frames[0].arg == (0, False) for s, _ in head)  # no spin counted, no must-queue
    assert not any(s.words[0] & PPC_MUST_Q_VAL for s, _ in cycle)
    assert any(a.actor == "C1" and a.label == "critical_section" for _, a in cycle)


def test_a_livelocking_variants_page_shows_its_lasso():
    """The site's page of a broken variant that breaks no invariant anywhere shows the livelock the
    verdict table records (and explores nothing for a counterexample that cannot exist)."""
    from kstep.views import course

    assert course.livelock_scenarios("vma-locks", "handoff-stops-first") == ["rwsem-handoff-livelock"]
    assert course.livelock_scenarios("vma-locks", "no-recheck") == []  # it breaks an invariant: that is its page
    ex = kstep.open("vma-locks", "rwsem-handoff-livelock", variant="handoff-stops-first")
    lasso = ex.liveness().livelock
    assert lasso.cycle_start == ex.scenario.cycle_start and lasso.lasso["kind"] == "livelock"
