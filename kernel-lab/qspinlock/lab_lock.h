/* SPDX-License-Identifier: GPL-2.0 */
/* How the torture harness drives a lock: one table entry per lock, variant and word layout. */
#ifndef LAB_LOCK_H
#define LAB_LOCK_H

/*
 * What an observation log records of a CPU's MCS nodes after each step: its nesting count
 * (qnodes[0].mcs.count) and the node it holds (idx -1: none), with that node's locked flag and
 * next pointer (the harness names it with node()).
 */
#define LAB_MAX_NODES	4	/* MCS nodes per CPU: qspinlock.c's MAX_NODES */

struct lab_mcs {
	int count, idx, locked;
	const void *next;
};

struct lab_lock_ops {
	void (*init)(void *lock);
	void (*lock)(void *lock);
	void (*unlock)(void *lock);
	int pending_bits;		/* the qspinlock word layout; 0 for other locks */
	/* For locks with MCS nodes (else NULL): a CPU's fields, and where node idx of a CPU is. */
	void (*mcs)(int cpu, struct lab_mcs *out);
	const void *(*node)(int cpu, int idx);
};

/* Room for any of the locks (a qspinlock or ticket word, a pthread lock), on its own cache line. */
union lab_lock_storage {
	unsigned int word;
	char bytes[64];
} __attribute__((__aligned__(64)));

#endif
