"""The DAMON model: kdamond_fn's phases in 6.12's order, its invariants both ways, and its variants.

Every exploration here is of a bundled ``explore-*`` scenario (three mappings of at most 32 KiB,
two sampling intervals per aggregation, at most three aggregations): kdamond is the only actor,
so each has one run of at most 40 states and takes milliseconds.
"""

import pytest

from kstep.engine import Action, RoundRobin, explore, simulate
from kstep.scenario_spec import scenario
from kstep.models.damon import model as dmodel
from kstep.models.damon.core import Region
from kstep.models.damon.model import DamonModel
from kstep.models.damon.rand import damon_rand

from support import assert_breaker_catches, labels_of, load, variants

MECH = "damon"
SCENARIOS = scenario.bundled(MECH)
# invariant -> (the broken variant that breaks it, the tiny scenario where explore shows it)
BREAKERS = {
    "merged-regions-within-sz-limit": ("merge-ignores-sz-limit", "explore-sz-limit"),
    "merge-and-split-keep-every-byte": ("split-loses-a-byte", "explore-sz-limit"),
    "age-grows-at-most-one": ("aging-after-merge", "explore-sz-limit"),
    "quota-limits-actions": ("quota-never-charged", "explore-quota"),
}
# the variants of 6.12.y without a fix that an invariant catches, and the scenario that shows it
KERNEL_BREAKERS = {
    "pre-6.12.90-zero-esz": ("quota-limits-actions", "explore-zero-esz"),
    "pre-6.12.110-merge-aging": ("age-grows-at-most-one", "explore-merge-passes"),
    "pre-6.12.110-folio-cache": ("counts-sampled-accesses", "explore-folio-cache"),
}


def run(name, variant=None):
    m, sc, s0 = load(MECH, name, variant)
    return m, simulate(m, s0, RoundRobin())


@pytest.mark.parametrize("invariant", sorted(BREAKERS))
def test_each_broken_variant_breaks_its_invariant_alone(invariant):
    assert_breaker_catches(MECH, invariant, *BREAKERS[invariant])


@pytest.mark.parametrize("variant", sorted(KERNEL_BREAKERS))
def test_each_6_12_y_fix_is_caught_where_it_is_missing(variant):
    invariant, name = KERNEL_BREAKERS[variant]
    assert_breaker_catches(MECH, invariant, variant, name)


def test_a_variant_is_broken_exactly_when_a_bundled_exploration_catches_it():
    ok, broken = variants(MECH)
    tiny = [n for n in SCENARIOS if n.startswith("explore-")]
    for v in ok + broken:
        caught = []
        for name in tiny:
            m, _, s0 = load(MECH, name, v)
            r = explore(m, s0, max_states=1000)
            assert r.exhausted or r.violation, (v, name)
            caught.append(r.violation is not None)
        assert any(caught) == (v in broken), (v, caught)


def test_kdamond_takes_its_phases_in_kdamond_fn_order():
    m, tr = run("explore-sz-limit")
    labels = labels_of(tr, dmodel.KDAMOND)
    one_sample = [dmodel.WAIT, dmodel.PREPARE, dmodel.SLEEP, dmodel.CHECK]
    # two samples per aggregation: the second check is followed by merge, reset and split
    assert labels[:1 + 8 + 3] == [dmodel.INIT] + one_sample * 2 + [dmodel.MERGE, dmodel.RESET, dmodel.SPLIT]
    assert tr.states[-1].k.aggregations == 2 and m.finished(tr.states[-1])


def test_time_advances_only_in_kdamond_usleep():
    m, tr = run("quota")
    for a, s, t in zip(tr.actions, tr.states, tr.states[1:]):
        if t.k.now_us != s.k.now_us:
            assert a.label == dmodel.SLEEP, a


def test_draws_are_one_damon_rand_per_region_in_list_order_and_one_per_split_point():
    """``draws`` counts get_random_u32() calls, so a rejected draw counts too: the sampling addresses
    are what damon_rand() gives region after region from the state's generator, nothing else draws."""
    m, tr = run("hot-block")
    for a, s, t in zip(tr.actions, tr.states, tr.states[1:]):
        if a.label == dmodel.PREPARE:
            rng, addrs = s.k.rng, []
            for r in s.regions:
                addr, rng = damon_rand(rng, r.start, r.end)
                addrs.append(addr)
            assert [r.sampling_addr for r in t.regions] == addrs and t.k.rng == rng
        elif a.label == dmodel.SPLIT:
            assert t.k.rng.draws - s.k.rng.draws >= len(t.regions) - len(s.regions)
        else:
            assert t.k.rng == s.k.rng, a


