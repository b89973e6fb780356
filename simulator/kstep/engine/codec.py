"""A compact, canonical byte encoding of states for the explorer's visited set.

The encoding is SPIN's "collapse compression".  A state field holding a plain tuple of tuples (the
threads, the MCS nodes, the VMAs) has each element interned in a table of its own, the way SPIN
stores each process's local state once; all the other fields together form one more component,
interned whole.  A state is then the short string of its components' table indices.  Reachable
states share almost all their components, so a visited set of encodings costs a fraction of one of
full states, and rebuilding a state (``decode``) is a few list look-ups.

An index, once given to a component, never changes, so within one ``Codec`` equal states have equal
encodings and different states different ones: the encoding is canonical for that visited set, and
it never depends on ``hash()`` order (which varies from run to run for strings).
"""

from __future__ import annotations

from array import array
from typing import Any

WIDE = 255  # first byte of an encoding with an index >= 255 (narrow encodings never contain 255)


class Table(dict):
    """Component -> index, giving the next index to a component seen for the first time."""

    def __init__(self) -> None:
        super().__init__()
        self.by_index: list = []  # index -> component

    def __missing__(self, key):
        i = self[key] = len(self.by_index)
        self.by_index.append(key)
        return i


def _split(value: Any) -> bool:
    return type(value) is tuple and all(isinstance(v, tuple) for v in value)


class Codec:
    """Encode and decode the states of one exploration: tuples (NamedTuples) of one type with the
    same fields split, or any other hashable value, interned whole."""

    def __init__(self, example: Any):
        self.type = type(example) if isinstance(example, tuple) else None
        fields = example if self.type else (example,)
        self.split = tuple(k for k, v in enumerate(fields) if _split(v))
        self.rest = tuple(k for k in range(len(fields)) if k not in self.split)
        self.tables = [Table() for _ in self.split] + [Table()]
        self.encode, self.indices, self.indices_after = self._compile()  # indices: not packed

    def _compile(self):
        """``encode``, ``indices`` and ``indices_after`` as straight-line code for this state type (the
        explorer calls them per step)."""
        env = {f"g{j}": t.__getitem__ for j, t in enumerate(self.tables)}
        env.update(WIDE=WIDE, array=array, tuple=tuple, type=type, zip=zip, len=len, TypeError=TypeError)
        get = "s" if self.type else "(s,)"
        fields = ", ".join(f"f[{k}]" for k in self.rest) + ("," if len(self.rest) == 1 else "")
        parts = [f"len(f[{k}]), *map(g{j}, f[{k}])" for j, k in enumerate(self.split)]
        parts.append(f"g{len(self.split)}(({fields}))")
        checks = " and ".join(f"type(f[{k}]) is tuple" for k in self.split) or "True"
        changed = "raise TypeError('a state field that held a tuple of tuples now holds something else')"
        body = (f"    f = {get}\n"
                f"    if not ({checks}):\n"
                f"        {changed}\n"
                f"    out = [{', '.join(parts)}]\n")
        # indices_after: a component that is the very object it was in the state before (whose indices
        # are ``pi``) keeps its index, with neither a hash nor an equality test of it; a step replaces a
        # record or two and shares every other one with the state it stepped from.
        after = [f"    f, q, o = {get}, {'p' if self.type else '(p,)'}, 0\n    out = []\n"]
        for j, k in enumerate(self.split):
            after.append(
                f"    a, b = f[{k}], q[{k}]\n    n = len(b)\n"
                f"    if a is b:\n        out += pi[o:o + 1 + n]\n"
                f"    elif type(a) is not tuple:\n        {changed}\n"
                f"    elif len(a) == n:\n        out.append(n)\n        k = o + 1\n"
                f"        for y, z in zip(a, b):\n            out.append(pi[k] if y is z else g{j}(y))\n"
                f"            k += 1\n"
                f"    else:\n        out.append(len(a))\n        out += map(g{j}, a)\n"
                f"    o += 1 + n\n")
        same = " and ".join(f"f[{k}] is q[{k}]" for k in self.rest) or "True"
        after.append(f"    out.append(pi[o] if {same} else g{len(self.split)}(({fields})))\n    return out\n")
        src = (f"def indices(s):\n{body}    return out\n"
               f"def encode(s):\n{body}"
               f"    if max(out) < WIDE:\n"
               f"        return bytes(out)\n"
               f"    return bytes((WIDE,)) + array('I', out).tobytes()\n"
               f"def indices_after(s, p, pi):\n{''.join(after)}")
        exec(src, env)  # noqa: S102 -- generated from the field layout above, no outside input
        return env["encode"], env["indices"], env["indices_after"]

    @staticmethod
    def unpack(code: bytes) -> Any:
        """The component indices an encoding holds (what ``indices`` gave for it), as a sequence of ints."""
        return array("I", code[1:]) if code[0] == WIDE else code

    @staticmethod
    def pack(ints: list) -> bytes:
        """The encoding whose component indices are ``ints`` (what ``encode`` returns for them)."""
        if max(ints) < WIDE:
            return bytes(ints)
        return bytes((WIDE,)) + array("I", ints).tobytes()

    def decode(self, code: bytes) -> Any:
        ints = self.unpack(code)
        fields: list = [None] * (len(self.split) + len(self.rest))
        k = 0
        for j, f in enumerate(self.split):
            n = ints[k]
            values = self.tables[j].by_index
            fields[f] = tuple([values[i] for i in ints[k + 1:k + 1 + n]])
            k += 1 + n
        for f, value in zip(self.rest, self.tables[-1].by_index[ints[k]]):
            fields[f] = value
        if self.type is None:
            return fields[0]
        return tuple.__new__(self.type, fields)

    def components(self) -> int:
        """How many distinct components the tables hold."""
        return sum(len(t.by_index) for t in self.tables)
