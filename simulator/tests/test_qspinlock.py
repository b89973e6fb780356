"""The qspinlock model against Linux 6.12's code and word layout, and against its own invariants."""

import pytest

from kstep.engine import Invariant, Random, Scripted, explore, simulate, thread_index
from kstep.scenario_spec import scenario
from kstep.errors import UserError
from kstep.models.qspinlock import QspinlockModel
from kstep.models.qspinlock import powerpc as qppc
from kstep.models.qspinlock import qspinlock as qgen
from kstep.models.qspinlock import qspinlock_types as qtypes
from kstep.models.qspinlock import state as q
from kstep.models.qspinlock.qspinlock_types import LAYOUTS
from kstep.models.qspinlock.variants import VARIANTS
from kstep.views.presentation import present

from support import assert_breaker_catches, labels_of, load, table_first, variants

MECH = "qspinlock"
SCENARIOS = scenario.bundled(MECH)
# Scenarios written for one scripted run (explorable = false), whose state space no exhaustive test
# can cover, as test_scenarios_stay_small_enough_to_explore_in_class checks: the rest are explored.
EXPLORABLE = [name for name in SCENARIOS if load(MECH, name)[1].explorable]
CORRECT, BROKEN = variants(MECH)

# For every invariant: a broken variant and a bundled scenario in which it is violated.
BREAKERS = {
    "mutual-exclusion": ("head-ignores-pending", "two-waiters"),
    "legal-lock-word": ("xchg16-one-bit-pending", "one-bit-pending"),
    "tail-names-last-queued": ("clear-tail-always", "three-waiters"),
    "fifo": ("mcs-spin-skipped", "three-waiters"),
    "one-pending-owner": ("pending-not-undone", "three-waiters"),
    "mcs-nodes-per-cpu": ("count-after-init", "nesting"),
    "no-lost-handoff": ("link-before-init", "three-waiters"),
}
# Exhaustive runs that take more than a couple of seconds on the development machine.
# The largest searches (powerpc's, 15-20 s each on a loaded 2-CPU machine) run in make test only.
SLOW = {("powerpc", "nesting"), ("powerpc", "three-waiters"), ("powerpc", "one-bit-pending")}



def word_after(trace, actor, label, lock=0):
    """The lock word just after ``actor`` took ``label`` (its first time)."""
    k = next(k for k, a in enumerate(trace.actions) if a.actor == actor and a.label == label)
    return trace.states[k + 1].words[lock]


# --- the lock word: include/asm-generic/qspinlock_types.h ------------------------------------------------


@pytest.mark.parametrize("bits, expected", [
    # reference §2.1: PENDING_MASK, TAIL_IDX_OFFSET/MASK, TAIL_CPU_OFFSET/BITS/MASK, TAIL_OFFSET/MASK, LP_MASK
    (8, (0x0000ff00, 16, 0x00030000, 18, 14, 0xfffc0000, 16, 0xffff0000, 0x0000ffff)),
    (1, (0x00000100, 9, 0x00000600, 11, 21, 0xfffff800, 9, 0xfffffe00, 0x000001ff)),
])
def test_word_constants_match_qspinlock_types_h(bits, expected):
    lay = LAYOUTS[bits]
    assert (lay.PENDING_MASK, lay.TAIL_IDX_OFFSET, lay.TAIL_IDX_MASK, lay.TAIL_CPU_OFFSET, lay.TAIL_CPU_BITS,
            lay.TAIL_CPU_MASK, lay.TAIL_OFFSET, lay.TAIL_MASK, lay.LOCKED_PENDING_MASK) == expected
    assert (qtypes._Q_LOCKED_OFFSET, qtypes._Q_LOCKED_BITS, qtypes._Q_LOCKED_MASK) == (0, 8, 0xff)
    assert (qtypes._Q_LOCKED_VAL, qtypes._Q_PENDING_VAL, qtypes._Q_PENDING_OFFSET) == (1, 0x100, 8)


