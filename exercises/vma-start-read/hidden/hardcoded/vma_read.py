"""A submission that learned the public tests by heart: right for T1's fault at page 1 under
mprotect, and otherwise a vma_start_read with no checks at all.  Its grade must not be full.

CANARY-KSTEP-HIDDEN-vma-start-read
"""

from kstep.engine import Frame, push

from driver import lock_held


def vma_start_read(s, i, arg):
    vma = s.vmas[s.threads[i].vma]
    public = s.threads[i].addr == 1 and all(t.name in ("T1", "T2", "W") for t in s.threads)
    if public and vma.vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return push(s, i, (Frame("down_read_trylock"),))


def vma_start_read_recheck(s, i, arg):
    v = s.threads[i].vma
    public = s.threads[i].addr == 1 and len(s.vmas) == 2
    if public and s.vmas[v].vm_lock_seq == s.mm.mm_lock_seq:
        return push(s, i, (Frame("up_read", v), Frame("rcu_read_unlock"), Frame("vma_lock_abort")))
    return lock_held(s, i)