def test_sampled_past_counts_the_regions_that_sample_beyond_an_offset():
    """Ten regions of exactly 5 GiB (notebook 03's Predict 1): damon_rand's u32 span keeps every first
    sampling address in a region's first GiB, which ``sampled_past`` (a question's field) counts."""
    gib, big = 1 << 30, 0x7F0000000000
    vmas = (f"vmas=[{{start={0x10000000}, end={0x10800000}}}, {{start={big}, end={big + 50 * gib}}}, "
            f"{{start={0x7FFC00000000}, end={0x7FFC00100000}}}]")
    m, _, s0 = load(MECH, "hot-block", overrides=[vmas, "access=[]", "aggregations=1", "attrs.min_nr_regions=11"])
    tr = simulate(m, s0, RoundRobin())
    s = tr.states[tr.actions.index(Action("kdamond", dmodel.PREPARE)) + 1]
    past = m.expect_functions()["sampled_past"]
    inside = [r for r in s.regions if big <= r.start < big + 50 * gib]
    assert [r.end - r.start for r in inside] == [5 * gib] * 10
    assert past(s, big, big + 50 * gib, 0) == 10
    assert past(s, big, big + 50 * gib, gib) == 0
    assert past(s, big, big + 50 * gib, 1) == sum(r.sampling_addr > r.start for r in inside)


def test_a_seed_gives_the_same_run_and_another_seed_another():
    _, one = run("hot-block")
    _, two = run("hot-block")
    assert [s.regions for s in one.states] == [s.regions for s in two.states]
    m = DamonModel()
    sc = scenario.load(MECH, m.scenario_schema, "hot-block", ["seed=99"])
    other = simulate(m, m.initial(sc.config), RoundRobin())
    assert [s.regions for s in other.states] != [s.regions for s in one.states]


HUGE = 0x7F0000000000
# a 2 MiB THP between two small mappings; its one hot page lies 1 MiB past the huge page's head
HUGE_PAGE_TOUCHED_MID = [
    f"vmas=[{{start={0x10000000}, end={0x10010000}}}, {{start={HUGE}, end={HUGE + (2 << 20)}, thp=true}}, "
    f"{{start={0x7FFC00000000}, end={0x7FFC00010000}}}]",
    f"access=[{{start={HUGE + (1 << 20)}, end={HUGE + (1 << 20) + 4096}}}]",
    "aggregations=1", "attrs.min_nr_regions=3", "attrs.max_nr_regions=3"]


def test_a_huge_page_is_young_when_any_of_its_pages_is_touched():
    """damon_young_pmd_entry reads pmd_young(): the PMD's one accessed bit stands for all 2 MiB, so
    every region sampling inside the huge page counts all 20 samples, wherever the hot page is."""
    m, _, s0 = load(MECH, "hot-block", overrides=HUGE_PAGE_TOUCHED_MID)
    tr = simulate(m, s0, RoundRobin())
    last_check = max(k for k, a in enumerate(tr.actions) if a.label == dmodel.CHECK)
    counts = {(r.start, r.end): r.nr_accesses for r in tr.states[last_check + 1].regions}
    inside = {span: n for span, n in counts.items() if HUGE <= span[0] < HUGE + (2 << 20)}
    assert inside and set(inside.values()) == {20}, counts
    assert sum(counts.values()) == 20 * len(inside), counts


def _invariant(name):
    return next(i for i in DamonModel.invariants if i.name == name)


def test_the_invariants_no_variant_breaks_still_catch_a_bad_state():
    """The region rules every variant keeps, checked on states made bad by hand."""
    m, tr = run("explore-sz-limit")
    s = tr.states[-1]
    a, b = s.regions[0], s.regions[1]
    overlapping = s._replace(regions=(a, b._replace(start=a.end - 4096)) + s.regions[2:])
    assert "overlaps" in _invariant("regions-cover-monitored-ranges").check(overlapping)
    gap = s._replace(regions=s.regions[1:])
    assert "do not cover" in _invariant("regions-cover-monitored-ranges").check(gap)
    too_many = s._replace(regions=(a._replace(nr_accesses=3),) + s.regions[1:])
    assert "more than the 2 sampling intervals" in _invariant("nr-accesses-within-samples").check(too_many)
    split = Action(dmodel.KDAMOND, dmodel.SPLIT)
    few = s._replace(regions=s.regions[:2])
    many = s._replace(regions=tuple(Region(x, x + 1) for x in range(9)))
    assert "above max_nr_regions 8" in _invariant("split-respects-max-nr-regions").check(few, split, many)


