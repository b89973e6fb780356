"""The store buffers of a mechanism run under tso, drawn in the player (issue 24 §3): at every frame the
panel draws each CPU's entries exactly as the trace's state holds them, oldest first, and nothing else.

``drawn`` reads the panel's boxes back (a box in the colour of a waiting store is an entry; each CPU's
row left to right); ``held`` reads the state.  The mutant tests show the comparison catches entries
drawn newest first and a drained entry left drawn.  test_store_buffers_browser.py compares the page
that Chromium draws with the same two functions.
"""

from __future__ import annotations

import pytest

from kstep import experiment
from kstep.views import layout
from kstep.views.boards import store_buffers as board
from kstep.views.player import Frames

SOURCE = "store-buffers"
DRAW = board.buffer_boxes  # the panel as it is, which the mutants below change


def held(model, state) -> list[list[tuple[str, str]]]:
    """Per CPU, its buffer's entries oldest first: (location, value) as the model names them."""
    return [[model.entry_parts(state, e) for e in buf] for buf in state[-1]]


def drawn(rows: dict, cpus: int) -> list[list[tuple[str, str]]]:
    """Per CPU, the entries the panel draws in its row, left to right: (box head, value after "= ")."""
    out: list[list[tuple[float, str, str]]] = [[] for _ in range(cpus)]
    for x, y, fill, head, body in zip(rows["x"], rows["y"], rows["fill"], rows["head"], rows["body"]):
        if fill == board.ENTRY[1]:
            value = body.split("\n")[0]
            assert value.startswith("= "), body
            out[round(-y / board.ROW)].append((x, head, value[2:]))
    return [[(head, value) for _, head, value in sorted(row)] for row in out]


def mismatches(trace, model) -> list[str]:
    frames = Frames(layout(trace, model))
    cpus = len(trace.states[0][-1])
    return [f"frame {k}: drawn {drawn(frames.rows(SOURCE, k), cpus)}, held {held(model, s)}"
            for k, s in enumerate(trace.states) if drawn(frames.rows(SOURCE, k), cpus) != held(model, s)]


def two_deep():
    """A tso run of qspinlock's two-waiters whose buffers hold two stores at once, and drain."""
    ex = experiment.open("qspinlock", "two-waiters").under("tso")
    trace = ex.run(seed=7)
    assert max(len(b) for s in trace.states for b in s[-1]) == 2
    assert any(a.label == "drain_store_buffer" for a in trace.actions)
    return trace, ex.model


def test_every_frame_draws_the_buffers_the_trace_holds():
    trace, model = two_deep()
    assert mismatches(trace, model) == []


def test_a_vma_locks_run_draws_the_writers_buffered_stores():
    ex = experiment.open("vma-locks", "recheck-race").under("tso")
    trace = ex.run(seed=2)
    assert any(len(b) == 2 for s in trace.states for b in s[-1])
    assert mismatches(trace, ex.model) == []


def test_the_counterexample_explore_finds_under_tso_draws_its_buffers():
    ex = experiment.open("qspinlock", "two-waiters", "head-ignores-pending").under("tso")
    trace = ex.explore().counterexample
    assert trace.violation is not None and any(any(s[-1]) for s in trace.states)
    assert mismatches(trace, ex.model) == []


def test_an_sc_run_has_no_store_buffer_panel():
    ex = experiment.open("qspinlock", "two-waiters")
    assert SOURCE not in Frames(layout(ex.run(seed=7), ex.model)).exports


def newest_first(model, state):
    return DRAW(model, state._replace(store_buffers=tuple(b[::-1] for b in state[-1])))


def left_drawn():
    """Boxes that keep drawing a CPU's drained entry: its row as the frame before drew it."""
    last: list = []

    def boxes(model, state):
        shown = state
        if last:
            shown = state._replace(store_buffers=tuple(old if old[1:] == new and old else new
                                                       for old, new in zip(last[0][-1], state[-1])))
        last[:] = [state]
        return DRAW(model, shown)

    return boxes


@pytest.mark.parametrize("mutant", [newest_first, left_drawn()], ids=["newest-first", "drained-left-drawn"])
def test_the_comparison_catches_a_mutated_panel(monkeypatch, mutant):
    trace, model = two_deep()
    monkeypatch.setattr(board, "buffer_boxes", mutant)
    assert mismatches(trace, model) != []
