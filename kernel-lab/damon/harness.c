// SPDX-License-Identifier: GPL-2.0
/*
 * damon: DAMON of Linux 6.12.117 monitoring one process, from a scenario's parameters.
 *
 *   damon PARAMS      PARAMS: one key=value a line (kstep.lab.replay.damon.params writes them)
 *
 * The context is built as simulator/kstep/models/damon/model.py builds its first state, kdamond_fn
 * runs until the scenario's number of aggregation intervals, and the program prints what the
 * simulator's trace shows: at every kdamond_reset_aggregated() the aggregation's number, time,
 * sampling intervals and nr_regions, then each region as trace_damon_aggregated() reports it;
 * every action a scheme applied; at the end the random draws, the clock, kdamond's step count and
 * every scheme's statistics.  The process's mmap()/munmap() calls (mmap.N.after) run before
 * kdamond's step number after + 1, as the simulator's schedule ran them.  A bad parameter is one
 * line on stderr and exit status 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "damon.h"
#include "params.h"

#define MAX_MMAPS	16
#define MAX_ADDR	(1UL << 47)
#define MAX_I64		((unsigned long)LONG_MAX)

struct mmap_call {
	bool munmap;
	unsigned long start, end, after;
	bool thp;
};

static struct damon_ctx ctx;
static int nr_mmaps, mmaps_done;
static struct mmap_call mmaps[MAX_MMAPS];
static unsigned long kdamond_steps;

/* "at:value,at:value" */
static void series(struct lab_series *s, const char *value, unsigned long hi)
{
	const char *p = value;

	s->nr = 0;
	while (*p) {
		char *end;

		if (s->nr == LAB_MAX_SERIES)
			bad("more than %d points", LAB_MAX_SERIES);
		errno = 0;
		s->at[s->nr] = strtoul(p, &end, 10);
		if (errno || end == p || *end != ':' || *p == '-' || s->at[s->nr] > MAX_I64 ||
		    (s->nr && s->at[s->nr] < s->at[s->nr - 1]))
			bad("%s is not a list of at:value pairs in time order", value);
		p = end + 1;
		s->value[s->nr] = strtoul(p, &end, 10);
		if (errno || end == p || (*end && *end != ',') || *p == '-' || s->value[s->nr] > hi)
			bad("%s is not a list of at:value pairs (values up to %lu)", value, hi);
		s->nr++;
		p = *end ? end + 1 : end;
	}
}

static const char *const wmark_metrics[] = { "none", "free_mem_rate" };
static const char *const mmap_ops[] = { "mmap", "munmap" };

