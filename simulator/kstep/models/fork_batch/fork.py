"""kernel/fork.c of Linux 6.12: dup_mmap, as this model fills it in around vma-locks' own: the copy
of each VMA's page tables (copy_page_range, which memory.py's steps carry out) inside
write_protect_seq, and the TLB flush.
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from ..vma_locks import fork as vl_fork
from ..vma_locks import state as vl
from . import pgtable as pt
from .pgtable import PTRS_PER_PTE
from .state import Copy, bump, is_cow_mapping


def add_dup_mmap(program: Program) -> None:
    @program.call("dup_mmap", "kernel/fork.c:dup_mmap")
    def dup_mmap(s, i, arg):
        return vl_fork.dup_mmap(s, i, arg) + (Frame("flush_tlb_mm"),)

    @program.step("flush_tlb_mm", "arch/x86/include/asm/tlbflush.h:flush_tlb_mm",
                  "dup_mmap ends with flush_tlb_mm(oldmm): one flush of the parent's TLB entries, so no "
                  "CPU keeps a writable translation of a page the copy write-protected")
    def flush_tlb_mm(s, i, arg):
        return bump(s, pt.TLB_FLUSHES)

    @program.step("copy_page_range", "mm/memory.c:copy_page_range",
                  "vma_needs_copy (the VMA has an anon_vma, or the child keeps uffd-wp) else nothing to do; "
                  "for a private (COW) mapping raw_write_seqcount_begin(write_protect_seq), then walk the "
                  "page tables down to each PTE table (copy_pmd_range)")
    def copy_page_range(s, i, v):
        vma, vm = s.vmas[v], s.vm[v]
        if not (vm.uffd_wp or vma.anon_vma != vl.NO_ANON_VMA):
            return s
        cow = is_cow_mapping(vm)
        s = s._replace(copy=Copy(vma=v), ghost_snap=s.parent,
                       write_protect_seq=s.write_protect_seq + 1 if cow else s.write_protect_seq)
        frames = []
        addr = vma.start
        while addr != vma.end:  # copy_pmd_range: pmd_addr_end, one copy_pte_range per PTE table
            nxt = min((addr // PTRS_PER_PTE + 1) * PTRS_PER_PTE, vma.end)
            frames.append(Frame("copy_pte_range", (addr, nxt)))
            addr = nxt
        if cow:
            frames.append(Frame("raw_write_seqcount_end"))
        return push(s, i, frames)

    @program.step("raw_write_seqcount_end", "include/linux/seqlock.h:raw_write_seqcount_end",
                  "copy_page_range is done with a COW mapping: write_protect_seq becomes even again, and a "
                  "GUP-fast that starts from here on may pin")
    def raw_write_seqcount_end(s, i, arg):
        return s._replace(write_protect_seq=s.write_protect_seq + 1)
