/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The atomic_t operations and xchg the ported locks use (include/linux/atomic*.h,
 * Documentation/atomic_t.txt), built on GCC's __atomic builtins.
 *
 * Mixed-size atomics: the qspinlock does RmW operations on the 32-bit word while other CPUs
 * store to its byte and halfword parts (locked, pending, locked_pending, tail).  C11 forbids
 * mixing atomic access sizes on one object; the kernel relies on the hardware's mixed-size
 * semantics instead (Documentation/atomic_t.txt; the x86 BTSL comment in arch/x86's
 * qspinlock.h).  The lab does the same: the __atomic builtins accept plain u8/u16/u32 lvalues
 * of the union in struct qspinlock and compile to the instruction of that size (byte/halfword
 * stores, lharx/sthcx., ldxrh/stxrh or swph, xchg %ax).  tests/labcheck.py checks the xchg_tail
 * instructions in every build.
 *
 * A failed cmpxchg gives no ordering, as in the kernel; fully ordered RmW operations are
 * __ATOMIC_SEQ_CST unless the architecture overrides them in <asm/atomic.h>.
 */
#ifndef LAB_LINUX_ATOMIC_H
#define LAB_LINUX_ATOMIC_H

#include <linux/types.h>
#include <linux/compiler.h>
#include <asm/barrier.h>
#include <asm/atomic.h>

#define atomic_read(v)			READ_ONCE((v)->counter)
#define atomic_set(v, i)		WRITE_ONCE((v)->counter, (i))

#define __lab_try_cmpxchg(v, oldp, new, order)				\
	__atomic_compare_exchange_n(&(v)->counter, (int *)(oldp), (int)(new),	\
				    false, (order), __ATOMIC_RELAXED)

#define atomic_try_cmpxchg(v, oldp, new)	__lab_try_cmpxchg(v, oldp, new, __ATOMIC_SEQ_CST)
#define atomic_try_cmpxchg_acquire(v, oldp, new) __lab_try_cmpxchg(v, oldp, new, __ATOMIC_ACQUIRE)
#define atomic_try_cmpxchg_relaxed(v, oldp, new) __lab_try_cmpxchg(v, oldp, new, __ATOMIC_RELAXED)

#define atomic_fetch_or_acquire(i, v)	((u32)__atomic_fetch_or(&(v)->counter, (i), __ATOMIC_ACQUIRE))
#define atomic_andnot(i, v)		((void)__atomic_fetch_and(&(v)->counter, ~(i), __ATOMIC_RELAXED))
#define atomic_add(i, v)		((void)__atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELAXED))

#ifndef atomic_fetch_add
#define atomic_fetch_add(i, v)		((u32)__atomic_fetch_add(&(v)->counter, (i), __ATOMIC_SEQ_CST))
#endif

/* xchg of any size: the qspinlock's xchg_tail() exchanges the 16-bit tail. */
#define xchg_relaxed(ptr, x)		__atomic_exchange_n((ptr), (x), __ATOMIC_RELAXED)

/*
 * Only the plain MCS lock's functions in kernel/locking/mcs_spinlock.h use these, and the
 * qspinlock, which compiles that header, never calls them.  As there, a failed cmpxchg gives no
 * ordering and cmpxchg returns the value it found.
 */
#define xchg(ptr, x)			__atomic_exchange_n((ptr), (x), __ATOMIC_SEQ_CST)
#define cmpxchg_release(ptr, old, new)	({					\
	__typeof__(*(ptr)) __old = (old);					\
	__atomic_compare_exchange_n((ptr), &__old, (new), false,		\
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);	\
	__old;									\
})

#define atomic_cond_read_acquire(v, c)	smp_cond_load_acquire(&(v)->counter, (c))
#define atomic_cond_read_relaxed(v, c)	smp_cond_load_relaxed(&(v)->counter, (c))

#endif /* LAB_LINUX_ATOMIC_H */
