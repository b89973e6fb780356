// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Queued spinlock
 *
 * kernel/locking/qspinlock.c of Linux 6.12, ported to userspace for the kstep kernel lab.
 * What changed against the kernel file, and nothing else:
 *  - every atomic step carries its kstep label (STEP/STEP_TEST, see <lab/hooks.h>);
 *  - xchg_tail() is a real function (noinline) so tests/labcheck.py can disassemble it;
 *  - the paravirt second pass (_GEN_PV_LOCK_SLOWPATH), lock events and tracepoints are left out
 *    (their native versions are empty), and the per-CPU nodes are thread-local (linux/percpu.h);
 *  - LAB_VARIANT_* selects one variant of the slow path at build time: the historical
 *    "before-set-locked" slow path (its pending path and its head's claim, as before patch
 *    07/11 of 2014) and four deliberately broken ones, each marked BUG below.
 *    Without one, this is the 6.12 code.  The Makefile builds every variant into its own object,
 *    the way the kernel builds its native and paravirt slow paths from this one file.
 *
 * (C) Copyright 2013-2015 Hewlett-Packard Development Company, L.P.
 * (C) Copyright 2013-2014,2018 Red Hat, Inc.
 * (C) Copyright 2015 Intel Corp.
 * (C) Copyright 2015 Hewlett-Packard Enterprise Development LP
 *
 * Authors: Waiman Long <longman@redhat.com>
 *          Peter Zijlstra <peterz@infradead.org>
 */

#include <linux/percpu.h>
#include <asm/qspinlock.h>

/*
 * The basic principle of a queue-based spinlock can best be understood
 * by studying a classic queue-based spinlock implementation called the
 * MCS lock. A copy of the original MCS lock paper ("Algorithms for Scalable
 * Synchronization on Shared-Memory Multiprocessors by Mellor-Crummey and
 * Scott") is available at
 *
 * https://bugzilla.kernel.org/show_bug.cgi?id=206115
 *
 * This queued spinlock implementation is based on the MCS lock, however to
 * make it fit the 4 bytes we assume spinlock_t to be, and preserve its
 * existing API, we must modify it somehow.
 *
 * In particular; where the traditional MCS lock consists of a tail pointer
 * (8 bytes) and needs the next pointer (another 8 bytes) of its own node to
 * unlock the next pending (next->locked), we compress both these: {tail,
 * next->locked} into a single u32 value.
 *
 * Since a spinlock disables recursion of its own context and there is a limit
 * to the contexts that can nest; namely: task, softirq, hardirq, nmi. As there
 * are at most 4 nesting levels, it can be encoded by a 2-bit number. Now
 * we can encode the tail by combining the 2-bit nesting level with the cpu
 * number. With one byte for the lock value and 3 bytes for the tail, only a
 * 32-bit word is now needed. Even though we only need 1 bit for the lock,
 * we extend it to a full byte to achieve better performance for architectures
 * that support atomic byte write.
 *
 * We also change the first spinner to spin on the lock bit instead of its
 * node; whereby avoiding the need to carry a node from lock to unlock, and
 * preserving existing lock API. This also makes the unlock code simpler and
 * faster.
 *
 * N.B. The current implementation only supports architectures that allow
 *      atomic operations on smaller 8-bit and 16-bit data types.
 *
 */

#include "mcs_spinlock.h"
#define MAX_NODES	4

/*
 * On 64-bit architectures, the mcs_spinlock structure will be 16 bytes in
 * size and four of them will fit nicely in one 64-byte cacheline.
 */
struct qnode {
	struct mcs_spinlock mcs;
};

/*
 * The pending bit spinning loop count.
 * This heuristic is used to limit the number of lockword accesses
 * made by atomic_cond_read_relaxed when waiting for the lock to
 * transition out of the "== _Q_PENDING_VAL" state. We don't spin
 * indefinitely because there's no guarantee that we'll make forward
 * progress.
 */
#ifndef _Q_PENDING_LOOPS
#define _Q_PENDING_LOOPS	1
#endif

/*
 * Per-CPU queue node structures; we can never have more than 4 nested
 * contexts: task, softirq, hardirq, nmi.
 *
 * Exactly fits one 64-byte cacheline on a 64-bit architecture.
 */
