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

Simplifications, each deliberate: addresses are page numbers; a fault either finds an anon_vma
or prepares one and then completes (no page tables); after a ``vma_lock_miss`` the retried walk
looks up the faulting address (6.12 walks for the old VMA's start, a benign quirk); kernel-mode
faults and the arch access checks are left out; RCU is the non-preemptible flavour of
``models/rcu.py`` with thread i running on CPU i.
"""

from __future__ import annotations

from typing import NamedTuple

from ..engine import HARM, Frame, Invariant, Program, ProgramModel, Variant, push, set_thread, thread_index
from ..engine.scenario import Bool, Int, Key, List, Name, Str, Table, bad, unique_names
from . import rwsem
from .rcu import RCU_ACTOR, add_rcu, call_rcu, rcu_broken, rcu_init, rcu_invariants
from .rwsem import NOBODY, READ, WRITE

MM = -1  # the lock argument naming mm->mmap_lock (VMA locks are named by the VMA's id)
VM_LOCK_SEQ_INIT = -1  # v6.12.0: int vm_lock_seq = -1 (6.12.88+: UINT_MAX)
UINT_MAX = (1 << 32) - 1
LIVE, RCU_PENDING, FREED = "live", "rcu-pending", "freed"


class Vma(NamedTuple):
    start: int  # vm_start (page number)
    end: int  # vm_end, exclusive
    vm_lock_seq: int
    detached: bool
    lock: rwsem.Rwsem  # vma->vm_lock->lock
    prot: str  # what mprotect changes in vm_flags
    anon_vma: bool  # has an anon_vma (a first fault without one must prepare it)
    status: str  # LIVE, RCU_PENDING (vm_area_free queued its callback) or FREED


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
    vma_locked: bool = False  # vma_start_read() succeeded and vma_end_read() has not released it
    work: int = 1  # rounds handle_mm_fault's own work takes (timing only; see FAULT_WORK)


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


program = Program()


# --- small pure helpers ----------------------------------------------------------------------------

def set_vma(s, v, **changes):
    return s._replace(vmas=s.vmas[:v] + (s.vmas[v]._replace(**changes),) + s.vmas[v + 1:])


def set_mm(s, **changes):
    return s._replace(mm=s.mm._replace(**changes))


def set_local(s, i, **changes):
    return set_thread(s, i, s.threads[i]._replace(**changes))


def count(s, event):
    c = s.counters
    return s._replace(counters=c._replace(**{event: getattr(c, event) + 1}))


def lock_of(s, lock):
    return s.mm.mmap_lock if lock == MM else s.vmas[lock].lock


def set_lock(s, lock, sem):
    return set_mm(s, mmap_lock=sem) if lock == MM else set_vma(s, lock, lock=sem)


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


def covers(vma, addr):
    return vma.start <= addr < vma.end


# --- the rw_semaphores (kernel/locking/rwsem.c) ---------------------------------------------------

@program.step("down_write", "kernel/locking/rwsem.c:down_write",
              "take the rwsem for write, or queue and wait if anyone holds it or waits")
def down_write(s, i, lock):
    sem = lock_of(s, lock)
    if rwsem.write_fast_ok(sem):
        return set_lock(s, lock, sem._replace(owner=i))
    s = set_lock(s, lock, rwsem.enqueue(sem, i, WRITE))
    return push(s, i, (Frame("rwsem_down_write_slowpath", lock),))


def take_queued(s, i, lock):
    """A waiter takes the rwsem it queued on, once the queue rules let it."""
    return set_lock(s, lock, rwsem.take_from_queue(lock_of(s, lock), i))


def may_take_queued(s, i, lock):
    return rwsem.waiter_may_take(lock_of(s, lock), i)


for _label, _what in (
        ("rwsem_down_write_slowpath", "a queued writer takes the rwsem once it is free and first in the queue"),
        ("rwsem_down_read_slowpath", "a queued reader takes the rwsem once no writer holds it or waits ahead of it")):
    program.step(_label, f"kernel/locking/rwsem.c:{_label}", _what)(take_queued)
    program.guard(_label)(may_take_queued)


@program.step("up_write", "kernel/locking/rwsem.c:up_write", "release the rwsem held for write")
def up_write(s, i, lock):
    return set_lock(s, lock, lock_of(s, lock)._replace(owner=NOBODY))


def down_read(s, i, lock):
    """down_read: take it for read, or queue behind the holder or the waiters."""
    sem = lock_of(s, lock)
    if rwsem.read_trylock_ok(sem):
        return set_lock(s, lock, rwsem.add_reader(sem, i))
    s = set_lock(s, lock, rwsem.enqueue(sem, i, READ))
    return push(s, i, (Frame("rwsem_down_read_slowpath", lock),))


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
              "turn the write hold into a read hold; queued readers may now enter")
def downgrade_write(s, i, lock):
    sem = lock_of(s, lock)
    return set_lock(s, lock, rwsem.add_reader(sem._replace(owner=NOBODY), i))


@program.step("mmap_read_unlock", "include/linux/mmap_lock.h:mmap_read_unlock",
              "release mmap_lock held for read")
def mmap_read_unlock(s, i, arg):
    return set_mm(s, mmap_lock=rwsem.drop_reader(s.mm.mmap_lock, i))


# --- the reader side: lock_vma_under_rcu() (mm/memory.c) -------------------------------------------

@program.call("lock_vma_under_rcu", "mm/memory.c:lock_vma_under_rcu")
def lock_vma_under_rcu(s, i, addr):
    return (Frame("rcu_read_lock"), Frame("mas_walk", addr))


@program.step("mas_walk", "lib/maple_tree.c:mas_walk",
              "find the VMA covering the address in the maple tree (RCU-safe: old or new version)")
def mas_walk(s, i, addr):
    v = find(s, addr)
    s = set_local(s, i, addr=addr, vma=v)
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
    s = set_local(s, i, vma_locked=True)
    return push(s, i, (Frame("check_detached"),))


def recheck_skipped(s, i, arg):
    """Broken: trusts the lockless check, so a writer that locked the VMA in between is missed."""
    s = set_local(s, i, vma_locked=True)
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
              "drop the VMA's read lock; a writer may take it now; if waiters are queued, wake them")
def up_read(s, i, v):
    sem = s.vmas[v].lock
    s = set_local(set_vma(s, v, lock=rwsem.drop_reader(sem, i)), i, vma_locked=False)
    if sem.waiters:
        return push(s, i, (Frame("rwsem_wake", v),))
    return s


@program.step("rwsem_wake", "kernel/locking/rwsem.c:rwsem_wake",
              "take sem->wait_lock and wake the waiters: this still touches the VMA's lock memory")
def rwsem_wake(s, i, v):
    return s


# --- the arch fault handler (arch/x86/mm/fault.c, arm64 and powerpc are alike) ----------------------

@program.call("do_user_addr_fault", "arch/x86/mm/fault.c:do_user_addr_fault")
def do_user_addr_fault(s, i, addr):
    """Try the per-VMA lock first; lock_vma_under_rcu falls back to mmap_lock by itself here."""
    return (Frame("lock_vma_under_rcu", addr),)


def do_user_addr_fault_mmap_lock_only(s, i, addr):
    """Before 6.4: every user fault takes mmap_lock for read."""
    return (Frame("lock_mm_and_find_vma", addr),)


@program.step("handle_mm_fault", "mm/memory.c:handle_mm_fault",
              "handle the fault in the VMA (under its read lock, or under mmap_lock)",
              cost=lambda s, i, mode: s.threads[i].work)
def handle_mm_fault(s, i, mode):
    t = s.threads[i]
    if mode == "vma":
        if not s.vmas[t.vma].anon_vma:
            return push(s, i, (Frame("__vmf_anon_prepare"),))
        return push(s, i, (Frame("vma_end_read", t.vma), Frame("vma_lock_success")))
    s = set_local(set_vma(s, t.vma, anon_vma=True), i, vma=-1)
    return push(count(s, "mmap_lock_faults"), i, (Frame("mmap_read_unlock"),))


@program.step("__vmf_anon_prepare", "mm/memory.c:__vmf_anon_prepare",
              "no anon_vma yet: it needs mmap_lock, but under a VMA lock only mmap_read_trylock is allowed")
def vmf_anon_prepare(s, i, arg):
    t = s.threads[i]
    sem = s.mm.mmap_lock
    if rwsem.read_trylock_ok(sem):
        s = set_mm(s, mmap_lock=rwsem.add_reader(sem, i))
        return push(s, i, (Frame("__anon_vma_prepare"), Frame("mmap_read_unlock"),
                           Frame("handle_mm_fault", "vma")))
    return push(s, i, (Frame("vma_end_read", t.vma), Frame("vma_lock_retry", t.addr)))


def vmf_anon_prepare_blocking(s, i, arg):
    """Broken: sleeps for mmap_lock while holding the VMA's read lock (inverts the lock order)."""
    s = push(s, i, (Frame("__anon_vma_prepare"), Frame("mmap_read_unlock"), Frame("handle_mm_fault", "vma")))
    return down_read(s, i, MM)


@program.step("__anon_vma_prepare", "mm/rmap.c:__anon_vma_prepare",
              "attach an anon_vma (the one VMA change allowed under a read lock: NULL to non-NULL)")
def anon_vma_prepare(s, i, arg):
    return set_vma(s, s.threads[i].vma, anon_vma=True)


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
        return push(count(s, "sigsegv"), i, (Frame("mmap_read_unlock"),))
    return push(s, i, (Frame("handle_mm_fault", "mmap"),))


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


def vm_area_free_now(s, i, v):
    """Broken: frees the VMA at once, although RCU readers may still hold a pointer to it."""
    return set_vma(s, v, status=FREED)


def free_vma_rcu_cb(s, cb):
    """kernel/fork.c:vm_area_free_rcu_cb frees the VMA and its lock once the grace period ended."""
    return set_vma(s, cb.obj, status=FREED)


# --- the operations writer threads run ---------------------------------------------------------------
# These are the system calls as a thread issues them; what they expand to is the kernel's code.

@program.call("sys_mmap")
def sys_mmap(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("vm_area_alloc", arg), Frame("mmap_write_unlock"))


def vm_area_alloc_with(vm_lock_seq_init):
    """The vm_area_alloc step for a kernel whose fresh VMAs start at this vm_lock_seq."""

    def vm_area_alloc(s, i, arg):
        start, end, prot = arg
        v = len(s.vmas)
        vma = Vma(start, end, vm_lock_seq_init, False, rwsem.FREE, prot, False, LIVE)
        s = s._replace(vmas=s.vmas + (vma,))
        return push(s, i, (Frame("vma_start_write", v), Frame("vma_iter_store", v)))

    return vm_area_alloc


program.step("vm_area_alloc", "kernel/fork.c:vm_area_alloc",
             "allocate a VMA: attached (6.12 marks new VMAs attached), a fresh rwsem, vm_lock_seq unset")(
    vm_area_alloc_with(VM_LOCK_SEQ_INIT))


@program.step("vma_iter_store", "mm/vma.h:vma_iter_store",
              "store the VMA in the maple tree: walkers see the old tree or the new one, never half")
def vma_iter_store(s, i, v):
    return set_mm(s, tree=tuple(sorted(s.mm.tree + (v,), key=lambda x: s.vmas[x].start)))


@program.call("sys_munmap")
def sys_munmap(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("do_vmi_align_munmap", arg))


@program.call("do_vmi_align_munmap", "mm/vma.c:do_vmi_align_munmap")
def do_vmi_align_munmap(s, i, arg):
    """Gather (write-lock and detach each VMA), clear the tree, then complete (downgrade, free)."""
    start, end = arg
    gone = tuple(v for v in s.mm.tree if s.vmas[v].start < end and start < s.vmas[v].end)
    gather = ()
    for v in gone:  # vms_gather_munmap_vmas
        gather += (Frame("vma_start_write", v), Frame("vma_mark_detached", v))
    complete = (Frame("mmap_write_downgrade"),) + tuple(Frame("vm_area_free", v) for v in gone)
    return gather + (Frame("vma_iter_clear_gfp", gone),) + complete + (Frame("mmap_read_unlock"),)


@program.step("vma_iter_clear_gfp", "include/linux/mm.h:vma_iter_clear_gfp",
              "remove the unmapped range from the maple tree: new walks no longer find those VMAs")
def vma_iter_clear_gfp(s, i, gone):
    return set_mm(s, tree=tuple(v for v in s.mm.tree if v not in gone))


@program.call("sys_mprotect")
def sys_mprotect(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("mprotect_fixup", arg), Frame("mmap_write_unlock"))


@program.call("mprotect_fixup", "mm/mprotect.c:mprotect_fixup")
def mprotect_fixup(s, i, arg):
    """Give [start, end) a new protection: split the VMA where the range starts or ends inside
    it, then either merge it with neighbours that already have that protection
    (vma_merge_existing_range) or change its flags."""
    start, end, prot = arg
    v = find(s, start)
    if v < 0 or s.vmas[v].end < end:
        return ()  # -ENOMEM: the range is not inside one VMA
    vma = s.vmas[v]
    if vma.start < start:
        return (Frame("vma_start_write", v), Frame("__split_vma", (v, start)), Frame("mprotect_fixup", arg))
    if end < vma.end:
        return (Frame("vma_start_write", v), Frame("__split_vma", (v, end)), Frame("mprotect_fixup", arg))
    prev = next((n for n in s.mm.tree if s.vmas[n].end == start and s.vmas[n].prot == prot), -1)
    nxt = next((n for n in s.mm.tree if s.vmas[n].start == end and s.vmas[n].prot == prot), -1)
    if prev < 0 and nxt < 0:
        return (Frame("vma_start_write", v), Frame("vm_flags_reset", (v, prot)))
    keep = prev if prev >= 0 else nxt
    removed = (v, nxt) if prev >= 0 and nxt >= 0 else (v,)
    lo = s.vmas[keep].start if prev >= 0 else start
    hi = s.vmas[nxt].end if nxt >= 0 else end
    frames = tuple(Frame("vma_start_write", x) for x in (keep,) + removed)
    frames += (Frame("commit_merge", (keep, lo, hi, removed)),)
    for x in removed:  # vma_complete() detaches and frees each removed VMA
        frames += (Frame("vma_mark_detached", x), Frame("vm_area_free", x))
    return frames


def mprotect_fixup_without_vma_lock(s, i, arg):
    """Broken (like the mempolicy and dup_anon_vma bugs Jann Horn found in 6.4): changes vm_flags of
    a whole VMA without write-locking it first, so faults under the VMA lock see it change."""
    start, end, prot = arg
    v = find(s, start)
    if v >= 0 and (s.vmas[v].start, s.vmas[v].end) == (start, end):
        return (Frame("vm_flags_reset", (v, prot)),)
    return mprotect_fixup(s, i, arg)


@program.step("__split_vma", "mm/vma.c:__split_vma",
              "split the write-locked VMA: a write-locked copy takes the upper part, the tree is updated")
def split_vma(s, i, arg):
    v, at = arg
    new = len(s.vmas)
    upper = s.vmas[v]._replace(start=at, vm_lock_seq=s.mm.mm_lock_seq, lock=rwsem.FREE)
    s = set_vma(s._replace(vmas=s.vmas + (upper,)), v, end=at)
    return vma_iter_store(s, i, new)


@program.step("commit_merge", "mm/vma.c:commit_merge",
              "the surviving VMA grows over the merged range; the others leave the tree")
def commit_merge(s, i, arg):
    keep, lo, hi, removed = arg
    s = set_vma(s, keep, start=lo, end=hi)
    return set_mm(s, tree=tuple(v for v in s.mm.tree if v not in removed))


@program.step("vm_flags_reset", "include/linux/mm.h:vm_flags_reset",
              "store the new protection in vm_flags (the VMA must be write-locked)")
def vm_flags_reset(s, i, arg):
    v, prot = arg
    return set_vma(s, v, prot=prot)


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
                "check_range", "handle_mm_fault", "__vmf_anon_prepare", "__anon_vma_prepare"}
