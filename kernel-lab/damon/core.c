// SPDX-License-Identifier: GPL-2.0
/*
 * mm/damon/core.c of Linux 6.12.117, in userspace, for one context with one target.
 *
 * The functions keep the kernel's names, order and C arithmetic (unsigned int counts, unsigned
 * long sizes).  What differs: regions come from malloc; the time DAMOS takes to apply an action is
 * its bytes times the scenario's ns_per_byte for the action (ktime is not the simulator's); a quota
 * goal's current value is read from the scenario's series at the current time (a user writing
 * sysfs); free memory is read from the scenario's series; jiffies follow the context's clock with
 * HZ 250 from INITIAL_JIFFIES; kdamond_fn runs the operations of vaddr.c directly and calls the
 * harness's step() hook before each step the simulator counts.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "damon.h"

#define HZ			250
#define INITIAL_JIFFIES		((unsigned long)(unsigned int)(-300 * HZ))

struct splitmix64 lab_random;
unsigned long lab_random_draws;
unsigned long lab_random_unlikely;

const char *const damos_action_names[NR_DAMOS_ACTIONS] = {
	"willneed", "cold", "pageout", "hugepage", "nohugepage", "lru_prio", "lru_deprio", "migrate_hot",
	"migrate_cold", "stat",
};

static void lab_step(struct damon_ctx *c, const char *label)
{
	if (c->lab && c->lab->step)
		c->lab->step(c, label);
}

static unsigned long jiffies_of(struct damon_ctx *c)
{
	return INITIAL_JIFFIES + c->now_us * HZ / 1000000;
}

static unsigned long msecs_to_jiffies(unsigned long m)
{
	return (m + (1000 / HZ) - 1) / (1000 / HZ);
}

#define time_after_eq(a, b)		((long)((a) - (b)) >= 0)
#define time_before(a, b)		((long)((a) - (b)) < 0)
#define time_in_range_open(a, b, c)	(time_after_eq(a, b) && time_before(a, c))

/* include/linux/math.h abs() of an unsigned int difference: converted to int first */
static unsigned int abs_diff_int(unsigned int a, unsigned int b)
{
	int d = (int)(a - b);

	return d < 0 ? -(unsigned int)d : (unsigned int)d;
}

static unsigned long lab_series_at(const struct lab_series *s, unsigned long now_us, unsigned long dflt)
{
	unsigned long v = dflt;

	for (int k = 0; k < s->nr && s->at[k] <= now_us; k++)
		v = s->value[k];
	return v;
}

struct damon_region *damon_new_region(unsigned long start, unsigned long end)
{
	struct damon_region *region = malloc(sizeof(*region));

	LAB_CHECK(region != NULL);
	region->ar.start = start;
	region->ar.end = end;
	region->nr_accesses = 0;
	region->nr_accesses_bp = 0;
	INIT_LIST_HEAD(&region->list);

	region->age = 0;
	region->last_nr_accesses = 0;
	region->sampling_addr = 0;
	region->folio_young = false;
	region->folio_head = 0;

	return region;
}

void damon_add_region(struct damon_region *r, struct damon_target *t)
{
	list_add_tail(&r->list, &t->regions_list);
	t->nr_regions++;
}

static void damon_del_region(struct damon_region *r, struct damon_target *t)
{
	list_del(&r->list);
	t->nr_regions--;
}

void damon_destroy_region(struct damon_region *r, struct damon_target *t)
{
	damon_del_region(r, t);
	free(r);
}

void damon_destroy_regions(struct damon_target *t)
{
	struct damon_region *r, *next;

	damon_for_each_region_safe(r, next, t)
		damon_destroy_region(r, t);
}

static bool damon_intersect(struct damon_region *r, struct damon_addr_range *re)
{
	return !(r->ar.end <= re->start || re->end <= r->ar.start);
}

/* Fill holes in regions with new regions. */
static int damon_fill_regions_holes(struct damon_region *first, struct damon_region *last,
				    struct damon_target *t)
{
	struct damon_region *r = first;

	damon_for_each_region_from(r, t) {
		struct damon_region *next, *newr;

		if (r == last)
			break;
		next = damon_next_region(r);
		if (r->ar.end != next->ar.start) {
			newr = damon_new_region(r->ar.end, next->ar.start);
			damon_insert_region(newr, r, next, t);
		}
	}
	return 0;
}

