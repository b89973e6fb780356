"""mm/mprotect.c of Linux 6.12: the mprotect system call, do_mprotect_pkey's walk over the VMAs
of its range, and mprotect_fixup, which tries vma_modify before it changes a VMA's vm_flags.
"""

from __future__ import annotations

from ...engine import Frame, Program
from .state import NO_ANON_VMA, find, overlapping, vma_prev
from .vma import vma_modify

program = Program()  # this file's steps and calls; model.py joins the files' programs


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
