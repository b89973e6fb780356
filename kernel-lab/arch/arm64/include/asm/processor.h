/* SPDX-License-Identifier: GPL-2.0 */
/* arm64 cpu_relax(): arch/arm64/include/asm/vdso/processor.h. */
#ifndef LAB_ASM_ARM64_PROCESSOR_H
#define LAB_ASM_ARM64_PROCESSOR_H

#include <lab/hooks.h>

static inline __attribute__((__always_inline__)) void cpu_relax(void)
{
	lab_spin_hook();
	__asm__ __volatile__("yield" : : : "memory");
}

#endif
