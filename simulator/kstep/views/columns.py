"""Frame-indexed columns: how a view ships the rows of every frame to the browser.

A per-frame source has the same columns in every frame but any number of rows.  Frames that show
the same rows share one *block* (a run of 50,000 steps revisits the same few states again and
again), and all blocks are stored once, concatenated, in a *store* of small-int arrays:

    store[col][start[k]:stop[k]]  are the rows of frame k

``start``/``stop`` hold one int32 per frame.  String columns are stored as indices into one
string table shared by every source of a player, so the browser receives numbers only; the
player (player.js) turns the indices back into strings when it slices a frame.

``decode`` is the reference reader of this format: the initial data of every display source and
the tests use it, and player.js must slice exactly as it does.

The module imports only the standard library (its arrays are ``array.array``): the page's
interactive mode builds the same columns in the browser, in Pyodide's core runtime, which has no
numpy.  The Bokeh side hands the arrays to numpy as they are (buffer protocol, same dtype).
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Any, Callable, Hashable, Mapping, Sequence

NUM, STR = "num", "str"
KINDS = {int: NUM, float: NUM, str: STR}


class Strings:
    """One string table for a whole player: each distinct string is sent once."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def index(self, s: str) -> int:
        ix = self._index.get(s)
        if ix is None:
            ix = self._index[s] = len(self.table)
            self.table.append(s)
        return ix


class FrameColumns:
    """The rows of one per-frame source, for every frame, deduplicated into blocks.

    ``columns`` maps column name to ``int``, ``float`` or ``str``; ``rows(state)`` returns a dict
    of equally long lists, one per column; ``key(state)`` (default: the state) is a hashable part
    of the state that determines the rows, so repeated states are not laid out again.
    """

    def __init__(self, name: str, columns: Mapping[str, type], rows: Callable[[Any], Mapping[str, Sequence]],
                 strings: Strings, key: Callable[[Any], Hashable] | None = None) -> None:
        unknown = {c: t for c, t in columns.items() if t not in KINDS}
        if unknown:
            raise TypeError(f"source {name}: column types must be int, float or str, not {unknown}")
        self.name = name
        self.kinds = {c: KINDS[t] for c, t in columns.items()}
        self.rows = rows
        self.key = key or (lambda state: state)
        self.strings = strings
        self._by_key: dict = {}
        self._by_rows: dict = {}
        self._blocks: list[tuple] = []  # per block: one tuple per column
        self._frame_block: list[int] = []
        self._keys: list = []  # each frame's key
        # The store's columns as blocks are added (strings as their indices), and per number column
        # whether every value so far is whole (in int32), and exact as a float32: numbers are stored as
        # small ints when they are whole, else float32 when exact, else float64.
        self._flat: dict[str, list] = {c: [] for c in self.kinds}
        self._whole = dict.fromkeys(self.kinds, True)
        self._f32 = dict.fromkeys(self.kinds, True)
        self._store: tuple[int, dict] = (-1, {})  # the store as last exported, and of how many blocks

    def __len__(self) -> int:
        """Frames laid out so far."""
        return len(self._frame_block)

    def truncate(self, frames: int) -> None:
        """Keep the first ``frames`` frames (a run stepped back): their blocks stay in the store."""
        del self._frame_block[frames:], self._keys[frames:]

    def add(self, state: Any) -> None:
        """Lay out the next frame."""
        self._add(state, self.key(state))

    def _add(self, state: Any, k: Hashable) -> None:
        block = self._by_key.get(k)
        if block is None:
            block = self._by_key[k] = self._block_of(self.rows(state))
        self._frame_block.append(block)
        self._keys.append(k)

    def lay_out(self, values: Sequence) -> None:
        """Make the frames those of ``values``: the frames laid out before with the same key stay, the
        rest are laid out anew (a run that grew by a step, or branched, lays out only what changed)."""
        keys = [self.key(v) for v in values]
        same, most = 0, min(len(keys), len(self._keys))
        while same < most and (keys[same] is self._keys[same] or keys[same] == self._keys[same]):
            same += 1
        self.truncate(same)
        for value, k in zip(values[same:], keys[same:]):
            self._add(value, k)

    def _block_of(self, data: Mapping[str, Sequence]) -> int:
        if set(data) != set(self.kinds):
            raise ValueError(f"source {self.name}: rows have columns {sorted(data)}, declared {sorted(self.kinds)}")
        cols = tuple(tuple(data[c]) for c in self.kinds)
        if len({len(c) for c in cols}) > 1:
            raise ValueError(f"source {self.name}: columns of one frame differ in length")
        block = self._by_rows.get(cols)
        if block is None:
            block = self._by_rows[cols] = len(self._blocks)
            self._blocks.append(cols)
            for (col, kind), values in zip(self.kinds.items(), cols):
                if kind == STR:
                    self._flat[col] += [self.strings.index(v) for v in values]
                    continue
                self._flat[col] += values
                if self._whole[col] and not all(float(v).is_integer() and abs(v) < 2**31 for v in values):
                    self._whole[col] = False
                if self._f32[col] and list(array("f", values)) != [float(v) for v in values]:
                    self._f32[col] = False
        return block

    def export(self) -> dict:
        """The store (column -> array of all blocks), and start/stop per frame."""
        offsets = [0, *accumulate(len(b[0]) if b else 0 for b in self._blocks)]
        if self._store[0] != len(self._blocks):  # a run laid out a frame at a time adds few blocks
            store = {}
            for col, kind in self.kinds.items():
                values, was = self._flat[col], self._store[1].get(col)
                if kind == STR or self._whole[col]:
                    store[col] = grown(was, values, lambda part, kind=kind: part if kind == STR else [int(v) for v in part])
                else:
                    code = "f" if self._f32[col] else "d"
                    store[col] = array(code, values) if was is None or was.typecode != code else \
                        was + array(code, values[len(was):])
            self._store = (len(self._blocks), store)
        store = self._store[1]
        return {
            "kinds": dict(self.kinds),
            "store": store,
            "start": array("i", [offsets[b] for b in self._frame_block]),
            "stop": array("i", [offsets[b + 1] for b in self._frame_block]),
        }


