"""Interactive scheduling under x86-TSO (issue 24 §2/§3): a Session opened with ``memory_model="tso"``
offers exactly the engine's moves (each thread's next step, and a drain of each CPU whose store buffer
holds a store, named after its oldest entry), steps as the engine does, branches as under sc, and sends
the page the store-buffer panel's rows as the static player draws them (test_store_buffers_view.py's
``drawn`` and ``held``).  test_interactive_browser.py drives the same in Chromium.

The mutant tests show the comparisons catch a drain of the newest store, a panel drawn newest first or
left as it was, and a panel scrubbed back that still offers the last step's choices.
"""

from __future__ import annotations

import json
import re
import random

import pytest
from test_store_buffers_view import SOURCE, drawn, held

from kstep import experiment
from kstep.engine import Scripted, simulate
from kstep.engine.memory_model import DRAIN, StoreBuffered, apply
from kstep.errors import UserError
from kstep.views import columns, course, layout, live
from kstep.views.boards import store_buffers as board
from kstep.views.interactive import Session, patched

# A scenario, and the seed of a run of it in which a store buffer fills up (the session first follows it).
RUNS = (("qspinlock", "two-waiters", 7), ("vma-locks", "recheck-race", 2))
BRANCHES = ((9, 3), (7, 6), (8, 1))  # go on so many steps, then back to this step and take another choice


def engine_run(session: Session):
    """The engine's run of the session's schedule from the scenario's start, on a fresh tso model."""
    ex = experiment.open(session.model.name, session.scenario.name, session.model.variant.name).under("tso")
    schedule = session.schedule()
    return simulate(ex.model, ex.start, Scripted(schedule), max_steps=len(session.actions)), ex.model


def check_moves(session: Session, k: int) -> None:
    """The choices at step k are the engine's enabled actions there, a CPU's drain among them exactly when
    its buffer holds a store, and its button names the oldest store, as the panel draws it."""
    m, state = session.model, session.states[k]
    view = session.view(k)
    assert [c["action"] for c in view["choices"]] == [str(a) for a in m.actions(state)], f"step {k}"
    drains = {c["actor"]: c["text"] for c in view["choices"] if c["label"] == DRAIN}
    assert set(drains) == {f"SB{b}" for b, buf in enumerate(state[-1]) if buf}, f"step {k}"
    for actor, text in drains.items():
        b = int(actor[2:])
        assert text == f"CPU {b} drains {m.entry_text(state, state[-1][b][0])} to memory", f"step {k}"
    assert not any(a.startswith("SB") for a in view["done"] + [w["actor"] for w in view["waiting"]])
    assert view["memory_model"] == {"name": "tso", "store_buffer": session.scenario.store_buffer}


def walk(session: Session, picks, page: dict) -> dict:
    """Take the choices ``picks`` (actions, or a random.Random and how many to pick: a drain a third of the
    time when there is one), checking each step's moves, the drain's effect and the panel the page patches
    in; returns the page's columns."""
    if isinstance(picks, tuple):
        rng, n = picks
        picks = [None] * n
    for pick in picks:
        k = len(session.actions)
        check_moves(session, k)
        choices = session.view()["choices"]
        if not choices:
            break
        if pick is None:
            drains = [c for c in choices if c["label"] == DRAIN]
            pick = rng.choice(drains if drains and rng.random() < 0.33 else choices)["action"]
        before = session.states[-1]
        session.step(pick)
        after = session.states[-1]
        if pick.endswith(DRAIN):  # the oldest store reaches memory and leaves the buffer; the rest wait
            m, b = session.model, int(pick.split(":")[0][2:])
            assert after[-1][b] == before[-1][b][1:]
            assert m.memory(after) == apply(m.memory(before), before[-1][b][:1])
        page = check_page(session, page)
    return page


