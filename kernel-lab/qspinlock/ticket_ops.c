// SPDX-License-Identifier: GPL-2.0
/* The Linux 6.12 generic ticket lock (include/asm-generic/spinlock.h) as a lab lock. */
#include <asm-generic/spinlock.h>
#include "lab_lock.h"

static void lab_init(void *lock)
{
	atomic_set((arch_spinlock_t *)lock, 0);
}

static void lab_lock(void *lock)
{
	arch_spin_lock(lock);
}

static void lab_unlock(void *lock)
{
	arch_spin_unlock(lock);
}

const struct lab_lock_ops lab_ticket = {
	.init = lab_init,
	.lock = lab_lock,
	.unlock = lab_unlock,
};
