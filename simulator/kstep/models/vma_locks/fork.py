"""kernel/fork.c of Linux 6.12: the VMA's allocation and freeing (vm_area_alloc, vm_area_free
through call_rcu, __vm_area_free and its RCU callback), and fork's dup_mmap.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program
from ..rcu import call_rcu
from . import rwsem
from .state import FREED, LIVE, NO_ANON_VMA, RCU_PENDING, VM_LOCK_SEQ_INIT, Vma, set_vma

program = Program()  # this file's steps and calls; model.py joins the files' programs


@program.step("vm_area_free", "kernel/fork.c:vm_area_free",
              "call_rcu(vm_area_free_rcu_cb): the VMA is freed after a grace period",
              order=FULL)  # the callback's grace period is chosen under the rcu_node lock (rcu_accelerate_cbs)
def vm_area_free(s, i, v):
    return call_rcu(set_vma(s, v, status=RCU_PENDING), "vm_area_free_rcu_cb", v)


@program.step("__vm_area_free", "kernel/fork.c:__vm_area_free", "free the VMA (and its lock) at once")
def vm_area_free_now(s, i, v):
    return set_vma(s, v, status=FREED)


def free_vma_rcu_cb(s, cb):
    """kernel/fork.c:vm_area_free_rcu_cb frees the VMA and its lock once the grace period ended."""
    return set_vma(s, cb.obj, status=FREED)


def vm_area_alloc_with(vm_lock_seq_init):
    """The vm_area_alloc step for a kernel whose fresh VMAs start at this vm_lock_seq."""

    def vm_area_alloc(s, i, arg):
        vma = Vma(0, 0, vm_lock_seq_init, False, rwsem.FREE, "", NO_ANON_VMA, LIVE)
        return s._replace(vmas=s.vmas + (vma,))

    return vm_area_alloc


program.step("vm_area_alloc", "kernel/fork.c:vm_area_alloc",
             "allocate a VMA and vma_init it: no range or flags yet, attached, a fresh rwsem and the "
             "initial vm_lock_seq (vma_lock_alloc); nobody else can reach it")(vm_area_alloc_with(VM_LOCK_SEQ_INIT))


@program.call("sys_fork")
def sys_fork(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("dup_mmap"), Frame("mmap_write_unlock"))


@program.call("dup_mmap", "kernel/fork.c:dup_mmap")
def dup_mmap(s, i, arg):
    frames = ()
    for v in s.mm.tree:
        frames += (Frame("vma_start_write", v), Frame("copy_page_range", v))
    return frames
