"""The per-VMA lock board's rows, in the standard library only (boxes.py says why): threads, the
mm and RCU, the VMAs in and off the maple tree, the callback queue and each fault's address."""

from __future__ import annotations

from ...models.vma_locks import rwsem
from ...models.vma_locks.invariants import vma_read_locked
from ...models.vma_locks.state import FREED, LIVE, MM, RCU_PENDING, is_write_locked
from ...models.rcu import RCU_ACTOR
from .. import charts, style
from ..boxes import LEFT, BoardSource, Box, columns, in_a_row
from .rcu import QS_PENDING, callback_boxes, gp_box, grace_periods_completed, qs_needed, rcu_charts

# What each thread is doing, in palette order (the lanes and the thread boxes share it).
PHASES = (
    style.IDLE,
    ("RCU lookup (lock_vma_under_rcu)", style.LOCKLESS),
    ("a VMA read lock", style.HOLDS),
    ("for mmap_lock", style.WAITS),
    ("mmap_lock for read", style.HOLDS_2),
    ("writer epoch: mmap_lock for write", style.WRITER),
    ("a writer, for a VMA's readers", style.FIRST_IN_LINE),
    ("killed by a signal (SIGSEGV)", style.GONE),
    style.DONE,
)
RUNNING, LOOKUP, VMA_READ, WAIT_MM, MM_READ, EPOCH, WAIT_VMA, KILLED, DONE = range(len(PHASES))

VMA_IDLE = ("attached, unlocked", style.FREE)
VMA_READ_LOCKED = ("read-locked by faults", style.HOLDS)
VMA_WRITE_LOCKED = ("write-locked: vm_lock_seq == mm_lock_seq", style.WRITER)
VMA_STALE = ("vm_lock_seq == mm_lock_seq with no writer: faults still back off", style.WRITER)
VMA_DETACHED = ("detached (unmapped), not yet freed", style.UNUSED)
VMA_FREED = ("freed", style.GONE)
VMA_UAF = ("freed while a fault still points to it", style.HARM)
MM_FREE = ("mmap_lock", style.FREE)
MM_READ_HELD = ("mmap_lock for read", style.HOLDS_2)
MM_WRITE_HELD = ("mmap_lock for write", style.WRITER)
EPOCH_LANE = ("write epoch (mm_lock_seq shown at its start)", style.WRITER)

MAX_OFF_TREE = 6  # VMAs shown in the "removed from the tree" row
# A writer's next step while down_write waits: it spins, queues, or sleeps until its retry can succeed.
WRITER_WAITS = ("rwsem_optimistic_spin", "rwsem_down_write_slowpath", "rwsem_try_write_lock")


def phase(s, i: int) -> int:
    t = s.threads[i]
    if not t.frames:
        return KILLED if t.died else DONE
    label, lock = t.frames[0]
    if label in WRITER_WAITS:  # spinning on or queued for an rwsem (cheaper than scanning every VMA's queue)
        return WAIT_MM if lock == MM else WAIT_VMA
    if rwsem.waiting(s.mm.mmap_lock, i):
        return WAIT_MM
    if s.mm.mmap_lock.owner == i:
        return EPOCH
    if vma_read_locked(s, i):
        return VMA_READ
    if rwsem.holds_read(s.mm.mmap_lock, i):
        return MM_READ
    if s.rcu.nesting[i]:
        return LOOKUP
    return RUNNING


def sem_text(sem: rwsem.Rwsem, names) -> str:
    """Who holds and who waits for an rw_semaphore, in one or two short lines."""
    lines = []
    if sem.owner != rwsem.NOBODY:
        lines.append(f"write: {names[sem.owner]}")
    if sem.readers:
        lines.append("read: " + ", ".join(names[r] for r in sem.readers))
    if sem.waiters:
        handoff = " · HANDOFF" if sem.handoff else ""
        lines.append("waiting: " + ", ".join(f"{names[w]} ({k})" for w, k in sem.waiters) + handoff)
    return "\n".join(lines)


def vma_fill(s, v: int) -> str:
    vma = s.vmas[v]
    if vma.status == FREED:
        pointed = any(t.vma == v and t.frames for t in s.threads)
        return VMA_UAF[1] if pointed else VMA_FREED[1]
    if vma.detached or vma.status == RCU_PENDING:
        return VMA_DETACHED[1]
    if is_write_locked(s, v):
        return VMA_WRITE_LOCKED[1]
    if vma.lock.readers:
        return VMA_READ_LOCKED[1]
    return VMA_IDLE[1]


