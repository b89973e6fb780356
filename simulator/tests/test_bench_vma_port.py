"""The statistics of bench/vma_locks_port.py: a difference is called outside the noise only when the
bootstrap confidence interval of the ratio of the medians excludes 1.  Fed fixed rates: nothing
here is timed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.vma_locks_port import compare, summary  # noqa: E402


def test_a_summary_keeps_every_run_with_its_median_and_quartiles():
    s = summary([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s["runs"], s["median"], s["q1"], s["q3"], s["iqr_over_median"]) == ([5, 1, 3, 2, 4], 3, 2, 4, 0.667)


def test_a_difference_is_outside_the_noise_only_when_its_interval_excludes_1():
    slow, fast = summary([10.0, 11.0, 12.0, 13.0, 14.0]), summary([20.0, 21.0, 22.0, 23.0, 24.0])
    c = compare(fast, slow)
    assert (c["per_vma_over_mmap_lock"], c["difference_outside_noise"], c["verdict"]) == \
        (1.833, True, "per-VMA locks faster")
    assert c["ratio_interval"][0] > 1
    assert compare(slow, fast)["verdict"] == "per-VMA locks slower"
    wide = summary([5.0, 9.0, 21.0, 30.0, 40.0])  # its median is far from slow's, its runs are all over
    c = compare(wide, slow)
    assert (c["per_vma_over_mmap_lock"], c["difference_outside_noise"], c["verdict"]) == \
        (1.75, False, "no difference outside the noise")
    assert c["ratio_interval"][0] < 1 < c["ratio_interval"][1]


def test_enough_runs_tell_a_shift_smaller_than_the_spread_of_single_runs():
    base = [10.0 + k for k in range(20)]
    shifted = summary([r + 8 for r in base])
    few = compare(summary([r + 8 for r in base[::4]]), summary(base[::4]))
    many = compare(shifted, summary(base))
    assert shifted["q1"] < summary(base)["q3"]  # the interquartile ranges overlap
    assert not few["difference_outside_noise"] and many["difference_outside_noise"]
