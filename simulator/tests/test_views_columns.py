"""The frame-indexed column format, and player.js slicing it (run under Node, no browser).

What a student sees at step k is whatever the player slices out of the store for frame k, so these
tests compare, for every frame, the rows the view computed from the state with the rows
``columns.decode`` and player.js produce from the exported arrays.
"""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kstep.engine import Random, Scripted, simulate
from kstep.scenario_spec import scenario
from kstep.models import make_model
from kstep.views import columns as fc
from kstep.views import layout, player
from kstep.views.player import Frames
from support import load

HARNESS = Path(__file__).with_name("player_harness.js")


def rcu_trace(seed=1, name="grace-period-basics", variant=None):
    model, sc, start = load("rcu", name, variant)
    sched = Scripted(sc.schedule) if sc.schedule else Random(seed)
    trace = simulate(model, start, sched, scenario=sc.name, config=sc.config)
    return trace, model


# --- the format in Python ----------------------------------------------------------------------------

def toy_rows(state):
    """A made-up view: state is an int; frame k draws k % 4 boxes named after their position."""
    n = state % 4
    return {"x": [j * 1.5 for j in range(n)], "y": [state] * n, "name": [f"box {j}" for j in range(n)]}


def export_toy(states):
    strings = fc.Strings()
    cols = fc.FrameColumns("toy", {"x": float, "y": int, "name": str}, toy_rows, strings)
    for s in states:
        cols.add(s)
    return cols.export(), strings.table


def test_decode_gives_every_frames_rows():
    states = [0, 1, 2, 3, 4, 5, 6, 7, 3, 3, 0, 2]
    export, strings = export_toy(states)
    for k, s in enumerate(states):
        assert fc.decode(export, strings, k) == toy_rows(s), f"frame {k}"


def test_equal_frames_share_one_block_and_the_store_holds_each_block_once():
    states = [3, 0, 3, 3, 0]
    export, _ = export_toy(states)
    assert (export["start"][0], export["stop"][0]) == (export["start"][2], export["stop"][2])
    assert export["start"][1] == export["stop"][1]  # state 0 draws no rows
    assert len(export["store"]["x"]) == 3  # only frame 3's three rows are stored


def test_columns_use_small_dtypes_and_strings_become_indices():
    states = list(range(300))
    export, strings = export_toy(states)
    # array.array type codes: the column builders run where numpy does not (Pyodide's core runtime)
    assert np.asarray(export["store"]["y"]).dtype == np.int16  # 0..299 needs more than int8
    assert np.asarray(export["store"]["x"]).dtype == np.float32  # 1.5 is exact in float32
    assert np.asarray(export["store"]["name"]).dtype == np.int8  # three distinct names
    assert strings == ["box 0", "box 1", "box 2"]
    assert np.asarray(export["start"]).dtype == np.asarray(export["stop"]).dtype == np.int32


def test_a_store_exported_after_every_frame_is_the_store_exported_once_at_the_end():
    """A student's run exports after each step and grows the store by the new blocks only; a column that
    outgrows its type (int8 to int16, whole to float64) is laid out again, exactly as one export would."""
    def rows(state):
        return {"x": [state + (0.1 if state >= 250 else 0.0)], "y": [state], "name": [f"box {state % 3}"]}

    def store(export):
        return {c: (a.typecode, a.tolist()) for c, a in export["store"].items()}

    step_by_step = fc.FrameColumns("toy", {"x": float, "y": int, "name": str}, rows, fc.Strings())
    typecodes = set()
    for s in range(300):
        step_by_step.add(s)
        typecodes.add(step_by_step.export()["store"]["x"].typecode)
    at_once = fc.FrameColumns("toy", {"x": float, "y": int, "name": str}, rows, fc.Strings())
    for s in range(300):
        at_once.add(s)
    assert store(step_by_step.export()) == store(at_once.export())
    assert typecodes == {"b", "h", "d"}, "the run went through each kind of growth"


