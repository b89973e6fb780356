"""vma_start_read() of include/linux/mm.h (Linux 6.12), as two steps of kstep's per-VMA lock model.

A step is a function ``step(s, i, arg) -> new state``: ``s`` is the whole state (a VmaState),
``i`` the index of the faulting thread, ``arg`` unused here.  The fault's VMA is
``s.vmas[s.threads[i].vma]``; ``s.mm.mm_lock_seq`` is the mm's sequence number.  A step says what
the thread does next by pushing frames (``push(s, i, (Frame("label"), ...))``): the steps below may
push ``down_read_trylock``, ``check_detached``, ``up_read`` (argument: the VMA's id),
``rcu_read_unlock`` and ``vma_lock_abort``.  When the recheck passes, ``lock_held(s, i)`` (from
driver.py) is what follows: the thread holds the VMA read-locked and goes on to check_detached.
"""

from kstep.engine import Frame, push

from driver import lock_held


def vma_start_read(s, i, arg):
    """The lockless check: give up at once if the VMA looks write-locked; else try its rwsem."""
    # BEGIN SOLUTION
    # CANARY-KSTEP-SOLUTION-vma-start-read
    vma = s.vmas[s.threads[i].vma]
    if vma.vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("down_read_trylock"),))
    # END SOLUTION


def vma_start_read_recheck(s, i, arg):
    """Under the rwsem: compare again (with acquire); equal means a writer got there first."""
    # BEGIN SOLUTION
    v = s.threads[i].vma
    if s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("up_read", v), Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return lock_held(s, i)
    # END SOLUTION
