"""ARMv8 (arm64), axiomatically, with the kernel's macros compiled as arm64 compiles them.

The model is the other-multi-copy-atomic ARMv8 axiomatic model of Pulte, Flur, Deacon,
French, Sarkar, Sewell, "Simplifying ARM concurrency: multicopy-atomic axiomatic and
operational models for ARMv8", POPL 2018 (section 4), which the Arm ARM adopted (B2.3,
"Definition of the Armv8 memory model"): per-location SC (``acyclic po-loc | ca | rf``), RMW
atomicity, and ``acyclic ob`` where the ordered-before relation is

* ``obs = rfe | coe | fre`` (observed by another CPU: multi-copy atomic),
* ``dob = addr | data | ctrl;[W] | addr;po;[W] | (addr | data);rfi`` (dependencies; no
  kernel macro emits an ISB, so the ISB clause has nothing to order),
* ``aob = rmw | [range(rmw)];rfi;[A]``,
* ``bob = po;[dmb ish];po | [L];po;[A] | [R];po;[dmb ishld];po | [A];po
  | [W];po;[dmb ishst];po;[W] | po;[L] | po;[L];coi``.

The kernel's primitives on arm64 (arch/arm64/include/asm/barrier.h, atomic_lse.h,
atomic_ll_sc.h, cmpxchg.h of 6.12): ``READ_ONCE``/``WRITE_ONCE`` are ``ldr``/``str``;
``smp_load_acquire()`` is ``ldar`` (A), ``smp_store_release()`` ``stlr`` (L); ``smp_mb()`` is
``dmb ish``, ``smp_rmb()`` ``dmb ishld``, ``smp_wmb()`` ``dmb ishst``;
``smp_mb__before_atomic()``/``__after_atomic()`` are ``smp_mb()`` (asm-generic default).
A fully ordered RMW is a full barrier on both sides (the LL/SC form ends in ``dmb ish`` after
a ``stlxr``; the LSE ``*al`` forms have acquire and release semantics, which the Arm ARM
makes barrier-ordered both ways): kstep keeps herd-representation.txt's ``F[mb]`` on each
side as ``dmb ish``. An ``_acquire`` RMW's read is A, a ``_release`` RMW's write L, a
``_relaxed`` or non-returning one has no ordering. A failing ``cmpxchg`` is the LL/SC
form's plain ``ldxr`` with no barrier (the LSE ``casal`` would give an acquire read: kstep
takes the weaker, which the kernel runs on CPUs without LSE).
"""

from __future__ import annotations

from kstep.memory import relations as rel
from kstep.memory.axioms import Axiom
from kstep.memory.executions import Candidate
from kstep.memory.sc import atomic, axiomatic, sc_per_location

NAME = "arm64"
ORDER = "external"  # Pulte et al.'s name for acyclic ob
FULL = frozenset({"mb", "before-atomic", "after-atomic"})  # dmb ish


def _static(c: Candidate):
    """The parts of ob fixed by the program, named: dob without rfi, aob's rmw, and bob."""
    n = c.n
    po = c.po
    reads = c.set_of(lambda e: e.kind == "R")
    writes = c.set_of(lambda e: e.kind == "W")
    acquire = c.set_of(lambda e: e.kind == "R" and "acquire" in e.tags)
    release = c.set_of(lambda e: e.kind == "W" and "release" in e.tags)

    def fence(pred):
        return rel.identity(n, c.set_of(lambda e: e.kind == "F" and pred(e.tags)))

    def around(f):
        return rel.seq(rel.seq(po, f), po)

    dob = rel.union(
        rel.union(c.addr, c.data),
        rel.union(
            rel.seq(c.ctrl, rel.identity(n, writes)),
            rel.seq(rel.seq(c.addr, po), rel.identity(n, writes)),
        ),
    )
    bob = rel.union(
        around(fence(lambda t: t & FULL)),
        rel.seq(rel.seq(rel.identity(n, release), po), rel.identity(n, acquire)),
    )
    bob = rel.union(bob, rel.seq(rel.identity(n, reads), around(fence(lambda t: "rmb" in t))))
    bob = rel.union(bob, rel.seq(rel.identity(n, acquire), po))
    wmb = rel.seq(rel.seq(rel.identity(n, writes), around(fence(lambda t: "wmb" in t))),
                  rel.identity(n, writes))
    bob = rel.union(bob, rel.union(wmb, rel.seq(po, rel.identity(n, release))))
    memory = reads | writes
    mm = rel.cartesian(n, memory, memory)
    return (("dob", rel.inter(dob, mm)), ("aob", rel.inter(c.rmw, mm)), ("bob", rel.inter(bob, mm))), acquire, release


def axioms(c: Candidate, rf):
    """The axioms of one execution of candidate ``c`` reading ``rf``, given its co and fr."""
    n = c.n
    fixed, acquire, release = _static(c)
    internal = tuple(
        sum(1 << f.id for f in c.events if f.thread == e.thread and e.thread >= 0) for e in c.events
    )
    rfe, rfi = rel.inter(rf, c.ext), rel.inter(rf, internal)
    # (addr | data);rfi and aob's [range(rmw)];rfi;[A]
    by_rfi = rel.union(
        rel.seq(rel.union(c.addr, c.data), rfi),
        rel.seq(rel.seq(rel.identity(n, rel.range_(c.rmw)), rfi), rel.identity(n, acquire)),
    )
    before_release = rel.seq(c.po, rel.identity(n, release))

    def of(co, fr):
        yield atomic(c, co, fr)
        yield sc_per_location(c, rf, co, fr)
        yield Axiom("external", "acyclic", (
            *fixed, ("dob | aob (rfi)", by_rfi), ("rfe", rfe), ("coe", rel.inter(co, c.ext)),
            ("fre", rel.inter(fr, c.ext)), ("bob (po;[L];coi)", rel.seq(before_release, rel.inter(co, internal)))))

    return of


executions = axiomatic(NAME, axioms)
