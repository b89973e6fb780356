/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64 barriers (arch/arm64/include/asm/barrier.h).  smp_store_release()/smp_load_acquire()
 * are STLR/LDAR of the access size; GCC's __ATOMIC_RELEASE/__ATOMIC_ACQUIRE stores and loads
 * compile to exactly those (stlrb/stlrh/stlr, ldarb/ldarh/ldar).  smp_cond_load_*() wait with
 * __cmpwait_relaxed() instead of cpu_relax(), so spinning is event-driven.
 */
#ifndef LAB_ASM_ARM64_BARRIER_H
#define LAB_ASM_ARM64_BARRIER_H

#include <linux/compiler.h>
#include <lab/hooks.h>
#include <asm/cmpxchg.h>

#define dmb(opt)	__asm__ __volatile__("dmb " #opt : : : "memory")

#define __smp_mb()	dmb(ish)
#define __smp_rmb()	dmb(ishld)
#define __smp_wmb()	dmb(ishst)

#define __smp_store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define __smp_load_acquire(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)

#define smp_cond_load_relaxed(ptr, cond_expr)				\
({									\
	typeof(ptr) __PTR = (ptr);					\
	__typeof__(*ptr) VAL;						\
	for (;;) {							\
		VAL = READ_ONCE(*__PTR);				\
		if (cond_expr)						\
			break;						\
		lab_spin_hook();					\
		__cmpwait_relaxed(__PTR, VAL);				\
	}								\
	(typeof(*ptr))VAL;						\
})

#define smp_cond_load_acquire(ptr, cond_expr)				\
({									\
	typeof(ptr) __PTR = (ptr);					\
	__typeof__(*ptr) VAL;						\
	for (;;) {							\
		VAL = smp_load_acquire(__PTR);				\
		if (cond_expr)						\
			break;						\
		lab_spin_hook();					\
		__cmpwait_relaxed(__PTR, VAL);				\
	}								\
	(typeof(*ptr))VAL;						\
})

#include <asm-generic/barrier.h>

#endif