_VIA_ARG = {"up_read", "rwsem_wake", "down_write", "rwsem_down_write_slowpath", "up_write",
            "vma_write_seq", "vma_mark_detached", "vm_area_free", "vma_iter_store", "copy_page_range"}
# Writer steps that change or copy a VMA: the kernel asserts vma_assert_write_locked() there.
_WRITES = {
    "vma_mark_detached": lambda arg: (arg,),
    "vma_iter_store": lambda arg: (arg,),
    "__split_vma": lambda arg: (arg[0],),
    "commit_merge": lambda arg: (arg[0],) + tuple(arg[3]),
    "vm_flags_reset": lambda arg: (arg[0],),
}
# The fields a read lock keeps stable.  anon_vma may go from NULL to set under a read lock; and
# once a VMA is detached a reader may trust nothing but `detached` itself: vm_area_free's call_rcu
# reuses vm_start/vm_end as the rcu_head, which is why check_detached comes before check_range.
_FIELDS = ("start", "end", "vm_lock_seq", "detached", "prot")


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


def write_locked_set(s):
    return frozenset(v for v, vma in enumerate(s.vmas) if vma.vm_lock_seq == s.mm.mm_lock_seq)


def no_reader_in_write_locked_vma(s):
    for t in s.threads:
        if t.vma_locked and is_write_locked(s, t.vma):
            return f"{t.name} holds VMA {t.vma} read-locked while it is write-locked"
    return None


