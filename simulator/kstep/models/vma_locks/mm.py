"""include/linux/mm.h of Linux 6.12, the per-VMA lock helpers: vma_start_read (with the
down_read_trylock of the VMA's rwsem it takes) and its recheck, vma_end_read, vma_start_write,
vma_mark_detached, vm_flags_reset, vma_iter_clear_gfp, and lock_vma_under_rcu's stub for
CONFIG_PER_VMA_LOCK=n.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program, push
from . import rwsem
from .mmap_lock import up_read
from .state import outside, set_mm, set_vma
from .footprints import fp_seq, fp_trylock

program = Program()  # this file's steps and calls; model.py joins the files' programs


@program.step("vma_start_read", "include/linux/mm.h:vma_start_read",
              "lockless check: give up if vm_lock_seq == mm_lock_seq (the VMA may be write-locked)", footprint=fp_seq)
def vma_start_read(s, i, arg):
    vma = s.vmas[s.threads[i].vma]
    if vma.vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("down_read_trylock"),))


@program.step("down_read_trylock", "kernel/locking/rwsem.c:down_read_trylock",
              "try to read-lock the VMA's rwsem; fails at once if a writer holds it or anyone waits",
              order=FULL, footprint=fp_trylock)
def down_read_trylock(s, i, arg):
    v = s.threads[i].vma
    sem = s.vmas[v].lock
    if not rwsem.read_trylock_ok(sem):
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    s = set_vma(s, v, lock=rwsem.add_reader(sem, i))
    return push(s, i, (Frame("vma_start_read_recheck"),))


@program.step("vma_start_read_recheck", "include/linux/mm.h:vma_start_read",
              "under the rwsem, compare again with raw_read_seqcount(mm_lock_seq), an smp_load_acquire of its "
              "sequence; equal: up_read, give up",
              footprint=fp_seq)
def vma_start_read_recheck(s, i, arg):
    v = s.threads[i].vma
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("up_read", v), Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("check_detached"),))


@program.call("vma_end_read", "include/linux/mm.h:vma_end_read")
def vma_end_read(s, i, v):
    """rcu_read_lock keeps the VMA alive until up_read (and its wake-up) have finished with it."""
    return (Frame("rcu_read_lock"), Frame("up_read", v), Frame("rcu_read_unlock"))


@program.step("up_read", "kernel/locking/rwsem.c:up_read",
              "drop the VMA's read lock; a writer may take it now; if it was the last holder and waiters are "
              "queued, rwsem_wake follows", order=FULL)
def vma_up_read(s, i, v):
    return up_read(s, i, v)


def lock_vma_under_rcu_stub(s, i, addr):
    """Without CONFIG_PER_VMA_LOCK lock_vma_under_rcu returns NULL, so do_user_addr_fault goes
    straight to lock_mmap: every user fault takes mmap_lock for read."""
    return (Frame("lock_mm_and_find_vma", addr),)


@program.call("vma_start_write", "include/linux/mm.h:vma_start_write")
def vma_start_write(s, i, v):
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:  # __is_vma_write_locked: already in this epoch
        return ()
    return (Frame("down_write", v), Frame("vma_write_seq", v), Frame("up_write", v))


@program.step("vma_write_seq", "include/linux/mm.h:vma_start_write",
              "WRITE_ONCE(vma->vm_lock_seq, mm_lock_seq): the VMA is write-locked until the epoch ends")
def vma_write_seq(s, i, v):
    return set_vma(s, v, vm_lock_seq=s.mm.mm_lock_seq)


@program.step("vma_mark_detached", "include/linux/mm.h:vma_mark_detached",
              "mark the write-locked VMA detached: a fault that still finds it will miss and retry")
def vma_mark_detached(s, i, v):
    return set_vma(s, v, detached=True)


@program.step("vma_iter_clear_gfp", "include/linux/mm.h:vma_iter_clear_gfp",
              "remove the unmapped range from the maple tree: new walks no longer find those VMAs")
def vma_iter_clear_gfp(s, i, arg):
    return set_mm(s, tree=outside(s, *arg))


@program.step("vm_flags_reset", "include/linux/mm.h:vm_flags_reset",
              "store the new protection in vm_flags (the VMA must be write-locked)")
def vm_flags_reset(s, i, arg):
    v, prot, account = arg
    return set_vma(s, v, prot=prot, account=account)
