"""kernel/locking/qspinlock.c before patch 07/11 (2014): the pending path and the claim of that time
(the ``before-set-locked`` variant, a release before today's).

The pre-image of "qspinlock: Use a simple write to grab the lock, if applicable" (patch 07/11 of
Waiman Long and Peter Zijlstra's June 2014 series, merged for v4.2).  A CPU that finds the word
(0,1,0) waits, with no bound, for the pending owner's hand-over; then a cmpxchg loop either takes a
free lock (0,0,0 -> 0,0,1) or sets pending on a held one (0,0,1 -> 0,1,1), and queues as soon as it
sees pending or a tail -- so nobody ever sets pending while a tail is set.  The queue head waits
with atomic_read() for locked and pending to clear and claims with a cmpxchg that it retries until
it succeeds, clearing the tail only when it is its own and alone.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program, Replacement, push
from .footprints import fp_word
from .qspinlock import encode_tail, slowpath, trylock_or_pending
from .qspinlock_types import LAYOUTS, _Q_LOCKED_VAL, _Q_PENDING_VAL
from .state import ghost_dequeue, own_node, set_ctx, set_word

program = Program()  # its steps; model.py adds them to the generic lock's program


PENDING_2014 = "trylock_pending_cmpxchg"


def slowpath_2014(s, i, val):
    return slowpath(s, i, val, PENDING_2014)


def wait_pending_unbounded(s, i, arg):
    val = s.words[s.threads[i].lock]
    return push(set_ctx(s, i, val=val), i, trylock_or_pending(val, PENDING_2014))


def pending_handed_over(s, i, arg):
    return s.words[s.threads[i].lock] != _Q_PENDING_VAL


@program.step(PENDING_2014, "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "before patch 07/11, one try of the trylock-or-pending loop: atomic_cmpxchg(val -> new), "
                "0,0,0 -> 0,0,1 takes the lock, 0,0,1 -> 0,1,1 sets pending; a changed word is read again",
                footprint=fp_word,
                live=("val",), order=FULL)
def trylock_pending_cmpxchg(s, i, arg):
    t = s.threads[i]
    w = s.words[t.lock]
    if w != t.val:  # the loop's next round decides on the word the failed cmpxchg returned
        return push(set_ctx(s, i, val=w), i, trylock_or_pending(w, PENDING_2014))
    new = _Q_LOCKED_VAL | (_Q_PENDING_VAL if w == _Q_LOCKED_VAL else 0)
    s = set_word(s, t.lock, new)
    if new == _Q_LOCKED_VAL:  # we won the trylock
        return set_ctx(s, i, val=0)
    return push(s, i, (Frame("wait_locked_clear"), Frame("clear_pending_set_locked")))


def wait_head_then_cmpxchg(s, i, arg):
    val = s.words[s.threads[i].lock]
    return push(set_ctx(s, i, val=val), i, (Frame("claim_cmpxchg"),))


def claim_cmpxchg_retry(s, i, arg):
    """``new = _Q_LOCKED_VAL; if (val != tail) new |= val;`` and ``old = atomic_cmpxchg(&lock->val,
    val, new)`` until it succeeds; then, if new was not plain _Q_LOCKED_VAL, wait for the successor
    (``while (!(next = ACCESS_ONCE(node->next)))``, with no earlier look at node->next) and hand on."""
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    w = s.words[t.lock]
    tail = encode_tail(lay, t.cpu, t.idx)
    new = _Q_LOCKED_VAL if t.val == tail else t.val | _Q_LOCKED_VAL
    if w != t.val:
        return push(set_ctx(s, i, val=w), i, (Frame("claim_cmpxchg"),))
    s = set_word(s, t.lock, new)
    if new == _Q_LOCKED_VAL:
        return push(ghost_dequeue(s, t.lock, own_node(t)), i, (Frame("release_node"),))
    return push(s, i, (Frame("wait_next"), Frame("mcs_handoff")))


BEFORE_SET_LOCKED = {
    "queued_spin_lock_slowpath": slowpath_2014,
    "wait_pending_handover": Replacement(wait_pending_unbounded, pending_handed_over, (
        "val == _Q_PENDING_VAL (0,1,0): before the bound of _Q_PENDING_LOOPS, re-read the word "
        "until the pending owner's hand-over changes it, however long that takes")),
    "wait_head": Replacement(wait_head_then_cmpxchg, what=(
        "queue head, before patch 07/11: atomic_read(&lock->val) until locked and pending are both "
        "clear (*,x,y -> *,0,0), then claim with cmpxchg")),
    "claim_cmpxchg": Replacement(claim_cmpxchg_retry, what=(
        "before patch 07/11: atomic_cmpxchg(val -> _Q_LOCKED_VAL | val), clearing the tail only when "
        "it is ours alone (n,0,0 -> 0,0,1; *,0,0 -> *,0,1); a changed word means try again")),
}
