"""The RCU model: gp_seq arithmetic as in kernel/rcu/rcu.h, per-CPU quiescent-state reports as in
kernel/rcu/tree.c, and its invariants both ways."""

import pytest

from kstep.engine import Scripted, Variant, explore, simulate
from kstep.scenario_spec import scenario
from kstep.scenario_spec.expect import ExpectError
from kstep.models import rcu
from kstep.models.rcu import (RCU_GP_SEQ_INIT, ULONG_MAX, RcuModel, gp_seq_long, rcu_do_batch, rcu_seq_done,
                              rcu_seq_snap)
from kstep.views.presentation import present

from support import assert_breaker_catches, load

MECH = "rcu"
SCENARIOS = scenario.bundled(MECH)
BREAKERS = {
    "grace-period-waits-for-readers": ("gp-ends-early", "grace-period-basics"),
    "callbacks-after-grace-period": ("early-callback", "grace-period-basics"),
    "no-use-after-free": ("early-callback", "synchronize-rcu-vs-reader"),
}


def scripted(name):
    m, sc, s0 = load(MECH, name)
    return m, simulate(m, s0, Scripted(sc.schedule))


def test_gp_seq_starts_where_6_12_starts_it_and_prints_as_the_tracepoints_do():
    # kernel/rcu/tree.c: .gp_seq = (0UL - 300UL) << RCU_SEQ_CTR_SHIFT, an unsigned long
    assert RCU_GP_SEQ_INIT == 2**64 - 1200
    m, sc, s0 = load(MECH, "grace-period-basics")
    assert s0.rcu.gp_seq == RCU_GP_SEQ_INIT and present(m).summary(s0)["gp_seq"] == "-1200"
    assert [gp_seq_long(rcu_seq_snap(s)) for s in (RCU_GP_SEQ_INIT, RCU_GP_SEQ_INIT + 1)] == [-1196, -1192]


def test_rcu_seq_snap_waits_for_the_next_full_grace_period_across_the_wrap():
    assert [rcu_seq_snap(s) for s in (0, 1, 4, 5, 8)] == [4, 8, 8, 12, 12]
    assert rcu_seq_snap(ULONG_MAX - 3) == 0 and rcu_seq_snap(ULONG_MAX - 2) == 4  # (long) -4 and -3
    assert not rcu_seq_done(ULONG_MAX - 3, 0) and rcu_seq_done(0, 0) and rcu_seq_done(4, 0)


def test_a_grace_period_started_just_before_the_wrap_still_waits_for_its_reader():
    """gp_seq -4: the callback waits for gp_seq 0, which a plain >= would call reached at once."""
    m, sc, s0 = load(MECH, "grace-period-basics")
    before_wrap = s0._replace(rcu=s0.rcu._replace(gp_seq=ULONG_MAX - 3))
    tr = simulate(m, before_wrap, Scripted(sc.schedule))
    assert tr.outcome == "finished" and tr.violation is None
    assert [gp_seq_long(s) for s in dict.fromkeys(s.rcu.gp_seq for s in tr.states)] == [-4, -3, 0]
    assert explore(m, before_wrap).clean

    class PlainGe(RcuModel):  # the same model with rcu_seq_done as a plain >=
        variants = {"plain-ge": Variant.bug("plain-ge", "rcu_seq_done is gp_seq >= s, blind to the wrap",
                                            rcu_do_batch=rcu_do_batch(lambda g, s: g >= s, rcu._invoke))}
        default_variant = "plain-ge"

    r = explore(PlainGe(), before_wrap)
    assert r.harm and r.violation.invariant == "no-use-after-free"  # R reads the object kfree freed at once


def test_grace_period_basics_frees_only_after_the_grace_period():
    m, tr = scripted("grace-period-basics")
    assert tr.outcome == "finished" and tr.violation is None
    labels = [str(a) for a in tr.actions]
    gp_start, fqs, qs, gp_end, free = (labels.index(x) for x in (
        "rcu:rcu_gp_init", "rcu:rcu_gp_fqs", "R:rcu_report_qs_rdp", "rcu:rcu_gp_cleanup", "rcu:rcu_do_batch"))
    first_unlock = labels.index("R:rcu_read_unlock")
    assert gp_start < fqs < first_unlock < qs < gp_end < free
    during = tr.states[gp_start + 1:gp_end + 1]
    assert any(s.rcu.nesting[0] and s.threads[0].obj == 0 != s.gp for s in during)  # R holds the old object
    assert [gp_seq_long(s.rcu.gp_seq) for s in (tr.states[gp_start + 1], tr.states[-1])] == [-1199, -1196]
    assert present(m).answers(tr)["grace_periods"] == 1


def test_a_callback_queued_during_a_grace_period_waits_for_the_next():
    m, tr = scripted("call-rcu-callback")
    assert tr.outcome == "finished" and tr.violation is None
    queued = [(gp_seq_long(s.rcu.gp_seq), gp_seq_long(s.rcu.callbacks[-1].wait))
              for a, s in zip(tr.actions, tr.states[1:]) if a.label == "call_rcu"]
    assert queued == [(-1200, -1196), (-1199, -1192)]
    end1 = next(k for k, a in enumerate(tr.actions, 1) if a.label == "rcu_gp_cleanup")
    assert tr.states[end1].rcu.nesting[1] and tr.states[end1].threads[1].obj == 1  # R2 still holds object 1
    frees = [s.objects for a, s in zip(tr.actions, tr.states[1:]) if a.label == "rcu_do_batch"]
    assert frees[0][:2] == ("freed", "live") and frees[1][:2] == ("freed", "freed")
    assert present(m).answers(tr)["grace_periods"] == 2


