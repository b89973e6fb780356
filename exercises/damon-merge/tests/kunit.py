OK_FORMAT = True

test = {
    "name": "kunit",
    "points": 2,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "from damon_merge import damon_merge_regions_of, damon_merge_two_regions\n",
        "cases": [
            {"code": ">>> # mm/damon/tests/core-kunit.h: damon_test_merge_two\n"
                     ">>> damon_merge_two_regions([0, 100, 10, 0, 0], [100, 300, 20, 0, 0])[:3]\n[0, 300, 16]",
             "hidden": False, "locked": False},
            {"code": ">>> # damon_test_merge_regions_of: eight regions, thres 9, sz_limit 9999\n"
                     ">>> sa = [0, 100, 114, 122, 130, 156, 170, 184]\n"
                     ">>> ea = [100, 112, 122, 130, 156, 170, 184, 230]\n"
                     ">>> nrs = [0, 0, 10, 10, 20, 30, 1, 2]\n"
                     ">>> out = damon_merge_regions_of([[s, e, n, 0, 0] for s, e, n in zip(sa, ea, nrs)], 9, 9999)\n"
                     ">>> [(r[0], r[1]) for r in out]\n"
                     "[(0, 112), (114, 130), (130, 156), (156, 170), (170, 230)]",
             "hidden": False, "locked": False},
        ],
    }],
}
