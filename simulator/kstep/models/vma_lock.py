"""Per-VMA locks as in Linux 6.12 (Suren Baghdasaryan's series, mainline since 6.4).

Read this beside ``mm/memory.c:lock_vma_under_rcu`` and ``include/linux/mm.h:vma_start_read``.

Two sequence numbers do the locking.  A writer holding ``mmap_lock`` for write marks a VMA
write-locked by copying ``mm->mm_lock_seq`` into ``vma->vm_lock_seq`` (``vma_start_write``); there is
no per-VMA unlock: ``vma_end_write_all`` bumps ``mm_lock_seq`` once and every VMA locked in that
write epoch is unlocked at the same instant.  A page fault looks the VMA up in the maple tree
under RCU and read-locks only that VMA: it gives up (and falls back to ``mmap_lock``) if the two
numbers are equal, takes the VMA's rwsem with a trylock, and checks the numbers again under the
rwsem with acquire ordering.  A VMA that munmap removed is freed with ``call_rcu``, so a fault that
found it in the tree can still read its lock and ``detached`` flag safely.

Writers run mmap (always ``MAP_FIXED``), munmap, mprotect and fork as 6.12's mm/mmap.c, mm/vma.c,
mm/mprotect.c and kernel/fork.c do: a partial unmap splits first (``__split_vma``), mmap gathers and
detaches what it maps over in the same write epoch, mprotect walks every VMA of its range and tries
``vma_merge_existing_range`` before it splits.  Which VMAs a writer write-locks and frees follows
from 6.12's merge rules, so vm_flags (the protection and ``VM_ACCOUNT``) and the anon_vma each VMA
points to are part of the state.

Simplifications, each deliberate: addresses are page numbers; every VMA is private anonymous
memory mapped at its own address, so ``vm_pgoff == vm_start`` and neighbours are always
pgoff-contiguous; faults are write faults in ``do_anonymous_page`` (no page tables are modelled);
no VMA has fork children, so an anon_vma chain is singular exactly when the VMA has an anon_vma;
after a ``vma_lock_miss`` the retried walk looks up the faulting address (6.12 walks for the old
VMA's start, a benign quirk); kernel-mode faults and the arch access checks are left out; RCU is
the non-preemptible flavour of ``models/rcu.py`` with thread i running on CPU i.  A SIGSEGV ends
the faulting thread; in Linux its default action ends the whole thread group (``do_group_exit``
sends SIGKILL to the others), which the model leaves out so that the other threads still show
what happens to the address space.
"""

from __future__ import annotations

from typing import NamedTuple

from ..engine import (HARM, Frame, Inline, Invariant, Program, ProgramModel, Replacement, Variant, push,
                      set_thread, thread_index)
from ..engine.scenario import Bool, Int, Key, List, Name, Str, Table, bad, unique_names
from . import rwsem
from .rcu import (RCU_ACTOR, RCU_GP_KTHREAD, add_rcu, call_rcu, rcu_broken, rcu_expect_functions, rcu_init,
                  rcu_invariants)
from .rwsem import NOBODY

MM = -1  # the lock argument naming mm->mmap_lock (VMA locks are named by the VMA's id)
VM_LOCK_SEQ_INIT = -1  # v6.12.0: int vm_lock_seq = -1 (6.12.88+: UINT_MAX)
UINT_MAX = (1 << 32) - 1
LIVE, RCU_PENDING, FREED = "live", "rcu-pending", "freed"
NO_ANON_VMA = -1


class Vma(NamedTuple):
    start: int  # vm_start (page number)
    end: int  # vm_end, exclusive
    vm_lock_seq: object  # an int; None without CONFIG_PER_VMA_LOCK, where the field does not exist
    detached: bool
    lock: rwsem.Rwsem  # vma->vm_lock->lock
    prot: str  # the access bits of vm_flags: "r" or "rw"
    anon_vma: int  # which anon_vma it points to, or NO_ANON_VMA (a first fault must prepare one)
    status: str  # LIVE, RCU_PENDING (vm_area_free queued its callback) or FREED
    account: bool = False  # VM_ACCOUNT in vm_flags (merges compare it with the protection)


class Mm(NamedTuple):
    mmap_lock: rwsem.Rwsem
    mm_lock_seq: int
    tree: tuple  # mm->mm_mt: VMA ids in address order; writers replace it whole (RCU mode)


class Thread(NamedTuple):
    name: str
    frames: tuple
    kind: str  # "fault" or "writer"
    addr: int = -1  # the faulting address
    vma: int = -1  # the local `vma` pointer
    work: int = 1  # rounds handle_mm_fault's own work takes (timing only; see FAULT_WORK)
    tries: int = 0  # a queued writer's failed rwsem_try_write_lock calls (its clock: see handoff_after)
    died: str = ""  # the signal that killed the thread ("SIGSEGV"), if one did
    # Ghost, read only by invariants: inside vma_start_read, a writer has held mmap_lock for write
    # since mas_walk found `vma` (VmaLocksModel.normalize clears it everywhere else).
    ghost_writer_since_walk: bool = False


class Counters(NamedTuple):
    vma_lock_success: int = 0
    vma_lock_abort: int = 0
    vma_lock_retry: int = 0
    vma_lock_miss: int = 0
    mmap_lock_faults: int = 0  # faults completed under mmap_lock (the fallback or the old path)
    sigsegv: int = 0  # faults on addresses no VMA covers


class VmaState(NamedTuple):
    threads: tuple
    mm: Mm
    vmas: tuple  # indexed by VMA id; freed VMAs keep their slot (ids are never reused)
    rcu: object
    counters: Counters
    handoff_after: object = 0  # the scenario's failed tries until RWSEM_WAIT_TIMEOUT, or rwsem.NEVER
    forever: bool = False  # a thread repeats forever: nothing is counted, so that the states are finitely many


program = Program()


# --- small pure helpers ----------------------------------------------------------------------------

def set_vma(s, v, **changes):
    return s._replace(vmas=s.vmas[:v] + (s.vmas[v]._replace(**changes),) + s.vmas[v + 1:])


def set_mm(s, **changes):
    return s._replace(mm=s.mm._replace(**changes))


def set_local(s, i, **changes):
    return set_thread(s, i, s.threads[i]._replace(**changes))


def count(s, event):
    if s.forever:
        return s
    c = s.counters
    return s._replace(counters=c._replace(**{event: getattr(c, event) + 1}))


def lock_of(s, lock):
    return s.mm.mmap_lock if lock == MM else s.vmas[lock].lock


def set_lock(s, lock, sem):
    if sem is lock_of(s, lock):  # unchanged: keep every component shared (the invariants test identity)
        return s
    if lock != MM:
        return set_vma(s, lock, lock=sem)
    if sem.owner != NOBODY and s.mm.mmap_lock.owner == NOBODY:
        s = writer_seen(s)
    return set_mm(s, mmap_lock=sem)


def writer_seen(s):
    """Ghost: a writer has just taken mmap_lock for write, so every fault inside vma_start_read has
    seen one since its walk."""
    if not any(in_vma_start_read(t) and not t.ghost_writer_since_walk for t in s.threads):
        return s
    return s._replace(threads=tuple(t._replace(ghost_writer_since_walk=True) if in_vma_start_read(t) else t
                                    for t in s.threads))


def in_vma_start_read(t):
    return bool(t.frames) and t.frames[0].label in _VMA_START_READ_PASSES


def find(s, addr):
    """The VMA in the tree covering addr, or -1 (what mas_walk and find_vma return)."""
    for v in s.mm.tree:
        vma = s.vmas[v]
        if vma.start <= addr < vma.end:
            return v
    return -1


def is_write_locked(s, v):
    """A VMA is write-locked while mmap_lock is write-held and vm_lock_seq == mm_lock_seq."""
    return s.mm.mmap_lock.owner != NOBODY and s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq


def vma_assert_write_locked(s, i, v):
    """Thread i may change VMA v: it holds mmap_lock for write and has write-locked v.  Without
    CONFIG_PER_VMA_LOCK (no vm_lock_seq) vma_assert_write_locked is mmap_assert_write_locked."""
    return s.mm.mmap_lock.owner == i and s.vmas[v].vm_lock_seq in (None, s.mm.mm_lock_seq)


def covers(vma, addr):
    return vma.start <= addr < vma.end


def overlapping(s, start, end):
    """The VMAs in the tree that intersect [start, end), in address order (for_each_vma_range)."""
    return tuple(v for v in s.mm.tree if s.vmas[v].start < end and start < s.vmas[v].end)


def outside(s, start, end):
    """The tree without the VMAs lying inside [start, end): what a maple tree store or clear of that
    range leaves.  A VMA only partly inside would keep a range the tree no longer maps to it."""
    return tuple(v for v in s.mm.tree if not (start <= s.vmas[v].start and s.vmas[v].end <= end))


def tree_store(s, v):
    """vma_iter_store: the tree maps [vm_start, vm_end) to v, overwriting what it mapped there."""
    vma = s.vmas[v]
    kept = tuple(x for x in outside(s, vma.start, vma.end) if x != v)
    return set_mm(s, tree=tuple(sorted(kept + (v,), key=lambda x: s.vmas[x].start)))


