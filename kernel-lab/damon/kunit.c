// SPDX-License-Identifier: GPL-2.0
/*
 * damon-kunit: the KUnit cases of Linux 6.12.117's mm/damon/tests/core-kunit.h (suite "damon")
 * and vaddr-kunit.h (suite "damon-operations") on the port, with DAMON_MIN_REGION 1 as the kernel
 * builds them (CONFIG_DAMON_KUNIT_TEST).  Output is KTAP as kunit prints it: one "ok N name" or
 * "not ok N name" line per case; exit status 1 if a case failed.  damon_test_target,
 * damon_test_ops_registration and damos_test_new_filter test kernel APIs the port has no
 * counterpart for (context lists, operations registration, filter allocation): they are reported
 * "# SKIP" with that reason (simulator/kstep/models/damon/kunit.py lists the same).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "damon.h"

static int failures;

#define KUNIT_EXPECT(cond)							\
do {									\
	if (!(cond)) {							\
		printf("    # %s:%d: EXPECTATION FAILED: %s\n", __FILE__, __LINE__, #cond); \
		failures++;						\
	}								\
} while (0)

static struct damon_ctx *new_ctx(void)
{
	static struct damon_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	INIT_LIST_HEAD(&ctx.target.regions_list);
	ctx.attrs = (struct damon_attrs){ 5000, 100000, 60000000, 10, 1000 };
	return &ctx;
}

static struct damon_region *new_region_with(struct damon_target *t, unsigned long start, unsigned long end,
					    unsigned int nr_accesses)
{
	struct damon_region *r = damon_new_region(start, end);

	r->nr_accesses = nr_accesses;
	r->nr_accesses_bp = nr_accesses * 10000;
	damon_add_region(r, t);
	return r;
}

static struct damon_region *nth_region(struct damon_target *t, unsigned int n)
{
	struct damon_region *r;
	unsigned int i = 0;

	damon_for_each_region(r, t)
		if (i++ == n)
			return r;
	return NULL;
}

/* ---- core-kunit.h ---- */

static void damon_test_regions(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_region *r = damon_new_region(1, 2);

	KUNIT_EXPECT(r->ar.start == 1);
	KUNIT_EXPECT(r->ar.end == 2);
	KUNIT_EXPECT(r->nr_accesses == 0);
	KUNIT_EXPECT(damon_nr_regions(&c->target) == 0);
	damon_add_region(r, &c->target);
	KUNIT_EXPECT(damon_nr_regions(&c->target) == 1);
	damon_destroy_region(r, &c->target);
	KUNIT_EXPECT(damon_nr_regions(&c->target) == 0);
}

static void damon_test_aggregate(void)
{
	unsigned long saddr[][3] = { { 10, 20, 30 }, { 5, 42, 49 }, { 13, 33, 55 } };
	unsigned long eaddr[][3] = { { 15, 27, 40 }, { 31, 45, 55 }, { 23, 44, 66 } };
	unsigned long accesses[][3] = { { 42, 95, 84 }, { 10, 20, 30 }, { 0, 1, 2 } };

	/* the kernel's test has three targets in one context; the port's context has one */
	for (int it = 0; it < 3; it++) {
		struct damon_ctx *c = new_ctx();
		struct damon_region *r;
		int ir = 0;

		for (int k = 0; k < 3; k++)
			new_region_with(&c->target, saddr[it][k], eaddr[it][k], accesses[it][k]);
		kdamond_reset_aggregated(c);
		damon_for_each_region(r, &c->target) {
			KUNIT_EXPECT(r->nr_accesses == 0);
			KUNIT_EXPECT(r->last_nr_accesses == accesses[it][ir]);
			ir++;
		}
		KUNIT_EXPECT(ir == 3);
		damon_destroy_regions(&c->target);
	}
}

