"""What calls the lock, in every lock family of the model: a context's list of locks, and the
critical section, which is no locking code but what spin_lock()'s caller does with the lock held.
Each program (qspinlock.py, ticket.py, powerpc.py) registers these under the same labels.
"""

from __future__ import annotations

from ...engine import Frame, Source
from .state import ghost_got_lock

CALLER = Source.outside("spin_lock()'s caller")
CRITICAL_SECTION = "the lock is held: the caller's critical section (where mutual exclusion is checked)"
FOREVER = "forever"  # a scenario's repeat with no end: the state keeps no count (liveness)


def lock_list(s, i, arg):
    """The scenario's program for one context: its locks in order, `repeat` times (or forever)."""
    locks, repeat = arg
    frames = tuple(Frame("lock_section", lock) for lock in locks)
    if repeat == FOREVER:
        return frames + (Frame("lock_list", arg),)
    return frames + ((Frame("lock_list", (locks, repeat - 1)),) if repeat > 1 else ())


def critical_section(s, i, arg):
    t = s.threads[i]
    return ghost_got_lock(s, t.lock, i)
