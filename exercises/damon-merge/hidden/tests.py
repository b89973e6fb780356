"""Hidden tests of damon-merge: the student's merge against kstep's model of mm/damon/core.c.

CANARY-KSTEP-HIDDEN-damon-merge: this line must never reach a student's output.
"""

import kstep
from kstep.engine import RoundRobin, SplitMix64
from kstep.grading.harness import Fail
from kstep.models.damon.core import Region, damon_merge_regions_of
from kstep.models.damon.model import MERGE

U32 = (1 << 32) - 1


def as_list(r):
    return [r.start, r.end, r.nr_accesses, r.last_nr_accesses, r.age]


def expected(regions, thres, sz_limit):
    rs = tuple(Region(s, e, nr, 0, age, last) for s, e, nr, last, age in regions)
    return [as_list(r) for r in damon_merge_regions_of(rs, thres, sz_limit, True)]


def _check(ctx, cases, what):
    calls = [["damon_merge_regions_of", list(c)] for c in cases]
    got = ctx.driver({"calls": calls})
    results = got.get("results") if isinstance(got, dict) else None
    if not isinstance(results, list) or len(results) != len(calls):
        raise Fail(f"{what}: the driver did not answer every call")
    for (regions, thres, sz_limit), value in zip(cases, results):
        want = expected(regions, thres, sz_limit)
        if value != want:
            raise Fail(f"{what}: damon_merge_regions_of({regions!r}, {thres}, {sz_limit}) returned {value!r}; "
                       f"the kernel computes {want!r}")


def test_agrees_with_the_model(ctx):
    """Every first merge pass of the student's run: the regions before kdamond_merge_regions, its
    threshold (max_nr_accesses / 10) and sz_limit."""
    trace = kstep.open("damon", ctx.variant["scenario"], overrides=[f"seed={ctx.variant['seed']}"]).run(RoundRobin())
    cases = [([as_list(r) for r in s.regions], s.k.max_nr_accesses // 10, s.k.sz_limit)
             for a, s in zip(trace.actions, trace.states) if a.label == MERGE]
    _check(ctx, cases, f"in {ctx.variant['scenario']} with seed {ctx.variant['seed']}")


def test_c_arithmetic(ctx):
    """Counts far apart in 32 bits (abs() of the wrapped difference) and an age at UINT_MAX."""
    rng = SplitMix64(ctx.variant["seed"])
    cases = []
    for _ in range(20):
        a, b = rng.next() & U32, rng.next() & U32
        cases.append(([[0, 4096, a, b, U32], [4096, 8192, b, a, 7]], rng.next() % (1 << 31), 1 << 20))
    _check(ctx, cases, "with 32-bit counts")
