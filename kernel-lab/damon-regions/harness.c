// SPDX-License-Identifier: GPL-2.0
/*
 * The identity harness of the kernel's DAMON region functions: reads cases on stdin, runs each on a
 * fresh target with the kernel's own code (build/src/damon-regions.c, copied from the tree by
 * scripts/kernel-functions) and prints the whole state after it. simulator/tests/
 * test_kernel_functions.py runs the model's function on the same case and compares.
 *
 * A case:                                  What is printed for it:
 *   case                                     case K (0, 1, 2, ...: the cases in order)
 *   attrs SAMPLE AGGR OPS MIN MAX            rc RC [START END ...: the ranges three_regions found]
 *   rng STATE                                regions N (t->nr_regions), then one line per region:
 *   regions N, then N lines of                 START END NR_ACCESSES NR_ACCESSES_BP AGE LAST_NR_ACCESSES
 *     region START END NR_ACCESSES           rng STATE DRAWS (the get_random_u32() calls of this case)
 *     NR_ACCESSES_BP AGE LAST_NR_ACCESSES    count allocs ALLOCS frees FREES rcu DEPTH (of the operation)
 *   one operation (see run()), then end
 *
 * Numbers are decimal. A malformed case is one line on stderr and exit status 2.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "regions_internal.h"
#include "damon-regions.c"

struct splitmix64 lab_random;
unsigned long lab_random_draws;

static unsigned long line_no;

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "damon-regions: stdin line %lu: ", line_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* The next line's words: the first must be @key, then exactly @n decimal numbers (n < 0: any). */
static int words(const char *key, unsigned long *out, int n, char *name)
{
	static char line[1 << 16];
	char *tok, *end, *save;
	int got = 0;

	if (!fgets(line, sizeof(line), stdin))
		bad("expected '%s', found the end of the input", key);
	line_no++;
	line[strcspn(line, "\n")] = 0;
	tok = strtok_r(line, " ", &save);
	if (!tok || (key && strcmp(tok, key)))
		bad("expected '%s', found '%s'", key ? key : "an operation", tok ? tok : "");
	if (name)
		snprintf(name, 64, "%s", tok);
	while ((tok = strtok_r(NULL, " ", &save))) {
		if (got == 4096 || *tok < '0' || *tok > '9')
			bad("'%s' is not a decimal number", tok);
		errno = 0;
		out[got] = strtoul(tok, &end, 10);
		if (*end || errno)
			bad("'%s' is not a decimal number", tok);
		got++;
	}
	if (n >= 0 && got != n)
		bad("'%s' takes %d numbers, not %d", key, n, got);
	return got;
}

static struct damon_region *nth(struct damon_target *t, unsigned long i)
{
	struct damon_region *r;
	unsigned long k = 0;

	damon_for_each_region(r, t)
		if (k++ == i)
			return r;
	bad("there is no region %lu", i);
}

static void print_state(struct damon_target *t, unsigned long start_allocs, unsigned long start_frees)
{
	struct damon_region *r;

	printf("regions %u\n", t->nr_regions);
	damon_for_each_region(r, t)
		printf("%lu %lu %u %u %u %u\n", r->ar.start, r->ar.end, r->nr_accesses, r->nr_accesses_bp, r->age,
		       r->last_nr_accesses);
	printf("rng %llu %lu\n", (unsigned long long)lab_random.state, lab_random_draws);
	printf("count allocs %lu frees %lu rcu %d\n", lab_region_cache.allocs - start_allocs,
	       lab_region_cache.frees - start_frees, lab_rcu_depth);
}

static struct damon_addr_range *ranges_of(unsigned long *v, int n)
{
	static struct damon_addr_range ranges[2048];
	int i;

	if (n % 2)
		bad("ranges come in pairs of numbers");
	for (i = 0; i < n / 2; i++)
		ranges[i] = (struct damon_addr_range){ v[2 * i], v[2 * i + 1] };
	return ranges;
}

