"""arch/powerpc/lib/qspinlock.c of Linux 6.12 (no paravirt), with its word from
arch/powerpc/include/asm/qspinlock_types.h and its fast path from asm/qspinlock.h: powerpc's own
queued spinlock (the ``powerpc`` variant).

The word holds the owner CPU and a must-queue bit instead of pending; a locker may steal the lock
ahead of queued waiters until the queue head, after ``head_spins`` reads that find it locked, sets
must-queue.  The queue is MCS, as the generic lock's (mcs_spinlock.py).
"""

from __future__ import annotations

from ...engine import Frame, Program, push
from .caller import CALLER, CRITICAL_SECTION, critical_section, lock_list
from .mcs_spinlock import handed_off, mcs_handoff
from .qspinlock import link_prev, successor_linked, wait_next
from .qspinlock_types import _q_set_mask
from .state import (HANDOFFS_FIELD, MAX_NODES, NULL, ghost_dequeue, ghost_enqueue, node_id, own_node, set_count,
                    set_ctx, set_field, set_node, set_word)

PPC_LOCKED_VAL = 1 << 0
PPC_OWNER_CPU_OFFSET = 1
PPC_OWNER_CPU_MASK = _q_set_mask(14, PPC_OWNER_CPU_OFFSET)  # 0x00007ffe
PPC_SLEEPY_VAL = 1 << 15
PPC_MUST_Q_VAL = 1 << 16
PPC_TAIL_CPU_OFFSET = 17
PPC_TAIL_CPU_MASK = _q_set_mask(15, PPC_TAIL_CPU_OFFSET)  # 0xfffe0000
PPC_LOCKED_U16 = 0xffff  # `locked` is the low u16: unlock clears owner and sleepy too
STEAL_SPINS_6_12, HEAD_SPINS_6_12 = 1 << 5, 1 << 8  # arch/powerpc/lib/qspinlock.c defaults


def ppc_encode_locked_val(cpu: int) -> int:
    """``queued_spin_encode_locked_val()``: locked, and the holder's CPU as owner."""
    return PPC_LOCKED_VAL | (cpu << PPC_OWNER_CPU_OFFSET)


def ppc_encode_tail_cpu(cpu: int) -> int:
    return (cpu + 1) << PPC_TAIL_CPU_OFFSET


def ppc_decode_tail_cpu(val: int) -> int:
    return (val >> PPC_TAIL_CPU_OFFSET) - 1


powerpc = Program()
powerpc.call("lock_list")(lock_list)
PPC_LIB = "arch/powerpc/lib/qspinlock.c"
PPC_H = "arch/powerpc/include/asm/qspinlock.h"


@powerpc.call("lock_section")
def ppc_lock_section(s, i, lock):
    return (Frame("queued_spin_lock", lock), Frame("critical_section"), Frame("queued_spin_unlock"))


def trylock_steal(s, i, lock):
    """``__queued_spin_trylock_steal``: lwarx/stwcx. succeeds when nothing but a tail is set, so it
    may take the lock ahead of queued waiters; it keeps the tail.  Returns the state or None."""
    w = s.words[lock]
    if w & ~PPC_TAIL_CPU_MASK:
        return None
    return set_word(s, lock, (w & PPC_TAIL_CPU_MASK) | ppc_encode_locked_val(s.threads[i].cpu))


@powerpc.step("queued_spin_lock", f"{PPC_H}:queued_spin_lock",
              "fast path: queued_spin_trylock (steals: succeeds when only a tail is set), else the slow path")
def ppc_queued_spin_lock(s, i, lock):
    s = set_ctx(s, i, lock=lock)
    taken = trylock_steal(s, i, lock)
    if taken is not None:
        return taken
    if s.spins[0] == 0:  # `if (!steal_spins) return false;`
        return push(s, i, (Frame("queued_spin_lock_mcs_queue"),))
    return push(s, i, (Frame("try_to_steal_lock", 0),))


@powerpc.step("try_to_steal_lock", f"{PPC_LIB}:try_to_steal_lock",
              "one steal iteration: give up if must-queue is set, steal if unlocked, else count a spin; "
              "queue after steal_spins")
def try_to_steal_lock(s, i, iters):
    t = s.threads[i]
    w = s.words[t.lock]
    if w & PPC_MUST_Q_VAL:
        return push(s, i, (Frame("queued_spin_lock_mcs_queue"),))
    if not w & PPC_LOCKED_VAL:
        taken = trylock_steal(s, i, t.lock)
        if taken is not None:
            return taken
    iters += 1
    if iters >= s.spins[0]:  # steal_break()
        return push(s, i, (Frame("queued_spin_lock_mcs_queue"),))
    return push(s, i, (Frame("try_to_steal_lock", iters),))


