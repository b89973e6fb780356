"""The state of the per-VMA lock model: mm (its mmap_lock, mm_lock_seq and maple tree), the VMAs,
the threads, the event counters; and small pure helpers over the state that the kernel-file modules
share (the tree walks of lib/maple_tree.c and mm/vma.h, vma_assert_write_locked of
include/linux/mm.h, mm/mmap.c's accountable_mapping).
"""

from __future__ import annotations

from typing import NamedTuple

from ...engine import set_thread
from ...engine.records import fast_replace
from . import rwsem
from .rwsem import NOBODY


MM = -1  # the lock argument naming mm->mmap_lock (VMA locks are named by the VMA's id)
UINT_MAX = (1 << 32) - 1
VM_LOCK_SEQ_INIT = UINT_MAX  # vma_lock_alloc: unsigned vm_lock_seq = UINT_MAX (since the seqcount, 6.12.88)
VM_LOCK_SEQ_INIT_6_12_0 = -1  # 6.12.0: int vm_lock_seq = -1
LIVE, RCU_PENDING, FREED = "live", "rcu-pending", "freed"
NO_ANON_VMA = -1


@fast_replace
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


@fast_replace
class Mm(NamedTuple):
    mmap_lock: rwsem.Rwsem
    mm_lock_seq: int
    tree: tuple  # mm->mm_mt: VMA ids in address order; writers replace it whole (RCU mode)


@fast_replace
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


@fast_replace
class Counters(NamedTuple):
    vma_lock_success: int = 0
    vma_lock_abort: int = 0
    vma_lock_retry: int = 0
    vma_lock_miss: int = 0
    mmap_lock_faults: int = 0  # faults completed under mmap_lock (the fallback or the old path)
    sigsegv: int = 0  # faults on addresses no VMA covers


@fast_replace
class VmaState(NamedTuple):
    threads: tuple
    mm: Mm
    vmas: tuple  # indexed by VMA id; freed VMAs keep their slot (ids are never reused)
    rcu: object
    counters: Counters
    handoff_after: object = 0  # the scenario's failed tries until RWSEM_WAIT_TIMEOUT, or rwsem.NEVER
    forever: bool = False  # a thread repeats forever: nothing is counted, so that the states are finitely many



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
    return bool(t.frames) and t.frames[0].label in VMA_START_READ_PASSES


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


# The step after each check of vma_start_read when the check passes; any other next step gives up.
VMA_START_READ_PASSES = {"vma_start_read": "down_read_trylock", "down_read_trylock": "vma_start_read_recheck",
                         "vma_start_read_recheck": "check_detached"}