def vma_prev(s, v):
    """The VMA before v in the tree (adjacent or not), or -1."""
    k = s.mm.tree.index(v)
    return s.mm.tree[k - 1] if k else -1


def vma_next(s, v):
    """The VMA after v in the tree (adjacent or not), or -1."""
    k = s.mm.tree.index(v)
    return s.mm.tree[k + 1] if k + 1 < len(s.mm.tree) else -1


def vm_flags(vma):
    """The part of vm_flags the model keeps: what merges compare."""
    return vma.prot, vma.account


def accountable(prot):
    """mm/mmap.c:accountable_mapping: a private writable mapping is charged, so it gets VM_ACCOUNT."""
    return "w" in prot


# --- the rw_semaphores (kernel/locking/rwsem.c) ---------------------------------------------------
# The rules are models/rwsem.py's; these steps apply them to mmap_lock (MM) or to a VMA's lock.

def write_attempt(s, i, lock, sem, then):
    """Store the rwsem after writer i's attempt on it; unless i now owns it, ``then`` is its next step."""
    s = set_lock(s, lock, sem)
    return s if sem.owner == i else push(s, i, (Frame(then, lock),))


@program.step("down_write", "kernel/locking/rwsem.c:down_write",
              "rwsem_write_trylock: take the rwsem if its count is zero (no holder, no waiter), else the slowpath")
def down_write(s, i, lock):
    return write_attempt(s, i, lock, rwsem.write_trylock(lock_of(s, lock), i), "rwsem_optimistic_spin")


@program.step("rwsem_optimistic_spin", "kernel/locking/rwsem.c:rwsem_optimistic_spin",
              "spin while the owner runs: take the rwsem once it is free with HANDOFF clear, even ahead of "
              "queued waiters (rwsem_try_write_lock_unqueued); else stop spinning and queue")
def rwsem_optimistic_spin(s, i, lock):
    return write_attempt(s, i, lock, rwsem.optimistic_spin(lock_of(s, lock), i), "rwsem_down_write_slowpath")


@program.step("rwsem_down_write_slowpath", "kernel/locking/rwsem.c:rwsem_down_write_slowpath",
              "join the wait list (RWSEM_FLAG_WAITERS), wake queued readers if not first in line, then "
              "rwsem_try_write_lock: take the rwsem if it is free by now, else sleep")
def rwsem_down_write_slowpath(s, i, lock):
    return write_attempt(s, i, lock, rwsem.queue_writer(lock_of(s, lock), i), "rwsem_try_write_lock")


@program.step("rwsem_try_write_lock", "kernel/locking/rwsem.c:rwsem_try_write_lock",
              "woken, retry: take the free rwsem unless HANDOFF reserves it for another waiter; if it is "
              "held, fail, and once waited past RWSEM_WAIT_TIMEOUT set RWSEM_FLAG_HANDOFF")
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


def try_write_lock_handoff_stops_first(s, i, lock):
    """Broken: HANDOFF keeps out the first waiter, the writer it reserves the lock for."""
    return rwsem_try_write_lock(s, i, lock, handoff_stops_first=True)


@program.guard("rwsem_try_write_lock")
def write_retry_enabled(s, i, lock):
    return rwsem.write_retry_enabled(lock_of(s, lock), i)


@program.step("up_write", "kernel/locking/rwsem.c:up_write",
              "release the rwsem held for write; with waiters queued, rwsem_wake grants it to the readers "
              "first in line or wakes the writer there")
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
              "queued reader: wake up once a waker's rwsem_mark_wake has granted it the read lock")
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
              "in line, or wake the writer there; this still touches the rwsem's memory")
def rwsem_wake(s, i, lock):
    return set_lock(s, lock, rwsem.rwsem_wake(lock_of(s, lock)))


# --- mmap_lock (include/linux/mmap_lock.h) ---------------------------------------------------------

@program.call("mmap_write_lock", "include/linux/mmap_lock.h:mmap_write_lock")
def mmap_write_lock(s, i, arg):
    return (Frame("down_write", MM),)


def mmap_write_lock_seqcount(s, i, arg):
    """6.12.88+: mmap_write_lock() also starts the mm_lock_seq seqcount (it turns odd)."""
    return (Frame("down_write", MM), Frame("mm_lock_seqcount_begin"))


@program.step("mm_lock_seqcount_begin", "include/linux/mmap_lock.h:mm_lock_seqcount_begin",
              "6.12.88+: mm_lock_seq++ after taking mmap_lock for write (odd while write-locked)")
def mm_lock_seqcount_begin(s, i, arg):
    return set_mm(s, mm_lock_seq=s.mm.mm_lock_seq + 1)


@program.step("vma_end_write_all", "include/linux/mmap_lock.h:vma_end_write_all",
              "mm_lock_seq++ with release: every VMA write-locked in this epoch is unlocked at once")
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
              "readers if one is first in line")
def downgrade_write(s, i, lock):
    return set_lock(s, lock, rwsem.downgrade(lock_of(s, lock), i))


@program.step("mmap_read_unlock", "include/linux/mmap_lock.h:mmap_read_unlock",
              "up_read(mmap_lock); if it was the last holder and waiters are queued, rwsem_wake follows")
def mmap_read_unlock(s, i, arg):
    return up_read(s, i, MM)


# --- the reader side: lock_vma_under_rcu() (mm/memory.c) -------------------------------------------

@program.call("lock_vma_under_rcu", "mm/memory.c:lock_vma_under_rcu")
def lock_vma_under_rcu(s, i, addr):
    return (Frame("rcu_read_lock"), Frame("mas_walk", addr))


@program.step("mas_walk", "lib/maple_tree.c:mas_walk",
              "find the VMA covering the address in the maple tree (RCU-safe: old or new version)")
def mas_walk(s, i, addr):
    v = find(s, addr)
    s = set_local(s, i, addr=addr, vma=v, ghost_writer_since_walk=s.mm.mmap_lock.owner != NOBODY)
    if v < 0:
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("vma_start_read"),))


@program.step("vma_start_read", "include/linux/mm.h:vma_start_read",
              "lockless check: give up if vm_lock_seq == mm_lock_seq (the VMA may be write-locked)")
def vma_start_read(s, i, arg):
    vma = s.vmas[s.threads[i].vma]
    if vma.vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("down_read_trylock"),))


@program.step("down_read_trylock", "kernel/locking/rwsem.c:down_read_trylock",
              "try to read-lock the VMA's rwsem; fails at once if a writer holds it or anyone waits")
def down_read_trylock(s, i, arg):
    v = s.threads[i].vma
    sem = s.vmas[v].lock
    if not rwsem.read_trylock_ok(sem):
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    s = set_vma(s, v, lock=rwsem.add_reader(sem, i))
    return push(s, i, (Frame("vma_start_read_recheck"),))


@program.step("vma_start_read_recheck", "include/linux/mm.h:vma_start_read",
              "under the rwsem, compare again with smp_load_acquire(mm_lock_seq); equal: up_read, give up")
def vma_start_read_recheck(s, i, arg):
    v = s.threads[i].vma
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("up_read", v), Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("check_detached"),))


def recheck_skipped(s, i, arg):
    """Broken: trusts the lockless check, so a writer that locked the VMA in between is missed."""
    return push(s, i, (Frame("check_detached"),))


@program.step("check_detached", "mm/memory.c:lock_vma_under_rcu",
              "if the VMA was detached (unmapped) meanwhile: vma_end_read, count a miss, walk again")
def check_detached(s, i, arg):
    t = s.threads[i]
    if s.vmas[t.vma].detached:
        return push(s, i, (Frame("vma_end_read", t.vma), Frame("vma_lock_miss", t.addr)))
    return push(s, i, (Frame("check_range"),))


def detached_ignored(s, i, arg):
    """Broken: goes on with a VMA that munmap has already taken out of the tree."""
    return push(s, i, (Frame("check_range"),))


@program.step("check_range", "mm/memory.c:lock_vma_under_rcu",
              "now stable: check vm_start <= address < vm_end, else vma_end_read and give up")
def check_range(s, i, arg):
    t = s.threads[i]
    if not covers(s.vmas[t.vma], t.addr):
        return push(s, i, (Frame("vma_end_read", t.vma), Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("rcu_read_unlock"), Frame("handle_mm_fault", "vma")))


@program.step("vma_lock_miss", "mm/memory.c:lock_vma_under_rcu",
              "count_vm_vma_lock_event(VMA_LOCK_MISS), goto retry: walk the tree again", cost=0)
def vma_lock_miss(s, i, addr):
    return push(count(s, "vma_lock_miss"), i, (Frame("mas_walk", addr),))


@program.step("vma_lock_abort", "mm/memory.c:lock_vma_under_rcu",
              "count_vm_vma_lock_event(VMA_LOCK_ABORT), return NULL: fall back to mmap_lock", cost=0)
