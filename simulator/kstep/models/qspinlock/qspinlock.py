"""kernel/locking/qspinlock.c of Linux 6.12, with its fast path in include/asm-generic/qspinlock.h:
the generic queued spinlock, step by step.

Read this beside ``queued_spin_lock_slowpath()``: every step below is one atomic memory action of
that code, in its order, and its label is the one the kernel-lab C port logs (the shared contract).
Spin iterations that change nothing are not steps: a wait is one step, taken when its condition
holds.  The MCS wait and hand-off the slow path calls are mcs_spinlock.py's; ``encode_tail()`` and
``decode_tail()`` are here, as in the kernel.  The steps only a variant takes are in
before_set_locked.py, x86.py and broken.py, whose programs model.py adds to this one.
"""

from __future__ import annotations

from ...engine import FULL, PLAIN, Frame, Program, push
from .caller import CALLER, CRITICAL_SECTION, critical_section, lock_list
from .footprints import (fp_claim, fp_count, fp_enqueue, fp_got_lock, fp_handoff, fp_init_node, fp_link_prev,
                         fp_mcs_spin, fp_read_word, fp_wait_next, fp_word, fp_word_arg)
from .mcs_spinlock import handed_off, mcs_handoff, mcs_spin
from .qspinlock_types import _Q_LOCKED_MASK, _Q_LOCKED_VAL, _Q_PENDING_VAL, LAYOUTS, U16, U32, QLayout, member_masks
from .state import (LINKS_FIELD, MAX_NODES, NULL, ghost_dequeue, ghost_enqueue, node_id, own_node, set_count, set_ctx,
                    set_field, set_node, set_word)


def encode_tail(lay: QLayout, cpu: int, idx: int) -> int:
    """cpu + 1, so that tail 0 means "no queue"."""
    return ((cpu + 1) << lay.TAIL_CPU_OFFSET) | (idx << lay.TAIL_IDX_OFFSET)


def decode_tail(lay: QLayout, tail: int) -> tuple[int, int]:
    """(cpu, idx) of the node a tail names (the kernel returns per_cpu_ptr(&qnodes[idx].mcs, cpu))."""
    return (tail >> lay.TAIL_CPU_OFFSET) - 1, (tail & lay.TAIL_IDX_MASK) >> lay.TAIL_IDX_OFFSET


MEMBERS = {bits: member_masks(lay) for bits, lay in LAYOUTS.items()}


def store_to(member):
    """``store=`` of a step that stores to ``member`` of its lock's struct qspinlock: the bytes of the
    word that member covers, whatever values they keep.  With one pending bit ``pending`` and
    ``locked_pending`` are no members: the code that writes them there is an atomic on ``lock->val``."""
    def store(s, i, arg):
        return (("words", s.threads[i].lock, MEMBERS[s.pending_bits].get(member, U32)),)
    return store


def pending_store_order(s, i, arg):
    """x86-TSO order of clear_pending and clear_pending_set_locked: with a pending byte they are plain
    stores (WRITE_ONCE of a byte, of the 16-bit locked_pending), with one pending bit atomics."""
    return PLAIN if s.pending_bits == 8 else FULL


def trylock_order(s, i, how):
    """queued_spin_trylock(): atomic_read() first; only a word read as 0 leads to the locked cmpxchg."""
    return FULL if s.words[s.threads[i].lock] == 0 else PLAIN


qspinlock = Program()
qspinlock.call("lock_list")(lock_list)


@qspinlock.call("lock_section")
def lock_section(s, i, lock):
    """spin_lock(); the critical section; spin_unlock()."""
    return (Frame("queued_spin_lock", lock), Frame("critical_section"), Frame("queued_spin_unlock"))


@qspinlock.step("queued_spin_lock", "include/asm-generic/qspinlock.h:queued_spin_lock",
                "fast path: atomic_try_cmpxchg_acquire(val 0 -> _Q_LOCKED_VAL); on failure enter the slow "
                "path with the val it saw", footprint=fp_word_arg, order=FULL)
def queued_spin_lock(s, i, lock):
    w = s.words[lock]
    if w == 0:
        return set_ctx(set_word(s, lock, _Q_LOCKED_VAL), i, lock=lock, val=0)
    s = set_ctx(s, i, lock=lock, val=w)
    return push(s, i, (Frame("queued_spin_lock_slowpath", w),))


