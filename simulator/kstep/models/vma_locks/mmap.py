"""mm/mmap.c of Linux 6.12: the mmap and munmap system calls, __mmap_region (always MAP_FIXED
here), and find_vma.
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from .state import find, overlapping, set_local

program = Program()  # this file's steps and calls; model.py joins the files' programs


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


@program.step("find_vma", "mm/mmap.c:find_vma", "look the address up with mmap_lock held for read")
def find_vma(s, i, addr):
    v = find(s, addr)
    s = set_local(s, i, addr=addr, vma=v)
    if v < 0:
        return push(s, i, (Frame("mmap_read_unlock"), Frame("bad_area_nosemaphore")))
    return push(s, i, (Frame("handle_mm_fault", "mmap"),))


@program.call("sys_munmap")
def sys_munmap(s, i, arg):
    return (Frame("mmap_write_lock"), Frame("do_vmi_munmap", arg))
