"""The charts over a run (timelines, counters, a count over the steps), in the standard library only.

A chart shows the run so far: a mechanism declares each of its sources here as a ``BoardSource``
whose frames come from the trace (``over``), so that the player draws the recorded run's charts and
the page's interactive mode, in Pyodide's core runtime, draws the same charts of a student's own
run.  timeline.py, counters.py and the mechanisms' views draw them with Bokeh.

Timeline rows span steps: frame k's state occupies x in [k, k + 1), and the action that led to
frame k sits at x = k + 0.5.  Lanes are numbered 0, 1, 2, ... from the top and drawn at y = -lane.
A timeline shows one page of ``window`` steps at a time: each frame gets the rows that reach into
its page, so painting a frame costs the same at step 50,000 as at step 5.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Callable, Mapping, Optional, Sequence

from .boxes import BoardSource

WINDOW = 80  # steps a timeline shows at once: each stays wide enough to see on a projector
BARS = {"left": int, "right": int, "y": float, "phase": int}
MARKS = {"x": float, "y": float}
LABELS = {"x": float, "y": float, "text": str}


class Rows:
    """The rows of one page of a timeline, hashed once: the frames on that page share the object, and
    a run's frames are keyed by it (boxes.frames)."""

    __slots__ = ("columns", "_cols", "_hash")

    def __init__(self, columns: Mapping[str, list]) -> None:
        self.columns = dict(columns)
        self._cols = tuple(tuple(v) for v in self.columns.values())
        self._hash = hash(self._cols)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: Any) -> bool:
        return self is other or (isinstance(other, Rows) and self._hash == other._hash and self._cols == other._cols)


