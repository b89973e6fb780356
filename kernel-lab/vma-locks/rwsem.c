// SPDX-License-Identifier: GPL-2.0
/*
 * The steps around common/rwsem.c's rw_semaphore rules of Linux 6.12 (kernel/locking/rwsem.c, as
 * simulator/kstep/models/vma_locks/rwsem.py keeps them): each function here is one of the model's
 * steps (or the part of a step that is down_read/up_read), run under the step mutex and always
 * under sem->wait_lock, which alone serializes them in the --bench build of the harness. A queued
 * writer sets RWSEM_FLAG_HANDOFF once it has waited RWSEM_WAIT_TIMEOUT; the log prints the state
 * as 6.12's sem->count would read (rwsem_count).
 */
#include <time.h>

#include "vma_locks.h"

#define RWSEM_WAIT_TIMEOUT_NS	4000000L	/* DIV_ROUND_UP(HZ, 250) jiffies at HZ=250: 4 ms */

struct rw_semaphore *rwsem_of(int who, enum label label)
{
	return who == WHO_MM ? &mm.mmap_lock : &vma_get(who, label)->lock;
}

bool rwsem_read_trylock(struct rw_semaphore *sem, int i)
{
	bool ok;

	raw_spin_lock(&sem->wait_lock);
	ok = rwsem_read_trylock_ok(&sem->state);
	if (ok)
		rwsem_add_reader(&sem->state, i);
	raw_spin_unlock(&sem->wait_lock);
	return ok;
}

bool rwsem_down_read(struct rw_semaphore *sem, int i)
{
	bool queued = false;

	raw_spin_lock(&sem->wait_lock);
	if (rwsem_read_trylock_ok(&sem->state))
		rwsem_add_reader(&sem->state, i);
	else
		queued = rwsem_down_read_slowpath(&sem->state, i);
	raw_spin_unlock(&sem->wait_lock);
	return queued;
}

static bool read_granted(void *arg)
{
	struct rw_semaphore *sem = arg;
	bool granted;

	raw_spin_lock(&sem->wait_lock);
	granted = rwsem_read_granted(&sem->state, current->idx);
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
	wake = __up_read(&sem->state, current->idx);
	raw_spin_unlock(&sem->wait_lock);
	step_end(label, who);
	if (!wake)
		return;
	step_begin(L_rwsem_wake);
	sem = rwsem_of(who, L_rwsem_wake);
	raw_spin_lock(&sem->wait_lock);
	rwsem_wake(&sem->state);
	raw_spin_unlock(&sem->wait_lock);
	step_end(L_rwsem_wake, who);
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
	ok = rwsem_write_lock_free(&sem->state, current->idx) ||
	     (rwsem_may_set_handoff(&sem->state) && now_ns() - w->since >= RWSEM_WAIT_TIMEOUT_NS);
	raw_spin_unlock(&sem->wait_lock);
	return ok;
}

/* The rest of a step begun on `label`: `rule` on the lock under its wait_lock, as thread i. */
static bool locked_step(int who, enum label label, bool (*rule)(struct rwsem *, int),
			struct rw_semaphore **semp)
{
	struct rw_semaphore *sem = rwsem_of(who, label);
	bool owns;

	raw_spin_lock(&sem->wait_lock);
	owns = rule(&sem->state, current->idx);
	raw_spin_unlock(&sem->wait_lock);
	step_end(label, who);
	*semp = sem;
	return owns;
}

static bool write_step(int who, enum label label, bool (*rule)(struct rwsem *, int),
		       struct rw_semaphore **semp)
{
	step_begin(label);
	return locked_step(who, label, rule, semp);
}

void down_write(int who)
{
	struct write_wait w;

	if (write_step(who, L_down_write, rwsem_write_trylock, &w.sem) ||
	    write_step(who, L_rwsem_optimistic_spin, rwsem_try_write_lock_unqueued, &w.sem) ||
	    write_step(who, L_rwsem_down_write_slowpath, rwsem_down_write_slowpath, &w.sem))
		return;
	for (;;) {		/* each retry a step, once it can take the lock or set HANDOFF */
		w.since = now_ns();
		step_wait(L_rwsem_try_write_lock, write_retry_enabled, &w);
		if (locked_step(who, L_rwsem_try_write_lock, rwsem_try_write_lock, &w.sem))
			return;
	}
}

static bool up_write_rule(struct rwsem *sem, int i)
{
	rwsem_up_write(sem);
	return false;
}

void up_write(int who)
{
	struct rw_semaphore *sem;

	write_step(who, L_up_write, up_write_rule, &sem);
}

static bool downgrade_rule(struct rwsem *sem, int i)
{
	rwsem_downgrade_write(sem, i);
	return false;
}

void downgrade_write(int who)
{
	struct rw_semaphore *sem;

	write_step(who, L_downgrade_write, downgrade_rule, &sem);
}