def check_page(session: Session, page: dict) -> dict:
    """Patch the page's columns as interactive.js does; at every frame of the run so far the store-buffer
    panel draws what that step's state holds."""
    cols = patched(page, json.loads(session.page_json())["columns"])
    cpus = len(session.states[0][-1])
    for k, state in enumerate(session.states):
        rows = frame(cols["board"][SOURCE], cols["strings"], k)
        assert drawn(rows, cpus) == held(session.model, state), f"frame {k} of {len(session.actions)}"
    return cols


def frame(export: dict, strings: list, k: int) -> dict:
    """Frame k of a source as the page holds it (JSON lists): columns.decode's reading, which player.js does."""
    a, b = export["start"][k], export["stop"][k]
    return {col: [strings[i] for i in export["store"][col][a:b]] if kind == columns.STR else
            export["store"][col][a:b] for col, kind in export["kinds"].items()}


@pytest.mark.parametrize("mech,name,seed", RUNS)
def test_the_moves_are_the_engines_and_the_run_is_the_engines_run_after_every_branch(mech, name, seed):
    s = Session(mech, name, memory_model="tso")
    assert isinstance(s.model, StoreBuffered) and SOURCE in {b.name for b in s.board}
    depth = s.scenario.store_buffer
    seeded = experiment.open(mech, name).under("tso").run(seed=seed)
    full = next(k for k, st in enumerate(seeded.states) if any(len(buf) == depth for buf in st[-1]))
    page = walk(s, map(str, seeded.actions[:full + 2]), check_page(s, {}))  # a buffer fills up, and more
    assert any(len(buf) == depth for buf in s.states[full][-1])
    rng = random.Random(f"{mech}/{name}")
    for forward, back in BRANCHES:
        page = walk(s, (rng, forward), page)
        check_moves(s, back)  # scrubbed back: the choices of that step
        took = str(s.actions[back])
        other = next(c["action"] for c in s.view(back)["choices"] if c["action"] != took)
        s.step(other, at=back)
        assert len(s.actions) == back + 1
        page = check_page(s, page)
        run, _ = engine_run(s)
        assert run.states == s.states, f"after branching at step {back}"
    page = walk(s, (rng, 10), page)
    run, _ = engine_run(s)
    assert run.states == s.states and any(a.label == DRAIN for a in s.actions)


def test_a_thread_held_back_by_its_buffer_says_so():
    """vma-locks' writer stores mm_lock_seq plainly and then takes mmap_lock with a locked instruction:
    with that store still in CPU 2's buffer the writer cannot move, and the panel says why."""
    s = Session("vma-locks", "recheck-race", memory_model="tso")
    rng = random.Random(3)
    for _ in range(200):
        view = s.view()
        why = [w["why"] for w in view["waiting"] if "store buffer has drained" in w["why"]]
        if why:
            break
        if not view["choices"]:
            s.reset()
            continue
        s.step(rng.choice(view["choices"])["action"])
    else:
        pytest.fail("no state where a full barrier waits for its buffer")
    assert "is a full barrier on x86 (a locked instruction or smp_mb()), so it waits until CPU" in why[0]
    cpu = int(why[0].split("until CPU ")[1].split("'")[0])
    assert s.states[-1][-1][cpu], "the buffer it waits for holds a store"


def test_head_ignores_pendings_tso_counterexample_can_be_scheduled_by_hand():
    """The qspinlock chapter's claims: on the interactive tso page of head-ignores-pending, the explorer's
    shortest run is a sequence of choices the panel offers, with CPU 1's buffer holding C1's 16-bit store
    after step 15, and it ends on the broken mutual exclusion; drained before the cmpxchg, that store
    makes it fail."""
    ex = experiment.open("qspinlock", "two-waiters", "head-ignores-pending").under("tso")
    cex = ex.explore().counterexample
    s = Session("qspinlock", "two-waiters", "head-ignores-pending", memory_model="tso")
    for k, action in enumerate(cex.actions, start=1):
        assert str(action) in [c["action"] for c in s.view()["choices"]], f"step {k}"
        view = s.step(str(action))
    assert s.states == cex.states
    assert [s.model.entry_text(s.states[15], e) for e in s.states[15][-1][1]] == ["A->locked_pending = 1"]
    assert view["outcome"] == "violation" and view["violation"]["invariant"] == cex.violation.invariant
    # Slid back to step 14, CPU 1's store drained first: the cmpxchg fails on the locked byte, on to set_locked.
    assert str(cex.actions[14]) == "C2:claim_cmpxchg"
    s.step("SB1:drain_store_buffer", at=14)
    view = s.step("C2:claim_cmpxchg")
    assert "C2:set_locked" in [c["action"] for c in view["choices"]] and view["violation"] is None


