/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The structures fork's page-table copy reads and writes, as simulator/kstep/models/fork_batch/
 * keeps them: one mm with the parent's and the child's PTE arrays over page numbers, its VMAs,
 * and the folios the PTEs map, in PFN order; and the other threads of the parent (page faults,
 * GUP-fast pins) with the locks they meet: mmap_lock, each VMA's lock and write_protect_seq.
 *
 * The fork runs straight through memory.c; every labelled step of the model's program starts
 * with STEP(mm, label), which hands the step to the harness's scheduler (sched.c): it records
 * the step and first lets the other threads take theirs, if the schedule says they come first.
 * A fault or GUP thread is a stack of frames, as in the model, run one step at a time.
 */
#ifndef FORK_FORK_H
#define FORK_FORK_H

#include "pgtable.h"
#include "rwsem.h"	/* common/: kernel/locking/rwsem.c's rules, shared with vma-locks/ */

enum folio_kind { FOLIO_ANON, FOLIO_FILE, FOLIO_SHMEM };
enum vma_kind { PRIVATE_ANON, PRIVATE_FILE, SHARED };
enum strategy { FOLIO_BATCH, V6_12_0_BATCH, NO_BATCH_HINT, PER_PTE, ARCH_HINT };
enum { MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES, NR_MM_COUNTERS };
enum copy_how { HOW_BATCH, HOW_HINT, HOW_SINGLE, HOW_ZERO, HOW_COPIED, HOW_SWAP };

#define GUP_PIN_COUNTING_BIAS	1024
#define EAGAIN_COPY		(-11)
#define NO_LARGE_MAPCOUNT	(-1)	/* a large folio's large_mapcount where the kernel keeps none */

struct folio {
	uint64_t pfn;		/* folio_pfn */
	int order;
	enum folio_kind kind;
	long refcount, pincount, large_mapcount;	/* NO_LARGE_MAPCOUNT: not kept */
	long *mapcount;		/* per page: the PTEs that map it */
	bool *exclusive;	/* per page: PageAnonExclusive */
};

#define MAX_THREADS	6
#define MM_LOCK		(-1)	/* a lock step's argument: mmap_lock; else the VMA's index */

struct vma {
	long start, end;	/* page numbers */
	enum vma_kind kind;
	bool writable, anon_vma, soft_dirty, uffd_wp;
	long vm_lock_seq;
	struct rwsem lock;	/* vma->vm_lock->lock */
};

struct batch {
	int vma;
	long addr, nr;
	enum copy_how how;
};

enum thread_kind { T_FORK, T_FAULT, T_GUP };
#define MAX_FRAMES	16

struct frame {
	const char *label;	/* a step, or a call that expands into frames */
	long arg;
};

struct thread {
	char name[32];
	enum thread_kind kind;
	struct frame frames[MAX_FRAMES];	/* frames[nr_frames - 1] runs next */
	int nr_frames;
	long addr, vma;		/* fault: the address and its VMA */
	long seq;		/* gup: write_protect_seq as gup_fast read it */
	pte_t pte;		/* gup: what ptep_get_lockless read */
	long folio;		/* gup: the folio it holds a pin on, or -1 */
	bool pinned;		/* gup: pin_user_pages_fast returned the page pinned */
};

struct counters {	/* vma-locks' counters, in the model's order */
	long vma_lock_success, vma_lock_abort, vma_lock_retry, vma_lock_miss, mmap_lock_faults, sigsegv;
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
	long write_protect_seq, mm_lock_seq;
	struct rwsem mmap_lock;
	struct counters counters;
	struct thread *threads;
	int nr_threads, fork_thread;
	void (*step)(struct mm *mm, const char *label);	/* the fork's steps, to the scheduler (NULL: none) */
	const struct rwsem *fork_waits;	/* the lock a queued fork retries (rwsem_try_write_lock) */
	int copying;		/* the VMA copy_page_range is copying, or -1 (the model's copy.vma) */
};

#define STEP(mm, label)			\
do {					\
	if ((mm)->step)			\
		(mm)->step(mm, label);	\
} while (0)

long folio_index(struct mm *mm, uint64_t pfn);
long new_folio(struct mm *mm, enum folio_kind kind, long refcount, long mapped, bool exclusive);
bool folio_span(void *mm, uint64_t pfn, uint64_t *first, long *nr_pages);
void dup_mmap(struct mm *mm);
long folio_nr_pages(const struct folio *f);

/* sched.c */
void __attribute__((noreturn, format(printf, 2, 3))) not_ported(struct mm *mm, const char *fmt, ...);
void push(struct thread *t, int n, ...);
struct rwsem *lock_of(struct mm *mm, long lock);
void down_read(struct mm *mm, long lock, int i);
void up_read(struct mm *mm, long lock, int i);
bool thread_step(struct mm *mm, int i, const char **label);

/* fault.c and gup.c: one step of a fault or a GUP-fast pin, by the label on top of its frames */
bool fault_step(struct mm *mm, int i, const struct frame *f);
bool gup_step(struct mm *mm, int i, const struct frame *f);
void map_zeroed_page(struct mm *mm, long addr);

#endif /* FORK_FORK_H */