int damon_set_regions(struct damon_target *t, struct damon_addr_range *ranges, unsigned int nr_ranges)
{
	struct damon_region *r, *next;
	unsigned int i;
	unsigned long last_end = 0;
	int err;

	for (i = 0; i < nr_ranges; i++) {
		unsigned long start, end;

		start = ALIGN_DOWN(ranges[i].start, DAMON_MIN_REGION);
		end = ALIGN(ranges[i].end, DAMON_MIN_REGION);
		if (start >= end)
			return -EINVAL;
		if (i > 0 && last_end > start)
			return -EINVAL;
		last_end = end;
	}

	/* Remove regions which are not in the new ranges */
	damon_for_each_region_safe(r, next, t) {
		for (i = 0; i < nr_ranges; i++) {
			if (damon_intersect(r, &ranges[i]))
				break;
		}
		if (i == nr_ranges)
			damon_destroy_region(r, t);
	}

	r = damon_first_region(t);
	/* Add new regions or resize existing regions to fit in the ranges */
	for (i = 0; i < nr_ranges; i++) {
		struct damon_region *first = NULL, *last = NULL, *newr;
		struct damon_addr_range *range;

		range = &ranges[i];
		/* Get the first/last regions intersecting with the range */
		damon_for_each_region_from(r, t) {
			if (damon_intersect(r, range)) {
				if (!first)
					first = r;
				last = r;
			}
			if (r->ar.start >= range->end)
				break;
		}
		if (!first) {
			/* no region intersects with this range */
			newr = damon_new_region(ALIGN_DOWN(range->start, DAMON_MIN_REGION),
						ALIGN(range->end, DAMON_MIN_REGION));
			damon_insert_region(newr, damon_prev_region(r), r, t);
		} else {
			/* resize intersecting regions to fit in this range */
			first->ar.start = ALIGN_DOWN(range->start, DAMON_MIN_REGION);
			last->ar.end = ALIGN(range->end, DAMON_MIN_REGION);

			/* fill possible holes in the range */
			err = damon_fill_regions_holes(first, last, t);
			if (err)
				return err;
		}
	}
	return 0;
}

static unsigned int damon_age_for_new_attrs(unsigned int age, struct damon_attrs *old_attrs,
					    struct damon_attrs *new_attrs)
{
	return age * old_attrs->aggr_interval / new_attrs->aggr_interval;
}

/* convert access ratio in bp (per 10,000) to nr_accesses */
static unsigned int damon_accesses_bp_to_nr_accesses(unsigned int accesses_bp, struct damon_attrs *attrs)
{
	return accesses_bp * damon_max_nr_accesses(attrs) / 10000;
}

/* Convert nr_accesses to access ratio in bp (per 10,000). */
unsigned int damon_nr_accesses_to_accesses_bp(unsigned int nr_accesses, struct damon_attrs *attrs)
{
	return nr_accesses * 10000 / damon_max_nr_accesses(attrs);
}

static unsigned int damon_nr_accesses_for_new_attrs(unsigned int nr_accesses, struct damon_attrs *old_attrs,
						     struct damon_attrs *new_attrs)
{
	return damon_accesses_bp_to_nr_accesses(damon_nr_accesses_to_accesses_bp(nr_accesses, old_attrs),
						new_attrs);
}

void damon_update_monitoring_result(struct damon_region *r, struct damon_attrs *old_attrs,
				    struct damon_attrs *new_attrs)
{
	r->nr_accesses = damon_nr_accesses_for_new_attrs(r->nr_accesses, old_attrs, new_attrs);
	r->nr_accesses_bp = r->nr_accesses * 10000;
	r->age = damon_age_for_new_attrs(r->age, old_attrs, new_attrs);
}

static void damon_update_monitoring_results(struct damon_ctx *ctx, struct damon_attrs *new_attrs)
{
	struct damon_attrs *old_attrs = &ctx->attrs;
	struct damon_region *r;

	/* if any interval is zero, simply forgive conversion */
	if (!old_attrs->sample_interval || !old_attrs->aggr_interval || !new_attrs->sample_interval ||
	    !new_attrs->aggr_interval)
		return;

	damon_for_each_region(r, &ctx->target)
		damon_update_monitoring_result(r, old_attrs, new_attrs);
}

