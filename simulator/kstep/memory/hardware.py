"""What the hardware models accept: ONCE accesses, acquire/release, fences and atomics.

Locks and RCU are LKMM-only (their meaning on a machine is a whole implementation, not an
instruction); a hardware model refuses a test that uses them, naming the primitive.
"""

from __future__ import annotations

from kstep.errors import UserError
from kstep.memory.executions import LOCK_KINDS, Candidate

LKMM_ONLY_FENCES = frozenset({"rcu-lock", "rcu-unlock", "sync-rcu", "after-spinlock",
                              "after-unlock-lock", "after-srcu-read-unlock"})


def refuse_lkmm_only(c: Candidate, model: str) -> None:
    for e in c.events:
        if e.kind in LOCK_KINDS or e.tags & LKMM_ONLY_FENCES:
            raise UserError(
                f"{c.litmus.name}: line {e.line}: {e.primitive}() is LKMM-only; "
                f"the {model} model takes ONCE accesses, acquire/release, fences and atomics"
            )
