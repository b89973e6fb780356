"""The 6.12.y fixes to DAMON between v6.12.0 and 6.12.117, dated from Debian's changelog.

Debian's ``linux-6.12`` changelog (6.12.117-1~deb12u1, in every binary package of the source
package, e.g. ``/usr/share/doc/linux-kbuild-6.12.117+deb12/changelog.Debian.gz``) lists each
upstream stable release it merged (``ChangeLog-6.12.N``) and the commits in it.  ``version`` is
that upstream 6.12.N, the first stable release carrying the fix; ``debian`` the first Debian
upload that shipped it.

``FIXES`` are the ones the model can show: each is a variant (the kernel without that fix) and
the as-of composites combine them.  ``NOT_MODELLED`` are the other DAMON fixes of the same
releases, each with why the model has nothing they would change.
"""

from __future__ import annotations

from typing import NamedTuple


class Fix(NamedTuple):
    name: str
    version: int  # the first 6.12.y (upstream stable) carrying it
    debian: str  # the first Debian package version with it
    title: str  # the commit subject(s)
    steps: tuple  # the model's steps the fix changes
    old: str  # what the code did before, in one sentence


FIXES = (
    Fix("evenly-split", 4, "6.12.5-1", "mm/damon/vaddr: fix issue in damon_va_evenly_split_region()",
        ("damon_va_init",),
        "damon_va_evenly_split_region() added pieces while another whole one fitted, so it could make "
        "more pieces than asked ([0, 3) in two pieces became three)"),
    Fix("first-charge-window", 48, "6.12.48-1",
        "mm/damon/core: set quota->charged_from to jiffies at first charge window",
        ("kdamond_apply_schemes",),
        "the first charge window started at jiffies 0, so on a 64-bit kernel it was over at once and the "
        "effective quota was set at the first application; since the fix the first window runs a whole "
        "reset_interval with no effective quota yet (esz 0: no limit)"),
    Fix("zero-esz", 90, "6.12.90-1", "mm/damon/core: disallow time-quota setting zero esz",
        ("kdamond_apply_schemes",),
        "a time quota whose measured throughput times ms came to 0 bytes set esz 0, which DAMOS reads as "
        "no quota at all"),
    Fix("charge-addr-from", 97, "6.12.100-1",
        "mm/damon/core: make charge_addr_from aware of end-address exclusivity",
        ("kdamond_apply_schemes",),
        "the charge cursor was set to the region's end + 1, so the next window skipped one DAMON_MIN_REGION "
        "after the last region charged"),
    Fix("set-regions-checks", 101, "6.12.101-1",
        "mm/damon/core: validate ranges in damon_set_regions(); disallow overlapping input ranges",
        ("damon_va_update",),
        "damon_set_regions() accepted empty, unsorted or overlapping ranges and built overlapping regions "
        "from them (kdamond's own three regions are never such, so only direct callers see it)"),
    Fix("merge-aging", 110, "6.12.111-1", "mm/damon/core: skip aging from repeated aggressive merging",
        ("kdamond_merge_regions",),
        "every pass of kdamond_merge_regions() aged the regions, so an aggregation that needed several "
        "passes to get under max_nr_regions aged them several times"),
    Fix("folio-cache", 110, "6.12.111-1", "mm/damon/vaddr: drop last same folio access check optimization",
        ("damon_va_check_accesses",),
        "__damon_va_check_access() reused the last result when the sampling address was in the folio "
        "checked last, judged by a folio size that an unmapped address left stale"),
    Fix("hot-score", 110, "6.12.111-1", "mm/damon/ops-common: use nr_accesses moving sum for quota score",
        ("kdamond_apply_schemes",),
        "damon_hot_score() used nr_accesses, which is only a partial count between aggregations, instead of "
        "nr_accesses_bp / 10000"),
    Fix("merge-loop", 111, "6.12.111-1", "mm/damon/core: avoid infinite kdamond_merge_regions() internal loop",
        ("kdamond_merge_regions",),
        "the merge loop doubled an unsigned int threshold after each pass and looped while "
        "threshold / 2 < max_thres, which wraps and never ends once max_thres exceeds UINT_MAX / 2; "
        "max_thres is aggr_us / sample_us, which a scenario keeps at most 1000 (the sampling intervals "
        "of an aggregation), so no scenario shows the hang and every one explores clean"),
    Fix("charged-region-walk", 113, "6.12.113-1",
        "mm/damon/core: do non-safe region walk on kdamond_apply_schemes(); fix unconditionally skip last region",
        ("kdamond_apply_schemes",),
        "the region walk was damon_for_each_region_safe(), so a region split at the charge cursor had its "
        "tail handled only by the schemes after the one that split it; and once a cursor was set the last "
        "region was always skipped"),
    Fix("filter-charge", 117, "6.12.117-1", "mm/damon/core: charge only the part of a region the filter left",
        ("kdamond_apply_schemes",),
        "the quota was charged the region's size before an address filter split part of it off"),
)

BY_NAME = {f.name: f for f in FIXES}
ALL = frozenset(BY_NAME)

NOT_MODELLED = (
    (24, "mm/damon/ops: have damon_get_folio return folio even for tail pages",
     "every folio is 4 KiB or a PMD-mapped THP, whose PMD names its head page: no PTE maps a tail page"),
    (94, "mm/damon/ops-common: call folio_test_lru() after folio_get()",
     "folio references and the LRU lists are not modelled, nor a folio freed under DAMON"),
    (110, "mm/damon/paddr: drop last same folio access check reuse optimization",
     "only the vaddr operations are modelled (vaddr's copy of it is the folio-cache fix)"),
    (110, "four KUnit fixes: core-kunit's split_at, filter_out and merge_regions_of, vaddr-kunit's "
          "three_regions check a count or a failure first",
     "they change tests, not DAMON: the ports reproduce each case's algorithm (kunit.py)"),
    (54, "mm/damon/vaddr: do not repeat pte_offset_map_lock() until success",
     "page-table walks and PMD migration entries are not modelled"),
    (86, "mm/damon/core: use time_in_range_open() for damos quota window start",
     "differs from time_after_eq() only when jiffies wraps, which a 64-bit kernel never sees"),
    (96, "mm/damon/ops-common: handle extreme intervals in damon_hot_score()",
     "scenarios cannot set a zero sampling or aggregation interval"),
    (112, "mm/damon/vaddr: avoid hw-driven pte updates during damon_hugetlb_mkold()",
     "hugetlb mappings are not modelled"),
    (113, "mm/damon/core: don't skip damos_adjust_quota() while esz is not zero",
     "quotas are never changed while kdamond runs"),
    (117, "mm/damon/core: error damos_commit_quota_goal() for zero target_value",
     "there is no online commit; scenario files cannot give a zero target_value"),
    (9, "mm/damon/core: fix ignored quota goals and filters of newly committed schemes",
     "there is no online commit"),
    (43, "mm/damon/core: commit damos->target_nid", "there is no online commit, nor NUMA"),
)

# Debian's own 6.12 kernels that the real-kernel lab boots (bookworm-backports and -security).
AS_OF = (0, 95, 107, 111, 113)


def fixes_as_of(n: int) -> frozenset:
    return frozenset(f.name for f in FIXES if f.version <= n)
