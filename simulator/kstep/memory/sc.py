"""Sequential consistency (Lamport 1979), axiomatically: one order of all accesses.

An execution is allowed iff ``po | rf | co | fr`` is acyclic and no write comes between the
read and the write of an RMW (``rmw & (fre ; coe)`` empty), as in "Herding cats"
(Alglave, Maranget, Tautschnig, TOPLAS 2014), section 4.1. Fences change nothing.
"""

from __future__ import annotations

from kstep.memory import relations as rel
from kstep.memory.axioms import Axiom, allowed
from kstep.memory.executions import Candidate, cobase, coherence_orders, initial_co0
from kstep.memory.hardware import refuse_lkmm_only

NAME = "sc"
ORDER = "sc"  # the axiom whose relation orders an allowed execution's events (the player reveals them in it)


def from_reads(c: Candidate, co, rf):
    """fr: a read before every write co-after the one it read."""
    fr = rel.seq(rel.inverse(rf), co)
    return tuple(row & ~(1 << i) for i, row in enumerate(fr))


def atomic(c: Candidate, co, fr) -> Axiom:
    """No write between an RMW's read and its write (empty rmw & (fre ; coe))."""
    return Axiom("atomic", "irreflexive",
                 (("rmw⁻¹", rel.inverse(c.rmw)), ("fre", rel.inter(fr, c.ext)), ("coe", rel.inter(co, c.ext))))


def sc_per_location(c: Candidate, rf, co, fr) -> Axiom:
    """Per location, one order of the accesses (herd's ``acyclic po-loc | com``)."""
    return Axiom("sc-per-location", "acyclic", (("po-loc", rel.inter(c.po, c.loc)), ("rf", rf), ("co", co), ("fr", fr)))


def coherence(c: Candidate, rf):
    """Every co of the candidate's writes extending what its reads observe."""
    writes = c.set_of(lambda e: e.kind == "W")
    return coherence_orders(c, writes, cobase(c, rf, writes, initial_co0(c, writes)))


def axioms(c: Candidate, rf):
    """The axioms of one execution of candidate ``c`` reading ``rf``, given its co and fr."""

    def of(co, fr):
        yield atomic(c, co, fr)
        yield Axiom("sc", "acyclic", (("po", c.po), ("rf", rf), ("co", co), ("fr", fr)))

    return of


def axiomatic(name: str, axioms_of):
    """A hardware model's ``executions(c, rf)``: every coherence order of candidate ``c`` reading ``rf``
    whose axioms (``axioms_of(c, rf)(co, fr)``, the model's own) all hold; the same search for sc,
    tso, arm64 and power, which differ only in their axioms."""
    def executions(c: Candidate, rf):
        refuse_lkmm_only(c, name)
        of = axioms_of(c, rf)
        for co in coherence(c, rf):
            fr = from_reads(c, co, rf)
            if allowed(of(co, fr)):
                yield co, rf, fr, frozenset()
    return executions


executions = axiomatic(NAME, axioms)
