// SPDX-License-Identifier: GPL-2.0
/*
 * Drives common/rwsem.c by a script on stdin, one call per line, and prints the rwsem after each, so
 * simulator/tests/test_rwsem_port.py can hold the C rules that every port shares against the
 * model's (simulator/kstep/models/vma_locks/rwsem.py) on the same scripts:
 *
 *   r I  down_read by thread I: rwsem_read_trylock, else rwsem_down_read_slowpath (steal or queue)
 *   w I  down_write: rwsem_write_trylock, else rwsem_optimistic_spin, else rwsem_down_write_slowpath
 *   t I  a queued writer's rwsem_try_write_lock once RWSEM_WAIT_TIMEOUT has passed (may set HANDOFF)
 *   u I  up_read (__up_read, then rwsem_wake if it was the last holder with waiters queued)
 *   U I  up_write
 *   d I  downgrade_write
 *
 * Output per call: "count=0x... owner=N readers=0x... waiters=I:r,J:w" (owner -1: none).
 */
#include <stdio.h>

#include "check.h"
#include "rwsem.h"

static void show(const struct rwsem *sem)
{
	printf("count=%#x owner=%d readers=%#x waiters=", rwsem_count(sem), sem->owner - 1, sem->readers);
	for (int k = 0; k < sem->nr_waiters; k++)
		printf("%s%d:%c", k ? "," : "", sem->waiters[k].thread, sem->waiters[k].write ? 'w' : 'r');
	putchar('\n');
}

int main(void)
{
	struct rwsem sem = { 0 };
	char op;
	int i;

	while (scanf(" %c %d", &op, &i) == 2) {
		LAB_CHECK(i >= 0 && i < RWSEM_MAX_THREADS);
		switch (op) {
		case 'r':
			if (rwsem_read_trylock_ok(&sem))
				rwsem_add_reader(&sem, i);
			else
				rwsem_down_read_slowpath(&sem, i);
			break;
		case 'w':
			if (!rwsem_write_trylock(&sem, i) && !rwsem_try_write_lock_unqueued(&sem, i))
				rwsem_down_write_slowpath(&sem, i);
			break;
		case 't':
			rwsem_try_write_lock(&sem, i);
			break;
		case 'u':
			if (__up_read(&sem, i))
				rwsem_wake(&sem);
			break;
		case 'U':
			LAB_CHECK(rwsem_is_write_owner(&sem, i));
			rwsem_up_write(&sem);
			break;
		case 'd':
			LAB_CHECK(rwsem_is_write_owner(&sem, i));
			rwsem_downgrade_write(&sem, i);
			break;
		default:
			fprintf(stderr, "rwsem-check: unknown call '%c'\n", op);
			return 2;
		}
		show(&sem);
	}
	return 0;
}
