"""The variants of the per-VMA lock model: the 6.12 releases (``v6.12``, the default, is 6.12.117,
whose ``mm_lock_seq`` is a seqcount since 6.12.88; ``v6.12.0`` is 6.12.0), one other implementation
(``no-per-vma-lock``: the configuration without the per-VMA lock), and bugs, the broken twins of
broken.py and of RCU.
"""

from __future__ import annotations

from ...engine import MADE_UP, Frame, Inline, Replacement, Variant
from ..rcu import rcu_broken
from .broken import (detached_ignored, dup_mmap_without_vma_locks, mmap_region_without_unmap,
                     mprotect_fixup_without_vma_lock, recheck_skipped, try_write_lock_handoff_stops_first,
                     vma_end_read_without_rcu, vma_start_write_without_rwsem, vmf_anon_prepare_blocking)
from .fork import free_vma_rcu_cb, vm_area_alloc_with, vm_area_free_now
from .mm import lock_vma_under_rcu_stub
from .mmap_lock import mmap_write_lock_6_12_0
from .state import VM_LOCK_SEQ_INIT_6_12_0

NO_PER_VMA_LOCK_BUILD = "x86-64 CONFIG_PER_VMA_LOCK=n"  # the kernel build no-per-vma-lock's code pane shows


VARIANTS = {
    "v6.12": Variant.release(
        "v6.12", "Linux 6.12.117 (the source the project pins): mm_lock_seq is a seqcount (since 6.12.88, "
        "\"mm: convert mm_lock_seq to a proper seqcount\"), odd while mmap_lock is write-held; the recheck "
        "is raw_read_seqcount (acquire), the epoch ends with smp_wmb() and a plain increment; fresh VMAs "
        "start at vm_lock_seq = UINT_MAX", "6.12.117"),
    "v6.12.0": Variant.release(
        "v6.12.0", "Linux 6.12.0: mm_lock_seq is an int bumped once per write epoch, with "
        "smp_store_release (vma_end_write_all) against the recheck's smp_load_acquire; fresh VMAs start "
        "at vm_lock_seq = -1", "6.12.0",
        replaces={"mmap_write_lock": mmap_write_lock_6_12_0,
                  "vm_area_alloc": Replacement(vm_area_alloc_with(VM_LOCK_SEQ_INIT_6_12_0), what=(
                      "allocate a VMA: attached, a fresh rwsem, int vm_lock_seq = -1 (6.12.0)")),
                  "vma_end_write_all": Replacement(what=(
                      "smp_store_release(&mm->mm_lock_seq, mm_lock_seq + 1): the epoch's loads and stores "
                      "are ordered before it; every VMA write-locked in this epoch is unlocked at once")),
                  "vma_start_read_recheck": Replacement(what=(
                      "under the rwsem, compare again with smp_load_acquire(&mm->mm_lock_seq); equal: "
                      "up_read, give up"))},
        params={"vm_lock_seq_init": VM_LOCK_SEQ_INIT_6_12_0}),
    "no-per-vma-lock": Variant.implementation(
        "no-per-vma-lock", "Linux 6.12 with CONFIG_PER_VMA_LOCK=n (the only way before 6.4): "
        "lock_vma_under_rcu returns NULL, so every user fault takes mmap_lock for read "
        "(lock_mm_and_find_vma); vma_start_write, mm_lock_seqcount_begin, vma_end_write_all and "
        "vma_mark_detached are empty, "
        "VMAs have no vm_lock_seq and vm_area_free frees at once",
        replaces={"lock_vma_under_rcu": lock_vma_under_rcu_stub, "vma_start_write": lambda s, i, v: (),
                  "mm_lock_seqcount_begin": Inline(lambda s, i, arg: ()),
                  "vma_end_write_all": Inline(lambda s, i, arg: ()),
                  "vma_mark_detached": Inline(lambda s, i, v: ()),
                  "vm_area_free": Inline(lambda s, i, v: (Frame("__vm_area_free", v),)),
                  "vm_area_alloc": Replacement(vm_area_alloc_with(None), what=(
                      "allocate a VMA and vma_init it: no range or flags yet; with CONFIG_PER_VMA_LOCK=n "
                      "it has no VMA lock and no vm_lock_seq; nobody else can reach it"))},
        params={"vm_lock_seq_init": None, "kernel_build": NO_PER_VMA_LOCK_BUILD}),
    "no-recheck": Variant.bug(
        "no-recheck", "vma_start_read trusts its lockless check and skips the recheck under the rwsem",
        unfixed=MADE_UP,        vma_start_read_recheck=recheck_skipped),
    "free-immediately": Variant.bug(
        "free-immediately", "vm_area_free frees the VMA at once instead of after an RCU grace period",
        unfixed=MADE_UP,        vm_area_free=vm_area_free_now),
    "no-detached-check": Variant.bug(
        "no-detached-check", "lock_vma_under_rcu does not check whether the VMA was detached",
        unfixed=MADE_UP,        check_detached=detached_ignored),
    "end-read-outside-rcu": Variant.bug(
        "end-read-outside-rcu", "vma_end_read releases the rwsem without holding rcu_read_lock",
        unfixed=MADE_UP,        vma_end_read=vma_end_read_without_rcu),
    "no-seq-bump": Variant.bug(
        "no-seq-bump", "the writer forgets to bump mm_lock_seq when its write epoch ends",
        unfixed=MADE_UP,        vma_end_write_all=lambda s, i, arg: s),
    "write-lock-without-rwsem": Variant.bug(
        "write-lock-without-rwsem", "vma_start_write stores vm_lock_seq without taking the VMA's rwsem, "
        "so it does not wait for readers", unfixed=MADE_UP,
        vma_start_write=vma_start_write_without_rwsem),
    "anon-prepare-blocks": Variant.bug(
        "anon-prepare-blocks", "vmf_anon_prepare sleeps on mmap_lock while holding the VMA read lock "
        "(a trylock is the rule)", unfixed=MADE_UP,
        __vmf_anon_prepare=vmf_anon_prepare_blocking),
    "mprotect-without-vma-lock": Variant.bug(
        "mprotect-without-vma-lock", "mprotect changes a VMA's vm_flags without vma_start_write "
        "(the shape of the 6.4 mempolicy and dup_anon_vma bugs)",
        unfixed="the shape two 6.4 bugs share (dup_anon_vma's was fixed by d8ab9f7b644a), not one commit's code",
        mprotect_fixup=mprotect_fixup_without_vma_lock),
    "map-fixed-without-unmap": Variant.bug(
        "map-fixed-without-unmap", "__mmap_region stores the new VMA without first gathering and "
        "unmapping the VMAs mapped in its range", unfixed=MADE_UP,
        __mmap_region=mmap_region_without_unmap),
    "fork-without-vma-locks": Variant.bug(
        "fork-without-vma-locks", "dup_mmap copies the parent's VMAs without write-locking them "
        "(the memory corruption fixed by fb49c455323f)", fixed="fb49c455323f", dup_mmap=dup_mmap_without_vma_locks),
    "handoff-stops-first": Variant.bug(
        "handoff-stops-first", "rwsem_try_write_lock honours RWSEM_FLAG_HANDOFF against the first waiter "
        "instead of the others (kernel/locking/rwsem.c:620, `waiter != first` made `waiter == first`): the "
        "writer that set HANDOFF can never take the free lock and retries without sleeping, while HANDOFF "
        "keeps every other locker queued", unfixed=MADE_UP,
        rwsem_try_write_lock=try_write_lock_handoff_stops_first),
    "relaxed-mm-lock-seq": Variant.bug(
        "relaxed-mm-lock-seq", "the write epoch ends with a plain mm_lock_seq++, no barrier before it, as "
        "before 2023's \"mm: fix memory ordering for mm_lock_seq and vm_lock_seq\" (stable 6.4.y, in "
        "Debian's 6.4.11-1 of August 2023; every 6.12 release has the barrier): a fault may see the epoch "
        "over and the VMA as it was; x86 keeps stores in order, so arm64 and POWER show it",
        params={"litmus": "vma-mm-lock-seq-no-wmb"}, fixed="b1f02b95758d",
        vma_end_write_all=Replacement(what=(
            "mm_lock_seqcount_end without its smp_wmb(): a plain mm_lock_seq++ (x86: stores stay in order anyway)"))),
    **rcu_broken(free_vma_rcu_cb),
}
