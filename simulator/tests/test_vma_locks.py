"""The per-VMA lock model against the kernel's behaviour and against its own invariants."""

import subprocess
import sys

import pytest

from kstep.engine import RoundRobin, Scripted, explore, scenario, simulate
from kstep.engine import trace as tracemod
from kstep.models import make_model
from kstep.models.vma_lock import UINT_MAX, VARIANTS, VmaLocksModel, is_write_locked

from support import assert_breaker_catches, labels_of, load, variants

MECH = "vma-locks"
SCENARIOS = scenario.bundled(MECH)
CORRECT, BROKEN = variants(MECH)

# For every invariant: a broken variant and a bundled scenario in which it is violated.
BREAKERS = {
    "no-reader-in-write-locked-vma": ("no-recheck", "recheck-race"),
    "read-locked-vma-unchanged": ("no-recheck", "recheck-race"),
    "writer-waits-for-readers": ("write-lock-without-rwsem", "recheck-race"),
    "no-use-after-free": ("free-immediately", "munmap-vs-fault"),
    "epoch-unlocks-all": ("no-seq-bump", "recheck-race"),
    "fault-uses-attached-vma": ("no-detached-check", "munmap-vs-fault"),
    "writer-holds-vma-write-lock": ("mprotect-without-vma-lock", "recheck-race"),
    "fork-copies-unused-vma": ("fork-without-vma-locks", "fork-vs-fault"),
    "grace-period-waits-for-readers": ("gp-ends-early", "munmap-vs-fault"),
    "callbacks-after-grace-period": ("early-callback", "munmap-vs-fault"),
}




def test_a_successful_fault_follows_lock_vma_under_rcu_in_order():
    """Reference §1.3: walk under RCU, lockless check, trylock, recheck, detached, range, then
    handle the fault and vma_end_read's three steps (rcu_read_lock, up_read, rcu_read_unlock)."""
    m, sc, s0 = load(MECH, "recheck-race")
    tr = simulate(m, s0, Scripted("T2*13"))
    assert labels_of(tr, "T2") == [
        "rcu_read_lock", "mas_walk", "vma_start_read", "down_read_trylock", "vma_start_read_recheck",
        "check_detached", "check_range", "rcu_read_unlock", "handle_mm_fault",
        "rcu_read_lock", "up_read", "rcu_read_unlock", "vma_lock_success"]
    assert tr.states[-1].counters.vma_lock_success == 1


def test_recheck_race_falls_back_to_mmap_lock():
    """E1: after the writer's vma_start_write the trylock succeeds but the recheck sees equal seqs."""
    m, sc, s0 = load(MECH, "recheck-race")
    tr = simulate(m, s0, Scripted(sc.schedule))
    t1 = labels_of(tr, "T1")
    assert t1[:9] == ["rcu_read_lock", "mas_walk", "vma_start_read", "down_read_trylock",
                      "vma_start_read_recheck", "up_read", "rcu_read_unlock", "vma_lock_abort",
                      "get_mmap_lock_carefully"]
    assert "rwsem_down_read_slowpath" in t1  # it slept on mmap_lock until the epoch ended
    final = tr.states[-1].counters
    assert (final.vma_lock_abort, final.mmap_lock_faults, final.vma_lock_success) == (1, 1, 1)


def test_munmap_vs_fault_misses_then_finds_nothing():
    """E2: the reader finds B, the munmap completes, the reader sees detached, misses, retries."""
    m, sc, s0 = load(MECH, "munmap-vs-fault")
    tr = simulate(m, s0, Scripted(sc.schedule))
    t1 = labels_of(tr, "T1")
    assert t1.count("mas_walk") == 2 and "vma_lock_miss" in t1
    final = tr.states[-1]
    assert final.counters.vma_lock_miss == 1 and final.counters.sigsegv == 1
    assert final.vmas[1].status == "freed" and final.vmas[1].detached
    # B was freed only after T1 left the read-side section it found B in.
    free_step = next(k for k, a in enumerate(tr.actions) if a.label == "rcu_do_batch")
    t1_last_rcu_unlock = max(k for k, a in enumerate(tr.actions)
                             if a.actor == "T1" and a.label == "rcu_read_unlock")
    assert free_step > t1_last_rcu_unlock


def test_fork_write_locks_every_parent_vma_and_faults_wait():
    m, sc, s0 = load(MECH, "fork-vs-fault")
    tr = simulate(m, s0, Scripted(sc.schedule))
    locked_at_end_of_fork = next(s for a, s in zip(tr.actions, tr.states[1:]) if a.label == "vma_end_write_all")
    before = tr.states[tr.states.index(locked_at_end_of_fork) - 1]
    assert all(is_write_locked(before, v) for v in before.mm.tree)
    assert not any(is_write_locked(locked_at_end_of_fork, v) for v in locked_at_end_of_fork.mm.tree)
    assert tr.states[-1].counters.vma_lock_retry == 1  # T2's vmf_anon_prepare trylock failed


