/* SPDX-License-Identifier: GPL-2.0 */
/*
 * powerpc barriers (arch/powerpc/include/asm/barrier.h, PPC64): smp_mb() is sync; smp_rmb(),
 * smp_wmb(), and the release/acquire halves are lwsync around plain accesses.
 */
#ifndef LAB_ASM_PPC_BARRIER_H
#define LAB_ASM_PPC_BARRIER_H

#include <linux/compiler.h>

#define __lwsync()	__asm__ __volatile__("lwsync" : : : "memory")

#define __smp_lwsync()	__lwsync()
#define __smp_mb()	__asm__ __volatile__("sync" : : : "memory")
#define __smp_rmb()	__lwsync()
#define __smp_wmb()	__asm__ __volatile__("lwsync" : : : "memory")

#define __smp_store_release(p, v)					\
do {									\
	__smp_lwsync();							\
	WRITE_ONCE(*p, v);						\
} while (0)

#define __smp_load_acquire(p)						\
({									\
	typeof(*p) ___p1 = READ_ONCE(*p);				\
	__smp_lwsync();							\
	___p1;								\
})

#include <asm-generic/barrier.h>

#endif
