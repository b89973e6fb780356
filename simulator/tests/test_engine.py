"""Engine units, on a toy model small enough to reason about by hand: two threads increment a
shared counter with a separate load and store (the lost update from OSTEP's first chapters)."""

import json
from typing import NamedTuple

import pytest

from kstep.engine import (ASSERTION, HARM, Frame, Inline, Invariant, Program, ProgramModel, Random, Replay,
                          RoundRobin, Scripted, SplitMix64, Variant, explore, parse_schedule, push, set_thread,
                          simulate)
from kstep.engine import replay
from kstep.engine.timed import Timed
from kstep.scenario_spec.scenario import Int, Key, Table
from kstep.engine.schedule import LONGEST_RUN
from kstep.files import write_text
from kstep.engine.prng import BELOW_VECTORS, VECTORS
from kstep.errors import UserError


class T(NamedTuple):
    name: str
    frames: tuple
    reg: int = 0


class S(NamedTuple):
    threads: tuple
    counter: int
    lock: int = -1


prog = Program()


@prog.call("increment")
def increment(s, i, arg):
    return (Frame("load"), Frame("store"))


@prog.step("load", "mm/memory.c:handle_mm_fault", "load the counter")
def load(s, i, arg):
    return set_thread(s, i, s.threads[i]._replace(reg=s.counter))


@prog.step("store", "mm/memory.c:handle_mm_fault", "store counter + 1")
def store(s, i, arg):
    return s._replace(counter=s.threads[i].reg + 1)


@prog.step("lock", "kernel/locking/rwsem.c:down_write", "take the lock", cost=0)
def lock(s, i, arg):
    return s._replace(lock=i)


@prog.guard("lock")
def lock_free(s, i, arg):
    return s.lock == -1


@prog.step("unlock", "kernel/locking/rwsem.c:up_write", "drop the lock")
def unlock(s, i, arg):
    return s._replace(lock=-1)


def locked_increment(s, i, arg):
    return (Frame("lock"), Frame("load"), Frame("store"), Frame("unlock"))


def deadlocking_increment(s, i, arg):
    return (Frame("lock"), Frame("load"), Frame("store"))  # never unlocks


def no_lost_update(s):
    if all(not t.frames for t in s.threads) and s.counter != len(s.threads):
        return f"counter is {s.counter} after {len(s.threads)} increments"
    return None


class Counter(ProgramModel):
    name = "counter"
    program = prog
    default_variant = "racy"
    variants = {
        "racy": Variant.bug("racy", "load and store as separate steps"),
        "locked": Variant.implementation("locked", "under a lock", replaces={"increment": locked_increment}),
        "deadlock": Variant.bug("deadlock", "forgets to unlock", increment=deadlocking_increment),
    }
    invariants = [Invariant("no-lost-update", "every increment counts", no_lost_update, kind=HARM)]
    scenario_schema = Table({"threads": Key(Int(1, 4), 2)})

    def initial(self, config):
        n = config.get("threads", 2)
        return self.start(S(tuple(T(f"T{k}", (Frame("increment"),)) for k in range(n)), 0))


def test_splitmix64_matches_published_vectors():
    for seed, outputs in VECTORS:
        g = SplitMix64(seed)
        assert tuple(g.next() for _ in outputs) == outputs


def test_below_matches_its_vectors():
    for seed, n, outputs in BELOW_VECTORS:
        g = SplitMix64(seed)
        assert tuple(g.below(n) for _ in outputs) == outputs


def test_below_stays_in_range_and_covers_it():
    g = SplitMix64(7)
    draws = [g.below(3) for _ in range(300)]
    assert set(draws) == {0, 1, 2}
    with pytest.raises(ValueError):
        g.below(0)


def test_calls_expand_lazily_into_steps():
    m = Counter()
    s = m.initial({})
    assert [f.label for f in s.threads[0].frames] == ["load", "store"]
    assert [str(a) for a in m.actions(s)] == ["T0:load", "T1:load"]


def test_variant_replaces_only_known_labels():
    with pytest.raises(ValueError):
        prog.replaced({"no-such-label": lambda s, i, a: s})


def test_a_program_includes_another_but_the_labels_it_registers_itself():
    built_on = Program()
    built_on.include(prog, without=("store",))
    assert set(built_on.steps) == set(prog.steps) - {"store"} and set(built_on.calls) == {"increment"}
    assert built_on.steps["load"] is prog.steps["load"]
    built_on.step("store", "mm/memory.c:handle_mm_fault", "store counter + 2")(lambda s, i, a: s)
    with pytest.raises(ValueError, match="registered twice"):
        built_on.include(prog, without=("store",))
    with pytest.raises(ValueError, match="unknown labels: nothing"):
        Program().include(prog, without=("nothing",))


