"""The rw_semaphore rules of Linux 6.12 (kernel/locking/rwsem.c), as pure functions on a value.

Both ``mm->mmap_lock`` and each VMA's ``vm_lock->lock`` are rw_semaphores.  The value below holds
what ``sem->count``, ``sem->owner`` and ``sem->wait_list`` say, and each function mirrors one piece
of rwsem.c; the steps that call them live in mmap_lock.py.

- ``down_read_trylock`` (and the fast path of ``down_read``) fails while a writer holds the lock
  or anyone is queued (``RWSEM_READ_FAILED_MASK`` includes ``RWSEM_FLAG_WAITERS`` and
  ``RWSEM_FLAG_HANDOFF``) and never sleeps.  Per-VMA locks rely on this: a fault never waits
  for a VMA's lock.
- A reader that fails the fast path is not strictly queued (``rwsem_down_read_slowpath``): it
  *steals* the lock, ahead of any queued writer, when no writer holds it and HANDOFF is clear,
  unless other readers already hold it (then it queues, so that a stream of readers cannot
  starve a writer).
- A writer that fails the fast path spins first (``rwsem_optimistic_spin``, built because
  ``CONFIG_RWSEM_SPIN_ON_OWNER`` is ``def_bool y`` on SMP kernels of every architecture with
  atomic read-modify-write, x86, arm64 and powerpc among them) and takes a free lock, ahead of
  queued waiters, unless HANDOFF is set; so may a queued writer's ``rwsem_try_write_lock``.  Only
  RWSEM_FLAG_HANDOFF, set by a queued writer that has waited past ``RWSEM_WAIT_TIMEOUT``, reserves
  the lock for the first waiter.
- Queued readers do not take the lock themselves: a waker's ``rwsem_mark_wake`` grants it to
  every queued reader at once when the first waiter is a reader (phase-fair), and ``up_read``
  calls ``rwsem_wake`` only when it was the last holder and RWSEM_FLAG_WAITERS is set.

What the model assumes, each deliberately:

- Every thread runs on its own CPU and is never preempted, so ``rwsem_can_spin_on_owner`` always
  allows spinning; how long a writer spins is the scheduler's choice, and it may stop at any
  time and queue (6.12 stops when the owner sleeps, on ``need_resched()``, or after the
  reader-owned spin threshold, which then sets ``RWSEM_NONSPINNABLE``: the model lets a writer
  spin on a sleeping owner too, a superset of 6.12's runs).  The osq that lets only one
  spinner at a time try is left out (any spinner may be the one).
- The engine has no clock: a queued writer counts its failed ``rwsem_try_write_lock`` calls instead,
  and the scenario says after how many RWSEM_WAIT_TIMEOUT has passed (``handoff_after``): a failed
  try after that sets HANDOFF.  By default the first failed try sets it, and since a writer may
  try whenever the lock is held, its timeout may pass at any moment; ``NEVER`` keeps it from
  passing, the rwsem without handoff that lets readers steal ahead of a queued writer forever.
  The other place 6.12 sets it, ``rwsem_mark_wake`` finding
  that a writer stole the lock from a reader at the head of the queue after that reader's
  timeout, is left out: without it readers at the head wait for the next release, a superset.
- A queued writer retries whenever its retry would succeed: it is woken by ``rwsem_mark_wake``
  when first in line, and any sleeper may be woken spuriously (include/linux/sched/wake_q.h:
  "schedule() callers must ensure the call is done inside a loop").
- The fast-path ``atomic_long_add`` of a reader and the reader slowpath's decision are one step
  (6.12 decides on the count that add returned), and so are queueing and the
  ``rwsem_cond_wake_waiter`` that follows it.  ``MAX_READERS_WAKEUP`` (256) is more than a
  scenario's threads, so one wake grants every queued reader.  ``CONFIG_PREEMPT_RT``, where
  rw_semaphores are built on rtmutexes, is not modelled.
"""

from __future__ import annotations

from typing import NamedTuple

from ...engine.records import fast_replace

