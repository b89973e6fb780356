/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kernel/locking/qspinlock.c includes <linux/cpumask.h> but uses nothing of it in the native slow
 * path that the lab builds (only the paravirt one, which CONFIG_PARAVIRT_SPINLOCKS=n leaves out).
 */
#ifndef LAB_LINUX_CPUMASK_H
#define LAB_LINUX_CPUMASK_H
#endif /* LAB_LINUX_CPUMASK_H */
