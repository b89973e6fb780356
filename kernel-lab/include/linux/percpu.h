/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU data for a lab where every thread is a CPU.
 *
 * A per-CPU variable is a thread-local one, so this_cpu_ptr() is the thread's own copy.  As in
 * the kernel, another CPU's copy is "the same offset from that CPU's per-CPU base": every thread
 * records the address of one thread-local anchor (lab_percpu_register()), and per_cpu_ptr() moves
 * a pointer from this thread's block to that CPU's.  That holds because a static binary has one
 * static TLS block with the same layout in every thread.
 */
#ifndef LAB_LINUX_PERCPU_H
#define LAB_LINUX_PERCPU_H

#include <stdint.h>

#ifndef CONFIG_NR_CPUS
#define CONFIG_NR_CPUS 64
#endif

/* The lab runs at most this many CPU threads, whatever CONFIG_NR_CPUS says about the layout. */
#define LAB_MAX_CPUS 64

extern __thread char lab_percpu_anchor;
extern __thread int lab_cpu_id;
extern char *lab_percpu_base[LAB_MAX_CPUS];

/* Make the calling thread CPU @cpu. */
static inline void lab_percpu_register(int cpu)
{
	lab_cpu_id = cpu;
	lab_percpu_base[cpu] = &lab_percpu_anchor;
}

#define DEFINE_PER_CPU_ALIGNED(type, name) \
	__thread type name __attribute__((__aligned__(64)))

#define smp_processor_id()	(lab_cpu_id)
#define this_cpu_ptr(ptr)	(ptr)
#define per_cpu_ptr(ptr, cpu)						\
	((__typeof__(ptr))((char *)(ptr) - &lab_percpu_anchor + lab_percpu_base[(cpu)]))
#define __this_cpu_dec(var)	((var)--)

#endif /* LAB_LINUX_PERCPU_H */
