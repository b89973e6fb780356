"""The KUnit cases of mm/damon/tests/core-kunit.h ("damon") and vaddr-kunit.h ("damon-operations").

Both the Python functions (simulator/tests/test_damon_kunit.py) and the kernel lab's C port
(kernel-lab/damon/kunit.c) reproduce every case that tests an algorithm, by the case's KUnit name;
the three that test kernel APIs the model has no counterpart for are listed with the reason.
"""

SUITES = {
    "damon": (
        "damon_test_target", "damon_test_regions", "damon_test_aggregate", "damon_test_split_at",
        "damon_test_merge_two", "damon_test_merge_regions_of", "damon_test_split_regions_of",
        "damon_test_ops_registration", "damon_test_set_regions", "damon_test_nr_accesses_to_accesses_bp",
        "damon_test_update_monitoring_result", "damon_test_set_attrs", "damon_test_moving_sum",
        "damos_test_new_filter", "damos_test_filter_out", "damon_test_feed_loop_next_input",
    ),
    "damon-operations": (
        "damon_test_three_regions_in_vmas", "damon_test_apply_three_regions1", "damon_test_apply_three_regions2",
        "damon_test_apply_three_regions3", "damon_test_apply_three_regions4", "damon_test_split_evenly",
    ),
}

NOT_APPLICABLE = {
    "damon_test_target": "adds and destroys a damon_target in a damon_ctx's list: the model has one target "
                         "and no context lists",
    "damon_test_ops_registration": "registers operations sets (damon_register_ops, damon_select_ops): the "
                                   "model has the vaddr operations only, built in",
    "damos_test_new_filter": "checks damos_new_filter()'s allocation and list head: the model's filters are "
                             "immutable values with no list",
}

CASES = tuple(name for suite in SUITES.values() for name in suite)
REPRODUCED = tuple(name for name in CASES if name not in NOT_APPLICABLE)
