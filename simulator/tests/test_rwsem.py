"""Linux 6.12's rw_semaphore rules (models/vma_locks/rwsem.py) as the per-VMA lock model runs them.

Each rule is checked twice: on the pure value, case by case against kernel/locking/rwsem.c, and on
every reachable transition of a small vma-locks scenario, where it has to happen (or never happen)
between real threads."""

import functools

import pytest

import kstep
from kstep.cli import main
from kstep.engine.liveness import liveness
from kstep.experiment import from_text
from kstep.models.vma_locks import rwsem
from kstep.models.vma_locks.rwsem import FREE, NOBODY, READ, WRITE, Rwsem
from kstep.views.presentation import present

# Two faults at an unmapped address (each takes mmap_lock for read, then gets a SIGSEGV) and two
# writers whose mprotect takes mmap_lock for write: every queue shape mmap_lock can have.
MMAP_LOCK_CONTENTION = """
description = "two readers and two writers of mmap_lock"
look_for = "stealing, spinning, HANDOFF and wake-ups on mmap_lock"
[[vmas]]
start = 0
end = 4
[[threads]]
name = "R"
kind = "fault"
count = 2
faults = [10]
[[threads]]
name = "W"
kind = "writer"
count = 2
ops = [{ op = "mprotect", start = 0, end = 4, prot = "r" }]
"""

# Two faults in one VMA while a writer write-locks it: vma_start_write's down_write against
# the faults' down_read_trylock and up_read.
VMA_LOCK_CONTENTION = """
description = "two faults in the VMA a writer write-locks"
look_for = "vma_start_write waiting for the faults' read locks"
[[vmas]]
start = 0
end = 4
[[threads]]
name = "F"
kind = "fault"
count = 2
faults = [1]
[[threads]]
name = "W"
kind = "writer"
ops = [{ op = "mprotect", start = 0, end = 4, prot = "r" }]
"""


@functools.cache
def transitions(text):
    """Every reachable transition (state, action, next state) of a scenario on v6.12."""
    ex = from_text("vma-locks", text, where="test")
    model, s0 = ex.model, ex.start
    seen, layer, out = {s0}, [s0], []
    while layer:
        nxt = []
        for s in layer:
            for a in model.actions(s):
                t = model.step(s, a)
                out.append((s, a, t))
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        layer = nxt
    return tuple(out)


def actor(s, a):
    return next(i for i, t in enumerate(s.threads) if t.name == a.actor)


def queued(sem, kind):
    return {j for j, k in sem.waiters if k == kind}


def mmap_steps():
    return [(s, a, t, actor(s, a)) for s, a, t in transitions(MMAP_LOCK_CONTENTION) if a.actor != "rcu"]


# --- the rules on the value ---------------------------------------------------------------------

@pytest.mark.parametrize("sem, steals", [
    (Rwsem(waiters=((5, WRITE),)), True),  # free, a writer waits: steal (rwsem_rlock_steal)
    (Rwsem(readers=(3,), waiters=((5, WRITE),)), False),  # reader-owned, rcnt > 1: queue
    (Rwsem(owner=4), False),  # writer-owned: queue
    (Rwsem(waiters=((5, WRITE),), handoff=True), False),  # HANDOFF: queue
])
def test_the_reader_slowpath_steals_only_a_free_lock_without_handoff(sem, steals):
    after, waits = rwsem.read_slowpath(sem, 0)
    assert (0 in after.readers, waits) == (steals, not steals)


def test_a_stealing_reader_wakes_the_readers_queued_first():
    """rcnt == 1 with RWSEM_FLAG_WAITERS: rwsem_mark_wake(RWSEM_WAKE_READ_OWNED)."""
    after, _ = rwsem.read_slowpath(Rwsem(waiters=((1, READ), (2, WRITE), (3, READ))), 0)
    assert after.readers == (0, 1, 3) and after.waiters == ((2, WRITE),)


def test_mark_wake_grants_every_queued_reader_and_clears_handoff():
    """Phase-fair: readers behind a writer are granted too; granting clears HANDOFF."""
    sem = Rwsem(waiters=((1, READ), (2, WRITE), (3, READ)), handoff=True)
    assert rwsem.rwsem_wake(sem) == Rwsem(readers=(1, 3), waiters=((2, WRITE),))
    writer_first = Rwsem(waiters=((2, WRITE), (3, READ)))
    assert rwsem.rwsem_wake(writer_first) == writer_first  # the writer is only woken


