/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The queue head's claim of the lock and its hand-off of the MCS queue: the end of
 * kernel/locking/qspinlock.c:queued_spin_lock_slowpath() in Linux 6.12, for the kernel lab.
 *
 * qspinlock.c includes this file (make it with -DLAB_HEAD_CLAIM='"head_claim.c"') and calls
 * head_claim() once this CPU is the head of the queue and has seen locked and pending clear:
 * @val is the lock word it read then, @tail its own tail code, @node its MCS node and @next the
 * successor it saw while waiting (NULL if none yet).  On return, this CPU holds the lock and its
 * successor, if any, has been made the new queue head.
 *
 * Everything qspinlock.c defines before the include is yours to use: set_locked(), the
 * _Q_*_MASK constants (both pending-bit layouts), atomic_try_cmpxchg_relaxed(),
 * smp_cond_load_relaxed(), arch_mcs_spin_unlock_contended().  Wrap each atomic step in STEP()
 * or STEP_TEST() with its label (kernel-lab/README.md, "Step labels"): claim_cmpxchg,
 * set_locked, wait_next, mcs_handoff.  The labels are how the log of your run is checked
 * against kstep's model.
 */
static __always_inline void head_claim(struct qspinlock *lock, struct mcs_spinlock *node,
				       struct mcs_spinlock *next, u32 tail, u32 val)
{
	/* BEGIN SOLUTION */
	/* CANARY-KSTEP-SOLUTION-qspin-head-claim */
	/*
	 * The tail is still ours: nobody queued behind us, so take the lock and clear the tail in
	 * one cmpxchg (n,0,0 -> 0,0,1).  It fails if a waiter queued or someone set pending since.
	 */
	if ((val & _Q_TAIL_MASK) == tail) {
		if (STEP_TEST(lock, claim_cmpxchg,
			      atomic_try_cmpxchg_relaxed(&lock->val, &val, _Q_LOCKED_VAL)))
			return;
	}

	/*
	 * Others are queued: nobody else can take the lock now (they all wait for us), so a plain
	 * byte store takes it, leaving their tail in place (*,*,0 -> *,0,1).
	 */
	STEP(lock, set_locked)
		set_locked(lock);

	/* The successor may have published its tail but not linked itself in yet: wait for it. */
	if (!next)
		STEP(lock, wait_next)
			next = smp_cond_load_relaxed(&node->next, (VAL));

	STEP(lock, mcs_handoff)
		arch_mcs_spin_unlock_contended(&next->locked);
	/* END SOLUTION */
}
