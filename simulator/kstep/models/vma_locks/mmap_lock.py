"""include/linux/mmap_lock.h of Linux 6.12.117 (mmap_write_lock with mm_lock_seqcount_begin,
mmap_write_unlock, vma_end_write_all, mmap_write_downgrade, mmap_read_unlock; 6.12.0's
mmap_write_lock for its dated variant), and the steps of kernel/locking/rwsem.c (down_write,
rwsem_optimistic_spin, rwsem_down_write_slowpath, rwsem_try_write_lock, up_write, down_read,
rwsem_down_read_slowpath, up_read, rwsem_wake, downgrade_write) that apply rwsem.py's rules to
mmap_lock or to a VMA's lock.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program, push
from . import rwsem
from .state import MM, lock_of, set_local, set_lock, set_mm

program = Program()  # this file's steps and calls; model.py joins the files' programs


# The rules are rwsem.py's; these steps apply them to mmap_lock (MM) or to a VMA's lock.


def write_attempt(s, i, lock, sem, then):
    """Store the rwsem after writer i's attempt on it; unless i now owns it, ``then`` is its next step."""
    s = set_lock(s, lock, sem)
    return s if sem.owner == i else push(s, i, (Frame(then, lock),))


@program.step("down_write", "kernel/locking/rwsem.c:down_write",
              "rwsem_write_trylock: take the rwsem if its count is zero (no holder, no waiter), else the slowpath",
              order=FULL)
def down_write(s, i, lock):
    return write_attempt(s, i, lock, rwsem.write_trylock(lock_of(s, lock), i), "rwsem_optimistic_spin")


@program.step("rwsem_optimistic_spin", "kernel/locking/rwsem.c:rwsem_optimistic_spin",
              "spin while the owner runs: take the rwsem once it is free with HANDOFF clear, even ahead of "
              "queued waiters (rwsem_try_write_lock_unqueued); else stop spinning and queue", order=FULL)
def rwsem_optimistic_spin(s, i, lock):
    return write_attempt(s, i, lock, rwsem.optimistic_spin(lock_of(s, lock), i), "rwsem_down_write_slowpath")


@program.step("rwsem_down_write_slowpath", "kernel/locking/rwsem.c:rwsem_down_write_slowpath",
              "join the wait list (RWSEM_FLAG_WAITERS), wake queued readers if not first in line, then "
              "rwsem_try_write_lock: take the rwsem if it is free by now, else sleep", order=FULL)
def rwsem_down_write_slowpath(s, i, lock):
    return write_attempt(s, i, lock, rwsem.queue_writer(lock_of(s, lock), i), "rwsem_try_write_lock")


@program.step("rwsem_try_write_lock", "kernel/locking/rwsem.c:rwsem_try_write_lock",
              "woken, retry: take the free rwsem unless HANDOFF reserves it for another waiter; if it is "
              "held, fail, and once waited past RWSEM_WAIT_TIMEOUT set RWSEM_FLAG_HANDOFF", order=FULL)
def rwsem_try_write_lock(s, i, lock, handoff_stops_first=False):
    tries = s.threads[i].tries
    sem = rwsem.write_retry(lock_of(s, lock), i, rwsem.timed_out(tries, s.handoff_after), handoff_stops_first)
    if sem.owner == i:
        tries = 0
    elif not sem.handoff and s.handoff_after != rwsem.NEVER:
        tries += 1
    if tries != s.threads[i].tries:
        s = set_local(s, i, tries=tries)
    return write_attempt(s, i, lock, sem, "rwsem_try_write_lock")


@program.guard("rwsem_try_write_lock")
def write_retry_enabled(s, i, lock):
    return rwsem.write_retry_enabled(lock_of(s, lock), i)


@program.step("up_write", "kernel/locking/rwsem.c:up_write",
              "release the rwsem held for write; with waiters queued, rwsem_wake grants it to the readers "
              "first in line or wakes the writer there", order=FULL)
def up_write(s, i, lock):
    return set_lock(s, lock, rwsem.up_write(lock_of(s, lock)))


