"""arch/x86/include/asm/qspinlock.h of Linux 6.12: ``virt_spin_lock()``, the test-and-set fallback
that x86 guests without paravirt spinlocks take (the ``tas`` variant, another lock in place of the
queued one).

arch/x86/kernel/paravirt.c:native_pv_lock_init enables virt_spin_lock_key when the CPU has
X86_FEATURE_HYPERVISOR, and only paravirt spinlock setup (kvm_spinlock_init, xen_init_spinlocks)
disables it again; so a guest whose hypervisor offers no paravirt spinlocks (QEMU under TCG shows
the hypervisor bit unless told -cpu ...,-hypervisor) takes every contended lock by test-and-set:
no pending bit, no queue, and whoever's cmpxchg lands first wins.
"""

from __future__ import annotations

from ...engine import FULL, Frame, Program, push
from .footprints import fp_read_word, fp_word
from .qspinlock_types import _Q_LOCKED_VAL
from .state import set_ctx, set_word

program = Program()  # its steps; model.py adds them to the generic lock's program


def slowpath_virt(s, i, val):
    """queued_spin_lock_slowpath: ``if (virt_spin_lock(lock)) return;`` before anything else."""
    return (Frame("virt_spin_lock"),)


@program.step("virt_spin_lock", "arch/x86/include/asm/qspinlock.h:virt_spin_lock",
                "test-and-set fallback: val = atomic_read(&lock->val), cpu_relax() and read again until it "
                "is 0", footprint=fp_read_word)
def virt_spin_lock(s, i, arg):
    return push(s, i, (Frame("virt_spin_lock_cmpxchg"),))


@program.guard("virt_spin_lock")
def lock_word_free(s, i, arg):
    return s.words[s.threads[i].lock] == 0


@program.step("virt_spin_lock_cmpxchg", "arch/x86/include/asm/qspinlock.h:virt_spin_lock",
                "atomic_try_cmpxchg(&lock->val, &val, _Q_LOCKED_VAL): take the lock if the word is still 0, "
                "else cpu_relax() and goto __retry", footprint=fp_word, order=FULL)
def virt_spin_lock_cmpxchg(s, i, arg):
    lock = s.threads[i].lock
    if s.words[lock] == 0:
        return set_ctx(set_word(s, lock, _Q_LOCKED_VAL), i, val=0)
    return push(s, i, (Frame("virt_spin_lock"),))
