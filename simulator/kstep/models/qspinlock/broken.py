"""The broken twins of the generic qspinlock's steps (kernel/locking/qspinlock.c): each replaces the
step(s) a kernel bug, or a past version before its fix, changes, and variants.py names them.
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from .footprints import fp_count
from .qspinlock import encode_tail, queue_behind, xchg_tail
from .qspinlock_types import LAYOUTS, U16, U32, _Q_LOCKED_MASK, _Q_LOCKED_VAL, _Q_PENDING_VAL
from .state import MAX_NODES, set_count, set_ctx, set_word

program = Program()  # its steps; model.py adds them to the generic lock's program


def fetch_set_pending_no_undo(s, i, arg):
    """Broken: seeing contention after setting pending, it queues without clear_pending()."""
    t = s.threads[i]
    val = s.words[t.lock]
    s = set_ctx(set_word(s, t.lock, val | _Q_PENDING_VAL), i, val=val)
    if val & ~_Q_LOCKED_MASK:
        return push(s, i, (Frame("queue"),))
    wait = (Frame("wait_locked_clear"),) if val & _Q_LOCKED_MASK else ()
    return push(s, i, wait + (Frame("clear_pending_set_locked"),))


def xchg_tail_16bit_always(s, i, arg):
    """Broken: the 8-bit layout's 16-bit exchange of the tail half, in either layout."""
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    tail = encode_tail(lay, t.cpu, t.idx)
    w = s.words[t.lock]
    new = (w & U16) | (((tail >> lay.TAIL_OFFSET) & U16) << 16)
    old = (w >> 16) << lay.TAIL_OFFSET
    return queue_behind(set_word(s, t.lock, new & U32), i, old & U32, lay)


def only_locked_gone(s, i, arg):
    """Broken: the head waits for the locked byte only, not for the pending owner."""
    return not s.words[s.threads[i].lock] & _Q_LOCKED_MASK


def set_word_locked_val(s, i, arg):
    """Broken: the head sets the whole word to _Q_LOCKED_VAL although others are queued
    (``atomic_set(&lock->val, _Q_LOCKED_VAL)``, a 32-bit store)."""
    return set_word(s, s.threads[i].lock, _Q_LOCKED_VAL)


# -- broken: the node is initialised after it is linked in (95bcade33a8a, before the fix) -----------------

def node_count_inc_init_late(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
    if idx >= MAX_NODES:
        return push(s, i, (Frame("queued_spin_trylock", "spin"),))
    return push(s, i, (Frame("queued_spin_trylock", "once"),))


def xchg_tail_then_init(s, i, arg):
    s = xchg_tail(s, i, arg)
    frames = s.threads[i].frames
    if frames[0].label == "link_prev":  # link, then init (clearing what the predecessor wrote), then spin
        return set_ctx(s, i, frames=frames[:1] + (Frame("mcs_node_init"),) + frames[1:])
    return set_ctx(s, i, frames=(Frame("mcs_node_init"),) + frames)


# -- broken: node->count++ sunk below the node initialisation (11dc13224c97, before the fix) ---------------

def node_count_inc_store_late(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    if idx >= MAX_NODES:
        s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
        return push(s, i, (Frame("queued_spin_trylock", "spin"),))
    s = set_ctx(s, i, idx=idx)  # the increment stays in a register ...
    return push(s, i, (Frame("mcs_node_init"), Frame("store_node_count"), Frame("queued_spin_trylock", "once")))


@program.step("store_node_count", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "the store half of node->count++, which the compiler sank below the node's "
                "initialisation (only without the barrier() of 11dc13224c97)", cost=0, footprint=fp_count)
def store_node_count(s, i, arg):
    t = s.threads[i]
    return set_count(s, t.cpu, t.idx + 1)
