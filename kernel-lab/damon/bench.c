// SPDX-License-Identifier: GPL-2.0
/*
 * damon-bench: one aggregation interval over a process of SIZE GiB, by DAMON or by scanning pages.
 *
 *   damon-bench GIB damon|pages
 *
 * The process: a 16 MiB heap, a GIB GiB mapping and a 1 MiB stack, far apart; it touches a 1%
 * block in the middle of the big mapping in every sampling interval and a 4% block beside it at a
 * rate of 10% per page (workload.c's hash: nothing is stored per page).  Attributes are DAMON's
 * defaults: 5 ms sampling, 100 ms aggregation (20 samples), 10..1000 regions.
 *
 * damon: kdamond_fn from the start (the three regions, split evenly) through WARMUP aggregations
 * in which the regions adapt, then one more, the one timed and counted: one access check per
 * region per sample.  pages: the same access check on every
 * page of the three mappings in every one of the 20 samples, each page's result counted and
 * dropped (computed, never stored).  Prints one JSON line: the wall time, the access checks,
 * the regions at the end, the accessed pages found and the peak resident set (VmHWM of
 * /proc/self/status: getrusage()'s ru_maxrss would keep the parent's peak across the exec).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "damon.h"

#define WARMUP	10

static unsigned long checks;
static double t0;

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

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* the timed aggregation starts after the WARMUP-th kdamond_split_regions() */
static void count_checks(struct damon_ctx *c, const char *label)
{
	if (c->aggregations < WARMUP)
		return;
	if (!strcmp(label, "damon_va_check_accesses"))
		checks += damon_nr_regions(&c->target);
	else if (!strcmp(label, "kdamond_wait_activation") && !t0)
		t0 = now_ns();
}

int main(int argc, char **argv)
{
	static struct damon_ctx ctx;
	static struct lab_callbacks hooks = { .step = count_checks };
	struct damon_attrs attrs = { 5000, 100000, 60000000, 10, 1000 };
	unsigned long gib, big, accessed = 0, samples;
	bool pages;
	double t1;

	if (argc != 3 || (strcmp(argv[2], "damon") && strcmp(argv[2], "pages")) ||
	    !(gib = strtoul(argv[1], NULL, 10)) || gib > 1024) {
		fprintf(stderr, "damon-bench: usage: damon-bench GIB(1..1024) damon|pages\n");
		return 2;
	}
	pages = !strcmp(argv[2], "pages");
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
	ctx.stop_after = WARMUP + 1;
	ctx.lab = &hooks;
	splitmix64_seed(&lab_random, 1);
	samples = attrs.aggr_interval / attrs.sample_interval;

	if (pages) {
		t0 = now_ns();
		for (unsigned long s = 0; s < samples; s++)
			for (int v = 0; v < ctx.nr_vmas; v++)
				for (unsigned long p = ctx.vmas[v].start / PAGE_SIZE; p < ctx.vmas[v].end / PAGE_SIZE; p++) {
					accessed += lab_accessed(&ctx, p, s);
					checks++;
				}
	} else {
		kdamond_fn(&ctx);
	}
	t1 = now_ns();
	printf("{\"gib\": %lu, \"mode\": \"%s\", \"ns\": %.0f, \"samples\": %lu, \"access_checks\": %lu, "
	       "\"nr_regions\": %u, \"accessed_pages_found\": %lu, \"vm_hwm_kib\": %ld, \"warmup_aggregations\": %d}\n",
	       gib, argv[2], t1 - t0, samples, checks, damon_nr_regions(&ctx.target), accessed, vm_hwm_kib(),
	       pages ? 0 : WARMUP);
	damon_destroy_regions(&ctx.target);
	return 0;
}
