/* SPDX-License-Identifier: GPL-2.0 */
/* How the torture harness drives a lock: one table entry per lock, variant and word layout. */
#ifndef LAB_LOCK_H
#define LAB_LOCK_H

struct lab_lock_ops {
	void (*init)(void *lock);
	void (*lock)(void *lock);
	void (*unlock)(void *lock);
	int pending_bits;		/* the qspinlock word layout; 0 for other locks */
};

/* Room for any of the locks (a qspinlock or ticket word, a pthread lock), on its own cache line. */
union lab_lock_storage {
	unsigned int word;
	char bytes[64];
} __attribute__((__aligned__(64)));

#endif