static void damon_test_split_at(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r, *r_new;

	r = damon_new_region(0, 100);
	r->nr_accesses_bp = 420000;
	r->nr_accesses = 42;
	r->last_nr_accesses = 15;
	damon_add_region(r, t);
	damon_split_region_at(t, r, 25);
	KUNIT_EXPECT(r->ar.start == 0);
	KUNIT_EXPECT(r->ar.end == 25);

	r_new = damon_next_region(r);
	KUNIT_EXPECT(r_new->ar.start == 25);
	KUNIT_EXPECT(r_new->ar.end == 100);

	KUNIT_EXPECT(r->nr_accesses_bp == r_new->nr_accesses_bp);
	KUNIT_EXPECT(r->nr_accesses == r_new->nr_accesses);
	KUNIT_EXPECT(r->last_nr_accesses == r_new->last_nr_accesses);
	damon_destroy_regions(t);
}

static void damon_test_merge_two(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r, *r2, *r3;
	int i;

	r = new_region_with(t, 0, 100, 10);
	r2 = new_region_with(t, 100, 300, 20);

	damon_merge_two_regions(t, r, r2);
	KUNIT_EXPECT(r->ar.start == 0);
	KUNIT_EXPECT(r->ar.end == 300);
	KUNIT_EXPECT(r->nr_accesses == 16);

	i = 0;
	damon_for_each_region(r3, t) {
		KUNIT_EXPECT(r3 == r);
		i++;
	}
	KUNIT_EXPECT(i == 1);
	damon_destroy_regions(t);
}

static void damon_test_merge_regions_of(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r;
	unsigned long sa[] = { 0, 100, 114, 122, 130, 156, 170, 184 };
	unsigned long ea[] = { 100, 112, 122, 130, 156, 170, 184, 230 };
	unsigned int nrs[] = { 0, 0, 10, 10, 20, 30, 1, 2 };
	unsigned long saddrs[] = { 0, 114, 130, 156, 170 };
	unsigned long eaddrs[] = { 112, 130, 156, 170, 230 };
	int i;

	for (i = 0; i < 8; i++)
		new_region_with(t, sa[i], ea[i], nrs[i]);
	damon_merge_regions_of(t, 9, 9999, true);
	/* 0-112, 114-130, 130-156, 156-170 */
	KUNIT_EXPECT(damon_nr_regions(t) == 5u);
	for (i = 0; i < 5; i++) {
		r = nth_region(t, i);
		KUNIT_EXPECT(r->ar.start == saddrs[i]);
		KUNIT_EXPECT(r->ar.end == eaddrs[i]);
	}
	damon_destroy_regions(t);
}

static void damon_test_split_regions_of(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;

	damon_add_region(damon_new_region(0, 22), t);
	damon_split_regions_of(t, 2);
	KUNIT_EXPECT(damon_nr_regions(t) <= 2u);
	damon_destroy_regions(t);

	damon_add_region(damon_new_region(0, 220), t);
	damon_split_regions_of(t, 4);
	KUNIT_EXPECT(damon_nr_regions(t) <= 4u);
	damon_destroy_regions(t);
}

static void damon_test_set_regions(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_addr_range range = { .start = 8, .end = 28 };
	unsigned long expects[] = { 8, 16, 16, 24, 24, 28 };
	int expect_idx = 0;
	struct damon_region *r;

	damon_add_region(damon_new_region(4, 16), t);
	damon_add_region(damon_new_region(24, 32), t);

	damon_set_regions(t, &range, 1);

	KUNIT_EXPECT(damon_nr_regions(t) == 3);
	damon_for_each_region(r, t) {
		KUNIT_EXPECT(r->ar.start == expects[expect_idx++]);
		KUNIT_EXPECT(r->ar.end == expects[expect_idx++]);
	}
	damon_destroy_regions(t);
}

static void damon_test_nr_accesses_to_accesses_bp(void)
{
	struct damon_attrs attrs = {
		.sample_interval = 10,
		.aggr_interval = ((unsigned long)UINT_MAX + 1) * 10
	};

	/* the kernel's test is skipped where aggr_interval would be 0: 32-bit; the lab is 64-bit */
	KUNIT_EXPECT(damon_nr_accesses_to_accesses_bp(123, &attrs) == 0);
}