static void damos_set_next_apply_sis(struct damos *s, struct damon_ctx *ctx)
{
	unsigned long sample_interval = ctx->attrs.sample_interval ? ctx->attrs.sample_interval : 1;
	unsigned long apply_interval = s->apply_interval_us ? s->apply_interval_us : ctx->attrs.aggr_interval;

	s->next_apply_sis = ctx->passed_sample_intervals + apply_interval / sample_interval;
}

int damon_set_attrs(struct damon_ctx *ctx, struct damon_attrs *attrs)
{
	unsigned long sample_interval = attrs->sample_interval ? attrs->sample_interval : 1;

	if (attrs->min_nr_regions < 3)
		return -EINVAL;
	if (attrs->min_nr_regions > attrs->max_nr_regions)
		return -EINVAL;
	if (attrs->sample_interval > attrs->aggr_interval)
		return -EINVAL;

	ctx->next_aggregation_sis = ctx->passed_sample_intervals + attrs->aggr_interval / sample_interval;
	ctx->next_ops_update_sis = ctx->passed_sample_intervals + attrs->ops_update_interval / sample_interval;

	damon_update_monitoring_results(ctx, attrs);
	ctx->attrs = *attrs;

	for (int k = 0; k < ctx->nr_schemes; k++)
		damos_set_next_apply_sis(&ctx->schemes[k], ctx);

	return 0;
}

unsigned long damon_region_sz_limit(struct damon_ctx *ctx)
{
	struct damon_region *r;
	unsigned long sz = 0;

	damon_for_each_region(r, &ctx->target)
		sz += damon_sz_region(r);

	if (ctx->attrs.min_nr_regions)
		sz /= ctx->attrs.min_nr_regions;
	if (sz < DAMON_MIN_REGION)
		sz = DAMON_MIN_REGION;

	return sz;
}

void kdamond_reset_aggregated(struct damon_ctx *c)
{
	struct damon_region *r;

	damon_for_each_region(r, &c->target) {
		if (c->lab && c->lab->aggregated)	/* trace_damon_aggregated() */
			c->lab->aggregated(c, r);
		r->last_nr_accesses = r->nr_accesses;
		r->nr_accesses = 0;
	}
}

static bool __damos_valid_target(struct damon_region *r, struct damos *s)
{
	unsigned long sz;
	unsigned int nr_accesses = r->nr_accesses_bp / 10000;

	sz = damon_sz_region(r);
	return s->pattern.min_sz_region <= sz && sz <= s->pattern.max_sz_region &&
	       s->pattern.min_nr_accesses <= nr_accesses && nr_accesses <= s->pattern.max_nr_accesses &&
	       s->pattern.min_age_region <= r->age && r->age <= s->pattern.max_age_region;
}

static bool damos_valid_target(struct damon_ctx *c, struct damon_target *t, struct damon_region *r,
			       struct damos *s)
{
	bool ret = __damos_valid_target(r, s);

	if (!ret || !s->quota.esz)
		return ret;

	return damon_va_scheme_score(c, t, r, s) >= (int)s->quota.min_score;
}

/*
 * damos_skip_charged_region() - Check if the given region or starting part of it is already
 * charged for the DAMOS quota: skip what the previous charge window covered, splitting a region
 * that straddles the cursor (the walk visits its tail next).
 */
static bool damos_skip_charged_region(struct damon_target *t, struct damon_region *r, struct damos *s)
{
	struct damos_quota *quota = &s->quota;
	unsigned long sz_to_skip;
	bool skip = false;

	/* Skip previously charged regions */
	if (quota->charge_target_from) {
		if (t != quota->charge_target_from)
			return true;
		if (quota->charge_addr_from && r->ar.end <= quota->charge_addr_from) {
			skip = true;
			goto out;
		}

		if (quota->charge_addr_from && r->ar.start < quota->charge_addr_from) {
			sz_to_skip = ALIGN_DOWN(quota->charge_addr_from - r->ar.start, DAMON_MIN_REGION);
			if (!sz_to_skip) {
				if (damon_sz_region(r) <= DAMON_MIN_REGION) {
					skip = true;
					goto out;
				}
				sz_to_skip = DAMON_MIN_REGION;
			}
			damon_split_region_at(t, r, sz_to_skip);
			skip = true;
		}
	}
out:
	if (r == damon_last_region(t)) {
		quota->charge_target_from = NULL;
		quota->charge_addr_from = 0;
	}
	return skip;
}

