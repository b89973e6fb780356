// SPDX-License-Identifier: GPL-2.0
/*
 * mm/damon/ops-common.c of Linux 6.12.117: the scores DAMOS prioritises regions by.
 */
#include "damon.h"

/* include/linux/math.h */
#define mult_frac(x, n, d)						\
({									\
	typeof(x) x_ = (x);						\
	typeof(n) n_ = (n);						\
	typeof(d) d_ = (d);						\
	typeof(x_) q = x_ / d_;						\
	typeof(x_) r = x_ % d_;						\
	q * n_ + r * n_ / d_;						\
})

int damon_hot_score(struct damon_ctx *c, struct damon_region *r, struct damos *s)
{
	int freq_subscore;
	unsigned int age_in_sec;
	int age_in_log, age_subscore;
	unsigned int freq_weight = s->quota.weight_nr_accesses;
	unsigned int age_weight = s->quota.weight_age;
	int hotness;

	freq_subscore = mult_frac(r->nr_accesses_bp / 10000, DAMON_MAX_SUBSCORE, damon_max_nr_accesses(&c->attrs));

	age_in_sec = (unsigned long)r->age * c->attrs.aggr_interval / 1000000;
	for (age_in_log = 0; age_in_log < DAMON_MAX_AGE_IN_LOG && age_in_sec; age_in_log++, age_in_sec >>= 1)
		;

	/* If frequency is 0, higher age means it's colder */
	if (freq_subscore == 0)
		age_in_log *= -1;

	/*
	 * Now age_in_log is in [-DAMON_MAX_AGE_IN_LOG, DAMON_MAX_AGE_IN_LOG].
	 * Scale it to be in [0, 100] and set it as age subscore.
	 */
	age_in_log += DAMON_MAX_AGE_IN_LOG;
	age_subscore = age_in_log * DAMON_MAX_SUBSCORE / DAMON_MAX_AGE_IN_LOG / 2;

	hotness = (freq_weight * freq_subscore + age_weight * age_subscore);
	if (freq_weight + age_weight)
		hotness /= freq_weight + age_weight;
	/*
	 * Transform it to fit in [0, DAMOS_MAX_SCORE]
	 */
	hotness = hotness * DAMOS_MAX_SCORE / DAMON_MAX_SUBSCORE;
	hotness = max(min(hotness, DAMOS_MAX_SCORE), 0);

	return hotness;
}

int damon_cold_score(struct damon_ctx *c, struct damon_region *r, struct damos *s)
{
	int hotness = damon_hot_score(c, r, s);

	/* Return coldness of the region */
	return DAMOS_MAX_SCORE - hotness;
}
