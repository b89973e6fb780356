// SPDX-License-Identifier: GPL-2.0
/*
 * The rw_semaphore rules of Linux 6.12 (kernel/locking/rwsem.c) as simulator/kstep/models/vma_locks/rwsem.py
 * states them, function for function, for mmap_lock and the VMA locks the fork, its faults and
 * GUP-fast meet: readers fail the fast path while a writer holds the lock or anyone waits, steal
 * it in the slowpath when no writer or reader holds it, and are granted it all at once by
 * rwsem_mark_wake when a reader is first in line; a writer spins once (rwsem_optimistic_spin),
 * then queues and retries (rwsem_try_write_lock), setting RWSEM_FLAG_HANDOFF when it is held.
 */
#include "check.h"
#include "fork.h"

static bool is_free(const struct rwsem *sem)
{
	return !sem->owner && !sem->readers && !sem->nr_waiters && !sem->handoff;
}

bool rwsem_read_trylock_ok(const struct rwsem *sem)
{
	return !sem->owner && !sem->nr_waiters && !sem->handoff;
}

void rwsem_add_reader(struct rwsem *sem, int i)
{
	sem->readers |= 1U << i;
}

bool rwsem_holds_read(const struct rwsem *sem, int i)
{
	return sem->readers >> i & 1;
}

static bool waiting(const struct rwsem *sem, int i)
{
	for (int k = 0; k < sem->nr_waiters; k++)
		if (sem->waiters[k].thread == i)
			return true;
	return false;
}

static void enqueue(struct rwsem *sem, int i, bool write)
{
	LAB_CHECK(sem->nr_waiters < MAX_THREADS);
	sem->waiters[sem->nr_waiters].thread = i;
	sem->waiters[sem->nr_waiters++].write = write;
}

/* rwsem_mark_wake: a reader first in line: grant every queued reader (unless a writer stole the
 * lock, which read_owned rules out); a writer first in line retries by itself. */
static void mark_wake(struct rwsem *sem, bool read_owned)
{
	int kept = 0;

	if (!sem->nr_waiters || sem->waiters[0].write)
		return;
	if (!read_owned && sem->owner)
		return;
	for (int k = 0; k < sem->nr_waiters; k++) {
		if (sem->waiters[k].write)
			sem->waiters[kept++] = sem->waiters[k];
		else
			rwsem_add_reader(sem, sem->waiters[k].thread);
	}
	sem->nr_waiters = kept;
	sem->handoff = false;
}

/* rwsem_cond_wake_waiter: unless a writer holds it, wake what may take it now. */
static void cond_wake_waiter(struct rwsem *sem)
{
	if (!sem->owner)
		mark_wake(sem, false);
}

bool rwsem_read_slowpath(struct rwsem *sem, int i)
{
	if (!sem->owner && !sem->readers && !sem->handoff) {	/* steal it */
		rwsem_add_reader(sem, i);
		mark_wake(sem, true);
		return false;
	}
	enqueue(sem, i, false);
	cond_wake_waiter(sem);
	return true;
}

bool rwsem_read_granted(const struct rwsem *sem, int i)
{
	return rwsem_holds_read(sem, i) && !waiting(sem, i);
}

bool rwsem_write_trylock(struct rwsem *sem, int i)
{
	if (is_free(sem))
		sem->owner = i + 1;
	return sem->owner == i + 1;
}

/* rwsem_try_write_lock_unqueued: queued waiters do not matter, HANDOFF does. */
bool rwsem_optimistic_spin(struct rwsem *sem, int i)
{
	if (!sem->owner && !sem->readers && !sem->handoff)
		sem->owner = i + 1;
	return sem->owner == i + 1;
}

static bool can_write_lock(const struct rwsem *sem, int i)
{
	return !sem->owner && !sem->readers && !(sem->handoff && sem->waiters[0].thread != i);
}

static bool try_write_lock(struct rwsem *sem, int i)
{
	int kept = 0;

	if (!can_write_lock(sem, i))
		return false;
	for (int k = 0; k < sem->nr_waiters; k++)
		if (sem->waiters[k].thread != i)
			sem->waiters[kept++] = sem->waiters[k];
	sem->nr_waiters = kept;
	sem->owner = i + 1;
	sem->handoff = false;
	return true;
}

/* rwsem_down_write_slowpath: queue, wake queued readers if not first, then try once. */
bool rwsem_queue_writer(struct rwsem *sem, int i)
{
	bool first = !sem->nr_waiters;

	enqueue(sem, i, true);
	if (!first)
		cond_wake_waiter(sem);
	return try_write_lock(sem, i);
}

/* A queued writer's retry does something: it takes the lock, or, the lock held, sets HANDOFF. */
bool rwsem_write_retry_enabled(const struct rwsem *sem, int i)
{
	return can_write_lock(sem, i) || ((sem->owner || sem->readers) && !sem->handoff);
}

bool rwsem_write_retry(struct rwsem *sem, int i)
{
	if (try_write_lock(sem, i))
		return true;
	sem->handoff = true;
	return false;
}

/* __up_read: true when it was the last holder and waiters are queued (rwsem_wake follows). */
bool rwsem_up_read(struct rwsem *sem, int i)
{
	LAB_CHECK(rwsem_holds_read(sem, i));
	sem->readers &= ~(1U << i);
	return !sem->readers && !sem->owner && sem->nr_waiters;
}

void rwsem_wake(struct rwsem *sem)
{
	mark_wake(sem, false);
}

void rwsem_up_write(struct rwsem *sem)
{
	sem->owner = 0;
	rwsem_wake(sem);
}
