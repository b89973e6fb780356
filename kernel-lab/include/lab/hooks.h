/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Step labels: the one place where the lab's harness touches the ported kernel code.
 *
 * Like PlusCal labels in kernel-tla's qspinlock.tla, STEP() marks the statement after it as one
 * atomic step with a name from the shared kstep contract (see kernel-lab/README.md):
 *
 *	STEP(lock, xchg_tail)
 *		old = xchg_tail(lock, tail);
 *
 * STEP_TEST() is the same for a step whose value the kernel code tests at once
 * ("if (queued_spin_trylock(lock)) goto release;").  A step must not jump out of itself.
 *
 * With LAB_HOOKS=0 (the benchmark build) both compile to the bare statement.  With LAB_HOOKS=1
 * (the torture build) each step counts itself per CPU, remembers itself as the CPU's last step
 * (a hang report names where every CPU waits), and, when the harness asks for it, waits a seeded
 * random delay first or runs under the global log mutex and writes one observation-log line.
 * Spin loops call lab_spin_hook() between polls (from cpu_relax() and the arm64 wait), so a
 * waiting step lets go of the log mutex between polls and is logged once, when its condition holds,
 * and a waiter can give its processor to the thread it waits for when there are more CPU threads
 * than processors (the kernel's spinning CPUs are never preempted; userspace threads are).
 */
#ifndef LAB_HOOKS_H
#define LAB_HOOKS_H

#ifndef LAB_HOOKS
#define LAB_HOOKS 1
#endif

/* Every label either lock can take, in 6.12 order; the names are the contract's. */
#define LAB_LABELS(X)							\
	X(queued_spin_lock)						\
	X(wait_pending_handover)					\
	X(queued_fetch_set_pending_acquire)				\
	X(trylock_pending_cmpxchg)	/* before-set-locked only */	\
	X(clear_pending)						\
	X(wait_locked_clear)						\
	X(clear_pending_set_locked)					\
	X(node_count_inc)						\
	X(mcs_node_init)						\
	X(queued_spin_trylock)						\
	X(xchg_tail)							\
	X(link_prev)							\
	X(mcs_spin)							\
	X(wait_head)							\
	X(claim_cmpxchg)						\
	X(set_locked)							\
	X(wait_next)							\
	X(mcs_handoff)							\
	X(release_node)							\
	X(critical_section)	/* the harness's, not the lock's */	\
	X(queued_spin_unlock)						\
	X(arch_spin_lock)						\
	X(wait_ticket)							\
	X(arch_spin_unlock)

enum lab_label {
#define LAB_LABEL_ENUM(name) LAB_##name,
	LAB_LABELS(LAB_LABEL_ENUM)
#undef LAB_LABEL_ENUM
	LAB_NR_LABELS
};

#if LAB_HOOKS

#include <stdint.h>

/* What the harness keeps per CPU for the hooks (one cache line of its own per CPU). */
struct lab_cpu {
	uint64_t counts[LAB_NR_LABELS];	/* steps begun, per label */
	int last;			/* the label of the step begun last (read by the watchdog) */
	int in_step;			/* inside a logged step: holding the log mutex */
	const void *step_lock;		/* the lock word that step logs */
	uint32_t before;		/* the word when the step's memory action happened */
	uint64_t prng;			/* splitmix64 state for step delays */
	unsigned int polls;		/* polls since this CPU last yielded (LAB_MODE_YIELD) */
} __attribute__((aligned(64)));

extern __thread struct lab_cpu *lab_this_cpu;
extern int lab_hook_mode;		/* LAB_MODE_* bits, set before the CPUs start */
#define LAB_MODE_LOG		1
#define LAB_MODE_STEP_DELAY	2
#define LAB_MODE_YIELD		4	/* more CPU threads than processors: see torture.c */

void lab_step_begin_slow(enum lab_label label, const void *lock);
void lab_step_end_slow(enum lab_label label, const void *lock);
void lab_spin_hook_slow(void);

static inline __attribute__((__always_inline__))
void lab_step_begin(enum lab_label label, const void *lock)
{
	struct lab_cpu *c = lab_this_cpu;

	c->counts[label]++;
	__atomic_store_n(&c->last, label, __ATOMIC_RELAXED);
	if (__builtin_expect(lab_hook_mode != 0, 0))
		lab_step_begin_slow(label, lock);
}

static inline __attribute__((__always_inline__))
void lab_step_end(enum lab_label label, const void *lock)
{
	if (__builtin_expect(lab_hook_mode & LAB_MODE_LOG, 0))
		lab_step_end_slow(label, lock);
}

static inline __attribute__((__always_inline__)) void lab_spin_hook(void)
{
	if (__builtin_expect(lab_hook_mode & (LAB_MODE_LOG | LAB_MODE_YIELD), 0))
		lab_spin_hook_slow();
}

#define STEP(lock, label)						\
	for (int __lab_once = (lab_step_begin(LAB_##label, (lock)), 1);	\
	     __lab_once;						\
	     lab_step_end(LAB_##label, (lock)), __lab_once = 0)

#define STEP_TEST(lock, label, expr) ({					\
	lab_step_begin(LAB_##label, (lock));				\
	__auto_type __lab_r = (expr);					\
	lab_step_end(LAB_##label, (lock));				\
	__lab_r;							\
})

#else /* !LAB_HOOKS */

#define STEP(lock, label)
#define STEP_TEST(lock, label, expr)	(expr)
static inline __attribute__((__always_inline__)) void lab_spin_hook(void) { }

#endif /* LAB_HOOKS */

#endif /* LAB_HOOKS_H */
