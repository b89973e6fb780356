"""explore --memory-model tso on whole mechanism models (engine/memory_model.py): a store->load
reordering only tso allows is found there and not under sc; the correct mechanisms stay clean; a
byte store drains without overwriting its word's other bytes; the wrapped model keeps to its
footprints; and every state invariant is checked on a state the drains alone reach."""

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from support import bundled_runs, load, reachable
from test_footprints import Known, footprint_problems, problems

from kstep.engine import (FULL, HARM, Action, Footprint, Frame, Invariant, Program, ProgramModel, Renamed, Source,
                          Variant, explore, set_thread)
from kstep.engine import memory_model as memory_model_module
from kstep.engine.codec import Codec
from kstep.engine.memory_model import MemoryAccess, StoreBuffered, apply, memory_model
from kstep.engine.symmetry import Symmetry
from kstep.models import MODELS, make_model
from kstep.models.qspinlock.qspinlock import set_locked

ROOT = Path(__file__).resolve().parents[2]


# -- a hand-built TSO-only bug: Dekker's entry protocol (the SB shape) ------------------------------

class Cpu(NamedTuple):
    name: str
    frames: tuple
    saw: int = 0  # the other CPU's flag as this one read it


class Dekker(NamedTuple):
    threads: tuple
    flags: tuple  # shared memory: flag[i] = 1 while CPU i wants in
    ghost_inside: frozenset  # the CPUs in the critical section


OUT = Source.outside("the test's Dekker entry")
dekker = Program()
dekker.call("enter")(lambda s, i, arg: (Frame("want"), Frame("fence"), Frame("look"), Frame("critical")))


@dekker.step("want", OUT, "flag[me] = 1", footprint=lambda s, i, arg: ((), {("flags", i)}),
             store=lambda s, i, arg: (("flags", i, 0xffffffff),))
def want(s, i, arg):
    return s._replace(flags=s.flags[:i] + (1,) + s.flags[i + 1:])


@dekker.step("fence", OUT, "smp_mb()", cost=0, footprint=lambda s, i, arg: ((), ()), order=FULL)
def fence(s, i, arg):
    return s


@dekker.step("look", OUT, "read flag[other]", footprint=lambda s, i, arg: ({("flags", 1 - i)}, ()))
def look(s, i, arg):
    return set_thread(s, i, s.threads[i]._replace(saw=s.flags[1 - i]))


@dekker.step("critical", OUT, "enter if the other did not want in",
             footprint=lambda s, i, arg: ((), {("ghost_inside",)}))
def critical(s, i, arg):
    if s.threads[i].saw:
        return s  # back off for good: enough for the shape
    return s._replace(ghost_inside=s.ghost_inside | {i})


class DekkerModel(ProgramModel, MemoryAccess):
    name = "dekker"
    program = dekker
    memory_fields = ("flags",)
    default_variant = "mb"
    variants = {"mb": Variant.implementation("mb", "smp_mb() between the store and the load"),
                "no-mb": Variant.bug("no-mb", "no fence: the store may wait in the buffer past the load",
                                     fence=lambda s, i, arg: s)}
    invariants = (Invariant("mutual-exclusion", "at most one CPU inside",
                            lambda s: "both CPUs inside" if len(s.ghost_inside) > 1 else None,
                            kind=HARM, reads=("ghost_inside",)),)

    def __init__(self, variant=None):
        super().__init__(variant)
        if self.variant.broken:  # without the fence the step is a plain one again
            self._steps["fence"] = self._steps["fence"]._replace(order="plain")

    def unstarted(self, config):
        return Dekker((Cpu("P0", (Frame("enter"),)), Cpu("P1", (Frame("enter"),))), (0, 0), frozenset())


@pytest.mark.parametrize("variant,sc_clean,tso_clean", [("mb", True, True), ("no-mb", True, False)])
def test_a_store_load_reordering_is_found_under_tso_and_only_there(variant, sc_clean, tso_clean):
    m = DekkerModel(variant)
    for name, clean in (("sc", sc_clean), ("tso", tso_clean)):
        w = memory_model(name, m, 2)
        r = explore(w, w.initial({}))
        assert r.clean if clean else r.violation.invariant == "mutual-exclusion", (name, r.violation)
    w = memory_model("tso", m, 2)
    r = explore(w, w.initial({}))
    if not tso_clean:  # the counterexample: both stores still buffered when both loads run
        labels = [str(a) for a in r.counterexample.actions]
        looks = [i for i, a in enumerate(labels) if a.endswith(":look")]
        assert len(looks) == 2 and not any(a.startswith("SB") for a in labels[:looks[-1]]), labels


