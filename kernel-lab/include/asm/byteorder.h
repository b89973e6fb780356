/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The qspinlock's byte and halfword views of its word (struct qspinlock in
 * <asm-generic/qspinlock_types.h>) depend on the byte order.  The lab's three architectures are
 * all little-endian (x86_64, arm64 and ppc64le as Debian builds them).
 */
#ifndef LAB_ASM_BYTEORDER_H
#define LAB_ASM_BYTEORDER_H

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the lab is built for little-endian architectures only"
#endif
#define __LITTLE_ENDIAN 1234

#endif /* LAB_ASM_BYTEORDER_H */
