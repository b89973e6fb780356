"""Search reductions: what a model may declare so that ``explore`` stores and expands fewer states.

They are an optional protocol beside the semantics (``model.Model``): footprints for partial-order
reduction (por.py), dead locals for the dead-variable reduction (explore.py), interchangeable units
for symmetry reduction (symmetry.py).  A model opts in by inheriting ``Reductions`` and overriding
what it declares; the search asks ``of(model)`` and gets the defaults, which reduce nothing, from a
model that declares none.  No reduction ever changes a verdict, only how many states reach it.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple, Optional

from .model import Action, State


class Footprint(NamedTuple):
    """What one step reads and writes, as locations: ``(field,)`` is a whole field of the state,
    ``(field, k)`` element k of a tuple field (``("threads", i)``: thread i's record, ``("words", 0)``).
    Fields no step ever writes (constants of the run) need not be named."""

    reads: frozenset
    writes: frozenset
    own: Optional[tuple] = None  # the stepping context's own record, ("threads", i), if it has one

    def conflicts(self, other: "Footprint") -> bool:
        """True when one step writes what the other reads or writes (so the two may not commute)."""
        return (overlap(self.writes, other.reads | other.writes)
                or overlap(other.writes, self.reads))


def overlap(xs: frozenset, ys: frozenset) -> bool:
    """Do two sets of locations share one (a whole field overlaps each of its elements)?"""
    if not xs.isdisjoint(ys):  # the common case, decided without building the set of fields
        return True
    fields = {y[0] for y in ys}
    return any(x in ys or (x[0],) in ys or (len(x) == 1 and x[0] in fields) for x in xs)


def changed(s: State, t: State) -> set[tuple]:
    """The locations in which state ``t`` differs from ``s`` (tuple fields element by element)."""
    out: set[tuple] = set()
    for name, a, b in zip(s._fields, s, t):
        if a == b:
            continue
        if type(a) is tuple and type(b) is tuple and len(a) == len(b):
            out.update((name, k) for k, (x, y) in enumerate(zip(a, b)) if x != y)
        else:
            out.add((name,))
    return out


def covers(locations: frozenset, loc: tuple) -> bool:
    return loc in locations or (loc[0],) in locations


class Reductions:
    """The reductions a model declares; these defaults declare none (a search then explores in full)."""

    locals: Mapping[str, Any] = {}  # local variables whose value ``forget`` may reset where it is dead, with that value

    def footprint(self, state: State, action: Action) -> Optional[Footprint]:
        """What ``action`` reads and writes in ``state`` (its guard included); None: it may touch
        anything (every reduction then treats it as depending on every other step)."""
        return None

    def future_footprint(self, state: State, actor: str) -> Optional[Footprint]:
        """Everything ``actor`` may read and write from ``state`` on, over every step it may still
        take (an actor that has finished: nothing); None: anything."""
        return None

    def forget(self, state: State) -> State:
        """The state with the values no step will read again (dead locals) reset, so that the explorer
        may store one state for all that differ only there; the state itself when the model declares
        none."""
        return state

    def symmetric_units(self, state: State) -> tuple:
        """Classes of interchangeable units (numbered 0 .. unit_count - 1) of the run that starts in
        ``state``: renaming units within a class maps every run to a run and keeps every
        invariant's verdict.  Empty: no symmetry."""
        return ()

    def unit_count(self, state: State) -> int:
        return 0

    def unit_keys(self, state: State) -> tuple:
        """Per unit, a comparable key that renaming units leaves unchanged."""
        return ()

    def renaming(self, state: State, perm: tuple) -> tuple:
        """How renaming unit k perm[k] changes each field of ``state``: per field, None (unchanged)
        or a ``Renamed``."""
        raise NotImplementedError(f"{type(self).__name__} declares no symmetry")

    def permute(self, state: State, perm: tuple) -> State:
        """The state with unit k renamed perm[k] everywhere it is named."""
        fields = [value if how is None else how.apply(value) for value, how in zip(state, self.renaming(state, perm))]
        return tuple.__new__(type(state), fields)


NONE = Reductions()


def of(model: Any) -> Reductions:
    """What ``model`` declares for the search to reduce by: the model itself when it opts in, else nothing."""
    return model if isinstance(model, Reductions) else NONE


class Renamed(NamedTuple):
    """How a renaming of units changes one state field.  A tuple field: ``element`` renames each
    element (None: unchanged) and ``positions[k]`` is where element k goes (None: where it was).
    Any other field: ``whole`` renames it.  The explorer renames a tuple field element by element,
    each element once per renaming, so ``element`` must depend on the element alone."""

    positions: Optional[tuple] = None
    element: Optional[Callable[[Any], Any]] = None
    whole: Optional[Callable[[Any], Any]] = None

    def apply(self, value: Any) -> Any:
        if self.whole is not None:
            return self.whole(value)
        items = value if self.element is None else map(self.element, value)
        if self.positions is None:
            return tuple(items)
        out = [None] * len(value)
        for k, x in zip(self.positions, items):
            out[k] = x
        return tuple(out)