def test_the_drained_state_of_every_reachable_state_is_reached_by_drains_alone():
    w = memory_model("tso", DekkerModel("no-mb"), 2)
    states = set(reachable(w, w.initial({})))
    buffered = [s for s in states if any(s.store_buffers)]
    assert buffered
    for s in buffered:
        t = s
        while any(t.store_buffers):  # drain CPU 0's buffer first, then CPU 1's, as drained() does
            b = next(b for b, buf in enumerate(t.store_buffers) if buf)
            t = w.step(t, next(a for a in w.actions(t) if a.actor == f"SB{b}"))
        assert t in states and w.memory(t) == w.drained(s)


# -- the mechanisms ------------------------------------------------------------------------------

@pytest.mark.parametrize("mech,name", [("qspinlock", "two-waiters"), ("vma-locks", "recheck-race")])
def test_the_correct_mechanisms_stay_clean_under_tso_with_stores_buffered(mech, name):
    m, sc, s0 = load(mech, name)
    w = memory_model("tso", m, sc.store_buffer)
    r = explore(w, w.initial(sc.config))
    assert r.clean and r.states > explore(m, s0).states, r.violation  # the buffers' contents are state too


def test_a_byte_store_drains_without_overwriting_the_tail():
    m, sc, _ = load("qspinlock", "two-waiters")
    w = StoreBuffered(m, 2)
    s = w.initial(sc.config)
    mem = w.memory(s)
    word = 0x00040000  # cpu0/idx0 queued, locked and pending clear: the head sets locked
    v = mem._replace(words=(word,), threads=(mem.threads[0]._replace(lock=0),) + mem.threads[1:])
    stores = w.stores(v, set_locked(v, 0, None), w._declared(v, Action("C0", "set_locked")))
    assert stores == ((v._fields.index("words"), 0, -1, 0xff, 1),)
    later = v._replace(words=(0x00080000,))  # meanwhile another CPU's xchg_tail put its tail in
    assert apply(later, stores).words == (0x00080001,)


def pending_owner_stores(word, model=None):
    """(the tso model, the state after C0's clear_pending_set_locked on lock A when its CPU reads ``word``)."""
    m, sc, _ = load("qspinlock", "pending-path")
    w = StoreBuffered(model or m, 2)
    mem = w.memory(w.initial(sc.config))
    c0 = mem.threads[0]._replace(frames=(Frame("clear_pending_set_locked"),), lock=0)
    v = mem._replace(words=(word,), threads=(c0,) + mem.threads[1:])
    after = w.step(w._with(v, ((),) * len(mem.count)), Action("C0", "clear_pending_set_locked"))
    return w, after


def test_clear_pending_set_locked_buffers_the_16_bit_store_the_kernel_makes():
    """WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL) writes both bytes of the halfword, also a pending
    byte that is already 0 where this CPU reads it (a broken head's claim cleared it): its drain
    clears the pending bit another CPU set meanwhile, as x86's 16-bit store does."""
    w, after = pending_owner_stores(0x00000000)
    assert after.store_buffers[0] == ((after._fields.index("words"), 0, -1, 0xffff, 1),)
    assert w.entry_text(after, after.store_buffers[0][0]) == "A->locked_pending = 1"
    meanwhile = w._with(w.memory(after)._replace(words=(0x00000100,)), after.store_buffers)  # C1 set pending
    drained = w.step(meanwhile, Action("SB0", "drain_store_buffer"))
    assert drained.words == (0x00000001,)
    w, after = pending_owner_stores(0x00000001)  # the same store of what the word holds is a store too
    assert after.store_buffers[0] == ((after._fields.index("words"), 0, -1, 0xffff, 1),)


