/* SPDX-License-Identifier: GPL-2.0 */
/* kernel/locking/qspinlock.c uses BUILD_BUG_ON() from here; the lab keeps it in <linux/compiler.h>. */
#ifndef LAB_LINUX_BUG_H
#define LAB_LINUX_BUG_H

#include <linux/compiler.h>

#endif /* LAB_LINUX_BUG_H */