class CompiledOut(Counter):
    variants = {"no-lock": Variant.implementation(
        "no-lock", "built without the lock: lock and unlock are empty inlines",
        replaces={"increment": locked_increment, "lock": Inline(lambda s, i, a: ()),
                  "unlock": Inline(lambda s, i, a: ())})}
    default_variant = "no-lock"


def test_an_inline_replacement_makes_a_step_a_call_that_takes_no_step():
    """A kernel built without a feature compiles a function to an empty inline: no step, same source."""
    m = CompiledOut()
    assert "lock" not in m.sources() and str(m.locations()["lock"]) == "kernel/locking/rwsem.c:down_write"
    tr = simulate(m, m.initial({"threads": 1}), RoundRobin())
    assert [a.label for a in tr.actions] == ["load", "store"]


def test_scripted_schedule_reproduces_the_lost_update():
    m = Counter()
    tr = simulate(m, m.initial({}), Scripted("T0 T1 T0 T1"))
    assert tr.violation.invariant == "no-lost-update"
    assert tr.states[-1].counter == 1


def test_schedule_errors_are_user_errors():
    for bad in ("", "T0*0", "T0*x", "!"):
        with pytest.raises(UserError):
            parse_schedule(bad)
    m = Counter("locked")
    with pytest.raises(UserError, match="blocked"):
        simulate(m, m.initial({}), Scripted("T0 T1"))
    with pytest.raises(UserError, match="not an actor"):
        simulate(m, m.initial({}), Scripted("T9"))


def test_round_robin_counts_rounds_and_blocked_rounds():
    m = Counter("locked")
    tr = simulate(m, m.initial({}), RoundRobin())
    assert tr.outcome == "finished" and tr.states[-1].counter == 2
    # Round 0: T0 locks (cost 0, same turn) and loads; T1 is blocked.  Round 1: T0 stores, T1
    # blocked.  Round 2: T0 unlocks, then T1 locks and loads in its turn.  Rounds 3, 4: T1 alone.
    assert tr.stats["blocked_rounds"] == {"T1": 2}
    assert tr.stats["rounds"] == 5
    assert list(tr.ticks) == [0, 0, 1, 2, 2, 2, 3, 4]


def test_explore_finds_the_shortest_counterexample():
    m = Counter()
    r = explore(m, m.initial({}))
    assert r.violation.invariant == "no-lost-update"
    assert [str(a) for a in r.counterexample.actions] == ["T0:load", "T1:load", "T0:store", "T1:store"]
    assert not r.exhausted and not r.clean


def one_at_a_time(s):
    """The rule the lock enforces: no two threads between their load and their store."""
    inside = [t.name for t in s.threads if t.frames and t.frames[0].label == "store"]
    return f"{' and '.join(inside)} have both loaded" if len(inside) > 1 else None


def counter_untouched(s):
    return f"counter is {s.counter}" if s.counter else None


def with_checks(variant, *invariants):
    m = Counter(variant)
    m.invariants = list(invariants)
    return m


def test_explore_looks_for_harm_before_broken_assertions():
    harm = Counter.invariants[0]
    rule = Invariant("one-at-a-time", "loads and stores do not interleave", one_at_a_time, kind=ASSERTION)
    m = with_checks("racy", rule, harm)
    r = explore(m, m.initial({}))
    assert r.harm and r.violation.invariant == "no-lost-update" and r.violation.step == 4
    assert [str(a) for a in r.counterexample.actions] == ["T0:load", "T1:load", "T0:store", "T1:store"]
    first = explore(m, m.initial({}), harm_first=False)
    assert not first.harm and first.violation.invariant == "one-at-a-time" and first.violation.step == 2
    # the scripted run breaks the rule at step 2 and goes on to the harm at step 4, which it keeps
    tr = simulate(m, m.initial({}), Scripted("T0 T1 T0 T1"))
    assert (tr.violation.invariant, tr.violation.step, tr.outcome) == ("no-lost-update", 4, "violation")