static void damon_test_update_monitoring_result(void)
{
	struct damon_attrs old_attrs = { .sample_interval = 10, .aggr_interval = 1000 };
	struct damon_attrs new_attrs;
	struct damon_region *r = damon_new_region(3, 7);

	r->nr_accesses = 15;
	r->nr_accesses_bp = 150000;
	r->age = 20;

	new_attrs = (struct damon_attrs){ .sample_interval = 100, .aggr_interval = 10000 };
	damon_update_monitoring_result(r, &old_attrs, &new_attrs);
	KUNIT_EXPECT(r->nr_accesses == 15);
	KUNIT_EXPECT(r->age == 2);

	new_attrs = (struct damon_attrs){ .sample_interval = 1, .aggr_interval = 1000 };
	damon_update_monitoring_result(r, &old_attrs, &new_attrs);
	KUNIT_EXPECT(r->nr_accesses == 150);
	KUNIT_EXPECT(r->age == 2);

	new_attrs = (struct damon_attrs){ .sample_interval = 1, .aggr_interval = 100 };
	damon_update_monitoring_result(r, &old_attrs, &new_attrs);
	KUNIT_EXPECT(r->nr_accesses == 150);
	KUNIT_EXPECT(r->age == 20);

	free(r);
}

static void damon_test_set_attrs(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_attrs valid_attrs = {
		.min_nr_regions = 10, .max_nr_regions = 1000,
		.sample_interval = 5000, .aggr_interval = 100000,
	};
	struct damon_attrs invalid_attrs;

	KUNIT_EXPECT(damon_set_attrs(c, &valid_attrs) == 0);

	invalid_attrs = valid_attrs;
	invalid_attrs.min_nr_regions = 1;
	KUNIT_EXPECT(damon_set_attrs(c, &invalid_attrs) == -EINVAL);

	invalid_attrs = valid_attrs;
	invalid_attrs.max_nr_regions = 9;
	KUNIT_EXPECT(damon_set_attrs(c, &invalid_attrs) == -EINVAL);

	invalid_attrs = valid_attrs;
	invalid_attrs.aggr_interval = 4999;
	KUNIT_EXPECT(damon_set_attrs(c, &invalid_attrs) == -EINVAL);
}

static void damon_test_moving_sum(void)
{
	unsigned int mvsum = 50000, nomvsum = 50000, len_window = 10;
	unsigned int new_values[] = { 10000, 0, 10000, 0, 0, 0, 10000, 0, 0, 0 };
	unsigned int expects[] = { 55000, 50000, 55000, 50000, 45000, 40000, 45000, 40000, 35000, 30000 };
	int i;

	for (i = 0; i < 10; i++) {
		mvsum = damon_moving_sum(mvsum, nomvsum, len_window, new_values[i]);
		KUNIT_EXPECT(mvsum == expects[i]);
	}
}