def test_a_writer_spins_past_queued_waiters_until_handoff():
    assert rwsem.optimistic_spin(Rwsem(waiters=((1, WRITE),)), 0) == Rwsem(owner=0, waiters=((1, WRITE),))
    for held in (Rwsem(waiters=((1, WRITE),), handoff=True), Rwsem(readers=(1,)), Rwsem(owner=1)):
        assert rwsem.optimistic_spin(held, 0) is held
    assert rwsem.write_trylock(Rwsem(waiters=((1, WRITE),)), 0).owner == NOBODY  # the fast path is not enough


def test_handoff_reserves_the_free_lock_for_the_first_waiter():
    sem = Rwsem(waiters=((1, WRITE), (2, WRITE)), handoff=True)
    assert rwsem.try_write_lock(sem, 2) is None
    assert rwsem.try_write_lock(sem, 1) == Rwsem(owner=1, waiters=((2, WRITE),))
    assert rwsem.write_retry(Rwsem(readers=(0,), waiters=((1, WRITE),)), 1).handoff  # the timeout


@pytest.mark.parametrize("sem, ok", [
    (FREE, True),
    (Rwsem(readers=(1,)), True),
    (Rwsem(owner=1), False),
    (Rwsem(readers=(1,), waiters=((2, WRITE),)), False),  # RWSEM_FLAG_WAITERS
    (Rwsem(waiters=((2, WRITE),), handoff=True), False),
])
def test_down_read_trylock_fails_on_a_writer_or_any_waiter(sem, ok):
    assert rwsem.read_trylock_ok(sem) == ok


def test_up_read_wakes_only_as_the_last_holder():
    waiting_writer = ((2, WRITE),)
    assert rwsem.up_read(Rwsem(readers=(0, 1), waiters=waiting_writer), 0)[1] is False
    assert rwsem.up_read(Rwsem(readers=(1,), waiters=waiting_writer), 1)[1] is True
    assert rwsem.up_read(Rwsem(readers=(1,)), 1)[1] is False


# --- the rules between threads (every reachable transition) ----------------------------------------

def test_a_reader_takes_mmap_lock_while_a_writer_waits():
    """A fault's own step makes it a reader, past a writer queued before and after it."""
    stolen = [a for s, a, t, i in mmap_steps()
              if i in t.mm.mmap_lock.readers and i not in s.mm.mmap_lock.readers
              and not rwsem.waiting(s.mm.mmap_lock, i)
              and queued(s.mm.mmap_lock, WRITE) & queued(t.mm.mmap_lock, WRITE)]
    assert stolen and {a.label for a in stolen} == {"get_mmap_lock_carefully"}


def test_a_reader_queues_when_other_readers_hold_mmap_lock_and_a_writer_waits():
    joins = [(s, t, i) for s, a, t, i in mmap_steps() if a.label == "get_mmap_lock_carefully"
             and s.mm.mmap_lock.readers and queued(s.mm.mmap_lock, WRITE)]
    assert joins and all(rwsem.waiting(t.mm.mmap_lock, i) for s, t, i in joins)


def test_a_spinning_writer_takes_mmap_lock_ahead_of_a_queued_writer():
    """So does a writer's first rwsem_try_write_lock as it joins the queue: only HANDOFF keeps order."""
    ahead = {a.label for s, a, t, i in mmap_steps()
             if t.mm.mmap_lock.owner == i != s.mm.mmap_lock.owner and not rwsem.waiting(s.mm.mmap_lock, i)
             and queued(s.mm.mmap_lock, WRITE)}
    assert ahead == {"rwsem_optimistic_spin", "rwsem_down_write_slowpath"}