def read_locked_vma_unchanged(s, a, t):
    if s.vmas is t.vmas:
        return None
    for before, after in zip(s.threads, t.threads):
        if before.vma_locked and after.vma_locked and before.vma == after.vma:
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
            if not (s.mm.mmap_lock.owner == i and s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq):
                return f"{a} changes VMA {v} without holding its write lock (vma_assert_write_locked)"
    return None


def fork_copies_unused_vma(s, a, t):
    if a.label == "copy_page_range":
        v = _head(s, a)[1]
        users = [th.name for th in s.threads if th.vma_locked and th.vma == v]
        if users:
            return f"fork copies VMA {v} while {users[0]} handles a fault in it under its VMA lock"
    return None


INVARIANTS = [
    Invariant("no-reader-in-write-locked-vma",
              "vma_start_read never lets a fault into a VMA that is write-locked", no_reader_in_write_locked_vma),
    Invariant("read-locked-vma-unchanged",
              "while a fault holds an attached VMA read-locked, none of its fields change "
              "(anon_vma may be set)",
              read_locked_vma_unchanged, transition=True, kind=HARM),
    Invariant("writer-waits-for-readers",
              "vma_start_write cannot complete while faults hold the VMA's rwsem for read",
              writer_waits_for_readers, transition=True),
    Invariant("no-use-after-free",
              "no step touches a VMA (or its lock) after it has been freed", no_use_after_free, transition=True,
              kind=HARM),
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
    *rcu_invariants(),
]


