"""The KUnit cases of Linux 6.12.117's mm/damon/tests/core-kunit.h and vaddr-kunit.h, reproduced on
the model's region operations, one test per KUnit case and named after it.

The kernel builds those tests with DAMON_MIN_REGION redefined to 1; so are they run here.
"""

import re
import sys

import pytest

from kstep.models.damon import damos as dm
from kstep.models.damon import kunit
from kstep.models.damon.core import (EINVAL, U32, Attrs, Region, damon_feed_loop_next_input, damon_merge_regions_of,
                                     damon_merge_two_regions, damon_moving_sum, damon_new_region,
                                     damon_nr_accesses_to_accesses_bp, damon_set_attrs, damon_set_regions,
                                     damon_split_region_at, damon_split_regions_of, damon_update_monitoring_result,
                                     kdamond_reset_aggregated)
from kstep.models.damon.rand import seeded
from kstep.models.damon.vaddr import Vma, __damon_va_three_regions, damon_va_evenly_split_region

MIN = 1  # DAMON_MIN_REGION under CONFIG_DAMON_KUNIT_TEST


def spans(regions):
    return [(r.start, r.end) for r in regions]


def with_accesses(start, end, nr):
    return Region(start, end, nr_accesses=nr, nr_accesses_bp=nr * 10000)


# --- core-kunit.h ----------------------------------------------------------------------------------------


def test_damon_test_regions():
    r = damon_new_region(1, 2)
    assert (r.start, r.end, r.nr_accesses) == (1, 2, 0)
    regions = ()
    assert len(regions) == 0
    regions += (r,)
    assert len(regions) == 1
    regions = regions[:0]  # damon_destroy_region
    assert len(regions) == 0


def test_damon_test_aggregate():
    saddr = [[10, 20, 30], [5, 42, 49], [13, 33, 55]]
    eaddr = [[15, 27, 40], [31, 45, 55], [23, 44, 66]]
    accesses = [[42, 95, 84], [10, 20, 30], [0, 1, 2]]
    targets = [tuple(with_accesses(s, e, n) for s, e, n in zip(*row)) for row in zip(saddr, eaddr, accesses)]
    after = [kdamond_reset_aggregated(t) for t in targets]
    assert len(after) == 3
    for t in after:
        assert len(t) == 3 and all(r.nr_accesses == 0 for r in t)
    # what was aggregated is kept for the next aggregation's comparison
    assert [r.last_nr_accesses for t in after for r in t] == [n for row in accesses for n in row]


def test_damon_test_split_at():
    r = Region(0, 100, nr_accesses=42, nr_accesses_bp=420000, last_nr_accesses=15)
    regions = damon_split_region_at((r,), 0, 25)
    assert len(regions) == 2
    a, b = regions
    assert spans(regions) == [(0, 25), (25, 100)]
    assert (a.nr_accesses_bp, a.nr_accesses, a.last_nr_accesses) == (b.nr_accesses_bp, b.nr_accesses,
                                                                      b.last_nr_accesses)


def test_damon_test_merge_two():
    regions = (with_accesses(0, 100, 10), with_accesses(100, 300, 20))
    merged = damon_merge_two_regions(regions, 0)
    assert spans(merged) == [(0, 300)]
    assert merged[0].nr_accesses == 16  # (10 * 100 + 20 * 200) / 300


def test_damon_test_merge_regions_of():
    sa = [0, 100, 114, 122, 130, 156, 170, 184]
    ea = [100, 112, 122, 130, 156, 170, 184, 230]
    nrs = [0, 0, 10, 10, 20, 30, 1, 2]
    regions = tuple(with_accesses(s, e, n) for s, e, n in zip(sa, ea, nrs))
    merged = damon_merge_regions_of(regions, 9, 9999, True)
    assert len(merged) == 5
    assert spans(merged) == [(0, 112), (114, 130), (130, 156), (156, 170), (170, 230)]
    # beyond the kernel's assertions: the counts and the ages the merge leaves
    assert [r.nr_accesses for r in merged] == [0, 10, 20, 30, 1]
    assert [r.age for r in merged] == [1, 0, 0, 0, 1]