def test_handoff_is_set_by_a_waiting_writer_and_then_only_the_first_waiter_gets_the_lock():
    handoffs = [(a, t) for s, a, t, i in mmap_steps() if t.mm.mmap_lock.handoff and not s.mm.mmap_lock.handoff]
    assert handoffs and {a.label for a, t in handoffs} == {"rwsem_try_write_lock"}
    model = from_text("vma-locks", MMAP_LOCK_CONTENTION, where="test").model
    assert "HANDOFF" in present(model).summary(handoffs[0][1])["mmap_lock"]  # the step table shows it
    for s, a, t, _i in mmap_steps():
        sem, after = s.mm.mmap_lock, t.mm.mmap_lock
        if not sem.handoff:
            continue
        first, kind = sem.waiters[0]
        new = set(after.readers) - set(sem.readers) | ({after.owner} - {sem.owner, NOBODY})
        allowed = {first} if kind == WRITE else queued(sem, READ)
        assert new <= allowed, f"{a} took mmap_lock past HANDOFF for the first waiter"


def overtaken(s, t):
    """Did readers queued behind a writer get mmap_lock in this step, the writer staying queued?"""
    sem, after = s.mm.mmap_lock, t.mm.mmap_lock
    for k, w in enumerate(sem.waiters):
        if w[1] == WRITE and w in after.waiters:
            behind = {j for j, kind in sem.waiters[k + 1:] if kind == READ}
            if behind & set(after.readers):
                return True
    return False


def test_queued_readers_behind_a_writer_are_granted_with_the_first():
    """rwsem_mark_wake is phase-fair: it grants every queued reader, the writer between them waits."""
    granted = [a for s, a, t, i in mmap_steps() if overtaken(s, t)]
    assert granted and {a.label for a in granted} <= {"up_write", "rwsem_wake"}


def test_up_read_wakes_waiters_only_as_the_last_reader():
    wakes = {"vma": [], "mm": []}
    for s, a, t, i in mmap_steps() + [(s, a, t, actor(s, a)) for s, a, t in transitions(VMA_LOCK_CONTENTION)
                                      if a.label == "up_read"]:
        if a.label not in ("up_read", "mmap_read_unlock"):
            continue
        lock = t.vmas[s.threads[i].frames[0].arg].lock if a.label == "up_read" else t.mm.mmap_lock
        woke = bool(t.threads[i].frames) and t.threads[i].frames[0].label == "rwsem_wake"
        assert woke == (not lock.readers and lock.owner == NOBODY and bool(lock.waiters)), a
        if woke:
            wakes["vma" if a.label == "up_read" else "mm"].append(a)
    assert wakes["vma"] and wakes["mm"]


def test_a_fault_read_locks_its_vma_while_vma_start_write_spins():
    """down_read_trylock looks only at the count: a spinning writer is not queued."""
    steps = transitions(VMA_LOCK_CONTENTION)
    won = [s for s, a, t in steps if a.label == "down_read_trylock"
           and actor(s, a) in t.vmas[0].lock.readers
           and any(th.frames and th.frames[0] == ("rwsem_optimistic_spin", 0) for th in s.threads)]
    assert won
    for s, a, t in steps:
        if a.label == "down_read_trylock" and actor(s, a) in t.vmas[0].lock.readers:
            assert rwsem.read_trylock_ok(s.vmas[0].lock)


# --- RWSEM_WAIT_TIMEOUT, counted in failed tries (handoff_after): writer starvation --------------------

def forever(handoff_after):
    """rwsem-reader-steals with another handoff_after: R faults forever, W's mprotect waits once."""
    ex = kstep.open("vma-locks", "rwsem-reader-steals", "no-per-vma-lock", [f"handoff_after={handoff_after}"])
    return ex.model, ex.start


@functools.cache
def starving():
    model, s0 = forever('"never"')
    return model, liveness(model, s0)


def test_readers_that_steal_forever_starve_a_writer_that_never_times_out():
    """handoff_after = "never": R steals the lock W is woken for, forever; W's retries all fail."""
    model, r = starving()
    assert r.exhausted and r.livelock is None and r.deadlock is None and set(r.lassos) == {"W"}
    t = r.lassos["W"]
    assert t.lasso == {"kind": "starvation", "actors": ["W"], "stem": t.cycle_start, "cycle": len(t) - t.cycle_start}
    cycle = t.actions[t.cycle_start:]
    assert {a.label for a in cycle if a.actor == "W"} == {"rwsem_try_write_lock"}
    assert any(a.actor == "R" and a.label == "handle_mm_fault" for a in cycle)
    states = t.states[t.cycle_start:]
    assert all(s.mm.mmap_lock.waiters == ((1, rwsem.WRITE),) and not s.mm.mmap_lock.handoff for s in states)
    steals = [k for k, a in enumerate(cycle) if a.label == "get_mmap_lock_carefully"]
    assert steals and all(0 in states[k + 1].mm.mmap_lock.readers for k in steals)


