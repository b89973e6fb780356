// SPDX-License-Identifier: GPL-2.0
/*
 * damon-bench: aggregation intervals over a process of SIZE GiB, by DAMON or by scanning pages.
 *
 *   damon-bench GIB damon|pages [TIMED]
 *
 * The process: a 16 MiB heap, a GIB GiB mapping and a 1 MiB stack, far apart; it touches a 1%
 * block in the middle of the big mapping in every sampling interval and a 4% block beside it at a
 * rate of 10% per page (workload.c's hash: nothing is stored per page).  Attributes are DAMON's
 * defaults: 5 ms sampling, 100 ms aggregation (20 samples), 10..1000 regions.
 *
 * damon: kdamond_fn from the start (the three regions, split evenly) through WARMUP aggregations
 * in which the regions adapt, then TIMED more (default 1, at most MAX_TIMED), each timed and
 * counted on its own: one access check per region per sample.  pages: the same access check on
 * every page of the three mappings in every one of the 20 samples, each page's result counted and
 * dropped (computed, never stored), one aggregation only.  Each aggregation is timed twice: on
 * CLOCK_MONOTONIC (wall) and on CLOCK_THREAD_CPUTIME_ID (the monitoring thread's CPU time, which a
 * loaded host stretches far less, since time spent preempted is not counted).  Prints one JSON line:
 * per aggregation its wall and CPU nanoseconds, its access checks, its get_random_u32() draws and how
 * many damon_rand() calls took __get_random_u32_below()'s unlikely branch, then the regions at the end, the
 * accessed pages found and the peak resident set (VmHWM of /proc/self/status: getrusage()'s
 * ru_maxrss would keep the parent's peak across the exec).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "damon.h"

#define WARMUP		10
#define MAX_TIMED	1000

/*
 * At the start of each timed aggregation and at the end of the last: the two clocks, the access
 * checks so far, get_random_u32()'s draws so far and the unlikely branches of __get_random_u32_below()
 * so far.  Counts are kept as doubles, exact below 2^53 (page scanning at 1 TiB checks 5.4e9 pages).
 */
enum { WALL, CPU, CHECKS, DRAWS, UNLIKELY, NR_MARKS };
static const char *const mark_names[NR_MARKS] = { "wall_ns", "cpu_ns", "access_checks", "random_draws",
						   "below_unlikely" };
static double marks[NR_MARKS][MAX_TIMED + 1];
static unsigned long marked;	/* the timed aggregations whose start is marked */
static unsigned long checks;

/* VmHWM in KiB, or -1 where /proc/self/status has none */
static long vm_hwm_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void mark(void)
{
	marks[WALL][marked] = clock_ns(CLOCK_MONOTONIC);
	marks[CPU][marked] = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	marks[CHECKS][marked] = checks;
	marks[DRAWS][marked] = lab_random_draws;
	marks[UNLIKELY][marked] = lab_random_unlikely;
	marked++;
}

/* a timed aggregation starts at the first kdamond_wait_activation after the split that ends the one before */
static void count_checks(struct damon_ctx *c, const char *label)
{
	if (c->aggregations < WARMUP)
		return;
	if (!strcmp(label, "damon_va_check_accesses"))
		checks += damon_nr_regions(&c->target);
	else if (!strcmp(label, "kdamond_wait_activation") && marked == c->aggregations - WARMUP)
		mark();
}

/* a whole number in lo..hi, all of the argument */
static bool parse_ulong(const char *arg, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;

	if (*arg < '0' || *arg > '9')
		return false;
	*out = strtoul(arg, &end, 10);
	return !*end && *out >= lo && *out <= hi;
}

int main(int argc, char **argv)
{
	static struct damon_ctx ctx;
	static struct lab_callbacks hooks = { .step = count_checks };
	struct damon_attrs attrs = { 5000, 100000, 60000000, 10, 1000 };
	unsigned long gib, big, accessed = 0, samples, timed = 1;
	bool pages = argc >= 3 && !strcmp(argv[2], "pages");

	if (argc < 3 || argc > 4 || (strcmp(argv[2], "damon") && !pages) || !parse_ulong(argv[1], 1, 1024, &gib) ||
	    (argc == 4 && !parse_ulong(argv[3], 1, pages ? 1 : MAX_TIMED, &timed))) {
		fprintf(stderr, "damon-bench: usage: damon-bench GIB(1..1024) damon [TIMED(1..%d)] | "
			"damon-bench GIB(1..1024) pages\n", MAX_TIMED);
		return 2;
	}
	big = 0x600000000000UL;
	INIT_LIST_HEAD(&ctx.target.regions_list);
	damon_set_attrs(&ctx, &attrs);
	ctx.vmas[0] = (struct lab_vma){ 0x555555550000UL, 0x555555550000UL + (16UL << 20), false };
	ctx.vmas[1] = (struct lab_vma){ big, big + (gib << 30), false };
	ctx.vmas[2] = (struct lab_vma){ 0x7ffc00000000UL, 0x7ffc00100000UL, false };
	ctx.nr_vmas = 3;
	ctx.accesses[0] = (struct lab_access){ big + (gib << 29), big + (gib << 29) + (gib << 30) / 100, 1000, 0, 0,
					       0, ULONG_MAX };
	ctx.accesses[1] = (struct lab_access){ big + (gib << 28), big + (gib << 28) + (gib << 30) / 25, 100, 0, 0,
					       0, ULONG_MAX };
	ctx.nr_accesses = 2;
	ctx.seed = 1;
	ctx.stop_after = WARMUP + timed;
	ctx.lab = &hooks;
	splitmix64_seed(&lab_random, 1);
	samples = attrs.aggr_interval / attrs.sample_interval;

	if (pages) {
		mark();
		for (unsigned long s = 0; s < samples; s++)
			for (int v = 0; v < ctx.nr_vmas; v++)
				for (unsigned long p = ctx.vmas[v].start / PAGE_SIZE; p < ctx.vmas[v].end / PAGE_SIZE; p++) {
					accessed += lab_accessed(&ctx, p, s);
					checks++;
				}
	} else {
		kdamond_fn(&ctx);
	}
	mark();
	printf("{\"gib\": %lu, \"mode\": \"%s\", \"samples\": %lu, \"warmup_aggregations\": %d",
	       gib, argv[2], samples, pages ? 0 : WARMUP);
	for (int k = 0; k < NR_MARKS; k++) {	/* each a list: what the timed aggregations took, one by one */
		printf(", \"%s\": [", mark_names[k]);
		for (unsigned long i = 0; i < timed; i++)
			printf("%s%.0f", i ? ", " : "", marks[k][i + 1] - marks[k][i]);
		printf("]");
	}
	printf(", \"nr_regions\": %u, \"accessed_pages_found\": %lu, \"vm_hwm_kib\": %ld}\n",
	       damon_nr_regions(&ctx.target), accessed, vm_hwm_kib());
	damon_destroy_regions(&ctx.target);
	return 0;
}