@powerpc.step("queued_spin_lock_mcs_queue", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "idx = qnodesp->count++ (a 5th nesting level spins on trylock instead)", cost=0)
def ppc_mcs_queue(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    if idx >= MAX_NODES:
        return push(s, i, (Frame("queued_spin_trylock"),))
    s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
    return push(s, i, (Frame("mcs_node_init"), Frame("publish_tail_cpu")))


@powerpc.step("queued_spin_trylock", f"{PPC_H}:queued_spin_trylock",
              "no node left: spin until queued_spin_trylock (stealing) succeeds")
def ppc_queued_spin_trylock(s, i, arg):
    return trylock_steal(s, i, s.threads[i].lock)


@powerpc.guard("queued_spin_trylock")
def ppc_trylock_would_succeed(s, i, arg):
    return not s.words[s.threads[i].lock] & ~PPC_TAIL_CPU_MASK


@powerpc.step("mcs_node_init", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "node->next = NULL; node->lock = lock; node->cpu; node->sleepy = 0; node->locked = 0", cost=0)
def ppc_mcs_node_init(s, i, arg):
    t = s.threads[i]
    return set_node(s, own_node(t), locked=0, next=NULL, lock=t.lock)


@powerpc.step("publish_tail_cpu", f"{PPC_LIB}:publish_tail_cpu",
              "lwsync, then larx/stcx.: replace the tail CPU with ours, returning the old word")
def publish_tail_cpu(s, i, arg):
    t = s.threads[i]
    old = s.words[t.lock]
    s = set_word(s, t.lock, (old & ~PPC_TAIL_CPU_MASK) | ppc_encode_tail_cpu(t.cpu))
    s = ghost_enqueue(set_ctx(s, i, next=NULL), t.lock, own_node(t), i)
    head = (Frame("wait_head", (0, False)),)
    if old & PPC_TAIL_CPU_MASK:
        return push(s, i, (Frame("get_tail_qnode", ppc_decode_tail_cpu(old)), Frame("mcs_spin")) + head)
    return push(s, i, head)


@powerpc.step("get_tail_qnode", f"{PPC_LIB}:get_tail_qnode",
              "find the previous CPU's node queued on this lock (node->lock == lock), link ours behind it")
def get_tail_qnode(s, i, prev_cpu):
    t = s.threads[i]
    for idx in range(MAX_NODES):
        prev = node_id(prev_cpu, idx)
        if s.nodes[prev].lock == t.lock:
            return push(s, i, (Frame("link_prev", prev),))
    raise AssertionError(f"BUG() in get_tail_qnode: no node of CPU {prev_cpu} queues on lock {t.lock}")


powerpc.step("link_prev", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
             "WRITE_ONCE(prev->next, node): link into the queue behind the previous tail's node")(link_prev)


@powerpc.step("mcs_spin", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "while (!READ_ONCE(node->locked)) spin; then smp_rmb() as the acquire")
def ppc_mcs_spin(s, i, arg):
    me = own_node(s.threads[i])
    return set_field(s, HANDOFFS_FIELD, s.ghost_handoffs - {me})


powerpc.guard("mcs_spin")(handed_off)


@powerpc.step("wait_head", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "queue head, one read of the word: unlocked -> try to take it; locked -> count a spin, "
              "after head_spins set must-queue")
def ppc_wait_head(s, i, arg):
    iters, mustq = arg
    t = s.threads[i]
    w = s.words[t.lock]
    if not w & PPC_LOCKED_VAL:
        return push(s, i, (Frame("trylock_clean_tail", arg),))
    iters += 1
    if iters >= s.spins[1]:  # from here on a spin changes nothing: wait for the unlock
        return push(s, i, (Frame("set_mustq"), Frame("wait_head", (s.spins[1], True))))
    return push(s, i, (Frame("wait_head", (iters, mustq)),))


@powerpc.guard("wait_head")
def ppc_head_may_read(s, i, arg):
    return not arg[1] or not s.words[s.threads[i].lock] & PPC_LOCKED_VAL


@powerpc.step("set_mustq", f"{PPC_LIB}:set_mustq",
              "larx/stcx. _Q_MUST_Q_VAL: from now on stealers queue instead")
def set_mustq(s, i, arg):
    lock = s.threads[i].lock
    return set_word(s, lock, s.words[lock] | PPC_MUST_Q_VAL)


@powerpc.step("trylock_clean_tail", f"{PPC_LIB}:trylock_clean_tail",
              "if unlocked: set locked|owner, keep the tail unless it is ours (then clear it); "
              "must-queue is cleared")
def trylock_clean_tail(s, i, arg):
    t = s.threads[i]
    prev = s.words[t.lock]
    if prev & PPC_LOCKED_VAL:  # a stealer got in first: `goto again`
        return push(s, i, (Frame("wait_head", arg),))
    tail = ppc_encode_tail_cpu(t.cpu)
    new = (prev & PPC_TAIL_CPU_MASK) | ppc_encode_locked_val(t.cpu)
    if prev & PPC_TAIL_CPU_MASK == tail:
        s = ghost_dequeue(set_word(s, t.lock, new & ~PPC_TAIL_CPU_MASK), t.lock, own_node(t))
        return push(s, i, (Frame("release_node"),))
    return push(set_word(s, t.lock, new), i, (Frame("wait_next"), Frame("mcs_handoff")))


powerpc.step("wait_next", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
             "next = READ_ONCE(node->next), spinning until the successor has linked itself")(wait_next)
powerpc.guard("wait_next")(successor_linked)
powerpc.step("mcs_handoff", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
             "WRITE_ONCE(next->locked, 1): a plain store (the lock word's acquire orders it)")(mcs_handoff)


@powerpc.step("release_node", f"{PPC_LIB}:queued_spin_lock_mcs_queue",
              "node->lock = NULL, barrier(), qnodesp->count-- (clearing first: 734ad0af3609)", cost=0)
def ppc_release_node(s, i, arg):
    t = s.threads[i]
    s = set_node(s, own_node(t), lock=-1)
    return set_ctx(set_count(s, t.cpu, s.count[t.cpu] - 1), i, idx=-1, next=NULL)


powerpc.step("critical_section", CALLER, CRITICAL_SECTION)(critical_section)


@powerpc.step("queued_spin_unlock", f"{PPC_H}:queued_spin_unlock",
              "smp_store_release(&lock->locked, 0): a u16 store, clearing owner and sleepy too")
def ppc_queued_spin_unlock(s, i, arg):
    lock = s.threads[i].lock
    return set_ctx(set_word(s, lock, s.words[lock] & ~PPC_LOCKED_U16), i, lock=-1)
