// SPDX-License-Identifier: GPL-2.0
/*
 * mm/damon/vaddr.c of Linux 6.12.117, in userspace: the virtual-address operations set for the
 * context's one process.
 *
 * The process's mappings are ctx->vmas (sorted, not overlapping); the page tables are not ported,
 * only what DAMON reads from them: whether an address is mapped, the folio there (4 KiB, or a
 * PMD-mapped 2 MiB THP inside a thp mapping) and that folio's accessed bit.  The accessed bit is
 * kept only for the folio a region sampled, in the region (folio_young, folio_head):
 * damon_va_mkold() clears it, the process's accesses during kdamond_usleep() set it
 * (lab_process_runs), damon_va_young() reads it back if the same folio is still mapped there.
 * Only the sampled folios are ever read, so nothing is stored per page.
 */
#include "damon.h"

/*
 * Size-evenly split a region into 'nr_pieces' small regions
 *
 * Returns 0 on success, or negative error code otherwise.
 */
int damon_va_evenly_split_region(struct damon_target *t, struct damon_region *r, unsigned int nr_pieces)
{
	unsigned long sz_orig, sz_piece, orig_end;
	struct damon_region *n = NULL, *next;
	unsigned long start;
	unsigned int i;

	if (!r || !nr_pieces)
		return -EINVAL;

	orig_end = r->ar.end;
	sz_orig = damon_sz_region(r);
	sz_piece = ALIGN_DOWN(sz_orig / nr_pieces, DAMON_MIN_REGION);

	if (!sz_piece)
		return -EINVAL;

	r->ar.end = r->ar.start + sz_piece;
	next = damon_next_region(r);
	for (start = r->ar.end, i = 1; i < nr_pieces; start += sz_piece, i++) {
		n = damon_new_region(start, start + sz_piece);
		damon_insert_region(n, r, next, t);
		r = n;
	}
	/* complement last region for possible rounding error */
	if (n)
		n->ar.end = orig_end;

	return 0;
}

static unsigned long sz_range(struct damon_addr_range *r)
{
	return r->end - r->start;
}

/*
 * Find three regions separated by two biggest unmapped regions
 *
 * regions	an array of three address ranges that results will be saved
 *
 * Returns 0 if success, or negative error code otherwise.
 */
int __damon_va_three_regions(struct damon_ctx *ctx, struct damon_addr_range regions[3])
{
	struct damon_addr_range first_gap = {0}, second_gap = {0};
	struct lab_vma *vma, *prev = NULL;
	unsigned long start = 0;

	for (vma = ctx->vmas; vma < ctx->vmas + ctx->nr_vmas; vma++) {
		unsigned long gap;

		if (!prev) {
			start = vma->start;
			goto next;
		}
		gap = vma->start - prev->end;

		if (gap > sz_range(&first_gap)) {
			second_gap = first_gap;
			first_gap.start = prev->end;
			first_gap.end = vma->start;
		} else if (gap > sz_range(&second_gap)) {
			second_gap.start = prev->end;
			second_gap.end = vma->start;
		}
next:
		prev = vma;
	}

	if (!sz_range(&second_gap) || !sz_range(&first_gap))
		return -EINVAL;

	/* Sort the two biggest gaps by address */
	if (first_gap.start > second_gap.start) {
		struct damon_addr_range tmp = first_gap;

		first_gap = second_gap;
		second_gap = tmp;
	}

	/* Store the result */
	regions[0].start = ALIGN(start, DAMON_MIN_REGION);
	regions[0].end = ALIGN(first_gap.start, DAMON_MIN_REGION);
	regions[1].start = ALIGN(first_gap.end, DAMON_MIN_REGION);
	regions[1].end = ALIGN(second_gap.start, DAMON_MIN_REGION);
	regions[2].start = ALIGN(second_gap.end, DAMON_MIN_REGION);
	regions[2].end = ALIGN(prev->end, DAMON_MIN_REGION);

	return 0;
}

/* Initialize the monitoring target regions for the given target (task) */
static void __damon_va_init_regions(struct damon_ctx *ctx, struct damon_target *t)
{
	struct damon_region *r;
	struct damon_addr_range regions[3];
	unsigned long sz = 0, nr_pieces;
	int i;

	if (__damon_va_three_regions(ctx, regions))
		return;

	for (i = 0; i < 3; i++)
		sz += regions[i].end - regions[i].start;
	if (ctx->attrs.min_nr_regions)
		sz /= ctx->attrs.min_nr_regions;
	if (sz < DAMON_MIN_REGION)
		sz = DAMON_MIN_REGION;

	/* Set the initial three regions of the target */
	for (i = 0; i < 3; i++) {
		r = damon_new_region(regions[i].start, regions[i].end);
		damon_add_region(r, t);

		nr_pieces = (regions[i].end - regions[i].start) / sz;
		damon_va_evenly_split_region(t, r, nr_pieces);
	}
}

