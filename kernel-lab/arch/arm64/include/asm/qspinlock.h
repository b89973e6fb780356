/* SPDX-License-Identifier: GPL-2.0 */
/* arm64 uses the generic qspinlock unchanged (arch/arm64/include/asm/Kbuild: generic-y += qspinlock.h). */
#ifndef LAB_ASM_ARM64_QSPINLOCK_H
#define LAB_ASM_ARM64_QSPINLOCK_H
#include <asm-generic/qspinlock_types.h>

#include <asm-generic/qspinlock.h>

#endif
