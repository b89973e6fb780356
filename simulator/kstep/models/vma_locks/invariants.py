"""The invariants of the per-VMA lock model, named after what they protect: no reader in a
write-locked VMA, a read-locked VMA stays unchanged, writers wait for readers, no use after free,
vma_start_read fails only for writers, an epoch unlocks all, faults use attached VMAs, writers hold
the VMA write lock, fork copies only unused VMAs, the tree does not overlap; and RCU's own.
"""

from __future__ import annotations

from ...engine import HARM, Invariant, thread_index
from ..rcu import RCU_ACTOR, rcu_invariants
from .rwsem import NOBODY
from .state import FREED, MM, VMA_START_READ_PASSES, covers, is_write_locked, vma_assert_write_locked


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
# The fault's steps that declare footprints (footprints.py) and change its own record: its vma
# pointer or its next step, which is what vma_read_locked reads of it.
_FAULT_PATH = {"mas_walk", "vma_lock_miss", "vma_lock_abort", "vma_lock_success", "vma_lock_retry",
               "bad_area_nosemaphore"}


def write_locked_set(s):
    return frozenset(v for v, vma in enumerate(s.vmas) if vma.vm_lock_seq == s.mm.mm_lock_seq)


def no_reader_in_write_locked_vma(s):
    if s.mm.mmap_lock.owner == NOBODY:  # no VMA is write-locked (is_write_locked)
        return None
    for i, t in enumerate(s.threads):
        if vma_read_locked(s, i) and is_write_locked(s, t.vma):
            return f"{t.name} holds VMA {t.vma} read-locked while it is write-locked"
    return None


def read_locked_vma_unchanged(s, a, t):
    if s.vmas is t.vmas:
        return None
    for i, (before, after) in enumerate(zip(s.threads, t.threads)):
        if before.vma < 0 or before.vma != after.vma:
            continue
        old, new = s.vmas[before.vma], t.vmas[before.vma]
        if old is new or old.detached:  # steps share every VMA they leave alone
            continue
        if vma_read_locked(s, i) and vma_read_locked(t, i):
            for f in _FIELDS:
                if getattr(old, f) != getattr(new, f):
                    return f"{a} changed {f} of VMA {before.vma} while {before.name} holds it read-locked"
    return None


def writer_waits_for_readers(s, a, t):
    if s.vmas is t.vmas or s.mm.mm_lock_seq != t.mm.mm_lock_seq:  # what is reported needs both
        return None
    if len(s.vmas) == len(t.vmas) and all(x.vm_lock_seq == y.vm_lock_seq for x, y in zip(s.vmas, t.vmas)):
        return None  # with the same mm_lock_seq, no VMA became write-locked
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


def vma_start_read_fails_only_for_writers(s, a, t):
    passes = VMA_START_READ_PASSES.get(a.label)
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
              "vma_start_read never lets a fault into a VMA that is write-locked", no_reader_in_write_locked_vma,
              reads=("mm", "vmas", "threads"), steps=frozenset(_VIA_POINTER | set(_NOT_LET_IN) | _FAULT_PATH)),
    Invariant("read-locked-vma-unchanged",
              "while a fault holds an attached VMA read-locked, nothing it reads there changes: its range, "
              "its flags, whether it is mapped (anon_vma may be set)",
              read_locked_vma_unchanged, transition=True, kind=HARM),
    Invariant("writer-waits-for-readers",
              "vma_start_write cannot complete while faults hold the VMA's rwsem for read",
              writer_waits_for_readers, transition=True),
    Invariant("no-use-after-free",
              "no step touches a VMA (or its lock) after it has been freed", no_use_after_free, transition=True,
              kind=HARM, steps=frozenset(_VIA_POINTER | _VIA_ARG)),
    Invariant("vma-start-read-fails-only-for-writers",
              "vma_start_read gives up only while a writer holds mmap_lock for write or has held it since "
              "the fault found the VMA (else faults fall back to mmap_lock and the per-VMA path is lost)",
              vma_start_read_fails_only_for_writers, transition=True, kind=HARM,
              steps=frozenset(VMA_START_READ_PASSES)),
    Invariant("epoch-unlocks-all",
              "every VMA write-locked in a write epoch is unlocked when the epoch ends", epoch_unlocks_all,
              reads=("mm", "vmas")),
    Invariant("fault-uses-attached-vma",
              "a fault is handled only in an attached VMA that covers the address",
              fault_uses_attached_vma, transition=True, kind=HARM, steps=frozenset({"handle_mm_fault"})),
    Invariant("writer-holds-vma-write-lock",
              "writers change or copy a VMA only while it is write-locked (vma_assert_write_locked)",
              writer_holds_vma_write_lock, transition=True, steps=frozenset(_WRITES)),
    Invariant("fork-copies-unused-vma",
              "dup_mmap copies a VMA only while no fault holds it (a fault could change its page tables)",
              fork_copies_unused_vma, transition=True, kind=HARM, steps=frozenset({"copy_page_range"})),
    Invariant("tree-non-overlapping",
              "the VMAs in the maple tree never overlap: an address belongs to at most one of them",
              tree_non_overlapping, reads=("mm", "vmas")),
    *rcu_invariants(),
]