static void scheme_field(struct damos *s, const char *field, const char *value)
{
	struct damos_quota *q = &s->quota;
	struct damos_watermarks *w = &s->wmarks;
	const char *sub;
	int k;

	if (!strcmp(field, "action"))
		s->action = choice(value, damos_action_names, NR_DAMOS_ACTIONS);
	else if (!strcmp(field, "min_sz"))
		s->pattern.min_sz_region = number(value, 0, MAX_I64);
	else if (!strcmp(field, "max_sz"))
		s->pattern.max_sz_region = number(value, 0, MAX_I64);
	else if (!strcmp(field, "min_nr_accesses"))
		s->pattern.min_nr_accesses = number(value, 0, UINT_MAX);
	else if (!strcmp(field, "max_nr_accesses"))
		s->pattern.max_nr_accesses = number(value, 0, UINT_MAX);
	else if (!strcmp(field, "min_age"))
		s->pattern.min_age_region = number(value, 0, UINT_MAX);
	else if (!strcmp(field, "max_age"))
		s->pattern.max_age_region = number(value, 0, UINT_MAX);
	else if (!strcmp(field, "apply_interval_us"))
		s->apply_interval_us = number(value, 0, 10000000000UL);
	else if (!strcmp(field, "quota_ms"))
		q->ms = number(value, 0, 1000000);
	else if (!strcmp(field, "quota_bytes"))
		q->sz = number(value, 0, MAX_I64);
	else if (!strcmp(field, "quota_reset_interval_ms"))
		q->reset_interval = number(value, 0, 10000000);
	else if (!strcmp(field, "weight_sz"))
		q->weight_sz = number(value, 0, 1000);
	else if (!strcmp(field, "weight_nr_accesses"))
		q->weight_nr_accesses = number(value, 0, 1000);
	else if (!strcmp(field, "weight_age"))
		q->weight_age = number(value, 0, 1000);
	else if (!strcmp(field, "wmark_metric"))
		w->metric = choice(value, wmark_metrics, 2);
	else if (!strcmp(field, "wmark_interval_us"))
		w->interval = number(value, 0, 1000000000);
	else if (!strcmp(field, "wmark_high"))
		w->high = number(value, 0, 1000);
	else if (!strcmp(field, "wmark_mid"))
		w->mid = number(value, 0, 1000);
	else if (!strcmp(field, "wmark_low"))
		w->low = number(value, 0, 1000);
	else if (!strcmp(field, "goals"))
		q->nr_goals = number(value, 0, LAB_MAX_GOALS);
	else if (!strcmp(field, "filters"))
		s->nr_filters = number(value, 0, LAB_MAX_FILTERS);
	else if (!strncmp(field, "goal.", 5)) {
		k = item(field + 5, q->nr_goals, &sub);
		if (!strcmp(sub, "target_value"))
			q->goals[k].target_value = number(value, 1, MAX_I64);
		else if (!strcmp(sub, "current"))
			series(&q->goals[k].user_input, value, MAX_I64);
		else
			bad("unknown key");
	} else if (!strncmp(field, "filter.", 7)) {
		k = item(field + 7, s->nr_filters, &sub);
		if (!strcmp(sub, "start"))
			s->filters[k].addr_range.start = number(value, 0, MAX_ADDR);
		else if (!strcmp(sub, "end"))
			s->filters[k].addr_range.end = number(value, 1, MAX_ADDR);
		else if (!strcmp(sub, "matching"))
			s->filters[k].matching = number(value, 0, 1);
		else
			bad("unknown key");
	} else {
		bad("unknown key");
	}
}