@qspinlock.call("queued_spin_lock_slowpath", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath")
def slowpath(s, i, val, pending="queued_fetch_set_pending_acquire"):
    """queued_spin_lock_slowpath(lock, val) up to its first decision (pv and virt_spin_lock left out)."""
    if val == _Q_PENDING_VAL:
        return (Frame("wait_pending_handover"),)
    return trylock_or_pending(val, pending)


def trylock_or_pending(val, pending="queued_fetch_set_pending_acquire"):
    """``if (val & ~_Q_LOCKED_MASK) goto queue;`` -- a decision on the val already read, not a step.
    ``pending`` is the step that tries for the pending bit (before patch 07/11, the cmpxchg loop)."""
    if val & ~_Q_LOCKED_MASK:
        return (Frame("queue"),)
    return (Frame(pending),)


@qspinlock.step("wait_pending_handover", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "val == _Q_PENDING_VAL (0,1,0): re-read the word, a bounded wait for the pending "
                "owner's hand-over to (0,0,1)", footprint=fp_read_word)
def wait_pending_handover(s, i, arg):
    val = s.words[s.threads[i].lock]
    return push(set_ctx(s, i, val=val), i, trylock_or_pending(val))


@qspinlock.step("queued_fetch_set_pending_acquire", "kernel/locking/qspinlock.c:queued_fetch_set_pending_acquire",
                "atomic_fetch_or_acquire(_Q_PENDING_VAL): set pending, returning the old word "
                "(0,0,* -> 0,1,*)", footprint=fp_word, order=FULL)
def queued_fetch_set_pending_acquire(s, i, arg):
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    val = s.words[t.lock]
    s = set_ctx(set_word(s, t.lock, val | _Q_PENDING_VAL), i, val=val)
    if val & ~_Q_LOCKED_MASK:
        # Contention: undo pending only if we set it -- it may have made the head's
        # n,0,0 -> 0,0,1 cmpxchg fail, and the head is now waiting for us to queue behind it.
        undo = () if val & lay.PENDING_MASK else (Frame("clear_pending"),)
        return push(s, i, undo + (Frame("queue"),))
    wait = (Frame("wait_locked_clear"),) if val & _Q_LOCKED_MASK else ()
    return push(s, i, wait + (Frame("clear_pending_set_locked"),))


@qspinlock.step("clear_pending", "kernel/locking/qspinlock.c:clear_pending",
                "undo the pending bit we set after seeing contention (*,1,* -> *,0,*), then queue", footprint=fp_word,
                order=pending_store_order, store=store_to("pending"))
def clear_pending(s, i, arg):
    lock = s.threads[i].lock
    w = s.words[lock]
    if s.pending_bits == 8:
        w &= ~LAYOUTS[8].PENDING_MASK  # WRITE_ONCE(lock->pending, 0): a byte store
    else:
        w &= ~_Q_PENDING_VAL  # atomic_andnot(_Q_PENDING_VAL, &lock->val)
    return set_word(s, lock, w)


@qspinlock.step("wait_locked_clear", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "pending owner: smp_cond_load_acquire(&lock->locked, !VAL), wait for the holder to "
                "unlock (0,1,1 -> *,1,0)", footprint=fp_read_word)
def wait_locked_clear(s, i, arg):
    return s


@qspinlock.guard("wait_locked_clear")
def locked_clear(s, i, arg):
    return not s.words[s.threads[i].lock] & _Q_LOCKED_MASK


@qspinlock.step("clear_pending_set_locked", "kernel/locking/qspinlock.c:clear_pending_set_locked",
                "take the lock from pending: *,1,0 -> *,0,1 (no stealing may happen while pending is held)",
                footprint=fp_word, order=pending_store_order, store=store_to("locked_pending"))
def clear_pending_set_locked(s, i, arg):
    lock = s.threads[i].lock
    w = s.words[lock]
    if s.pending_bits == 8:
        w = (w & ~U16) | _Q_LOCKED_VAL  # WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL): 16-bit store
    else:
        w = (w - _Q_PENDING_VAL + _Q_LOCKED_VAL) & U32  # atomic_add(-_Q_PENDING_VAL + _Q_LOCKED_VAL)
    return set_ctx(set_word(s, lock, w), i, val=0)


@qspinlock.call("queue", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath")
def queue(s, i, arg):
    """The `queue:` label: end of pending spinning, start of MCS queuing."""
    return (Frame("node_count_inc"),)


@qspinlock.step("node_count_inc", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "idx = node->count++ on this CPU's qnodes[0]: the nesting level picks the node "
                "grab_mcs_node(node, idx) names (idx >= MAX_NODES: no node, spin with trylock)",
                cost=0, footprint=fp_count)
def node_count_inc(s, i, arg):
    t = s.threads[i]
    idx = s.count[t.cpu]
    s = set_ctx(set_count(s, t.cpu, idx + 1), i, idx=idx)
    if idx >= MAX_NODES:
        return push(s, i, (Frame("queued_spin_trylock", "spin"),))
    # barrier(): the count increment must precede the node's initialisation (11dc13224c97).
    return push(s, i, (Frame("mcs_node_init"), Frame("queued_spin_trylock", "once")))


@qspinlock.step("mcs_node_init", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "node->locked = 0; node->next = NULL (ordered before the tail is published by smp_wmb())",
                cost=0, footprint=fp_init_node)
def mcs_node_init(s, i, arg):
    return set_node(s, own_node(s.threads[i]), locked=0, next=NULL)


@qspinlock.step("queued_spin_trylock", "include/asm-generic/qspinlock.h:queued_spin_trylock",
                "one more try after touching the cold node: if the word is 0, cmpxchg it to _Q_LOCKED_VAL",
                footprint=fp_word, order=trylock_order)
def queued_spin_trylock(s, i, how):
    t = s.threads[i]
    if s.words[t.lock] == 0:
        return push(set_word(s, t.lock, _Q_LOCKED_VAL), i, (Frame("release_node"),))
    return push(s, i, (Frame("xchg_tail"),))


@qspinlock.guard("queued_spin_trylock")
def trylock_may_run(s, i, how):
    # The idx >= MAX_NODES fallback loops `while (!queued_spin_trylock(lock))`: failed tries change nothing.
    return how == "once" or s.words[s.threads[i].lock] == 0


@qspinlock.step("xchg_tail", "kernel/locking/qspinlock.c:xchg_tail",
                "publish our tail, returning the old one (p,*,* -> n,*,*); a predecessor's tail means wait "
                "behind it", footprint=fp_enqueue, order=FULL)
def xchg_tail(s, i, arg):
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    tail = encode_tail(lay, t.cpu, t.idx)
    w = s.words[t.lock]
    if lay.PENDING_BITS == 8:
        # xchg_relaxed(&lock->tail, tail >> _Q_TAIL_OFFSET): a 16-bit exchange of the upper half
        new = (w & U16) | ((tail >> lay.TAIL_OFFSET) << 16)
        old = (w >> 16) << lay.TAIL_OFFSET
    else:
        # the atomic_try_cmpxchg_relaxed loop keeps locked and pending; failed tries change nothing
        new = (w & lay.LOCKED_PENDING_MASK) | tail
        old = w
    return queue_behind(set_word(s, t.lock, new), i, old, lay)


def queue_behind(s, i, old, lay):
    t = s.threads[i]
    s = ghost_enqueue(set_ctx(s, i, next=NULL), t.lock, own_node(t), i)
    if old & lay.TAIL_MASK:
        prev = node_id(*decode_tail(lay, old & lay.TAIL_MASK))
        return push(s, i, (Frame("link_prev", prev), Frame("mcs_spin"), Frame("wait_head")))
    return push(s, i, (Frame("wait_head"),))


@qspinlock.step("link_prev", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "WRITE_ONCE(prev->next, node): link into the queue behind the node the old tail named",
                footprint=fp_link_prev)
def link_prev(s, i, prev):
    me = own_node(s.threads[i])
    if not 0 <= prev < len(s.nodes):  # a corrupt tail: the store lands outside every qnode and is lost
        return s
    s = set_node(s, prev, next=me)
    return set_field(s, LINKS_FIELD, s.ghost_links | {(prev, me)})


qspinlock.step("mcs_spin", "kernel/locking/mcs_spinlock.h:arch_mcs_spin_lock_contended",
               "smp_cond_load_acquire(&node->locked, VAL): wait for our turn, then read node->next",
               footprint=fp_mcs_spin)(mcs_spin)
qspinlock.guard("mcs_spin")(handed_off)


@qspinlock.step("wait_head", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "queue head: atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK)), "
                "*,x,y -> *,0,0", footprint=fp_read_word)
def wait_head(s, i, arg):
    t = s.threads[i]
    lay = LAYOUTS[s.pending_bits]
    val = s.words[t.lock]
    s = set_ctx(s, i, val=val)
    if (val & lay.TAIL_MASK) == encode_tail(lay, t.cpu, t.idx):
        return push(s, i, (Frame("claim_cmpxchg"),))
    return push(s, i, (Frame("set_locked"),) + hand_on(t))


def hand_on(t):
    """Contended: wait for the successor to link itself if it has not yet, then hand the queue on."""
    return ((Frame("wait_next"),) if t.next == NULL else ()) + (Frame("mcs_handoff"),)


@qspinlock.guard("wait_head")
def owner_and_pending_gone(s, i, arg):
    return not s.words[s.threads[i].lock] & LAYOUTS[s.pending_bits].LOCKED_PENDING_MASK


@qspinlock.step("claim_cmpxchg", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "the tail is ours: try_cmpxchg_relaxed(val -> _Q_LOCKED_VAL) clears it (n,0,0 -> 0,0,1); "
                "on failure set_locked, no retry", footprint=fp_claim, live=("val",), order=FULL)
def claim_cmpxchg(s, i, arg):
    t = s.threads[i]
    w = s.words[t.lock]
    if w == t.val:
        s = ghost_dequeue(set_word(s, t.lock, _Q_LOCKED_VAL), t.lock, own_node(t))
        return push(s, i, (Frame("release_node"),))
    # Somebody queued behind us, or set pending and will see our tail and queue: we will see a @next.
    return push(set_ctx(s, i, val=w), i, (Frame("set_locked"),) + hand_on(t))


@qspinlock.step("set_locked", "kernel/locking/qspinlock.c:set_locked",
                "others are queued: WRITE_ONCE(lock->locked, _Q_LOCKED_VAL), a plain byte store "
                "(*,*,0 -> *,0,1), patch 07/11", footprint=fp_word, store=store_to("locked"))
def set_locked(s, i, arg):
    lock = s.threads[i].lock
    return set_word(s, lock, (s.words[lock] & ~_Q_LOCKED_MASK) | _Q_LOCKED_VAL)


@qspinlock.step("wait_next", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "smp_cond_load_relaxed(&node->next, VAL): wait for the successor to link itself",
                footprint=fp_wait_next)
def wait_next(s, i, arg):
    me = own_node(s.threads[i])
    nxt = s.nodes[me].next
    s = set_field(s, LINKS_FIELD, s.ghost_links - {(me, nxt)})
    return set_ctx(s, i, next=nxt)


@qspinlock.guard("wait_next")
def successor_linked(s, i, arg):
    return s.nodes[own_node(s.threads[i])].next != NULL


qspinlock.step("mcs_handoff", "kernel/locking/mcs_spinlock.h:arch_mcs_spin_unlock_contended",
               "smp_store_release(&next->locked, 1): the successor becomes the queue head",
               footprint=fp_handoff)(mcs_handoff)


@qspinlock.step("release_node", "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
                "release: __this_cpu_dec(qnodes[0].mcs.count), the node is free again", cost=0, footprint=fp_count)
def release_node(s, i, arg):
    t = s.threads[i]
    return set_ctx(set_count(s, t.cpu, s.count[t.cpu] - 1), i, idx=-1, next=NULL, val=0)


qspinlock.step("critical_section", CALLER, CRITICAL_SECTION, footprint=fp_got_lock)(critical_section)


@qspinlock.step("queued_spin_unlock", "include/asm-generic/qspinlock.h:queued_spin_unlock",
                "smp_store_release(&lock->locked, 0): a byte store, tail and pending untouched", footprint=fp_word,
                store=store_to("locked"))
def queued_spin_unlock(s, i, arg):
    lock = s.threads[i].lock
    return set_ctx(set_word(s, lock, s.words[lock] & ~_Q_LOCKED_MASK), i, lock=-1)