NOBODY = -1
READ, WRITE = "R", "W"
NEVER = "never"  # handoff_after: RWSEM_WAIT_TIMEOUT never passes, so no writer sets HANDOFF


@fast_replace
class Rwsem(NamedTuple):
    owner: int = NOBODY  # the writer holding it (RWSEM_WRITER_LOCKED), or NOBODY
    readers: tuple = ()  # threads holding it for read (the reader count), sorted
    waiters: tuple = ()  # sem->wait_list: (thread, READ | WRITE) in queue order; non-empty: RWSEM_FLAG_WAITERS
    handoff: bool = False  # RWSEM_FLAG_HANDOFF: the lock is reserved for the first waiter


FREE = Rwsem()  # count == RWSEM_UNLOCKED_VALUE


def read_trylock_ok(sem: Rwsem) -> bool:
    """``down_read_trylock`` and ``rwsem_read_trylock``: none of RWSEM_READ_FAILED_MASK is set."""
    return sem.owner == NOBODY and not sem.waiters and not sem.handoff


def write_trylock(sem: Rwsem, i: int) -> Rwsem:
    """``rwsem_write_trylock``: i owns it if the count was zero (no holder, no waiters, no HANDOFF)."""
    return sem._replace(owner=i) if sem == FREE else sem


def add_reader(sem: Rwsem, i: int) -> Rwsem:
    return sem._replace(readers=tuple(sorted(sem.readers + (i,))))


def read_slowpath(sem: Rwsem, i: int) -> tuple[Rwsem, bool]:
    """``rwsem_down_read_slowpath`` entered with the count the failed fast path saw: (sem, queued).

    Readers already hold it: queue ("don't attempt optimistic lock stealing if the lock is very
    likely owned by readers").  No writer and no HANDOFF: steal it, and if no other reader holds
    it, wake the queued readers too.  Otherwise join the queue and ``rwsem_cond_wake_waiter``."""
    if sem.owner == NOBODY and not sem.readers and not sem.handoff:
        return mark_wake(add_reader(sem, i), read_owned=True), False
    return cond_wake_waiter(sem._replace(waiters=sem.waiters + ((i, READ),))), True


def cond_wake_waiter(sem: Rwsem) -> Rwsem:
    """``rwsem_cond_wake_waiter``: unless a writer holds it, wake what may take it now."""
    if sem.owner != NOBODY:
        return sem
    return mark_wake(sem, read_owned=False)


def mark_wake(sem: Rwsem, read_owned: bool) -> Rwsem:
    """``rwsem_mark_wake``.  A writer first in line is only woken (it retries by itself); if a
    reader is first, every queued reader is granted the lock at once, unless a writer stole it
    first (``read_owned``: the waker holds it for read, so none can have).  Granting clears
    HANDOFF, and an emptied queue clears RWSEM_FLAG_WAITERS."""
    if not sem.waiters or sem.waiters[0][1] == WRITE:
        return sem
    if not read_owned and sem.owner != NOBODY:
        return sem
    woken = tuple(j for j, kind in sem.waiters if kind == READ)
    readers = tuple(sorted(sem.readers + woken))
    return sem._replace(readers=readers, waiters=tuple(w for w in sem.waiters if w[1] == WRITE), handoff=False)


def optimistic_spin(sem: Rwsem, i: int) -> Rwsem:
    """``rwsem_try_write_lock_unqueued``: i owns it if nobody held it and HANDOFF was clear; queued
    waiters do not matter."""
    if sem.owner == NOBODY and not sem.readers and not sem.handoff:
        return sem._replace(owner=i)
    return sem


def queue_writer(sem: Rwsem, i: int) -> Rwsem:
    """``rwsem_down_write_slowpath`` after spinning failed: join the wait list, wake queued readers
    if it was not first, then the first ``rwsem_try_write_lock``, which may take it at once."""
    first = not sem.waiters
    sem = sem._replace(waiters=sem.waiters + ((i, WRITE),))
    if not first:
        sem = cond_wake_waiter(sem)
    return try_write_lock(sem, i) or sem