static void damos_test_filter_out(void)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r, *r2;
	struct damos_filter f = {
		.addr_range = { .start = DAMON_MIN_REGION * 2, .end = DAMON_MIN_REGION * 6 },
		.matching = true,
	};

	r = damon_new_region(DAMON_MIN_REGION * 3, DAMON_MIN_REGION * 5);
	damon_add_region(r, t);

	/* region in the range */
	KUNIT_EXPECT(__damos_filter_out(NULL, t, r, &f));
	KUNIT_EXPECT(damon_nr_regions(t) == 1);

	/* region before the range */
	r->ar.start = DAMON_MIN_REGION * 1;
	r->ar.end = DAMON_MIN_REGION * 2;
	KUNIT_EXPECT(!__damos_filter_out(NULL, t, r, &f));
	KUNIT_EXPECT(damon_nr_regions(t) == 1);

	/* region after the range */
	r->ar.start = DAMON_MIN_REGION * 6;
	r->ar.end = DAMON_MIN_REGION * 8;
	KUNIT_EXPECT(!__damos_filter_out(NULL, t, r, &f));
	KUNIT_EXPECT(damon_nr_regions(t) == 1);

	/* region started before the range */
	r->ar.start = DAMON_MIN_REGION * 1;
	r->ar.end = DAMON_MIN_REGION * 4;
	KUNIT_EXPECT(!__damos_filter_out(NULL, t, r, &f));
	/* filter should have split the region */
	KUNIT_EXPECT(r->ar.start == DAMON_MIN_REGION * 1);
	KUNIT_EXPECT(r->ar.end == DAMON_MIN_REGION * 2);
	KUNIT_EXPECT(damon_nr_regions(t) == 2);
	if (damon_nr_regions(t) != 2)
		goto out;
	r2 = damon_next_region(r);
	KUNIT_EXPECT(r2->ar.start == DAMON_MIN_REGION * 2);
	KUNIT_EXPECT(r2->ar.end == DAMON_MIN_REGION * 4);
	damon_destroy_region(r2, t);

	/* region started in the range */
	r->ar.start = DAMON_MIN_REGION * 2;
	r->ar.end = DAMON_MIN_REGION * 8;
	KUNIT_EXPECT(__damos_filter_out(NULL, t, r, &f));
	/* filter should have split the region */
	KUNIT_EXPECT(r->ar.start == DAMON_MIN_REGION * 2);
	KUNIT_EXPECT(r->ar.end == DAMON_MIN_REGION * 6);
	KUNIT_EXPECT(damon_nr_regions(t) == 2);
	if (damon_nr_regions(t) != 2)
		goto out;
	r2 = damon_next_region(r);
	KUNIT_EXPECT(r2->ar.start == DAMON_MIN_REGION * 6);
	KUNIT_EXPECT(r2->ar.end == DAMON_MIN_REGION * 8);
out:
	damon_destroy_regions(t);
}

static void damon_test_feed_loop_next_input(void)
{
	unsigned long last_input = 900000, current_score = 200;

	/* If current score is lower than the goal, which is always 10,000 (read damon_feed_loop_next_input()'s
	 * comment), next input should be increased. */
	KUNIT_EXPECT(damon_feed_loop_next_input(last_input, current_score) > last_input);

	/* If current score is higher than the goal, next input should be decreased. */
	current_score = 250000000;
	KUNIT_EXPECT(damon_feed_loop_next_input(last_input, current_score) < last_input);

	/* The next input depends on the distance between the current score and the goal */
	KUNIT_EXPECT(damon_feed_loop_next_input(last_input, 200) > damon_feed_loop_next_input(last_input, 2000));
}

/* ---- vaddr-kunit.h ---- */

static void damon_test_three_regions_in_vmas(void)
{
	static const struct lab_vma vmas[] = {
		{ 10, 20, false }, { 20, 25, false }, { 200, 210, false }, { 210, 220, false }, { 300, 305, false },
		{ 307, 330, false },
	};
	struct damon_ctx *c = new_ctx();
	struct damon_addr_range regions[3] = { 0 };

	memcpy(c->vmas, vmas, sizeof(vmas));
	c->nr_vmas = 6;
	KUNIT_EXPECT(__damon_va_three_regions(c, regions) == 0);

	KUNIT_EXPECT(10ul == regions[0].start);
	KUNIT_EXPECT(25ul == regions[0].end);
	KUNIT_EXPECT(200ul == regions[1].start);
	KUNIT_EXPECT(220ul == regions[1].end);
	KUNIT_EXPECT(300ul == regions[2].start);
	KUNIT_EXPECT(330ul == regions[2].end);
}

/* damon_do_test_apply_three_regions(): the regions the three ranges leave of these old ones */
static void damon_do_test_apply_three_regions(unsigned long *regions, int nr_regions,
					      struct damon_addr_range *three_regions, unsigned long *expected,
					      int nr_expected)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r;
	int i;

	for (i = 0; i < nr_regions / 2; i++)
		damon_add_region(damon_new_region(regions[i * 2], regions[i * 2 + 1]), t);

	KUNIT_EXPECT(damon_set_regions(t, three_regions, 3) == 0);

	KUNIT_EXPECT(damon_nr_regions(t) == (unsigned int)nr_expected / 2);
	for (i = 0; i < nr_expected / 2; i++) {
		r = nth_region(t, i);
		KUNIT_EXPECT(r && r->ar.start == expected[i * 2]);
		KUNIT_EXPECT(r && r->ar.end == expected[i * 2 + 1]);
	}
	damon_destroy_regions(t);
}