def test_tail_encoding_examples():
    assert qgen.encode_tail(LAYOUTS[8], 0, 0) == 0x00040000
    assert qgen.encode_tail(LAYOUTS[8], 5, 2) == 0x001a0000
    assert qgen.encode_tail(LAYOUTS[1], 5, 2) == (6 << 11) | (2 << 9) == 0x00003400
    for bits in (8, 1):
        for cpu in (0, 1, 7, 4095):
            for idx in range(q.MAX_NODES):
                assert qgen.decode_tail(LAYOUTS[bits], qgen.encode_tail(LAYOUTS[bits], cpu, idx)) == (cpu, idx)


def test_pending_bits_follow_nr_cpus():
    assert [qtypes.pending_bits_for(n) for n in (2, 8192, 16383, 16384, 1 << 20)] == [8, 8, 8, 1, 1]


def test_powerpc_word_constants_match_its_qspinlock_types_h():
    assert (qppc.PPC_LOCKED_VAL, qppc.PPC_OWNER_CPU_MASK, qppc.PPC_SLEEPY_VAL, qppc.PPC_MUST_Q_VAL,
            qppc.PPC_TAIL_CPU_MASK) == (0x1, 0x7ffe, 0x8000, 0x10000, 0xfffe0000)
    assert qppc.ppc_encode_locked_val(3) == 0x7 and qppc.ppc_encode_tail_cpu(2) == 0x00060000


# The shared contract with the kernel-lab C port: every label it logs, with the 6.12 function it names.
QS, MCS, GEN = "kernel/locking/qspinlock.c", "kernel/locking/mcs_spinlock.h", "include/asm-generic/qspinlock.h"
CONTRACT = {
    "queued_spin_lock": f"{GEN}:queued_spin_lock", "wait_pending_handover": f"{QS}:queued_spin_lock_slowpath",
    "queued_fetch_set_pending_acquire": f"{QS}:queued_fetch_set_pending_acquire",
    "clear_pending": f"{QS}:clear_pending", "wait_locked_clear": f"{QS}:queued_spin_lock_slowpath",
    "clear_pending_set_locked": f"{QS}:clear_pending_set_locked", "node_count_inc": f"{QS}:queued_spin_lock_slowpath",
    "mcs_node_init": f"{QS}:queued_spin_lock_slowpath", "queued_spin_trylock": f"{GEN}:queued_spin_trylock",
    "xchg_tail": f"{QS}:xchg_tail", "link_prev": f"{QS}:queued_spin_lock_slowpath",
    "mcs_spin": f"{MCS}:arch_mcs_spin_lock_contended", "wait_head": f"{QS}:queued_spin_lock_slowpath",
    "claim_cmpxchg": f"{QS}:queued_spin_lock_slowpath", "set_locked": f"{QS}:set_locked",
    "wait_next": f"{QS}:queued_spin_lock_slowpath", "mcs_handoff": f"{MCS}:arch_mcs_spin_unlock_contended",
    "release_node": f"{QS}:queued_spin_lock_slowpath",
    "critical_section": "outside the kernel: spin_lock()'s caller",
    "queued_spin_unlock": f"{GEN}:queued_spin_unlock",
    # before-set-locked only: the trylock-or-pending cmpxchg loop of 2014
    "trylock_pending_cmpxchg": f"{QS}:queued_spin_lock_slowpath",
}


def test_labels_are_the_contracts():
    sources = {label: str(src) for label, src in QspinlockModel("v6.12").sources().items()}
    only_in_variants = {"store_node_count", "virt_spin_lock", "virt_spin_lock_cmpxchg"}  # count-after-init, tas
    assert {k: v for k, v in sources.items() if k not in only_in_variants} == CONTRACT


def test_6_12_runs_take_every_contract_label_and_no_other():
    seen = set()
    for name in SCENARIOS:
        m, sc, s0 = load(MECH, name)
        for seed in range(40):
            seen |= {a.label for a in simulate(m, s0, Random(seed), max_steps=sc.max_steps).actions}
    # clear_pending needs a narrow race: test_clear_pending_undoes_only_our_pending scripts it
    assert seen == set(CONTRACT) - {"clear_pending", "trylock_pending_cmpxchg"}