def test_a_step_that_changes_a_word_outside_the_store_it_declares_is_refused(monkeypatch):
    from kstep.models.qspinlock import qspinlock as code
    m = make_model("qspinlock")
    steps = m._steps
    monkeypatch.setitem(steps, "clear_pending_set_locked",
                        steps["clear_pending_set_locked"]._replace(store=code.store_to("locked")))
    with pytest.raises(ValueError, match=r"changes words\[0\] from 0x100 to 0x1, outside the store of bytes 0xff"):
        pending_owner_stores(0x00000100, m)
    monkeypatch.setitem(steps, "clear_pending_set_locked", steps["clear_pending_set_locked"]._replace(store=None))
    with pytest.raises(ValueError, match=r"changes words\[0\] from 0x100 to 0x1 and declares no store there"):
        pending_owner_stores(0x00000100, m)


def test_a_locked_step_waits_for_an_empty_buffer_and_a_plain_one_does_not():
    w = memory_model("tso", DekkerModel("mb"), 2)
    s = w.step(w.initial({}), w.actions(w.initial({}))[0])  # P0: want, buffered
    assert s.store_buffers[0] and s.flags == (0, 0)
    assert "P0:fence" not in map(str, w.actions(s)) and "SB0:drain_store_buffer" in map(str, w.actions(s))


FOOTPRINT_RUNS = [("qspinlock", "two-waiters"), ("qspinlock", "pending-path"), ("vma-locks", "rwsem-handoff")]


@pytest.mark.parametrize("mech,name", FOOTPRINT_RUNS)
def test_the_wrapped_steps_keep_to_their_footprints(mech, name):
    m, sc, _ = load(mech, name)
    w = memory_model("tso", m, sc.store_buffer)
    known = Known(w, w.initial(sc.config))
    for n in known.reachable():
        assert footprint_problems(known, n) == [], n.state


def test_the_footprint_check_catches_a_drain_that_hides_its_location():
    m, sc, _ = load("qspinlock", "two-waiters")
    w = memory_model("tso", m, sc.store_buffer)
    states = list(reachable(w, w.initial(sc.config)))
    own = StoreBuffered.footprint

    def hidden(self, state, action):
        fp = own(self, state, action)
        return fp._replace(writes=frozenset(x for x in fp.writes if x[0] != "words")) if fp else fp

    w.footprint = hidden.__get__(w)
    assert any("drain_store_buffer changed ('words', 0), undeclared" in p for p in problems(w, states[0], states[:300]))


def test_the_footprint_check_catches_a_drain_future_that_leaves_out_its_threads_stores():
    m, sc, _ = load("qspinlock", "two-waiters")
    w = memory_model("tso", m, sc.store_buffer)
    states = list(reachable(w, w.initial(sc.config)))
    assert not problems(w, states[0], states[:300])
    own = StoreBuffered.future_footprint

    def forgetful(self, state, actor):  # as if a drain wrote only what its buffer holds now
        if not actor.startswith("SB"):
            return own(self, state, actor)
        b = int(actor[2:])
        now = frozenset({("store_buffers", b)} | {self._location(self.memory(state), e) for e in state[-1][b]})
        return Footprint(now, now)

    w.future_footprint = forgetful.__get__(w)
    assert any("SB0's future footprint grew" in p for p in problems(w, states[0], states[:300]))


ORBIT_RUNS = ["two-waiters", "set-locked-contended"]


@pytest.mark.parametrize("name", ORBIT_RUNS)
def test_the_wrapped_orbits_cover_the_unreduced_state_space_exactly(name):
    assert orbit_problems(*wrapped_run(name)) == []


def wrapped_run(name):
    m, sc, _ = load("qspinlock", name)
    w = memory_model("tso", m, sc.store_buffer)
    s0 = w.initial(sc.config)
    return w, s0, Symmetry(w, s0, Codec(s0))


def orbit_problems(w, s0, group):
    """How the wrapped model's symmetry breaks the orbit checks of test_symmetry, as sentences."""
    assert group, "no interchangeable CPUs: nothing to check"
    everything = set(reachable(w, s0))
    assert any(len(buf) > 1 for s in everything for buf in s.store_buffers)  # entries to rename
    codec = group.codec
    codes = {codec.encode(s) for s in everything}
    out = [f"a renaming of {s} is unreachable" for s in everything if not group.orbit(s) <= codes]
    reps = {group.canon(s) for s in everything}
    if sum(len(group.orbit(codec.decode(r))) for r in reps) != len(everything):
        out.append("the orbits of the representatives do not partition the states")
    out += [f"the renamed encoding of {s} is not the encoding of the renamed state" for s in everything
            if group.canon(s) != min(codec.encode(w.permute(s, p)) for p in group.perms(s))]
    return out


