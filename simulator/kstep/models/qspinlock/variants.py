"""The variants of the qspinlock model, in three kinds: releases (``v6.12``, and
``before-set-locked``: qspinlock.c before patch 07/11 of 2014), implementations, other locks in place
of the generic queued one (``tas``: x86's virt_spin_lock; ``ticket``; ``powerpc``), and bugs, the
broken twins of broken.py, each replacing the step(s) its bug changes in the generic program.
"""

from __future__ import annotations

from ...engine import MADE_UP, Replacement, Variant
from .before_set_locked import BEFORE_SET_LOCKED
from .broken import (fetch_set_pending_no_undo, node_count_inc_init_late, node_count_inc_store_late, only_locked_gone,
                     set_word_locked_val, xchg_tail_16bit_always, xchg_tail_then_init)
from .qspinlock import store_to
from .state import POWERPC, QSPINLOCK, TICKET
from .x86 import slowpath_virt


def _broken(name, doc, fixed="", unfixed="", **replaces):
    """A broken variant of the generic qspinlock's program (not the ticket or powerpc one)."""
    return Variant.bug(name, doc, params={"program": QSPINLOCK}, fixed=fixed, unfixed=unfixed, **replaces)


VARIANTS = {
    "v6.12": Variant.release(
        "v6.12", "Linux 6.12.117 kernel/locking/qspinlock.c (the source the project pins, which the lab "
        "compiles): pending bit, MCS queue, and the head's cmpxchg when alone, plain set_locked() store when "
        "others are queued", "6.12.117", params={"program": QSPINLOCK}),
    "before-set-locked": Variant.release(
        "before-set-locked", "before patch 07/11 (2014): the queue head always claims with cmpxchg, retrying, "
        "and keeps the tail in the new value when others are queued; its pending path is the cmpxchg "
        "loop of that time, which sets pending only on (0,0,1)", "2014",
        replaces=BEFORE_SET_LOCKED, params={"program": QSPINLOCK, "lasso": (
            "the starvation is the 2014 trylock-or-pending cmpxchg loop's, which a waiter can lose forever to "
            "the others' acquisitions, not what patch 07/11 changed: the head's claim")}),
    "tas": Variant.implementation(
        "tas", "x86 in a guest without paravirt spinlocks (arch/x86/include/asm/qspinlock.h:"
        "virt_spin_lock): every contended locker spins on the word by test-and-set, unfair by design",
        replaces={"queued_spin_lock_slowpath": slowpath_virt}, params={"program": QSPINLOCK, "lasso": (
            "an adversarial schedule: the starved CPU tests the word only while another holds it; weak "
            "fairness allows that forever, real timing only makes it likely")}),
    "ticket": Variant.implementation(
        "ticket", "the generic ticket lock of include/asm-generic/spinlock.h, for comparison: "
        "every locker draws a ticket and spins on the one word", params={"program": TICKET}),
    "powerpc": Variant.implementation(
        "powerpc", "arch/powerpc/lib/qspinlock.c (no paravirt): owner CPU and must-queue bits, "
        "no pending; lock stealing bounded by the queue head's count of reads that find the word "
        "locked: after head_spins of them it sets must-queue (a head whose reads all find it "
        "free and whose trylock_clean_tail keeps losing to a stealer counts none, and starves)",
        params={"program": POWERPC, "lasso": (
            "an adversarial schedule: a stealer takes the lock between every read of the head that finds it "
            "free and the head's trylock_clean_tail")}),
    "clear-tail-always": _broken(
        "clear-tail-always", "the queue head sets the whole word to _Q_LOCKED_VAL even when others are "
        "queued, clearing their tail", unfixed=MADE_UP,
        set_locked=Replacement(set_word_locked_val, store=store_to("val"))),
    "pending-not-undone": _broken(
        "pending-not-undone", "after setting pending and seeing contention, the locker queues without "
        "clear_pending()", unfixed=MADE_UP,
        queued_fetch_set_pending_acquire=fetch_set_pending_no_undo),
    "head-ignores-pending": _broken(
        "head-ignores-pending", "the queue head waits only for the locked byte to clear, not for the "
        "pending owner", unfixed=MADE_UP, wait_head=(None, only_locked_gone)),
    "link-before-init": _broken(
        "link-before-init", "the node's initialisation becomes visible only after the node is linked in, as "
        "arm64 and POWER may show it when nothing orders the two (the 2018 bug was that reordering, fixed in "
        "February by a release store of prev->next, since April by one smp_wmb() before a relaxed xchg_tail()); "
        "the model shows it as a program-order swap: a hand-off into the node can be wiped out",
        unfixed="the fix, February 2018's \"locking/qspinlock: Ensure node is initialised before updating "
        "prev->next\", is named by its title: its commit id is not checked against the kernel's history here",
        node_count_inc=Replacement(node_count_inc_init_late, what=(
            "idx = node->count++, and the node is not initialised here: that waits until it is linked in")),
        xchg_tail=Replacement(xchg_tail_then_init, what=(
            "publish our tail and link in behind the predecessor, and only then initialise the node "
            "(node->locked = 0 can wipe out a hand-off)"))),
    "count-after-init": _broken(
        "count-after-init", "node->count++ is stored only after the node is initialised (no barrier(), "
        "fixed by 11dc13224c97): an interrupt in between takes the same node", fixed="11dc13224c97",
        node_count_inc=node_count_inc_store_late),
    "xchg16-one-bit-pending": _broken(
        "xchg16-one-bit-pending", "xchg_tail uses the 16-bit exchange of the tail half even with "
        "_Q_PENDING_BITS 1, where the tail starts at bit 9 (why qspinlock.c has two xchg_tail())",
        unfixed=MADE_UP, xchg_tail=xchg_tail_16bit_always),
    "no-wmb-before-xchg-tail": Variant.bug(
        "no-wmb-before-xchg-tail", "6.12 without the smp_wmb() before xchg_tail() that April 2018's \"locking/"
        "qspinlock: Elide back-to-back RELEASE operations with smp_wmb()\" added: nothing orders the node's "
        "initialisation before the tail's publication but the architecture; x86 keeps stores in order and "
        "its xchg is a locked instruction, so the bug shows on arm64 and POWER only",
        params={"program": QSPINLOCK, "litmus": "qspinlock-init-before-tail-no-wmb"},
        unfixed="no release had this code: before April 2018 a release store ordered the node's initialisation",
        xchg_tail=Replacement(what=(
            "publish our tail with no smp_wmb() before it: xchg_relaxed() alone orders the node's "
            "initialisation (x86: a locked xchg, a full barrier; arm64, POWER: nothing)"))),
    "mcs-spin-skipped": _broken(
        "mcs-spin-skipped", "an arch_mcs_spin_lock_contended() that returns at once: a queued waiter goes "
        "to the lock word without waiting for its predecessor's hand-off", unfixed=MADE_UP,
        mcs_spin=(None, lambda s, i, arg: True)),
}