def test_rows_must_match_the_declared_columns():
    cols = fc.FrameColumns("bad", {"x": int}, lambda s: {"x": [1], "y": [2]}, fc.Strings())
    with pytest.raises(ValueError, match="declared"):
        cols.add(0)
    with pytest.raises(TypeError):
        fc.FrameColumns("bad", {"x": list}, lambda s: {}, fc.Strings())


def test_a_real_view_exports_what_its_rows_function_draws():
    """Every frame of the RCU view's thread boxes decodes to the boxes drawn from that state."""
    from kstep.views.boxes import columns as box_columns
    from kstep.views.boards.rcu import thread_boxes

    trace, model = rcu_trace()
    p = player.Player(trace, model)
    p.frame_source("threads", {"head": str, "body": str, "x": float},
                   lambda s: {c: v for c, v in box_columns(thread_boxes(s)).items() if c in ("head", "body", "x")})
    for k, s in enumerate(trace.states):
        expect = box_columns(thread_boxes(s))
        got = fc.decode(p.exports["threads"], p.strings.table, k)
        assert got == {c: expect[c] for c in ("head", "body", "x")}, f"frame {k}"


# --- player.js slicing, run in Node ------------------------------------------------------------------

def harness_input(lay, actions):
    """What the page ships to player.js, taken from the layout itself, as JSON for the harness."""
    spec = lay.select_one({"name": "kstep-player"}).args["kstep"]

    def col(values):
        values = np.asarray(values)
        if values.dtype.kind in "iuf":
            return {"dtype": str(values.dtype), "values": values.tolist()}
        return {"dtype": "str", "values": list(values)}

    models = ("widgets", "frames", "sources", "cursors", "follow", "fits", "root", "projector", "panels")
    plain = {k: v for k, v in spec.items() if k not in models}
    plain["frames"] = {c: col(v) for c, v in spec["frames"].data.items()}
    plain["sources"] = [{"name": s["name"], "cols": s["cols"], "store": {c: col(v) for c, v in s["store"].data.items()}}
                        for s in spec["sources"]]
    return {"code": player.player_js(), "spec": plain, "actions": actions}


