/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-VMA locks of Linux 6.12 in userspace: the data the ported paths share.
 *
 * The port follows simulator/kstep/models/vma_locks/ step for step: every function below that
 * the model has as a step runs as one atomic step (step_begin() .. step_end(), under the harness's
 * step mutex) and logs that step's label, so a run's log is a schedule the model can replay.  The
 * mm is a small address space of page numbers, as in the model; VMAs are named by the order in
 * which they were created (the model's ids), and a freed VMA is poisoned and kept, never reused,
 * so a use-after-free is seen by the port itself (vma_get()).
 */
#ifndef VMA_LOCKS_H
#define VMA_LOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include "rwsem.h"

#define MAX_THREADS	RWSEM_MAX_THREADS
#define MAX_VMAS	(1 << 22)/* VMA ids a run may create (ids are never reused) */
#define NO_ANON_VMA	(-1)
#define NO_VMA		(-1)
#define VM_LOCK_SEQ_NONE INT64_MIN	/* CONFIG_PER_VMA_LOCK=n: the field does not exist */
#define UINT_MAX_SEQ	4294967295LL	/* 6.12.88+ (seqcount): vma_lock_alloc's vm_lock_seq = UINT_MAX */
#define VM_LOCK_SEQ_6_12_0 (-1)	/* 6.12.0: int vm_lock_seq = -1 */

/* The variants: the model's names (kstep list vma-locks), each a block marked BUG in the code. */
#define VARIANTS(X)							\
	X(V6_12, "v6.12")						\
	X(V6_12_0, "v6.12.0")						\
	X(NO_PER_VMA_LOCK, "no-per-vma-lock")				\
	X(NO_RECHECK, "no-recheck")					\
	X(FREE_IMMEDIATELY, "free-immediately")				\
	X(NO_DETACHED_CHECK, "no-detached-check")			\
	X(END_READ_OUTSIDE_RCU, "end-read-outside-rcu")			\
	X(NO_SEQ_BUMP, "no-seq-bump")					\
	X(WRITE_LOCK_WITHOUT_RWSEM, "write-lock-without-rwsem")		\
	X(ANON_PREPARE_BLOCKS, "anon-prepare-blocks")			\
	X(MPROTECT_WITHOUT_VMA_LOCK, "mprotect-without-vma-lock")	\
	X(MAP_FIXED_WITHOUT_UNMAP, "map-fixed-without-unmap")		\
	X(FORK_WITHOUT_VMA_LOCKS, "fork-without-vma-locks")		\
	X(GP_ENDS_EARLY, "gp-ends-early")				\
	X(EARLY_CALLBACK, "early-callback")

enum variant {
#define VARIANT_ENUM(id, name) VARIANT_##id,
	VARIANTS(VARIANT_ENUM)
#undef VARIANT_ENUM
	NR_VARIANTS
};
extern enum variant variant;
extern const char *const variant_names[NR_VARIANTS];

/* kernel/locking/rwsem.c's state as the model keeps it (common/rwsem.h), behind its wait_lock. */
struct rw_semaphore {
	bool wait_lock;			/* sem->wait_lock: every change of the state below holds it */
	struct rwsem state;
};

#define VMA_MAGIC	0x766d6121u	/* a live vm_area_struct */
#define VMA_POISON	0x6b		/* mm/slab.h POISON_FREE, written over a freed VMA */

enum vma_status { VMA_LIVE, VMA_RCU_PENDING, VMA_FREED };

struct vm_area_struct {
	uint32_t magic;
	int id;
	unsigned long vm_start, vm_end;	/* page numbers */
	int64_t vm_lock_seq;
	bool detached;
	bool writable;			/* vm_flags: "rw" (else "r") */
	bool account;			/* VM_ACCOUNT */
	int anon_vma;			/* the anon_vma's name, or NO_ANON_VMA */
	enum vma_status status;
	struct rw_semaphore lock;	/* vma->vm_lock->lock */
};

/* mm->mm_mt in RCU mode: writers replace the array whole (rcu_assign_pointer). */
struct vma_tree {
	int n;
	int ids[];			/* VMA ids in address order */
};

struct mm_struct {
	struct rw_semaphore mmap_lock;
	int64_t mm_lock_seq;
	struct vma_tree *tree;
	int nr_vmas;			/* ids handed out so far */
	struct vm_area_struct *vmas[MAX_VMAS];
};
extern struct mm_struct mm;

/* A thread of the run: a fault thread or a writer, on its own CPU. */
struct lab_thread {
	int idx;
	char name[12];
	bool writer;
	int vma;			/* the local `vma` pointer of the fault path (a VMA id) */
	unsigned long addr;		/* the faulting address */
	int rcu_nesting;		/* rcu_read_lock() depth: the gp thread's gp-ends-early reads it */
	bool died;			/* SIGSEGV: bad_area_nosemaphore */
	int waiting;			/* the label it waits at, or -1 */
	unsigned char page[4096];	/* do_anonymous_page zeroes this: the fault's own work */
};
extern __thread struct lab_thread *current;
extern struct lab_thread threads[MAX_THREADS];
extern int nr_threads;

struct vma_counters {
	unsigned long success, abort, retry, miss, mmap_lock_faults, sigsegv;
};
extern struct vma_counters counters[MAX_THREADS];

/* Step labels: the model's (simulator/kstep/models/vma_locks/ and rcu.py). */
#define LABELS(X)							\
	X(down_write) X(rwsem_optimistic_spin) X(rwsem_down_write_slowpath)	\
	X(rwsem_try_write_lock) X(up_write) X(rwsem_down_read_slowpath)	\
	X(rwsem_wake) X(mm_lock_seqcount_begin) X(vma_end_write_all)	\
	X(downgrade_write) X(mmap_read_unlock) X(mas_walk) X(vma_start_read)	\
	X(down_read_trylock) X(vma_start_read_recheck) X(check_detached)	\
	X(check_range) X(vma_lock_miss) X(vma_lock_abort) X(up_read)	\
	X(handle_mm_fault) X(__vmf_anon_prepare) X(__anon_vma_prepare)	\
	X(do_anonymous_page) X(vma_lock_success) X(vma_lock_retry)	\
	X(get_mmap_lock_carefully) X(find_vma) X(bad_area_nosemaphore)	\
	X(vma_write_seq) X(vma_mark_detached) X(vm_area_free) X(__vm_area_free)	\
	X(vm_area_alloc) X(vma_set_range) X(vma_iter_store) X(vma_iter_clear_gfp)	\
	X(__split_vma) X(commit_merge) X(vm_flags_reset) X(copy_page_range)	\
	X(rcu_read_lock) X(rcu_read_unlock) X(rcu_gp_init) X(rcu_gp_cleanup)	\
	X(rcu_do_batch)

enum label {
#define LABEL_ENUM(name) L_##name,
	LABELS(LABEL_ENUM)
#undef LABEL_ENUM
	NR_LABELS
};
extern const char *const label_names[NR_LABELS];

/*
 * One atomic step: step_begin(label) takes the step mutex, step_end() logs the label with the state
 * after it (the VMA it names, or NO_VMA) and lets go.  step_wait() is step_begin() for a step
 * that waits: it returns holding the mutex once cond(arg) holds, letting go between polls.
 */
void step_begin(enum label label);
void step_end(enum label label, int vma);
void step_wait(enum label label, bool (*cond)(void *), void *arg);

/*
 * --bench runs without the log and without the step mutex (only the RCU actor and call_rcu keep
 * it, for the callback queue): each rwsem's wait_lock makes its steps atomic, writers are
 * serialized by mmap_lock, and faults read the tree and VMAs as RCU readers do.
 */
extern bool lab_bench;

static inline void raw_spin_lock(bool *lock)
{
	while (__atomic_test_and_set(lock, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(lock, __ATOMIC_RELAXED))
			;
}

static inline void raw_spin_unlock(bool *lock)
{
	__atomic_clear(lock, __ATOMIC_RELEASE);
}

/* A VMA a step dereferences: fails the run if it was freed (the port sees its own use-after-free). */
struct vm_area_struct *vma_get(int id, enum label label);

/* rwsem.c: the steps around common/rwsem.c's 6.12 rules; `sem` is mm.mmap_lock or a VMA's lock, `who` names it in the log. */
#define WHO_MM NO_VMA			/* `who` for mmap_lock */
struct rw_semaphore *rwsem_of(int who, enum label label);
void down_write(int who);
void up_write(int who);
void downgrade_write(int who);
/* Inside a step: down_read_trylock (mmap_read_trylock); true: i holds it for read now. */
bool rwsem_read_trylock(struct rw_semaphore *sem, int i);
/* Inside a step: down_read's fast path or rwsem_down_read_slowpath's decision; true: queued. */
bool rwsem_down_read(struct rw_semaphore *sem, int i);
/* The queued reader's step: wait until rwsem_mark_wake granted the lock. */
void rwsem_down_read_wait(int who);
/* The step `label` that is up_read(), then rwsem_wake if it was the last holder with waiters. */
void up_read(int who, enum label label);

/* The RCU glue (torture.c): liburcu read-side sections and the grace-period thread. */
void lab_rcu_read_lock(void);
void lab_rcu_read_unlock(void);
void lab_call_rcu(int vma);		/* inside a step: queue vm_area_free_rcu_cb */
void vma_poison(int id);

/* memory.c and mmap.c */
void do_user_addr_fault(unsigned long address);
void sys_mmap(unsigned long start, unsigned long end, bool writable);
void sys_munmap(unsigned long start, unsigned long end);
void sys_mprotect(unsigned long start, unsigned long end, bool writable);
void sys_fork(void);
void vma_end_read(int v);
int find(unsigned long addr);
int tree_prev(int v);			/* the VMA before v in the tree (adjacent or not), or NO_VMA */
int tree_next(int v);
void mm_init_vma(unsigned long start, unsigned long end, bool writable, bool anon);
int64_t vm_lock_seq_init(void);

#endif /* VMA_LOCKS_H */