def test_clear_pending_undoes_only_our_pending():
    """C3 reads (0,0,1) on its fast path; C2's tail lands before C3 sets pending; C3 sees the tail
    in the old value, undoes its pending bit and queues behind C2 (reference §2.3 step 5)."""
    m, sc, s0 = load(MECH, "three-waiters")
    tr = simulate(m, s0, Scripted("C0 C1 C1 C2*4 C0 C0 C1 C1 C3 C2 C3 C3"))
    assert labels_of(tr, "C3")[:4] == ["queued_spin_lock", "queued_fetch_set_pending_acquire", "clear_pending",
                                       "node_count_inc"]
    assert word_after(tr, "C3", "queued_fetch_set_pending_acquire") == 0x000c0101
    assert word_after(tr, "C3", "clear_pending") == 0x000c0001
    assert tr.outcome == "finished"


# --- the kernel's step order ------------------------------------------------------------------------------


def test_fast_path_and_unlock_touch_only_the_locked_byte():
    m, sc, s0 = load(MECH, "uncontended")
    tr = simulate(m, s0, Scripted(sc.schedule))
    fast = ["queued_spin_lock", "critical_section", "queued_spin_unlock"]
    assert labels_of(tr, "C0") == fast * 2 and labels_of(tr, "C1") == fast
    assert [s.words[0] for s in tr.states] == [0] + [1, 1, 0] * 3


def test_pending_path_in_order():
    """Reference §2.3 steps 4-7: set pending, wait for the owner, clear_pending_set_locked."""
    m, sc, s0 = load(MECH, "pending-path")
    tr = simulate(m, s0, Scripted(sc.schedule))
    assert labels_of(tr, "C1") == ["queued_spin_lock", "queued_fetch_set_pending_acquire", "wait_locked_clear",
                                   "clear_pending_set_locked", "critical_section", "queued_spin_unlock"]
    assert word_after(tr, "C1", "queued_fetch_set_pending_acquire") == 0x101  # (0,1,1)
    assert word_after(tr, "C0", "queued_spin_unlock") == 0x100  # (0,1,0)
    assert word_after(tr, "C1", "clear_pending_set_locked") == 0x001  # (0,0,1)
    assert present(m).answers(tr)["pending path"] == 1 and present(m).answers(tr)["queued"] == 0


def test_queue_path_in_order_and_the_lone_head_claims_with_cmpxchg():
    """Steps 8-21: node, init, trylock, xchg_tail, head wait, cmpxchg (tail is ours), release."""
    m, sc, s0 = load(MECH, "two-waiters")
    tr = simulate(m, s0, Scripted(sc.schedule))
    assert labels_of(tr, "C2") == [
        "queued_spin_lock", "node_count_inc", "mcs_node_init", "queued_spin_trylock", "xchg_tail", "wait_head",
        "claim_cmpxchg", "release_node", "critical_section", "queued_spin_unlock"]
    assert word_after(tr, "C2", "xchg_tail") == 0x000c0101  # cpu2/idx0 with pending and locked kept
    assert word_after(tr, "C2", "claim_cmpxchg") == 0x00000001  # n,0,0 -> 0,0,1


def test_a_successor_links_spins_on_its_node_and_is_handed_the_queue():
    m, sc, s0 = load(MECH, "three-waiters")
    tr = simulate(m, s0, Scripted(sc.schedule))
    assert labels_of(tr, "C3") == [
        "queued_spin_lock", "node_count_inc", "mcs_node_init", "queued_spin_trylock", "xchg_tail", "link_prev",
        "mcs_spin", "wait_head", "claim_cmpxchg", "release_node", "critical_section", "queued_spin_unlock"]
    assert labels_of(tr, "C2")[5:9] == ["wait_head", "set_locked", "wait_next", "mcs_handoff"]
    k = next(k for k, a in enumerate(tr.actions) if str(a) == "C2:mcs_handoff")
    assert tr.states[k].nodes[q.node_id(2, 0)].next == q.node_id(3, 0)
    assert tr.states[k + 1].nodes[q.node_id(3, 0)].locked == 1
    # set_locked is the byte store: the tail (C3's) stays
    assert word_after(tr, "C2", "set_locked") == qgen.encode_tail(LAYOUTS[8], 3, 0) | 1