static DEFINE_PER_CPU_ALIGNED(struct qnode, qnodes[MAX_NODES]);

/*
 * We must be able to distinguish between no-tail and the tail at 0:0,
 * therefore increment the cpu number by one.
 */

static inline __pure u32 encode_tail(int cpu, int idx)
{
	u32 tail;

	tail  = (cpu + 1) << _Q_TAIL_CPU_OFFSET;
	tail |= idx << _Q_TAIL_IDX_OFFSET; /* assume < 4 */

	return tail;
}

static inline __pure struct mcs_spinlock *decode_tail(u32 tail)
{
	int cpu = (tail >> _Q_TAIL_CPU_OFFSET) - 1;
	int idx = (tail &  _Q_TAIL_IDX_MASK) >> _Q_TAIL_IDX_OFFSET;

	return per_cpu_ptr(&qnodes[idx].mcs, cpu);
}

static inline __pure
struct mcs_spinlock *grab_mcs_node(struct mcs_spinlock *base, int idx)
{
	return &((struct qnode *)base + idx)->mcs;
}

#define _Q_LOCKED_PENDING_MASK (_Q_LOCKED_MASK | _Q_PENDING_MASK)

#if _Q_PENDING_BITS == 8
/**
 * clear_pending - clear the pending bit.
 * @lock: Pointer to queued spinlock structure
 *
 * *,1,* -> *,0,*
 */
static __always_inline void clear_pending(struct qspinlock *lock)
{
	WRITE_ONCE(lock->pending, 0);
}

/**
 * clear_pending_set_locked - take ownership and clear the pending bit.
 * @lock: Pointer to queued spinlock structure
 *
 * *,1,0 -> *,0,1
 *
 * Lock stealing is not allowed if this function is used.
 */
static __always_inline void clear_pending_set_locked(struct qspinlock *lock)
{
	WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL);
}

/*
 * xchg_tail - Put in the new queue tail code word & retrieve previous one
 * @lock : Pointer to queued spinlock structure
 * @tail : The new queue tail code word
 * Return: The previous queue tail code word
 *
 * xchg(lock, tail), which heads an address dependency
 *
 * p,*,* -> n,*,* ; prev = xchg(lock, node)
 *
 * The kernel inlines this; the lab keeps it a function of its own so that the 16-bit
 * exchange can be found in each architecture's disassembly.
 */
static noinline u32 xchg_tail(struct qspinlock *lock, u32 tail)
{
	/*
	 * We can use relaxed semantics since the caller ensures that the
	 * MCS node is properly initialized before updating the tail.
	 */
	return (u32)xchg_relaxed(&lock->tail,
				 tail >> _Q_TAIL_OFFSET) << _Q_TAIL_OFFSET;
}

#else /* _Q_PENDING_BITS == 8 */

/**
 * clear_pending - clear the pending bit.
 * @lock: Pointer to queued spinlock structure
 *
 * *,1,* -> *,0,*
 */
static __always_inline void clear_pending(struct qspinlock *lock)
{
	atomic_andnot(_Q_PENDING_VAL, &lock->val);
}

/**
 * clear_pending_set_locked - take ownership and clear the pending bit.
 * @lock: Pointer to queued spinlock structure
 *
 * *,1,0 -> *,0,1
 */
static __always_inline void clear_pending_set_locked(struct qspinlock *lock)
{
	atomic_add(-_Q_PENDING_VAL + _Q_LOCKED_VAL, &lock->val);
}

/**
 * xchg_tail - Put in the new queue tail code word & retrieve previous one
 * @lock : Pointer to queued spinlock structure
 * @tail : The new queue tail code word
 * Return: The previous queue tail code word
 *
 * xchg(lock, tail)
 *
 * p,*,* -> n,*,* ; prev = xchg(lock, node)
 */
static noinline u32 xchg_tail(struct qspinlock *lock, u32 tail)
{
	u32 old, new;

	old = atomic_read(&lock->val);
	do {
		new = (old & _Q_LOCKED_PENDING_MASK) | tail;
		/*
		 * We can use relaxed semantics since the caller ensures that
		 * the MCS node is properly initialized before updating the
		 * tail.
		 */
	} while (!atomic_try_cmpxchg_relaxed(&lock->val, &old, new));

	return old;
}
#endif /* _Q_PENDING_BITS == 8 */

