/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86_64 barriers (arch/x86/include/asm/barrier.h): TSO makes smp_rmb()/smp_wmb() and
 * acquire/release compiler barriers only; smp_mb() is a locked add to the stack.
 */
#ifndef LAB_ASM_X86_BARRIER_H
#define LAB_ASM_X86_BARRIER_H

#include <linux/compiler.h>

#define __smp_mb()	__asm__ __volatile__("lock addl $0,-4(%%rsp)" : : : "memory", "cc")
#define __smp_rmb()	barrier()
#define __smp_wmb()	barrier()

/*
 * Nothing around atomics (arch/x86/include/asm/barrier.h:75-76): every locked RmW is a full
 * barrier.  The kernel's locked instructions carry a "memory" clobber; the lab's __atomic RmW
 * builtins do not stop the compiler from moving relaxed accesses across them, so here the
 * macros keep the compiler's order, which is all the kernel relies on them for.
 */
#define __smp_mb__before_atomic()	barrier()
#define __smp_mb__after_atomic()	barrier()

#define __smp_store_release(p, v)					\
do {									\
	barrier();							\
	WRITE_ONCE(*p, v);						\
} while (0)

#define __smp_load_acquire(p)						\
({									\
	typeof(*p) ___p1 = READ_ONCE(*p);				\
	barrier();							\
	___p1;								\
})

#include <asm-generic/barrier.h>

#endif
