/* SPDX-License-Identifier: GPL-2.0 */
/*
 * powerpc fully ordered RmW (arch/powerpc/include/asm/atomic.h): the kernel brackets the
 * lwarx/stwcx. loop with PPC_ATOMIC_ENTRY_BARRIER and PPC_ATOMIC_EXIT_BARRIER (both sync), a full
 * barrier on each side.  GCC's __ATOMIC_SEQ_CST sequence ends in isync instead, which is the
 * C11 mapping but not smp_mb(), so the lab spells the kernel's out.  The relaxed and acquire
 * RmWs are GCC's (lwarx/stwcx., then isync for acquire), which match the kernel's.
 */
#ifndef LAB_ASM_PPC_ATOMIC_H
#define LAB_ASM_PPC_ATOMIC_H

#define atomic_fetch_add(i, v) ({						\
	u32 __ret;								\
	__asm__ __volatile__("sync" : : : "memory");				\
	__ret = (u32)__atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELAXED);	\
	__asm__ __volatile__("sync" : : : "memory");				\
	__ret;									\
})

#endif