def test_a_tso_page_is_marked_live_under_tso_with_the_variants_that_have_a_tso_model():
    ex = experiment.open("qspinlock", "two-waiters", "head-ignores-pending").under("tso")
    trace = ex.explore().counterexample
    lay = layout(trace, ex.model)
    live.enable(lay, trace, ex.model)
    spec = lay.select_one({"name": "kstep-player"}).args["kstep"]["live"]
    assert spec["memory_model"] == {"name": "tso", "store_buffer": 2}
    names = [v["name"] for v in spec["variants"]]
    assert {"v6.12", "head-ignores-pending"} <= set(names) and "powerpc" not in names
    for name in names:  # every variant offered opens under tso
        Session("qspinlock", "two-waiters", name, memory_model="tso")
    model, _, trace = course.scripted_run("qspinlock", "two-waiters")
    lay = layout(trace, model)
    live.enable(lay, trace, model)
    assert lay.select_one({"name": "kstep-player"}).args["kstep"]["live"]["memory_model"] is None


@pytest.mark.parametrize("mech,name,variant,says", [
    ("qspinlock", "two-waiters", "powerpc", "--memory-model tso: variant powerpc: arch/powerpc/lib/qspinlock.c "
                                            "runs on POWER"),
    ("rcu", "call-rcu-callback", None, "--memory-model tso: rcu declares no shared memory fields"),
    ("fork-batch", None, None, "--memory-model tso: variant folio-batch: store buffers would hold only"),
])
def test_a_model_without_a_tso_model_is_refused_in_one_line(mech, name, variant, says):
    from kstep.scenario_spec import scenario

    with pytest.raises(UserError) as e:
        Session(mech, name or scenario.bundled(mech)[0], variant, memory_model="tso")
    assert str(e.value).startswith(says) and "\n" not in str(e.value)
    with pytest.raises(UserError, match=r"^--memory-model arm64: no such memory model \(one of: sc, tso\)$"):
        Session("qspinlock", "two-waiters", memory_model="arm64")


# --- the comparisons catch a broken session, engine or panel ------------------------------------------------

def newest_drained(self, state, action):
    """A drain that writes the newest store of the buffer instead of the oldest."""
    if action.label != DRAIN:
        return real_step(self, state, action)
    b = int(action.actor[2:])
    buf = state[-1][b]
    return self._with(apply(self.memory(state), buf[-1:]), state[-1][:b] + (buf[:-1],) + state[-1][b + 1:])


real_step = StoreBuffered.step


def stale_panel(model):
    """The panel's source keyed on nothing: its rows are laid out once and never updated."""
    return real_source(model)._replace(key=lambda s: 0)


real_source = board.board_source


def the_last_step(self, k=None):
    """The panel scrubbed back to step k still shows the last step's view (its choices, its board)."""
    return real_view(self)


real_view = Session.view


MUTANTS = {
    "newest-drained": (StoreBuffered, "step", newest_drained),
    "panel-newest-first": (board, "buffer_boxes",
                           lambda model, state: real_boxes(model, state._replace(
                               store_buffers=tuple(b[::-1] for b in state[-1])))),
    "panel-not-updated": (board, "board_source", stale_panel),
    "scrubbed-shows-the-end": (Session, "view", the_last_step),
}
real_boxes = board.buffer_boxes