def test_one_bit_layout_uses_its_own_xchg_tail_and_atomics():
    m, sc, s0 = load(MECH, "one-bit-pending")
    tr = simulate(m, s0, Scripted(sc.schedule))
    assert word_after(tr, "C2", "xchg_tail") == 0x00001901  # cpu2/idx0 = 0x1800, pending 0x100, locked
    assert word_after(tr, "C3", "xchg_tail") == 0x00002101
    assert word_after(tr, "C1", "clear_pending_set_locked") == 0x00002001
    assert tr.outcome == "finished"


def test_nesting_interrupt_takes_node_one_and_holds_its_task_back():
    m, sc, s0 = load(MECH, "nesting")
    tr = simulate(m, s0, Scripted(sc.schedule))
    k = next(k for k, a in enumerate(tr.actions) if str(a) == "C0.irq:node_count_inc")
    s = tr.states[k + 1]
    irq = s.threads[thread_index(s, "C0.irq")]
    assert irq.idx == 1 and s.threads[thread_index(s, "C0")].idx == 0 and s.count[0] == 2
    assert word_after(tr, "C0.irq", "xchg_tail", lock=1) == 0x00050101  # cpu0/idx1 on lock B
    # while the interrupt is in progress, C0 has no action even where its own step is enabled
    for state in tr.states[k + 1:]:
        irq_frames = state.threads[thread_index(state, "C0.irq")].frames
        if irq_frames and irq_frames[0].label != "queued_spin_lock":
            assert all(a.actor != "C0" for a in m.actions(state))
    assert tr.states[-1].count == (0, 0, 0) and tr.outcome == "finished"


def test_the_nested_nmi_finds_no_node_left_and_spins_with_trylock():
    """Task, softirq, hardirq and NMI of C0 queue on locks A-D with nodes 0-3; the NMI nested in the
    NMI gets idx 4 >= MAX_NODES and takes the 6.12 fallback: trylock until lock E is free."""
    m, sc, s0 = load(MECH, "trylock-fallback")
    tr = simulate(m, s0, Scripted(sc.schedule))
    k = next(k for k, a in enumerate(tr.actions) if str(a) == "C0.nested_nmi:node_count_inc")
    s = tr.states[k + 1]
    idx = {t.name: t.idx for t in s.threads if t.cpu == 0}
    assert idx == {"C0": 0, "C0.softirq": 1, "C0.irq": 2, "C0.nmi": 3, "C0.nested_nmi": 4} and s.count[0] == 5
    assert labels_of(tr, "C0.nested_nmi") == ["queued_spin_lock", "wait_pending_handover", "node_count_inc",
                                              "queued_spin_trylock", "release_node", "critical_section",
                                              "queued_spin_unlock"]
    assert not any(st.words[4] & LAYOUTS[8].TAIL_MASK for st in tr.states)  # never queued on lock E
    # while it spins, every node of C0 is in use by a context queued below it
    assert {qgen.decode_tail(LAYOUTS[8], s.words[lock] & LAYOUTS[8].TAIL_MASK) for lock in range(4)} == {
        (0, 0), (0, 1), (0, 2), (0, 3)}
    assert tr.outcome == "finished" and tr.states[-1].count == (0, 0, 0)


def test_nesting_is_off_unless_a_scenario_asks_for_it():
    for name in ("three-waiters", "pending-path"):
        m, sc, s0 = load(MECH, name)
        assert [t.name for t in s0.threads] == [f"C{k}" for k in range(len(sc.config["cpus"]))] and s0.nest == ()


def test_a_nested_nmi_starts_only_inside_the_nmi_and_holds_everything_below_it():
    m, sc, s0 = load(MECH, "trylock-fallback")
    assert "C0.nested_nmi" not in {a.actor for a in m.actions(s0)}
    s = simulate(m, s0, Scripted("C0.nmi"), max_steps=1).states[-1]  # the NMI is in progress
    movers = {a.actor for a in m.actions(s)}
    assert "C0.nested_nmi" in movers and not movers & {"C0", "C0.softirq", "C0.irq"}
    s = simulate(m, s, Scripted("C0.nested_nmi"), max_steps=1).states[-1]
    assert {a.actor for a in m.actions(s)} & {"C0", "C0.softirq", "C0.irq", "C0.nmi"} == set()


