"""mm/vma.c of Linux 6.12 (with mm/vma.h's vma_iter_store and mm/internal.h's vma_set_range): the
writer-side operations on VMAs -- vma_merge_new_range, vma_expand, the munmap gather and complete
(vms_gather_munmap_vmas, vms_complete_munmap_vmas, do_vmi_munmap, do_vmi_align_munmap),
__split_vma, and the merge of an existing range (vma_modify, vma_merge_existing_range, its
can_vma_merge_* rules, dup_anon_vma, commit_merge).
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from . import rwsem
from .state import NO_ANON_VMA, accountable, overlapping, set_vma, tree_store, vm_flags, vma_next

program = Program()  # this file's steps and calls; model.py joins the files' programs


@program.call("vma_merge_new_range", "mm/vma.c:vma_merge_new_range")
def vma_merge_new_range(s, i, arg):
    """Expand the VMA before and/or after the new range over it when vm_flags match (vma_expand).
    When neither can, __mmap_region goes on: vm_area_alloc, fill the VMA in, write-lock and store it."""
    start, end, prot = arg
    flags = (prot, accountable(prot))
    prev = max((v for v in s.mm.tree if s.vmas[v].end <= start), default=-1, key=lambda v: s.vmas[v].end)
    nxt = min((v for v in s.mm.tree if s.vmas[v].start >= end), default=-1, key=lambda v: s.vmas[v].start)
    left = can_vma_merge_left(s, prev, start, flags, NO_ANON_VMA)
    right = can_vma_merge_right(s, nxt, end, flags, NO_ANON_VMA, prev, left)
    if left or right:
        vma = prev if left else nxt
        lo = s.vmas[prev].start if left else start
        hi = s.vmas[nxt].end if right else end
        return (Frame("vma_expand", (vma, lo, hi, nxt if left and right else -1)),)
    v = len(s.vmas)
    return (Frame("vm_area_alloc"), Frame("vma_set_range", (v, start, end, prot)),
            Frame("vma_start_write", v), Frame("vma_iter_store", v))


@program.call("vma_expand", "mm/vma.c:vma_expand")
def vma_expand(s, i, arg):
    """Write-lock the VMA (and the next one it swallows), then commit_merge grows it to [lo, hi)."""
    vma, lo, hi, remove = arg
    removed = (remove,) if remove >= 0 else ()
    locks = tuple(Frame("vma_start_write", v) for v in (vma,) + removed)
    anon = dup_anon_vma(s, vma, remove) if removed else ()
    return locks + (Frame("commit_merge", (((vma, lo, hi),), vma, anon, removed)),)


@program.step("vma_set_range", "mm/internal.h:vma_set_range",
              "__mmap_region fills in the new VMA: vma_set_range, vm_flags_init (VM_ACCOUNT if writable), "
              "vma_set_anonymous", cost=0)
def vma_set_range(s, i, arg):
    v, start, end, prot = arg
    return set_vma(s, v, start=start, end=end, prot=prot, account=accountable(prot))


@program.step("vma_iter_store", "mm/vma.h:vma_iter_store",
              "store the VMA in the maple tree over its range, overwriting what was there: walkers see "
              "the old tree or the new one, never half")
def vma_iter_store(s, i, v):
    return tree_store(s, v)


@program.call("vms_gather_munmap_vmas", "mm/vma.c:vms_gather_munmap_vmas")
def vms_gather_munmap_vmas(s, i, arg):
    """Split the first VMA at start and the last at end (__split_vma: the new VMA is the part
    outside), then write-lock and detach each VMA in [start, end); they stay in the tree."""
    start, end = arg
    gone = overlapping(s, start, end)
    frames = ()
    if s.vmas[gone[0]].start < start:
        frames += (Frame("vma_start_write", gone[0]), Frame("__split_vma", (gone[0], start, True)))
    for v in gone:
        if s.vmas[v].end > end:
            frames += (Frame("vma_start_write", v), Frame("__split_vma", (v, end, False)))
        frames += (Frame("vma_start_write", v), Frame("vma_mark_detached", v))
    return frames


@program.call("vms_complete_munmap_vmas", "mm/vma.c:vms_complete_munmap_vmas")
def vms_complete_munmap_vmas(s, i, arg):
    """munmap downgrades mmap_lock first (vms->unlock); then remove_vma frees each gathered VMA."""
    gone, unlock = arg
    frees = tuple(Frame("vm_area_free", v) for v in gone)
    if unlock:
        return (Frame("mmap_write_downgrade"),) + frees + (Frame("mmap_read_unlock"),)
    return frees


@program.call("do_vmi_munmap", "mm/vma.c:do_vmi_munmap")
def do_vmi_munmap(s, i, arg):
    """Nothing mapped in the range: mmap_write_unlock and return."""
    if not overlapping(s, *arg):
        return (Frame("mmap_write_unlock"),)
    return (Frame("do_vmi_align_munmap", arg),)


@program.call("do_vmi_align_munmap", "mm/vma.c:do_vmi_align_munmap")
def do_vmi_align_munmap(s, i, arg):
    """Gather (split, write-lock, detach), clear the range from the tree, then complete."""
    gone = overlapping(s, *arg)
    return (Frame("vms_gather_munmap_vmas", arg), Frame("vma_iter_clear_gfp", arg),
            Frame("vms_complete_munmap_vmas", (gone, True)))


@program.step("__split_vma", "mm/vma.c:__split_vma",
              "vm_area_dup the write-locked VMA (the copy, unreachable, is write-locked too), shrink the "
              "original to its side of addr and store the copy (vma_complete)")
def split_vma(s, i, arg):
    v, addr, new_below = arg
    old = s.vmas[v]
    new = old._replace(end=addr, lock=rwsem.FREE) if new_below else old._replace(start=addr, lock=rwsem.FREE)
    s = set_vma(s._replace(vmas=s.vmas + (new,)), v, **({"start": addr} if new_below else {"end": addr}))
    return tree_store(s, len(s.vmas) - 1)


def vma_modify(s, v, prev, start, end, flags):
    """mm/vma.c:vma_modify: (frames, the VMA that ends up holding [start, end)).  First
    vma_merge_existing_range; if no merge, split off the parts of the VMA outside the range."""
    merged = vma_merge_existing_range(s, v, prev, start, end, flags)
    if merged:
        return merged
    frames = ()
    if s.vmas[v].start < start:
        frames += (Frame("vma_start_write", v), Frame("__split_vma", (v, start, True)))
    if s.vmas[v].end > end:
        frames += (Frame("vma_start_write", v), Frame("__split_vma", (v, end, False)))
    return frames, v


def vma_merge_existing_range(s, v, prev, start, end, flags):
    """mm/vma.c:vma_merge_existing_range: merge [start, end) of VMA v, about to get `flags`, into
    the VMA before it and/or after it.  (frames, the merged VMA), or None when it cannot."""
    vma = s.vmas[v]
    left_side, right_side = start == vma.start, end == vma.end
    if not left_side and not right_side:
        return None
    merge_left = left_side and can_vma_merge_left(s, prev, start, flags, vma.anon_vma)
    nxt = vma_next(s, v) if right_side else -1
    merge_right = right_side and can_vma_merge_right(s, nxt, end, flags, vma.anon_vma, prev, merge_left)
    if not merge_left and not merge_right:
        return None
    locks = (v,) + ((prev,) if merge_left else ()) + ((nxt,) if merge_right else ())
    frames = tuple(Frame("vma_start_write", x) for x in locks)
    whole = left_side and right_side  # the merge deletes vma
    if merge_left and merge_right:  # prev grows over vma and next, both deleted
        res, src, ranges, removed = prev, nxt if s.vmas[nxt].anon_vma != NO_ANON_VMA else v, \
            ((prev, s.vmas[prev].start, s.vmas[nxt].end),), (v, nxt)
    elif merge_left:  # prev grows to end; vma is deleted or starts at end
        res, src, removed = prev, v, (v,) if whole else ()
        ranges = ((prev, s.vmas[prev].start, end),) + (() if whole else ((v, end, vma.end),))
    else:  # next grows down to start; vma is deleted or ends at start
        res, src, removed = nxt, v, (v,) if whole else ()
        ranges = (() if whole else ((v, vma.start, start),)) + ((nxt, start, s.vmas[nxt].end),)
    return frames + (Frame("commit_merge", (ranges, res, dup_anon_vma(s, res, src), removed)),), res


def is_mergeable_anon_vma(s, anon_vma1, anon_vma2, v):
    """mm/vma.c:is_mergeable_anon_vma; v (or -1) is the VMA whose anon_vma_chain must be singular,
    which here is exactly when it has an anon_vma."""
    if (anon_vma1 == NO_ANON_VMA or anon_vma2 == NO_ANON_VMA) and (v < 0 or s.vmas[v].anon_vma != NO_ANON_VMA):
        return True
    return anon_vma1 == anon_vma2


def can_vma_merge_left(s, prev, start, flags, anon_vma):
    """can_vma_merge_left and can_vma_merge_after: prev ends at start with the same flags and a
    compatible anon_vma (vm_pgoff is always contiguous here)."""
    return (prev >= 0 and s.vmas[prev].end == start and vm_flags(s.vmas[prev]) == flags
            and is_mergeable_anon_vma(s, anon_vma, s.vmas[prev].anon_vma, prev))


def can_vma_merge_right(s, nxt, end, flags, anon_vma, prev, merge_left):
    """can_vma_merge_right and can_vma_merge_before; merging on both sides also needs prev's and
    next's anon_vmas to be compatible with each other."""
    if not (nxt >= 0 and s.vmas[nxt].start == end and vm_flags(s.vmas[nxt]) == flags
            and is_mergeable_anon_vma(s, anon_vma, s.vmas[nxt].anon_vma, nxt)):
        return False
    return not merge_left or is_mergeable_anon_vma(s, s.vmas[prev].anon_vma, s.vmas[nxt].anon_vma, -1)


def dup_anon_vma(s, dst, src):
    """mm/vma.c:dup_anon_vma: the surviving VMA takes src's anon_vma if it has none: (dst, anon_vma) or ()."""
    if s.vmas[src].anon_vma != NO_ANON_VMA and s.vmas[dst].anon_vma == NO_ANON_VMA:
        return (dst, s.vmas[src].anon_vma)
    return ()


@program.step("commit_merge", "mm/vma.c:commit_merge",
              "the write-locked VMAs take their merged ranges and the grown one is stored over the range; "
              "vma_complete then detaches and frees each VMA the merge removed")
def commit_merge(s, i, arg):
    ranges, stored, anon, removed = arg
    for v, start, end in ranges:
        s = set_vma(s, v, start=start, end=end)
    if anon:
        s = set_vma(s, anon[0], anon_vma=anon[1])
    s = tree_store(s, stored)
    return push(s, i, tuple(f for x in removed for f in (Frame("vma_mark_detached", x), Frame("vm_area_free", x))))