def test_seqcount_variant_is_odd_while_write_locked():
    m, sc, s0 = load(MECH, "recheck-race", "seqcount")
    assert all(v.vm_lock_seq == UINT_MAX for v in s0.vmas)
    tr = simulate(m, s0, RoundRobin())
    odd = [s for s in tr.states if s.mm.mm_lock_seq % 2]
    assert odd and all(s.mm.mmap_lock.owner != -1 for s in odd)
    assert all(s.mm.mm_lock_seq % 2 == 0 for s in tr.states if s.mm.mmap_lock.owner == -1)
    assert tr.states[-1].mm.mm_lock_seq == 2  # one write epoch: begin and end


def test_mmap_lock_only_never_uses_vma_locks():
    m, sc, s0 = load(MECH, "android-app-launch", "mmap-lock-only")
    tr = simulate(m, s0, RoundRobin())
    assert not any(a.label in ("mas_walk", "vma_start_read") for a in tr.actions)
    c = tr.states[-1].counters
    assert c.vma_lock_success == 0 and c.mmap_lock_faults == 4


def test_broken_variants_replace_only_existing_labels():
    base = VmaLocksModel()
    known = set(base.table.steps) | set(base.table.calls)
    for name in BROKEN:
        assert VARIANTS[name].replaces and set(VARIANTS[name].replaces) <= known, name


def test_every_invariant_has_a_breaker():
    assert set(BREAKERS) == {i.name for i in VmaLocksModel.invariants}


@pytest.mark.slow
@pytest.mark.parametrize("variant", CORRECT)
@pytest.mark.parametrize("name", SCENARIOS)
def test_explore_exhausts_correct_variants_cleanly(variant, name):
    m, sc, s0 = load(MECH, name, variant)
    r = explore(m, s0)
    assert r.exhausted and r.clean, (r.violation, r.counterexample and [str(a) for a in r.counterexample.actions])


@pytest.mark.parametrize("variant", BROKEN)
def test_explore_finds_every_broken_variant(variant):
    found = []
    for name in SCENARIOS:
        m, sc, s0 = load(MECH, name, variant)
        r = explore(m, s0, max_states=200_000)
        if r.violation:
            found.append(name)
            assert r.counterexample.violation == r.violation
            assert len(r.counterexample) <= 30
    assert found, f"{variant} was not caught in any bundled scenario"


@pytest.mark.parametrize("invariant", sorted(BREAKERS))
def test_each_invariant_alone_catches_its_breaker(invariant):
    assert_breaker_catches(MECH, invariant, *BREAKERS[invariant])


def test_no_recheck_counterexample_has_the_hand_derived_length():
    """recheck-race on no-recheck.  The writer needs four steps to write-lock A and release its
    rwsem (down_write mmap_lock, down_write A, store vm_lock_seq, up_write A); the fault must pass
    the lockless check before the store (rcu_read_lock, mas_walk, vma_start_read) and take the
    rwsem after the up_write (down_read_trylock), then the skipped recheck lets it in: 4 + 5 = 9."""
    m, sc, s0 = load(MECH, "recheck-race", "no-recheck")
    r = explore(m, s0, harm_first=False)
    assert r.violation.invariant == "no-reader-in-write-locked-vma"
    assert len(r.counterexample) == 9
    assert [str(a) for a in r.counterexample.actions if a.actor == "W"] == [
        "W:down_write", "W:down_write", "W:vma_write_seq", "W:up_write"]


def test_deadlock_when_anon_prepare_sleeps_on_mmap_lock():
    m, sc, s0 = load(MECH, "fork-vs-fault", "anon-prepare-blocks")
    r = explore(m, s0)
    assert r.violation.invariant == "deadlock"
    final = r.counterexample.states[-1]
    holder = next(t for t in final.threads if t.vma_locked)
    assert final.mm.mmap_lock.owner != -1 and any(w[0] == final.threads.index(holder)
                                                  for w in final.mm.mmap_lock.waiters)


def test_traces_validate_and_tampered_traces_do_not(tmp_path):
    m, sc, s0 = load(MECH, "munmap-vs-fault")
    tr = simulate(m, s0, Scripted(sc.schedule), scenario="munmap-vs-fault", config=sc.config)
    path = tmp_path / "t.json"
    tr.write(m, path)
    again, model = tracemod.load(path, lambda mech, v: make_model(mech, v))
    assert again.states == tr.states
    text = path.read_text()
    path.write_text(text.replace('"vm_lock_seq": 0', '"vm_lock_seq": 5', 1))
    with pytest.raises(Exception, match="does not reach|does not match"):
        tracemod.load(path, lambda mech, v: make_model(mech, v))


def test_same_seed_same_bytes_in_separate_processes():
    code = ("from kstep.engine import Random, simulate, scenario;from kstep.models import make_model;"
            "m=make_model('vma-locks');sc=scenario.load('vma-locks',m.scenario_schema,'android-app-launch');"
            "import sys;sys.stdout.write(simulate(m,m.initial(sc.config),Random(7),config=sc.config).dumps(m))")
    outs = [subprocess.run([sys.executable, "-c", code], env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
                           capture_output=True, check=True).stdout for seed in ("1", "4242")]
    assert outs[0] == outs[1] and len(outs[0]) > 1000
