// SPDX-License-Identifier: GPL-2.0
/*
 * The other threads' frames, and the reader side of the locks they share with fork as
 * simulator/kstep/models/vma_locks/ steps through it: down_read's fast path or
 * rwsem_down_read_slowpath (a queued reader runs again once granted), up_read and the rwsem_wake
 * that follows it when the last holder leaves with waiters queued.
 */
#include <stdarg.h>
#include <string.h>

#include "check.h"
#include "fork.h"

void not_ported(struct mm *mm, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fork-batch: not ported: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* The model's push(s, i, (A, B, ...)): A runs next, then B, then what was there. */
void push(struct thread *t, int n, ...)
{
	struct frame f[MAX_FRAMES];
	va_list ap;

	LAB_CHECK(n <= MAX_FRAMES && t->nr_frames + n <= MAX_FRAMES);
	va_start(ap, n);
	for (int k = 0; k < n; k++) {
		f[k].label = va_arg(ap, const char *);
		f[k].arg = va_arg(ap, long);
	}
	va_end(ap);
	while (n--)
		t->frames[t->nr_frames++] = f[n];
}

struct rwsem *lock_of(struct mm *mm, long lock)
{
	return lock == MM_LOCK ? &mm->mmap_lock : &mm->vmas[lock].lock;
}

/* down_read: the fast path, else rwsem_down_read_slowpath steals the lock or queues. */
void down_read(struct mm *mm, long lock, int i)
{
	struct rwsem *sem = lock_of(mm, lock);

	if (rwsem_read_trylock_ok(sem))
		rwsem_add_reader(sem, i);
	else if (rwsem_down_read_slowpath(sem, i))
		push(&mm->threads[i], 1, "rwsem_down_read_slowpath", lock);
}

/* __up_read: the last holder with waiters queued goes on to rwsem_wake. */
void up_read(struct mm *mm, long lock, int i)
{
	if (__up_read(lock_of(mm, lock), i))
		push(&mm->threads[i], 1, "rwsem_wake", lock);
}

/* The steps both kinds of thread take: a granted reader wakes, a lock is released and its waiters
 * woken, and the RCU read-side markers (which only count nesting; no grace period waits here). */
static bool common_step(struct mm *mm, int i, const struct frame *f)
{
	if (!strcmp(f->label, "mmap_read_unlock"))
		up_read(mm, MM_LOCK, i);
	else if (!strcmp(f->label, "up_read"))
		up_read(mm, f->arg, i);
	else if (!strcmp(f->label, "rwsem_wake"))
		rwsem_wake(lock_of(mm, f->arg));
	else
		return !strcmp(f->label, "rwsem_down_read_slowpath") || !strcmp(f->label, "rcu_read_lock") ||
		       !strcmp(f->label, "rcu_read_unlock");
	return true;
}

/*
 * One step of thread i (not the fork): expand calls until a step is on top, then take it and name
 * it in *label.  False if the thread has no step left or waits: a queued reader is blocked until
 * granted.
 */
bool thread_step(struct mm *mm, int i, const char **label)
{
	struct thread *t = &mm->threads[i];

	while (t->nr_frames) {
		struct frame f = t->frames[t->nr_frames - 1];
		bool stepped;

		if (!strcmp(f.label, "rwsem_down_read_slowpath") && !rwsem_read_granted(lock_of(mm, f.arg), i))
			return false;
		t->nr_frames--;
		stepped = common_step(mm, i, &f) ||
			  (t->kind == T_FAULT ? fault_step(mm, i, &f) : gup_step(mm, i, &f));
		if (stepped) {
			*label = f.label;
			return true;
		}
	}
	return false;
}
