/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lab runs the generic qspinlock on ppc64le to exercise its mixed-size atomics
 * (lharx/sthcx. for the tail, byte and halfword stores) on a second weakly ordered ISA.
 * Linux 6.12 itself does not: powerpc has its own queued lock since v6.2
 * (arch/powerpc/lib/qspinlock.c: no pending bit, lock stealing, owner CPU in the word).
 */
#ifndef LAB_ASM_PPC_QSPINLOCK_H
#define LAB_ASM_PPC_QSPINLOCK_H
#include <asm-generic/qspinlock_types.h>

#include <asm-generic/qspinlock.h>

#endif
