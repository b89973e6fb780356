/*
 * qspinlock.pml: the Linux 6.12 queued spinlock (include/asm-generic/qspinlock.h and
 * kernel/locking/qspinlock.c) in Promela, for Debian's spin.
 *
 * The same steps as the C port (qspinlock.c) and the Python model, under the same labels: one
 * labelled statement is one atomic step; a wait is a guard, one step taken when its condition
 * holds.  The lock word is three fields, as the kernel's union views it: tail (the upper
 * halfword with 8-bit pending, (cpu + 1) << 2 | idx), pending and locked.  Memory is sequentially
 * consistent here: spin checks the algorithm's interleavings, not weak memory ordering.
 *
 *	spin -a [-DNCPUS=3] [-DACQUISITIONS=2] [-DVARIANT] qspinlock.pml
 *	gcc -O2 -DSAFETY -o pan pan.c && ./pan
 *
 * VARIANT is one of BEFORE_SET_LOCKED, CLEAR_TAIL_ALWAYS, PENDING_NOT_UNDONE, HEAD_IGNORES_PENDING,
 * LINK_BEFORE_INIT (the C port's variants), or none for 6.12.  Mutual exclusion is an assertion
 * at critical_section; a deadlock or lost wake-up is an invalid end state (every CPU blocked
 * before finishing).  With -DENUMERATE a monitor prints every reachable (tail, pending, locked)
 * triple once ("triple T P L"); compile pan with -DNOREDUCE then, so that no state is skipped.
 *
 * The bounded pending hand-over wait (_Q_PENDING_LOOPS polls) may give up at any poll, so
 * wait_pending_handover is modelled as always enabled, reading the word as it is then; before
 * patch 07/11 (BEFORE_SET_LOCKED) it was unbounded, and the pending path was a cmpxchg loop.
 * No interrupt nesting: every CPU uses its node 0, and the idx >= MAX_NODES fallback is not
 * reachable (asserted).
 */

#ifndef NCPUS
#define NCPUS 2
#endif
#ifndef ACQUISITIONS
#define ACQUISITIONS 2
#endif

#define MAX_NODES		4
#define _Q_LOCKED_VAL		1
#define _Q_PENDING_VAL		256
#define _Q_LOCKED_MASK		255
#define _Q_PENDING_MASK		65280
#define _Q_TAIL_OFFSET		16

/* The lock word, by its parts. */
byte tail;			/* lock->tail: 0 or encode_tail(cpu, idx) >> _Q_TAIL_OFFSET */
byte pending;
byte locked;
#define WORD		((tail << _Q_TAIL_OFFSET) | (pending << 8) | locked)
#define SET_WORD(v)	tail = (v) >> _Q_TAIL_OFFSET; pending = ((v) >> 8) & 255; locked = (v) & 255

/* Per-CPU MCS nodes: qnodes[cpu][idx]; next holds the successor's tail code, 0 for NULL. */
#define NODE(code)	((((code) >> 2) - 1) * MAX_NODES + ((code) & 3))
byte node_locked[NCPUS * MAX_NODES];
byte node_next[NCPUS * MAX_NODES];
byte count[NCPUS];		/* qnodes[0].mcs.count */

byte in_cs;			/* ghost: CPUs between critical_section and unlock */