# --- variants -------------------------------------------------------------------------------------------

VARIANTS = {
    "v6.12": Variant(
        "v6.12", "Linux 6.12.0: mm_lock_seq is bumped once per write epoch (vma_end_write_all)"),
    "seqcount": Variant(
        "seqcount", "Linux 6.12.88 and later: mm_lock_seq is a seqcount, odd while mmap_lock is "
        "write-held; fresh VMAs start at vm_lock_seq = UINT_MAX",
        replaces={"mmap_write_lock": mmap_write_lock_seqcount, "vm_area_alloc": vm_area_alloc_with(UINT_MAX)},
        params={"vm_lock_seq_init": UINT_MAX}),
    "mmap-lock-only": Variant(
        "mmap-lock-only", "before Linux 6.4: every user page fault takes mmap_lock for read",
        replaces={"do_user_addr_fault": do_user_addr_fault_mmap_lock_only}),
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
    "fork-without-vma-locks": Variant.bug(
        "fork-without-vma-locks", "dup_mmap copies the parent's VMAs without write-locking them "
        "(the memory corruption fixed by fb49c455323f)", dup_mmap=dup_mmap_without_vma_locks),
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
        "repeat": Key(Int(1, 50, "how many times the thread runs its list"), 1),
        "faults": Key(List(Int(0, PAGES - 1), 0, 16, "fault: the addresses it faults on, in order"), []),
        "work": Key(Int(1, 1000, "fault: rounds each fault's own work takes under round-robin "
                              "(timing only; exploration ignores it)"), FAULT_WORK),
        "ops": Key(List(Table({
            "op": Key(Str(OPS, doc="the system call")),
            "start": Key(Int(0, PAGES - 1, "first page of the range"), 0),
            "end": Key(Int(0, PAGES, "end of the range (exclusive)"), 0),
            "prot": Key(Str(PROTS, doc="mmap/mprotect: the protection"), "rw"),
        }, rules=_op_rules), 0, 16, "writer: the operations, in order"), []),
    }, rules=_thread_rules), 1, MAX_THREADS, "the threads, each on its own CPU")),
}, rules=_scenario_rules)