def vma_lock_abort(s, i, arg):
    s = set_local(count(s, "vma_lock_abort"), i, vma=-1)
    return push(s, i, (Frame("lock_mm_and_find_vma", s.threads[i].addr),))


# --- vma_end_read() (include/linux/mm.h) -----------------------------------------------------------

@program.call("vma_end_read", "include/linux/mm.h:vma_end_read")
def vma_end_read(s, i, v):
    """rcu_read_lock keeps the VMA alive until up_read (and its wake-up) have finished with it."""
    return (Frame("rcu_read_lock"), Frame("up_read", v), Frame("rcu_read_unlock"))


def vma_end_read_without_rcu(s, i, v):
    """Broken: releases the rwsem outside RCU, so the VMA may be freed under up_read's feet."""
    return (Frame("up_read", v),)


@program.step("up_read", "kernel/locking/rwsem.c:up_read",
              "drop the VMA's read lock; a writer may take it now; if it was the last holder and waiters are "
              "queued, rwsem_wake follows")
def vma_up_read(s, i, v):
    return up_read(s, i, v)


# --- the arch fault handler (arch/x86/mm/fault.c, arm64 and powerpc are alike) ----------------------

@program.call("do_user_addr_fault", "arch/x86/mm/fault.c:do_user_addr_fault")
def do_user_addr_fault(s, i, addr):
    """Try the per-VMA lock first; lock_vma_under_rcu falls back to mmap_lock by itself here."""
    return (Frame("lock_vma_under_rcu", addr),)


def lock_vma_under_rcu_stub(s, i, addr):
    """Without CONFIG_PER_VMA_LOCK lock_vma_under_rcu returns NULL, so do_user_addr_fault goes
    straight to lock_mmap: every user fault takes mmap_lock for read."""
    return (Frame("lock_mm_and_find_vma", addr),)


def anon_vma_present(s, i, mode):
    return s.vmas[s.threads[i].vma].anon_vma != NO_ANON_VMA


@program.step("handle_mm_fault", "mm/memory.c:handle_mm_fault",
              "handle the fault: do_anonymous_page maps a zeroed page (the fault's own work) if the VMA "
              "has an anon_vma; if not, vmf_anon_prepare must attach one first",
              cost=lambda s, i, mode: s.threads[i].work if anon_vma_present(s, i, mode) else 1)
def handle_mm_fault(s, i, mode):
    if not anon_vma_present(s, i, mode):
        return push(s, i, (Frame("vmf_anon_prepare", mode),))
    return fault_handled(s, i, mode)


def fault_handled(s, i, mode):
    """The page is mapped: release what the fault held (do_user_addr_fault)."""
    if mode == "vma":
        return push(s, i, (Frame("vma_end_read", s.threads[i].vma), Frame("vma_lock_success")))
    s = set_local(s, i, vma=-1)
    return push(count(s, "mmap_lock_faults"), i, (Frame("mmap_read_unlock"),))


@program.call("vmf_anon_prepare", "mm/internal.h:vmf_anon_prepare")
def vmf_anon_prepare(s, i, mode):
    """__vmf_anon_prepare; when it returns VM_FAULT_RETRY this wrapper drops the VMA lock (vma_end_read)."""
    return (Frame("__vmf_anon_prepare", mode),)


@program.step("__vmf_anon_prepare", "mm/memory.c:__vmf_anon_prepare",
              "no anon_vma: under a VMA lock only mmap_read_trylock is allowed, and if it fails return "
              "VM_FAULT_RETRY (vmf_anon_prepare then drops the VMA lock)")
def vmf_anon_prepare_trylock(s, i, mode):
    t = s.threads[i]
    if anon_vma_present(s, i, mode):  # another fault attached one meanwhile
        return push(s, i, (Frame("do_anonymous_page", mode),))
    if mode == "mmap":
        return push(s, i, (Frame("__anon_vma_prepare"), Frame("do_anonymous_page", mode)))
    sem = s.mm.mmap_lock
    if rwsem.read_trylock_ok(sem):
        s = set_mm(s, mmap_lock=rwsem.add_reader(sem, i))
        return push(s, i, (Frame("__anon_vma_prepare"), Frame("mmap_read_unlock"), Frame("do_anonymous_page", mode)))
    return push(s, i, (Frame("vma_end_read", t.vma), Frame("vma_lock_retry", t.addr)))


def vmf_anon_prepare_blocking(s, i, mode):
    """Broken: sleeps for mmap_lock while holding the VMA's read lock (inverts the lock order)."""
    s = push(s, i, (Frame("__anon_vma_prepare"), Frame("mmap_read_unlock"), Frame("do_anonymous_page", mode)))
    return down_read(s, i, MM)


@program.step("__anon_vma_prepare", "mm/rmap.c:__anon_vma_prepare",
              "attach an anon_vma, a neighbour's if find_mergeable_anon_vma finds one (the one VMA change "
              "allowed under a read lock: NULL to non-NULL)")
def anon_vma_prepare(s, i, arg):
    v = s.threads[i].vma
    if s.vmas[v].anon_vma != NO_ANON_VMA:  # checked again under mm->page_table_lock
        return s
    return set_vma(s, v, anon_vma=find_mergeable_anon_vma(s, v))


def find_mergeable_anon_vma(s, v):
    """mm/vma.c:find_mergeable_anon_vma: reuse the next VMA's anon_vma, else the previous one's, if
    reusable_anon_vma allows; else a new anon_vma (named after the VMA that first gets one)."""
    nxt, prev = vma_next(s, v), vma_prev(s, v)
    if nxt >= 0 and reusable_anon_vma(s.vmas[nxt], s.vmas[v], s.vmas[nxt]):
        return s.vmas[nxt].anon_vma
    if prev >= 0 and reusable_anon_vma(s.vmas[prev], s.vmas[prev], s.vmas[v]):
        return s.vmas[prev].anon_vma
    return v


def reusable_anon_vma(old, a, b):
    """mm/vma.c:reusable_anon_vma with anon_vma_compatible(a, b): a ends where b starts and their
    vm_flags differ at most in the access bits; old has an anon_vma (its chain is then singular)."""
    return a.end == b.start and a.account == b.account and old.anon_vma != NO_ANON_VMA


@program.step("do_anonymous_page", "mm/memory.c:do_anonymous_page",
              "the VMA has its anon_vma now: allocate a zeroed page and map it (the fault's own work)",
              cost=lambda s, i, mode: s.threads[i].work)
def do_anonymous_page(s, i, mode):
    return fault_handled(s, i, mode)


@program.step("vma_lock_success", "arch/x86/mm/fault.c:do_user_addr_fault",
              "count_vm_vma_lock_event(VMA_LOCK_SUCCESS): the fault was handled under the VMA lock", cost=0)
def vma_lock_success(s, i, arg):
    return set_local(count(s, "vma_lock_success"), i, vma=-1)


@program.step("vma_lock_retry", "arch/x86/mm/fault.c:do_user_addr_fault",
              "VM_FAULT_RETRY (the VMA lock is already dropped): count a retry, fall back to mmap_lock", cost=0)
def vma_lock_retry(s, i, addr):
    s = set_local(count(s, "vma_lock_retry"), i, vma=-1)
    return push(s, i, (Frame("lock_mm_and_find_vma", addr),))


# --- the fallback: lock_mm_and_find_vma() (mm/memory.c) --------------------------------------------

@program.call("lock_mm_and_find_vma", "mm/memory.c:lock_mm_and_find_vma")
def lock_mm_and_find_vma(s, i, addr):
    return (Frame("get_mmap_lock_carefully"), Frame("find_vma", addr))


@program.step("get_mmap_lock_carefully", "mm/memory.c:get_mmap_lock_carefully",
              "mmap_read_trylock, else sleep in mmap_read_lock_killable behind the holder and waiters")
def get_mmap_lock_carefully(s, i, arg):
    return down_read(s, i, MM)


@program.step("find_vma", "mm/mmap.c:find_vma", "look the address up with mmap_lock held for read")
def find_vma(s, i, addr):
    v = find(s, addr)
    s = set_local(s, i, addr=addr, vma=v)
    if v < 0:
        return push(s, i, (Frame("mmap_read_unlock"), Frame("bad_area_nosemaphore")))
    return push(s, i, (Frame("handle_mm_fault", "mmap"),))


@program.step("bad_area_nosemaphore", "arch/x86/mm/fault.c:bad_area_nosemaphore",
              "no VMA maps the address: force_sig_fault(SIGSEGV); with no handler its default action "
              "kills the thread on its way back to user mode", cost=0)
def bad_area_nosemaphore(s, i, arg):
    return set_local(count(s, "sigsegv"), i, frames=(), died="SIGSEGV")


# --- the writer side: vma_start_write() (include/linux/mm.h) ---------------------------------------

@program.call("vma_start_write", "include/linux/mm.h:vma_start_write")
def vma_start_write(s, i, v):
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:  # __is_vma_write_locked: already in this epoch
        return ()
    return (Frame("down_write", v), Frame("vma_write_seq", v), Frame("up_write", v))


