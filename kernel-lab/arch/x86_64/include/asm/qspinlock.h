/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86's qspinlock overrides (arch/x86/include/asm/qspinlock.h, native, without paravirt).
 *
 * queued_fetch_set_pending_acquire() is LOCK BTSL on the whole 32-bit word plus a re-read of
 * the other bits: a 32-bit RmW by design (7aa54be29765 "locking/qspinlock, x86: Provide
 * liveness guarantee"; PeterZ: "I hard rely on BTSL to be a 32bit RmW").  The re-read is a
 * second load, so the value returned is not one snapshot of the word; the lab logs the pair as
 * the one step the kernel treats it as.
 */
#ifndef LAB_ASM_X86_QSPINLOCK_H
#define LAB_ASM_X86_QSPINLOCK_H

#include <asm-generic/qspinlock_types.h>
#include <linux/atomic.h>

#define _Q_PENDING_LOOPS	(1 << 9)

#define queued_fetch_set_pending_acquire queued_fetch_set_pending_acquire
static __always_inline u32 queued_fetch_set_pending_acquire(struct qspinlock *lock)
{
	bool was_set;
	u32 val;

	__asm__ __volatile__("lock btsl %[bit], %[var]"
			     : "=@ccc" (was_set), [var] "+m" (lock->val.counter)
			     : [bit] "I" (_Q_PENDING_OFFSET)
			     : "memory");
	val = was_set * _Q_PENDING_VAL;
	val |= atomic_read(&lock->val) & ~_Q_PENDING_MASK;

	return val;
}


#include <asm-generic/qspinlock.h>

#endif