static unsigned long old_regions[] = { 10, 20, 20, 30, 50, 55, 55, 57, 57, 59, 70, 80, 80, 90, 90, 100 };

static void damon_test_apply_three_regions1(void)
{
	struct damon_addr_range new_three_regions[3] = { (struct damon_addr_range){ .start = 5, .end = 27 },
							  (struct damon_addr_range){ .start = 45, .end = 55 },
							  (struct damon_addr_range){ .start = 73, .end = 104 } };
	unsigned long expected[] = { 5, 20, 20, 27, 45, 55, 73, 80, 80, 90, 90, 104 };

	damon_do_test_apply_three_regions(old_regions, 16, new_three_regions, expected, 12);
}

static void damon_test_apply_three_regions2(void)
{
	struct damon_addr_range new_three_regions[3] = { (struct damon_addr_range){ .start = 5, .end = 27 },
							  (struct damon_addr_range){ .start = 56, .end = 57 },
							  (struct damon_addr_range){ .start = 65, .end = 104 } };
	unsigned long expected[] = { 5, 20, 20, 27, 56, 57, 65, 80, 80, 90, 90, 104 };

	damon_do_test_apply_three_regions(old_regions, 16, new_three_regions, expected, 12);
}

static void damon_test_apply_three_regions3(void)
{
	struct damon_addr_range new_three_regions[3] = { (struct damon_addr_range){ .start = 5, .end = 27 },
							  (struct damon_addr_range){ .start = 61, .end = 63 },
							  (struct damon_addr_range){ .start = 65, .end = 104 } };
	unsigned long expected[] = { 5, 20, 20, 27, 61, 63, 65, 80, 80, 90, 90, 104 };

	damon_do_test_apply_three_regions(old_regions, 16, new_three_regions, expected, 12);
}

static void damon_test_apply_three_regions4(void)
{
	struct damon_addr_range new_three_regions[3] = { (struct damon_addr_range){ .start = 5, .end = 7 },
							  (struct damon_addr_range){ .start = 30, .end = 32 },
							  (struct damon_addr_range){ .start = 65, .end = 68 } };
	unsigned long expected[] = { 5, 7, 30, 32, 65, 68 };

	damon_do_test_apply_three_regions(old_regions, 16, new_three_regions, expected, 6);
}

static void damon_test_split_evenly_fail(unsigned long start, unsigned long end, unsigned int nr_pieces)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r = damon_new_region(start, end);

	damon_add_region(r, t);
	KUNIT_EXPECT(damon_va_evenly_split_region(t, r, nr_pieces) == -EINVAL);
	KUNIT_EXPECT(damon_nr_regions(t) == 1u);

	damon_for_each_region(r, t) {
		KUNIT_EXPECT(r->ar.start == start);
		KUNIT_EXPECT(r->ar.end == end);
	}
	damon_destroy_regions(t);
}

static void damon_test_split_evenly_succ(unsigned long start, unsigned long end, unsigned int nr_pieces)
{
	struct damon_ctx *c = new_ctx();
	struct damon_target *t = &c->target;
	struct damon_region *r = damon_new_region(start, end);
	unsigned long expected_width = (end - start) / nr_pieces;
	unsigned long i = 0;

	damon_add_region(r, t);
	KUNIT_EXPECT(damon_va_evenly_split_region(t, r, nr_pieces) == 0);
	KUNIT_EXPECT(damon_nr_regions(t) == nr_pieces);

	damon_for_each_region(r, t) {
		if (i == nr_pieces - 1) {
			KUNIT_EXPECT(r->ar.start == start + i * expected_width);
			KUNIT_EXPECT(r->ar.end == end);
			break;
		}
		KUNIT_EXPECT(r->ar.start == start + i++ * expected_width);
		KUNIT_EXPECT(r->ar.end == start + i * expected_width);
	}
	damon_destroy_regions(t);
}

