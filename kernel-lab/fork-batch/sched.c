// SPDX-License-Identifier: GPL-2.0
/*
 * The other threads' frames and the locks they share with fork, as simulator/kstep/models/
 * vma_lock.py and rwsem.py have them for the cases ported here: kernel/locking/rwsem.c's
 * down_read fast path, a reader queued behind a writer (rwsem_down_read_slowpath), every queued
 * reader granted at up_write (rwsem_mark_wake), and a writer that finds the lock free.  Anything
 * else (a writer that would spin or queue, a waking up_read) stops the run as not ported.
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

/* down_read: the fast path (no writer, nobody queued), else queue behind the writer; true if taken. */
bool down_read(struct mm *mm, struct rwsem *sem, int i)
{
	if (!sem->writer && !sem->queued) {
		sem->readers++;
		return true;
	}
	if (!sem->writer)
		not_ported(mm, "a reader behind queued readers with no writer");
	sem->queued++;
	sem->granted[i] = false;
	return false;
}

void up_read(struct mm *mm, struct rwsem *sem, int i)
{
	LAB_CHECK(sem->readers > 0);
	if (--sem->readers == 0 && sem->queued)
		not_ported(mm, "up_read with waiters queued (rwsem_wake)");
}

void down_write(struct mm *mm, struct rwsem *sem, int i, const char *what)
{
	if (sem->writer || sem->readers || sem->queued)
		not_ported(mm, "%s would wait for %s (rwsem_optimistic_spin)", mm->threads[i].name, what);
	sem->writer = i + 1;
}

/* up_write: rwsem_wake -> rwsem_mark_wake grants the lock to every queued reader. */
void up_write(struct rwsem *sem, int nr_threads)
{
	sem->writer = 0;
	if (!sem->queued)
		return;
	for (int k = 0; k < nr_threads; k++)
		sem->granted[k] = true;
	sem->readers += sem->queued;
	sem->queued = 0;
}

/* The steps both kinds of thread take: a granted reader wakes, mmap_lock is released, and the
 * RCU read-side markers (which only count nesting; no grace period waits on them here). */
static bool common_step(struct mm *mm, int i, const struct frame *f)
{
	if (!strcmp(f->label, "mmap_read_unlock"))
		up_read(mm, &mm->mmap_lock, i);
	return !strcmp(f->label, "rwsem_down_read_slowpath") || !strcmp(f->label, "mmap_read_unlock") ||
	       !strcmp(f->label, "rcu_read_lock") || !strcmp(f->label, "rcu_read_unlock");
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

		if (!strcmp(f.label, "rwsem_down_read_slowpath") && !mm->mmap_lock.granted[i])
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
