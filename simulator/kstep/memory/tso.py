"""x86-TSO, axiomatically, with the kernel's macros compiled as x86_64 compiles them.

The model is x86-TSO (Owens, Sarkar, Sewell, "A better x86 memory model: x86-TSO",
TPHOLs 2009) in the axiomatic form of "Herding cats" (Alglave, Maranget, Tautschnig,
TOPLAS 2014, section 4): per-location SC (``acyclic po-loc | com``), RMW atomicity, and
``acyclic ppo | rfe | co | fr | mfence | implied`` where ``ppo`` is program order minus
write-to-read pairs (the store buffer), a read may see its own CPU's buffered write early
(``rfi`` is not in the order), and a locked instruction orders everything around it.

The kernel's primitives on x86_64 (arch/x86/include/asm/barrier.h, atomic.h, cmpxchg.h
of 6.12): ``smp_mb()`` is a locked ``addl`` to the stack, a full fence; ``smp_rmb()``,
``smp_wmb()``, ``smp_mb__before_atomic()``/``__after_atomic()`` are compiler barriers only;
``smp_load_acquire()``/``smp_store_release()`` are plain moves; every atomic RMW
(``xchg`` — implicitly locked —, ``lock cmpxchg``, ``lock xadd``, ``lock incl``) is a locked
instruction, whatever its ``_relaxed``/``_acquire``/``_release`` suffix, and a failing
``lock cmpxchg`` is locked too.
"""

from __future__ import annotations

from kstep.memory import relations as rel
from kstep.memory.axioms import Axiom
from kstep.memory.executions import Candidate
from kstep.memory.sc import atomic, axiomatic, sc_per_location

NAME = "tso"
ORDER = "tso"


def _orders(c: Candidate):
    """ppo | mfence | implied: the program order TSO keeps (independent of rf and co)."""
    n = c.n
    reads = c.set_of(lambda e: e.kind == "R")
    writes = c.set_of(lambda e: e.kind == "W")
    memory = reads | writes
    ppo = rel.diff(rel.inter(c.po, rel.cartesian(n, memory, memory)), rel.cartesian(n, writes, reads))
    full = c.set_of(lambda e: (e.kind == "F" and "mb" in e.tags) or e.rmw)
    through = rel.seq(rel.seq(c.po, rel.identity(n, full)), rel.reflexive(c.po))
    before = rel.seq(rel.reflexive(c.po), rel.seq(rel.identity(n, full), c.po))
    fenced = rel.inter(rel.union(through, before), rel.cartesian(n, memory, memory))
    return rel.union(ppo, fenced)


def axioms(c: Candidate, rf):
    """The axioms of one execution of candidate ``c`` reading ``rf``, given its co and fr."""
    kept = _orders(c)
    rfe = rel.inter(rf, c.ext)

    def of(co, fr):
        yield atomic(c, co, fr)
        yield sc_per_location(c, rf, co, fr)
        yield Axiom("tso", "acyclic", (("ppo | mfence", kept), ("rfe", rfe), ("co", co), ("fr", fr)))

    return of


executions = axiomatic(NAME, axioms)
