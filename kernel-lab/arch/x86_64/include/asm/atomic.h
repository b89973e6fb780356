/* SPDX-License-Identifier: GPL-2.0 */
/* x86_64: every locked RmW is fully ordered; the generic __ATOMIC_SEQ_CST mapping is the kernel's. */
#ifndef LAB_ASM_X86_ATOMIC_H
#define LAB_ASM_X86_ATOMIC_H
#endif
