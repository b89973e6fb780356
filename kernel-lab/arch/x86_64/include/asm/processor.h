/* SPDX-License-Identifier: GPL-2.0 */
/* x86_64 cpu_relax(): arch/x86/include/asm/vdso/processor.h, rep_nop() is PAUSE. */
#ifndef LAB_ASM_X86_PROCESSOR_H
#define LAB_ASM_X86_PROCESSOR_H

#include <lab/hooks.h>

static inline __attribute__((__always_inline__)) void cpu_relax(void)
{
	lab_spin_hook();
	__asm__ __volatile__("rep; nop" : : : "memory");
}

#endif
