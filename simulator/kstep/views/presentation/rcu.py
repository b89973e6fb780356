"""RCU's step-table columns and the counts ``-c`` reveals."""

from __future__ import annotations

from ...models.rcu import FREED, awaited, gp_running, gp_seq_long, grace_periods_ended
from .base import Presentation


def rcu_summary(s) -> dict[str, str]:
    """Step-table columns for RCU: gp_seq, who the grace period waits for, queued callbacks."""
    r = s.rcu
    names = [t.name for t in s.threads]
    waiting = [names[c] for c in awaited(r)]
    gp = ("running, waits for " + ",".join(waiting) if waiting else "running") if gp_running(r) else "idle"
    return {
        "gp_seq": str(gp_seq_long(r.gp_seq)),
        "grace period": gp,
        "in section": ",".join(n for n, k in zip(names, r.nesting) if k) or "-",
        "callbacks": " ".join(f"{cb.func}({cb.obj})@{gp_seq_long(cb.wait)}" for cb in r.callbacks) or "-",
    }


class RcuPresentation(Presentation):
    def summary(self, s):
        return rcu_summary(s) | {"objects": " ".join(f"{k}:{st}" for k, st in enumerate(s.objects))}

    def answers(self, trace):
        final = trace.states[-1]
        return {"grace_periods": grace_periods_ended(trace.states[0].rcu.gp_seq, final.rcu.gp_seq),
                "objects_freed": sum(st == FREED for st in final.objects), **trace.stats}
