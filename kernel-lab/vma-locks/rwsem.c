// SPDX-License-Identifier: GPL-2.0
/*
 * The rw_semaphore rules of Linux 6.12 (kernel/locking/rwsem.c) as the model keeps them
 * (simulator/kstep/models/vma_locks/rwsem.py): reader stealing in rwsem_down_read_slowpath, the writer's
 * optimistic spin taking a free lock ahead of queued waiters, RWSEM_FLAG_HANDOFF reserving it for
 * the first waiter, and rwsem_mark_wake granting every queued reader at once.
 *
 * Each function is one of the model's steps (or the part of a step that is down_read/up_read),
 * run under the step mutex (and always under sem->wait_lock, which alone serializes them in the
 * --bench build of the harness), so the state is the model's: owner, the readers as a bitmask, the
 * wait list, HANDOFF.  The log prints it as 6.12's sem->count would read: RWSEM_WRITER_LOCKED
 * (bit 0), RWSEM_FLAG_WAITERS (bit 1), RWSEM_FLAG_HANDOFF (bit 2), the reader count from bit 8.
 */
#include <time.h>

#include "vma_locks.h"

#define RWSEM_WAIT_TIMEOUT_NS	4000000L	/* DIV_ROUND_UP(HZ, 250) jiffies at HZ=250: 4 ms */

uint32_t rwsem_count(const struct rw_semaphore *sem)
{
	return (sem->owner != NOBODY) | (sem->nr_waiters ? 2u : 0u) | (sem->handoff ? 4u : 0u) |
	       (uint32_t)__builtin_popcount(sem->readers) << 8;
}

struct rw_semaphore *rwsem_of(int who, enum label label)
{
	return who == WHO_MM ? &mm.mmap_lock : &vma_get(who, label)->lock;
}

static bool is_free(const struct rw_semaphore *sem)
{
	return sem->owner == NOBODY && !sem->readers && !sem->nr_waiters && !sem->handoff;
}

bool read_trylock_ok(const struct rw_semaphore *sem)
{
	return sem->owner == NOBODY && !sem->nr_waiters && !sem->handoff;
}

void rwsem_add_reader(struct rw_semaphore *sem, int i)
{
	sem->readers |= 1u << i;
}

static void add_waiter(struct rw_semaphore *sem, int i, bool write)
{
	sem->waiters[sem->nr_waiters++] = (struct rwsem_waiter){ i, write };
}

static void remove_waiter(struct rw_semaphore *sem, int i)
{
	int k, n = 0;

	for (k = 0; k < sem->nr_waiters; k++)
		if (sem->waiters[k].thread != i)
			sem->waiters[n++] = sem->waiters[k];
	sem->nr_waiters = n;
}

/* rwsem_mark_wake: a writer first in line is only woken; a reader first: grant every queued reader. */
static void rwsem_mark_wake(struct rw_semaphore *sem, bool read_owned)
{
	int k, n = 0;

	if (!sem->nr_waiters || sem->waiters[0].write)
		return;
	if (!read_owned && sem->owner != NOBODY)
		return;
	for (k = 0; k < sem->nr_waiters; k++) {
		if (sem->waiters[k].write)
			sem->waiters[n++] = sem->waiters[k];
		else
			rwsem_add_reader(sem, sem->waiters[k].thread);
	}
	sem->nr_waiters = n;
	sem->handoff = false;
}

/* rwsem_cond_wake_waiter: unless a writer holds it, wake what may take it now. */
static void rwsem_cond_wake_waiter(struct rw_semaphore *sem)
{
	if (sem->owner == NOBODY)
		rwsem_mark_wake(sem, false);
}

bool rwsem_read_trylock(struct rw_semaphore *sem, int i)
{
	bool ok;

	raw_spin_lock(&sem->wait_lock);
	ok = read_trylock_ok(sem);
	if (ok)
		rwsem_add_reader(sem, i);
	raw_spin_unlock(&sem->wait_lock);
	return ok;
}

bool rwsem_down_read(struct rw_semaphore *sem, int i)
{
	bool queued = false;

	raw_spin_lock(&sem->wait_lock);
	if (read_trylock_ok(sem)) {
		rwsem_add_reader(sem, i);
	} else if (sem->owner == NOBODY && !sem->readers && !sem->handoff) {
		/* rwsem_down_read_slowpath: steal it (no writer, HANDOFF clear, no reader has it) */
		rwsem_add_reader(sem, i);
		rwsem_mark_wake(sem, true);
	} else {
		add_waiter(sem, i, false);
		rwsem_cond_wake_waiter(sem);
		queued = true;
	}
	raw_spin_unlock(&sem->wait_lock);
	return queued;
}

static bool read_granted(void *arg)
{
	struct rw_semaphore *sem = arg;
	bool granted;
	int k;

	raw_spin_lock(&sem->wait_lock);
	granted = sem->readers >> current->idx & 1;
	for (k = 0; k < sem->nr_waiters; k++)
		if (sem->waiters[k].thread == current->idx)
			granted = false;
	raw_spin_unlock(&sem->wait_lock);
	return granted;
}