def vma_start_write_without_rwsem(s, i, v):
    """Broken: stores vm_lock_seq without taking the VMA's rwsem, so it never waits for readers."""
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:
        return ()
    return (Frame("vma_write_seq", v),)


@program.step("vma_write_seq", "include/linux/mm.h:vma_start_write",
              "WRITE_ONCE(vma->vm_lock_seq, mm_lock_seq): the VMA is write-locked until the epoch ends")
def vma_write_seq(s, i, v):
    return set_vma(s, v, vm_lock_seq=s.mm.mm_lock_seq)


@program.step("vma_mark_detached", "include/linux/mm.h:vma_mark_detached",
              "mark the write-locked VMA detached: a fault that still finds it will miss and retry")
def vma_mark_detached(s, i, v):
    return set_vma(s, v, detached=True)


@program.step("vm_area_free", "kernel/fork.c:vm_area_free",
              "call_rcu(vm_area_free_rcu_cb): the VMA is freed after a grace period")
def vm_area_free(s, i, v):
    return call_rcu(set_vma(s, v, status=RCU_PENDING), "vm_area_free_rcu_cb", v)


@program.step("__vm_area_free", "kernel/fork.c:__vm_area_free", "free the VMA (and its lock) at once")
def vm_area_free_now(s, i, v):
    return set_vma(s, v, status=FREED)


def free_vma_rcu_cb(s, cb):
    """kernel/fork.c:vm_area_free_rcu_cb frees the VMA and its lock once the grace period ended."""
    return set_vma(s, cb.obj, status=FREED)


# --- the operations writer threads run ---------------------------------------------------------------
# sys_* are the system calls as a thread issues them; what they expand to is the kernel's code.
# Every decision below is taken with mmap_lock held for write, so no other thread can change the
# tree, a VMA's range, vm_flags or anon_vma meanwhile (a fault sets anon_vma only holding mmap_lock
# for read), and the VMAs a split creates get the next free ids in order.

@program.call("sys_mmap")
def sys_mmap(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("__mmap_region", arg), Frame("mmap_write_unlock"))


@program.call("__mmap_region", "mm/mmap.c:__mmap_region")
def mmap_region(s, i, arg):
    """MAP_FIXED: gather and detach the VMAs mapped in [start, end) (vms_gather_munmap_vmas), in this
    write epoch; expand a neighbour over the range or store a new VMA there; then free what was
    gathered (vms_complete_munmap_vmas, mmap_lock stays write-held)."""
    start, end, prot = arg
    gone = overlapping(s, start, end)
    gather = (Frame("vms_gather_munmap_vmas", (start, end)),) if gone else ()
    return gather + (Frame("vma_merge_new_range", arg), Frame("vms_complete_munmap_vmas", (gone, False)))


def mmap_region_without_unmap(s, i, arg):
    """Broken: stores the new VMA over [start, end) without gathering what is mapped there."""
    return (Frame("vma_merge_new_range", arg),)


@program.call("vma_merge_new_range", "mm/vma.c:vma_merge_new_range")
def vma_merge_new_range(s, i, arg):
    """Expand the VMA before and/or after the new range over it when vm_flags match (vma_expand).
    When neither can, __mmap_region goes on: vm_area_alloc, fill the VMA in, write-lock and store it."""
    start, end, prot = arg
    flags = (prot, accountable(prot))
    prev = max((v for v in s.mm.tree if s.vmas[v].end <= start), default=-1, key=lambda v: s.vmas[v].end)
    nxt = min((v for v in s.mm.tree if s.vmas[v].start >= end), default=-1, key=lambda v: s.vmas[v].start)
    left = can_vma_merge_left(s, prev, start, flags, NO_ANON_VMA)
    right = can_vma_merge_right(s, nxt, end, flags, NO_ANON_VMA, prev, left)
    if left or right:
        vma = prev if left else nxt
        lo = s.vmas[prev].start if left else start
        hi = s.vmas[nxt].end if right else end
        return (Frame("vma_expand", (vma, lo, hi, nxt if left and right else -1)),)
    v = len(s.vmas)
    return (Frame("vm_area_alloc"), Frame("vma_set_range", (v, start, end, prot)),
            Frame("vma_start_write", v), Frame("vma_iter_store", v))


@program.call("vma_expand", "mm/vma.c:vma_expand")
def vma_expand(s, i, arg):
    """Write-lock the VMA (and the next one it swallows), then commit_merge grows it to [lo, hi)."""
    vma, lo, hi, remove = arg
    removed = (remove,) if remove >= 0 else ()
    locks = tuple(Frame("vma_start_write", v) for v in (vma,) + removed)
    anon = dup_anon_vma(s, vma, remove) if removed else ()
    return locks + (Frame("commit_merge", (((vma, lo, hi),), vma, anon, removed)),)


def vm_area_alloc_with(vm_lock_seq_init):
    """The vm_area_alloc step for a kernel whose fresh VMAs start at this vm_lock_seq."""

    def vm_area_alloc(s, i, arg):
        vma = Vma(0, 0, vm_lock_seq_init, False, rwsem.FREE, "", NO_ANON_VMA, LIVE)
        return s._replace(vmas=s.vmas + (vma,))

    return vm_area_alloc


program.step("vm_area_alloc", "kernel/fork.c:vm_area_alloc",
             "allocate a VMA and vma_init it: no range or flags yet, attached, a fresh rwsem and the "
             "initial vm_lock_seq (vma_lock_alloc); nobody else can reach it")(vm_area_alloc_with(VM_LOCK_SEQ_INIT))


@program.step("vma_set_range", "mm/internal.h:vma_set_range",
              "__mmap_region fills in the new VMA: vma_set_range, vm_flags_init (VM_ACCOUNT if writable), "
              "vma_set_anonymous", cost=0)
def vma_set_range(s, i, arg):
    v, start, end, prot = arg
    return set_vma(s, v, start=start, end=end, prot=prot, account=accountable(prot))


@program.step("vma_iter_store", "mm/vma.h:vma_iter_store",
              "store the VMA in the maple tree over its range, overwriting what was there: walkers see "
              "the old tree or the new one, never half")
def vma_iter_store(s, i, v):
    return tree_store(s, v)


@program.call("vms_gather_munmap_vmas", "mm/vma.c:vms_gather_munmap_vmas")
def vms_gather_munmap_vmas(s, i, arg):
    """Split the first VMA at start and the last at end (__split_vma: the new VMA is the part
    outside), then write-lock and detach each VMA in [start, end); they stay in the tree."""
    start, end = arg
    gone = overlapping(s, start, end)
    frames = ()
    if s.vmas[gone[0]].start < start:
        frames += (Frame("vma_start_write", gone[0]), Frame("__split_vma", (gone[0], start, True)))
    for v in gone:
        if s.vmas[v].end > end:
            frames += (Frame("vma_start_write", v), Frame("__split_vma", (v, end, False)))
        frames += (Frame("vma_start_write", v), Frame("vma_mark_detached", v))
    return frames


@program.call("vms_complete_munmap_vmas", "mm/vma.c:vms_complete_munmap_vmas")
def vms_complete_munmap_vmas(s, i, arg):
    """munmap downgrades mmap_lock first (vms->unlock); then remove_vma frees each gathered VMA."""
    gone, unlock = arg
    frees = tuple(Frame("vm_area_free", v) for v in gone)
    if unlock:
        return (Frame("mmap_write_downgrade"),) + frees + (Frame("mmap_read_unlock"),)
    return frees


@program.call("sys_munmap")
def sys_munmap(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("do_vmi_munmap", arg))


@program.call("do_vmi_munmap", "mm/vma.c:do_vmi_munmap")
def do_vmi_munmap(s, i, arg):
    """Nothing mapped in the range: mmap_write_unlock and return."""
    if not overlapping(s, *arg):
        return (Frame("mmap_write_unlock"),)
    return (Frame("do_vmi_align_munmap", arg),)


@program.call("do_vmi_align_munmap", "mm/vma.c:do_vmi_align_munmap")
def do_vmi_align_munmap(s, i, arg):
    """Gather (split, write-lock, detach), clear the range from the tree, then complete."""
    gone = overlapping(s, *arg)
    return (Frame("vms_gather_munmap_vmas", arg), Frame("vma_iter_clear_gfp", arg),
            Frame("vms_complete_munmap_vmas", (gone, True)))


@program.step("vma_iter_clear_gfp", "include/linux/mm.h:vma_iter_clear_gfp",
              "remove the unmapped range from the maple tree: new walks no longer find those VMAs")
def vma_iter_clear_gfp(s, i, arg):
    return set_mm(s, tree=outside(s, *arg))


@program.step("__split_vma", "mm/vma.c:__split_vma",
              "vm_area_dup the write-locked VMA (the copy, unreachable, is write-locked too), shrink the "
              "original to its side of addr and store the copy (vma_complete)")
def split_vma(s, i, arg):
    v, addr, new_below = arg
    old = s.vmas[v]
    new = old._replace(end=addr, lock=rwsem.FREE) if new_below else old._replace(start=addr, lock=rwsem.FREE)
    s = set_vma(s._replace(vmas=s.vmas + (new,)), v, **({"start": addr} if new_below else {"end": addr}))
    return tree_store(s, len(s.vmas) - 1)


