"""Interactive scheduling (views/interactive.py), the files it is served with (views/live.py) and
``kstep serve``, without a browser: the page runs this same Python in Pyodide (test_views_browser.py
drives it there)."""

import io
import json
import os
import random
import re
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
import zipfile

import pytest

from kstep.engine import Scripted, simulate
from kstep.errors import UserError
from kstep.views import columns as fc
from kstep.views import live
from kstep.views.interactive import Session, patched
from support import load

# T1 finds VMA B in the tree under RCU; W unmaps it and (free-immediately) frees it at once; T1's
# vma_start_read then reads freed memory.  The student picks the actor of each step.
UAF_SCHEDULE = ["T1", "T1"] + ["W"] * 10 + ["T1"]


def simulate_scenario(mech, name):
    """The scenario's own scripted run under its own variant (what its page plays)."""
    model, sc, start = load(mech, name)
    return simulate(model, start, Scripted(sc.schedule), scenario=sc.name, config=sc.config)


def test_interactive_mode_imports_only_the_standard_library_and_builds_columns_for_every_mechanism():
    """Pyodide's core runtime has the standard library and nothing else: with every other module
    unimportable, a Session of a bundled scenario of each mechanism steps and builds its columns."""
    code = live.ONLY_STDLIB + textwrap.dedent("""
        from kstep.scenario_spec import scenario
        from kstep.models import MODELS
        from kstep.views.interactive import BOARDS, Session

        for mech in MODELS:
            s = Session(mech, scenario.bundled(mech)[0])
            for _ in range(4):
                choices = s.view()["choices"]
                if choices:
                    s.step(choices[0]["action"])
            cols = s.columns()
            n = len(s.actions)
            assert len(cols["actor"]) == len(cols["label"]) == n + 1, mech
            assert set(cols["board"]) == {b.name for b in s.board + s.charts}, mech
            assert bool(s.board) == (mech in BOARDS) and s.charts, mech
            for name, export in cols["board"].items():
                assert len(export["start"]) == len(export["stop"]) == n + 1, (mech, name)
            s.page_json()
        assert not {"numpy", "jsonschema", "bokeh"} & set(sys.modules)
        print("ran")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "ran\n", out.stderr[-3000:]


def test_a_student_schedule_reaches_the_use_after_free_of_free_immediately_and_6_12_has_none():
    s = Session("vma-locks", "munmap-vs-fault", "free-immediately")
    for k, actor in enumerate(UAF_SCHEDULE, start=1):
        assert any(c["actor"] == actor for c in s.view()["choices"]), f"step {k}: {actor} cannot move"
        view = s.step(actor)
        assert view["step"] == k
    v = view["violation"]
    assert (v["invariant"], v["kind"], v["step"], v["new"]) == ("no-use-after-free", "harm", 13, True)
    assert view["outcome"] == "violation" and view["choices"] == []  # harm ends the run, as simulate does
    assert "freed" in v["message"] and view["label"] == "vma_start_read"
    with pytest.raises(Exception, match="the run is over"):
        s.step("T2")

    fixed = Session("vma-locks", "munmap-vs-fault", "v6.12")
    for actor in UAF_SCHEDULE:
        view = fixed.step(actor)
    assert view["violation"] is None and view["choices"], "6.12 defers the free past T1's read-side section"


def test_a_thread_the_students_run_kills_says_how_it_died():
    """On 6.12, munmap-vs-fault's scripted run ends with T1 killed by SIGSEGV: a student's run of the same
    schedule says so, as the recorded run's banner does, not just "done"."""
    sc_run = simulate_scenario("vma-locks", "munmap-vs-fault")
    s = Session("vma-locks", "munmap-vs-fault")
    for a in sc_run.actions:
        view = s.step(str(a))
    assert view["outcome"] == "finished" and view["ended"] == {"T1": "killed by SIGSEGV"}
    assert "T1" in view["done"] and "T2" not in view["ended"]


def test_each_step_of_a_students_run_has_its_call_stack_and_object_as_the_player_shows_them():
    from kstep.views import code, context

    sc_run = simulate_scenario("vma-locks", "map-fixed-vs-munmap")
    model, _, _ = load("vma-locks", "map-fixed-vs-munmap")
    s = Session("vma-locks", "map-fixed-vs-munmap", calls=json.dumps(context.call_pairs(model, code.calls)))
    for a in sc_run.actions:
        s.step(str(a))
    cols = s.columns()
    stacks, on = context.frame_context(sc_run, model, code.calls)
    assert [cols["strings"][i] for i in cols["stack"]] == stacks and any(stacks)
    assert [cols["strings"][i] for i in cols["on"]] == on and "mmap_lock" in on


def test_a_blocked_thread_says_which_lock_it_waits_for_and_who_holds_it():
    s = Session("vma-locks", "map-fixed-vs-munmap")
    for a in "M:down_write U:down_write U:rwsem_optimistic_spin U:rwsem_down_write_slowpath".split():
        s.step(a)
    view = s.step("U:rwsem_try_write_lock")
    assert "U" not in {c["actor"] for c in view["choices"]}
    assert {"actor": "U", "why": "blocked at rwsem_try_write_lock: waits for mmap_lock (held for write by M)"} \
        in view["waiting"]


def test_back_undoes_a_step_and_choosing_at_an_earlier_step_branches_there():
    s = Session("vma-locks", "munmap-vs-fault", "free-immediately")
    views = [s.view()] + [s.step(a) for a in UAF_SCHEDULE[:4]]
    assert s.back() == views[3]
    assert s.back() == views[2]
    s.step("T1")
    with pytest.raises(Exception, match="not an enabled action"):
        s.step("W:vm_area_free", at=1)
    assert len(s.actions) == 3, "a refused choice leaves the run as it was"
    branched = s.step("T2", at=1)  # from step 1: T2 moves instead of what followed
    assert branched["step"] == 2 and s.schedule() == "T1:rcu_read_lock T2:rcu_read_lock"
    assert s.reset() == views[0]


def test_an_earlier_step_offers_its_own_choices_and_an_out_of_range_step_is_refused_in_one_line():
    """With the player's slider back at step k, the panel shows view(k): step k's choices, waiting
    threads and verdict as they were when the run stood there, only the run's length differs."""
    s = Session("vma-locks", "munmap-vs-fault", "free-immediately")
    views = [s.view()] + [s.step(a) for a in UAF_SCHEDULE]
    n = len(UAF_SCHEDULE)
    assert views[-1]["choices"] == [] and views[-1]["outcome"] == "violation"
    for k, then in enumerate(views):
        assert s.view(k) == {**then, "steps": n}, f"step {k}"
    assert s.view() == views[-1] and json.loads(s.view_json(2)) == s.view(2)
    for bad in (-1, n + 1):
        with pytest.raises(UserError, match=f"step {bad} is not in the run"):
            s.view(bad)
        with pytest.raises(UserError, match=f"step {bad} is not in the run"):
            s.step("T1", at=bad)
    assert len(s.actions) == n


def test_the_columns_decode_to_the_board_of_every_step_and_the_schedule_replays_the_run():
    s = Session("vma-locks", "munmap-vs-fault", "free-immediately")
    for actor in UAF_SCHEDULE:
        s.step(actor)
    cols = s.columns()
    for k in range(len(s.states)):
        rows = s.rows(k)
        for name, export in cols["board"].items():
            assert fc.decode(export, cols["strings"], k) == rows[name], f"step {k}: {name}"
    assert any(rows["threads"]["changed"]) and not any(s.rows(0)["threads"]["changed"])
    replay = simulate(s.model, s.states[0], Scripted(s.schedule()))
    assert replay.states == s.states and replay.violation == s.trace().violation


def plain(value):
    """Columns as JSON gives them to the page (arrays as lists)."""
    return json.loads(json.dumps(value, default=list))


def frames_shown(cols):
    """Every frame of every board and chart, and each step's trace columns, with strings resolved: what
    the player shows, whatever order the string table and the stores were built in."""
    strings = cols["strings"]
    out = {key: cols[key] for key in ("step", "actor", "label", "where", "what")}
    out.update({key: [strings[i] for i in cols[key]] for key in ("stack", "on")})
    for name, ex in cols["board"].items():
        out[name] = [{col: [strings[i] for i in ex["store"][col][a:b]] if kind == fc.STR else list(ex["store"][col][a:b])
                      for col, kind in ex["kinds"].items()} for a, b in zip(ex["start"], ex["stop"])]
    return out


def test_the_page_patched_after_any_steps_backs_and_branches_holds_the_columns_of_a_fresh_run():
    """The page keeps the columns and applies what each page_json sends (``patched``, as interactive.js
    does): after every move of a seeded walk of steps, undos, restarts and branches they are exactly the
    Session's columns, and show what a fresh Session replaying the same schedule shows."""
    rng = random.Random(7)
    s = Session("qspinlock", "trylock-fallback")
    page = patched({}, json.loads(s.page_json())["columns"])
    longest = 0
    for move in range(60):
        roll = rng.random()
        if move == 20:
            s.reset()
        elif roll < 0.15:
            s.back()
        elif roll < 0.3 and s.actions:  # from an earlier step, another choice: the run branches there
            at = rng.randrange(len(s.actions) // 2, len(s.actions))
            s.step(str(rng.choice(s.model.actions(s.states[at]))), at=at)
        elif s.view()["choices"]:
            s.step(rng.choice(s.view()["choices"])["action"])
        page = patched(page, json.loads(s.page_json())["columns"])
        assert page == plain(s.columns()), f"move {move}"
        longest = max(longest, len(s.actions))
    assert longest > 15 and len(s.actions) > 5, "the walk went far, and ends on a run of its own"
    fresh = Session("qspinlock", "trylock-fallback")
    for a in s.actions:
        fresh.step(str(a))
    assert frames_shown(page) == frames_shown(plain(fresh.columns()))


def test_a_step_sends_what_it_changes_not_the_whole_run_again():
    """page_json after a step is the change, not the columns of the whole run (which grow with it)."""
    s = Session("qspinlock", "trylock-fallback")
    s.page_json()
    rng = random.Random(1)
    for k in range(1, 41):
        s.step(rng.choice(s.view()["choices"])["action"])
        sent = len(s.page_json())
        if k >= 20:
            whole = len(json.dumps({"view": s.view(), "columns": plain(s.columns())}))
            assert sent < whole / 4, f"step {k}: {sent} characters sent of the {whole} of the whole run"


def test_the_package_zip_holds_what_the_session_imports_and_nothing_that_needs_bokeh():
    names = set(zipfile.ZipFile(io.BytesIO(live.package_zip())).namelist())
    assert {"kstep/views/interactive.py", "kstep/views/boards/vma_locks.py", "kstep/views/columns.py",
            "kstep/models/vma_locks/model.py", "kstep/scenarios/vma-locks/munmap-vs-fault.toml"} <= names
    assert not {"kstep/views/player.py", "kstep/views/board.py", "kstep/views/vma_locks.py"} & names


def test_serve_refuses_a_missing_folder_and_a_bad_port_in_one_line(tmp_path):
    for args, says in ((["serve", str(tmp_path / "nope")], "not a directory"),
                       (["serve", str(tmp_path), "--port", "70000"], "out of range"),
                       (["serve", str(tmp_path), "--port", "http"], "not a whole number")):
        out = subprocess.run([sys.executable, "-m", "kstep", *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and says in out.stderr, out.stderr


def test_serve_serves_the_folder_on_the_loopback_address_with_the_webassembly_type(tmp_path):
    (tmp_path / "a.wasm").write_bytes(b"\0asm")
    (tmp_path / "b.mjs").write_text("export {};")
    proc = subprocess.Popen([sys.executable, "-m", "kstep", "serve", str(tmp_path), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/", proc.stdout.readline()).group(0)
        with urllib.request.urlopen(url + "a.wasm", timeout=30) as r:
            assert r.headers["Content-Type"] == "application/wasm" and r.read() == b"\0asm"
        with urllib.request.urlopen(url + "b.mjs", timeout=30) as r:
            assert r.headers["Content-Type"] == "text/javascript"
        # The browser may keep every file for the site's next page, and asks whether it changed: an
        # unchanged one costs a 304 and no bytes, a rebuilt one is sent again.
        with urllib.request.urlopen(url + "a.wasm", timeout=30) as r:
            assert r.headers["Cache-Control"] == "no-cache"
            stamp = r.headers["Last-Modified"]
        asks = urllib.request.Request(url + "a.wasm", headers={"If-Modified-Since": stamp})
        with pytest.raises(urllib.error.HTTPError, match="304"):
            urllib.request.urlopen(asks, timeout=30)
        os.utime(tmp_path / "a.wasm", (time.time() + 5, time.time() + 5))
        with urllib.request.urlopen(asks, timeout=30) as r:
            assert r.status == 200 and r.read() == b"\0asm"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