def test_explore_reports_a_broken_assertion_only_after_ruling_harm_out():
    m = with_checks("locked", Invariant("counter-untouched", "nothing stores", counter_untouched),
                    Counter.invariants[0])
    r = explore(m, m.initial({}))
    assert r.exhausted and not r.harm and not r.clean
    assert r.violation.invariant == "counter-untouched" and r.violation.kind == ASSERTION
    assert [a.label for a in r.counterexample.actions] == ["lock", "load", "store"]
    assert r.violation.step == len(r.counterexample) == 3
    bounded = explore(m, m.initial({}), max_states=6)
    assert not bounded.exhausted and bounded.violation.invariant == "counter-untouched"
    run = simulate(m, m.initial({}), RoundRobin())
    assert run.outcome == "violation" and run.violation.step == 3 and len(run) > 3


def test_explore_is_clean_only_when_exhausted():
    m = Counter("locked")
    r = explore(m, m.initial({"threads": 3}))
    assert r.exhausted and r.clean and r.violation is None
    bounded = explore(m, m.initial({"threads": 3}), max_states=5)
    assert not bounded.exhausted and not bounded.clean and bounded.violation is None


def test_explore_stores_max_states_then_stops_at_the_first_successor_not_stored():
    m = Counter("locked")
    produced = []
    step = m.step
    m.step = lambda s, a: produced.append(step(s, a)) or produced[-1]
    s0 = m.initial({"threads": 4})
    r = explore(m, s0, max_states=20)
    assert r.states == 20 and not r.exhausted and r.violation is None
    stored = [s0]
    for t in produced:
        if t not in stored and len(stored) < 20:
            stored.append(t)
    # the stored states were expanded on (past the 20th) until a successor was not among them
    assert produced[-1] not in stored and all(t in stored for t in produced[:-1])
    assert len(produced) == r.transitions


def test_explore_reports_deadlock_with_its_trace():
    m = Counter("deadlock")
    r = explore(m, m.initial({}))
    assert r.violation.invariant == "deadlock"
    assert r.counterexample.outcome == "deadlock"
    assert len(r.counterexample) == 3  # lock, load, store: then the other thread waits forever


def test_random_scheduler_is_deterministic_per_seed():
    m = Counter()
    a = simulate(m, m.initial({"threads": 4}), Random(5), check=False)
    b = simulate(m, m.initial({"threads": 4}), Random(5), check=False)
    c = [simulate(m, m.initial({"threads": 4}), Random(seed), check=False).actions for seed in range(8)]
    assert a.actions == b.actions
    assert len({tuple(x) for x in c}) > 1


def test_push_puts_frames_first():
    s = S((T("A", (Frame("store"),)),), 0)
    s = push(s, 0, (Frame("load"),))
    assert [f.label for f in s.threads[0].frames] == ["load", "store"]


def write_trace(tmp_path, tr, m, change=None):
    """``tr`` written as a v2 file, then (optionally) edited as JSON data."""
    path = tmp_path / "t.json"
    tr.write(m, path)
    if change:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return path


def load_counter(path, m):
    return replay.load(path, lambda mech, variant: type(m)(variant))


@pytest.mark.parametrize("scheduler", [lambda: Scripted("T0 T1 T0 T1"), lambda: Random(3), RoundRobin])
def test_a_trace_file_is_run_again_and_matches(tmp_path, scheduler):
    m = Counter()
    tr = simulate(m, m.initial({"threads": 2}), scheduler(), config={"threads": 2}, max_steps=50)
    data = json.loads(write_trace(tmp_path, tr, m).read_text())
    replay.validate(data)
    assert data["version"] == 2 and list(data)[-1] == "steps"
    assert data["scheduler"] == {**scheduler().params(), "max_steps": 50}
    again, _ = load_counter(tmp_path / "t.json", m)
    assert (again.actions, again.ticks, again.states, again.stats, again.outcome, again.violation) == \
        (tr.actions, tr.ticks, tr.states, tr.stats, tr.outcome, tr.violation)


def test_an_explore_counterexample_is_its_exact_actions_run_again(tmp_path):
    m = Counter()
    cex = explore(m, m.initial({"threads": 2}), config={"threads": 2}).counterexample
    assert cex.scheduler == "explore" and cex.script == "T0:load T1:load T0:store T1:store"
    assert cex.max_steps == len(cex) == 4 and cex.outcome == "violation"
    again, _ = load_counter(write_trace(tmp_path, cex, m), m)
    assert again.actions == cex.actions and again.violation == cex.violation


