"""vma-locks' step-table columns, what a queued thread waits for, and the counts ``-c`` reveals."""

from __future__ import annotations

from ...engine import thread_index
from ...models.vma_locks.model import rwsem_name
from ...models.vma_locks.rwsem import NOBODY
from ...models.vma_locks.state import is_write_locked, lock_of
from .base import Presentation


class VmaLocksPresentation(Presentation):
    def blocked_on(self, s, actor):
        """A thread queued on an rwsem (its next step's guard waits for a grant or a free lock)."""
        if actor in self.model.daemons:  # the RCU kthread is idle, never blocked
            return ""
        t = s.threads[thread_index(s, actor)]
        if not t.frames or t.frames[0].label not in ("rwsem_try_write_lock", "rwsem_down_read_slowpath"):
            return ""
        lock = t.frames[0].arg
        sem, names = lock_of(s, lock), [u.name for u in s.threads]
        held = ([f"held for write by {names[sem.owner]}"] if sem.owner != NOBODY else []) + \
            ([f"held for read by {', '.join(names[r] for r in sem.readers)}"] if sem.readers else [])
        return f"{rwsem_name(lock)} ({'; '.join(held) or 'free, granted in queue order'})"

    def summary(self, s):
        names = [t.name for t in s.threads]
        out = {"mm_lock_seq": str(s.mm.mm_lock_seq), "mmap_lock": sem_text(s.mm.mmap_lock, names)}
        for v in s.mm.tree:
            vma = s.vmas[v]
            parts = [f"[{vma.start},{vma.end}) {vma.prot}"]
            if vma.vm_lock_seq is not None:
                parts.append(f"seq={vma.vm_lock_seq}" + (" W" if is_write_locked(s, v) else ""))
            held = sem_text(vma.lock, names)
            out[f"vma{v}"] = " ".join(parts + ([held] if held != "-" else []))
        dead = [f"{t.name} ({t.died})" for t in s.threads if t.died]
        if dead:
            out["killed"] = ", ".join(dead)
        return out

    def answers(self, trace):
        final = trace.states[-1]
        killed = ", ".join(f"{t.name} by {t.died}" for t in final.threads if t.died) or "none"
        counted = ({"counters": "not kept: a thread repeats forever, and a count would keep its states from ever "
                                "repeating"} if final.forever else final.counters._asdict())
        return {**counted, "killed": killed, **trace.stats}


def sem_text(sem, names):
    parts = []
    if sem.owner != NOBODY:
        parts.append("W:" + names[sem.owner])
    if sem.readers:
        parts.append("R:" + ",".join(names[r] for r in sem.readers))
    if sem.waiters:
        parts.append("wait:" + ",".join(f"{names[w]}({k})" for w, k in sem.waiters))
    if sem.handoff:
        parts.append("HANDOFF")
    return " ".join(parts) or "-"
