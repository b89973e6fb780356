/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DAMON of Linux 6.12.117 in userspace: the structures of include/linux/damon.h that the port
 * uses, for one context monitoring one process with the vaddr operations set.
 *
 * What stands in for the kernel: the process's mappings are an array of struct lab_vma (the maple
 * tree is not needed to find three regions or a folio); a folio's accessed bit is kept only for the
 * folios DAMON sampled, as the field folio_young of the region that sampled it (see vaddr.c);
 * get_random_u32() reads kstep's SplitMix64 (common/splitmix64.h) and counts its draws; time is
 * the context's clock in microseconds, advanced by kdamond_usleep().
 */
#ifndef LAB_DAMON_H
#define LAB_DAMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "splitmix64.h"

#define PAGE_SIZE		4096UL
#define HPAGE_PMD_SIZE		(2UL << 20)
#define EINVAL			22

/* core.c redefines it to 1 when the KUnit tests are built */
#ifdef CONFIG_DAMON_KUNIT_TEST
#define DAMON_MIN_REGION	1UL
#else
#define DAMON_MIN_REGION	PAGE_SIZE
#endif
#define DAMOS_MAX_SCORE		99
#define DAMON_MAX_SUBSCORE	100
#define DAMON_MAX_AGE_IN_LOG	32

#define ALIGN_DOWN(x, a)	((x) / (a) * (a))
#define ALIGN(x, a)		(((x) + (a) - 1) / (a) * (a))
#define min(a, b)		((a) < (b) ? (a) : (b))
#define max(a, b)		((a) > (b) ? (a) : (b))

/* ---- include/linux/list.h, the part DAMON uses ---- */

struct list_head {
	struct list_head *next, *prev;
};

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l->prev = l;
}

static inline void __list_add(struct list_head *n, struct list_head *prev, struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	__list_add(n, head->prev, head);
}

static inline void list_del(struct list_head *e)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
}

#define container_of(p, type, member)	((type *)((char *)(p) - offsetof(type, member)))
#define list_entry(p, type, member)	container_of(p, type, member)

/* ---- include/linux/damon.h ---- */

struct damon_addr_range {
	unsigned long start;
	unsigned long end;
};

struct damon_region {
	struct damon_addr_range ar;
	unsigned long sampling_addr;
	unsigned int nr_accesses;
	unsigned int nr_accesses_bp;
	struct list_head list;
	unsigned int age;
	unsigned int last_nr_accesses;
	/* lab: the accessed bit of the folio at sampling_addr, and that folio's first address */
	bool folio_young;
	unsigned long folio_head;
};

struct damon_target {
	unsigned int nr_regions;
	struct list_head regions_list;
};

struct damon_attrs {
	unsigned long sample_interval;
	unsigned long aggr_interval;
	unsigned long ops_update_interval;
	unsigned long min_nr_regions;
	unsigned long max_nr_regions;
};

enum damos_action {
	DAMOS_WILLNEED, DAMOS_COLD, DAMOS_PAGEOUT, DAMOS_HUGEPAGE, DAMOS_NOHUGEPAGE, DAMOS_LRU_PRIO,
	DAMOS_LRU_DEPRIO, DAMOS_MIGRATE_HOT, DAMOS_MIGRATE_COLD, DAMOS_STAT, NR_DAMOS_ACTIONS,
};
extern const char *const damos_action_names[NR_DAMOS_ACTIONS];

#define LAB_MAX_SERIES	64

/* a (from_us, value) time series: what a user writes into sysfs, or the free memory over time */
struct lab_series {
	int nr;
	unsigned long at[LAB_MAX_SERIES];
	unsigned long value[LAB_MAX_SERIES];
};

struct damos_quota_goal {
	unsigned long current_value;
	unsigned long target_value;
	struct lab_series user_input;	/* lab: current_value over time (DAMOS_QUOTA_USER_INPUT) */
};

#define LAB_MAX_GOALS	4
#define LAB_MAX_FILTERS	4

struct damos_quota {
	unsigned long reset_interval;
	unsigned long ms;
	unsigned long sz;
	int nr_goals;
	struct damos_quota_goal goals[LAB_MAX_GOALS];
	unsigned long esz;
	unsigned int weight_sz;
	unsigned int weight_nr_accesses;
	unsigned int weight_age;
	unsigned long total_charged_sz;
	unsigned long total_charged_ns;
	unsigned long charged_sz;
	unsigned long charged_from;
	struct damon_target *charge_target_from;
	unsigned long charge_addr_from;
	unsigned long esz_bp;
	unsigned int min_score;
};

enum damos_wmark_metric { DAMOS_WMARK_NONE, DAMOS_WMARK_FREE_MEM_RATE };

