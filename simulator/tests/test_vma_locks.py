"""The per-VMA lock model against the kernel's behaviour and against its own invariants."""

import subprocess
import sys
from pathlib import Path

import pytest

from kstep.engine import Frame, RoundRobin, Scripted, Variant, explore, push, simulate
from kstep.scenario_spec import scenario
from kstep.engine import replay
from kstep.engine.liveness import liveness
from kstep.experiment import from_text
from kstep.models import make_model
from kstep.models.vma_locks import VmaLocksModel, rwsem
from kstep.models.vma_locks.invariants import vma_read_locked
from kstep.models.vma_locks.state import UINT_MAX, is_write_locked
from kstep.models.vma_locks.variants import VARIANTS

from support import assert_breaker_catches, labels_of, load, table_first, variants

MECH = "vma-locks"
SCENARIOS = scenario.bundled(MECH)
FOREVER = [n for n in SCENARIOS if scenario.load(MECH, VmaLocksModel.scenario_schema, n).forever]
CORRECT, BROKEN = variants(MECH)

# For every invariant: a broken variant and a bundled scenario in which it is violated.
BREAKERS = {
    "no-reader-in-write-locked-vma": ("no-recheck", "recheck-race"),
    "read-locked-vma-unchanged": ("no-recheck", "recheck-race"),
    "writer-waits-for-readers": ("write-lock-without-rwsem", "recheck-race"),
    "no-use-after-free": ("free-immediately", "munmap-vs-fault"),
    "epoch-unlocks-all": ("no-seq-bump", "recheck-race"),
    "vma-start-read-fails-only-for-writers": ("no-seq-bump", "recheck-race"),
    "fault-uses-attached-vma": ("no-detached-check", "munmap-vs-fault"),
    "writer-holds-vma-write-lock": ("mprotect-without-vma-lock", "recheck-race"),
    "fork-copies-unused-vma": ("fork-without-vma-locks", "fork-vs-fault"),
    # map-fixed-vs-munmap without its munmap: the bundled one's correct model is 175k states to search
    "tree-non-overlapping": ("map-fixed-without-unmap", str(Path(__file__).parent / "data" / "vma-locks" /
                                                            "map-fixed-over-a-fault.toml")),
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
    assert tr.states[13].counters.vma_lock_success == 1  # after T2's 13 steps (round-robin follows)


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


def test_the_6_12_117_mm_lock_seq_is_odd_while_write_locked():
    m, sc, s0 = load(MECH, "recheck-race")
    assert all(v.vm_lock_seq == UINT_MAX for v in s0.vmas)
    tr = simulate(m, s0, RoundRobin())
    odd = [s for s in tr.states if s.mm.mm_lock_seq % 2]
    assert odd and all(s.mm.mmap_lock.owner != -1 for s in odd)
    assert all(s.mm.mm_lock_seq % 2 == 0 for s in tr.states if s.mm.mmap_lock.owner == -1)
    assert tr.states[-1].mm.mm_lock_seq == 2  # one write epoch: begin and end


def test_6_12_0_bumps_mm_lock_seq_once_per_epoch():
    m, sc, s0 = load(MECH, "recheck-race", "v6.12.0")
    assert all(v.vm_lock_seq == -1 for v in s0.vmas)
    tr = simulate(m, s0, RoundRobin())
    assert "mm_lock_seqcount_begin" not in {a.label for a in tr.actions}
    assert [s.mm.mm_lock_seq for s in tr.states[-1:]] == [1]  # one write epoch: one bump at its end


def test_no_per_vma_lock_faults_only_under_mmap_lock():
    m, sc, s0 = load(MECH, "android-app-launch", "no-per-vma-lock")
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
@pytest.mark.parametrize("variant", [v for v in CORRECT if v != VmaLocksModel.default_variant])
@pytest.mark.parametrize("name", SCENARIOS)
def test_explore_exhausts_correct_variants_cleanly(variant, name):
    """The other correct variants; the kernel's own (v6.12) is explored on every scenario through the
    CLI, by test_cli.test_every_bundled_scenario_is_clean_with_the_kernels_variant."""
    m, sc, s0 = load(MECH, name, variant)
    r = explore(m, s0)
    assert r.exhausted and r.clean, (r.violation, r.counterexample and [str(a) for a in r.counterexample.actions])


@pytest.mark.parametrize("variant", [v for v in BROKEN if "litmus" not in VmaLocksModel.variants[v].params])
def test_explore_finds_the_harm_of_every_broken_variant(variant):
    """Each bug does something a user would see (freed memory touched, a fault in a half-changed or
    unmapped VMA, faults that lose the per-VMA path, a hang) in some bundled scenario, and there the
    explorer's counterexample shows that harm, not only a broken rule; or, for a livelock, which no
    safety search can see, explore --liveness's lasso on a scenario whose threads run forever.
    (verdicts.json has the whole scenario x variant table; this stops at the first scenario that
    shows the harm.)  A variant only a weaker memory model breaks names its litmus test instead
    (test_memory_model).  The scenarios the committed table says show harm or a livelock go first:
    clean ones are searched to their end, hundreds of thousands of states, only if it is out of date."""
    for name in table_first(MECH, variant, SCENARIOS,
                            lambda row: row.get("kind") == "harm" or row.get("liveness") == "livelock"):
        m, sc, s0 = load(MECH, name, variant)
        if name in FOREVER and liveness(m, s0).livelock is not None:
            return
        r = explore(m, s0, max_states=200_000)
        if r.violation:
            assert r.counterexample.violation == r.violation
            assert len(r.counterexample) <= 40
            if r.harm:
                return
    pytest.fail(f"no bundled scenario shows what {variant} does to a user")


@pytest.mark.parametrize("invariant", sorted(BREAKERS))
def test_each_invariant_alone_catches_its_breaker(invariant):
    assert_breaker_catches(MECH, invariant, *BREAKERS[invariant])


def test_no_recheck_counterexample_has_the_hand_derived_length():
    """recheck-race on no-recheck.  The writer needs five steps to write-lock A and release its
    rwsem (down_write mmap_lock, mm_lock_seqcount_begin, down_write A, store vm_lock_seq, up_write A);
    the fault must pass the lockless check before the store (rcu_read_lock, mas_walk, vma_start_read)
    and take the rwsem after the up_write (down_read_trylock), then the skipped recheck lets it in:
    5 + 5 = 10."""
    m, sc, s0 = load(MECH, "recheck-race", "no-recheck")
    r = explore(m, s0, harm_first=False)
    assert r.violation.invariant == "no-reader-in-write-locked-vma"
    assert len(r.counterexample) == 10
    assert [str(a) for a in r.counterexample.actions if a.actor == "W"] == [
        "W:down_write", "W:mm_lock_seqcount_begin", "W:down_write", "W:vma_write_seq", "W:up_write"]


def test_invariants_find_who_holds_a_vma_read_lock_from_the_state():
    """A broken step that only skips the recheck, telling nobody that it let the fault in, is
    caught all the same: the checks read the VMA's rwsem and the fault's next step."""

    def skip_recheck(s, i, arg):
        return push(s, i, (Frame("check_detached"),))

    class Silent(VmaLocksModel):
        variants = {"silent": Variant.bug("silent", "skips the recheck", vma_start_read_recheck=skip_recheck)}
        default_variant = "silent"

    m, sc, s0 = load(MECH, "recheck-race")
    bug = Silent()
    r = explore(bug, bug.initial(sc.config), harm_first=False)
    assert r.violation.invariant == "no-reader-in-write-locked-vma" and len(r.counterexample) == 10
    assert explore(bug, bug.initial(sc.config)).violation.invariant == "read-locked-vma-unchanged"  # the harm


def test_without_the_seq_bump_a_fault_falls_back_after_the_writer_is_gone():
    """no-seq-bump's harm: once W's epoch is over, VMA 0 stays 'write-locked' to every fault."""
    m, sc, s0 = load(MECH, "recheck-race", "no-seq-bump")
    m.invariants = [i for i in VmaLocksModel.invariants if i.name == "vma-start-read-fails-only-for-writers"]
    r = explore(m, s0)
    end = r.counterexample.states[-1]
    assert r.violation.invariant == "vma-start-read-fails-only-for-writers"
    steps = [str(a) for a in r.counterexample.actions]
    assert max(k for k, a in enumerate(steps) if a.startswith("W:")) < steps.index("T1:mas_walk")  # W was done
    assert end.mm.mmap_lock.owner == -1 and end.vmas[0].vm_lock_seq == end.mm.mm_lock_seq
    assert [a.label for a in r.counterexample.actions if a.actor == "T1"][-1] == "vma_start_read"


def test_a_write_lock_store_alone_changes_nothing_a_fault_reads():
    """fork changes no field of the VMAs it copies: without the rwsem its vm_lock_seq store breaks
    writer-waits-for-readers, but a fault inside still reads an unchanged VMA."""
    m, sc, s0 = load(MECH, "fork-vs-fault", "write-lock-without-rwsem")
    m.invariants = [i for i in VmaLocksModel.invariants if i.name == "read-locked-vma-unchanged"]
    assert explore(m, s0).clean
    m.invariants = [i for i in VmaLocksModel.invariants if i.name == "writer-waits-for-readers"]
    assert explore(m, s0).violation


def test_mprotect_without_vma_lock_changes_the_flags_under_a_fault():
    """The harm, not the broken vma_assert_write_locked() two steps in: T1 is inside VMA 0 under its
    read lock when W's vm_flags_reset changes it."""
    m, sc, s0 = load(MECH, "recheck-race", "mprotect-without-vma-lock")
    r = explore(m, s0)
    steps = [str(a) for a in r.counterexample.actions]
    assert r.harm and r.violation.invariant == "read-locked-vma-unchanged" and "changed prot" in r.violation.message
    assert steps[-1] == "W:vm_flags_reset" and steps.index("T1:vma_start_read_recheck") < steps.index("W:down_write")
    assert explore(m, s0, harm_first=False).violation.invariant == "writer-holds-vma-write-lock"  # the second line


def test_deadlock_when_anon_prepare_sleeps_on_mmap_lock():
    m, sc, s0 = load(MECH, "fork-vs-fault", "anon-prepare-blocks")
    r = explore(m, s0)
    assert r.violation.invariant == "deadlock"
    final = r.counterexample.states[-1]
    holder = next(i for i in range(len(final.threads)) if vma_read_locked(final, i))
    assert final.mm.mmap_lock.owner != -1 and rwsem.waiting(final.mm.mmap_lock, holder)


def test_traces_validate_and_tampered_traces_do_not(tmp_path):
    m, sc, s0 = load(MECH, "munmap-vs-fault")
    tr = simulate(m, s0, Scripted(sc.schedule), scenario="munmap-vs-fault", config=sc.config)
    path = tmp_path / "t.json"
    tr.write(m, path)
    again, model = replay.load(path, make_model)
    assert again.states == tr.states
    text = path.read_text()
    path.write_text(text.replace('"vm_lock_seq": 4294967295', '"vm_lock_seq": 5', 1))
    with pytest.raises(Exception, match="does not reach|does not match"):
        replay.load(path, make_model)


def test_same_seed_same_bytes_in_separate_processes():
    code = ("import sys, kstep;ex=kstep.open('vma-locks','android-app-launch');"
            "sys.stdout.write(ex.run(seed=7).dumps(ex.model))")
    outs = [subprocess.run([sys.executable, "-c", code], env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
                           capture_output=True, check=True).stdout for seed in ("1", "4242")]
    assert outs[0] == outs[1] and len(outs[0]) > 1000


# --- address-space operations against 6.12's mm/vma.c, mm/mmap.c and mm/mprotect.c ---------------------

class WriterFirst:
    """A scheduler for concrete cases: always the first actor in `order` that can move, so a writer's
    system calls run to their end before the faults that follow them."""

    name = "writer-first"
    tick = 0

    def __init__(self, *order):
        self.order = order

    def choose(self, model, state, enabled):
        return next((a for actor in self.order for a in enabled if a.actor == actor), None)

    def stats(self):
        return {}

    def params(self):  # what a trace records of its scheduler (never written to a file here)
        return {"kind": self.name, "seed": None, "script": None}


def case(toml, variant=None):
    """The model and the initial state of a scenario given as TOML text (vmas and threads only)."""
    ex = from_text(MECH, 'description = "-"\nlook_for = "-"\n' + toml, variant, where="<test>")
    return ex.model, ex.start


def concrete(toml, *order, variant=None):
    """Run a scenario given as TOML text, writers first; the trace and the model."""
    m, s0 = case(toml, variant)
    return simulate(m, s0, WriterFirst(*order, "rcu")), m


def ranges(s):
    """The address space as (start, end, prot) in tree order."""
    return [(s.vmas[v].start, s.vmas[v].end, s.vmas[v].prot) for v in s.mm.tree]


def locked_and_freed(trace):
    """The VMAs write-locked in the writer's epoch (vm_lock_seq == mm_lock_seq just before
    vma_end_write_all) and the VMAs it handed to vm_area_free, as sets of ids."""
    k = next(k for k, a in enumerate(trace.actions) if a.label == "vma_end_write_all")
    s = trace.states[k]
    locked = {v for v, vma in enumerate(s.vmas) if vma.vm_lock_seq == s.mm.mm_lock_seq}
    freed = set()
    for a, before in zip(trace.actions, trace.states):
        if a.label == "vm_area_free":
            i = [t.name for t in before.threads].index(a.actor)
            freed.add(before.threads[i].frames[0].arg)
    return locked, freed


def writer(ops, vmas="[[vmas]]\nstart = 0\nend = 8\n", faults=()):
    threads = "".join(f'[[threads]]\nname = "T{a}"\nkind = "fault"\nfaults = [{a}]\n\n' for a in faults)
    return f'{vmas}\n{threads}[[threads]]\nname = "W"\nkind = "writer"\nops = [{ops}]\n'


def test_partial_munmap_splits_and_unmaps_only_the_covered_pages():
    """vms_gather_munmap_vmas splits [0, 8) at 2 (new VMA below) and at 4 (new VMA above): only the
    original VMA, now [2, 4), is detached and freed.  A fault at 6 then succeeds; one at 3 gets SIGSEGV."""
    tr, m = concrete(writer('{ op = "munmap", start = 2, end = 4 }', faults=(6, 3)), "W", "T6", "T3")
    final = tr.states[-1]
    assert ranges(final) == [(0, 2, "rw"), (4, 8, "rw")]
    assert final.vmas[0].detached and final.vmas[0].status == "freed" and (final.vmas[0].start, final.vmas[0].end) == (2, 4)
    locked, freed = locked_and_freed(tr)
    assert locked == {0, 1, 2} and freed == {0}
    t6, t3 = final.threads[0], final.threads[1]
    assert final.counters.vma_lock_success == 1 and t6.died == "" and final.counters.sigsegv == 1
    assert t3.died == "SIGSEGV" and not t3.frames


def test_munmap_of_a_hole_takes_the_write_lock_and_changes_nothing():
    """do_vmi_munmap: no VMA in the range, so mmap_write_unlock at once (no clear, no downgrade)."""
    tr, m = concrete(writer('{ op = "munmap", start = 10, end = 12 }'), "W")
    assert labels_of(tr, "W") == ["down_write", "mm_lock_seqcount_begin", "vma_end_write_all", "up_write"]


def test_map_fixed_over_a_vma_middle_gathers_it_in_the_same_write_epoch():
    """__mmap_region with MAP_FIXED over [2, 6) of [0, 8) rw, mapping r: vms_gather_munmap_vmas splits at 2
    and 6 and detaches the middle while mmap_lock stays write-held; the new VMA is stored over it and
    vms_complete_munmap_vmas frees the middle with vm_area_free."""
    tr, m = concrete(writer('{ op = "mmap", start = 2, end = 6, prot = "r" }'), "W")
    final = tr.states[-1]
    assert ranges(final) == [(0, 2, "rw"), (2, 6, "r"), (6, 8, "rw")]
    locked, freed = locked_and_freed(tr)
    assert locked == {0, 1, 2, 3} and freed == {0}
    w = labels_of(tr, "W")
    assert w.index("vma_mark_detached") < w.index("vm_area_alloc") < w.index("vma_iter_store") < w.index("vm_area_free")
    assert w.count("vma_end_write_all") == 1


def test_map_fixed_with_the_same_flags_expands_the_split_neighbour():
    """vma_merge_new_range after the gather: the piece below (prev) expands over [0, 8) and the piece
    above (next) is removed; the gathered middle and next are freed, nothing new is allocated."""
    tr, m = concrete(writer('{ op = "mmap", start = 2, end = 6, prot = "rw" }'), "W")
    assert ranges(tr.states[-1]) == [(0, 8, "rw")] and tr.states[-1].mm.tree == (1,)
    locked, freed = locked_and_freed(tr)
    assert locked == {0, 1, 2} and freed == {0, 2}
    assert "vm_area_alloc" not in labels_of(tr, "W")


def test_vm_area_alloc_only_allocates():
    """kernel/fork.c:vm_area_alloc allocates and initialises; __mmap_region sets the range and stores it."""
    tr, m = concrete(writer('{ op = "mmap", start = 20, end = 24 }'), "W")
    k = labels_of(tr, "W").index("vm_area_alloc")
    after = tr.states[k + 1]
    new = after.vmas[-1]
    assert len(after.vmas) == 2 and 1 not in after.mm.tree and (new.start, new.end) == (0, 0)
    assert ranges(tr.states[-1]) == [(0, 8, "rw"), (20, 24, "rw")]


TWO = "[[vmas]]\nstart = 0\nend = 4\nanon_vma = {a}\n\n[[vmas]]\nstart = 4\nend = 8\nanon_vma = {a}\n"


@pytest.mark.parametrize("anon,tree,locked,freed", [
    # distinct anon_vmas: is_mergeable_anon_vma refuses, each VMA gets vm_flags_reset
    ("true", [(0, 4, "r"), (4, 8, "r")], {0, 1}, set()),
    # no anon_vma: the second VMA merges into the first (merge_left, the VMA deleted)
    ("false", [(0, 8, "r")], {0, 1}, {1}),
])
def test_mprotect_walks_every_vma_in_the_range(anon, tree, locked, freed):
    tr, m = concrete(writer('{ op = "mprotect", start = 0, end = 8, prot = "r" }', vmas=TWO.format(a=anon)), "W")
    assert ranges(tr.states[-1]) == tree
    assert locked_and_freed(tr) == (locked, freed)


def test_mprotect_stops_at_a_hole_and_keeps_what_it_changed():
    vmas = "[[vmas]]\nstart = 0\nend = 4\n\n[[vmas]]\nstart = 6\nend = 8\n"
    tr, m = concrete(writer('{ op = "mprotect", start = 0, end = 8, prot = "r" }', vmas=vmas), "W")
    assert ranges(tr.states[-1]) == [(0, 4, "r"), (6, 8, "rw")]
    tr, m = concrete(writer('{ op = "mprotect", start = 4, end = 8, prot = "r" }', vmas=vmas), "W")
    assert ranges(tr.states[-1]) == [(0, 4, "rw"), (6, 8, "rw")]
    assert labels_of(tr, "W") == ["down_write", "mm_lock_seqcount_begin", "vma_end_write_all", "up_write"]


def test_mprotect_to_the_same_flags_returns_early():
    """mprotect_fixup: newflags == oldflags, so no split, no merge, no VMA lock and no free."""
    tr, m = concrete(writer('{ op = "mprotect", start = 0, end = 2, prot = "rw" }'), "W")
    assert labels_of(tr, "W") == ["down_write", "mm_lock_seqcount_begin", "vma_end_write_all", "up_write"]
    assert ranges(tr.states[-1]) == [(0, 8, "rw")]


def test_mprotect_merges_before_it_splits():
    """vma_modify tries vma_merge_existing_range first: [4, 6) of [4, 8) rw joins [0, 4) r (merge_left
    with the VMA adjusted), so [0, 4) grows to [0, 6) and [4, 8) shrinks to [6, 8): no split, no free."""
    vmas = ('[[vmas]]\nstart = 0\nend = 4\nprot = "r"\nanon_vma = false\n\n'
            "[[vmas]]\nstart = 4\nend = 8\nanon_vma = false\n")
    tr, m = concrete(writer('{ op = "mprotect", start = 4, end = 6, prot = "r" }', vmas=vmas), "W")
    assert ranges(tr.states[-1]) == [(0, 6, "r"), (6, 8, "rw")]
    assert locked_and_freed(tr) == ({0, 1}, set()) and len(tr.states[-1].vmas) == 2
    assert "__split_vma" not in labels_of(tr, "W")


@pytest.mark.parametrize("anon,tree", [
    ("true", [(0, 4, "r"), (4, 8, "r")]),  # it keeps VM_ACCOUNT (it has an anon_vma): flags differ
    ("false", [(0, 8, "r")]),  # no anon_vma: VM_ACCOUNT goes, flags match, merge_left deletes it
])
def test_vm_account_decides_whether_mprotect_merges(anon, tree):
    """mprotect_fixup keeps VM_ACCOUNT on a VMA made read-only only while it has an anon_vma, and
    is_mergeable_vma compares all of vm_flags: [4, 8) rw joins [0, 4) r (never charged) only without one."""
    vmas = f'[[vmas]]\nstart = 0\nend = 4\nprot = "r"\nanon_vma = false\n\n[[vmas]]\nstart = 4\nend = 8\nanon_vma = {anon}\n'
    tr, m = concrete(writer('{ op = "mprotect", start = 4, end = 8, prot = "r" }', vmas=vmas), "W")
    assert ranges(tr.states[-1]) == tree


def test_a_fault_with_no_anon_vma_pays_its_work_once():
    vmas = "[[vmas]]\nstart = 0\nend = 8\nanon_vma = false\n"
    m, s0 = case(vmas + '[[threads]]\nname = "T"\nkind = "fault"\nfaults = [1]\nwork = 7\n')
    tr = simulate(m, s0, RoundRobin())
    costs = [m.cost(s, a) for a, s in zip(tr.actions, tr.states)]
    assert sorted(costs)[-2:] == [1, 7] and tr.states[-1].vmas[0].anon_vma >= 0


def test_the_retry_after_anon_prepare_is_the_wrappers_vma_end_read():
    """mm/internal.h:vmf_anon_prepare drops the VMA lock when __vmf_anon_prepare returns VM_FAULT_RETRY;
    in fork-vs-fault dup_mmap is queued on that lock, so T2's up_read, the last, goes on to rwsem_wake."""
    m, sc, s0 = load(MECH, "fork-vs-fault")
    assert str(m.locations()["vmf_anon_prepare"]) == "mm/internal.h:vmf_anon_prepare"
    tr = simulate(m, s0, Scripted(sc.schedule))
    t2 = labels_of(tr, "T2")
    k = t2.index("__vmf_anon_prepare")
    assert t2[k + 1:k + 6] == ["rcu_read_lock", "up_read", "rwsem_wake", "rcu_read_unlock", "vma_lock_retry"]


def test_a_sigsegv_kills_the_thread_and_drops_its_other_faults():
    vmas = "[[vmas]]\nstart = 0\nend = 8\n"
    m, s0 = case(vmas + '[[threads]]\nname = "T"\nkind = "fault"\nfaults = [9, 1]\n')
    tr = simulate(m, s0, RoundRobin())
    t = tr.states[-1].threads[0]
    assert t.died == "SIGSEGV" and not t.frames and tr.outcome == "finished"
    assert tr.states[-1].counters.vma_lock_success == 0 and labels_of(tr, "T").count("mas_walk") == 1


def test_no_per_vma_lock_is_6_12_without_the_config():
    """CONFIG_PER_VMA_LOCK=n: vma_start_write, vma_end_write_all and vma_mark_detached are empty,
    lock_vma_under_rcu returns NULL (so faults go to lock_mm_and_find_vma), vm_area_free frees at once."""
    assert "CONFIG_PER_VMA_LOCK=n" in VARIANTS["no-per-vma-lock"].doc
    m, sc, s0 = load(MECH, "munmap-vs-fault", "no-per-vma-lock")
    tr = simulate(m, s0, RoundRobin())
    used = {a.label for a in tr.actions}
    assert not used & {"vma_write_seq", "vma_end_write_all", "vma_mark_detached", "mas_walk", "vma_start_read",
                       "rcu_read_lock", "vm_area_free"}
    assert "lock_mm_and_find_vma" in m.locations() and "get_mmap_lock_carefully" in used
    assert "__vm_area_free" in used and not any(s.rcu.callbacks for s in tr.states)
    assert all(v.lock.owner == -1 for s in tr.states for v in s.vmas)


@pytest.mark.parametrize("order,vma,died", [
    (("T", "M", "U"), (0, 8, "rw"), ""),  # before both writers: in A
    (("M", "T", "U"), (2, 6, "r"), ""),  # after M: in M's new VMA
    (("U", "M", "T"), (2, 6, "r"), ""),  # U first, then M maps [2, 6) again
    (("M", "U", "T"), None, "SIGSEGV"),  # U unmapped [4, 8) after M: nothing maps page 5
])
def test_map_fixed_vs_munmap_fault_outcomes(order, vma, died):
    """What the scenario's look_for promises: T's fault at 5 finds A, M's new VMA or no VMA (SIGSEGV)."""
    m, sc, s0 = load(MECH, "map-fixed-vs-munmap")
    tr = simulate(m, s0, WriterFirst(*order, "rcu"))
    handled = [before.vmas[before.threads[0].vma] for a, before in zip(tr.actions, tr.states)
               if a.actor == "T" and a.label == "handle_mm_fault"]
    assert [(v.start, v.end, v.prot) for v in handled] == ([vma] if vma else [])
    assert tr.states[-1].threads[0].died == died


def test_claims_can_name_the_mmap_writer_and_see_overlapping_vmas():
    """The helpers scenario [[expect]] tables use: mmap_writer() and tree_overlaps()."""
    m, sc, s0 = load(MECH, "map-fixed-vs-munmap", "map-fixed-without-unmap")
    tr = simulate(m, s0, Scripted("M*8"), max_steps=8)  # mmap_write_lock ... vma_iter_store of [2, 6)
    helpers = m.expect_functions()
    assert [helpers["mmap_writer"](s) for s in tr.states] == [""] + ["M"] * 8
    assert [helpers["tree_overlaps"](s) for s in tr.states] == [False] * 8 + [True]
