/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kernel/locking/qspinlock.c includes <linux/smp.h> for smp_processor_id(); in the lab a CPU is a
 * thread and its number is per-CPU (thread-local) data, so <linux/percpu.h> has it.  The kernel's
 * smp.h also reaches <linux/export.h>, which the file's EXPORT_SYMBOL() needs.
 */
#ifndef LAB_LINUX_SMP_H
#define LAB_LINUX_SMP_H

#include <linux/percpu.h>
#include <linux/export.h>

#endif /* LAB_LINUX_SMP_H */