static void damos_update_stat(struct damos *s, unsigned long sz_tried, unsigned long sz_applied)
{
	s->stat.nr_tried++;
	s->stat.sz_tried += sz_tried;
	if (sz_applied)
		s->stat.nr_applied++;
	s->stat.sz_applied += sz_applied;
}

/* An address filter (DAMOS_FILTER_TYPE_ADDR), the only type the lab has. */
bool __damos_filter_out(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
			struct damos_filter *filter)
{
	bool matched = false;
	unsigned long start, end;

	start = ALIGN_DOWN(filter->addr_range.start, DAMON_MIN_REGION);
	end = ALIGN_DOWN(filter->addr_range.end, DAMON_MIN_REGION);

	/* inside the range */
	if (start <= r->ar.start && r->ar.end <= end) {
		matched = true;
		goto out;
	}
	/* outside of the range */
	if (r->ar.end <= start || end <= r->ar.start) {
		matched = false;
		goto out;
	}
	/* start before the range and overlap */
	if (r->ar.start < start) {
		damon_split_region_at(t, r, start - r->ar.start);
		matched = false;
		goto out;
	}
	/* start inside the range */
	damon_split_region_at(t, r, end - r->ar.start);
	matched = true;
out:
	return matched == filter->matching;
}

static bool damos_filter_out(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
			     struct damos *s)
{
	for (int k = 0; k < s->nr_filters; k++) {
		if (__damos_filter_out(ctx, t, r, &s->filters[k]))
			return true;
	}
	return false;
}

static void damos_apply_scheme(struct damon_ctx *c, struct damon_target *t, struct damon_region *r,
			       struct damos *s)
{
	struct damos_quota *quota = &s->quota;
	unsigned long sz = damon_sz_region(r);
	unsigned long sz_applied = 0;

	if (quota->esz && quota->charged_sz + sz > quota->esz) {
		sz = ALIGN_DOWN(quota->esz - quota->charged_sz, DAMON_MIN_REGION);
		if (!sz)
			goto update_stat;
		damon_split_region_at(t, r, sz);
	}
	if (damos_filter_out(c, t, r, s))
		return;
	sz = damon_sz_region(r);
	sz_applied = damon_va_apply_scheme(c, t, r, s);
	if (c->lab && c->lab->applied)
		c->lab->applied(c, s - c->schemes, r, sz_applied);
	/* lab: the time the action took is its bytes times the scenario's ns_per_byte */
	quota->total_charged_ns += damon_sz_region(r) * c->ns_per_byte[s->action];
	quota->charged_sz += sz;
	if (quota->esz && quota->charged_sz >= quota->esz) {
		quota->charge_target_from = t;
		quota->charge_addr_from = r->ar.end;
	}
	if (s->action != DAMOS_STAT)
		r->age = 0;

update_stat:
	damos_update_stat(s, sz, sz_applied);
}

static void damon_do_apply_schemes(struct damon_ctx *c, struct damon_target *t, struct damon_region *r)
{
	for (int k = 0; k < c->nr_schemes; k++) {
		struct damos *s = &c->schemes[k];
		struct damos_quota *quota = &s->quota;

		if (c->passed_sample_intervals < s->next_apply_sis)
			continue;

		if (!s->wmarks.activated)
			continue;

		/* Check the quota */
		if (quota->esz && quota->charged_sz >= quota->esz)
			continue;

		if (damos_skip_charged_region(t, r, s))
			continue;

		if (!damos_valid_target(c, t, r, s))
			continue;

		damos_apply_scheme(c, t, r, s);
	}
}

/* damon_feed_loop_next_input() - get next input to achieve a target score (10,000). */
unsigned long damon_feed_loop_next_input(unsigned long last_input, unsigned long score)
{
	const unsigned long goal = 10000;
	/* Set minimum input as 10000 to avoid compensation be zero */
	const unsigned long min_input = 10000;
	unsigned long score_goal_diff, compensation;
	bool over_achieving = score > goal;

	if (score == goal)
		return last_input;
	if (score >= goal * 2)
		return min_input;

	if (over_achieving)
		score_goal_diff = score - goal;
	else
		score_goal_diff = goal - score;

	if (last_input < ULONG_MAX / score_goal_diff)
		compensation = last_input * score_goal_diff / goal;
	else
		compensation = last_input / goal * score_goal_diff;

	if (over_achieving)
		return max(last_input - compensation, min_input);
	if (last_input < ULONG_MAX - compensation)
		return last_input + compensation;
	return ULONG_MAX;
}

