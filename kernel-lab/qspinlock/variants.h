/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The qspinlock variants: ID (the LAB_VARIANT_<ID> macro qspinlock.c tests), the name tools and
 * logs use (the Python model's variant of the same name, simulator/kstep/models/qspinlock/variants.py),
 * whether it is deliberately broken, and what it is.  The Makefile reads the IDs from
 * here and builds one object per variant and pending-bit layout.
 */
#ifndef LAB_QSPINLOCK_VARIANTS_H
#define LAB_QSPINLOCK_VARIANTS_H

#define LAB_QSPINLOCK_VARIANTS(X)					\
X(V6_12, "v6.12", 0,							\
  "Linux 6.12 kernel/locking/qspinlock.c")				\
X(BEFORE_SET_LOCKED, "before-set-locked", 0,				\
  "the queue head always claims with a cmpxchg loop, as before patch 07/11 (2014)") \
X(CLEAR_TAIL_ALWAYS, "clear-tail-always", 1,				\
  "BUG: with others queued, the head sets the whole word to _Q_LOCKED_VAL, clearing their tail") \
X(PENDING_NOT_UNDONE, "pending-not-undone", 1,				\
  "BUG: pending is not undone when contention is seen")			\
X(HEAD_IGNORES_PENDING, "head-ignores-pending", 1,			\
  "BUG: the head waits for the owner but not for pending to clear")	\
X(LINK_BEFORE_INIT, "link-before-init", 1,				\
  "BUG: the node is published and linked before it is initialised")	\
X(NO_WMB_BEFORE_XCHG_TAIL, "no-wmb-before-xchg-tail", 1,		\
  "BUG on arm64/POWER: no smp_wmb() between the node's initialisation and xchg_tail()")

#endif
