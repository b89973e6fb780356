// SPDX-License-Identifier: GPL-2.0
/*
 * kernel/locking/rwsem.c's rules (see rwsem.h): readers fail the fast path while a writer holds
 * the lock or anyone waits, steal it in the slowpath when no writer or reader holds it and HANDOFF
 * is clear, and are granted it all at once by rwsem_mark_wake when a reader is first in line; a
 * writer spins once, then queues and retries, setting RWSEM_FLAG_HANDOFF when the lock is held.
 */
#include "check.h"
#include "rwsem.h"

uint32_t rwsem_count(const struct rwsem *sem)
{
	return (sem->owner != 0) | (sem->nr_waiters ? 2u : 0u) | (sem->handoff ? 4u : 0u) |
	       (uint32_t)__builtin_popcount(sem->readers) << 8;
}

bool rwsem_is_write_owner(const struct rwsem *sem, int i)
{
	return sem->owner == i + 1;
}

bool rwsem_holds_read(const struct rwsem *sem, int i)
{
	return sem->readers >> i & 1;
}

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
	sem->readers |= 1u << i;
}

static void add_waiter(struct rwsem *sem, int i, bool write)
{
	LAB_CHECK(sem->nr_waiters < RWSEM_MAX_THREADS);
	sem->waiters[sem->nr_waiters++] = (struct rwsem_waiter){ i, write };
}

static bool waiting(const struct rwsem *sem, int i)
{
	for (int k = 0; k < sem->nr_waiters; k++)
		if (sem->waiters[k].thread == i)
			return true;
	return false;
}

/* A writer first in line is only woken (it retries by itself); a reader first: grant every
 * queued reader, unless a writer holds it (read_owned: the caller itself holds it for read). */
static void rwsem_mark_wake(struct rwsem *sem, bool read_owned)
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
static void rwsem_cond_wake_waiter(struct rwsem *sem)
{
	if (!sem->owner)
		rwsem_mark_wake(sem, false);
}

bool rwsem_down_read_slowpath(struct rwsem *sem, int i)
{
	if (!sem->owner && !sem->readers && !sem->handoff) {	/* steal it */
		rwsem_add_reader(sem, i);
		rwsem_mark_wake(sem, true);
		return false;
	}
	add_waiter(sem, i, false);
	rwsem_cond_wake_waiter(sem);
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
	return rwsem_is_write_owner(sem, i);
}

bool rwsem_try_write_lock_unqueued(struct rwsem *sem, int i)
{
	if (!sem->owner && !sem->readers && !sem->handoff)
		sem->owner = i + 1;
	return rwsem_is_write_owner(sem, i);
}

bool rwsem_write_lock_free(const struct rwsem *sem, int i)
{
	return !sem->owner && !sem->readers && !(sem->handoff && sem->waiters[0].thread != i);
}

bool rwsem_may_set_handoff(const struct rwsem *sem)
{
	return (sem->owner || sem->readers) && !sem->handoff;
}

/* The queued writer i takes the lock: off the wait list, HANDOFF consumed. */
static bool take_write_lock(struct rwsem *sem, int i)
{
	int kept = 0;

	if (!rwsem_write_lock_free(sem, i))
		return false;
	for (int k = 0; k < sem->nr_waiters; k++)
		if (sem->waiters[k].thread != i)
			sem->waiters[kept++] = sem->waiters[k];
	sem->nr_waiters = kept;
	sem->owner = i + 1;
	sem->handoff = false;
	return true;
}

bool rwsem_down_write_slowpath(struct rwsem *sem, int i)
{
	bool first = !sem->nr_waiters;

	add_waiter(sem, i, true);
	if (!first)
		rwsem_cond_wake_waiter(sem);
	return take_write_lock(sem, i);
}

bool rwsem_try_write_lock(struct rwsem *sem, int i)
{
	if (take_write_lock(sem, i))
		return true;
	if (rwsem_may_set_handoff(sem))
		sem->handoff = true;
	return false;
}

bool __up_read(struct rwsem *sem, int i)
{
	LAB_CHECK(rwsem_holds_read(sem, i));
	sem->readers &= ~(1u << i);
	return !sem->readers && !sem->owner && sem->nr_waiters;
}

void rwsem_wake(struct rwsem *sem)
{
	rwsem_mark_wake(sem, false);
}

void rwsem_up_write(struct rwsem *sem)
{
	sem->owner = 0;
	rwsem_wake(sem);
}

void rwsem_downgrade_write(struct rwsem *sem, int i)
{
	sem->owner = 0;
	rwsem_add_reader(sem, i);
	rwsem_mark_wake(sem, true);		/* rwsem_downgrade_wake */
}