def decode(export: Mapping, strings: Sequence[str], k: int) -> dict[str, list]:
    """The rows of frame ``k``: the reference for what player.js does in the browser."""
    a, b = int(export["start"][k]), int(export["stop"][k])
    out = {}
    for col, kind in export["kinds"].items():
        part = export["store"][col][a:b]
        out[col] = [strings[i] for i in part] if kind == STR else part.tolist()
    return out


INT_TYPES = (("b", 1 << 7), ("h", 1 << 15), ("i", 1 << 31))  # int8, int16, int32: what BokehJS has


def grown(was: array | None, values: Sequence, ints: Callable[[Sequence], list[int]]) -> array:
    """``ints(values)`` as ``smallest_int`` stores them, given ``was``, the array of a first part of them
    (a store that grew by a few blocks): only the new values are converted, unless they need a wider type."""
    if was is None or was.typecode not in dict(INT_TYPES):
        return smallest_int(ints(values))
    new = ints(values[len(was):])
    top = dict(INT_TYPES)[was.typecode]
    if not new or (-top <= min(new) and max(new) < top):
        return was + array(was.typecode, new)
    return smallest_int(ints(values))


def smallest_int(values: Sequence[int]) -> array:
    """Integers in the smallest signed type that holds them (BokehJS has no 64-bit ints)."""
    lo, hi = (min(values), max(values)) if values else (0, 0)
    for code, top in INT_TYPES:
        if -top <= lo and hi < top:
            return array(code, values)
    raise ValueError(f"integer column out of int32 range ({lo}..{hi})")