/* DAMOS_QUOTA_USER_INPUT: the user has written current_value; here, the scenario's series did. */
static void damos_set_quota_goal_current_value(struct damon_ctx *c, struct damos_quota_goal *goal)
{
	goal->current_value = lab_series_at(&goal->user_input, c->now_us, 0);
}

/* Return the highest score since it makes schemes least aggressive */
static unsigned long damos_quota_score(struct damon_ctx *c, struct damos_quota *quota)
{
	unsigned long highest_score = 0;

	for (int k = 0; k < quota->nr_goals; k++) {
		struct damos_quota_goal *goal = &quota->goals[k];

		damos_set_quota_goal_current_value(c, goal);
		highest_score = max(highest_score, goal->current_value * 10000 / goal->target_value);
	}

	return highest_score;
}

/* Called only if quota->ms, or quota->sz are set, or quota->goals is not empty */
static void damos_set_effective_quota(struct damon_ctx *c, struct damos_quota *quota)
{
	unsigned long throughput;
	unsigned long esz = 0;

	if (!quota->ms && !quota->nr_goals) {
		quota->esz = quota->sz;
		return;
	}

	if (quota->nr_goals) {
		unsigned long score = damos_quota_score(c, quota);

		quota->esz_bp = damon_feed_loop_next_input(max(quota->esz_bp, 10000UL), score);
		esz = quota->esz_bp / 10000;
	}

	if (quota->ms) {
		if (quota->total_charged_ns)
			throughput = quota->total_charged_sz * 1000000 / quota->total_charged_ns;
		else
			throughput = PAGE_SIZE * 1024;
		if (quota->nr_goals)
			esz = min(throughput * quota->ms, esz);
		else
			esz = throughput * quota->ms;
		esz = max(DAMON_MIN_REGION, esz);
	}

	if (quota->sz && quota->sz < esz)
		esz = quota->sz;

	quota->esz = esz;
}

static void damos_adjust_quota(struct damon_ctx *c, struct damos *s)
{
	struct damos_quota *quota = &s->quota;
	struct damon_target *t = &c->target;
	struct damon_region *r;
	unsigned long cumulated_sz, jiffies = jiffies_of(c);
	unsigned int score, max_score = 0;

	if (!quota->esz && !quota->ms && !quota->sz && !quota->nr_goals)
		return;

	/* First charge window */
	if (!quota->total_charged_sz && !quota->charged_from)
		quota->charged_from = jiffies;

	/* New charge window starts */
	if (!time_in_range_open(jiffies, quota->charged_from,
				quota->charged_from + msecs_to_jiffies(quota->reset_interval))) {
		if (quota->esz && quota->charged_sz >= quota->esz)
			s->stat.qt_exceeds++;
		quota->total_charged_sz += quota->charged_sz;
		quota->charged_from = jiffies;
		quota->charged_sz = 0;
		damos_set_effective_quota(c, quota);
	}

	/* Fill up the score histogram */
	memset(c->regions_score_histogram, 0, sizeof(*c->regions_score_histogram) * (DAMOS_MAX_SCORE + 1));
	damon_for_each_region(r, t) {
		if (!__damos_valid_target(r, s))
			continue;
		score = damon_va_scheme_score(c, t, r, s);
		c->regions_score_histogram[score] += damon_sz_region(r);
		if (score > max_score)
			max_score = score;
	}

	/* Set the min score limit */
	for (cumulated_sz = 0, score = max_score; ; score--) {
		cumulated_sz += c->regions_score_histogram[score];
		if (cumulated_sz >= quota->esz || !score)
			break;
	}
	quota->min_score = score;
}

