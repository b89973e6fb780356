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
        self.encode, self.indices = self._compile()  # indices: the component indices, not packed

    def _compile(self):
        """``encode`` and ``indices`` as straight-line code for this state type (the explorer calls them
        per step)."""
        env = {f"g{j}": t.__getitem__ for j, t in enumerate(self.tables)}
        env.update(WIDE=WIDE, array=array, tuple=tuple, type=type, TypeError=TypeError)
        get = "s" if self.type else "(s,)"
        fields = ", ".join(f"f[{k}]" for k in self.rest) + ("," if len(self.rest) == 1 else "")
        parts = [f"len(f[{k}]), *map(g{j}, f[{k}])" for j, k in enumerate(self.split)]
        parts.append(f"g{len(self.split)}(({fields}))")
        checks = " and ".join(f"type(f[{k}]) is tuple" for k in self.split) or "True"
        body = (f"    f = {get}\n"
                f"    if not ({checks}):\n"
                f"        raise TypeError('a state field that held a tuple of tuples now holds something else')\n"
                f"    out = [{', '.join(parts)}]\n")
        src = (f"def indices(s):\n{body}    return out\n"
               f"def encode(s):\n{body}"
               f"    if max(out) < WIDE:\n"
               f"        return bytes(out)\n"
               f"    return bytes((WIDE,)) + array('I', out).tobytes()\n")
        exec(src, env)  # noqa: S102 -- generated from the field layout above, no outside input
        return env["encode"], env["indices"]

    @staticmethod
    def pack(ints: list) -> bytes:
        """The encoding whose component indices are ``ints`` (what ``encode`` returns for them)."""
        if max(ints) < WIDE:
            return bytes(ints)
        return bytes((WIDE,)) + array("I", ints).tobytes()

    def decode(self, code: bytes) -> Any:
        ints = array("I", code[1:]) if code[0] == WIDE else code
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