/* Initialize '->regions_list' of every target (task) */
void damon_va_init(struct damon_ctx *ctx)
{
	/* the user may set the target regions as they want */
	if (!damon_nr_regions(&ctx->target))
		__damon_va_init_regions(ctx, &ctx->target);
}

/* Update regions for current memory mappings */
void damon_va_update(struct damon_ctx *ctx)
{
	struct damon_addr_range three_regions[3];

	if (__damon_va_three_regions(ctx, three_regions))
		return;
	damon_set_regions(&ctx->target, three_regions, 3);
}

/* lab: the first address of the folio mapped at addr, and its size; false where nothing is mapped */
static bool lab_folio_at(struct damon_ctx *ctx, unsigned long addr, unsigned long *head, unsigned long *size)
{
	for (struct lab_vma *v = ctx->vmas; v < ctx->vmas + ctx->nr_vmas; v++) {
		unsigned long h = ALIGN_DOWN(addr, HPAGE_PMD_SIZE);

		if (addr < v->start || addr >= v->end)
			continue;
		if (v->thp && v->start <= h && h + HPAGE_PMD_SIZE <= v->end) {
			*head = h;
			*size = HPAGE_PMD_SIZE;
		} else {
			*head = ALIGN_DOWN(addr, PAGE_SIZE);
			*size = PAGE_SIZE;
		}
		return true;
	}
	return false;
}

static void damon_va_mkold(struct damon_ctx *ctx, struct damon_region *r)
{
	r->folio_young = false;
}

static void __damon_va_prepare_access_check(struct damon_ctx *ctx, struct damon_region *r)
{
	r->sampling_addr = damon_rand(r->ar.start, r->ar.end);

	damon_va_mkold(ctx, r);
}

void damon_va_prepare_access_checks(struct damon_ctx *ctx)
{
	struct damon_region *r;

	damon_for_each_region(r, &ctx->target)
		__damon_va_prepare_access_check(ctx, r);
}

/* lab: the process runs for a sampling interval; the folios DAMON sampled get their accessed bit */
void lab_process_runs(struct damon_ctx *ctx)
{
	struct damon_region *r;
	unsigned long head, size;

	damon_for_each_region(r, &ctx->target) {
		if (!lab_folio_at(ctx, r->sampling_addr, &head, &size))
			continue;
		r->folio_head = head;
		if (lab_folio_accessed(ctx, head, size, ctx->passed_sample_intervals))
			r->folio_young = true;
	}
}

static bool damon_va_young(struct damon_ctx *ctx, struct damon_region *r)
{
	unsigned long head, size;

	if (!lab_folio_at(ctx, r->sampling_addr, &head, &size))
		return false;
	return r->folio_young && r->folio_head == head;
}

static void __damon_va_check_access(struct damon_ctx *ctx, struct damon_region *r, struct damon_attrs *attrs)
{
	bool accessed;

	accessed = damon_va_young(ctx, r);
	damon_update_region_access_rate(r, accessed, attrs);
}

unsigned int damon_va_check_accesses(struct damon_ctx *ctx)
{
	struct damon_region *r;
	unsigned int max_nr_accesses = 0;

	damon_for_each_region(r, &ctx->target) {
		__damon_va_check_access(ctx, r, &ctx->attrs);
		max_nr_accesses = max(r->nr_accesses, max_nr_accesses);
	}

	return max_nr_accesses;
}

/* lab: do_madvise() fails with -ENOMEM when part of the range is unmapped */
static bool lab_entirely_mapped(struct damon_ctx *ctx, unsigned long start, unsigned long end)
{
	unsigned long at = start;

	for (struct lab_vma *v = ctx->vmas; v < ctx->vmas + ctx->nr_vmas; v++) {
		if (v->end <= at)
			continue;
		if (v->start > at)
			return false;
		at = v->end;
		if (at >= end)
			return true;
	}
	return at >= end;
}

static unsigned long damos_madvise(struct damon_ctx *ctx, struct damon_region *r)
{
	unsigned long start = ALIGN(r->ar.start, PAGE_SIZE);
	unsigned long len = ALIGN(damon_sz_region(r), PAGE_SIZE);

	return lab_entirely_mapped(ctx, start, start + len) ? len : 0;
}

unsigned long damon_va_apply_scheme(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
				    struct damos *scheme)
{
	switch (scheme->action) {
	case DAMOS_WILLNEED:
	case DAMOS_COLD:
	case DAMOS_PAGEOUT:
	case DAMOS_HUGEPAGE:
	case DAMOS_NOHUGEPAGE:
		return damos_madvise(ctx, r);
	default:
		/* DAMOS_STAT, and the actions vaddr does not support */
		return 0;
	}
}

int damon_va_scheme_score(struct damon_ctx *ctx, struct damon_target *t, struct damon_region *r,
			  struct damos *scheme)
{
	switch (scheme->action) {
	case DAMOS_PAGEOUT:
		return damon_cold_score(ctx, r, scheme);
	default:
		break;
	}

	return DAMOS_MAX_SCORE;
}