@pytest.mark.parametrize("seed", range(20))
def test_damon_test_split_regions_of(seed):
    regions, rng = damon_split_regions_of((damon_new_region(0, 22),), 2, seeded(seed), MIN)
    assert len(regions) <= 2
    regions, rng = damon_split_regions_of((damon_new_region(0, 220),), 4, rng, MIN)
    assert len(regions) <= 4
    assert spans(regions)[0][0] == 0 and spans(regions)[-1][1] == 220


def test_damon_test_set_regions():
    rc, regions = damon_set_regions((damon_new_region(4, 16), damon_new_region(24, 32)), [(8, 28)], MIN)
    assert rc == 0
    assert spans(regions) == [(8, 16), (16, 24), (24, 28)]


@pytest.mark.skipif(sys.maxsize < 2**32, reason="aggr_interval is zero on 32-bit, as in the kernel's test")
def test_damon_test_nr_accesses_to_accesses_bp():
    attrs = Attrs(sample_interval=10, aggr_interval=(U32 + 1) * 10)
    assert damon_nr_accesses_to_accesses_bp(123, attrs) == 0


def test_damon_test_update_monitoring_result():
    old = Attrs(sample_interval=10, aggr_interval=1000)
    r = Region(3, 7, nr_accesses=15, nr_accesses_bp=150000, age=20)
    r = damon_update_monitoring_result(r, old, Attrs(sample_interval=100, aggr_interval=10000))
    assert (r.nr_accesses, r.age) == (15, 2)
    r = damon_update_monitoring_result(r, old, Attrs(sample_interval=1, aggr_interval=1000))
    assert (r.nr_accesses, r.age) == (150, 2)
    r = damon_update_monitoring_result(r, old, Attrs(sample_interval=1, aggr_interval=100))
    assert (r.nr_accesses, r.age) == (150, 20)


def test_damon_test_set_attrs():
    valid = Attrs(min_nr_regions=10, max_nr_regions=1000, sample_interval=5000, aggr_interval=100000)
    assert damon_set_attrs(valid) == 0
    assert damon_set_attrs(valid._replace(min_nr_regions=1)) == -EINVAL
    assert damon_set_attrs(valid._replace(max_nr_regions=9)) == -EINVAL
    assert damon_set_attrs(valid._replace(aggr_interval=4999)) == -EINVAL


def test_damon_test_moving_sum():
    mvsum, nomvsum, len_window = 50000, 50000, 10
    new_values = [10000, 0, 10000, 0, 0, 0, 10000, 0, 0, 0]
    expects = [55000, 50000, 55000, 50000, 45000, 40000, 45000, 40000, 35000, 30000]
    got = []
    for v in new_values:
        mvsum = damon_moving_sum(mvsum, nomvsum, len_window, v)
        got.append(mvsum)
    assert got == expects


def test_damos_test_filter_out():
    f = dm.AddrFilter(MIN * 2, MIN * 6, matching=True)

    def run(start, end):
        return dm.__damos_filter_out((damon_new_region(start, end),), 0, f, MIN)

    out, regions = run(MIN * 3, MIN * 5)  # region in the range
    assert out and len(regions) == 1
    out, regions = run(MIN * 1, MIN * 2)  # region before the range
    assert not out and len(regions) == 1
    out, regions = run(MIN * 6, MIN * 8)  # region after the range
    assert not out and len(regions) == 1
    out, regions = run(MIN * 1, MIN * 4)  # region started before the range: split at its start
    assert not out and spans(regions) == [(MIN * 1, MIN * 2), (MIN * 2, MIN * 4)]
    out, regions = run(MIN * 2, MIN * 8)  # region started in the range: split at its end
    assert out and spans(regions) == [(MIN * 2, MIN * 6), (MIN * 6, MIN * 8)]


