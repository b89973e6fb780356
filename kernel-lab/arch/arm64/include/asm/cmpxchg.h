/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64 __cmpwait() (arch/arm64/include/asm/cmpxchg.h): arm the exclusive monitor on the waited
 * location with LDXR and sleep in WFE until it is written (or the event stream ticks).  The kernel
 * allows WFE at EL0, so the same code runs in userspace; qemu-user treats WFE as a yield.
 */
#ifndef LAB_ASM_ARM64_CMPXCHG_H
#define LAB_ASM_ARM64_CMPXCHG_H

#include <linux/types.h>

#define __CMPWAIT_CASE(w, sfx, sz)					\
static inline void __cmpwait_case_##sz(volatile void *ptr,		\
				       unsigned long val)		\
{									\
	unsigned long tmp;						\
									\
	__asm__ __volatile__(						\
	"	sevl\n"							\
	"	wfe\n"							\
	"	ldxr" #sfx "\t%" #w "[tmp], %[v]\n"			\
	"	eor	%" #w "[tmp], %" #w "[tmp], %" #w "[val]\n"	\
	"	cbnz	%" #w "[tmp], 1f\n"				\
	"	wfe\n"							\
	"1:"								\
	: [tmp] "=&r" (tmp), [v] "+Q" (*(u##sz *)ptr)			\
	: [val] "r" (val));						\
}

__CMPWAIT_CASE(w, b, 8);
__CMPWAIT_CASE(w, h, 16);
__CMPWAIT_CASE(w,  , 32);
__CMPWAIT_CASE( ,  , 64);

#undef __CMPWAIT_CASE

static __always_inline void __cmpwait(volatile void *ptr, unsigned long val, int size)
{
	switch (size) {
	case 1:
		return __cmpwait_case_8(ptr, (u8)val);
	case 2:
		return __cmpwait_case_16(ptr, (u16)val);
	case 4:
		return __cmpwait_case_32(ptr, val);
	case 8:
		return __cmpwait_case_64(ptr, val);
	}
}

#define __cmpwait_relaxed(ptr, val) \
	__cmpwait((ptr), (unsigned long)(val), sizeof(*(ptr)))

#endif
