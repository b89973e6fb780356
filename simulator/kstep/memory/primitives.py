"""Where Linux 6.12 defines each litmus primitive for each model's architecture: the code pane's source.

A kernel macro resolves the way the preprocessor resolves it: ``smp_wmb()`` is asm-generic's wrapper
around ``__smp_wmb()``, which the architecture's ``asm/barrier.h`` defines (``dmb(ishst)`` on arm64,
``barrier()`` on x86, SMPWMB — ``lwsync`` — on powerpc) or, where it does not, asm-generic's
``#ifndef`` default. :func:`candidates` lists, per model and primitive, the definitions in that
order; the first one the 6.12 tree has is the one shown (``kstep.source.excerpts`` commits them, and a
test checks them against the tree). ``sc`` and ``lkmm`` are no architecture: they show the generic
wrappers every architecture shares.
"""

from __future__ import annotations

ARCH = {"tso": "x86", "arm64": "arm64", "power": "powerpc"}
GENERIC_BARRIER = "include/asm-generic/barrier.h"
RWONCE = "include/asm-generic/rwonce.h"
ATOMICS = "include/linux/atomic/atomic-instrumented.h"
BARRIERS = frozenset({"smp_mb", "smp_rmb", "smp_wmb", "smp_store_release", "smp_load_acquire", "smp_store_mb",
                      "smp_mb__before_atomic", "smp_mb__after_atomic"})
ONCE = {"READ_ONCE": "READ_ONCE", "WRITE_ONCE": "WRITE_ONCE", "rcu_dereference": "READ_ONCE",
        "rcu_assign_pointer": "smp_store_release"}
LKMM_ONLY = {
    "spin_lock": ("include/linux/spinlock.h", "spin_lock"), "spin_unlock": ("include/linux/spinlock.h", "spin_unlock"),
    "spin_trylock": ("include/linux/spinlock.h", "spin_trylock"),
    "spin_is_locked": ("include/linux/spinlock.h", "spin_is_locked"),
    "rcu_read_lock": ("include/linux/rcupdate.h", "rcu_read_lock"),
    "rcu_read_unlock": ("include/linux/rcupdate.h", "rcu_read_unlock"),
    "synchronize_rcu": ("kernel/rcu/tree.c", "synchronize_rcu"),
    "smp_mb__after_spinlock": ("include/linux/spinlock.h", "smp_mb__after_spinlock"),
}
PLAIN = frozenset({"*p", "*p ="})  # a plain C access: no macro at all


def candidates(model: str, primitive: str) -> tuple[tuple[str, str], ...]:
    """(path, name) of the definitions ``primitive`` may resolve to under ``model``, first choice first."""
    arch = ARCH.get(model)
    if primitive in ONCE:
        name = ONCE[primitive]
        if name != primitive:  # rcu_assign_pointer is a release store, rcu_dereference a ONCE load
            return candidates(model, name)
        return ((RWONCE, name),)
    if primitive in BARRIERS:
        inner = "__" + primitive
        if arch is None:
            return ((GENERIC_BARRIER, primitive),)
        return ((f"arch/{arch}/include/asm/barrier.h", inner), (GENERIC_BARRIER, inner))
    if primitive in LKMM_ONLY:
        return (LKMM_ONLY[primitive],)
    if primitive in PLAIN:
        return ()
    base = primitive
    for suffix in ("_relaxed", "_acquire", "_release"):
        base = base.removesuffix(suffix)
    if base in ("xchg", "cmpxchg") and arch is not None:
        return ((f"arch/{arch}/include/asm/cmpxchg.h", "arch_" + primitive),
                (f"arch/{arch}/include/asm/cmpxchg.h", "arch_" + base), (ATOMICS, primitive))
    if primitive.startswith("atomic_") and arch is not None:
        return ((f"arch/{arch}/include/asm/atomic.h", "arch_" + primitive), (ATOMICS, primitive))
    return ((ATOMICS, primitive),)


def every_candidate() -> list[tuple[str, str]]:
    """Every definition any model may show for any primitive the litmus parser accepts."""
    from kstep.memory.litmus import PRIMITIVES

    names = set(PRIMITIVES) | set(ONCE)
    return sorted({c for m in ("sc", "tso", "arm64", "power", "lkmm") for p in names for c in candidates(m, p)})


def definition(model: str, primitive: str, excerpts: dict) -> tuple[str, str] | None:
    """The first candidate the committed excerpts hold (``excerpts``: "path:name" -> excerpt)."""
    return next((c for c in candidates(model, primitive) if f"{c[0]}:{c[1]}" in excerpts), None)