@pytest.mark.parametrize("mutant", MUTANTS)
def test_the_comparisons_catch_a_mutant(monkeypatch, mutant):
    where, name, replacement = MUTANTS[mutant]
    monkeypatch.setattr(where, name, replacement)
    with pytest.raises(AssertionError):
        test_the_moves_are_the_engines_and_the_run_is_the_engines_run_after_every_branch(*RUNS[0])


def chapter_tso_player(path="docs/chapters/vma-locks.md"):
    """The chapter's ``kstep-tso-player`` block: its arguments, options and the chapter's text."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / path).read_text()
    block = re.search(r"```\{kstep-tso-player\} (\S+) (\S+) (\S+)\n((?::\w+: .*\n)+)```", text)
    assert block is not None, f"{path} has no kstep-tso-player"
    options = dict(re.findall(r":(\w+): (.*)", block.group(4)))
    return block.group(1, 2, 3), options, " ".join(text.split())


def test_the_vma_locks_chapters_tso_player_shows_what_it_tells_to_look_for():
    """The chapter's run of relaxed-mm-lock-seq under x86-TSO, taken by hand on the Session: each of its steps
    is a choice the panel offers; after step K CPU 2 holds the new protection ahead of the epoch's end while
    memory still has VMA 0 write-locked and writable; it offers to drain only the protection, W's up_write waits
    for both, and the next two drains write VM_READ and then end the epoch, as the text says."""
    (mech, variant, name), options, text = chapter_tso_player()
    k, cpu = int(options["step"]), int(options["cpu"])
    run = experiment.open(mech, name, variant).under("tso").run(schedule=options["schedule"])
    s = Session(mech, name, variant, memory_model="tso")
    for step, action in enumerate(run.actions, start=1):
        assert str(action) in [c["action"] for c in s.view()["choices"]], f"step {step}"
        s.step(str(action))
    m = s.model
    held = [m.entry_text(s.states[k], e) for e in s.states[k][-1][cpu]]
    assert held == [e.strip() for e in options["holds"].split(";")]
    assert held == ["vma->vm_flags (VMA 0) = VM_READ", "mm->mm_lock_seq = 2"]
    mem = m.memory(s.states[k])
    assert mem.mm.mm_lock_seq == mem.vmas[0].vm_lock_seq == 1 and mem.vmas[0].prot == "rw"
    assert f"after step {k}, W's mprotect has stored the new protection and ended its write epoch" in text
    assert "write-locked (its `vm_lock_seq` equals `mm_lock_seq`, both 1) and still writable" in text
    view = s.view(k)
    drains = [c["text"] for c in view["choices"] if c["actor"] == f"SB{cpu}"]
    assert drains == [f"CPU {cpu} drains vma->vm_flags (VMA 0) = VM_READ to memory"]
    why = next(w["why"] for w in view["waiting"] if w["actor"] == "W")
    assert why.startswith("blocked at up_write") and f"until CPU {cpu}'s store buffer has drained" in why
    assert f"step {k + 1} writes `VM_READ`, and only step {k + 2} ends the epoch" in text
    assert [str(a) for a in s.actions[k:k + 3]] == [f"SB{cpu}:drain_store_buffer"] * 2 + ["W:up_write"]
    after = [m.memory(st) for st in s.states[k + 1:k + 3]]
    assert (after[0].vmas[0].prot, after[0].mm.mm_lock_seq) == ("r", 1)
    assert (after[1].vmas[0].prot, after[1].mm.mm_lock_seq) == ("r", 2)
    assert "CPU 2 offers to drain only `vma->vm_flags (VMA 0) = VM_READ`" in text


def test_the_vma_locks_chapters_claim_fails_on_a_buffer_drained_newest_first(monkeypatch):
    monkeypatch.setattr(StoreBuffered, "step", newest_drained)
    with pytest.raises(AssertionError):
        test_the_vma_locks_chapters_tso_player_shows_what_it_tells_to_look_for()