def vma_box(s, v: int, names, x: float, y: float, w: float, h: float) -> Box:
    vma = s.vmas[v]
    seq = "no per-VMA lock" if vma.vm_lock_seq is None else f"vm_lock_seq {vma.vm_lock_seq}"
    lines = [f"{seq} · {vma.prot}"]
    gone = (["detached"] if vma.detached else []) + ([vma.status] if vma.status != LIVE else [])
    if gone:
        lines.append(" · ".join(gone))
    held = sem_text(vma.lock, names)
    if held:
        lines.append(held)
    # Only a missing mm_lock_seq bump leaves the numbers equal outside a write epoch: vma_start_read
    # still backs off, so the VMA stays locked to faults although no writer holds mmap_lock.
    stale = vma.vm_lock_seq == s.mm.mm_lock_seq and not is_write_locked(s, v)
    where = f"[{vma.start}, {vma.end})" if vma.start < vma.end else "new: no range yet"  # vm_area_alloc'd
    return Box(x, y, w, h, vma_fill(s, v), f"VMA {v}  {where}", "\n".join(lines),
               line=VMA_STALE[1] if stale else style.INK, width=5 if stale else 1)


def tree_boxes(s, names) -> list[Box]:
    """The VMAs in the maple tree, in address order."""
    slots = in_a_row(len(s.mm.tree), y=2, max_w=2.6)
    return [vma_box(s, v, names, *slot) for v, slot in zip(s.mm.tree, slots)]


def off_tree_boxes(s, names) -> list[Box]:
    """VMAs no longer in the tree that a reader may still reach: detached, rcu-pending, or freed
    while a thread still points to one (the newest few; ids are never reused)."""
    tree = set(s.mm.tree)
    pointed = {t.vma for t in s.threads if t.frames}
    gone = [v for v, vma in enumerate(s.vmas) if v not in tree and (vma.status != FREED or v in pointed)]
    freed = [v for v, vma in enumerate(s.vmas) if v not in tree and vma.status == FREED and v not in pointed]
    shown = sorted(gone[-MAX_OFF_TREE:] + freed[-max(0, MAX_OFF_TREE - len(gone)):])
    slots = in_a_row(len(shown), y=1, max_w=2.6)
    return [vma_box(s, v, names, *slot) for v, slot in zip(shown, slots)]


def fault_marks(s, names) -> dict[str, list]:
    """Above the tree: where each fault thread faults, placed inside the VMA box that covers it."""
    slots = dict(zip(s.mm.tree, in_a_row(len(s.mm.tree), y=2, max_w=2.6)))
    by_addr: dict[int, list[str]] = {}
    for i, t in enumerate(s.threads):
        if t.kind == "fault" and t.addr >= 0 and t.frames:
            by_addr.setdefault(t.addr, []).append(names[i])
    xs, texts = [], []
    for addr, who in sorted(by_addr.items()):
        xs.append(round(address_x(s, slots, addr), 3))
        texts.append(f"{', '.join(who)} @{addr}")
    return {"x": xs, "y": [2.5] * len(xs), "text": texts}


def address_x(s, slots, addr: int) -> float:
    """x of a page address on the tree row: inside its VMA's box, or in the gap where it would be."""
    for v, (cx, _, w, _) in slots.items():
        vma = s.vmas[v]
        if vma.start <= addr < vma.end:
            return cx - w / 2 + w * (addr - vma.start + 0.5) / (vma.end - vma.start)
    above = [cx - w / 2 for v, (cx, _, w, _) in slots.items() if s.vmas[v].start > addr]
    if above:
        return min(above) - 0.06
    return max((cx + w / 2 for cx, _, w, _ in slots.values()), default=LEFT) + 0.06


def thread_boxes(s, names) -> list[Box]:
    out = []
    for i, (x, y, w, h) in enumerate(in_a_row(len(s.threads), y=4, max_w=2.4)):
        t = s.threads[i]
        lines = [f"next: {t.frames[0].label}" if t.frames else f"killed by {t.died}" if t.died else "done"]
        if t.kind == "fault" and t.addr >= 0:
            lines.append(f"fault at {t.addr}" + (f" · vma {t.vma}" if t.vma >= 0 else ""))
        elif t.kind == "writer":
            lines.append("writer")
        pending = qs_needed(s.rcu, i)
        out.append(Box(x, y, w, h, PHASES[phase(s, i)][1], f"{names[i]} · CPU {i}", "\n".join(lines),
                       line=QS_PENDING[1] if pending else style.INK, width=5 if pending else 1))
    return out


