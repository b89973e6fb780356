"""POWER (ppc64le), axiomatically, with the kernel's macros compiled as powerpc compiles them.

The model is the Power model of "Herding cats" (Alglave, Maranget, Tautschnig, TOPLAS 2014,
section 6), which agrees with the operational model of Sarkar, Sewell, Alglave, Maranget,
Williams, "Understanding POWER multiprocessors", PLDI 2011. It is not multi-copy atomic:
beside per-location SC and RMW atomicity,

* preserved program order is the least fixed point of ``ii``/``ic``/``ci``/``cc`` built from
  dependencies, ``rdw``, ``detour``, ``rfi`` and ctrl+isync; ``ppo = [R];ii;[R] | [R];ic;[W]``;
* ``fence = sync | lwsync minus write-to-read``; ``hb = ppo | fence | rfe`` is acyclic
  (no thin air);
* ``prop = [W];prop-base;[W] | com*;prop-base*;sync;hb*`` with
  ``prop-base = (fence | rfe;fence);hb*``: ``co | prop`` is acyclic (propagation) and
  ``fre;prop;hb*`` irreflexive (observation).

The kernel's primitives on powerpc64 (arch/powerpc/include/asm/barrier.h, synch.h,
atomic.h, cmpxchg.h of 6.12): ``smp_mb()`` is ``sync``, ``smp_rmb()`` and ``smp_wmb()``
``lwsync`` (SMPWMB with CONFIG_PPC64); ``smp_store_release()`` is ``lwsync`` then the store,
``smp_load_acquire()`` the load then ``lwsync``; ``smp_mb__before_atomic()``/``__after_atomic()``
are ``smp_mb()`` (asm-generic default). A fully ordered RMW is ``sync`` on both sides
(PPC_ATOMIC_ENTRY_BARRIER / EXIT_BARRIER, herd-representation.txt's two ``F[mb]``), and a
failing fully ordered ``cmpxchg`` keeps the entry ``sync`` but branches past the exit one; a
``_release`` RMW starts with ``lwsync``; an ``_acquire`` RMW ends with ``isync`` after the
``stwcx.``'s branch (PPC_ACQUIRE_BARRIER: ctrl+isync from its read), skipped on failure.
"""

from __future__ import annotations

from kstep.memory import relations as rel
from kstep.memory.axioms import Axiom
from kstep.memory.executions import Candidate
from kstep.memory.sc import atomic, axiomatic, sc_per_location

NAME = "power"
ORDER = "no-thin-air"  # acyclic hb
SYNC = frozenset({"mb", "before-atomic", "after-atomic"})
LWSYNC = frozenset({"rmb", "wmb"})
FULL_CMPXCHG = frozenset({"cmpxchg", "atomic_cmpxchg", "atomic_add_unless"})


def _fences(c: Candidate):
    """(sync, lwsync) as relations between memory events, from the fences the macros emit."""
    n, po = c.n, c.po
    sync_at = c.set_of(lambda e: e.kind == "F" and e.tags & SYNC)
    lwsync_at = c.set_of(lambda e: e.kind == "F" and e.tags & LWSYNC)
    sync = rel.seq(rel.seq(po, rel.identity(n, sync_at)), po)
    lwsync = rel.seq(rel.seq(po, rel.identity(n, lwsync_at)), po)
    for e in c.events:
        before = rel.inverse(po)[e.id]  # events po-before e
        after = po[e.id] | (1 << e.id)
        if e.kind == "W" and "release" in e.tags:  # lwsync; st
            lwsync = rel.union(lwsync, rel.cartesian(n, before, after))
        elif e.kind == "R" and "acquire" in e.tags and not e.rmw:  # ld; lwsync
            lwsync = rel.union(lwsync, rel.cartesian(n, before | (1 << e.id), po[e.id]))
        elif e.kind == "R" and e.rmw and "once" in e.tags and e.primitive in FULL_CMPXCHG \
                and not rel.domain(c.rmw) >> e.id & 1:  # failed: the entry sync only
            sync = rel.union(sync, rel.cartesian(n, before, after))
    memory = c.set_of(lambda e: e.kind in ("R", "W"))
    mm = rel.cartesian(n, memory, memory)
    return rel.inter(sync, mm), rel.inter(lwsync, mm)