def _program(t):
    if t["kind"] == "fault":
        return tuple(Frame("do_user_addr_fault", a) for a in t["faults"]) * t["repeat"]
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
    return tuple(frames) * t["repeat"]


# --- the model -------------------------------------------------------------------------------------------

class VmaLocksModel(ProgramModel):
    name = "vma-locks"
    title = "Per-VMA locks: page faults under RCU and one VMA's read lock"
    program = program
    daemons = {RCU_ACTOR: ("rcu_gp_init", "rcu_qs", "rcu_gp_cleanup", "rcu_do_batch")}
    default_variant = "v6.12"
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA

    def initial(self, config):
        init = self.variant.params.get("vm_lock_seq_init", VM_LOCK_SEQ_INIT)
        vmas = tuple(Vma(v["start"], v["end"], init, False, rwsem.FREE, v["prot"], v["anon_vma"], LIVE)
                     for v in sorted(config["vmas"], key=lambda v: v["start"]))
        threads = tuple(Thread(name, _program(t), t["kind"], work=t["work"])
                        for t in config["threads"] for name in thread_names(t))
        mm = Mm(rwsem.FREE, 0, tuple(range(len(vmas))))
        return self.start(VmaState(threads, mm, vmas, rcu_init(len(threads)), Counters()))

    def summary(self, s):
        names = [t.name for t in s.threads]
        out = {"mm_lock_seq": str(s.mm.mm_lock_seq), "mmap_lock": _sem_text(s.mm.mmap_lock, names)}
        for v in s.mm.tree:
            vma = s.vmas[v]
            flags = "W" if is_write_locked(s, v) else ""
            held = _sem_text(vma.lock, names)
            out[f"vma{v}"] = f"seq={vma.vm_lock_seq}{' ' + flags if flags else ''}{' ' + held if held != '-' else ''}"
        return out

    def answers(self, trace):
        final = trace.states[-1]
        return {**final.counters._asdict(), **trace.stats}


def _sem_text(sem, names):
    parts = []
    if sem.owner != NOBODY:
        parts.append("W:" + names[sem.owner])
    if sem.readers:
        parts.append("R:" + ",".join(names[r] for r in sem.readers))
    if sem.waiters:
        parts.append("wait:" + ",".join(f"{names[w]}({k})" for w, k in sem.waiters))
    return " ".join(parts) or "-"