@pytest.mark.parametrize("cpu, says", [
    ('locks = ["A"]\nnested_nmi = ["B"]\n', "a nested NMI needs an NMI on CPU 0"),
    ('locks = ["A"]\nsoftirq = ["B"]\nnmi = ["B"]\n', "lock B is also taken in NMI context"),
    ('locks = ["C"]\nnmi = ["B"]\n[[cpus]]\nlocks = ["A"]\nnmi = ["C"]\n', "spin_lock_irqsave"),
])
def test_a_context_may_not_share_a_lock_with_one_that_can_interrupt_it(cpu, says):
    with pytest.raises(UserError, match=says):
        scenario.parse(MECH, QspinlockModel.scenario_schema, "x",
                       f'description = "d"\nlook_for = "l"\n[[cpus]]\n{cpu}', "x.toml", [])


def test_an_interrupt_may_not_share_a_lock_with_its_own_task():
    schema = QspinlockModel.scenario_schema
    text = 'description = "d"\nlook_for = "l"\n[[cpus]]\nlocks = ["A"]\nirq = ["A"]\n'
    with pytest.raises(UserError, match="spin_lock_irqsave"):
        scenario.parse(MECH, schema, "x", text, "x.toml", [])
    with pytest.raises(UserError, match="pending_bits: 4 is neither"):
        scenario.parse(MECH, schema, "x", "pending_bits = 4\n" + text.replace('irq = ["A"]', ""),
                       "x.toml", [])


# --- set_locked: where patch 07/11 applies --------------------------------------------------------------


def test_set_locked_is_reached_in_the_contended_scenario():
    m, sc, s0 = load(MECH, "set-locked-contended")
    tr = simulate(m, s0, Scripted(sc.schedule))
    k = next(k for k, a in enumerate(tr.actions) if str(a) == "C2:set_locked")
    before = tr.states[k].words[0]
    assert before & LAYOUTS[8].TAIL_MASK == qgen.encode_tail(LAYOUTS[8], 0, 0)  # the tail is C0's, not C2's
    counted = present(m).answers(tr)
    assert counted["head claims: set_locked"] == 1 and counted["head claims: cmpxchg"] == 1


def _contended_when_set_locked(s, a, t):
    """set_locked only while another context is also after the lock (queued, or pending and about to)."""
    if a.label != "set_locked":
        return None
    me = s.threads[thread_index(s, a.actor)]
    rivals = [o for o in s.threads if o is not me and o.lock == me.lock and o.frames
              and o.frames[0].label not in ("critical_section", "queued_spin_unlock")]
    return None if rivals else f"{a.actor} used set_locked as the only waiter"


@pytest.mark.parametrize("name", EXPLORABLE)
def test_set_locked_is_never_taken_when_the_head_is_the_only_waiter(name):
    m, sc, s0 = load(MECH, name)
    m.invariants = [Invariant("set-locked-contended", "", _contended_when_set_locked, transition=True)]
    assert explore(m, s0).clean


def test_before_set_locked_claims_every_time_with_cmpxchg():
    m, sc, s0 = load(MECH, "set-locked-contended", "before-set-locked")
    tr = simulate(m, s0, Random(3))
    assert not any(a.label == "set_locked" for a in tr.actions)
    m2, _, s0 = load(MECH, "three-waiters", "before-set-locked")
    tr = simulate(m2, s0, Scripted("C0 C1 C1 C2*5 C3*6 C0 C0 C1*4 C2*6"))
    c2 = labels_of(tr, "C2")
    assert c2[5:9] == ["wait_head", "claim_cmpxchg", "wait_next", "mcs_handoff"]
    # contended claim before 07/11: cmpxchg(val, val | _Q_LOCKED_VAL) keeps the successor's tail
    assert word_after(tr, "C2", "claim_cmpxchg") == qgen.encode_tail(LAYOUTS[8], 3, 0) | 1


