/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rw_semaphore rules of Linux 6.12 (kernel/locking/rwsem.c) as simulator/kstep/models/vma_locks/rwsem.py
 * states them, once for every port: each function is one decision of the kernel function it is
 * named after, on the state the model keeps (owner, the readers as a bitmask, the wait list,
 * HANDOFF). The caller makes each call atomic (a port's step, its wait_lock) and does the waiting.
 */
#ifndef LAB_RWSEM_H
#define LAB_RWSEM_H

#include <stdbool.h>
#include <stdint.h>

#define RWSEM_MAX_THREADS	16	/* the model's MAX_THREADS: readers are a bitmask */

struct rwsem_waiter {
	int thread;
	bool write;
};

/* What sem->count, sem->owner and sem->wait_list say (zeroed: free). */
struct rwsem {
	int owner;		/* 1 + the thread holding it for write (RWSEM_WRITER_LOCKED); 0: none */
	uint32_t readers;	/* bit i: thread i holds it for read */
	int nr_waiters;		/* non-zero: RWSEM_FLAG_WAITERS */
	struct rwsem_waiter waiters[RWSEM_MAX_THREADS];	/* first in line first */
	bool handoff;		/* RWSEM_FLAG_HANDOFF: reserved for the first waiter */
};

/* 6.12's sem->count for logs: WRITER_LOCKED bit 0, FLAG_WAITERS bit 1, FLAG_HANDOFF bit 2, readers from bit 8. */
uint32_t rwsem_count(const struct rwsem *sem);
bool rwsem_is_write_owner(const struct rwsem *sem, int i);
bool rwsem_holds_read(const struct rwsem *sem, int i);
/* down_read's fast path (rwsem_read_trylock): no writer, nobody queued, no HANDOFF. */
bool rwsem_read_trylock_ok(const struct rwsem *sem);
void rwsem_add_reader(struct rwsem *sem, int i);
/* rwsem_down_read_slowpath: steal it, or queue (true). */
bool rwsem_down_read_slowpath(struct rwsem *sem, int i);
/* A queued reader: rwsem_mark_wake granted it the lock. */
bool rwsem_read_granted(const struct rwsem *sem, int i);
/* rwsem_write_trylock: true: i owns it. */
bool rwsem_write_trylock(struct rwsem *sem, int i);
/* rwsem_try_write_lock_unqueued (rwsem_optimistic_spin): queued waiters do not matter, HANDOFF does. */
bool rwsem_try_write_lock_unqueued(struct rwsem *sem, int i);
/* rwsem_down_write_slowpath: queue, wake queued readers if not first, then try once; true: owns it. */
bool rwsem_down_write_slowpath(struct rwsem *sem, int i);
/* A queued writer could take it now: free, and HANDOFF (if set) reserves it for i. */
bool rwsem_write_lock_free(const struct rwsem *sem, int i);
/* The lock is held and HANDOFF clear: a waiter who waited long enough may set it. */
bool rwsem_may_set_handoff(const struct rwsem *sem);
/* rwsem_try_write_lock by a queued writer: take it, else set HANDOFF if it may; true: owns it. */
bool rwsem_try_write_lock(struct rwsem *sem, int i);
/* __up_read: true when it was the last holder and waiters are queued (rwsem_wake follows). */
bool __up_read(struct rwsem *sem, int i);
/* rwsem_wake -> rwsem_mark_wake(RWSEM_WAKE_ANY). */
void rwsem_wake(struct rwsem *sem);
/* __up_write, then rwsem_wake. */
void rwsem_up_write(struct rwsem *sem);
/* __downgrade_write: the writer i becomes a reader; rwsem_downgrade_wake. */
void rwsem_downgrade_write(struct rwsem *sem, int i);

#endif /* LAB_RWSEM_H */