struct damos_watermarks {
	enum damos_wmark_metric metric;
	unsigned long interval;
	unsigned long high;
	unsigned long mid;
	unsigned long low;
	bool activated;
};

struct damos_filter {
	struct damon_addr_range addr_range;	/* DAMOS_FILTER_TYPE_ADDR, the only type here */
	bool matching;
};

struct damos_access_pattern {
	unsigned long min_sz_region;
	unsigned long max_sz_region;
	unsigned int min_nr_accesses;
	unsigned int max_nr_accesses;
	unsigned int min_age_region;
	unsigned int max_age_region;
};

struct damos_stat {
	unsigned long nr_tried;
	unsigned long sz_tried;
	unsigned long nr_applied;
	unsigned long sz_applied;
	unsigned long qt_exceeds;
};

struct damos {
	struct damos_access_pattern pattern;
	enum damos_action action;
	unsigned long apply_interval_us;
	unsigned long next_apply_sis;
	struct damos_quota quota;
	struct damos_watermarks wmarks;
	int nr_filters;
	struct damos_filter filters[LAB_MAX_FILTERS];
	struct damos_stat stat;
};

/* ---- the lab's process: its mappings and its accesses ---- */

struct lab_vma {
	unsigned long start, end;
	bool thp;	/* every 2 MiB-aligned block inside is one PMD-mapped folio */
};

#define LAB_MAX_VMAS	128

/* workload.c: a block of pages the process touches (simulator/kstep/models/damon/workload.py) */
struct lab_access {
	unsigned long start, end;
	unsigned long rate_permil;
	unsigned long width, speed;
	unsigned long from_sample, until_sample;
};

#define LAB_MAX_ACCESSES	16
#define LAB_MAX_SCHEMES		4

struct damon_ctx {
	struct damon_attrs attrs;
	unsigned long passed_sample_intervals;
	unsigned long next_aggregation_sis;
	unsigned long next_ops_update_sis;
	struct damon_target target;		/* the one target */
	int nr_schemes;
	struct damos schemes[LAB_MAX_SCHEMES];
	unsigned long regions_score_histogram[DAMOS_MAX_SCORE + 1];
	/* lab */
	unsigned long now_us;			/* the clock kdamond_usleep() advances */
	int nr_vmas;
	struct lab_vma vmas[LAB_MAX_VMAS];	/* sorted, not overlapping */
	int nr_accesses;
	struct lab_access accesses[LAB_MAX_ACCESSES];
	uint64_t seed;				/* the workload's */
	struct lab_series free_mem_rate;	/* per-mille of RAM free over time; nr 0: not given */
	unsigned long ns_per_byte[NR_DAMOS_ACTIONS];	/* the stand-in for the time an action takes */
	unsigned long aggregations;		/* aggregation intervals completed */
	unsigned long stop_after;		/* kthread_should_stop() once that many are complete */
	struct lab_callbacks *lab;		/* the harness's hooks; NULL: none */
};

/*
 * The harness's hooks, in the places a tracepoint or kstep's step boundary is: step() before each
 * of kdamond's steps as the simulator counts them (the mmap actor moves only there), aggregated()
 * where trace_damon_aggregated() fires, applied() after the operations set applied an action.
 */
struct lab_callbacks {
	void (*step)(struct damon_ctx *c, const char *label);
	void (*aggregated)(struct damon_ctx *c, struct damon_region *r);
	void (*applied)(struct damon_ctx *c, int sidx, struct damon_region *r, unsigned long sz_applied);
};

#define damon_for_each_region(r, t) \
	for (r = list_entry((t)->regions_list.next, struct damon_region, list); \
	     &r->list != &(t)->regions_list; r = list_entry(r->list.next, struct damon_region, list))

#define damon_for_each_region_from(r, t) \
	for (; &r->list != &(t)->regions_list; r = list_entry(r->list.next, struct damon_region, list))

#define damon_for_each_region_safe(r, next, t) \
	for (r = list_entry((t)->regions_list.next, struct damon_region, list), \
	     next = list_entry(r->list.next, struct damon_region, list); \
	     &r->list != &(t)->regions_list; \
	     r = next, next = list_entry(r->list.next, struct damon_region, list))

#define damon_next_region(r)	list_entry((r)->list.next, struct damon_region, list)
#define damon_prev_region(r)	list_entry((r)->list.prev, struct damon_region, list)
#define damon_first_region(t)	list_entry((t)->regions_list.next, struct damon_region, list)
#define damon_last_region(t)	list_entry((t)->regions_list.prev, struct damon_region, list)

static inline unsigned long damon_sz_region(struct damon_region *r)
{
	return r->ar.end - r->ar.start;
}

static inline void damon_insert_region(struct damon_region *r, struct damon_region *prev,
				       struct damon_region *next, struct damon_target *t)
{
	__list_add(&r->list, &prev->list, &next->list);
	t->nr_regions++;
}