@program.call("sys_mprotect")
def sys_mprotect(s, i, arg):
    start, end, prot = arg
    return (Frame("mmap_write_lock"), Frame("do_mprotect_pkey", (start, end, prot, None)),
            Frame("mmap_write_unlock"))


@program.call("do_mprotect_pkey", "mm/mprotect.c:do_mprotect_pkey")
def do_mprotect_pkey(s, i, arg):
    """One turn of its for_each_vma_range loop per expansion: mprotect_fixup the VMA at nstart, then
    come back for the rest.  A hole ends the walk with -ENOMEM; what was changed stays changed."""
    start, end, prot, last = arg  # last: where the previous turn's mprotect_fixup began (None: first turn)
    if last is None:
        nstart = start
        v = next(iter(overlapping(s, start, end)), -1)  # vma_find
        if v < 0 or s.vmas[v].start > start:
            return ()  # -ENOMEM before anything changed
        prev = v if s.vmas[v].start < start else vma_prev(s, v)
    else:
        prev = find(s, last)  # *pprev: the VMA mprotect_fixup left at that address (merged or not)
        nstart = s.vmas[prev].end  # tmp = vma_iter_end(&vmi)
        v = next(iter(overlapping(s, nstart, end)), -1)
        if v < 0 or s.vmas[v].start != nstart:
            return ()  # the range is done, or -ENOMEM at a hole
    return (Frame("mprotect_fixup", (v, prev, nstart, min(s.vmas[v].end, end), prot)),
            Frame("do_mprotect_pkey", (start, end, prot, nstart)))


def mprotect_newflags(vma, prot):
    """newflags after mprotect_fixup's VM_ACCOUNT rule: made writable, a private mapping is charged
    if it was not; made read-only, it stays charged unless it has no anon_vma yet."""
    if "w" in prot:
        return prot, vma.account or "w" not in vma.prot
    return prot, vma.account and vma.anon_vma != NO_ANON_VMA


@program.call("mprotect_fixup", "mm/mprotect.c:mprotect_fixup")
def mprotect_fixup(s, i, arg):
    """newflags == oldflags (the protection is the same; VM_ACCOUNT is adjusted only after this
    check): return at once.  Else vma_modify_flags (merge, or split off what lies outside the
    range), then write-lock the resulting VMA and store its flags."""
    v, prev, start, end, prot = arg
    if prot == s.vmas[v].prot:
        return ()
    flags = mprotect_newflags(s.vmas[v], prot)
    frames, vma = vma_modify(s, v, prev, start, end, flags)
    return frames + (Frame("vma_start_write", vma), Frame("vm_flags_reset", (vma,) + flags))


def mprotect_fixup_without_vma_lock(s, i, arg):
    """Broken (like the mempolicy and dup_anon_vma bugs Jann Horn found in 6.4): changes vm_flags of
    a whole VMA without write-locking it first, so faults under the VMA lock see it change."""
    v, prev, start, end, prot = arg
    if (s.vmas[v].start, s.vmas[v].end) == (start, end) and prot != s.vmas[v].prot:
        return (Frame("vm_flags_reset", (v,) + mprotect_newflags(s.vmas[v], prot)),)
    return mprotect_fixup(s, i, arg)


def vma_modify(s, v, prev, start, end, flags):
    """mm/vma.c:vma_modify: (frames, the VMA that ends up holding [start, end)).  First
    vma_merge_existing_range; if no merge, split off the parts of the VMA outside the range."""
    merged = vma_merge_existing_range(s, v, prev, start, end, flags)
    if merged:
        return merged
    frames = ()
    if s.vmas[v].start < start:
        frames += (Frame("vma_start_write", v), Frame("__split_vma", (v, start, True)))
    if s.vmas[v].end > end:
        frames += (Frame("vma_start_write", v), Frame("__split_vma", (v, end, False)))
    return frames, v


def vma_merge_existing_range(s, v, prev, start, end, flags):
    """mm/vma.c:vma_merge_existing_range: merge [start, end) of VMA v, about to get `flags`, into
    the VMA before it and/or after it.  (frames, the merged VMA), or None when it cannot."""
    vma = s.vmas[v]
    left_side, right_side = start == vma.start, end == vma.end
    if not left_side and not right_side:
        return None
    merge_left = left_side and can_vma_merge_left(s, prev, start, flags, vma.anon_vma)
    nxt = vma_next(s, v) if right_side else -1
    merge_right = right_side and can_vma_merge_right(s, nxt, end, flags, vma.anon_vma, prev, merge_left)
    if not merge_left and not merge_right:
        return None
    locks = (v,) + ((prev,) if merge_left else ()) + ((nxt,) if merge_right else ())
    frames = tuple(Frame("vma_start_write", x) for x in locks)
    whole = left_side and right_side  # the merge deletes vma
    if merge_left and merge_right:  # prev grows over vma and next, both deleted
        res, src, ranges, removed = prev, nxt if s.vmas[nxt].anon_vma != NO_ANON_VMA else v, \
            ((prev, s.vmas[prev].start, s.vmas[nxt].end),), (v, nxt)
    elif merge_left:  # prev grows to end; vma is deleted or starts at end
        res, src, removed = prev, v, (v,) if whole else ()
        ranges = ((prev, s.vmas[prev].start, end),) + (() if whole else ((v, end, vma.end),))
    else:  # next grows down to start; vma is deleted or ends at start
        res, src, removed = nxt, v, (v,) if whole else ()
        ranges = (() if whole else ((v, vma.start, start),)) + ((nxt, start, s.vmas[nxt].end),)
    return frames + (Frame("commit_merge", (ranges, res, dup_anon_vma(s, res, src), removed)),), res


def is_mergeable_anon_vma(s, anon_vma1, anon_vma2, v):
    """mm/vma.c:is_mergeable_anon_vma; v (or -1) is the VMA whose anon_vma_chain must be singular,
    which here is exactly when it has an anon_vma."""
    if (anon_vma1 == NO_ANON_VMA or anon_vma2 == NO_ANON_VMA) and (v < 0 or s.vmas[v].anon_vma != NO_ANON_VMA):
        return True
    return anon_vma1 == anon_vma2


def can_vma_merge_left(s, prev, start, flags, anon_vma):
    """can_vma_merge_left and can_vma_merge_after: prev ends at start with the same flags and a
    compatible anon_vma (vm_pgoff is always contiguous here)."""
    return (prev >= 0 and s.vmas[prev].end == start and vm_flags(s.vmas[prev]) == flags
            and is_mergeable_anon_vma(s, anon_vma, s.vmas[prev].anon_vma, prev))


def can_vma_merge_right(s, nxt, end, flags, anon_vma, prev, merge_left):
    """can_vma_merge_right and can_vma_merge_before; merging on both sides also needs prev's and
    next's anon_vmas to be compatible with each other."""
    if not (nxt >= 0 and s.vmas[nxt].start == end and vm_flags(s.vmas[nxt]) == flags
            and is_mergeable_anon_vma(s, anon_vma, s.vmas[nxt].anon_vma, nxt)):
        return False
    return not merge_left or is_mergeable_anon_vma(s, s.vmas[prev].anon_vma, s.vmas[nxt].anon_vma, -1)


def dup_anon_vma(s, dst, src):
    """mm/vma.c:dup_anon_vma: the surviving VMA takes src's anon_vma if it has none: (dst, anon_vma) or ()."""
    if s.vmas[src].anon_vma != NO_ANON_VMA and s.vmas[dst].anon_vma == NO_ANON_VMA:
        return (dst, s.vmas[src].anon_vma)
    return ()


@program.step("commit_merge", "mm/vma.c:commit_merge",
              "the write-locked VMAs take their merged ranges and the grown one is stored over the range; "
              "vma_complete then detaches and frees each VMA the merge removed")
def commit_merge(s, i, arg):
    ranges, stored, anon, removed = arg
    for v, start, end in ranges:
        s = set_vma(s, v, start=start, end=end)
    if anon:
        s = set_vma(s, anon[0], anon_vma=anon[1])
    s = tree_store(s, stored)
    return push(s, i, tuple(f for x in removed for f in (Frame("vma_mark_detached", x), Frame("vm_area_free", x))))


@program.step("vm_flags_reset", "include/linux/mm.h:vm_flags_reset",
              "store the new protection in vm_flags (the VMA must be write-locked)")
def vm_flags_reset(s, i, arg):
    v, prot, account = arg
    return set_vma(s, v, prot=prot, account=account)


@program.call("sys_fork")
def sys_fork(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("dup_mmap"), Frame("mmap_write_unlock"))


@program.call("dup_mmap", "kernel/fork.c:dup_mmap")
def dup_mmap(s, i, arg):
    frames = ()
    for v in s.mm.tree:
        frames += (Frame("vma_start_write", v), Frame("copy_page_range", v))
    return frames