TAMPERED = [  # (what is changed, the words the one-line refusal must contain)
    (lambda d: d["steps"][2]["state"].update(counter=7), "step 3 (T0:store): records a state the model does not reach"),
    (lambda d: d["steps"][1].update(actor="T0"), "step 2: actor is 'T0', the scheduler's run has 'T1'"),
    (lambda d: d["steps"][0].update(tick=9), "step 1: tick is 9, the scheduler's run has 1"),
    (lambda d: d["steps"].pop(), "steps: the file ends after step 3, the scheduler's run goes on to step 4"),
    (lambda d: d["steps"].append(d["steps"][-1]), "step 5: the file goes on after the run ends at step 4"),
    (lambda d: d.update(outcome="finished"), "outcome is \"finished\", but the run ends with \"violation\""),
    (lambda d: d.update(violation=None), "violation is null, but the run ends with {"),
    (lambda d: d["violation"].update(message="fine"), "violation is {"),
    (lambda d: d.update(stats={"sigsegv": 42}), "stats is {\"sigsegv\": 42}, but the run ends with {}"),
    (lambda d: d["scheduler"].update(script="T1 T0 T1 T0"), "step 1: actor is 'T0', the scheduler's run has 'T1'"),
    (lambda d: d["scheduler"].update(max_steps=2), "step 3: the file goes on after the run ends at step 2"),
    (lambda d: d["scheduler"].update(kind="random"), "scheduler: a random scheduler needs seed"),
    (lambda d: d["scheduler"].update(seed=2**64), "at scheduler/seed"),
    (lambda d: d["scheduler"].update(max_steps=10**6 + 1), "at scheduler/max_steps"),
    (lambda d: d.update(version=1), "trace format version 1; this kstep reads version 2 only"),
    (lambda d: d.update(initial={"threads": []}), "initial state does not match"),
    (lambda d: d.update(actors=["T0"]), "the actors ['T0'] are not the config's ['T0', 'T1']"),
]


@pytest.mark.parametrize("change,says", TAMPERED)
def test_a_trace_that_says_something_its_run_does_not_is_refused(tmp_path, change, says):
    m = Counter()
    tr = simulate(m, m.initial({"threads": 2}), Scripted("T0 T1 T0 T1"), config={"threads": 2})
    assert tr.violation is not None  # the lost update: a verdict worth lying about
    path = write_trace(tmp_path, tr, m, change)
    with pytest.raises(UserError) as e:
        load_counter(path, m)
    assert says in str(e.value)


def test_a_clean_trace_cannot_be_given_a_violation_and_a_prefix_cannot_claim_the_end(tmp_path):
    m = Counter("locked")
    tr = simulate(m, m.initial({"threads": 2}), RoundRobin(), config={"threads": 2})
    assert tr.violation is None and tr.outcome == "finished"
    forged = {"invariant": "no-lost-update", "message": "counter is 1 after 2 increments", "kind": "harm", "step": 4}
    with pytest.raises(UserError, match='outcome is "violation", but the run ends with "finished"'):
        load_counter(write_trace(tmp_path, tr, m, lambda d: d.update(violation=forged, outcome="violation")), m)
    with pytest.raises(UserError, match="violation is {.*but the run ends with null"):
        load_counter(write_trace(tmp_path, tr, m, lambda d: d.update(violation=forged)), m)
    with pytest.raises(UserError, match="the file ends after step 0"):
        load_counter(write_trace(tmp_path, tr, m, lambda d: d.update(steps=[])), m)


def test_the_schema_and_the_engine_agree_on_the_longest_run():
    props = replay.schema()["properties"]["scheduler"]["properties"]
    assert props["max_steps"]["maximum"] == LONGEST_RUN
    assert set(props["kind"]["enum"]) == {cls.name for cls in (Random, RoundRobin, Scripted, Replay, Timed)}


def test_the_file_is_validated_whole_by_the_schema(tmp_path):
    m = Counter()
    tr = simulate(m, m.initial({"threads": 2}), Scripted("T0 T1 T0 T1"), config={"threads": 2})
    path = write_trace(tmp_path, tr, m)
    for mutate in (lambda d: d.pop("steps"), lambda d: d.update(version=1),
                   lambda d: d["steps"][0].update(source="not a location"),
                   lambda d: d.update(outcome="great")):
        bad = json.loads(path.read_text())
        mutate(bad)
        with pytest.raises(UserError, match="not a kstep trace"):
            replay.validate(bad)


