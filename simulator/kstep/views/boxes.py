"""Boxes: the rows a state board draws, in the standard library only.

A mechanism's board is a few per-frame sources of ``Box`` rows (threads, VMAs, callbacks), each
a function of the state, and of other rows (a lock word's bits, its last transitions) that need
the run so far.  The functions live in standard-library modules (this one, and each mechanism's
module in ``boards/``), so that the page's interactive mode computes the same rows in the browser, in
Pyodide's core runtime, for the student's own run; board.py draws them with Bokeh.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping, NamedTuple, Optional, Sequence

from . import style

COLUMNS = {"x": float, "y": float, "w": float, "h": float, "fill": str, "line": str, "width": float,
           "head": str, "body": str}
LEFT = 1.9  # x where the boxes start; row titles sit left of it
RIGHT = 12.0


class Box(NamedTuple):
    x: float  # centre
    y: float
    w: float
    h: float
    fill: str
    head: str  # bold first line
    body: str = ""  # further lines, "\n"-separated
    line: str = style.INK  # outline colour: a second fact about the box (a pending quiescent state)
    width: float = 1.0  # outline width in pixels


class BoardSource(NamedTuple):
    """One per-frame source of a board: ``rows(state)`` gives its columns, ``key(state)`` the part of
    the state they depend on.  ``columns`` None: Box rows (``COLUMNS``), drawn with a change halo.

    ``over(trace)``, when given, makes the frames of a run something other than its states (a word
    before and after the step, the transitions so far, a chart's page): it gives one value per frame,
    and ``rows`` and ``key`` take those values."""

    name: str
    rows: Callable[[Any], Mapping[str, Sequence]]
    key: Callable[[Any], Hashable]
    columns: Optional[Mapping[str, type]] = None
    over: Optional[Callable[[Any], Sequence]] = None


def frames(src: BoardSource, trace, memo: Optional[dict] = None) -> tuple[Sequence, Callable, Callable, dict]:
    """The frames of ``src`` over a run (a Trace): one value per frame, the rows function that takes a value (each
    key's rows laid out once, in ``memo``: a Session keeps one over the steps of a student's run), the
    key function, and the columns.  Box rows (``columns`` None) get their change halo here: each frame
    is (the state before, the state after)."""
    memo = {} if memo is None else memo

    def once(key, rows):
        def laid_out(value):
            k = key(value)
            out = memo.get(k)
            if out is None:
                out = memo[k] = rows(value)
            return out
        return laid_out

    if src.columns is not None:
        values = trace.states if src.over is None else src.over(trace)
        return values, once(src.key, src.rows), src.key, dict(src.columns)
    boxes = once(src.key, src.rows)

    def pair_key(p):
        return "halo", None if p[0] is None else src.key(p[0]), src.key(p[1])

    states = trace.states
    pairs = [(None, states[0]), *zip(states, states[1:])]
    halo = once(pair_key, lambda p: with_changes(None if p[0] is None else boxes(p[0]), boxes(p[1])))
    return pairs, halo, pair_key, {**COLUMNS, "changed": int}


def columns(boxes: Sequence[Box]) -> dict[str, list]:
    return {c: [getattr(b, c) for b in boxes] for c in COLUMNS}


def in_a_row(count: int, *, y: float, h: float = 0.8, left: float = LEFT, right: float = RIGHT,
             max_w: float = 2.0, gap: float = 0.12) -> list[tuple[float, float, float, float]]:
    """(x, y, w, h) of ``count`` boxes side by side between ``left`` and ``right``."""
    if count == 0:
        return []
    w = min(max_w, (right - left) / count - gap)
    return [(left + gap / 2 + w / 2 + j * (w + gap), y, w, h) for j in range(count)]


def with_changes(before: Optional[Mapping[str, Sequence]], after: Mapping[str, Sequence]) -> dict[str, list]:
    """Box rows ``after`` with ``changed``: 1 for each box that is not exactly as it was in ``before``
    (None: the initial frame, where nothing changed)."""
    cols = dict(after)
    now = list(zip(*(cols[c] for c in COLUMNS)))
    old = None if before is None else set(zip(*(before[c] for c in COLUMNS)))
    cols["changed"] = [0 if old is None or box in old else 1 for box in now]
    return cols
