/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Generic barriers (include/asm-generic/barrier.h): smp_*() in terms of the architecture's
 * __smp_*(), and the generic spin-wait helpers an architecture may override.
 * Included at the end of each arch's asm/barrier.h, as in the kernel.
 */
#ifndef LAB_ASM_GENERIC_BARRIER_H
#define LAB_ASM_GENERIC_BARRIER_H

#include <linux/compiler.h>
#include <asm/processor.h>

/* The kernel strips qualifiers with _Generic; the lab's waited-on fields carry none. */
#define __unqual_scalar_typeof(x)	__typeof__(x)

#define smp_mb()			__smp_mb()
#define smp_rmb()			__smp_rmb()
#define smp_wmb()			__smp_wmb()
#define smp_store_release(p, v)		__smp_store_release(p, v)
#define smp_load_acquire(p)		__smp_load_acquire(p)

/* include/asm-generic/barrier.h:130-135, :163-168: a full barrier unless the architecture says less. */
#ifndef __smp_mb__before_atomic
#define __smp_mb__before_atomic()	__smp_mb()
#endif
#ifndef __smp_mb__after_atomic
#define __smp_mb__after_atomic()	__smp_mb()
#endif
#define smp_mb__before_atomic()		__smp_mb__before_atomic()
#define smp_mb__after_atomic()		__smp_mb__after_atomic()

#ifndef smp_acquire__after_ctrl_dep
#define smp_acquire__after_ctrl_dep()	smp_rmb()
#endif

#ifndef smp_cond_load_relaxed
#define smp_cond_load_relaxed(ptr, cond_expr) ({		\
	typeof(ptr) __PTR = (ptr);				\
	__unqual_scalar_typeof(*ptr) VAL;			\
	for (;;) {						\
		VAL = READ_ONCE(*__PTR);			\
		if (cond_expr)					\
			break;					\
		cpu_relax();					\
	}							\
	(typeof(*ptr))VAL;					\
})
#endif

#ifndef smp_cond_load_acquire
#define smp_cond_load_acquire(ptr, cond_expr) ({		\
	__unqual_scalar_typeof(*ptr) _val;			\
	_val = smp_cond_load_relaxed(ptr, cond_expr);		\
	smp_acquire__after_ctrl_dep();				\
	(typeof(*ptr))_val;					\
})
#endif

#endif /* LAB_ASM_GENERIC_BARRIER_H */
