/* SPDX-License-Identifier: GPL-2.0 */
/*
 * powerpc cpu_relax() (arch/powerpc/include/asm/vdso/processor.h): before POWER10, drop the SMT
 * thread to low priority and back ("or 1,1,1; or 2,2,2"); the kernel patches in "wait 2,0" on
 * POWER10, which the lab does not do.
 */
#ifndef LAB_ASM_PPC_PROCESSOR_H
#define LAB_ASM_PPC_PROCESSOR_H

#include <lab/hooks.h>

static inline __attribute__((__always_inline__)) void cpu_relax(void)
{
	lab_spin_hook();
	__asm__ __volatile__("or 1,1,1 ; or 2,2,2" : : : "memory");
}

#endif
