"""arch/x86/mm/fault.c of Linux 6.12 (arm64's and powerpc's fault handlers are alike):
do_user_addr_fault, which tries the per-VMA lock first (vma_lock_success, vma_lock_retry) and falls
back to mmap_lock, and bad_area_nosemaphore.
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from .state import count, set_local
from .footprints import fp_count

program = Program()  # this file's steps and calls; model.py joins the files' programs


@program.call("do_user_addr_fault", "arch/x86/mm/fault.c:do_user_addr_fault")
def do_user_addr_fault(s, i, addr):
    """Try the per-VMA lock first; lock_vma_under_rcu falls back to mmap_lock by itself here."""
    return (Frame("lock_vma_under_rcu", addr),)


@program.step("vma_lock_success", "arch/x86/mm/fault.c:do_user_addr_fault",
              "count_vm_vma_lock_event(VMA_LOCK_SUCCESS): the fault was handled under the VMA lock",
              cost=0, footprint=fp_count)
def vma_lock_success(s, i, arg):
    return set_local(count(s, "vma_lock_success"), i, vma=-1)


@program.step("vma_lock_retry", "arch/x86/mm/fault.c:do_user_addr_fault",
              "VM_FAULT_RETRY (the VMA lock is already dropped): count a retry, fall back to mmap_lock",
              cost=0, footprint=fp_count)
def vma_lock_retry(s, i, addr):
    s = set_local(count(s, "vma_lock_retry"), i, vma=-1)
    return push(s, i, (Frame("lock_mm_and_find_vma", addr),))


@program.step("bad_area_nosemaphore", "arch/x86/mm/fault.c:bad_area_nosemaphore",
              "no VMA maps the address: force_sig_fault(SIGSEGV); with no handler its default action "
              "kills the thread on its way back to user mode", cost=0, footprint=fp_count)
def bad_area_nosemaphore(s, i, arg):
    return set_local(count(s, "sigsegv"), i, frames=(), died="SIGSEGV")