def test_before_set_locked_takes_the_pending_path_of_its_own_time():
    """The pre-image of patch 07/11: a cmpxchg loop takes a free lock or sets pending on (0,0,1)."""
    m, sc, s0 = load(MECH, "pending-path", "before-set-locked")
    tr = simulate(m, s0, Scripted(sc.schedule))
    assert labels_of(tr, "C1") == ["queued_spin_lock", "trylock_pending_cmpxchg", "wait_locked_clear",
                                   "clear_pending_set_locked", "critical_section", "queued_spin_unlock"]
    assert word_after(tr, "C1", "trylock_pending_cmpxchg") == 0x101  # 0,0,1 -> 0,1,1
    # the lock was let go between C1's fast path and its cmpxchg: the retry takes it (0,0,0 -> 0,0,1)
    tr = simulate(m, s0, Scripted("C0 C1 C0 C0 C1 C1"))
    assert labels_of(tr, "C1")[:4] == ["queued_spin_lock", "trylock_pending_cmpxchg", "trylock_pending_cmpxchg",
                                       "critical_section"]
    assert word_after(tr, "C1", "critical_section") == 0x001


def _pending_set_on_a_tail(s, a, t):
    lay = LAYOUTS[s.pending_bits]
    for before, after in zip(s.words, t.words):
        if after & lay.PENDING_MASK and not before & lay.PENDING_MASK and before & lay.TAIL_MASK:
            return f"{a} set pending on {before:#010x}, whose tail is set"
    return None


@pytest.mark.parametrize("variant, sets_it", [("before-set-locked", False), ("v6.12", True)])
def test_only_6_12_sets_pending_while_a_tail_is_set(variant, sets_it):
    """6.12's fetch_or sets pending whatever the word holds (and undoes it on seeing a tail); the 2014
    loop queues on seeing a tail, so its cmpxchg never sets pending next to one."""
    m, sc, s0 = load(MECH, "three-waiters", variant)
    m.invariants = [Invariant("no-pending-on-a-tail", "", _pending_set_on_a_tail, transition=True)]
    r = explore(m, s0)
    assert r.exhausted or sets_it
    assert (r.violation is not None) == sets_it, r.violation


@pytest.mark.parametrize("variant, waits", [("before-set-locked", True), ("v6.12", False)])
def test_the_pending_hand_over_wait_is_unbounded_only_before_set_locked(variant, waits):
    """C2 arrives while C1 owns pending and the lock is free, (0,1,0): 6.12's wait gives up after
    _Q_PENDING_LOOPS reads; the 2014 wait lasts until the word changes."""
    m, sc, s0 = load(MECH, "three-waiters", variant)
    s = simulate(m, s0, Scripted("C0 C1 C1 C0 C0 C2"), max_steps=6).states[-1]
    assert s.words[0] == 0x100 and s.threads[2].frames[0].label == "wait_pending_handover"
    assert all(a.actor != "C2" for a in m.actions(s)) == waits


# --- the other 6.12 locks --------------------------------------------------------------------------------


def test_ticket_lock_serves_tickets_in_order():
    m, sc, s0 = load(MECH, "three-waiters", "ticket")
    tr = simulate(m, s0, Scripted("C0 C1 C2 C3"))
    assert tr.states[4].words[0] == 0x00040000  # four tickets drawn, ticket 0 served
    order = [a.actor for a in tr.actions if a.label == "critical_section"]
    assert order == ["C0", "C1", "C2", "C3"]
    assert tr.states[-1].words[0] == 0x00040004


@pytest.mark.parametrize("variant", CORRECT)
def test_finished_runs_leave_no_ghost_behind(variant):
    """Every queued context has left the queue, every hand-off and link was seen, every node is free."""
    m, sc, s0 = load(MECH, "nesting", variant)
    for seed in range(20):
        end = simulate(m, s0, Random(seed)).states[-1]
        assert end.ghost_queue == ((), ()) and end.ghost_order == ((), ())
        assert not end.ghost_handoffs and not end.ghost_links and end.count == (0, 0, 0)
        assert end.words == (0, 0) or variant == "ticket"


