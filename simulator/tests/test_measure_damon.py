"""DAMON's bounded overhead and the accuracy measure of `make bench`, on short runs.

The bench counts access checks in 40 aggregations per size with max_nr_regions 1000; here three
aggregations with max_nr_regions 24 (the initial 11 regions split once, to 22) keep each size to a
fraction of a second, and a split that ignores max_nr_regions must break the bound.
"""

import pytest

from kstep.engine import costs
from kstep.measure import damon as dc
from kstep.engine import Variant
from kstep.models.damon.core import Region, damon_split_regions_of
from kstep.models.damon.model import SPLIT, VARIANTS, DamonModel, then

SHORT = dict(aggregations_n=3, max_nr_regions=24)
BUSY = "every page at 50%"


def split_ignoring_max(s):
    """kdamond_split_regions without its ``nr_regions > max_nr_regions / 2`` return."""
    regions, rng = damon_split_regions_of(s.regions, 2, s.k.rng, s.cfg.min_region)
    return then(s._replace(regions=regions), SPLIT, last_nr_regions=len(s.regions), rng=rng)


class SplitIgnoresMax(DamonModel):
    variants = {**VARIANTS, "split-ignores-max": Variant.bug(
        "split-ignores-max", "kdamond_split_regions splits however many regions there are",
        kdamond_split_regions=split_ignoring_max)}


@pytest.mark.parametrize("gib", dc.SIZES_GIB)
def test_access_checks_per_aggregation_stay_within_max_nr_regions_times_samples(gib):
    row = dc.overhead(gib * dc.GIB, BUSY, **SHORT)
    assert dc.bound_broken(row) is None
    assert row["samples_per_aggregation"] == 20 and row["bound"] == 24 * 20
    # counted, not computed: the first aggregation checks the initial regions, the next ones the split ones
    assert row["checks_per_aggregation"][0] == 20 * 11 and max(row["checks_per_aggregation"]) > 20 * 11
    assert row["page_scan_checks_per_aggregation"] == gib * dc.GIB // 4096 * 20


def test_a_split_that_ignores_max_nr_regions_breaks_the_bound_at_every_size():
    for gib in dc.SIZES_GIB:
        row = dc.overhead(gib * dc.GIB, BUSY, **SHORT, model=SplitIgnoresMax("split-ignores-max"))
        assert "access checks, above max_nr_regions 24 x 20 samples = 480" in dc.bound_broken(row)


def test_hot_share_takes_the_hottest_regions_up_to_the_hot_size():
    regions = (Region(0, 10, 5), Region(10, 20, 3), Region(20, 40, 0))
    assert dc.hot_share(regions, [(0, 10)]) == 1.0
    assert dc.hot_share(regions, [(12, 22)]) == 0.0  # the hottest 10 bytes hold none of it
    assert dc.hot_share(regions, [(5, 15)]) == 0.5
    # a tie at the boundary counts in proportion: 5 of the 20 equally cold bytes are taken
    cold = (Region(0, 10, 0), Region(10, 20, 0))
    assert dc.hot_share(cold, [(0, 5)]) == 0.25


def test_the_true_hot_bytes_of_an_aggregation_follow_a_moving_block():
    vmas, access, _ = dc.accuracy_shapes()["moving hotspot"]
    workload = DamonModel().initial(dc.config(vmas, access, aggregations=1)).cfg.workload
    assert dc.true_hot(workload, 20, 20) == [(dc.AREA + 20 * dc.MIB, dc.AREA + 20 * dc.MIB + 64 * dc.MIB + 19 * dc.MIB)]


def test_prcl_counts_a_refault_for_every_paged_out_page_touched_again():
    """phase-change's heap is cold from sampling interval 200, old enough for prcl (age 50) by about
    1200, and touched whole again from 1400 in the variant: its 2048 pages come back as refaults,
    each costing what the table it is given says (a student's own table moves the slowdown)."""
    committed = costs.load()
    slow = committed._replace(ns={**committed.ns, "page_fault": 50_000.0})
    plain = dc.prcl("phase-change", 72)
    back = dc.prcl("phase-change, back at 7 s", 72, slow)
    assert back["refaults"] - plain["refaults"] == (0x555555D50000 - 0x555555550000) // 4096
    assert plain["refault_ns"] == committed.ns["page_fault"] + committed.ns["page_copy"]
    assert back["refault_ns"] == 50_000 + committed.ns["page_copy"]
    assert back["runtime_prcl_s"] == pytest.approx(back["runtime_orig_s"] + back["refaults"] * back["refault_ns"] / 1e9)
    assert back["rss_avg_prcl_kib"] > plain["rss_avg_prcl_kib"]