def _ctrl_isync(c: Candidate):
    """An _acquire RMW's read to everything after its isync (only when it succeeded)."""
    acquire_rmw = c.set_of(lambda e: e.kind == "R" and e.rmw and "acquire" in e.tags)
    return rel.seq(rel.identity(c.n, acquire_rmw & rel.domain(c.rmw)), c.po)


def _ppo(c: Candidate, rf, co, fr, internal):
    n = c.n
    poloc = rel.inter(c.po, c.loc)
    ext = c.ext
    dp = rel.union(c.addr, c.data)
    rdw = rel.inter(poloc, rel.seq(rel.inter(fr, ext), rel.inter(rf, ext)))
    detour = rel.inter(poloc, rel.seq(rel.inter(co, ext), rel.inter(rf, ext)))
    ii0 = rel.union(rel.union(dp, rdw), rel.inter(rf, internal))
    ci0 = rel.union(_ctrl_isync(c), detour)
    cc0 = rel.union(rel.union(dp, poloc), rel.union(c.ctrl, rel.seq(c.addr, c.po)))
    ii = ic = ci = cc = rel.empty(n)
    while True:
        ii2 = rel.union(rel.union(ii0, ci), rel.union(rel.seq(ic, ci), rel.seq(ii, ii)))
        ic2 = rel.union(rel.union(ii, cc), rel.union(rel.seq(ic, cc), rel.seq(ii, ic)))
        ci2 = rel.union(ci0, rel.union(rel.seq(ci, ii), rel.seq(cc, ci)))
        cc2 = rel.union(rel.union(cc0, ci), rel.union(rel.seq(ci, ic), rel.seq(cc, cc)))
        if (ii2, ic2, ci2, cc2) == (ii, ic, ci, cc):
            break
        ii, ic, ci, cc = ii2, ic2, ci2, cc2
    reads = rel.identity(n, c.set_of(lambda e: e.kind == "R"))
    writes = rel.identity(n, c.set_of(lambda e: e.kind == "W"))
    return rel.union(rel.seq(rel.seq(reads, ii), reads), rel.seq(rel.seq(reads, ic), writes))


def axioms(c: Candidate, rf):
    """The axioms of one execution of candidate ``c`` reading ``rf``, given its co and fr."""
    n = c.n
    sync, lwsync = _fences(c)
    writes = c.set_of(lambda e: e.kind == "W")
    reads = c.set_of(lambda e: e.kind == "R")
    fence = rel.union(sync, rel.diff(lwsync, rel.cartesian(n, writes, reads)))
    internal = tuple(
        sum(1 << f.id for f in c.events if f.thread == e.thread and e.thread >= 0) for e in c.events
    )
    rfe = rel.inter(rf, c.ext)
    w_id = rel.identity(n, writes)

    def of(co, fr):
        yield atomic(c, co, fr)
        yield sc_per_location(c, rf, co, fr)
        com = rel.union(rel.union(rf, co), fr)
        hb_parts = (("ppo", _ppo(c, rf, co, fr, internal)), ("fence", fence), ("rfe", rfe))
        yield Axiom("no-thin-air", "acyclic", hb_parts)
        hb_star = rel.reflexive(rel.plus(rel.union(rel.union(hb_parts[0][1], fence), rfe)))
        prop_base = rel.seq(rel.union(fence, rel.seq(rfe, fence)), hb_star)
        prop = rel.union(
            rel.seq(rel.seq(w_id, prop_base), w_id),
            rel.seq(rel.seq(rel.seq(rel.reflexive(rel.plus(com)), rel.reflexive(rel.plus(prop_base))), sync), hb_star),
        )
        yield Axiom("propagation", "acyclic", (("co", co), ("prop", prop)))
        yield Axiom("observation", "irreflexive", (("fre", rel.inter(fr, c.ext)), ("prop", prop), ("hb*", hb_star)))

    return of


executions = axiomatic(NAME, axioms)