def test_powerpc_steals_sets_must_queue_and_clears_it_on_taking_the_lock():
    m, sc, s0 = load(MECH, "powerpc-stealing", "powerpc")
    totals = {"stolen": 0, "must-queue set": 0, "queued": 0}
    for seed in range(60):
        tr = simulate(m, s0, Random(seed))
        assert tr.outcome == "finished", tr.violation
        for key in totals:
            totals[key] += present(m).answers(tr)[key]
        for a, before, after in zip(tr.actions, tr.states, tr.states[1:]):
            if a.label == "trylock_clean_tail" and not before.words[0] & qppc.PPC_LOCKED_VAL:
                assert not after.words[0] & qppc.PPC_MUST_Q_VAL
                assert after.words[0] & qppc.PPC_OWNER_CPU_MASK == int(a.actor[1:]) << 1
    assert all(totals.values()), totals


def test_powerpc_stealer_queues_when_must_queue_is_set():
    m, sc, s0 = load(MECH, "powerpc-stealing", "powerpc")
    s = s0._replace(words=(qppc.PPC_MUST_Q_VAL | qppc.ppc_encode_tail_cpu(1) | qppc.ppc_encode_locked_val(2),))
    s = m.step(s, m.actions(s)[0])  # C0's fast path fails: must-queue stops the trylock
    assert s.threads[0].frames[0].label == "try_to_steal_lock"
    s = m.step(s, m.actions(s)[0])
    assert s.threads[0].frames[0].label == "queued_spin_lock_mcs_queue"


# --- invariants both ways, and every bug found ---------------------------------------------------------------


def test_broken_variants_replace_only_existing_labels():
    base = QspinlockModel()
    known = set(base.table.steps) | set(base.table.calls)
    for name in BROKEN:
        assert VARIANTS[name].replaces and set(VARIANTS[name].replaces) <= known, name


def test_every_invariant_has_a_breaker():
    assert set(BREAKERS) == {i.name for i in QspinlockModel.invariants}


@pytest.mark.parametrize("invariant", sorted(BREAKERS))
def test_each_invariant_alone_catches_its_breaker(invariant):
    assert_breaker_catches(MECH, invariant, *BREAKERS[invariant])


# A variant whose bug only a weaker memory model shows (it names the litmus test that does) stays
# clean here: test_memory_model checks what explore says of it.
@pytest.mark.parametrize("variant", [v for v in BROKEN if "litmus" not in VARIANTS[v].params])
def test_explore_finds_every_broken_variant(variant):
    """The first bundled scenario that catches the bug is enough: the ones the committed table says
    catch it go first, and the clean ones are searched to their end only if the table is out of date."""
    for name in table_first(MECH, variant, EXPLORABLE, lambda row: row.get("verdict") == "violation"):
        m, sc, s0 = load(MECH, name, variant)
        r = explore(m, s0, max_states=200_000)
        if r.violation:
            assert r.counterexample.violation == r.violation
            assert len(r.counterexample) <= 32
            return
    pytest.fail(f"{variant} was not caught in any bundled scenario")


def _explore_params():
    """The correct variants but the kernel's own, which test_cli explores on every scenario through the
    CLI (test_every_bundled_scenario_is_clean_with_the_kernels_variant)."""
    for variant in [v for v in CORRECT if v != QspinlockModel.default_variant]:
        for name in EXPLORABLE:
            marks = [pytest.mark.slow] if (variant, name) in SLOW else []
            yield pytest.param(variant, name, marks=marks, id=f"{variant}-{name}")


@pytest.mark.parametrize("variant, name", list(_explore_params()))
def test_explore_exhausts_correct_variants_cleanly(variant, name):
    m, sc, s0 = load(MECH, name, variant)
    r = explore(m, s0)
    assert r.exhausted and r.clean, (r.violation, r.counterexample and [str(a) for a in r.counterexample.actions])