def down_read(s, i, lock):
    """down_read: the fast path, else rwsem_down_read_slowpath steals the lock or queues."""
    sem = lock_of(s, lock)
    if rwsem.read_trylock_ok(sem):
        return set_lock(s, lock, rwsem.add_reader(sem, i))
    sem, queued = rwsem.read_slowpath(sem, i)
    s = set_lock(s, lock, sem)
    return push(s, i, (Frame("rwsem_down_read_slowpath", lock),)) if queued else s


@program.step("rwsem_down_read_slowpath", "kernel/locking/rwsem.c:rwsem_down_read_slowpath",
              "queued reader: wake up once a waker's rwsem_mark_wake has granted it the read lock", order=FULL)
def rwsem_down_read_slowpath(s, i, lock):
    return s


@program.guard("rwsem_down_read_slowpath")
def read_granted(s, i, lock):
    sem = lock_of(s, lock)
    return rwsem.holds_read(sem, i) and not rwsem.waiting(sem, i)


def up_read(s, i, lock):
    """__up_read: drop the read hold; the last holder with waiters queued goes on to rwsem_wake."""
    sem, wake = rwsem.up_read(lock_of(s, lock), i)
    s = set_lock(s, lock, sem)
    return push(s, i, (Frame("rwsem_wake", lock),)) if wake else s


@program.step("rwsem_wake", "kernel/locking/rwsem.c:rwsem_wake",
              "take sem->wait_lock and rwsem_mark_wake: grant the lock to the queued readers if one is first "
              "in line, or wake the writer there; this still touches the rwsem's memory", order=FULL)
def rwsem_wake(s, i, lock):
    return set_lock(s, lock, rwsem.rwsem_wake(lock_of(s, lock)))


@program.call("mmap_write_lock", "include/linux/mmap_lock.h:mmap_write_lock")
def mmap_write_lock(s, i, arg):
    return (Frame("down_write", MM), Frame("mm_lock_seqcount_begin"))


def mmap_write_lock_6_12_0(s, i, arg):
    """6.12.0: mmap_write_lock() is down_write() alone; mm_lock_seq moves only when the epoch ends."""
    return (Frame("down_write", MM),)


@program.step("mm_lock_seqcount_begin", "include/linux/mmap_lock.h:mm_lock_seqcount_begin",
              "do_raw_write_seqcount_begin: mm_lock_seq++ then smp_wmb(); odd while mmap_lock is write-held")
def mm_lock_seqcount_begin(s, i, arg):
    return set_mm(s, mm_lock_seq=s.mm.mm_lock_seq + 1)


@program.step("vma_end_write_all", "include/linux/mmap_lock.h:vma_end_write_all",
              "mm_lock_seqcount_end: smp_wmb() then a plain mm_lock_seq++ (even again): the epoch's stores are "
              "ordered before it, its loads are not (6.12.0's release ordered both); every VMA write-locked "
              "in this epoch is unlocked at once")
def vma_end_write_all(s, i, arg):
    return set_mm(s, mm_lock_seq=s.mm.mm_lock_seq + 1)


@program.call("mmap_write_unlock", "include/linux/mmap_lock.h:mmap_write_unlock")
def mmap_write_unlock(s, i, arg):
    return (Frame("vma_end_write_all"), Frame("up_write", MM))


@program.call("mmap_write_downgrade", "include/linux/mmap_lock.h:mmap_write_downgrade")
def mmap_write_downgrade(s, i, arg):
    return (Frame("vma_end_write_all"), Frame("downgrade_write", MM))


@program.step("downgrade_write", "kernel/locking/rwsem.c:downgrade_write",
              "turn the write hold into a read hold; rwsem_downgrade_wake grants the lock to the queued "
              "readers if one is first in line", order=FULL)
def downgrade_write(s, i, lock):
    return set_lock(s, lock, rwsem.downgrade(lock_of(s, lock), i))


@program.step("mmap_read_unlock", "include/linux/mmap_lock.h:mmap_read_unlock",
              "up_read(mmap_lock); if it was the last holder and waiters are queued, rwsem_wake follows", order=FULL)
def mmap_read_unlock(s, i, arg):
    return up_read(s, i, MM)
