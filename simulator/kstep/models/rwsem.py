"""The rw_semaphore rules of Linux 6.12 (kernel/locking/rwsem.c), as pure functions on a value.

Both ``mm->mmap_lock`` and each VMA's ``vm_lock->lock`` are rw_semaphores, and per-VMA locking
depends on two of their properties:

- ``down_read_trylock`` fails while a writer holds the lock *or anyone is queued*
  (``RWSEM_READ_FAILED_MASK`` includes ``RWSEM_FLAG_WAITERS``), and never sleeps;
- a reader that must wait queues behind a waiting writer (no reader barging), and waiters are
  served in queue order: a writer at the head takes the lock once it is free, and readers at the
  head take it together (``rwsem_mark_wake`` wakes the readers it finds).

A waiter takes the lock itself once these rules allow (a writer in ``rwsem_down_write_slowpath``
spins or is woken and retries ``rwsem_try_write_lock``); the wake-up call that touches the
semaphore's memory is modelled separately where it matters (``rwsem_wake`` in ``up_read``).
"""

from __future__ import annotations

from typing import NamedTuple

NOBODY = -1
READ, WRITE = "R", "W"


class Rwsem(NamedTuple):
    owner: int = NOBODY  # thread index of the writer, or NOBODY
    readers: tuple = ()  # thread indices holding it for read, sorted
    waiters: tuple = ()  # (thread index, READ | WRITE) in queue order


FREE = Rwsem()


def read_trylock_ok(sem: Rwsem) -> bool:
    """``down_read_trylock``: no writer and nobody queued."""
    return sem.owner == NOBODY and not sem.waiters


def write_fast_ok(sem: Rwsem) -> bool:
    """``down_write``'s fast path: the count is zero (no holder, no waiters)."""
    return sem.owner == NOBODY and not sem.readers and not sem.waiters


def add_reader(sem: Rwsem, i: int) -> Rwsem:
    return sem._replace(readers=tuple(sorted(sem.readers + (i,))))


def drop_reader(sem: Rwsem, i: int) -> Rwsem:
    readers = list(sem.readers)
    readers.remove(i)
    return sem._replace(readers=tuple(readers))


def enqueue(sem: Rwsem, i: int, kind: str) -> Rwsem:
    return sem._replace(waiters=sem.waiters + ((i, kind),))


def waiter_may_take(sem: Rwsem, i: int) -> bool:
    """A queued thread may take the lock: a writer at the head of the queue once it is free;
    a reader once no writer holds it and only readers are queued ahead of it."""
    if sem.owner != NOBODY:
        return False
    for j, kind in sem.waiters:
        if j == i:
            return kind == READ or not sem.readers
        if kind == WRITE:
            return False
    return False


def take_from_queue(sem: Rwsem, i: int) -> Rwsem:
    kind = next(k for j, k in sem.waiters if j == i)
    waiters = tuple(w for w in sem.waiters if w[0] != i)
    if kind == WRITE:
        return sem._replace(owner=i, waiters=waiters)
    return add_reader(sem._replace(waiters=waiters), i)


def waiting(sem: Rwsem, i: int) -> bool:
    """Thread i is queued on the rwsem."""
    return any(j == i for j, _ in sem.waiters)


def holds_read(sem: Rwsem, i: int) -> bool:
    return i in sem.readers
