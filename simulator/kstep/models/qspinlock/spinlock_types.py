"""The generic ticket lock's word (include/asm-generic/spinlock_types.h, arch_spinlock_t: one
atomic_t) as include/asm-generic/spinlock.h of Linux 6.12 splits it: the next ticket in the upper
half, the owner ("now serving") in the lower.
"""

TICKET_SHIFT = 16  # next ticket in the upper half, the owner ("now serving") in the lower half
TICKET_BITS_6_12 = 16  # each half is a u16; a scenario may narrow it (ticket_bits) so tickets wrap sooner


def ticket_mask(s) -> int:
    return (1 << s.ticket_bits) - 1
