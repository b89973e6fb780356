"""Queued spinlocks of Linux 6.12 (kernel/locking/qspinlock.c and its kin), one module per kernel file.

qspinlock_types.py, qspinlock.py and mcs_spinlock.py are the generic queued spinlock; ticket.py
(with spinlock_types.py), powerpc.py and x86.py the other locks a variant runs instead;
before_set_locked.py the 2014 release and broken.py the broken twins, which variants.py names;
state.py, caller.py, invariants.py and scenario.py the model's own parts; footprints.py and
symmetry.py the search reductions; model.py the ``QspinlockModel`` that ties them.
"""

from .model import QspinlockModel

__all__ = ["QspinlockModel"]