def dup_mmap_without_vma_locks(s, i, arg):
    """Broken (fixed by fb49c455323f): copies the parent's VMAs without write-locking them, so a
    fault under a VMA lock can change them while fork copies."""
    return tuple(Frame("copy_page_range", v) for v in s.mm.tree)


@program.step("copy_page_range", "mm/memory.c:copy_page_range",
              "copy the VMA's page tables into the child: the VMA must not change meanwhile")
def copy_page_range(s, i, v):
    return s


add_rcu(program, free_vma_rcu_cb)


# --- invariants ---------------------------------------------------------------------------------------

# What each step dereferences: the thread's `vma` pointer, or the VMA named by its argument.
_VIA_POINTER = {"vma_start_read", "down_read_trylock", "vma_start_read_recheck", "check_detached",
                "check_range", "handle_mm_fault", "__vmf_anon_prepare", "__anon_vma_prepare",
                "do_anonymous_page"}
_VIA_ARG = {"up_read", "rwsem_wake", "down_write", "rwsem_optimistic_spin", "rwsem_down_write_slowpath",
            "rwsem_try_write_lock", "rwsem_down_read_slowpath", "up_write",
            "vma_write_seq", "vma_mark_detached", "vm_area_free", "__vm_area_free", "vma_iter_store",
            "copy_page_range"}
# Writer steps that change or copy a VMA: the kernel asserts vma_assert_write_locked() there.
_WRITES = {
    "vma_mark_detached": lambda arg: (arg,),
    "vma_iter_store": lambda arg: (arg,),
    "__split_vma": lambda arg: (arg[0],),
    "commit_merge": lambda arg: tuple(v for v, _, _ in arg[0]) + arg[3],
    "vm_flags_reset": lambda arg: (arg[0],),
}
# The fields a fault reads that its read lock keeps stable: the range, vm_flags (with VM_ACCOUNT)
# and whether the VMA is still mapped (vm_lock_seq is the lock's own, checked by
# writer-waits-for-readers).  anon_vma may go from NULL to set under a read lock; and once a VMA is
# detached a reader may trust nothing but `detached` itself: vm_area_free's call_rcu reuses
# vm_start/vm_end as the rcu_head, which is why check_detached comes before check_range.
_FIELDS = ("start", "end", "detached", "prot", "account")


def _head(s, a):
    """(thread index, frame argument) of the step an action takes, or None for the RCU kthread."""
    if a.actor == RCU_ACTOR:
        return None
    i = thread_index(s, a.actor)
    return i, s.threads[i].frames[0][1]


# Transition checks start with identity tests: steps share every component they leave alone, so
# `s.vmas is t.vmas` proves in one comparison that no VMA changed.


def touched_vma(s, a):
    head = _head(s, a)
    if head is None:
        return -1
    i, arg = head
    if a.label in _VIA_POINTER:
        return s.threads[i].vma
    if a.label in _VIA_ARG and isinstance(arg, int) and arg != MM:
        return arg
    return -1


def vma_read_locked(s, i):
    """Thread i holds its VMA's read lock: it is among the VMA rwsem's readers, vma_start_read let
    it in (its next step is past vma_start_read_recheck) and it has not reached the up_read that
    releases it.  Between the trylock and the recheck, and in the up_read of a failed recheck, a
    fault holds the rwsem of a write-locked VMA, as it may (recheck-race)."""
    t = s.threads[i]
    return t.vma >= 0 and i in s.vmas[t.vma].lock.readers and bool(t.frames) and t.frames[0].label not in _NOT_LET_IN


_NOT_LET_IN = ("vma_start_read_recheck", "up_read")


def write_locked_set(s):
    return frozenset(v for v, vma in enumerate(s.vmas) if vma.vm_lock_seq == s.mm.mm_lock_seq)


def no_reader_in_write_locked_vma(s):
    for i, t in enumerate(s.threads):
        if vma_read_locked(s, i) and is_write_locked(s, t.vma):
            return f"{t.name} holds VMA {t.vma} read-locked while it is write-locked"
    return None


def read_locked_vma_unchanged(s, a, t):
    if s.vmas is t.vmas:
        return None
    for i, (before, after) in enumerate(zip(s.threads, t.threads)):
        if vma_read_locked(s, i) and vma_read_locked(t, i) and before.vma == after.vma:
            old, new = s.vmas[before.vma], t.vmas[before.vma]
            if old.detached:
                continue
            for f in _FIELDS:
                if getattr(old, f) != getattr(new, f):
                    return f"{a} changed {f} of VMA {before.vma} while {before.name} holds it read-locked"
    return None


def writer_waits_for_readers(s, a, t):
    if s.vmas is t.vmas and s.mm.mm_lock_seq == t.mm.mm_lock_seq:
        return None
    for v in write_locked_set(t) - write_locked_set(s):
        if v < len(t.vmas) and t.vmas[v].lock.readers and t.mm.mm_lock_seq == s.mm.mm_lock_seq:
            readers = ", ".join(t.threads[r].name for r in t.vmas[v].lock.readers)
            return f"{a} write-locked VMA {v} while {readers} hold its rwsem for read"
    return None


def no_use_after_free(s, a, t):
    v = touched_vma(s, a)
    if v >= 0 and s.vmas[v].status == FREED:
        return f"{a} touches VMA {v} after it was freed"
    return None


# The step after each check of vma_start_read when the check passes; any other next step gives up.
_VMA_START_READ_PASSES = {"vma_start_read": "down_read_trylock", "down_read_trylock": "vma_start_read_recheck",
                          "vma_start_read_recheck": "check_detached"}


def vma_start_read_fails_only_for_writers(s, a, t):
    passes = _VMA_START_READ_PASSES.get(a.label)
    if passes is None:
        return None
    i = thread_index(s, a.actor)
    before, after = s.threads[i], t.threads[i]
    if after.frames[0].label == passes or s.mm.mmap_lock.owner != NOBODY or before.ghost_writer_since_walk:
        return None
    return (f"{a} gave up on VMA {before.vma} although no writer has held mmap_lock for write since "
            f"{before.name} found it: the fault falls back to mmap_lock for nothing")


def epoch_unlocks_all(s):
    if s.mm.mmap_lock.owner == NOBODY:
        held = [v for v in write_locked_set(s) if s.vmas[v].status != FREED]
        if held:
            return f"VMA {held[0]} is still write-locked after the write epoch ended"
    return None


def fault_uses_attached_vma(s, a, t):
    if a.label == "handle_mm_fault":
        i, mode = _head(s, a)
        th = s.threads[i]
        vma = s.vmas[th.vma]
        if vma.detached or not covers(vma, th.addr):
            why = "a detached VMA" if vma.detached else f"VMA {th.vma}, which does not cover it"
            return f"{th.name} handles its fault at {th.addr} in {why}"
    return None


def writer_holds_vma_write_lock(s, a, t):
    if a.label in _WRITES:
        i, arg = _head(s, a)
        for v in _WRITES[a.label](arg):
            if not vma_assert_write_locked(s, i, v):
                return f"{a} changes VMA {v} without holding its write lock (vma_assert_write_locked)"
    return None


def fork_copies_unused_vma(s, a, t):
    if a.label == "copy_page_range":
        v = _head(s, a)[1]
        users = [th.name for i, th in enumerate(s.threads) if th.vma == v and vma_read_locked(s, i)]
        if users:
            return f"fork copies VMA {v} while {users[0]} handles a fault in it under its VMA lock"
    return None


def tree_non_overlapping(s):
    tree = s.mm.tree
    for a, b in zip(tree, tree[1:]):
        if s.vmas[b].start < s.vmas[a].end:
            return (f"VMAs {a} [{s.vmas[a].start}, {s.vmas[a].end}) and {b} [{s.vmas[b].start}, {s.vmas[b].end}) "
                    f"overlap in the maple tree")
    return None


INVARIANTS = [
    Invariant("no-reader-in-write-locked-vma",
              "vma_start_read never lets a fault into a VMA that is write-locked", no_reader_in_write_locked_vma),
    Invariant("read-locked-vma-unchanged",
              "while a fault holds an attached VMA read-locked, nothing it reads there changes: its range, "
              "its flags, whether it is mapped (anon_vma may be set)",
              read_locked_vma_unchanged, transition=True, kind=HARM),
    Invariant("writer-waits-for-readers",
              "vma_start_write cannot complete while faults hold the VMA's rwsem for read",
              writer_waits_for_readers, transition=True),
    Invariant("no-use-after-free",
              "no step touches a VMA (or its lock) after it has been freed", no_use_after_free, transition=True,
              kind=HARM),
    Invariant("vma-start-read-fails-only-for-writers",
              "vma_start_read gives up only while a writer holds mmap_lock for write or has held it since "
              "the fault found the VMA (else faults fall back to mmap_lock and the per-VMA path is lost)",
              vma_start_read_fails_only_for_writers, transition=True, kind=HARM),
    Invariant("epoch-unlocks-all",
              "every VMA write-locked in a write epoch is unlocked when the epoch ends", epoch_unlocks_all),
    Invariant("fault-uses-attached-vma",
              "a fault is handled only in an attached VMA that covers the address",
              fault_uses_attached_vma, transition=True, kind=HARM),
    Invariant("writer-holds-vma-write-lock",
              "writers change or copy a VMA only while it is write-locked (vma_assert_write_locked)",
              writer_holds_vma_write_lock, transition=True),
    Invariant("fork-copies-unused-vma",
              "dup_mmap copies a VMA only while no fault holds it (a fault could change its page tables)",
              fork_copies_unused_vma, transition=True, kind=HARM),
    Invariant("tree-non-overlapping",
              "the VMAs in the maple tree never overlap: an address belongs to at most one of them",
              tree_non_overlapping),
    *rcu_invariants(),
]


