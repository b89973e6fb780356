"""mm/rmap.c of Linux 6.12: __anon_vma_prepare, and the anon_vma reuse of find_mergeable_anon_vma
and reusable_anon_vma that a first fault of a VMA goes through.
"""

from __future__ import annotations

from ...engine import FULL, Program

from .state import NO_ANON_VMA, set_vma, vma_next, vma_prev

program = Program()  # this file's steps and calls; model.py joins the files' programs


@program.step("__anon_vma_prepare", "mm/rmap.c:__anon_vma_prepare",
              "attach an anon_vma, a neighbour's if find_mergeable_anon_vma finds one (the one VMA change "
              "allowed under a read lock: NULL to non-NULL)", order=FULL)
def anon_vma_prepare(s, i, arg):
    v = s.threads[i].vma
    if s.vmas[v].anon_vma != NO_ANON_VMA:  # checked again under mm->page_table_lock
        return s
    return set_vma(s, v, anon_vma=find_mergeable_anon_vma(s, v))


def find_mergeable_anon_vma(s, v):
    """mm/vma.c:find_mergeable_anon_vma: reuse the next VMA's anon_vma, else the previous one's, if
    reusable_anon_vma allows; else a new anon_vma (named after the VMA that first gets one)."""
    nxt, prev = vma_next(s, v), vma_prev(s, v)
    if nxt >= 0 and reusable_anon_vma(s.vmas[nxt], s.vmas[v], s.vmas[nxt]):
        return s.vmas[nxt].anon_vma
    if prev >= 0 and reusable_anon_vma(s.vmas[prev], s.vmas[prev], s.vmas[v]):
        return s.vmas[prev].anon_vma
    return v


def reusable_anon_vma(old, a, b):
    """mm/vma.c:reusable_anon_vma with anon_vma_compatible(a, b): a ends where b starts and their
    vm_flags differ at most in the access bits; old has an anon_vma (its chain is then singular)."""
    return a.end == b.start and a.account == b.account and old.anon_vma != NO_ANON_VMA