static void kdamond_apply_schemes(struct damon_ctx *c)
{
	struct damon_target *t = &c->target;
	struct damon_region *r;
	unsigned long sample_interval = c->attrs.sample_interval ? c->attrs.sample_interval : 1;
	bool has_schemes_to_apply = false;

	for (int k = 0; k < c->nr_schemes; k++) {
		struct damos *s = &c->schemes[k];

		if (c->passed_sample_intervals < s->next_apply_sis)
			continue;

		if (!s->wmarks.activated)
			continue;

		has_schemes_to_apply = true;

		damos_adjust_quota(c, s);
	}

	if (!has_schemes_to_apply)
		return;

	/* lab: the simulator's step; an mmap call before it changes nothing damos_adjust_quota() read */
	lab_step(c, "kdamond_apply_schemes");
	damon_for_each_region(r, t)
		damon_do_apply_schemes(c, t, r);

	for (int k = 0; k < c->nr_schemes; k++) {
		struct damos *s = &c->schemes[k];

		if (c->passed_sample_intervals < s->next_apply_sis)
			continue;
		s->next_apply_sis = c->passed_sample_intervals +
			(s->apply_interval_us ? s->apply_interval_us : c->attrs.aggr_interval) / sample_interval;
	}
}

/* Merge two adjacent regions into one region */
void damon_merge_two_regions(struct damon_target *t, struct damon_region *l, struct damon_region *r)
{
	unsigned long sz_l = damon_sz_region(l), sz_r = damon_sz_region(r);

	l->nr_accesses = (l->nr_accesses * sz_l + r->nr_accesses * sz_r) / (sz_l + sz_r);
	l->nr_accesses_bp = l->nr_accesses * 10000;
	l->age = (l->age * sz_l + r->age * sz_r) / (sz_l + sz_r);
	l->ar.end = r->ar.end;
	damon_destroy_region(r, t);
}

/*
 * Merge adjacent regions having similar access frequencies
 *
 * t		target affected by this merge operation
 * thres	'->nr_accesses' diff threshold for the merge
 * sz_limit	size upper limit of each region
 */
void damon_merge_regions_of(struct damon_target *t, unsigned int thres, unsigned long sz_limit, bool count_age)
{
	struct damon_region *r, *prev = NULL, *next;

	damon_for_each_region_safe(r, next, t) {
		if (count_age) {
			if (abs_diff_int(r->nr_accesses, r->last_nr_accesses) > thres)
				r->age = 0;
			else
				r->age++;
		}

		if (prev && prev->ar.end == r->ar.start &&
#ifdef LAB_MERGE_THRES_LT
		    abs_diff_int(prev->nr_accesses, r->nr_accesses) < thres &&	/* BUG: the mutated build */
#else
		    abs_diff_int(prev->nr_accesses, r->nr_accesses) <= thres &&
#endif
		    damon_sz_region(prev) + damon_sz_region(r) <= sz_limit)
			damon_merge_two_regions(t, prev, r);
		else
			prev = r;
	}
}

/*
 * Merge adjacent regions having similar access frequencies, repeating with a doubled threshold
 * (up to its maximum) until max_nr_regions is met; only the first pass ages the regions.
 */
void kdamond_merge_regions(struct damon_ctx *c, unsigned int threshold, unsigned long sz_limit)
{
	unsigned int nr_regions;
	unsigned int max_thres;
	bool count_age = true;

	max_thres = c->attrs.aggr_interval / (c->attrs.sample_interval ? c->attrs.sample_interval : 1);
	while (true) {
		damon_merge_regions_of(&c->target, threshold, sz_limit, count_age);
		nr_regions = damon_nr_regions(&c->target);
		count_age = false;
		if (nr_regions <= c->attrs.max_nr_regions || max_thres <= threshold)
			break;
		if (threshold < max_thres / 2)
			threshold = max(1U, threshold * 2);
		else
			threshold = max_thres;
	}
}

/*
 * Split a region in two
 *
 * r		the region to be split
 * sz_r		size of the first sub-region that will be made
 */
void damon_split_region_at(struct damon_target *t, struct damon_region *r, unsigned long sz_r)
{
	struct damon_region *new;

	new = damon_new_region(r->ar.start + sz_r, r->ar.end);

	r->ar.end = new->ar.start;

	new->age = r->age;
	new->last_nr_accesses = r->last_nr_accesses;
	new->nr_accesses_bp = r->nr_accesses_bp;
	new->nr_accesses = r->nr_accesses;

	damon_insert_region(new, r, damon_next_region(r), t);
}

