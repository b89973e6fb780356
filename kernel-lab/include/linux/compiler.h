/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few compiler helpers the ported kernel code uses (include/linux/compiler.h,
 * include/asm-generic/rwonce.h).
 *
 * READ_ONCE()/WRITE_ONCE() are single-copy-atomic plain accesses.  The kernel gets them from
 * volatile; the lab uses GCC's relaxed __atomic loads and stores instead, which compile to the
 * same single load or store instruction and keep the racy accesses defined for the compiler.
 */
#ifndef LAB_LINUX_COMPILER_H
#define LAB_LINUX_COMPILER_H

#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#undef __always_inline		/* glibc's <sys/cdefs.h> has its own, equivalent one */
#define __always_inline		inline __attribute__((__always_inline__))
#define noinline		__attribute__((__noinline__))
#define __pure			__attribute__((__pure__))
#define __lockfunc
#define __user			/* sparse's address-space mark; userspace has one space */

/* The kernel's barrier(): the compiler may not move memory accesses across it. */
#define barrier()		__asm__ __volatile__("" : : : "memory")

#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, val)	__atomic_store_n(&(x), (val), __ATOMIC_RELAXED)

#define BUILD_BUG_ON(cond)	_Static_assert(!(cond), #cond)

#define prefetchw(x)		__builtin_prefetch((x), 1)

#endif /* LAB_LINUX_COMPILER_H */
