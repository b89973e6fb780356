"""Sequential consistency (Lamport 1979), axiomatically: one order of all accesses.

An execution is allowed iff ``po | rf | co | fr`` is acyclic and no write comes between the
read and the write of an RMW (``rmw & (fre ; coe)`` empty), as in "Herding cats"
(Alglave, Maranget, Tautschnig, TOPLAS 2014), section 4.1. Fences change nothing.
"""

from __future__ import annotations

from kstep.memory import relations as rel
from kstep.memory.executions import Candidate, cobase, coherence_orders, initial_co0
from kstep.memory.hardware import refuse_lkmm_only

NAME = "sc"


def from_reads(c: Candidate, co, rf):
    """fr: a read before every write co-after the one it read."""
    fr = rel.seq(rel.inverse(rf), co)
    return tuple(row & ~(1 << i) for i, row in enumerate(fr))


def atomic(c: Candidate, co, fr) -> bool:
    """No write between an RMW's read and its write (empty rmw & (fre ; coe))."""
    return rel.is_empty(rel.inter(c.rmw, rel.seq(rel.inter(fr, c.ext), rel.inter(co, c.ext))))


def coherence(c: Candidate, rf):
    """Every co of the candidate's writes extending what its reads observe."""
    writes = c.set_of(lambda e: e.kind == "W")
    return coherence_orders(c, writes, cobase(c, rf, writes, initial_co0(c, writes)))


def executions(c: Candidate, rf):
    refuse_lkmm_only(c, NAME)
    for co in coherence(c, rf):
        fr = from_reads(c, co, rf)
        if atomic(c, co, fr) and rel.acyclic(rel.union(rel.union(c.po, rf), rel.union(co, fr))):
            yield co, rf, fr, frozenset()
