"""mm/memory.c of Linux 6.12, the fault path: lock_vma_under_rcu (with the maple-tree walk
mas_walk of lib/maple_tree.c it starts with), handle_mm_fault, vmf_anon_prepare (mm/internal.h)
and __vmf_anon_prepare, do_anonymous_page, the mmap_lock fallback lock_mm_and_find_vma with
get_mmap_lock_carefully, and fork's copy_page_range.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program, push
from . import rwsem
from .rwsem import NOBODY
from .mmap_lock import down_read
from .state import MM, NO_ANON_VMA, count, covers, find, set_local, set_mm
from .footprints import fp_count, fp_own_vma, fp_walk

program = Program()  # this file's steps and calls; model.py joins the files' programs


@program.call("lock_vma_under_rcu", "mm/memory.c:lock_vma_under_rcu")
def lock_vma_under_rcu(s, i, addr):
    return (Frame("rcu_read_lock"), Frame("mas_walk", addr))


@program.step("mas_walk", "lib/maple_tree.c:mas_walk",
              "find the VMA covering the address in the maple tree (RCU-safe: old or new version)", footprint=fp_walk)
def mas_walk(s, i, addr):
    v = find(s, addr)
    s = set_local(s, i, addr=addr, vma=v, ghost_writer_since_walk=s.mm.mmap_lock.owner != NOBODY)
    if v < 0:
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("vma_start_read"),))


@program.step("check_detached", "mm/memory.c:lock_vma_under_rcu",
              "if the VMA was detached (unmapped) meanwhile: vma_end_read, count a miss, walk again",
              footprint=fp_own_vma)
def check_detached(s, i, arg):
    t = s.threads[i]
    if s.vmas[t.vma].detached:
        return push(s, i, (Frame("vma_end_read", t.vma), Frame("vma_lock_miss", t.addr)))
    return push(s, i, (Frame("check_range"),))


@program.step("check_range", "mm/memory.c:lock_vma_under_rcu",
              "now stable: check vm_start <= address < vm_end, else vma_end_read and give up", footprint=fp_own_vma)
def check_range(s, i, arg):
    t = s.threads[i]
    if not covers(s.vmas[t.vma], t.addr):
        return push(s, i, (Frame("vma_end_read", t.vma), Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("rcu_read_unlock"), Frame("handle_mm_fault", "vma")))


@program.step("vma_lock_miss", "mm/memory.c:lock_vma_under_rcu",
              "count_vm_vma_lock_event(VMA_LOCK_MISS), goto retry: walk the tree again", cost=0, footprint=fp_count)
def vma_lock_miss(s, i, addr):
    return push(count(s, "vma_lock_miss"), i, (Frame("mas_walk", addr),))


@program.step("vma_lock_abort", "mm/memory.c:lock_vma_under_rcu",
              "count_vm_vma_lock_event(VMA_LOCK_ABORT), return NULL: fall back to mmap_lock",
              cost=0, footprint=fp_count)
def vma_lock_abort(s, i, arg):
    s = set_local(count(s, "vma_lock_abort"), i, vma=-1)
    return push(s, i, (Frame("lock_mm_and_find_vma", s.threads[i].addr),))


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
              "VM_FAULT_RETRY (vmf_anon_prepare then drops the VMA lock)", order=FULL)
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


@program.step("do_anonymous_page", "mm/memory.c:do_anonymous_page",
              "the VMA has its anon_vma now: allocate a zeroed page and map it (the fault's own work)",
              cost=lambda s, i, mode: s.threads[i].work, order=FULL)
def do_anonymous_page(s, i, mode):
    return fault_handled(s, i, mode)


@program.call("lock_mm_and_find_vma", "mm/memory.c:lock_mm_and_find_vma")
def lock_mm_and_find_vma(s, i, addr):
    return (Frame("get_mmap_lock_carefully"), Frame("find_vma", addr))


@program.step("get_mmap_lock_carefully", "mm/memory.c:get_mmap_lock_carefully",
              "mmap_read_trylock, else sleep in mmap_read_lock_killable behind the holder and waiters", order=FULL)
def get_mmap_lock_carefully(s, i, arg):
    return down_read(s, i, MM)


@program.step("copy_page_range", "mm/memory.c:copy_page_range",
              "copy the VMA's page tables into the child: the VMA must not change meanwhile")
def copy_page_range(s, i, v):
    return s