@pytest.mark.parametrize("handoff_after", [0, 1, 2, 5])
def test_a_writer_that_times_out_is_never_starved(handoff_after):
    model, s0 = forever(handoff_after)
    r = liveness(model, s0)
    assert r.free and r.actors == ("R", "W") and r.cyclic


@pytest.mark.parametrize("handoff_after", [0, 3])
def test_handoff_is_set_exactly_on_the_failed_try_after_handoff_after_of_them(handoff_after):
    """A failed rwsem_try_write_lock on the held lock counts, until handoff_after failed tries have
    passed RWSEM_WAIT_TIMEOUT; the next one sets HANDOFF, and taking the lock starts the count again."""
    model, s0 = forever(handoff_after)
    seen, layer, checked = {s0}, [s0], 0
    while layer:
        nxt = []
        for s in layer:
            for a in model.actions(s):
                t = model.step(s, a)
                if a.label == "rwsem_try_write_lock":
                    before, after = s.threads[1], t.threads[1]
                    if t.mm.mmap_lock.owner == 1:
                        assert after.tries == 0
                    else:
                        checked += 1
                        assert t.mm.mmap_lock.handoff == (before.tries == handoff_after)
                        assert after.tries == min(before.tries + 1, handoff_after)
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        layer = nxt
    assert checked


def test_explore_liveness_finds_the_writers_lasso_and_proves_the_handoff_free(capsys):
    assert main(["explore", "vma-locks", "--scenario", "rwsem-reader-steals", "--liveness"]) == 1
    out = capsys.readouterr().out
    assert "verdict: STARVATION: starvation of W: lasso with stem 5 steps, cycle 6 steps" in out
    assert "verdict: R starvation-free" in out
    assert main(["explore", "vma-locks", "--scenario", "rwsem-handoff", "--liveness"]) == 0
    assert "free of starvation, livelock and deadlock under weak fairness" in capsys.readouterr().out


def test_a_handoff_that_stops_its_own_writer_livelocks():
    """handoff-stops-first (rwsem.c:620 with == for !=): W, first in line with HANDOFF set, fails on
    the free VMA lock and retries at once, forever, while F sleeps on the mmap_lock W holds.  Not a
    deadlock (W always moves) and not one thread's starvation (nobody progresses)."""
    ex = kstep.open("vma-locks", "rwsem-handoff-livelock", "handoff-stops-first")
    r = ex.liveness()
    assert r.verdict == "livelock" and r.deadlock is None and r.exhausted
    t = r.livelock
    assert t.lasso["kind"] == "livelock" and t.lasso["actors"] == ["F", "W"]
    cycle, states = t.actions[t.cycle_start:], t.states[t.cycle_start:]
    assert {(a.actor, a.label) for a in cycle} == {("W", "rwsem_try_write_lock")}
    lock = states[0].vmas[0].lock
    assert lock.owner == NOBODY and not lock.readers and lock.handoff and lock.waiters[0] == (1, WRITE)
    assert states[0].mm.mmap_lock.owner == 1 and rwsem.waiting(states[0].mm.mmap_lock, 0)
    assert ex.variant(None).liveness().free  # 6.12's line 620 lets W take it


def test_explore_names_the_scenario_that_shows_the_livelock(capsys):
    """A safety search cannot see a livelock: on another scenario explore says which one shows it."""
    assert main(["explore", "vma-locks", "--scenario", "recheck-race", "--variant", "handoff-stops-first"]) == 0
    assert ("(clean for this scenario: it cannot show handoff-stops-first's bug; explore --liveness on scenario "
            "rwsem-handoff-livelock does: a livelock)") in capsys.readouterr().out