/**
 * queued_fetch_set_pending_acquire - fetch the whole lock value and set pending
 * @lock : Pointer to queued spinlock structure
 * Return: The previous lock value
 *
 * *,*,* -> *,1,*
 */
#ifndef queued_fetch_set_pending_acquire
static __always_inline u32 queued_fetch_set_pending_acquire(struct qspinlock *lock)
{
	return atomic_fetch_or_acquire(_Q_PENDING_VAL, &lock->val);
}
#endif

/**
 * set_locked - Set the lock bit and own the lock
 * @lock: Pointer to queued spinlock structure
 *
 * *,*,0 -> *,0,1
 */
static __always_inline void set_locked(struct qspinlock *lock)
{
	WRITE_ONCE(lock->locked, _Q_LOCKED_VAL);
}


/*
 * Generate the native code for queued_spin_unlock_slowpath(); provide NOPs for
 * all the PV callbacks.
 */

static __always_inline void __pv_init_node(struct mcs_spinlock *node) { }
static __always_inline void __pv_wait_node(struct mcs_spinlock *node,
					   struct mcs_spinlock *prev) { }
static __always_inline void __pv_kick_node(struct qspinlock *lock,
					   struct mcs_spinlock *node) { }
static __always_inline u32  __pv_wait_head_or_lock(struct qspinlock *lock,
						   struct mcs_spinlock *node)
						   { return 0; }

#define pv_enabled()		false

#define pv_init_node		__pv_init_node
#define pv_wait_node		__pv_wait_node
#define pv_kick_node		__pv_kick_node
#define pv_wait_head_or_lock	__pv_wait_head_or_lock

#ifdef LAB_HEAD_CLAIM
/*
 * Lab exercise qspin-head-claim (exercises/qspin-head-claim): the queue head's claim of the lock
 * and its hand-off of the MCS queue come from the file LAB_HEAD_CLAIM names, a function
 * head_claim(lock, node, next, tail, val) that may use everything defined above.
 */
#include LAB_HEAD_CLAIM
#endif

/**
 * queued_spin_lock_slowpath - acquire the queued spinlock
 * @lock: Pointer to queued spinlock structure
 * @val: Current value of the queued spinlock 32-bit word
 *
 * (queue tail, pending bit, lock value)
 *
 *              fast     :    slow                                  :    unlock
 *                       :                                          :
 * uncontended  (0,0,0) -:--> (0,0,1) ------------------------------:--> (*,*,0)
 *                       :       | ^--------.------.             /  :
 *                       :       v           \      \            |  :
 * pending               :    (0,1,1) +--> (0,1,0)   \           |  :
 *                       :       | ^--'              |           |  :
 *                       :       v                   |           |  :
 * uncontended           :    (n,x,y) +--> (n,0,0) --'           |  :
 *   queue               :       | ^--'                          |  :
 *                       :       v                               |  :
 * contended             :    (*,x,y) +--> (*,0,0) ---> (*,0,1) -'  :
 *   queue               :         ^--'                             :
 */