def test_a_scheme_acting_on_a_region_its_pattern_rejects_is_harm():
    m, tr = run("quota")
    i = next(k for k, t in enumerate(tr.states) if t.applied)
    s, t = tr.states[i - 1], tr.states[i]
    ap = t.applied[0]
    wrong = t._replace(applied=(ap._replace(nr_accesses=t.cfg.schemes[ap.scheme].pattern.max_nr_accesses + 1),))
    inv = _invariant("actions-on-matching-regions")
    assert inv.check(s, tr.actions[i - 1], t) is None
    assert "does not match" in inv.check(s, tr.actions[i - 1], wrong)


def test_every_label_names_a_kdamond_fn_phase_or_the_mmap_actor():
    sources = DamonModel().sources()
    assert {str(sources[label]) for label in dmodel.KDAMOND_STEPS} >= {
        "mm/damon/core.c:kdamond_merge_regions", "mm/damon/core.c:kdamond_split_regions",
        "mm/damon/vaddr.c:damon_va_check_accesses", "mm/damon/core.c:kdamond_apply_schemes"}
    assert str(sources["__vm_munmap"]) == "mm/mmap.c:__vm_munmap"


def test_a_run_is_the_same_in_another_process_whatever_its_hash_seed():
    """Nothing in a run depends on set or dict order: two interpreters with different hash seeds
    print the same step table and answers."""
    import os
    import subprocess
    import sys

    outs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        r = subprocess.run([sys.executable, "-m", "kstep", "run", "damon", "--scenario", "mmap-munmap", "-c"],
                           capture_output=True, text=True, env=env, check=True)
        outs.append(r.stdout)
    assert outs[0] == outs[1] and "random draws" in outs[0]


def test_explore_says_the_seed_fixes_the_draws_it_does_not_branch_on(capsys):
    from kstep.cli import main

    assert main(["explore", "damon", "--scenario", "explore-sz-limit"]) == 0
    out = capsys.readouterr().out
    assert "fixed, not branched on: the damon_rand draws and the process's accesses" in out
    assert "verdict: clean: every reachable state explored for those fixed choices;" in out


def test_no_scenario_reaches_the_merge_loop_hang_its_variant_text_says_so():
    """pre-6.12.111-merge-loop hangs only when aggr_us / sample_us exceeds UINT_MAX / 2; the schema's
    1000 sampling intervals per aggregation stay far below, as the variant's text says."""
    from kstep.errors import UserError

    load(MECH, "explore-sz-limit", overrides=["attrs.aggr_us=1000000", "attrs.sample_us=1000"])
    with pytest.raises(UserError, match="more than 1000 sampling intervals"):
        load(MECH, "explore-sz-limit", overrides=["attrs.aggr_us=1001000", "attrs.sample_us=1000"])
    assert 1000 <= 0xFFFF_FFFF // 2
    assert "no scenario shows the hang" in DamonModel.variants["pre-6.12.111-merge-loop"].doc


def test_6_12_0_already_merges_in_several_passes_and_ages_in_each():
    """The multi-pass kdamond_merge_regions ("mm/damon/core: merge regions aggressively when
    max_nr_regions is unmet") is older than 6.12: Debian's changelog has it in its 6.9.10-1 upload,
    and 6.12.3-1's entry has no DAMON change.  So as-of-6.12.0 merges until max_nr_regions is met, as
    6.12.117 does (three passes here), and differs only in ageing the regions in every pass (6.12.110's fix)."""
    for variant, age in (("as-of-6.12.0", 3), (None, 1)):
        m, sc, s0 = load(MECH, "explore-merge-passes", variant)
        tr = simulate(m, s0, RoundRobin())
        merges = [s for a, s in zip(tr.actions, tr.states[1:]) if a.label == "kdamond_merge_regions"]
        assert len(merges) == 2 and all(s.k.merge_passes == 3 for s in merges), variant
        assert {r.age for r in merges[0].regions} == {age}, variant
