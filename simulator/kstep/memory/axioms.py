"""A model's axioms as data, so that a forbidden execution can say which one it breaks and show why.

Each hardware model (``sc``, ``tso``, ``arm64``, ``power``) lists its axioms for one execution as
:class:`Axiom` values, in the order it checks them; an execution is allowed when every one holds.
An axiom keeps its relation in named parts (``po``, ``rfe``, ``bob`` ...), so the cycle that breaks
it (:func:`cycle`) names the relation each of its edges comes from: what the player highlights.

``acyclic``: the union of the parts has no cycle; ``empty``: it relates nothing (its pairs are what
breaks it). ``irreflexive``: the sequence ``p1;p2;...`` of
the parts relates no event to itself (herd's ``irreflexive``; RMW atomicity's
``empty rmw & (fre;coe)`` is written ``irreflexive rmw^-1;fre;coe``, the same condition).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional

from kstep.memory import relations as rel


class Axiom(NamedTuple):
    name: str  # as the model's source names it ("external", "propagation", ...)
    check: str  # "acyclic", "irreflexive" or "empty"
    parts: tuple  # ((name, relation), ...)

    def relation(self):
        rels = [r for _, r in self.parts]
        out = rels[0]
        for r in rels[1:]:
            out = rel.seq(out, r) if self.check == "irreflexive" else rel.union(out, r)
        return out

    def holds(self) -> bool:
        r = self.relation()
        if self.check == "empty":
            return rel.is_empty(r)
        return rel.acyclic(r) if self.check == "acyclic" else rel.irreflexive(r)


def allowed(axioms: Iterable[Axiom]) -> bool:
    """Every axiom holds (checked in order, stopping at the first that fails)."""
    return all(a.holds() for a in axioms)


def first_broken(axioms: Iterable[Axiom]) -> Optional[Axiom]:
    return next((a for a in axioms if not a.holds()), None)


def cycle(axiom: Axiom) -> list[tuple[int, int, str]]:
    """A shortest cycle that breaks ``axiom``: its edges (from, to, the part it comes from); for an
    ``empty`` axiom, the pairs it relates."""
    if axiom.check == "empty":
        return [(a, b, name) for name, r in axiom.parts for a, b in rel.pairs(r)]
    if axiom.check == "acyclic":
        union = axiom.relation()
        best = None
        for start in range(len(union)):
            path = _shortest_path(union, start, start)
            if path is not None and (best is None or len(path) < len(best)):
                best = path
        if best is None:
            return []
        return [(a, b, next(name for name, r in axiom.parts if r[a] >> b & 1)) for a, b in zip(best, best[1:])]
    whole = axiom.relation()
    for x, row in enumerate(whole):
        if row >> x & 1:
            return _through(axiom.parts, x)
    return []


def _shortest_path(r, src: int, dst: int) -> Optional[list[int]]:
    """Events of a shortest path of at least one edge from src to dst (breadth first)."""
    parent: dict[int, int] = {}
    frontier = [src]
    seen = 0
    while frontier:
        nxt = []
        for a in frontier:
            for b in rel.bits(r[a]):
                if b == dst:
                    path = [b, a]
                    while a != src:
                        a = parent[a]
                        path.append(a)
                    return path[::-1]
                if not seen >> b & 1:
                    seen |= 1 << b
                    parent[b] = a
                    nxt.append(b)
        frontier = nxt
    return None


def _through(parts, x: int) -> list[tuple[int, int, str]]:
    """Edges x -p1-> y1 -p2-> ... -pk-> x for a sequence that relates x to itself."""
    layers = [1 << x]
    for _, r in parts:
        reach = 0
        for a in rel.bits(layers[-1]):
            reach |= r[a]
        layers.append(reach)
    edges = []
    here = x
    for k in range(len(parts), 0, -1):
        name, r = parts[k - 1]
        there = next(a for a in rel.bits(layers[k - 1]) if r[a] >> here & 1)
        edges.append((there, here, name))
        here = there
    return edges[::-1]