def page(k: int, total: int, window: int = WINDOW) -> tuple[int, int]:
    """The x range a timeline shows at frame k of ``total`` frames; player.js's page() computes the same.

    Pages step by half a window, and frame k sits between a quarter and three quarters of the way
    along, so the cursor never hides at an edge."""
    if total <= window:
        return 0, total
    stride = window // 2
    start = min(max(0, (k // stride) * stride - window // 4), total - window)
    return start, start + window


def windowed(name: str, columns: Mapping[str, type], data: Callable[[Any], Mapping[str, Sequence]], x0: str,
             x1: str, window: int = WINDOW) -> BoardSource:
    """Rows of a whole run (``data(trace)``, spanning ``x0``..``x1`` in steps), each frame showing the
    rows that reach into its page."""

    def over(trace) -> list[Rows]:
        rows = data(trace)
        lo, hi = rows[x0], rows[x1]
        total = len(trace.states)
        starts = [page(k, total, window)[0] for k in range(total)]
        # One sweep over the pages in order: a row joins once a page reaches its start, and leaves for
        # good once the pages have passed its end (a 50,000-step run has some 1,250 pages).
        order = sorted(range(len(lo)), key=lo.__getitem__)
        ending: list[tuple] = []  # (end, row) of the rows in the sweep, soonest end first
        inside: set[int] = set()
        pages: dict[int, Rows] = {}
        j = 0
        for start in sorted(set(starts)):
            while j < len(order) and lo[order[j]] <= start + window + 1:
                heappush(ending, (hi[order[j]], order[j]))
                inside.add(order[j])
                j += 1
            while ending and ending[0][0] < start - 1:
                inside.discard(heappop(ending)[1])
            keep = sorted(inside)
            pages[start] = Rows({c: [v[i] for i in keep] for c, v in rows.items()})
        return [pages[start] for start in starts]

    return BoardSource(name, lambda r: r.columns, lambda r: r, dict(columns), over)


def whole_run(name: str, columns: Mapping[str, type], data: Callable[[Any], Mapping[str, Sequence]]
              ) -> BoardSource:
    """Rows of a whole run that every frame shows at once (a chart with its own x range, over which the
    player's curtain hides the steps to come)."""

    def over(trace) -> list[Rows]:
        rows = Rows(data(trace))
        return [rows] * len(trace.states)

    return BoardSource(name, lambda r: r.columns, lambda r: r, dict(columns), over)


def runs(values: Sequence) -> list[tuple[int, int, Any]]:
    """Maximal runs of equal values: (start index, stop index, value) of each run."""
    out = []
    start = 0
    for k in range(1, len(values) + 1):
        if k == len(values) or values[k] != values[start]:
            out.append((start, k, values[start]))
            start = k
    return out


def bar_rows(table: Sequence[Sequence[int]], *, first_lane: int = 0, dy: float = 0.0,
             skip: Sequence[int] = ()) -> dict[str, list]:
    """Bars of a per-frame phase for lanes ``first_lane``, ...: ``table[k][j]`` is lane j's phase at
    frame k.  Phases in ``skip`` are not drawn (an idle CPU needs no bar); ``dy`` moves the bars down
    within their lane (a thin RCU bar under a thread's main bar)."""
    out: dict[str, list] = {c: [] for c in BARS}
    for j in range(len(table[0]) if table else 0):
        for start, stop, phase in runs([row[j] for row in table]):
            if phase not in skip:
                out["left"].append(start)
                out["right"].append(stop)
                out["y"].append(-(first_lane + j) - dy)
                out["phase"].append(phase)
    return out


def per_state(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``f`` computed once per state object: a chart over a student's run redraws every step, but only
    its new state is new."""
    memo: dict[int, tuple] = {}

    def once(state):
        hit = memo.get(id(state))
        if hit is None or hit[0] is not state:
            hit = memo[id(state)] = (state, f(state))
        return hit[1]

    return once


def phase_bars(name: str, row: Callable[[Any], Sequence[int]], *, first_lane: int = 0, dy: float = 0.0,
               skip: Sequence[int] = (), window: int = WINDOW) -> BoardSource:
    """Lanes of bars: ``row(state)`` gives each lane's phase in a state."""
    row = per_state(row)
    return windowed(name, BARS, lambda trace: bar_rows([row(s) for s in trace.states], first_lane=first_lane,
                                                       dy=dy, skip=skip), "left", "right", window)


def interval_labels(name: str, active: Callable[[Any], Sequence[bool]], lane: int, label: Callable[[Any, int], str],
                    window: int = WINDOW) -> BoardSource:
    """Where each interval of a lane (``active(trace)``: a grace period running, mmap_lock write-held)
    starts, labelled ``label(trace, first frame)``."""

    def data(trace):
        held = active(trace)
        starts = [k for k in range(len(held)) if held[k] and (k == 0 or not held[k - 1])]
        return {"x": [k + 0.15 for k in starts], "y": [float(-lane)] * len(starts),
                "text": [label(trace, k) for k in starts]}

    return windowed(name, LABELS, data, "x", "x", window)


def marks(name: str, at: Callable[[Any], Sequence[tuple[int, int]]], *, dy: float = 0.38,
          window: int = WINDOW) -> BoardSource:
    """Point marks for (step, lane) pairs ``at(trace)``: who took each step, where a quiescent state
    was reported.  A mark sits in the middle of its step's column, so the curtain hides it whole
    until that step."""
    def data(trace):
        where = at(trace)
        return {"x": [k + 0.5 for k, _ in where], "y": [-lane + dy for _, lane in where]}

    return windowed(name, MARKS, data, "x", "x", window)


def actor_marks(name: str, lane_of: Mapping[str, int], window: int = WINDOW) -> list[BoardSource]:
    """A small triangle at step k in the lane of the actor that took step k (``lane_of``: each actor's
    lane; an actor without one gets no mark), and the step that broke the invariant, as a box of
    exactly its column, so that no edge of it shows before the curtain uncovers that step."""

    def taken(trace) -> list[tuple[int, int]]:
        return [(k, lane_of[a.actor]) for k, a in enumerate(trace.actions, start=1) if a.actor in lane_of]

    def broke(trace) -> dict[str, list]:
        v = trace.violation
        if v is None or v.invariant == "deadlock" or not 0 < v.step <= len(trace.actions):
            return {"x": [], "y": []}
        lane = lane_of.get(trace.actions[v.step - 1].actor)
        return {"x": [], "y": []} if lane is None else {"x": [v.step + 0.5], "y": [-float(lane)]}

    return [marks(f"{name}-actions", taken, window=window), whole_run(f"{name}-violation", MARKS, broke)]


def step_line(name: str, counts: Callable[[Any], Sequence[int]], window: int = WINDOW) -> BoardSource:
    """A count at every frame as a step line (x, y), its last value held one step further."""

    def data(trace):
        ys = list(counts(trace))
        return {"x": list(range(len(ys) + 1)), "y": ys + ys[-1:]}

    return windowed(name, {"x": int, "y": int}, data, "x", "x", window)


COUNTER_COLUMNS = {"y": int, "value": int, "text": str}


def counters(name: str, size: int, values: Callable[[Any], Sequence[Sequence[int]]]) -> BoardSource:
    """A bar per counter (``size`` of them), redrawn per frame: ``values(trace)[k][j]`` is counter j at
    frame k.  The bars are ink: each is named beside it, and a colour would give a counter a meaning it
    shares with a board."""
    ys = [-j for j in range(size)]

    def rows(counts):
        return {"y": ys, "value": list(counts), "text": [f" {c}" for c in counts]}

    return BoardSource(name, rows, lambda counts: counts, COUNTER_COLUMNS,
                       lambda trace: [tuple(int(v) for v in row) for row in values(trace)])


def cumulative(per_step: Sequence[Sequence[int]], first: Optional[Sequence[int]] = None) -> list[tuple]:
    """Running sums of per-step counts (frame 0: ``first``, else zeros)."""
    out = [tuple(first) if first is not None else (0,) * (len(per_step[0]) if per_step else 0)]
    for row in per_step:
        out.append(tuple(a + b for a, b in zip(out[-1], row)))
    return out
