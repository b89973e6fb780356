"""Symmetry reduction: interchangeable units (a CPU with all its contexts and per-CPU data) stored
once per orbit.

A model says which units are interchangeable (``Model.symmetric_units``), how to rename them in a
state (``Model.permute``) and, per unit, a key that renaming leaves alone (``Model.unit_keys``).
The representative of a state's orbit is the permuted state with the smallest byte encoding among
those whose units stand in key order (only units with equal keys are tried in every order), so the
choice never depends on ``hash()``.  Every state of an orbit has the same representative: the
states in key order are the same set whichever member of the orbit one starts from.
"""

from __future__ import annotations

from itertools import groupby, permutations, product
from typing import Callable

from .model import Model, State


class Symmetry:
    def __init__(self, model: Model, initial: State, encode: Callable[[State], bytes]):
        self.model = model
        self.encode = encode
        self.classes = tuple(c for c in model.symmetric_units(initial) if len(c) > 1)
        self.units = model.unit_count(initial)
        self.identity = tuple(range(self.units))
        self._perms: dict = {}  # unit keys -> the renamings that put them in order

    def __bool__(self) -> bool:
        return bool(self.classes)

    def perms(self, state: State) -> list:
        """Every renaming (new unit of each old unit) that puts each class in key order."""
        keys = self.model.unit_keys(state)
        out = self._perms.get(keys)
        if out is None:
            out = self._perms[keys] = list(self._ordering(keys))
        return out

    def _ordering(self, keys: tuple):
        per_class = []
        for cls in self.classes:
            slots = sorted(cls)
            runs = [list(g) for _, g in groupby(sorted(cls, key=keys.__getitem__), key=keys.__getitem__)]
            orders = [sum(choice, []) for choice in product(*(map(list, permutations(r)) for r in runs))]
            per_class.append([dict(zip(order, slots)) for order in orders])
        for choice in product(*per_class):
            perm = list(range(self.units))
            for mapping in choice:
                for old, new in mapping.items():
                    perm[old] = new
            yield tuple(perm)

    def canon(self, state: State) -> bytes:
        """The encoding of the orbit's representative."""
        identity, encode, permute = self.identity, self.encode, self.model.permute
        return min(encode(state if p == identity else permute(state, p)) for p in self.perms(state))

    def orbit(self, state: State) -> set:
        """Every state a renaming of the classes' units makes of ``state`` (for tests and counts)."""
        out = set()
        for choice in product(*(permutations(c) for c in self.classes)):
            perm = list(range(self.units))
            for cls, image in zip(self.classes, choice):
                for old, new in zip(cls, image):
                    perm[old] = new
            out.add(self.model.permute(state, tuple(perm)))
        return out