def test_write_never_creates_directories(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        write_text(tmp_path / "missing" / "t.json", "{}")
    target = tmp_path / "t.json"
    target.write_text("old")
    write_text(target, "new")
    assert target.read_text() == "new"


def test_columns_index_actors_and_labels():
    m = Counter()
    tr = simulate(m, m.initial({}), Scripted("T0 T1 T0 T1"))
    cols = tr.columns(m)
    assert cols["actors"] == ["T0", "T1"]
    assert list(cols["actor"]) == [-1, 0, 1, 0, 1]
    assert [cols["labels"][k] for k in cols["label"][1:]] == ["load", "load", "store", "store"]


# --- optional steps: a step a thread may take besides its next one ---------------------------------

class N(NamedTuple):
    name: str
    frames: tuple
    noted: bool = False


class NS(NamedTuple):
    threads: tuple
    lock: int = -1


nprog = prog.replaced({})  # the toy's lock and unlock, and the two steps below


def noted(s, i):
    return set_thread(s, i, s.threads[i]._replace(noted=True))


@nprog.step("note", "kernel/rcu/tree.c:rcu_report_qs_rdp", "note this thread", optional=True, cost=0)
def note(s, i):
    return noted(s, i)


@nprog.guard("note")
def may_note(s):
    return sum(1 << i for i, t in enumerate(s.threads) if not t.noted)


@nprog.step("scan", "kernel/rcu/tree.c:rcu_gp_fqs", "note every idle thread", daemon=True, idle=True)
def scan(s, idle):
    for i in range(len(s.threads)):
        if idle >> i & 1:
            s = noted(s, i)
    return s


@nprog.guard("scan")
def idle_unnoted(s, idle):
    return any(idle >> i & 1 and not t.noted for i, t in enumerate(s.threads))


class Noting(ProgramModel):
    name = "noting"
    program = nprog
    daemons = {"k": ("scan",)}
    default_variant = "ok"
    variants = {"ok": Variant.implementation("ok", "lock, then unlock"),
                "keeps": Variant.bug("keeps", "never drops the lock", unlock=lambda s, i, arg: s)}

    def initial(self, config):
        return self.start(NS(tuple(N(f"T{k}", (Frame("lock"), Frame("unlock"))) for k in range(2))))


def go(m, s, action):
    """Take the enabled action written ``actor:label``."""
    a = next(a for a in m.actions(s) if str(a) == action)
    return m.step(s, a)


def test_optional_steps_are_offered_only_while_the_next_step_is_enabled():
    m = Noting()
    s = m.initial({})
    assert [str(a) for a in m.actions(s)] == ["T0:lock", "T0:note", "T1:lock", "T1:note"]
    s = go(m, s, "T0:note")
    assert s.threads[0].noted and [f.label for f in s.threads[0].frames] == ["lock", "unlock"]  # stack kept
    s = go(m, s, "T0:lock")  # T1 is blocked now: it is offered no note, and the scan sees it idle
    assert [str(a) for a in m.actions(s)] == ["T0:unlock", "k:scan"]
    assert m.idle(s) == 0b10 and not m.done(s, "T1")
    s = go(m, go(m, go(m, s, "k:scan"), "T0:unlock"), "T1:lock")
    assert s.threads[1].noted and [str(a) for a in m.actions(s)] == ["T1:unlock"]
    s = go(m, s, "T1:unlock")
    assert m.finished(s) and m.actions(s) == []
    fresh = go(m, go(m, m.initial({}), "T0:lock"), "T0:unlock")  # T0 finished without noting
    assert m.idle(fresh) == 0b01 and m.done(fresh, "T0")
    assert [str(a) for a in m.actions(fresh)] == ["T1:lock", "T1:note", "k:scan"]


def test_an_optional_step_never_hides_a_deadlock():
    m = Noting("keeps")
    r = explore(m, m.initial({}))
    assert r.violation.invariant == "deadlock"
    assert "still waiting: T1" in r.violation.message


def test_schedulers_take_an_optional_step_only_when_named_or_first_in_a_turn():
    m = Noting()
    named = simulate(m, m.initial({}), Scripted("T0 T0:note T0"), check=False)
    assert [str(a) for a in named.actions[:3]] == ["T0:lock", "T0:note", "T0:unlock"]
    with pytest.raises(UserError, match="names T0:note, which is not enabled"):
        simulate(m, m.initial({}), Scripted("T0:note T0:note"))
    with pytest.raises(UserError, match="names T1, which is blocked"):
        simulate(m, m.initial({}), Scripted("T0 T1:note"))
    assert parse_schedule("T0:note*2 T1") == ["T0:note", "T0:note", "T1"]
    rr = simulate(m, m.initial({}), RoundRobin())
    # Each turn starts with the thread's optional step; note and lock cost 0, so T0 notes, locks
    # and unlocks in its turn of round 0, and then T1 does the same.
    assert [str(a) for a in rr.actions] == ["T0:note", "T0:lock", "T0:unlock", "T1:note", "T1:lock", "T1:unlock"]
    assert rr.ticks == [0] * 6
