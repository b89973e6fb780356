/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The structures fork's page-table copy reads and writes, as simulator/kstep/models/fork_batch.py
 * keeps them: one mm with the parent's and the child's PTE arrays over page numbers, its VMAs,
 * and the folios the PTEs map, in PFN order.
 */
#ifndef FORK_FORK_H
#define FORK_FORK_H

#include "pgtable.h"

enum folio_kind { FOLIO_ANON, FOLIO_FILE, FOLIO_SHMEM };
enum vma_kind { PRIVATE_ANON, PRIVATE_FILE, SHARED };
enum strategy { FOLIO_BATCH, V6_12_0_BATCH, NO_BATCH_HINT, PER_PTE, ARCH_HINT };
enum { MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES, NR_MM_COUNTERS };
enum copy_how { HOW_BATCH, HOW_HINT, HOW_SINGLE, HOW_ZERO, HOW_COPIED, HOW_SWAP };

#define GUP_PIN_COUNTING_BIAS	1024
#define EAGAIN_COPY		(-11)

struct folio {
	uint64_t pfn;		/* folio_pfn */
	int order;
	enum folio_kind kind;
	long refcount, pincount, large_mapcount;
	long *mapcount;		/* per page: the PTEs that map it */
	bool *exclusive;	/* per page: PageAnonExclusive */
};

struct vma {
	long start, end;	/* page numbers */
	enum vma_kind kind;
	bool writable, anon_vma, soft_dirty, uffd_wp;
};

struct batch {
	int vma;
	long addr, nr;
	enum copy_how how;
};

struct mm {
	enum pte_format fmt;
	enum strategy strategy;
	bool mmf_has_pinned;
	long npages;
	pte_t *parent, *child;
	struct vma *vmas;	/* by vm_start */
	int nr_vmas;
	struct folio *folios;	/* by PFN */
	long nr_folios, folio_cap;
	uint64_t next_pfn;	/* where the page allocator puts the next page */
	struct ops ops;
	long rss[NR_MM_COUNTERS];	/* the child's */
	struct batch *batches;	/* every copy made, in order */
	long nr_batches, batch_cap;
};

long folio_index(struct mm *mm, uint64_t pfn);
long new_folio(struct mm *mm, enum folio_kind kind, long refcount, long mapped, bool exclusive);
bool folio_span(void *mm, uint64_t pfn, uint64_t *first, long *nr_pages);
void dup_mmap(struct mm *mm);

#endif /* FORK_FORK_H */