/* Split every region in the given target into 'nr_subs' regions */
void damon_split_regions_of(struct damon_target *t, int nr_subs)
{
	struct damon_region *r, *next;
	unsigned long sz_region, sz_sub = 0;
	int i;

	damon_for_each_region_safe(r, next, t) {
		sz_region = damon_sz_region(r);

		for (i = 0; i < nr_subs - 1 && sz_region > 2 * DAMON_MIN_REGION; i++) {
			/*
			 * Randomly select size of left sub-region to be at
			 * least 10 percent and at most 90% of original region
			 */
			sz_sub = ALIGN_DOWN(damon_rand(1, 10) * sz_region / 10, DAMON_MIN_REGION);
			/* Do not allow blank region */
			if (sz_sub == 0 || sz_sub >= sz_region)
				continue;

			damon_split_region_at(t, r, sz_sub);
			sz_region = sz_sub;
		}
	}
}

/*
 * Split every target region into randomly-sized small regions if the current total number of
 * regions is equal or smaller than half of max_nr_regions.
 */
void kdamond_split_regions(struct damon_ctx *ctx)
{
	unsigned int nr_regions = 0;
	static unsigned int last_nr_regions;
	int nr_subregions = 2;

	nr_regions += damon_nr_regions(&ctx->target);

	if (nr_regions > ctx->attrs.max_nr_regions / 2)
		return;

	/* Maybe the middle of the region has different access frequency */
	if (last_nr_regions == nr_regions && nr_regions < ctx->attrs.max_nr_regions / 3)
		nr_subregions = 3;

	damon_split_regions_of(&ctx->target, nr_subregions);

	last_nr_regions = nr_regions;
}

/* kthread_should_stop(): the run ends after ctx->stop_after aggregation intervals */
static bool kdamond_need_stop(struct damon_ctx *ctx)
{
	return ctx->aggregations >= ctx->stop_after;
}

/* DAMOS_WMARK_FREE_MEM_RATE: free pages per thousand, from the scenario's series */
static int damos_get_wmark_metric_value(struct damon_ctx *c, enum damos_wmark_metric metric,
					unsigned long *metric_value)
{
	if (metric == DAMOS_WMARK_FREE_MEM_RATE && c->free_mem_rate.nr) {
		*metric_value = lab_series_at(&c->free_mem_rate, c->now_us, c->free_mem_rate.value[0]);
		return 0;
	}
	return -EINVAL;
}

/* Returns zero if the scheme is active.  Else, returns time to wait for next watermark check. */
static unsigned long damos_wmark_wait_us(struct damon_ctx *c, struct damos *scheme)
{
	unsigned long metric;

	if (damos_get_wmark_metric_value(c, scheme->wmarks.metric, &metric))
		return 0;

	/* higher than high watermark or lower than low watermark */
	if (metric > scheme->wmarks.high || scheme->wmarks.low > metric) {
		scheme->wmarks.activated = false;
		return scheme->wmarks.interval;
	}

	/* inactive and higher than middle watermark */
	if ((scheme->wmarks.high >= metric && metric >= scheme->wmarks.mid) && !scheme->wmarks.activated)
		return scheme->wmarks.interval;

	scheme->wmarks.activated = true;
	return 0;
}

/* lab: the clock advances; nothing else happens while kdamond sleeps */
static void kdamond_usleep(struct damon_ctx *ctx, unsigned long usecs)
{
	ctx->now_us += usecs;
}

/* Returns negative error code if it's not activated but should return */
static int kdamond_wait_activation(struct damon_ctx *ctx)
{
	unsigned long wait_time;
	unsigned long min_wait_time = 0;
	bool init_wait_time = false;

	while (!kdamond_need_stop(ctx)) {
		lab_step(ctx, "kdamond_wait_activation");
		for (int k = 0; k < ctx->nr_schemes; k++) {
			wait_time = damos_wmark_wait_us(ctx, &ctx->schemes[k]);
			if (!init_wait_time || wait_time < min_wait_time) {
				init_wait_time = true;
				min_wait_time = wait_time;
			}
		}
		if (!min_wait_time)
			return 0;

		lab_step(ctx, "kdamond_usleep");
		kdamond_usleep(ctx, min_wait_time);
	}
	return -16;	/* -EBUSY */
}

