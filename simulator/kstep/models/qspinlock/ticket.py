"""include/asm-generic/spinlock.h of Linux 6.12: the generic ticket lock (the ``ticket`` variant, a
different lock from the queued one, for comparison): every locker draws a ticket and spins on the
one word until the owner half serves it.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program, push
from .caller import CALLER, CRITICAL_SECTION, critical_section, lock_list
from .footprints import fp_draw_ticket, fp_got_lock, fp_read_word, fp_word
from .qspinlock_types import U16
from .spinlock_types import TICKET_SHIFT, ticket_mask
from .state import NULL, ghost_enqueue, set_ctx, set_word

ticket = Program()
ticket.call("lock_list")(lock_list)


@ticket.call("lock_section")
def ticket_lock_section(s, i, lock):
    return (Frame("arch_spin_lock", lock), Frame("critical_section"), Frame("arch_spin_unlock"))


@ticket.step("arch_spin_lock", "include/asm-generic/spinlock.h:arch_spin_lock",
             "atomic_fetch_add(1 << 16): draw the next ticket; the lock is ours if it is already served",
             footprint=fp_draw_ticket, order=FULL)
def arch_spin_lock(s, i, lock):
    val = s.words[lock]
    my = val >> TICKET_SHIFT
    s = set_word(s, lock, (((my + 1) & ticket_mask(s)) << TICKET_SHIFT) | (val & U16))
    s = ghost_enqueue(set_ctx(s, i, lock=lock, ticket=my), lock, NULL, i)
    if my == val & U16:
        return s
    return push(s, i, (Frame("wait_ticket"),))


@ticket.step("wait_ticket", "include/asm-generic/spinlock.h:arch_spin_lock",
             "atomic_cond_read_acquire(lock, ticket == (u16)VAL), then smp_mb(): our ticket is served",
             footprint=fp_read_word)
def wait_ticket(s, i, arg):
    return s


@ticket.guard("wait_ticket")
def ticket_served(s, i, arg):
    t = s.threads[i]
    return s.words[t.lock] & U16 == t.ticket


ticket.step("critical_section", CALLER, CRITICAL_SECTION, footprint=fp_got_lock)(critical_section)


def owner_half_store(s, i, arg):
    """``u16 *ptr = (u16 *)lock + IS_ENABLED(CONFIG_CPU_BIG_ENDIAN)``: a 16-bit store to the owner half."""
    return (("words", s.threads[i].lock, U16),)


@ticket.step("arch_spin_unlock", "include/asm-generic/spinlock.h:arch_spin_unlock",
             "smp_store_release of (u16)val + 1 into the owner half: serve the next ticket", footprint=fp_word,
             store=owner_half_store)
def arch_spin_unlock(s, i, arg):
    t = s.threads[i]
    w = s.words[t.lock]
    s = set_word(s, t.lock, (w & ~U16) | ((w + 1) & ticket_mask(s)))
    return set_ctx(s, i, lock=-1, ticket=0)