# --- variants -------------------------------------------------------------------------------------------

VARIANTS = {
    "v6.12": Variant(
        "v6.12", "Linux 6.12.0: mm_lock_seq is bumped once per write epoch (vma_end_write_all)"),
    "seqcount": Variant(
        "seqcount", "Linux 6.12.88 and later: mm_lock_seq is a seqcount, odd while mmap_lock is "
        "write-held; fresh VMAs start at vm_lock_seq = UINT_MAX",
        replaces={"mmap_write_lock": mmap_write_lock_seqcount,
                  "vm_area_alloc": Replacement(vm_area_alloc_with(UINT_MAX), what=(
                      "allocate a VMA: attached, a fresh rwsem, vm_lock_seq = UINT_MAX (6.12.88 and "
                      "later)"))},
        params={"vm_lock_seq_init": UINT_MAX}),
    "no-per-vma-lock": Variant(
        "no-per-vma-lock", "Linux 6.12 with CONFIG_PER_VMA_LOCK=n (the only way before 6.4): "
        "lock_vma_under_rcu returns NULL, so every user fault takes mmap_lock for read "
        "(lock_mm_and_find_vma); vma_start_write, vma_end_write_all and vma_mark_detached are empty, "
        "VMAs have no vm_lock_seq and vm_area_free frees at once",
        replaces={"lock_vma_under_rcu": lock_vma_under_rcu_stub, "vma_start_write": lambda s, i, v: (),
                  "vma_end_write_all": Inline(lambda s, i, arg: ()),
                  "vma_mark_detached": Inline(lambda s, i, v: ()),
                  "vm_area_free": Inline(lambda s, i, v: (Frame("__vm_area_free", v),)),
                  "vm_area_alloc": Replacement(vm_area_alloc_with(None), what=(
                      "allocate a VMA and vma_init it: no range or flags yet; with CONFIG_PER_VMA_LOCK=n "
                      "it has no VMA lock and no vm_lock_seq; nobody else can reach it"))},
        params={"vm_lock_seq_init": None}),
    "no-recheck": Variant.bug(
        "no-recheck", "vma_start_read trusts its lockless check and skips the recheck under the rwsem",
        vma_start_read_recheck=recheck_skipped),
    "free-immediately": Variant.bug(
        "free-immediately", "vm_area_free frees the VMA at once instead of after an RCU grace period",
        vm_area_free=vm_area_free_now),
    "no-detached-check": Variant.bug(
        "no-detached-check", "lock_vma_under_rcu does not check whether the VMA was detached",
        check_detached=detached_ignored),
    "end-read-outside-rcu": Variant.bug(
        "end-read-outside-rcu", "vma_end_read releases the rwsem without holding rcu_read_lock",
        vma_end_read=vma_end_read_without_rcu),
    "no-seq-bump": Variant.bug(
        "no-seq-bump", "the writer forgets to bump mm_lock_seq when its write epoch ends",
        vma_end_write_all=lambda s, i, arg: s),
    "write-lock-without-rwsem": Variant.bug(
        "write-lock-without-rwsem", "vma_start_write stores vm_lock_seq without taking the VMA's rwsem, "
        "so it does not wait for readers", vma_start_write=vma_start_write_without_rwsem),
    "anon-prepare-blocks": Variant.bug(
        "anon-prepare-blocks", "vmf_anon_prepare sleeps on mmap_lock while holding the VMA read lock "
        "(a trylock is the rule)", __vmf_anon_prepare=vmf_anon_prepare_blocking),
    "mprotect-without-vma-lock": Variant.bug(
        "mprotect-without-vma-lock", "mprotect changes a VMA's vm_flags without vma_start_write "
        "(the shape of the 6.4 mempolicy and dup_anon_vma bugs)", mprotect_fixup=mprotect_fixup_without_vma_lock),
    "map-fixed-without-unmap": Variant.bug(
        "map-fixed-without-unmap", "__mmap_region stores the new VMA without first gathering and "
        "unmapping the VMAs mapped in its range", __mmap_region=mmap_region_without_unmap),
    "fork-without-vma-locks": Variant.bug(
        "fork-without-vma-locks", "dup_mmap copies the parent's VMAs without write-locking them "
        "(the memory corruption fixed by fb49c455323f)", dup_mmap=dup_mmap_without_vma_locks),
    "handoff-stops-first": Variant.bug(
        "handoff-stops-first", "rwsem_try_write_lock honours RWSEM_FLAG_HANDOFF against the first waiter "
        "instead of the others (kernel/locking/rwsem.c:620, `waiter != first` made `waiter == first`): the "
        "writer that set HANDOFF can never take the free lock and retries without sleeping, while HANDOFF "
        "keeps every other locker queued", rwsem_try_write_lock=try_write_lock_handoff_stops_first),
    **rcu_broken(free_vma_rcu_cb),
}


# --- scenarios -------------------------------------------------------------------------------------------

PAGES = 64  # addresses are page numbers 0..PAGES-1
PROTS = ("r", "rw")
OPS = ("mmap", "munmap", "mprotect", "fork")


def _vma_rules(vma, path):
    if vma["start"] >= vma["end"]:
        raise bad(path, f"start {vma['start']} must be below end {vma['end']}")


def _op_rules(op, path):
    if op["op"] != "fork" and op["start"] >= op["end"]:
        raise bad(path, f"{op['op']} needs start below end (got {op['start']}..{op['end']})")


def _thread_rules(t, path):
    if t["kind"] == "fault" and not t["faults"]:
        raise bad(path + ".faults", "a fault thread needs at least one address")
    if t["kind"] == "writer" and not t["ops"]:
        raise bad(path + ".ops", "a writer thread needs at least one operation")


def _scenario_rules(sc, path):
    vmas = sorted(sc["vmas"], key=lambda v: v["start"])
    for a, b in zip(vmas, vmas[1:]):
        if b["start"] < a["end"]:
            raise bad("vmas", f"[{a['start']}, {a['end']}) and [{b['start']}, {b['end']}) overlap")
    names = [n for t in sc["threads"] for n in thread_names(t)]
    unique_names(names, (RCU_ACTOR,), "threads")
    if len(names) > MAX_THREADS:
        raise bad("threads", f"{len(names)} threads; at most {MAX_THREADS}")


MAX_THREADS = 16
FOREVER = "forever"  # a thread's repeat with no end: the state keeps no count (liveness)
# A fault's own work (allocate a page, zero it, set the PTE) against one lock operation: zeroing a
# 4 KiB page took 18 times as long as an uncontended atomic read-modify-write on the development
# machine (90 ns against 5 ns), so a fault handles its page in 18 rounds by default.
FAULT_WORK = 18


def thread_names(t):
    return [t["name"]] if t["count"] == 1 else [f"{t['name']}{k}" for k in range(1, t["count"] + 1)]


SCHEMA = Table({
    "vmas": Key(List(Table({
        "start": Key(Int(0, PAGES - 1, "vm_start, a page number")),
        "end": Key(Int(1, PAGES, "vm_end (exclusive)")),
        "prot": Key(Str(PROTS, doc="protection"), "rw"),
        "anon_vma": Key(Bool(doc="already has an anon_vma (false: the first fault must prepare one)"), True),
    }, rules=_vma_rules), 0, 8, "the address space at the start, non-overlapping")),
    "threads": Key(List(Table({
        "name": Key(Name(doc="actor name (a count > 1 appends 1, 2, ...)", max_len=10)),
        "kind": Key(Str(("fault", "writer"), doc="fault: takes page faults; writer: runs mm syscalls")),
        "count": Key(Int(1, MAX_THREADS, "how many identical threads"), 1),
        "repeat": Key(Int(1, 50, "how many times the thread runs its list (\"forever\": with no end, for "
                              "kstep explore --liveness)", words=(FOREVER,)), 1),
        "faults": Key(List(Int(0, PAGES - 1), 0, 16, "fault: the addresses it faults on, in order"), []),
        "work": Key(Int(1, 1000, "fault: rounds each fault's own work takes under round-robin "
                              "(timing only; exploration ignores it)"), FAULT_WORK),
        "ops": Key(List(Table({
            "op": Key(Str(OPS, doc="the system call; mmap is MAP_FIXED (it replaces what is mapped in the range)")),
            "start": Key(Int(0, PAGES - 1, "first page of the range"), 0),
            "end": Key(Int(0, PAGES, "end of the range (exclusive)"), 0),
            "prot": Key(Str(PROTS, doc="mmap/mprotect: the protection"), "rw"),
        }, rules=_op_rules), 0, 16, "writer: the operations, in order"), []),
    }, rules=_thread_rules), 1, MAX_THREADS, "the threads, each on its own CPU")),
    "handoff_after": Key(Int(0, 20, "RWSEM_WAIT_TIMEOUT, counted in a queued writer's failed "
                                    "rwsem_try_write_lock calls: the failed try after this many sets "
                                    "RWSEM_FLAG_HANDOFF (0: the first, at any moment, for the engine has "
                                    "no clock; \"never\": readers may steal ahead of the writer forever)",
                         words=(rwsem.NEVER,)), 0),
}, rules=_scenario_rules)


