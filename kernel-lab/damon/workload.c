// SPDX-License-Identifier: GPL-2.0
/*
 * The monitored process's accesses: simulator/kstep/models/damon/workload.py in C, bit for bit.
 *
 * A page is accessed in a sampling interval if an active block covers it and SplitMix64's output
 * function over (seed ^ page * PAGE_MULT ^ sample * SAMPLE_MULT) modulo 1000 falls below the
 * block's rate: nothing is stored per page, so scanning every page costs time, never memory.
 */
#include "damon.h"

#define PAGE_MULT	0x9E3779B97F4A7C15ULL
#define SAMPLE_MULT	0xC2B2AE3D27D4EB4FULL

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* The byte ranges of a block hot in that sampling interval: 0, 1 or 2 (when it wraps). */
static int block(const struct lab_access *a, unsigned long sample, unsigned long lo[2], unsigned long hi[2])
{
	unsigned long span = a->end - a->start, width = a->width ? a->width : span, off;

	if (sample < a->from_sample || sample >= a->until_sample)
		return 0;
	if (width >= span) {
		lo[0] = a->start;
		hi[0] = a->end;
		return 1;
	}
	off = (unsigned __int128)(sample - a->from_sample) * a->speed % span;
	lo[0] = a->start + off;
	hi[0] = lo[0] + width;
	if (hi[0] <= a->end)
		return 1;
	lo[1] = a->start;
	hi[1] = a->start + hi[0] - a->end;
	hi[0] = a->end;
	return 2;
}

/*
 * Whether any page of the folio [head, head + size) is touched in that interval: a PMD-mapped THP
 * has one accessed bit, in its PMD, for all 2 MiB (damon_young_pmd_entry reads pmd_young).
 */
bool lab_folio_accessed(const struct damon_ctx *ctx, unsigned long head, unsigned long size,
			unsigned long sample)
{
	for (unsigned long page = head / PAGE_SIZE; page < (head + size) / PAGE_SIZE; page++)
		if (lab_accessed(ctx, page, sample))
			return true;
	return false;
}

bool lab_accessed(const struct damon_ctx *ctx, unsigned long page, unsigned long sample)
{
	unsigned long addr = page * PAGE_SIZE, lo[2], hi[2];

	for (int k = 0; k < ctx->nr_accesses; k++) {
		const struct lab_access *a = &ctx->accesses[k];
		int n = block(a, sample, lo, hi);

		for (int j = 0; j < n; j++) {
			if (lo[j] <= addr && addr < hi[j]) {
				if (a->rate_permil >= 1000 ||
				    mix64(ctx->seed ^ page * PAGE_MULT ^ sample * SAMPLE_MULT) % 1000 < a->rate_permil)
					return true;
				break;
			}
		}
	}
	return false;
}