static void damon_test_split_evenly(void)
{
	KUNIT_EXPECT(damon_va_evenly_split_region(NULL, NULL, 5) == -EINVAL);

	damon_test_split_evenly_fail(0, 100, 0);
	damon_test_split_evenly_succ(0, 100, 10);
	damon_test_split_evenly_succ(5, 59, 5);
	damon_test_split_evenly_succ(0, 3, 2);
	damon_test_split_evenly_fail(5, 6, 2);
}

/* ---- the suites, in the kernel's order ---- */

struct kunit_case {
	const char *name;
	void (*run)(void);
	const char *na;	/* why the port has no counterpart, or NULL */
};

static const struct kunit_case damon_cases[] = {
	{ "damon_test_target", NULL, "a damon_target in a damon_ctx's list: the port has one target, no lists" },
	{ "damon_test_regions", damon_test_regions, NULL },
	{ "damon_test_aggregate", damon_test_aggregate, NULL },
	{ "damon_test_split_at", damon_test_split_at, NULL },
	{ "damon_test_merge_two", damon_test_merge_two, NULL },
	{ "damon_test_merge_regions_of", damon_test_merge_regions_of, NULL },
	{ "damon_test_split_regions_of", damon_test_split_regions_of, NULL },
	{ "damon_test_ops_registration", NULL, "damon_register_ops/damon_select_ops: vaddr is built in" },
	{ "damon_test_set_regions", damon_test_set_regions, NULL },
	{ "damon_test_nr_accesses_to_accesses_bp", damon_test_nr_accesses_to_accesses_bp, NULL },
	{ "damon_test_update_monitoring_result", damon_test_update_monitoring_result, NULL },
	{ "damon_test_set_attrs", damon_test_set_attrs, NULL },
	{ "damon_test_moving_sum", damon_test_moving_sum, NULL },
	{ "damos_test_new_filter", NULL, "damos_new_filter()'s allocation: the port's filters are fixed values" },
	{ "damos_test_filter_out", damos_test_filter_out, NULL },
	{ "damon_test_feed_loop_next_input", damon_test_feed_loop_next_input, NULL },
};

static const struct kunit_case damon_operations_cases[] = {
	{ "damon_test_three_regions_in_vmas", damon_test_three_regions_in_vmas, NULL },
	{ "damon_test_apply_three_regions1", damon_test_apply_three_regions1, NULL },
	{ "damon_test_apply_three_regions2", damon_test_apply_three_regions2, NULL },
	{ "damon_test_apply_three_regions3", damon_test_apply_three_regions3, NULL },
	{ "damon_test_apply_three_regions4", damon_test_apply_three_regions4, NULL },
	{ "damon_test_split_evenly", damon_test_split_evenly, NULL },
};

static int run_suite(int n, const char *name, const struct kunit_case *cases, int nr)
{
	int failed = 0;

	printf("    # Subtest: %s\n    1..%d\n", name, nr);
	for (int k = 0; k < nr; k++) {
		int before = failures;

		splitmix64_seed(&lab_random, 1);
		if (!cases[k].run) {
			printf("    ok %d %s # SKIP %s\n", k + 1, cases[k].name, cases[k].na);
			continue;
		}
		cases[k].run();
		printf("    %s %d %s\n", failures == before ? "ok" : "not ok", k + 1, cases[k].name);
		failed += failures != before;
	}
	printf("%s %d %s\n", failed ? "not ok" : "ok", n, name);
	return failed;
}

int main(void)
{
	int failed;

	printf("KTAP version 1\n1..2\n");
	failed = run_suite(1, "damon", damon_cases, sizeof(damon_cases) / sizeof(damon_cases[0]));
	failed += run_suite(2, "damon-operations", damon_operations_cases,
			    sizeof(damon_operations_cases) / sizeof(damon_operations_cases[0]));
	return failed ? 1 : 0;
}
