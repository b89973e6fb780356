// SPDX-License-Identifier: GPL-2.0
/* The per-CPU registry behind linux/percpu.h: one thread-local anchor per CPU thread. */
#include <linux/percpu.h>

__thread char lab_percpu_anchor;
__thread int lab_cpu_id = -1;
char *lab_percpu_base[LAB_MAX_CPUS];