def run_player(lay, actions):
    out = subprocess.run(["node", str(HARNESS)], input=json.dumps(harness_input(lay, actions)), text=True,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def assert_rows_equal(got, want, where):
    for name, cols in want.items():
        for col, values in cols.items():
            shown = got[name][col]
            if values and isinstance(values[0], float):
                assert shown == pytest.approx(values), f"{where}: {name}.{col}"
            else:
                assert shown == values, f"{where}: {name}.{col}"


def test_player_js_shows_the_rows_of_each_frame_it_steps_to():
    trace, model = rcu_trace()
    lay = layout(trace, model)
    n = len(trace)
    actions = ["step"] * n + ["step", "back", "back", "slider:3", "slider:" + str(n), "reset", "slider:1"]
    results = run_player(lay, actions)
    frames = list(range(1, n + 1)) + [n, n - 1, n - 2, 3, n, 0, 1]
    for action, res, k in zip(actions, results, frames):
        assert res["frame"] == k, action
        assert res["cursor"] == [k, k + 1]
        assert res["banner"] == (k == n)
        assert_rows_equal(res["sources"], Frames(lay)(k), f"after {action} (frame {k})")


def test_player_js_plays_and_pauses_without_touching_the_toggles_label():
    """The harness's toggle throws if its label is set: BokehJS re-renders a button whose label
    changes, and the element a user was clicking is gone (the flaky Pause click)."""
    trace, model = rcu_trace()
    lay = layout(trace, model)
    actions = ["play", "advance:1000", "advance:500", "pause", "advance:5000", "play", "advance:60000"]
    results = run_player(lay, actions)
    speed = 2  # steps per second, the harness's speed widget
    assert [r["playing"] for r in results] == [True, True, True, False, False, True, False]
    assert [r["frame"] for r in results[:5]] == [0, speed, 3, 3, 3]
    assert results[-1]["frame"] == len(trace) and results[-1]["banner"]


def test_player_js_status_names_the_step_its_kernel_function_and_what_it_does():
    trace, model = rcu_trace()
    lay = layout(trace, model)
    results = run_player(lay, ["step", "step", "reset"])
    for k in (1, 2):
        action = trace.actions[k - 1]
        status = results[k - 1]["status"]
        assert f"step {k} / {len(trace)}" in status
        assert action.actor in status and action.label in status
        assert str(model.sources()[action.label]).replace("<", "&lt;") in status
        assert model.what(action.label).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in status
        assert f"{model.sources()[action.label]} in Linux 6.12.117" in results[k - 1]["code"]
    assert results[2]["status"] == player.Player(trace, model).status0()
    assert results[2]["code"] == player.CODE0


def test_player_js_shows_a_step_outside_the_kernel_without_a_link_or_code():
    """A lock's critical section is its caller's code: the status names whose code it is, with no
    link, and the code pane says there is no kernel code to show (rather than failing)."""
    model, sc, s0 = load("qspinlock", "two-waiters")
    trace = simulate(model, s0, Scripted(sc.schedule), scenario=sc.name, config=sc.config)
    outside = [k for k, a in enumerate(trace.actions, start=1) if not model.sources()[a.label].path]
    assert outside, "two-waiters runs no step outside the kernel"
    k = outside[0]
    results = run_player(layout(trace, model), ["step"] * k)
    where = str(model.sources()[trace.actions[k - 1].label])
    assert f'<span class="kstep-where">{where}</span>' in results[k - 1]["status"], results[k - 1]["status"]
    assert "this step is not kernel code" in results[k - 1]["code"]


def long_rcu_trace(sections=60):
    """A run longer than two timeline pages: a valid scenario with the reader's sections raised."""
    model = make_model("rcu")
    small = {"threads": [{"name": "R", "kind": "reader", "sections": 20},
                         {"name": "U", "kind": "updater", "updates": 10}]}
    config = scenario.to_config(model.scenario_schema.check(small, ""))
    config["threads"][0]["sections"] = sections
    trace = simulate(model, model.initial(config), Random(3), config=config)
    return trace, model


def test_player_pages_the_timeline_exactly_as_python_lays_out_its_pages():
    trace, model = long_rcu_trace()
    n = len(trace)
    p = player.Player(trace, model)
    assert n + 1 > 2 * p.window
    lay = layout(trace, model)
    frames = [0, 1, p.window // 2, p.window, 100, n // 2, n - 1, n, 3]
    results = run_player(lay, [f"slider:{k}" for k in frames])
    for res, k in zip(results, frames):
        start, end = res["range"]
        assert (start, end) == p.page(k)
        assert end - start == p.window
        assert start + p.window // 4 <= k + 1 <= end or start == 0 or end == n + 1, f"frame {k} near an edge"


def test_windowed_timeline_rows_are_the_bars_that_reach_into_the_page():
    trace, model = long_rcu_trace()
    lay = layout(trace, model)
    p = player.Player(trace, model)
    spec = lay.select_one({"name": "kstep-player"}).args["kstep"]
    src = next(s for s in spec["sources"] if s["name"] == "timeline-phases")
    export = {"kinds": dict(src["cols"]), "store": {c: np.asarray(v) for c, v in src["store"].data.items()},
              "start": spec["frames"].data["timeline-phases.start"],
              "stop": spec["frames"].data["timeline-phases.stop"]}
    all_bars = set()
    for k in range(len(trace) + 1):
        rows = fc.decode(export, spec["strings"], k)
        all_bars |= set(zip(rows["left"], rows["right"], rows["y"]))
    for k in (0, 57, len(trace) // 2, len(trace)):
        start, end = p.page(k)
        rows = fc.decode(export, spec["strings"], k)
        shown = set(zip(rows["left"], rows["right"], rows["y"]))
        reaching = {b for b in all_bars if b[1] >= start - 1 and b[0] <= end + 1}
        assert shown == reaching, f"frame {k}"
        assert len(shown) < len(all_bars) / 2, "a page holds a part of the timeline"