@program.call("thread_loop")
def thread_loop(s, i, frames):
    """A thread whose list repeats forever: its list, then the loop again."""
    return frames + (Frame("thread_loop", frames),)


def _program(t):
    frames = _list(t)
    return (Frame("thread_loop", frames),) if t["repeat"] == FOREVER else frames * t["repeat"]


def _list(t):
    if t["kind"] == "fault":
        return tuple(Frame("do_user_addr_fault", a) for a in t["faults"])
    frames = []
    for op in t["ops"]:
        if op["op"] == "mmap":
            frames.append(Frame("sys_mmap", (op["start"], op["end"], op["prot"])))
        elif op["op"] == "munmap":
            frames.append(Frame("sys_munmap", (op["start"], op["end"])))
        elif op["op"] == "mprotect":
            frames.append(Frame("sys_mprotect", (op["start"], op["end"], op["prot"])))
        else:
            frames.append(Frame("sys_fork"))
    return tuple(frames)


# --- the model -------------------------------------------------------------------------------------------

def rwsem_name(lock) -> str:
    """An rw_semaphore as the player names it: mmap_lock, or a VMA's lock by the VMA's id."""
    return "mmap_lock" if lock == MM else f"VMA {lock}'s lock"


# What a step acts on (the player names it, so two down_write steps on different locks differ): the
# rwsem its frame names (MM or a VMA's id), mmap_lock itself, the VMA or the address in its frame, or the
# VMA the fault found (its local ``vma``).
ON_LOCK = frozenset({"down_write", "rwsem_optimistic_spin", "rwsem_down_write_slowpath", "rwsem_try_write_lock",
                     "up_write", "rwsem_down_read_slowpath", "rwsem_wake", "downgrade_write", "up_read"})
ON_MMAP_LOCK = frozenset({"mm_lock_seqcount_begin", "vma_end_write_all", "mmap_read_unlock",
                          "get_mmap_lock_carefully"})
ON_VMA = frozenset({"vma_write_seq", "vma_mark_detached", "vm_area_free", "__vm_area_free"})
ON_ADDRESS = frozenset({"mas_walk", "vma_lock_miss", "find_vma", "vma_lock_retry"})
ON_FOUND_VMA = frozenset({"vma_start_read", "down_read_trylock", "vma_start_read_recheck", "check_detached",
                          "check_range"})


class VmaLocksModel(ProgramModel):
    name = "vma-locks"
    title = "Per-VMA locks: page faults under RCU and one VMA's read lock"
    program = program
    daemons = {RCU_ACTOR: RCU_GP_KTHREAD}
    default_variant = "v6.12"
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA
    # Progress (liveness): a fault handles its page; a writer releases a rwsem it held for write.
    progress_labels = frozenset({"handle_mm_fault", "up_write"})

    def unstarted(self, config):
        init = self.variant.params.get("vm_lock_seq_init", VM_LOCK_SEQ_INIT)
        # Each VMA was mmapped on its own, so each one with an anon_vma has its own (named after it).
        vmas = tuple(Vma(v["start"], v["end"], init, False, rwsem.FREE, v["prot"],
                         k if v["anon_vma"] else NO_ANON_VMA, LIVE, accountable(v["prot"]))
                     for k, v in enumerate(sorted(config["vmas"], key=lambda v: v["start"])))
        threads = tuple(Thread(name, _program(t), t["kind"], work=t["work"])
                        for t in config["threads"] for name in thread_names(t))
        mm = Mm(rwsem.FREE, 0, tuple(range(len(vmas))))
        return VmaState(threads, mm, vmas, rcu_init(len(threads)), Counters(), config["handoff_after"],
                        any(t["repeat"] == FOREVER for t in config["threads"]))

    def normalize(self, state, i):
        """Clear the ghost outside vma_start_read, so that it never tells two equal states apart."""
        state = super().normalize(state, i)
        t = state.threads[i]
        if t.ghost_writer_since_walk and not in_vma_start_read(t):
            state = set_local(state, i, ghost_writer_since_walk=False)
        return forget_sections(state) if state.forever else state

    def acts_on(self, s, action):
        if action.actor not in {t.name for t in s.threads}:
            return ""
        t = s.threads[thread_index(s, action.actor)]
        arg = t.frames[0].arg if t.frames and t.frames[0].label == action.label else None
        if action.label in ON_LOCK:
            return rwsem_name(arg)
        if action.label in ON_MMAP_LOCK:
            return "mmap_lock"
        if action.label in ON_VMA:
            return f"VMA {arg}"
        if action.label in ON_ADDRESS:
            return f"address {arg}"
        if action.label in ON_FOUND_VMA and t.vma >= 0:
            return f"VMA {t.vma}"
        return ""

    def how_ended(self, s, actor):
        dead = [t.died for t in s.threads if t.name == actor and t.died]
        return f"killed by {dead[0]}" if dead else ""

    def blocked_on(self, s, actor):
        """A thread queued on an rwsem (its next step's guard waits for a grant or a free lock)."""
        if actor in self.daemons:  # the RCU kthread is idle, never blocked
            return ""
        t = s.threads[thread_index(s, actor)]
        if not t.frames or t.frames[0].label not in ("rwsem_try_write_lock", "rwsem_down_read_slowpath"):
            return ""
        lock = t.frames[0].arg
        sem, names = lock_of(s, lock), [u.name for u in s.threads]
        held = ([f"held for write by {names[sem.owner]}"] if sem.owner != NOBODY else []) + \
            ([f"held for read by {', '.join(names[r] for r in sem.readers)}"] if sem.readers else [])
        return f"{rwsem_name(lock)} ({'; '.join(held) or 'free, granted in queue order'})"

    def summary(self, s):
        names = [t.name for t in s.threads]
        out = {"mm_lock_seq": str(s.mm.mm_lock_seq), "mmap_lock": _sem_text(s.mm.mmap_lock, names)}
        for v in s.mm.tree:
            vma = s.vmas[v]
            parts = [f"[{vma.start},{vma.end}) {vma.prot}"]
            if vma.vm_lock_seq is not None:
                parts.append(f"seq={vma.vm_lock_seq}" + (" W" if is_write_locked(s, v) else ""))
            held = _sem_text(vma.lock, names)
            out[f"vma{v}"] = " ".join(parts + ([held] if held != "-" else []))
        dead = [f"{t.name} ({t.died})" for t in s.threads if t.died]
        if dead:
            out["killed"] = ", ".join(dead)
        return out

    def expect_functions(self):
        """RCU's helpers, plus mmap_writer() (the name of the thread holding mmap_lock for write, or
        "") and tree_overlaps() (two VMAs in the maple tree share an address)."""
        def mmap_writer(s):
            owner = s.mm.mmap_lock.owner
            return s.threads[owner].name if owner != NOBODY else ""

        return {**rcu_expect_functions(), "mmap_writer": mmap_writer,
                "tree_overlaps": lambda s: tree_non_overlapping(s) is not None}

    def answers(self, trace):
        final = trace.states[-1]
        killed = ", ".join(f"{t.name} by {t.died}" for t in final.threads if t.died) or "none"
        counted = ({"counters": "not kept: a thread repeats forever, and a count would keep its states from ever "
                                "repeating"} if final.forever else final.counters._asdict())
        return {**counted, "killed": killed, **trace.stats}


def forget_sections(s):
    """A run that goes on forever counts no read-side sections nobody remembers: RCU's ghost numbers a
    CPU's sections only so that a grace period's holdouts and a callback's readers can be found again,
    so a count that none of them names starts again from zero (else the states would never repeat)."""
    r = s.rcu
    named = {c for c, _ in r.ghost_holdouts} | {c for cb in r.callbacks for c, _ in cb.ghost_readers}
    section = tuple(n if c in named or r.nesting[c] else 0 for c, n in enumerate(r.ghost_section))
    return s if section == r.ghost_section else s._replace(rcu=r._replace(ghost_section=section))


def _sem_text(sem, names):
    parts = []
    if sem.owner != NOBODY:
        parts.append("W:" + names[sem.owner])
    if sem.readers:
        parts.append("R:" + ",".join(names[r] for r in sem.readers))
    if sem.waiters:
        parts.append("wait:" + ",".join(f"{names[w]}({k})" for w, k in sem.waiters))
    if sem.handoff:
        parts.append("HANDOFF")
    return " ".join(parts) or "-"
