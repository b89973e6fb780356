// SPDX-License-Identifier: GPL-2.0
/*
 * fork-batch-bench: the copy of 1 GiB of populated private anonymous memory (512 PTE tables), in
 * folios of one order, by one strategy, in one PTE format, as kstep.measure.fork_batch.populated lays it
 * out; the thread's microbenchmark without the rest of fork().
 *
 *   fork-batch-bench FORMAT STRATEGY ORDER REPS
 *
 * Prints the counters of one copy ("ops ...", the same on every repetition) and the time of each
 * dup_mmap in nanoseconds ("ns ..."); the page tables are built afresh, untimed, before each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fork.h"

#define FIRST_PFN	1024
#define GIB_PAGES	(512L * PTRS_PER_PTE)

static const char *const formats[NR_FORMATS] = { "x86-64", "arm64-4K-contpte", "generic", "arm64-4K" };
static const char *const strategies[] = { "folio-batch", "v6.12.0-batch", "no-batch-hint", "per-pte", "arch-hint" };

static int pick(const char *arg, const char *const *names, int n)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(arg, names[k]))
			return k;
	fprintf(stderr, "fork-batch-bench: %s is not one of the choices\n", arg);
	exit(2);
}

/* Every page written before the fork: writable, dirty, young, exclusive, each folio mapped whole. */
static void populate(struct mm *mm, enum pte_format fmt, enum strategy strategy, int order)
{
	struct ops setup = { 0 };
	long n = 1L << order;

	memset(mm, 0, sizeof(*mm));
	mm->fmt = fmt;
	mm->strategy = strategy;
	mm->npages = GIB_PAGES;
	mm->nr_vmas = 1;
	mm->vmas = calloc(1, sizeof(*mm->vmas));
	mm->parent = calloc(GIB_PAGES, sizeof(pte_t));
	mm->child = calloc(GIB_PAGES, sizeof(pte_t));
	LAB_CHECK(mm->vmas && mm->parent && mm->child);
	mm->vmas[0] = (struct vma){ .start = 0, .end = GIB_PAGES, .kind = PRIVATE_ANON, .writable = true,
				    .anon_vma = true };
	mm->next_pfn = FIRST_PFN;
	for (long at = 0; at < GIB_PAGES; at += n) {
		long k = new_folio(mm, FOLIO_ANON, n, 0, false);
		struct folio *f = &mm->folios[k];
		pte_t pte = pfn_pte(f->pfn, PTE_PRESENT | PTE_WRITE | PTE_DIRTY | PTE_YOUNG);

		mm->next_pfn = f->pfn + n;
		f->order = order;
		f->large_mapcount = order ? n : 0;
		f->mapcount = realloc(f->mapcount, n * sizeof(long));
		f->exclusive = realloc(f->exclusive, n * sizeof(bool));
		LAB_CHECK(f->mapcount && f->exclusive);
		for (long j = 0; j < n; j++) {
			f->mapcount[j] = 1;
			f->exclusive[j] = true;
		}
		set_ptes(fmt, mm->parent, at, pte, n, &setup, NULL, NULL);
	}
}

static void release(struct mm *mm)
{
	for (long k = 0; k < mm->nr_folios; k++) {
		free(mm->folios[k].mapcount);
		free(mm->folios[k].exclusive);
	}
	free(mm->folios);
	free(mm->batches);
	free(mm->vmas);
	free(mm->parent);
	free(mm->child);
}

int main(int argc, char **argv)
{
	struct mm mm;
	int fmt, strategy, order, reps;
	const struct ops *o = &mm.ops;

	if (argc != 5) {
		fprintf(stderr, "fork-batch-bench: usage: fork-batch-bench FORMAT STRATEGY ORDER REPS\n");
		return 2;
	}
	fmt = pick(argv[1], formats, NR_FORMATS);
	strategy = pick(argv[2], strategies, 5);
	order = atoi(argv[3]);
	reps = atoi(argv[4]);
	if ((order != 0 && order != 4 && order != 9) || reps < 1) {
		fprintf(stderr, "fork-batch-bench: ORDER is 0, 4 or 9 and REPS at least 1\n");
		return 2;
	}
	printf("ns");
	for (int r = 0; r < reps; r++) {
		struct timespec a, b;

		populate(&mm, fmt, strategy, order);
		clock_gettime(CLOCK_MONOTONIC, &a);
		dup_mmap(&mm);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf(" %lld", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		if (r + 1 < reps)
			release(&mm);
	}
	printf("\nops %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", o->loads, o->stores, o->atomics, o->tlb_flushes,
	       o->folds, o->unfolds, o->refs, o->rmap, o->batches);
	release(&mm);
	return 0;
}