def test_the_orbit_check_catches_buffer_entries_left_unrenamed(monkeypatch):
    monkeypatch.setattr(memory_model_module, "_EntryRenaming", lambda how, first: lambda entry: entry)
    assert any("unreachable" in p for p in orbit_problems(*wrapped_run("set-locked-contended")))


def test_the_orbit_check_catches_buffers_that_stay_with_their_index(monkeypatch):
    renaming = StoreBuffered.renaming
    monkeypatch.setattr(StoreBuffered, "renaming", lambda self, s, perm: renaming(self, s, perm)[:-1] + (
        Renamed(element=renaming(self, s, perm)[-1].element),))
    assert any("unreachable" in p for p in orbit_problems(*wrapped_run("two-waiters")))


QUICK_REDUCED = {("qspinlock", "two-waiters", "v6.12"), ("qspinlock", "two-waiters", "head-ignores-pending"),
                 ("qspinlock", "set-locked-contended", "v6.12"), ("vma-locks", "recheck-race", "v6.12")}
# Every variant that runs under tso (not the powerpc code); an unreduced tso search of more than
# 10,000 sc states is make test-heavy's.
REDUCED_RUNS = [p if tuple(p.values) in QUICK_REDUCED else pytest.param(*p.values, marks=(*p.marks, pytest.mark.slow))
                for p in bundled_runs(small=3_000, every_variant=True, heavy=10_000)
                if p.values[0] in ("qspinlock", "vma-locks")
                and not make_model(p.values[0], p.values[2]).refuses_memory_model("tso")]


@pytest.mark.parametrize("mech,name,variant", REDUCED_RUNS)
def test_reductions_keep_every_tso_verdict(mech, name, variant):
    m, sc, _ = load(mech, name, variant)
    w = memory_model("tso", m, sc.store_buffer)
    full = explore(w, w.initial(sc.config), symmetry=False, por=False)
    reduced = explore(w, w.initial(sc.config))
    assert reduced.verdict == full.verdict and reduced.states <= full.states
    if full.violation is not None:
        assert (reduced.violation.invariant, reduced.violation.kind) == (full.violation.invariant, full.violation.kind)
        assert len(reduced.counterexample) == len(full.counterexample)