def try_write_lock(sem: Rwsem, i: int, handoff_stops_first: bool = False):
    """``rwsem_try_write_lock`` by queued writer i: the rwsem with i as its owner, or None.

    It fails while anyone holds the lock, and while HANDOFF reserves it for another waiter
    (``first->handoff_set && waiter != first``).  ``handoff_stops_first``: broken, that test with
    ``==``, so that HANDOFF keeps out the very waiter it reserves the lock for."""
    if sem.owner != NOBODY or sem.readers or (sem.handoff and (sem.waiters[0][0] == i) == handoff_stops_first):
        return None
    waiters = tuple(w for w in sem.waiters if w[0] != i)
    return sem._replace(owner=i, waiters=waiters, handoff=False)


def may_set_handoff(sem: Rwsem) -> bool:
    """``rwsem_try_write_lock`` fails on the held lock and, once the writer has waited past
    RWSEM_WAIT_TIMEOUT, sets HANDOFF: the lock is held and HANDOFF is not yet set."""
    return (sem.owner != NOBODY or bool(sem.readers)) and not sem.handoff


def write_retry_enabled(sem: Rwsem, i: int) -> bool:
    """A queued writer's retry may happen.  On the free lock: woken, unless HANDOFF reserves the lock
    for another waiter; the first waiter, whose HANDOFF it is, does not even sleep
    (``rwsem_down_write_slowpath``: with ``handoff_set`` it spins on the owner and, the owner gone,
    tries again at once).  On the held lock: a failed try while HANDOFF is clear, counting towards
    its timeout or, once that has passed, setting HANDOFF."""
    if sem.owner == NOBODY and not sem.readers:
        return not sem.handoff or sem.waiters[0][0] == i
    return may_set_handoff(sem)


def write_retry(sem: Rwsem, i: int, timed_out: bool = True, handoff_stops_first: bool = False) -> Rwsem:
    """``rwsem_try_write_lock`` by queued writer i: take the lock, or fail, setting HANDOFF if i has
    waited past RWSEM_WAIT_TIMEOUT (``timed_out``) and the lock is held."""
    taken = try_write_lock(sem, i, handoff_stops_first)
    return taken or (sem._replace(handoff=True) if timed_out and may_set_handoff(sem) else sem)


def timed_out(tries: int, handoff_after) -> bool:
    """Has a writer that failed ``tries`` times waited past RWSEM_WAIT_TIMEOUT, which the scenario
    puts after ``handoff_after`` failed tries (``NEVER``: it never passes)?"""
    return handoff_after != NEVER and tries >= handoff_after


def up_read(sem: Rwsem, i: int) -> tuple[Rwsem, bool]:
    """``__up_read``: (sem, wake), wake when it was the last holder and waiters are queued."""
    readers = list(sem.readers)
    readers.remove(i)
    sem = sem._replace(readers=tuple(readers))
    return sem, not sem.readers and sem.owner == NOBODY and bool(sem.waiters)


def rwsem_wake(sem: Rwsem) -> Rwsem:
    """``rwsem_wake``: ``rwsem_mark_wake(RWSEM_WAKE_ANY)`` if the wait list is not empty."""
    return mark_wake(sem, read_owned=False)


def up_write(sem: Rwsem) -> Rwsem:
    """``__up_write``: release, and ``rwsem_wake`` if RWSEM_FLAG_WAITERS is set."""
    return rwsem_wake(sem._replace(owner=NOBODY))


def downgrade(sem: Rwsem, i: int) -> Rwsem:
    """``__downgrade_write``: the writer becomes a reader; ``rwsem_downgrade_wake`` grants the
    queued readers if one is first in line."""
    return mark_wake(add_reader(sem._replace(owner=NOBODY), i), read_owned=True)


def waiting(sem: Rwsem, i: int) -> bool:
    """Thread i is queued on the rwsem."""
    return any(j == i for j, _ in sem.waiters)


def holds_read(sem: Rwsem, i: int) -> bool:
    return i in sem.readers