void rwsem_down_read_wait(int who)
{
	step_wait(L_rwsem_down_read_slowpath, read_granted, rwsem_of(who, L_rwsem_down_read_slowpath));
	step_end(L_rwsem_down_read_slowpath, who);
}

void up_read(int who, enum label label)
{
	struct rw_semaphore *sem;
	bool wake;

	step_begin(label);
	sem = rwsem_of(who, label);
	raw_spin_lock(&sem->wait_lock);
	sem->readers &= ~(1u << current->idx);
	wake = !sem->readers && sem->owner == NOBODY && sem->nr_waiters;
	raw_spin_unlock(&sem->wait_lock);
	step_end(label, who);
	if (!wake)
		return;
	step_begin(L_rwsem_wake);
	sem = rwsem_of(who, L_rwsem_wake);
	raw_spin_lock(&sem->wait_lock);
	rwsem_mark_wake(sem, false);
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_rwsem_wake, who);
}

/* rwsem_try_write_lock by a queued writer: take the free lock unless HANDOFF reserves it for another. */
static bool try_write_lock(struct rw_semaphore *sem, int i)
{
	if (sem->owner != NOBODY || sem->readers || (sem->handoff && sem->waiters[0].thread != i))
		return false;
	remove_waiter(sem, i);
	sem->owner = i;
	sem->handoff = false;
	return true;
}

static bool may_set_handoff(const struct rw_semaphore *sem)
{
	return (sem->owner != NOBODY || sem->readers) && !sem->handoff;
}

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

struct write_wait {
	struct rw_semaphore *sem;
	long since;
};

/* Woken (a queued writer polls): retry once it could take the lock, or set HANDOFF after the timeout. */
static bool write_retry_enabled(void *arg)
{
	struct write_wait *w = arg;
	struct rw_semaphore *sem = w->sem;
	bool ok;

	raw_spin_lock(&sem->wait_lock);
	ok = sem->owner == NOBODY && !sem->readers && (!sem->handoff || sem->waiters[0].thread == current->idx);
	if (!ok)
		ok = may_set_handoff(sem) && now_ns() - w->since >= RWSEM_WAIT_TIMEOUT_NS;
	raw_spin_unlock(&sem->wait_lock);
	return ok;
}

void down_write(int who)
{
	struct rw_semaphore *sem;
	struct write_wait w;
	int i = current->idx;
	bool first;

	step_begin(L_down_write);
	sem = rwsem_of(who, L_down_write);
	raw_spin_lock(&sem->wait_lock);
	if (is_free(sem))			/* rwsem_write_trylock */
		sem->owner = i;
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_down_write, who);
	if (sem->owner == i)
		return;

	step_begin(L_rwsem_optimistic_spin);
	sem = rwsem_of(who, L_rwsem_optimistic_spin);
	raw_spin_lock(&sem->wait_lock);
	if (sem->owner == NOBODY && !sem->readers && !sem->handoff)	/* rwsem_try_write_lock_unqueued */
		sem->owner = i;
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_rwsem_optimistic_spin, who);
	if (sem->owner == i)
		return;

	step_begin(L_rwsem_down_write_slowpath);
	sem = rwsem_of(who, L_rwsem_down_write_slowpath);
	raw_spin_lock(&sem->wait_lock);
	first = !sem->nr_waiters;
	add_waiter(sem, i, true);
	if (!first)
		rwsem_cond_wake_waiter(sem);
	try_write_lock(sem, i);
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_rwsem_down_write_slowpath, who);
	w = (struct write_wait){ sem, now_ns() };
	while (sem->owner != i) {
		step_wait(L_rwsem_try_write_lock, write_retry_enabled, &w);
		sem = rwsem_of(who, L_rwsem_try_write_lock);
		raw_spin_lock(&sem->wait_lock);
		if (!try_write_lock(sem, i) && may_set_handoff(sem))
			sem->handoff = true;
		raw_spin_unlock(&sem->wait_lock);
		step_end(L_rwsem_try_write_lock, who);
		w.since = now_ns();
	}
}

void up_write(int who)
{
	struct rw_semaphore *sem;

	step_begin(L_up_write);
	sem = rwsem_of(who, L_up_write);
	raw_spin_lock(&sem->wait_lock);
	sem->owner = NOBODY;
	rwsem_mark_wake(sem, false);		/* rwsem_wake if RWSEM_FLAG_WAITERS */
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_up_write, who);
}

void downgrade_write(int who)
{
	struct rw_semaphore *sem;

	step_begin(L_downgrade_write);
	sem = rwsem_of(who, L_downgrade_write);
	raw_spin_lock(&sem->wait_lock);
	sem->owner = NOBODY;
	rwsem_add_reader(sem, current->idx);
	rwsem_mark_wake(sem, true);		/* rwsem_downgrade_wake */
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_downgrade_write, who);
}