static void set(void *arg, const char *key, const char *value)
{
	struct damon_attrs *attrs = arg;
	const char *field;
	int k;

	if (!strcmp(key, "aggregations"))
		ctx.stop_after = number(value, 1, 2000);
	else if (!strcmp(key, "seed"))
		ctx.seed = number(value, 0, MAX_I64);
	else if (!strcmp(key, "sample_us"))
		attrs->sample_interval = number(value, 1, 10000000);
	else if (!strcmp(key, "aggr_us"))
		attrs->aggr_interval = number(value, 1, 1000000000);
	else if (!strcmp(key, "update_us"))
		attrs->ops_update_interval = number(value, 1, 10000000000UL);
	else if (!strcmp(key, "min_nr_regions"))
		attrs->min_nr_regions = number(value, 1, 1 << 16);
	else if (!strcmp(key, "max_nr_regions"))
		attrs->max_nr_regions = number(value, 1, 1 << 16);
	else if (!strcmp(key, "vmas"))
		ctx.nr_vmas = number(value, 1, 64);
	else if (!strcmp(key, "accesses"))
		ctx.nr_accesses = number(value, 0, LAB_MAX_ACCESSES);
	else if (!strcmp(key, "mmaps"))
		nr_mmaps = number(value, 0, MAX_MMAPS);
	else if (!strcmp(key, "schemes"))
		ctx.nr_schemes = number(value, 0, LAB_MAX_SCHEMES);
	else if (!strcmp(key, "free_mem_rate"))
		series(&ctx.free_mem_rate, value, 1000);
	else if (!strncmp(key, "ns_per_byte.", 12))
		ctx.ns_per_byte[choice(key + 12, damos_action_names, NR_DAMOS_ACTIONS)] = number(value, 0, 1000000000);
	else if (!strncmp(key, "vma.", 4)) {
		struct lab_vma *v = &ctx.vmas[item(key + 4, ctx.nr_vmas, &field)];

		if (!strcmp(field, "start"))
			v->start = number(value, 0, MAX_ADDR);
		else if (!strcmp(field, "end"))
			v->end = number(value, 1, MAX_ADDR);
		else if (!strcmp(field, "thp"))
			v->thp = number(value, 0, 1);
		else
			bad("unknown key");
	} else if (!strncmp(key, "access.", 7)) {
		struct lab_access *a = &ctx.accesses[item(key + 7, ctx.nr_accesses, &field)];

		if (!strcmp(field, "start"))
			a->start = number(value, 0, MAX_ADDR);
		else if (!strcmp(field, "end"))
			a->end = number(value, 1, MAX_ADDR);
		else if (!strcmp(field, "rate_permil"))
			a->rate_permil = number(value, 0, 1000);
		else if (!strcmp(field, "width"))
			a->width = number(value, 0, MAX_ADDR);
		else if (!strcmp(field, "speed"))
			a->speed = number(value, 0, MAX_ADDR);
		else if (!strcmp(field, "from_sample"))
			a->from_sample = number(value, 0, MAX_I64);
		else if (!strcmp(field, "until_sample"))
			a->until_sample = number(value, 1, MAX_I64);
		else
			bad("unknown key");
	} else if (!strncmp(key, "mmap.", 5)) {
		struct mmap_call *m = &mmaps[item(key + 5, nr_mmaps, &field)];

		if (!strcmp(field, "op"))
			m->munmap = choice(value, mmap_ops, 2);
		else if (!strcmp(field, "start"))
			m->start = number(value, 0, MAX_ADDR);
		else if (!strcmp(field, "end"))
			m->end = number(value, 1, MAX_ADDR);
		else if (!strcmp(field, "thp"))
			m->thp = number(value, 0, 1);
		else if (!strcmp(field, "after"))
			m->after = number(value, 0, MAX_I64);
		else
			bad("unknown key");
	} else if (!strncmp(key, "scheme.", 7)) {
		k = item(key + 7, ctx.nr_schemes, &field);
		scheme_field(&ctx.schemes[k], field, value);
	} else {
		bad("unknown key");
	}
}

static void read_params(const char *path)
{
	struct damon_attrs attrs = { 5000, 100000, 60000000, 10, 1000 };

	for (int k = 0; k < LAB_MAX_SCHEMES; k++) {	/* damon_new_scheme()'s defaults */
		ctx.schemes[k].pattern = (struct damos_access_pattern){ 0, MAX_I64, 0, UINT_MAX, 0, UINT_MAX };
		ctx.schemes[k].action = DAMOS_STAT;
		ctx.schemes[k].wmarks.activated = true;
	}
	for (int k = 0; k < LAB_MAX_ACCESSES; k++) {
		ctx.accesses[k].rate_permil = 1000;
		ctx.accesses[k].until_sample = MAX_I64;
	}
	ctx.seed = 1;
	read_key_values(path, set, &attrs);
	if (!ctx.stop_after)
		bad("aggregations is missing");
	if (damon_set_attrs(&ctx, &attrs))
		bad("damon_set_attrs() refuses these attributes");
	for (int v = 0; v < ctx.nr_vmas; v++)
		if (ctx.vmas[v].start >= ctx.vmas[v].end || (v && ctx.vmas[v].start < ctx.vmas[v - 1].end))
			bad("vma.%d is empty or not above vma.%d", v, v - 1);
	for (int k = 0; k < nr_mmaps; k++)
		if (mmaps[k].start >= mmaps[k].end || (k && mmaps[k].after < mmaps[k - 1].after))
			bad("mmap.%d is empty or runs before mmap.%d", k, k - 1);
	for (int k = 0; k < ctx.nr_schemes; k++) {
		for (int g = 0; g < ctx.schemes[k].quota.nr_goals; g++)
			if (!ctx.schemes[k].quota.goals[g].target_value)
				bad("scheme.%d.goal.%d has no target_value", k, g);
		if (ctx.schemes[k].wmarks.metric == DAMOS_WMARK_FREE_MEM_RATE && !ctx.free_mem_rate.nr)
			bad("scheme.%d has a free_mem_rate watermark but there is no free_mem_rate", k);
	}
}