static inline unsigned int damon_nr_regions(struct damon_target *t)
{
	return t->nr_regions;
}

static inline unsigned int damon_max_nr_accesses(const struct damon_attrs *attrs)
{
	unsigned long sample_interval = attrs->sample_interval ? : 1;
	unsigned long max_nr_accesses = min(attrs->aggr_interval / sample_interval, (unsigned long)UINT_MAX);

	return max_nr_accesses ? : 1;
}

/* ---- drivers/char/random.c over SplitMix64: the upper half of each output ---- */

extern struct splitmix64 lab_random;
extern unsigned long lab_random_draws;	/* get_random_u32() calls, rejections included */
extern unsigned long lab_random_unlikely;	/* __get_random_u32_below() calls that took its unlikely() branch */

static inline uint32_t get_random_u32(void)
{
	lab_random_draws++;
	return splitmix64_next(&lab_random) >> 32;
}

static inline uint32_t __get_random_u32_below(uint32_t ceil)
{
	uint32_t rand = get_random_u32();
	uint64_t mult;

	if (!ceil)
		return rand;
	mult = (uint64_t)ceil * rand;
	if ((uint32_t)mult < ceil) {
		uint32_t bound = -ceil % ceil;

		lab_random_unlikely++;
		while ((uint32_t)mult < bound)
			mult = (uint64_t)ceil * get_random_u32();
	}
	return mult >> 32;
}

/* include/linux/damon.h: the span is passed as a u32 */
static inline unsigned long damon_rand(unsigned long l, unsigned long r)
{
	return l + __get_random_u32_below(r - l);
}

/* ---- core.c ---- */
struct damon_region *damon_new_region(unsigned long start, unsigned long end);
void damon_add_region(struct damon_region *r, struct damon_target *t);
void damon_destroy_region(struct damon_region *r, struct damon_target *t);
void damon_destroy_regions(struct damon_target *t);
int damon_set_regions(struct damon_target *t, struct damon_addr_range *ranges, unsigned int nr_ranges);
int damon_set_attrs(struct damon_ctx *ctx, struct damon_attrs *attrs);
unsigned int damon_nr_accesses_to_accesses_bp(unsigned int nr_accesses, struct damon_attrs *attrs);
void damon_update_monitoring_result(struct damon_region *r, struct damon_attrs *old_attrs,
				    struct damon_attrs *new_attrs);
unsigned long damon_region_sz_limit(struct damon_ctx *ctx);
unsigned int damon_moving_sum(unsigned int mvsum, unsigned int nomvsum, unsigned int len_window,
			      unsigned int new_value);
void damon_update_region_access_rate(struct damon_region *r, bool accessed, struct damon_attrs *attrs);
void kdamond_reset_aggregated(struct damon_ctx *c);
void damon_split_region_at(struct damon_target *t, struct damon_region *r, unsigned long sz_r);
void damon_merge_two_regions(struct damon_target *t, struct damon_region *l, struct damon_region *r);
void damon_merge_regions_of(struct damon_target *t, unsigned int thres, unsigned long sz_limit, bool count_age);
void kdamond_merge_regions(struct damon_ctx *c, unsigned int threshold, unsigned long sz_limit);
void damon_split_regions_of(struct damon_target *t, int nr_subs);
void kdamond_split_regions(struct damon_ctx *ctx);
bool __damos_filter_out(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
			struct damos_filter *filter);
unsigned long damon_feed_loop_next_input(unsigned long last_input, unsigned long score);
void kdamond_fn(struct damon_ctx *ctx);

/* ---- ops-common.c ---- */
int damon_hot_score(struct damon_ctx *c, struct damon_region *r, struct damos *s);
int damon_cold_score(struct damon_ctx *c, struct damon_region *r, struct damos *s);

/* ---- vaddr.c ---- */
int damon_va_evenly_split_region(struct damon_target *t, struct damon_region *r, unsigned int nr_pieces);
int __damon_va_three_regions(struct damon_ctx *ctx, struct damon_addr_range regions[3]);
void damon_va_init(struct damon_ctx *ctx);
void damon_va_update(struct damon_ctx *ctx);
void damon_va_prepare_access_checks(struct damon_ctx *ctx);
void lab_process_runs(struct damon_ctx *ctx);
unsigned int damon_va_check_accesses(struct damon_ctx *ctx);
unsigned long damon_va_apply_scheme(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
				    struct damos *scheme);
int damon_va_scheme_score(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
			  struct damos *scheme);

/* ---- workload.c ---- */
bool lab_accessed(const struct damon_ctx *ctx, unsigned long page, unsigned long sample);
bool lab_folio_accessed(const struct damon_ctx *ctx, unsigned long head, unsigned long size,
			unsigned long sample);

#endif /* LAB_DAMON_H */