static void kdamond_init_intervals_sis(struct damon_ctx *ctx)
{
	unsigned long sample_interval = ctx->attrs.sample_interval ? ctx->attrs.sample_interval : 1;
	unsigned long apply_interval;

	ctx->passed_sample_intervals = 0;
	ctx->next_aggregation_sis = ctx->attrs.aggr_interval / sample_interval;
	ctx->next_ops_update_sis = ctx->attrs.ops_update_interval / sample_interval;

	for (int k = 0; k < ctx->nr_schemes; k++) {
		struct damos *scheme = &ctx->schemes[k];

		apply_interval = scheme->apply_interval_us ? scheme->apply_interval_us : ctx->attrs.aggr_interval;
		scheme->next_apply_sis = apply_interval / sample_interval;
	}
}

/* The monitoring daemon, with the vaddr operations set */
void kdamond_fn(struct damon_ctx *ctx)
{
	unsigned int max_nr_accesses = 0;
	unsigned long sz_limit = 0;

	lab_step(ctx, "damon_va_init");
	kdamond_init_intervals_sis(ctx);

	damon_va_init(ctx);

	sz_limit = damon_region_sz_limit(ctx);

	while (!kdamond_need_stop(ctx)) {
		unsigned long next_aggregation_sis = ctx->next_aggregation_sis;
		unsigned long next_ops_update_sis = ctx->next_ops_update_sis;
		unsigned long sample_interval = ctx->attrs.sample_interval;

		if (kdamond_wait_activation(ctx))
			break;

		lab_step(ctx, "damon_va_prepare_access_checks");
		damon_va_prepare_access_checks(ctx);

		lab_step(ctx, "kdamond_usleep");
		kdamond_usleep(ctx, sample_interval);
		lab_process_runs(ctx);
		ctx->passed_sample_intervals++;

		lab_step(ctx, "damon_va_check_accesses");
		max_nr_accesses = damon_va_check_accesses(ctx);

		if (ctx->passed_sample_intervals >= next_aggregation_sis) {
			lab_step(ctx, "kdamond_merge_regions");
			kdamond_merge_regions(ctx, max_nr_accesses / 10, sz_limit);
		}

		/* do kdamond_apply_schemes() after kdamond_merge_regions() if possible, to reduce overhead */
		if (ctx->nr_schemes)
			kdamond_apply_schemes(ctx);

		sample_interval = ctx->attrs.sample_interval ? ctx->attrs.sample_interval : 1;
		if (ctx->passed_sample_intervals >= next_aggregation_sis) {
			ctx->next_aggregation_sis = next_aggregation_sis + ctx->attrs.aggr_interval / sample_interval;

			lab_step(ctx, "kdamond_reset_aggregated");
			kdamond_reset_aggregated(ctx);
			ctx->aggregations++;
			lab_step(ctx, "kdamond_split_regions");
			kdamond_split_regions(ctx);
		}

		if (ctx->passed_sample_intervals >= next_ops_update_sis) {
			ctx->next_ops_update_sis = next_ops_update_sis + ctx->attrs.ops_update_interval / sample_interval;
			lab_step(ctx, "damon_va_update");
			damon_va_update(ctx);
			sz_limit = damon_region_sz_limit(ctx);
		}
	}
}

/*
 * damon_moving_sum() - Calculate an inaccurate moving sum: drop nomvsum / len_window, add the new
 * value, keeping no past values.
 */
unsigned int damon_moving_sum(unsigned int mvsum, unsigned int nomvsum, unsigned int len_window,
			      unsigned int new_value)
{
	return mvsum - nomvsum / len_window + new_value;
}

/* damon_update_region_access_rate() - Update the access rate of a region. */
void damon_update_region_access_rate(struct damon_region *r, bool accessed, struct damon_attrs *attrs)
{
	unsigned int len_window = 1;

	/*
	 * sample_interval can be zero, but cannot be larger than
	 * aggr_interval, owing to validation of damon_set_attrs().
	 */
	if (attrs->sample_interval)
		len_window = damon_max_nr_accesses(attrs);
	r->nr_accesses_bp = damon_moving_sum(r->nr_accesses_bp, r->last_nr_accesses * 10000, len_window,
					     accessed ? 10000 : 0);

	if (accessed)
		r->nr_accesses++;
}