def test_link_before_init_lets_init_wipe_out_a_hand_off():
    """C3 links in behind C2 before initialising its node; C2 takes the lock, finds C3 and hands the
    queue over (C3's node->locked = 1); then C3's late initialisation stores node->locked = 0."""
    m, sc, s0 = load(MECH, "three-waiters", "link-before-init")
    script = "C0 C1 C1 C2*5 C3*5 C0 C0 C1*4 C2*4 C3"
    tr = simulate(m, s0, Scripted(script), max_steps=24)
    assert [str(a) for a in tr.actions[-6:]] == [
        "C1:queued_spin_unlock", "C2:wait_head", "C2:set_locked", "C2:wait_next", "C2:mcs_handoff",
        "C3:mcs_node_init"]
    assert (tr.violation.invariant, tr.violation.kind, tr.violation.step) == ("no-lost-handoff", "assertion", 24)
    assert "hand-off to C3 was lost" in tr.violation.message
    # the run goes on past the broken assertion to its harm: C3 waits for a hand-off that never comes
    assert simulate(m, s0, Scripted(script)).violation.invariant == "deadlock"


def test_lost_handoff_is_a_deadlock_even_without_the_ghost():
    m, sc, s0 = load(MECH, "three-waiters", "link-before-init")
    m.invariants = []
    r = explore(m, s0)
    assert r.violation.invariant == "deadlock"


def test_xchg16_counterexample_has_the_hand_derived_length():
    """one-bit-pending on xchg16-one-bit-pending: C0 takes the lock (1), C1 fails the fast path and
    sets pending (2), so C2's fast path sees (0,1,1) and queues: node_count_inc, mcs_node_init, the
    failed trylock, xchg_tail (5).  Its 16-bit exchange puts tail >> 9 into bits 16-31: 1 + 2 + 5 = 8."""
    m, sc, s0 = load(MECH, "one-bit-pending", "xchg16-one-bit-pending")
    r = explore(m, s0, harm_first=False)
    assert r.violation.invariant == "legal-lock-word" and len(r.counterexample) == 8
    assert r.counterexample.actions[-1].label == "xchg_tail"


def test_count_after_init_counterexample_has_the_hand_derived_length():
    """nesting on count-after-init: the interrupt must grab a node while C0 holds node 0 of A with
    its count increment still unstored.  Counting the steps nobody can skip: the interrupt fails on
    B and grabs (2); B needs a holder and a pending owner, both of them first done with A -- the
    holder takes A, leaves it (3) and takes B (1), the other fails on B and sets pending (2) after
    its own turn with A; C0 queues on A only if it sees pending there, so that other CPU takes A by
    pending: fails, sets pending, clear_pending_set_locked, leaves (5).  C0 fails on A and grabs (2),
    and one more step is unavoidable: either C0 sees pending only at its own
    queued_fetch_set_pending_acquire, or the pending owner found A locked and must wait_locked_clear.
    2 + 4 + 2 + 5 + 2 + 1 = 16."""
    m, sc, s0 = load(MECH, "nesting", "count-after-init")
    r = explore(m, s0, harm_first=False)
    assert r.violation.invariant == "mcs-nodes-per-cpu" and len(r.counterexample) == 16
    assert [str(a) for a in r.counterexample.actions[-2:]] == ["C0.irq:queued_spin_lock", "C0.irq:node_count_inc"]


def test_pending_not_undone_counterexample_has_the_hand_derived_length():
    """three-waiters on pending-not-undone.  C3 must set pending itself while a tail exists, so it
    reads (0,0,1) on its fast path after C1 has taken the lock by pending, and before C2 publishes its
    tail.  C0 locks (1); C1 fails, sets pending (2); C2 fails and gets its node ready (4); C0 unlocks
    (2); C1 waits and takes the lock (2); C3 fails on (0,0,1) (1); C2 publishes (1); C3 sets pending,
    sees the tail and queues without undoing it (1): 14."""
    m, sc, s0 = load(MECH, "three-waiters", "pending-not-undone")
    r = explore(m, s0, harm_first=False)
    assert r.violation.invariant == "one-pending-owner" and len(r.counterexample) == 14


@pytest.mark.slow  # explores every scenario up to 50,000 states
def test_scenarios_stay_small_enough_to_explore_in_class():
    for name in SCENARIOS:
        m, sc, s0 = load(MECH, name)
        r = explore(m, s0, max_states=50_000)
        assert r.exhausted == (name in EXPLORABLE), (name, r.states)
