// SPDX-License-Identifier: GPL-2.0
/*
 * One variant of the queued spinlock as a lab lock.  The Makefile compiles this file once per
 * variant and word layout with -DLAB_VARIANT_ID=<ID> -DLAB_VARIANT_<ID> and CONFIG_NR_CPUS;
 * like the kernel's "#define queued_spin_lock_slowpath native_queued_spin_lock_slowpath", the
 * slow path gets a name of its own in each object.
 */
#include "lab_lock.h"

#define __LAB_PASTE(a, b, c)	a##_##b##_pb##c
#define _LAB_PASTE(a, b, c)	__LAB_PASTE(a, b, c)
#define LAB_NAME(prefix)	_LAB_PASTE(prefix, LAB_VARIANT_ID, LAB_PENDING_BITS)

#define queued_spin_lock_slowpath LAB_NAME(queued_spin_lock_slowpath)

#include "qspinlock.c"

_Static_assert(_Q_PENDING_BITS == LAB_PENDING_BITS, "CONFIG_NR_CPUS gives the other word layout");
_Static_assert(sizeof(struct qspinlock) <= sizeof(union lab_lock_storage), "lock too big");
_Static_assert(MAX_NODES == LAB_MAX_NODES, "lab_lock.h has another node count");

static void lab_init(void *lock)
{
	atomic_set(&((struct qspinlock *)lock)->val, 0);
}

static void lab_lock(void *lock)
{
	queued_spin_lock(lock);
}

static void lab_unlock(void *lock)
{
	queued_spin_unlock(lock);
}

/*
 * The MCS fields of @cpu for its observation-log line.  The lab's CPUs never nest (one thread,
 * one context), so a CPU whose count is not 0 holds node count - 1.
 */
static void lab_mcs(int cpu, struct lab_mcs *out)
{
	struct mcs_spinlock *base = per_cpu_ptr(&qnodes[0].mcs, cpu);
	struct mcs_spinlock *node;

	out->count = READ_ONCE(base->count);
	out->idx = out->count >= 1 && out->count <= MAX_NODES ? out->count - 1 : -1;
	out->locked = -1;
	out->next = NULL;
	if (out->idx < 0)
		return;
	node = grab_mcs_node(base, out->idx);
	out->locked = READ_ONCE(node->locked);
	out->next = READ_ONCE(node->next);
}

static const void *lab_node(int cpu, int idx)
{
	return per_cpu_ptr(&qnodes[idx].mcs, cpu);
}

const struct lab_lock_ops LAB_NAME(lab_qspinlock) = {
	.init = lab_init,
	.lock = lab_lock,
	.unlock = lab_unlock,
	.pending_bits = _Q_PENDING_BITS,
	.mcs = lab_mcs,
	.node = lab_node,
};