void __lockfunc queued_spin_lock_slowpath(struct qspinlock *lock, u32 val)
{
	struct mcs_spinlock *prev, *next, *node;
	u32 old, tail;
	int idx;
#ifdef LAB_VARIANT_BEFORE_SET_LOCKED
	u32 new;
#endif

	BUILD_BUG_ON(CONFIG_NR_CPUS >= (1U << _Q_TAIL_CPU_BITS));

	if (pv_enabled())
		goto pv_queue;

	if (virt_spin_lock(lock))
		return;

#ifdef LAB_VARIANT_BEFORE_SET_LOCKED
	/*
	 * The pending path as it was before "qspinlock: Use a simple write to grab the lock, if
	 * applicable" (patch 07/11 of the June 2014 series, merged in v4.2); only the memory
	 * orderings are 6.12's.
	 *
	 * wait for in-progress pending->locked hand-overs
	 *
	 * 0,1,0 -> 0,0,1
	 */
	if (val == _Q_PENDING_VAL) {
		STEP(lock, wait_pending_handover)
			val = atomic_cond_read_relaxed(&lock->val, VAL != _Q_PENDING_VAL);
	}

	/*
	 * trylock || pending
	 *
	 * 0,0,0 -> 0,0,1 ; trylock
	 * 0,0,1 -> 0,1,1 ; pending
	 */
	for (;;) {
		/*
		 * If we observe any contention; queue.
		 */
		if (val & ~_Q_LOCKED_MASK)
			goto queue;

		new = _Q_LOCKED_VAL;
		if (val == new)
			new |= _Q_PENDING_VAL;

		if (STEP_TEST(lock, trylock_pending_cmpxchg,
			      atomic_try_cmpxchg(&lock->val, &val, new)))
			break;
	}

	/*
	 * we won the trylock
	 */
	if (new == _Q_LOCKED_VAL)
		return;

	/*
	 * we're pending, wait for the owner to go away.
	 *
	 * *,1,1 -> *,1,0
	 */
	STEP(lock, wait_locked_clear)
		smp_cond_load_acquire(&lock->locked, !VAL);
#else
	/*
	 * Wait for in-progress pending->locked hand-overs with a bounded
	 * number of spins so that we guarantee forward progress.
	 *
	 * 0,1,0 -> 0,0,1
	 */
	if (val == _Q_PENDING_VAL) {
		int cnt = _Q_PENDING_LOOPS;
		STEP(lock, wait_pending_handover)
			val = atomic_cond_read_relaxed(&lock->val,
						       (VAL != _Q_PENDING_VAL) || !cnt--);
	}

	/*
	 * If we observe any contention; queue.
	 */
	if (val & ~_Q_LOCKED_MASK)
		goto queue;

	/*
	 * trylock || pending
	 *
	 * 0,0,* -> 0,1,* -> 0,0,1 pending, trylock
	 */
	STEP(lock, queued_fetch_set_pending_acquire)
		val = queued_fetch_set_pending_acquire(lock);

	/*
	 * If we observe contention, there is a concurrent locker.
	 *
	 * Undo and queue; our setting of PENDING might have made the
	 * n,0,0 -> 0,0,0 transition fail and it will now be waiting
	 * on @next to become !NULL.
	 */
	if (unlikely(val & ~_Q_LOCKED_MASK)) {

#ifndef LAB_VARIANT_PENDING_NOT_UNDONE
		/* Undo PENDING if we set it. */
		if (!(val & _Q_PENDING_MASK))
			STEP(lock, clear_pending)
				clear_pending(lock);
#else
		/*
		 * BUG (pending-not-undone): the pending bit we set stays set with nobody
		 * to clear it, and the queue head waits for it forever.
		 */
#endif

		goto queue;
	}

	/*
	 * We're pending, wait for the owner to go away.
	 *
	 * 0,1,1 -> *,1,0
	 *
	 * this wait loop must be a load-acquire such that we match the
	 * store-release that clears the locked bit and create lock
	 * sequentiality; this is because not all
	 * clear_pending_set_locked() implementations imply full
	 * barriers.
	 */
	if (val & _Q_LOCKED_MASK)
		STEP(lock, wait_locked_clear)
			smp_cond_load_acquire(&lock->locked, !VAL);
#endif /* LAB_VARIANT_BEFORE_SET_LOCKED */

	/*
	 * take ownership and clear the pending bit.
	 *
	 * 0,1,0 -> 0,0,1
	 */
	STEP(lock, clear_pending_set_locked)
		clear_pending_set_locked(lock);
	return;

	/*
	 * End of pending bit optimistic spinning and beginning of MCS
	 * queuing.
	 */
queue:
pv_queue:
	node = this_cpu_ptr(&qnodes[0].mcs);
	STEP(lock, node_count_inc)
		idx = node->count++;
	tail = encode_tail(smp_processor_id(), idx);

	/*
	 * 4 nodes are allocated based on the assumption that there will
	 * not be nested NMIs taking spinlocks. That may not be true in
	 * some architectures even though the chance of needing more than
	 * 4 nodes will still be extremely unlikely. When that happens,
	 * we fall back to spinning on the lock directly without using
	 * any MCS node. This is not the most elegant solution, but is
	 * simple enough.
	 */
	if (unlikely(idx >= MAX_NODES)) {
		STEP(lock, queued_spin_trylock)
			while (!queued_spin_trylock(lock))
				cpu_relax();
		goto release;
	}

	node = grab_mcs_node(node, idx);

	/*
	 * Ensure that we increment the head node->count before initialising
	 * the actual node. If the compiler is kind enough to reorder these
	 * stores, then an IRQ could overwrite our assignments.
	 */
	barrier();

#ifndef LAB_VARIANT_LINK_BEFORE_INIT
	STEP(lock, mcs_node_init) {
		node->locked = 0;
		node->next = NULL;
	}
	pv_init_node(node);
#endif

	/*
	 * We touched a (possibly) cold cacheline in the per-cpu queue node;
	 * attempt the trylock once more in the hope someone let go while we
	 * weren't watching.
	 */
	if (STEP_TEST(lock, queued_spin_trylock, queued_spin_trylock(lock)))
		goto release;

	/*
	 * Ensure that the initialisation of @node is complete before we
	 * publish the updated tail via xchg_tail() and potentially link
	 * @node into the waitqueue via WRITE_ONCE(prev->next, node) below.
	 */
	smp_wmb();

	/*
	 * Publish the updated tail.
	 * We have already touched the queueing cacheline; don't bother with
	 * pending stuff.
	 *
	 * p,*,* -> n,*,*
	 */
	STEP(lock, xchg_tail)
		old = xchg_tail(lock, tail);
	next = NULL;

#ifdef LAB_VARIANT_LINK_BEFORE_INIT
	/*
	 * BUG (link-before-init): the node is published (tail) and linked behind its
	 * predecessor before it is initialised.  A predecessor that hands over at once
	 * has its node->locked = 1 overwritten, and a successor that links at once has
	 * its node->next overwritten: either way somebody waits forever.
	 */
	if (old & _Q_TAIL_MASK)
		STEP(lock, link_prev)
			WRITE_ONCE(decode_tail(old)->next, node);
	STEP(lock, mcs_node_init) {
		node->locked = 0;
		node->next = NULL;
	}
#endif

	/*
	 * if there was a previous node; link it and wait until reaching the
	 * head of the waitqueue.
	 */
	if (old & _Q_TAIL_MASK) {
		prev = decode_tail(old);

#ifndef LAB_VARIANT_LINK_BEFORE_INIT
		/* Link @node into the waitqueue. */
		STEP(lock, link_prev)
			WRITE_ONCE(prev->next, node);
#endif

		pv_wait_node(node, prev);
		STEP(lock, mcs_spin) {
			arch_mcs_spin_lock_contended(&node->locked);

			/*
			 * While waiting for the MCS lock, the next pointer may have
			 * been set by another lock waiter. We optimistically load
			 * the next pointer & prefetch the cacheline for writing
			 * to reduce latency in the upcoming MCS unlock operation.
			 *
			 * (lab: this load belongs to the mcs_spin step, so that a
			 * logged run shows whether wait_next still has to wait.)
			 */
			next = READ_ONCE(node->next);
		}
		if (next)
			prefetchw(next);
	}

	/*
	 * we're at the head of the waitqueue, wait for the owner & pending to
	 * go away.
	 *
	 * *,x,y -> *,0,0
	 *
	 * this wait loop must use a load-acquire such that we match the
	 * store-release that clears the locked bit and create lock
	 * sequentiality; this is because the set_locked() function below
	 * does not imply a full barrier.
	 *
	 * The PV pv_wait_head_or_lock function, if active, will acquire
	 * the lock and return a non-zero value. So we have to skip the
	 * atomic_cond_read_acquire() call. As the next PV queue head hasn't
	 * been designated yet, there is no way for the locked value to become
	 * _Q_SLOW_VAL. So both the set_locked() and the
	 * atomic_cmpxchg_relaxed() calls will be safe.
	 *
	 * If PV isn't active, 0 will be returned instead.
	 *
	 */
	if ((val = pv_wait_head_or_lock(lock, node)))
		goto locked;

#if defined(LAB_VARIANT_BEFORE_SET_LOCKED)
	/*
	 * Before patch 07/11: a plain atomic_read() loop, ordered by the claim's fully ordered
	 * cmpxchg (the patch made it a load-acquire for set_locked()'s sake).
	 */
	STEP(lock, wait_head)
		val = atomic_cond_read_relaxed(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK));
