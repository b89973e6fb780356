"""Grace-period sequence numbers as kernel/rcu/rcu.h computes them (Linux 6.12).

``gp_seq`` is an ``unsigned long``: the low ``RCU_SEQ_CTR_SHIFT`` bits are the state of the
current grace period (0: idle, 1: running), the rest counts grace periods.  All arithmetic is
modulo 2**64, as C's unsigned long is on a 64-bit kernel, and comparisons must survive the counter
wrapping around: Linux starts it 300 grace periods before the wrap on purpose
(kernel/rcu/tree.c: ``.gp_seq = (0UL - 300UL) << RCU_SEQ_CTR_SHIFT``).
"""

RCU_SEQ_CTR_SHIFT = 2
RCU_SEQ_STATE_MASK = (1 << RCU_SEQ_CTR_SHIFT) - 1
ULONG_MAX = (1 << 64) - 1


def rcu_seq_start(s: int) -> int:
    """gp_seq when a grace period starts."""
    # BEGIN SOLUTION
    # CANARY-KSTEP-SOLUTION-rcu-seq
    return (s + 1) & ULONG_MAX
    # END SOLUTION


def rcu_seq_end(s: int) -> int:
    """gp_seq when the running grace period ends (rcu_seq_endval)."""
    # BEGIN SOLUTION
    return ((s | RCU_SEQ_STATE_MASK) + 1) & ULONG_MAX
    # END SOLUTION


def rcu_seq_snap(s: int) -> int:
    """The gp_seq at which a full grace period, starting after now, will have ended."""
    # BEGIN SOLUTION
    return (s + 2 * RCU_SEQ_STATE_MASK + 1) & ~RCU_SEQ_STATE_MASK & ULONG_MAX
    # END SOLUTION


def rcu_seq_done(cur: int, snap: int) -> bool:
    """Has gp_seq ``cur`` reached the snapshot ``snap``?  (ULONG_CMP_GE, wrap-safe.)"""
    # BEGIN SOLUTION
    return ULONG_MAX // 2 >= (cur - snap) & ULONG_MAX
    # END SOLUTION
