"""Symmetry reduction: interchangeable units (a CPU with all its contexts and per-CPU data) stored
once per orbit.

A model says which units are interchangeable (``Reductions.symmetric_units``), how a renaming changes
each field of a state (``Reductions.renaming``) and, per unit, a key that renaming leaves alone
(``Reductions.unit_keys``).
The representative of a state's orbit is the permuted state with the smallest byte encoding among
those whose units stand in key order (only units with equal keys are tried in every order), so the
choice never depends on ``hash()``.  Every state of an orbit has the same representative: the
states in key order are the same set whichever member of the orbit one starts from.

The encoding of a renamed state is computed on the codec's component indices: a component (a
context's record, an MCS node, the fields kept whole) is renamed once per renaming and interned,
and from then on its renamed index is looked up, so a state is never rebuilt to be renamed.
"""

from __future__ import annotations

from itertools import groupby, permutations, product
from .codec import Codec
from . import reductions
from .model import Model, State


class Symmetry:
    def __init__(self, model: Model, initial: State, codec: Codec):
        self.model = model
        self.declared = reductions.of(model)  # the symmetry it declares, if any
        self.codec = codec
        self.classes = tuple(c for c in self.declared.symmetric_units(initial) if len(c) > 1)
        self.units = self.declared.unit_count(initial)
        self.identity = tuple(range(self.units))
        self._perms: dict = {}  # unit keys -> the renamings that put them in order
        self._plans: dict = {}  # (renaming, shape) -> rename(component indices)

    def __bool__(self) -> bool:
        return bool(self.classes)

    def perms(self, state: State) -> list:
        """Every renaming (new unit of each old unit) that puts each class in key order."""
        keys = self.declared.unit_keys(state)
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
        return self.canon_of(state, self.codec.indices(state))

    def canon_of(self, state: State, ints: list) -> bytes:
        """``canon(state)``, given the state's component indices ``ints`` (what the search keeps)."""
        perms = self.perms(state)
        if len(perms) == 1:  # the common case: the units' keys all differ, one renaming orders them
            p = perms[0]
            if p == self.identity:
                return self.codec.pack(ints)
            return self.codec.pack(self._rename(state, p, ints))
        return min(self._renamed(state, perms, ints))

    def _renamed(self, state: State, perms, ints: list) -> list:
        """The encodings of ``state`` (component indices ``ints``) renamed by each of ``perms``."""
        pack, identity = self.codec.pack, self.identity
        return [pack(ints if p == identity else self._rename(state, p, ints)) for p in perms]

    def _rename(self, state: State, perm: tuple, ints: list) -> list:
        shape = self._shape(ints)
        rename = self._plans.get((perm, shape))
        if rename is None:
            rename = self._plans[perm, shape] = self._plan(state, perm, shape)
        return rename(ints)

    def _shape(self, ints: list) -> tuple:
        """How many components each tuple field of the state encoded as ``ints`` has."""
        out = []
        k = 0
        for _ in self.codec.split:
            n = ints[k]
            out.append(n)
            k += 1 + n
        return tuple(out)

    def _plan(self, state: State, perm: tuple, shape: tuple):
        """``rename(ints)``: the component indices of the renamed state whose indices are ``ints``, as
        straight-line code for states of this shape; each component is renamed and interned the first
        time it is met (``_Renamed``), then looked up."""
        codec, how = self.codec, self.declared.renaming(state, perm)
        env, items = {}, []
        k = 0
        for j, (f, n) in enumerate(zip(codec.split, shape)):
            r = how[f]
            if r is not None and r.whole is not None:
                raise ValueError(f"{self.model.name} renames the tuple field {state._fields[f]} whole")
            env[f"t{j}"] = _Renamed(codec.tables[j], r and r.element)
            positions = r.positions if r is not None and r.positions is not None else range(n)
            source = [0] * n  # new position -> old position
            for old in range(n):
                source[positions[old]] = old
            items += [str(n)] + [f"t{j}[ints[{k + 1 + old}]]" for old in source]
            k += 1 + n
        rest = [how[f] for f in codec.rest]
        env["rest"] = _Renamed(codec.tables[-1], lambda fields: tuple(
            v if r is None else r.apply(v) for v, r in zip(fields, rest)))
        items.append(f"rest[ints[{k}]]")
        exec(f"def rename(ints):\n    return [{', '.join(items)}]\n", env)  # noqa: S102 -- built from the plan above
        return env["rename"]

    def orbit(self, state: State) -> set:
        """The encodings of every state a renaming of the classes' units makes of ``state`` (for tests
        and counts)."""
        perms = []
        for choice in product(*(permutations(c) for c in self.classes)):
            perm = list(range(self.units))
            for cls, image in zip(self.classes, choice):
                for old, new in zip(cls, image):
                    perm[old] = new
            perms.append(tuple(perm))
        return set(self._renamed(state, perms, self.codec.indices(state)))


class _Renamed(dict):
    """Old component index -> the index of the renamed component, each computed when first asked."""

    def __init__(self, table, rename):
        super().__init__()
        self.table, self.rename = table, rename

    def __missing__(self, i):
        value = self.table.by_index[i]
        out = self[i] = self.table[value if self.rename is None else self.rename(value)]
        return out