/* One operation on @ctx's one target; prints its rc line. */
static void run(struct damon_ctx *ctx, struct damon_target *t)
{
	static unsigned long v[4096];
	char op[64];
	int n = words(NULL, v, -1, op), rc = 0, i;

	if (!strcmp(op, "merge_two") && n == 1) {
		struct damon_region *l = nth(t, v[0]);

		if (list_entry_is_head(damon_next_region(l), &t->regions_list, list))
			bad("region %lu has no right neighbour", v[0]);
		damon_merge_two_regions(t, l, damon_next_region(l));
	} else if (!strcmp(op, "merge_regions_of") && n == 3) {
		damon_merge_regions_of(t, v[0], v[1], v[2]);
	} else if (!strcmp(op, "kdamond_merge_regions") && n == 2) {
		kdamond_merge_regions(ctx, v[0], v[1]);
	} else if (!strcmp(op, "split_region_at") && n == 2) {
		damon_split_region_at(t, nth(t, v[0]), v[1]);
	} else if (!strcmp(op, "split_regions_of") && n == 1) {
		damon_split_regions_of(t, v[0]);
	} else if (!strcmp(op, "set_regions")) {
		rc = damon_set_regions(t, ranges_of(v, n), n / 2);
	} else if (!strcmp(op, "update_access_rate") && n == 2) {
		damon_update_region_access_rate(nth(t, v[0]), v[1], &ctx->attrs);
	} else if (!strcmp(op, "evenly_split") && n == 2) {
		rc = damon_va_evenly_split_region(t, nth(t, v[0]), v[1]);
	} else if (!strcmp(op, "three_regions")) {
		struct damon_addr_range *vmas = ranges_of(v, n), found[3];
		struct vm_area_struct vma[2048];
		struct mm_struct mm = { vma, n / 2 };

		for (i = 0; i < n / 2; i++)
			vma[i] = (struct vm_area_struct){ vmas[i].start, vmas[i].end };
		rc = __damon_va_three_regions(&mm, found);
		printf("rc %d", rc);
		for (i = 0; !rc && i < 3; i++)
			printf(" %lu %lu", found[i].start, found[i].end);
		printf("\n");
		return;
	} else {
		bad("unknown operation '%s' with %d numbers", op, n);
	}
	printf("rc %d\n", rc);
}

int main(void)
{
	static unsigned long v[4096];
	unsigned long cases = 0;

	while (!feof(stdin)) {
		struct damon_ctx ctx = {0};
		struct damon_target target = {0}, *t = &target;
		struct damon_region *r, *next;
		unsigned long allocs, frees, i;
		int c = getc(stdin);

		if (c == EOF)
			break;
		ungetc(c, stdin);
		words("case", v, 0, NULL);
		INIT_LIST_HEAD(&ctx.adaptive_targets);
		INIT_LIST_HEAD(&t->regions_list);
		list_add_tail(&t->list, &ctx.adaptive_targets);
		words("attrs", v, 5, NULL);
		ctx.attrs = (struct damon_attrs){ v[0], v[1], v[2], v[3], v[4] };
		words("rng", v, 1, NULL);
		lab_random.state = v[0];
		lab_random_draws = 0;
		words("regions", v, 1, NULL);
		for (i = v[0]; i; i--) {
			words("region", v, 6, NULL);
			if (v[0] >= v[1] || (t->nr_regions && v[0] < damon_last_region(t)->ar.end))
				bad("a region must be non-empty and start at or after the end of the one before");
			if ((v[2] | v[3] | v[4] | v[5]) > UINT_MAX)
				bad("nr_accesses, nr_accesses_bp, age and last_nr_accesses are unsigned ints");
			r = damon_new_region(v[0], v[1]);
			r->nr_accesses = v[2];
			r->nr_accesses_bp = v[3];
			r->age = v[4];
			r->last_nr_accesses = v[5];
			damon_add_region(r, t);
		}
		allocs = lab_region_cache.allocs;
		frees = lab_region_cache.frees;
		printf("case %lu\n", cases++);
		run(&ctx, t);
		words("end", v, 0, NULL);
		print_state(t, allocs, frees);
		damon_for_each_region_safe(r, next, t)
			damon_destroy_region(r, t);
		fflush(stdout);
	}
	return 0;
}