#elif !defined(LAB_VARIANT_HEAD_IGNORES_PENDING)
	STEP(lock, wait_head)
		val = atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK));
#else
	/*
	 * BUG (head-ignores-pending): the head waits for the owner only.  A CPU holding
	 * pending, about to take the lock by clear_pending_set_locked(), is
	 * overlooked, and both enter the critical section.
	 */
	STEP(lock, wait_head)
		val = atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_MASK));
#endif

locked:
	/*
	 * claim the lock:
	 *
	 * n,0,0 -> 0,0,1 : lock, uncontended
	 * *,*,0 -> *,*,1 : lock, contended
	 *
	 * If the queue head is the only one in the queue (lock value == tail)
	 * and nobody is pending, clear the tail code and grab the lock.
	 * Otherwise, we only need to grab the lock.
	 */

	/*
	 * In the PV case we might already have _Q_LOCKED_VAL set, because
	 * of lock stealing; therefore we must also allow:
	 *
	 * n,0,1 -> 0,0,1
	 *
	 * Note: at this point: (val & _Q_PENDING_MASK) == 0, because of the
	 *       above wait condition, therefore any concurrent setting of
	 *       PENDING will make the uncontended transition fail.
	 */
#if defined(LAB_HEAD_CLAIM)
	head_claim(lock, node, next, tail, val);
	goto release;
