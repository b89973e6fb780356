"""mm/gup.c of Linux 6.12: pin_user_pages_fast in the parent, GUP-fast under write_protect_seq
(gup_fast, gup_fast_pte_range, try_grab_folio_fast) and the slow path under mmap_lock.
"""

from __future__ import annotations

from ...engine import Frame, Program, push, set_thread
from ..vma_locks import mmap_lock as vl_mmap_lock
from ..vma_locks import state as vl
from . import pgtable as pt
from .memory import do_wp_page
from .state import GUP_PIN_COUNTING_BIAS, folio_index, set_folio


def add_gup(program: Program) -> None:
    @program.call("pin_user_pages_fast", "mm/gup.c:pin_user_pages_fast")
    def pin_user_pages_fast(s, i, addr):
        return (Frame("mm_set_has_pinned_flag", addr), Frame("gup_fast", addr))

    @program.step("mm_set_has_pinned_flag", "mm/gup.c:mm_set_has_pinned_flag",
                  "gup_fast_fallback with FOLL_PIN: set MMF_HAS_PINNED in the mm's flags (it stays set), "
                  "so that fork checks its pages for pins")
    def mm_set_has_pinned_flag(s, i, addr):
        return set_thread(s._replace(mmf_has_pinned=True), i, s.threads[i]._replace(addr=addr))

    @program.step("gup_fast", "mm/gup.c:gup_fast",
                  "FOLL_PIN: raw_read_seqcount(write_protect_seq); odd means a fork is write-protecting this "
                  "mm: give up on GUP-fast (the slow path takes mmap_lock)")
    def gup_fast(s, i, addr):
        seq = s.write_protect_seq
        s = set_thread(s, i, s.threads[i]._replace(seq=seq))
        if seq & 1:
            return push(s, i, (Frame("__get_user_pages_locked"),))
        return push(s, i, (Frame("ptep_get_lockless"),))

    @program.step("ptep_get_lockless", "include/linux/pgtable.h:ptep_get_lockless",
                  "gup_fast_pte_range, interrupts off and no lock held: read the PTE; unless it maps a "
                  "present, writable, normal page, pin nothing")
    def ptep_get_lockless(s, i, arg):
        t = s.threads[i]
        pte = s.parent[t.addr]
        s = set_thread(s, i, t._replace(pte=pte))
        if not pt.pte_present(pte) or not pt.pte_write(pte) or pt.pte_special(pte):
            return push(s, i, (Frame("read_seqcount_retry"),))
        return push(s, i, (Frame("try_grab_folio_fast"),))

    @program.step("try_grab_folio_fast", "mm/gup.c:try_grab_folio_fast",
                  "pin the folio: a large one gets a reference and _pincount + 1, a small one "
                  "GUP_PIN_COUNTING_BIAS references (what folio_maybe_dma_pinned reads); then "
                  "smp_mb__after_atomic(), a full barrier after the atomic, before the PTE is read again")
    def try_grab_folio_fast(s, i, arg):
        t = s.threads[i]
        k = folio_index(s, pt.pte_pfn(t.pte))
        s = pin(s, k, +1)
        return push(set_thread(s, i, t._replace(folio=k)), i, (Frame("gup_fast_pte_range"),))

    @program.step("gup_fast_pte_range", "mm/gup.c:gup_fast_pte_range",
                  "read the PTE again: if it changed since ptep_get_lockless (fork write-protected it), drop "
                  "the pin (gup_put_folio) and stop")
    def gup_fast_pte_range(s, i, arg):
        t = s.threads[i]
        if s.parent[t.addr] != t.pte:
            s = set_thread(pin(s, t.folio, -1), i, t._replace(folio=-1))
        return push(s, i, (Frame("read_seqcount_retry"),))

    @program.step("read_seqcount_retry", "include/linux/seqlock.h:read_seqcount_retry",
                  "gup_fast: if write_protect_seq moved since it was read, a fork may be sharing the page: "
                  "unpin and take the slow path; else keep the pin (no pin: the slow path)")
    def read_seqcount_retry(s, i, arg):
        t = s.threads[i]
        if t.folio >= 0 and s.write_protect_seq == t.seq:
            return set_thread(s, i, t._replace(pinned=True))
        if t.folio >= 0:
            s = set_thread(pin(s, t.folio, -1), i, t._replace(folio=-1))
        return push(s, i, (Frame("__get_user_pages_locked"),))

    @program.step("__get_user_pages_locked", "mm/gup.c:__get_user_pages_locked",
                  "the slow path: mmap_read_lock, sleeping behind a fork that holds mmap_lock for write")
    def get_user_pages_locked(s, i, arg):
        s = push(s, i, (Frame("__get_user_pages"), Frame("mmap_read_unlock")))
        return vl_mmap_lock.down_read(s, i, vl.MM)

    @program.step("__get_user_pages", "mm/gup.c:__get_user_pages",
                  "follow the PTE under mmap_lock; FOLL_WRITE on a PTE that is not writable faults first "
                  "(do_wp_page: an exclusive page is made writable again, a page shared with a child is copied "
                  "and the copy mapped writable in the parent), then pin the page")
    def get_user_pages(s, i, arg):
        t = s.threads[i]
        if not pt.pte_write(s.parent[t.addr]):
            s = do_wp_page(s, t.addr)
        pte = s.parent[t.addr]
        k = folio_index(s, pt.pte_pfn(pte))
        return set_thread(pin(s, k, +1), i, s.threads[i]._replace(pte=pte, folio=k, pinned=True))


def pin(s, k: int, n: int):
    """FOLL_PIN references on folio k: n = +1 pins (try_grab_folio_fast), -1 unpins (gup_put_folio)."""
    f = s.folios[k]
    if f.order:
        return set_folio(s, k, refcount=f.refcount + n, pincount=f.pincount + n)
    return set_folio(s, k, refcount=f.refcount + n * GUP_PIN_COUNTING_BIAS)