def thread_key(s):
    """What thread_boxes reads: each thread's next step and locks, not its whole program."""
    heads = tuple((t.frames[0] if t.frames else None, t.addr, t.vma, vma_read_locked(s, i), t.died)
                  for i, t in enumerate(s.threads))
    return heads, s.rcu.nesting, s.rcu.qsmask, s.mm.mmap_lock


def mm_box(s, names) -> Box:
    sem = s.mm.mmap_lock
    fill = MM_WRITE_HELD[1] if sem.owner != rwsem.NOBODY else MM_READ_HELD[1] if sem.readers else MM_FREE[1]
    return Box(3.45, 3, 3.0, 0.8, fill, f"mm_lock_seq {s.mm.mm_lock_seq}",
               "mmap_lock " + (sem_text(sem, names) or "free"))


def board_sources(s0) -> list[BoardSource]:
    """The board of a run starting at ``s0``: what vma_lock_view draws and interactive mode recomputes."""
    names = [t.name for t in s0.threads]

    def describe(cb):
        return f"free VMA {cb.obj}" if cb.func == "vm_area_free_rcu_cb" else f"{cb.func}({cb.obj})"

    return [
        BoardSource("threads", lambda s: columns(thread_boxes(s, names)), thread_key),
        BoardSource("mm", lambda s: columns([mm_box(s, names), gp_box(s.rcu, names, 6.75, 3, 3.0)]),
                    lambda s: (s.mm.mmap_lock, s.mm.mm_lock_seq, s.rcu.gp_seq, s.rcu.qsmask)),
        BoardSource("tree", lambda s: columns(tree_boxes(s, names)), lambda s: (s.mm, s.vmas)),
        BoardSource("off-tree", lambda s: columns(off_tree_boxes(s, names)),
                    lambda s: (s.mm, s.vmas, tuple((t.vma, bool(t.frames)) for t in s.threads))),
        BoardSource("callbacks", lambda s: columns(callback_boxes(s.rcu, describe, y=0)),
                    lambda s: (s.rcu.gp_seq, s.rcu.callbacks)),
        BoardSource("faults", lambda s: fault_marks(s, names),
                    lambda s: (s.mm.tree, s.vmas, tuple((t.addr, bool(t.frames)) for t in s.threads)),
                    {"x": float, "y": float, "text": str}),
    ]


COUNTERS = ("vma_lock_success", "vma_lock_abort", "vma_lock_retry", "vma_lock_miss", "mmap_lock_faults", "sigsegv")


def chart_sources(s0) -> list[BoardSource]:
    """Who did what (each thread's phase, its RCU read-side sections, the write epochs with the
    mm_lock_seq they lock VMAs with, grace periods, quiescent states, who took each step), the
    callbacks queued, and the counters (the VMA_LOCK_* events of /proc/vmstat, grace periods)."""
    n = len(s0.threads)

    def writing(trace):
        return [s.mm.mmap_lock.owner != rwsem.NOBODY for s in trace.states]

    return [
        charts.phase_bars("timeline-phases", lambda s: [phase(s, i) for i in range(n)], dy=-0.08, skip=(DONE,)),
        charts.phase_bars("timeline-rcu", lambda s: [1 if k else 0 for k in s.rcu.nesting], dy=0.3, skip=(0,)),
        charts.phase_bars("timeline-epochs", lambda s: (1 if s.mm.mmap_lock.owner != rwsem.NOBODY else 0,),
                          first_lane=n, skip=(0,)),
        charts.interval_labels("epoch-seq", writing, n, lambda t, k: f"seq {t.states[k].mm.mm_lock_seq}"),
        *rcu_charts(list(range(n)), n + 1),
        *charts.actor_marks("timeline", {**{t.name: i for i, t in enumerate(s0.threads)}, RCU_ACTOR: n + 1}),
        charts.counters("counters", len(COUNTERS) + 1, lambda t: [
            [getattr(s.counters, c) for c in COUNTERS] + [gp]
            for s, gp in zip(t.states, grace_periods_completed(t.states))]),
    ]