def test_a_variant_only_weaker_models_break_names_its_litmus_test(capsys):
    from kstep.cli import main
    assert main(["explore", "qspinlock", "--scenario", "pending-path", "--memory-model", "tso",
                 "--variant", "no-wmb-before-xchg-tail"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "qspinlock-init-before-tail-no-wmb" in out and "arm64 Sometimes" in out and "tso Never" in out
    assert "store buffers of 2 entries per CPU" in out


def test_tso_refuses_powerpc_code_and_models_without_shared_memory(capsys):
    from kstep.cli import main
    assert main(["explore", "qspinlock", "--scenario", "powerpc-stealing", "--memory-model", "tso"]) == 2
    assert main(["explore", "damon", "--scenario", "ethp", "--memory-model", "tso"]) == 2
    err = capsys.readouterr().err
    assert "runs on POWER" in err and "damon declares no shared memory fields" in err


def test_a_tso_counterexample_is_saved_and_played_again_with_its_store_buffers(tmp_path, capsys):
    from kstep.cli import main
    path = tmp_path / "cex.json"
    assert main(["explore", "qspinlock", "--scenario", "two-waiters", "--memory-model", "tso", "--variant",
                 "head-ignores-pending", "--json", str(path)]) == 1
    assert '"memory_model": {"name": "tso", "store_buffer": 2}' in path.read_text()
    capsys.readouterr()
    assert main(["show", str(path)]) == 1
    out = capsys.readouterr().out
    assert "drain_store_buffer" in out and "CPU0: A->locked = 0" in out
    path.write_text(path.read_text().replace('"store_buffer": 2}', '"store_buffer": 0}'))
    assert main(["show", str(path)]) == 2


def test_run_takes_the_memory_model_and_follows_a_scripted_schedule_as_far_as_it_fits(tmp_path, capsys):
    from kstep.cli import main
    path = tmp_path / "run.json"
    assert main(["run", "qspinlock", "--scenario", "two-waiters", "--memory-model", "tso", "-c",
                 "--json", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "memory model: tso, store buffers of 2 entries per CPU" in out
    assert "under v6.12 with tso its schedule entry 11 names C1, which is blocked" in out  # C0's unlock waits
    assert '"memory_model": {"name": "tso", "store_buffer": 2}' in path.read_text()
    assert main(["run", "damon", "--scenario", "ethp", "--memory-model", "tso"]) == 2
    assert "damon declares no shared memory fields" in capsys.readouterr().err


# -- the committed verdicts' tso column --------------------------------------------------------------

def tso_rows():
    from importlib import resources
    table = json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())
    return table, [(mech, name, variant, row["tso"]) for mech in table["verdicts"] for name in table["verdicts"][mech]
                   for variant, row in table["verdicts"][mech][name].items() if "tso" in row]


TSO_TABLED = ["qspinlock", "vma-locks"]  # fork-batch's rows record why it refuses tso
SMALL = {"qspinlock": 150, "vma-locks": 400}  # states: the searches a test can afford to redo


def test_every_variant_of_the_shared_memory_mechanisms_has_a_tso_verdict():
    table, rows = tso_rows()
    for mech in TSO_TABLED:
        for name, by_variant in table["verdicts"][mech].items():
            for variant, row in by_variant.items():
                assert row["verdict"] == "not explored" or "tso" in row, (mech, name, variant)


@pytest.mark.parametrize("mech", TSO_TABLED)
def test_the_correct_variants_are_clean_under_sc_and_tso_on_every_bundled_scenario(mech):
    """Every kernel release and other implementation (no bug variant) in the committed table: clean (which
    only an exhausted search says) under both memory models on every explorable scenario; a variant
    written for another machine's code is refused under tso instead."""
    table, _ = tso_rows()
    correct = [n for n, v in MODELS[mech].variants.items() if not v.broken]
    for name, by_variant in table["verdicts"][mech].items():
        for variant in correct:
            row = by_variant[variant]
            if row["verdict"] == "not explored":  # written for its scripted run (explorable = false)
                continue
            tso = row["tso"]["verdict"]
            assert row["verdict"] == "clean" and (tso == "clean" or tso == "refused" and "why" in row["tso"]), \
                (name, variant, row)


@pytest.mark.parametrize("mech", TSO_TABLED)
def test_the_small_tso_verdicts_are_what_a_search_finds_now(mech):
    table, rows = tso_rows()
    small = [r for r in rows if r[0] == mech and r[3]["verdict"] != "refused" and r[3]["states"] <= SMALL[mech]]
    assert len(small) >= 40
    for _, name, variant, row in small[::8]:  # a sample spread over the scenarios: scripts/verdicts has them all
        m, sc, _ = load(mech, name, variant)
        w = memory_model("tso", m, sc.store_buffer)
        r = explore(w, w.initial(sc.config), max_states=table["tso_max_states"])
        found = {"verdict": r.verdict, "states": r.states, "exhausted": r.exhausted, "store_buffer": sc.store_buffer}
        if r.violation is not None:
            found.update(invariant=r.violation.invariant, kind=r.violation.kind, steps=len(r.counterexample))
        assert found == row, (name, variant)


def test_verdicts_diff_names_a_changed_tso_verdict(tmp_path):
    table, rows = tso_rows()
    mech, name, variant, row = next(r for r in rows if r[3]["verdict"] == "clean")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(table))
    table["verdicts"][mech][name][variant]["tso"] = {**row, "verdict": "bounded"}
    new = tmp_path / "new.json"
    new.write_text(json.dumps(table))
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "verdicts"), "--diff", str(old), str(new)],
                         capture_output=True, text=True, check=True).stdout
    assert f"{mech} {name} {variant}: " in out and f"; tso: bounded ({row['states']} states), store buffers of" in out
    assert "1 of " in out