def test_damon_test_feed_loop_next_input():
    last_input = 900000
    assert damon_feed_loop_next_input(last_input, 200) > last_input
    assert damon_feed_loop_next_input(last_input, 250000000) < last_input
    assert damon_feed_loop_next_input(last_input, 200) > damon_feed_loop_next_input(last_input, 2000)


# --- vaddr-kunit.h ---------------------------------------------------------------------------------------


def test_damon_test_three_regions_in_vmas():
    vmas = tuple(Vma(s, e) for s, e in [(10, 20), (20, 25), (200, 210), (210, 220), (300, 305), (307, 330)])
    rc, regions = __damon_va_three_regions(vmas, MIN)
    assert rc == 0
    assert list(regions) == [(10, 25), (200, 220), (300, 330)]


OLD_REGIONS = [(10, 20), (20, 30), (50, 55), (55, 57), (57, 59), (70, 80), (80, 90), (90, 100)]


def apply_three_regions(three, expected):
    rc, regions = damon_set_regions(tuple(damon_new_region(s, e) for s, e in OLD_REGIONS), three, MIN)
    assert rc == 0
    assert len(regions) == len(expected)
    assert spans(regions) == expected


def test_damon_test_apply_three_regions1():
    apply_three_regions([(5, 27), (45, 55), (73, 104)],
                        [(5, 20), (20, 27), (45, 55), (73, 80), (80, 90), (90, 104)])


def test_damon_test_apply_three_regions2():
    apply_three_regions([(5, 27), (56, 57), (65, 104)],
                        [(5, 20), (20, 27), (56, 57), (65, 80), (80, 90), (90, 104)])


def test_damon_test_apply_three_regions3():
    apply_three_regions([(5, 27), (61, 63), (65, 104)],
                        [(5, 20), (20, 27), (61, 63), (65, 80), (80, 90), (90, 104)])


def test_damon_test_apply_three_regions4():
    apply_three_regions([(5, 7), (30, 32), (65, 68)], [(5, 7), (30, 32), (65, 68)])


def split_evenly(start, end, nr_pieces):
    return damon_va_evenly_split_region((damon_new_region(start, end),), 0, nr_pieces, MIN)


def test_damon_test_split_evenly():
    assert damon_va_evenly_split_region((), None, 5, MIN)[0] == -EINVAL
    for start, end, nr_pieces in ((0, 100, 0), (5, 6, 2)):  # damon_test_split_evenly_fail
        rc, regions = split_evenly(start, end, nr_pieces)
        assert rc == -EINVAL and spans(regions) == [(start, end)]
    for start, end, nr_pieces in ((0, 100, 10), (5, 59, 5), (0, 3, 2)):  # damon_test_split_evenly_succ
        rc, regions = split_evenly(start, end, nr_pieces)
        width = (end - start) // nr_pieces
        assert rc == 0 and len(regions) == nr_pieces
        assert spans(regions) == [(start + i * width, end if i == nr_pieces - 1 else start + (i + 1) * width)
                                  for i in range(nr_pieces)]


# --- the list ------------------------------------------------------------------------------------------


def test_every_kunit_case_is_reproduced_or_explained():
    here = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(kunit.REPRODUCED) <= here, sorted(set(kunit.REPRODUCED) - here)
    assert set(kunit.NOT_APPLICABLE) | set(kunit.REPRODUCED) == set(kunit.CASES)
    assert all(len(why) > 40 for why in kunit.NOT_APPLICABLE.values())


def test_the_list_matches_the_kernels_kunit_files(linux_tree):
    """The case names are read from Linux 6.12.117's own KUnit files."""
    src = linux_tree / "mm/damon/tests"
    for suite, header in (("damon", "core-kunit.h"), ("damon-operations", "vaddr-kunit.h")):
        cases = tuple(re.findall(r"KUNIT_CASE\((\w+)\)", (src / header).read_text()))
        assert cases == kunit.SUITES[suite]
