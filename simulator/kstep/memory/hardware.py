"""What the hardware models accept: ONCE accesses, acquire/release, fences and atomics.

Locks and RCU are LKMM-only (their meaning on a machine is a whole implementation, not an
instruction); a hardware model refuses a test that uses them, naming the primitive.
"""

from __future__ import annotations

from kstep.errors import UserError
from kstep.memory.executions import LOCK_KINDS, Candidate, Event, candidates
from kstep.memory.litmus import Litmus

LKMM_ONLY_FENCES = frozenset({"rcu-lock", "rcu-unlock", "sync-rcu", "after-spinlock",
                              "after-unlock-lock", "after-srcu-read-unlock"})


def _lkmm_only(events) -> Event | None:
    return next((e for e in events if e.kind in LOCK_KINDS or e.tags & LKMM_ONLY_FENCES), None)


def lkmm_only_use(litmus: Litmus) -> Event | None:
    """The first lock or RCU event any path of the test makes, or None when every hardware model applies."""
    return next((e for c in candidates(litmus) if (e := _lkmm_only(c.events)) is not None), None)


def refuse_lkmm_only(c: Candidate, model: str) -> None:
    e = _lkmm_only(c.events)
    if e is not None:
        raise UserError(
            f"{c.litmus.name}: line {e.line}: {e.primitive}() is LKMM-only; "
            f"the {model} model takes ONCE accesses, acquire/release, fences and atomics"
        )