#elif defined(LAB_VARIANT_BEFORE_SET_LOCKED)
	/*
	 * Before patch 07/11 the head always claimed with a cmpxchg and retried
	 * until it succeeded, keeping the rest of the word when others were
	 * queued behind it:
	 *
	 *	n,0,0 -> 0,0,1 : lock, uncontended
	 *	*,0,0 -> *,0,1 : lock, contended
	 */
	for (;;) {
		new = _Q_LOCKED_VAL;
		if (val != tail)
			new |= val;

		if (STEP_TEST(lock, claim_cmpxchg, atomic_try_cmpxchg(&lock->val, &val, new)))
			break;
	}
	if (new == _Q_LOCKED_VAL)
		goto release; /* No contention */

	/*
	 * contended path; wait for next, release.  (No load of node->next had
	 * been tried before: it waits even when mcs_spin saw the successor.)
	 */
	STEP(lock, wait_next)
		next = smp_cond_load_relaxed(&node->next, (VAL));
#else
	if ((val & _Q_TAIL_MASK) == tail) {
		if (STEP_TEST(lock, claim_cmpxchg,
			      atomic_try_cmpxchg_relaxed(&lock->val, &val, _Q_LOCKED_VAL)))
			goto release; /* No contention */
	}

	/*
	 * Either somebody is queued behind us or _Q_PENDING_VAL got set
	 * which will then detect the remaining tail and queue behind us
	 * ensuring we'll see a @next.
	 */
#ifndef LAB_VARIANT_CLEAR_TAIL_ALWAYS
	STEP(lock, set_locked)
		set_locked(lock);
#else
	/*
	 * BUG (clear-tail-always): the head takes the lock by setting the whole
	 * word to _Q_LOCKED_VAL although others are queued, clearing their tail.
	 * The next locker starts a second queue with a second head, and two
	 * heads can both find the lock free.
	 */
	STEP(lock, set_locked)
		atomic_set(&lock->val, _Q_LOCKED_VAL);
#endif

	/*
	 * contended path; wait for next if not observed yet, release.
	 */
	if (!next)
		STEP(lock, wait_next)
			next = smp_cond_load_relaxed(&node->next, (VAL));
#endif /* LAB_VARIANT_BEFORE_SET_LOCKED */

	STEP(lock, mcs_handoff)
		arch_mcs_spin_unlock_contended(&next->locked);
	pv_kick_node(lock, next);

release:
	/*
	 * release the node
	 */
	STEP(lock, release_node)
		__this_cpu_dec(qnodes[0].mcs.count);
}