proctype cpu(byte id)
{
	byte n;			/* acquisitions done */
	int val;
	byte idx, mytail, old, next;
	bool got;
#ifdef BEFORE_SET_LOCKED
	int new;
#endif

acquire:
	if
	:: n == ACQUISITIONS -> goto done
	:: else
	fi;

queued_spin_lock:
	d_step {
		if
		:: WORD == 0 -> locked = _Q_LOCKED_VAL; got = true; val = 0
		:: else -> got = false; val = WORD
		fi
	};
	if
	:: got -> got = false; goto critical_section
	:: else
	fi;

	/* queued_spin_lock_slowpath(lock, val) */
#ifdef BEFORE_SET_LOCKED
	/* The pending path before patch 07/11: an unbounded wait for a (0,1,0) hand-over, then a
	 * cmpxchg loop that takes a free lock or sets pending on (0,0,1), and queues on contention. */
	if
	:: val == _Q_PENDING_VAL ->
wait_pending_handover:
		d_step { WORD != _Q_PENDING_VAL; val = WORD }
	:: else
	fi;

	do
	:: val & ~_Q_LOCKED_MASK -> goto queue
	:: else ->
trylock_pending_cmpxchg:
		d_step {
			if
			:: WORD == val && val == 0 -> locked = _Q_LOCKED_VAL; got = true
			:: WORD == val && val != 0 -> pending = 1; got = true
			:: else -> val = WORD
			fi
		};
		if
		:: got -> got = false; break
		:: else
		fi
	od;
	if
	:: val == 0 -> goto critical_section	/* we won the trylock */
	:: else
	fi;

wait_locked_clear:
	locked == 0;
#else
	if
	:: val == _Q_PENDING_VAL ->
wait_pending_handover:
		d_step { val = WORD }
	:: else
	fi;

	if
	:: val & ~_Q_LOCKED_MASK -> goto queue
	:: else
	fi;

queued_fetch_set_pending_acquire:
	d_step { val = WORD; pending = 1 };

	if
	:: val & ~_Q_LOCKED_MASK ->
#ifndef PENDING_NOT_UNDONE
		if
		:: !(val & _Q_PENDING_MASK) ->
clear_pending:
			pending = 0
		:: else
		fi;
#endif
		goto queue
	:: else
	fi;

	if
	:: val & _Q_LOCKED_MASK ->
wait_locked_clear:
		locked == 0
	:: else
	fi;
#endif

clear_pending_set_locked:
	d_step { pending = 0; locked = _Q_LOCKED_VAL; val = 0 };
	goto critical_section;

queue:
node_count_inc:
	atomic { idx = count[id]; count[id]++; val = 0 };
	assert(idx < MAX_NODES);
	mytail = ((id + 1) << 2) | idx;

#ifndef LINK_BEFORE_INIT
mcs_node_init:
	d_step { node_locked[NODE(mytail)] = 0; node_next[NODE(mytail)] = 0 };
#endif

queued_spin_trylock:
	d_step {
		if
		:: WORD == 0 -> locked = _Q_LOCKED_VAL; got = true
		:: else -> got = false
		fi
	};
	if
	:: got -> got = false; goto release_node
	:: else
	fi;

xchg_tail:
	d_step { old = tail; tail = mytail };
	next = 0;

#ifdef LINK_BEFORE_INIT
	if
	:: old ->
link_prev_early:
		node_next[NODE(old)] = mytail
	:: else
	fi;
mcs_node_init_late:
	d_step { node_locked[NODE(mytail)] = 0; node_next[NODE(mytail)] = 0 };
#endif

	if
	:: old ->
#ifndef LINK_BEFORE_INIT
link_prev:
		node_next[NODE(old)] = mytail;
#endif
		old = 0;
mcs_spin:
		d_step { node_locked[NODE(mytail)] != 0; next = node_next[NODE(mytail)] }
	:: else
	fi;

wait_head:
#ifndef HEAD_IGNORES_PENDING
	d_step { pending == 0 && locked == 0; val = WORD };
#else
	d_step { locked == 0; val = WORD };
#endif

#ifdef BEFORE_SET_LOCKED
	do
	:: 
claim_cmpxchg:
		d_step {
			new = _Q_LOCKED_VAL;
			if
			:: val != (mytail << _Q_TAIL_OFFSET) -> new = new | val
			:: else
			fi;
			if
			:: WORD == val -> SET_WORD(new); got = true
			:: else -> val = WORD
			fi
		};
		if
		:: got -> got = false; break
		:: else
		fi
	od;
	if
	:: new == _Q_LOCKED_VAL -> new = 0; val = 0; goto release_node
	:: else -> new = 0; val = 0; next = 0	/* nothing looked at node->next before 07/11 */
	fi;
#else
	if
	:: (val >> _Q_TAIL_OFFSET) == mytail ->
claim_cmpxchg:
		d_step {
			if
			:: WORD == val -> SET_WORD(_Q_LOCKED_VAL); got = true
			:: else -> got = false
			fi;
			val = 0
		};
		if
		:: got -> got = false; goto release_node
		:: else
		fi
	:: else -> val = 0
	fi;

set_locked:
#ifndef CLEAR_TAIL_ALWAYS
	locked = _Q_LOCKED_VAL;
#else
	d_step { SET_WORD(_Q_LOCKED_VAL) };
#endif
#endif

	if
	:: next == 0 ->
wait_next:
		d_step { node_next[NODE(mytail)] != 0; next = node_next[NODE(mytail)] }
	:: else
	fi;

mcs_handoff:
	d_step { node_locked[NODE(next)] = 1; next = 0 };

release_node:
	atomic { count[id]--; idx = 0; mytail = 0 };

critical_section:	/* the lock's user, not the lock */
	atomic { in_cs++; assert(in_cs == 1) };

queued_spin_unlock:
	d_step { in_cs--; locked = 0; n++ };
	goto acquire;

done:
	skip
}

#ifdef ENUMERATE
c_decl {
	unsigned char kstep_seen[256][256][256];
}

/* Every reachable state lets this run once at least (with -DNOREDUCE), printing its triple. */
active proctype enumerate()
{
end_enumerate:
	do
	:: c_code {
		if (!kstep_seen[now.tail][now.pending][now.locked]) {
			kstep_seen[now.tail][now.pending][now.locked] = 1;
			printf("triple %d %d %d\n", now.tail, now.pending, now.locked);
		}
	}
	od
}
#endif

init {
	byte i;

	atomic {
		for (i : 0 .. NCPUS - 1) {
			run cpu(i)
		}
	}
}