/* mm/mmap.c do_mmap(): the new mapping, in address order */
static void do_mmap(unsigned long start, unsigned long end, bool thp)
{
	int k = ctx.nr_vmas;

	if (ctx.nr_vmas == LAB_MAX_VMAS)
		bad("more than %d mappings", LAB_MAX_VMAS);
	while (k && ctx.vmas[k - 1].start > start) {
		ctx.vmas[k] = ctx.vmas[k - 1];
		k--;
	}
	ctx.vmas[k] = (struct lab_vma){ start, end, thp };
	ctx.nr_vmas++;
}

/* mm/mmap.c __vm_munmap(): what is left of each mapping around [start, end) */
static void vm_munmap(unsigned long start, unsigned long end)
{
	struct lab_vma out[LAB_MAX_VMAS];
	int n = 0;

	for (int k = 0; k < ctx.nr_vmas; k++) {
		struct lab_vma v = ctx.vmas[k];

		if (v.end <= start || end <= v.start) {
			out[n++] = v;
			continue;
		}
		if (v.start < start) {
			if (n == LAB_MAX_VMAS)
				bad("more than %d mappings", LAB_MAX_VMAS);
			out[n] = v;
			out[n++].end = start;
		}
		if (end < v.end) {
			if (n == LAB_MAX_VMAS)
				bad("more than %d mappings", LAB_MAX_VMAS);
			out[n] = v;
			out[n++].start = end;
		}
	}
	memcpy(ctx.vmas, out, n * sizeof(*out));
	ctx.nr_vmas = n;
}

static void run_mmap_calls(unsigned long upto)
{
	for (; mmaps_done < nr_mmaps && mmaps[mmaps_done].after <= upto; mmaps_done++) {
		struct mmap_call *m = &mmaps[mmaps_done];

		if (m->munmap)
			vm_munmap(m->start, m->end);
		else
			do_mmap(m->start, m->end, m->thp);
	}
}

static void step(struct damon_ctx *c, const char *label)
{
	run_mmap_calls(kdamond_steps);	/* the process's calls take mmap_lock between kdamond's steps */
	kdamond_steps++;
	if (!strcmp(label, "kdamond_reset_aggregated"))
		printf("aggregation %lu %lu %lu %u\n", c->aggregations + 1, c->now_us, c->passed_sample_intervals,
		       damon_nr_regions(&c->target));
}

static void aggregated(struct damon_ctx *c, struct damon_region *r)
{
	printf("r 0x%lx 0x%lx %u %u %u\n", r->ar.start, r->ar.end, r->nr_accesses, r->nr_accesses_bp, r->age);
}

static void applied(struct damon_ctx *c, int sidx, struct damon_region *r, unsigned long sz_applied)
{
	printf("apply %d 0x%lx 0x%lx %lu\n", sidx, r->ar.start, r->ar.end, sz_applied);
}

int main(int argc, char **argv)
{
	static struct lab_callbacks hooks = { step, aggregated, applied };

	prog = "damon";
	where = "usage";
	if (argc != 2)
		bad("damon PARAMS (a file of key=value lines)");
	INIT_LIST_HEAD(&ctx.target.regions_list);
	read_params(argv[1]);
	splitmix64_seed(&lab_random, ctx.seed);
	ctx.lab = &hooks;
	kdamond_fn(&ctx);
	run_mmap_calls(ULONG_MAX);
	printf("draws %lu\n", lab_random_draws);
	printf("time %lu %lu\n", ctx.now_us, ctx.passed_sample_intervals);
	printf("steps %lu\n", kdamond_steps);
	for (int k = 0; k < ctx.nr_schemes; k++) {
		struct damos *s = &ctx.schemes[k];

		printf("stat %d %lu %lu %lu %lu %lu %lu\n", k, s->stat.nr_tried, s->stat.sz_tried, s->stat.nr_applied,
		       s->stat.sz_applied, s->stat.qt_exceeds, s->quota.esz);
	}
	damon_destroy_regions(&ctx.target);
	return 0;
}