def test_synchronize_rcu_sleeps_until_its_wakeme_callback_runs():
    m, tr = scripted("synchronize-rcu-vs-reader")
    labels = [str(a) for a in tr.actions]
    assert labels.index("U:wait_rcu_gp") > labels.index("rcu:rcu_do_batch") > labels.index("R:rcu_read_unlock")
    fqs = [k for k, a in enumerate(tr.actions) if a.label == "rcu_gp_fqs"]
    cleared = [tr.states[k].rcu.qsmask & ~tr.states[k + 1].rcu.qsmask for k in fqs]
    assert cleared == [0b10, 0b01]  # U's CPU while U sleeps, then R's once R has finished


def first_grace_period_reports(m, s0):
    """Every order in which the first grace period's quiescent states can be reported: tuples of
    (who reported, which CPUs' bits it cleared), over every interleaving."""
    orders, seen = set(), set()
    todo = [(s0, ())]
    while todo:
        s, order = todo.pop()
        if (s, order) in seen:
            continue
        seen.add((s, order))
        for a in m.actions(s):
            t = m.step(s, a)
            cleared = s.rcu.qsmask & ~t.rcu.qsmask
            now = order + ((a.actor, cleared),) if cleared else order
            if a.label == "rcu_gp_cleanup":
                orders.add(now)
            else:
                todo.append((t, now))
    return orders


def test_quiescent_states_are_reported_per_cpu_in_more_than_one_order():
    m, sc, s0 = load(MECH, "call-rcu-callback")
    orders = first_grace_period_reports(m, s0)
    names = ("R1", "R2", "U")
    # Each report clears one bit, by the CPU's own thread (rcu_report_qs_rdp) or by the scan.
    assert all(who == "rcu" or bits == 1 << names.index(who) for order in orders for who, bits in order)
    own = {tuple(who for who, _ in order) for order in orders if all(who != "rcu" for who, _ in order)}
    assert own == {(a, b, c) for a in names for b in names for c in names if len({a, b, c}) == 3}
    assert (("rcu", 0b110), ("R1", 0b001)) in orders  # or the scan takes two idle CPUs at once


def test_only_the_cpu_itself_or_the_idle_scan_reports_and_never_inside_a_section():
    m, sc, s0 = load(MECH, "call-rcu-callback")
    r = explore(m, s0)
    assert r.clean
    todo, seen = [s0], {s0}
    while todo:
        s = todo.pop()
        for a in m.actions(s):
            t = m.step(s, a)
            cleared = s.rcu.qsmask & ~t.rcu.qsmask
            cpus = [c for c in range(3) if cleared >> c & 1]
            assert all(not s.rcu.nesting[c] for c in cpus)
            if a.label == "rcu_report_qs_rdp":
                assert cpus == [[th.name for th in s.threads].index(a.actor)]
            elif a.label == "rcu_gp_fqs":
                assert cpus and all(m.idle(s) >> c & 1 for c in cpus)
            else:
                assert not cpus
            if t not in seen:
                seen.add(t)
                todo.append(t)


@pytest.mark.parametrize("name", SCENARIOS)
def test_explore_exhausts_the_correct_model_cleanly(name):
    m, sc, s0 = load(MECH, name)
    r = explore(m, s0)
    assert r.exhausted and r.clean


@pytest.mark.parametrize("variant", [n for n, v in RcuModel.variants.items() if v.broken])
def test_explore_finds_each_broken_variant_in_every_scenario(variant):
    for name in SCENARIOS:
        m, sc, s0 = load(MECH, name, variant)
        r = explore(m, s0)
        # every broken RCU variant lets a reader touch freed memory, and explore shows that harm
        assert r.harm and r.violation.invariant == "no-use-after-free", (name, r.violation)
        assert len(r.counterexample) <= 12


def test_every_invariant_has_a_breaker():
    assert set(BREAKERS) == {i.name for i in RcuModel.invariants}


@pytest.mark.parametrize("invariant", sorted(BREAKERS))
def test_each_invariant_alone_catches_its_breaker(invariant):
    assert_breaker_catches(MECH, invariant, *BREAKERS[invariant])


def test_expectations_ask_rcu_by_thread_name_and_read_gp_seq_as_the_tracepoints_print_it():
    m, sc, s0 = load(MECH, "grace-period-basics")
    tr = simulate(m, s0, Scripted(sc.schedule))
    fns = m.expect_functions()
    assert fns["gp_seq"](tr.states[5]) == -1199 and fns["long"](s0, rcu_seq_snap(RCU_GP_SEQ_INIT)) == -1196
    assert fns["in_section"](tr.states[5], "R") and fns["awaits"](tr.states[5], "R")
    assert not fns["awaits"](tr.states[6], "U") and fns["gp_running"](tr.states[6])
    with pytest.raises(ExpectError, match="no thread 'Z'"):
        fns["in_section"](s0, "Z")
