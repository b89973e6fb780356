/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a generated litmus test (kstep.memory.klitmus) and the klitmus harness share.
 *
 * Every shared location of a test is one intptr_t on a cache line of its own (128 bytes: POWER's
 * line) in one "instance"; a value is a number or the address of another location of the same
 * instance (the litmus "int *p = &x").  A thread function runs its body over one instance and
 * stores its registers in out[].
 *
 * The kernel primitives are kernel-lab's own: READ_ONCE()/WRITE_ONCE() from <linux/compiler.h>,
 * smp_*() from each architecture's <asm/barrier.h>.  The read-modify-write atomics are GCC's
 * __atomic builtins with the ordering in the name, as kernel-lab's <linux/atomic.h> spells them
 * (relaxed, acquire and release forms compile to the instructions the kernel uses: ldxr/stxr or
 * LSE swp/cas/ldadd with the a/l suffixes on arm64, lwarx/stwcx. with lwsync before a release and
 * isync after an acquire on powerpc, a locked instruction on x86).  A fully ordered one is the
 * kernel's generic __atomic_op_fence() (include/linux/atomic.h:71-78): smp_mb__before_atomic(),
 * the relaxed operation, smp_mb__after_atomic() -- what powerpc's sync ... sync is, and at least
 * as strong as arm64's own fully ordered forms, so a run can only see fewer outcomes, never more.
 */
#ifndef LAB_LITMUS_H
#define LAB_LITMUS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/compiler.h>
#include <asm/barrier.h>

#define LITMUS_LINE	128
#define LITMUS_MAX_THREADS	4
#define LITMUS_MAX_LOCS		16
#define LITMUS_MAX_PLACES	8

struct litmus_slot {
	intptr_t v;
	char pad[LITMUS_LINE - sizeof(intptr_t)];
} __attribute__((aligned(LITMUS_LINE)));

/* The address of location k of this instance, as a value. */
#define LOC(k)		((intptr_t)&loc[(k)].v)

#define LITMUS_ORDER_RELAXED	__ATOMIC_RELAXED
#define LITMUS_ORDER_ACQUIRE	__ATOMIC_ACQUIRE
#define LITMUS_ORDER_RELEASE	__ATOMIC_RELEASE
#define LITMUS_ORDER_FULL	__ATOMIC_RELAXED	/* with the fences of LITMUS_FENCED_FULL */

#define LITMUS_FENCED_RELAXED(x)	(x)
#define LITMUS_FENCED_ACQUIRE(x)	(x)
#define LITMUS_FENCED_RELEASE(x)	(x)
#define LITMUS_FENCED_FULL(x) ({					\
	smp_mb__before_atomic();					\
	intptr_t __litmus_r = (x);					\
	smp_mb__after_atomic();						\
	__litmus_r;							\
})

#define LITMUS_XCHG(order, p, v)					\
	LITMUS_FENCED_##order(__atomic_exchange_n((p), (v), LITMUS_ORDER_##order))

/* cmpxchg() returns the value it found; a failed one orders nothing beyond the fences. */
#define LITMUS_CMPXCHG(order, p, old, new)				\
	LITMUS_FENCED_##order(({						\
		intptr_t __litmus_o = (old);				\
		__atomic_compare_exchange_n((p), &__litmus_o, (new), 0,	\
					    LITMUS_ORDER_##order, __ATOMIC_RELAXED); \
		__litmus_o;						\
	}))

#define LITMUS_RET_OLD(old, d)	(old)
#define LITMUS_RET_NEW(old, d)	((old) + (d))
#define LITMUS_RET_NONE(old, d)	((void)(d), (void)(old), (intptr_t)0)
#define LITMUS_ADD(order, p, d, ret)					\
	LITMUS_FENCED_##order(({						\
		intptr_t __litmus_d = (d);				\
		LITMUS_RET_##ret(__atomic_fetch_add((p), __litmus_d, LITMUS_ORDER_##order), \
				 __litmus_d);				\
	}))

typedef void litmus_thread_fn(struct litmus_slot *loc, intptr_t *out);

/* A place a final state shows: a thread's register slot, or location index with thread -1. */
struct litmus_place {
	int thread;
	int index;	/* -2: a register the thread never writes (it reads as 0) */
};

struct litmus_test {
	const char *name;
	int nthreads;
	litmus_thread_fn *threads[LITMUS_MAX_THREADS];
	int nlocs;
	const char *loc_names[LITMUS_MAX_LOCS];
	void (*init)(struct litmus_slot *loc);
	int nplaces;
	struct litmus_place places[LITMUS_MAX_PLACES];
};

/* The generated file's tests, NULL-terminated. */
extern const struct litmus_test *const litmus_tests[];

#endif /* LAB_LITMUS_H */
