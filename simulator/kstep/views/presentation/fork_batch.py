"""fork-batch's step-table columns and the counts ``-c`` reveals (a blocked thread waits as in vma-locks)."""

from __future__ import annotations

from .vma_locks import VmaLocksPresentation, sem_text


class ForkBatchPresentation(VmaLocksPresentation):
    def summary(self, s):
        c = s.copy
        out = {"mmap_lock": sem_text(s.mm.mmap_lock, [t.name for t in s.threads]),
               "write_protect_seq": str(s.write_protect_seq)}
        if c.vma >= 0:
            out["copying"] = f"vma{c.vma} page {c.addr}" + (f" batch {c.nr}" if c.nr else "")
        out.update({k: str(v) for k, v in s.ops._asdict().items() if v})
        for t in s.threads:
            if t.kind == "gup" and t.folio >= 0:
                out[f"{t.name} pin"] = f"page {t.addr}" + (" (pinned)" if t.pinned else "")
        return out

    def answers(self, trace):
        final = trace.states[-1]
        copies = {}
        for b in final.ghost_batches:
            copies[b.how] = copies.get(b.how, 0) + 1
        return {**final.ops._asdict(), "largest batch": max((b.nr for b in final.ghost_batches), default=0),
                "copies by kind": copies or "none",
                "child rss": dict(zip(("file", "anon", "swap", "shmem"), final.rss)),
                **trace.stats}
