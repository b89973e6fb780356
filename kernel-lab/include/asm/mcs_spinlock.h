/* SPDX-License-Identifier: GPL-2.0 */
/*
 * None of the lab's architectures overrides arch_mcs_spin_{lock,unlock}_contended(): each takes
 * the generic header, as their Kbuild's "generic-y += mcs_spinlock.h" does.
 */
#include <asm-generic/mcs_spinlock.h>
