"""The player of a run under x86-TSO (issue 24 §2/§3): each step's call stack as under sc, a drain's line
naming the store buffer and the store it writes, and every buffered store named by the 6.12 expression the
step's code writes (``node->next``, ``prev->next``, ``A->locked``, ``vma->vm_lock_seq``), not the state's field.

The mutant tests show the checks catch a replay that leaves tso runs without stacks, stores named by the
state's fields, and MCS stores named after the node's field alone.  (A step is replayed on what its CPU reads;
no bundled run tells that from memory: every branch a thread takes on its own store follows a locked
instruction, which drained its buffer first.)
"""

from __future__ import annotations

import html
import json
import re

import pytest

from kstep import experiment
from kstep.engine.memory_model import DRAIN, StoreBuffered
from kstep.source.excerpts import load
from kstep.models.qspinlock.model import QspinlockModel
from kstep.models.vma_locks.model import VmaLocksModel
from kstep.views import call_stacks as replay, code

SC_RUNS = (("qspinlock", "two-waiters"), ("qspinlock", "three-waiters"), ("vma-locks", "recheck-race"))
# Runs in which stores wait: (mechanism, scenario, variant, seeds).
TSO_RUNS = (("qspinlock", "two-waiters", None, range(6, 9)), ("qspinlock", "three-waiters", None, range(3)),
            ("vma-locks", "recheck-race", "relaxed-mm-lock-seq", range(3)))


def drained_at_once(mech, name):
    """The scenario's sc run, and the same run under tso with each step's stores drained right after it."""
    ex = experiment.open(mech, name)
    sc_run = ex.run()
    tso = ex.under("tso")
    m, state, schedule = tso.model, tso.start, []
    for action in sc_run.actions:
        state = m.step(state, action)
        schedule.append(action)
        while any(state[-1]):
            drain = next(a for a in m.actions(state) if a.label == DRAIN)
            state = m.step(state, drain)
            schedule.append(drain)
    return sc_run, ex.model, tso.run(schedule=" ".join(map(str, schedule))), m


@pytest.mark.parametrize("mech,name", SC_RUNS)
def test_a_tso_run_whose_stores_drain_at_once_shows_the_stacks_of_its_sc_run(mech, name):
    sc_run, sc_model, tso_run, m = drained_at_once(mech, name)
    assert len(tso_run) > len(sc_run), "some steps store and their stores drain"
    sc_stacks = replay.call_stacks(sc_model, sc_run, code.calls)
    tso_stacks = replay.call_stacks(m, tso_run, code.calls)
    assert tso_stacks is not None
    threads = [s for a, s in zip(tso_run.actions, tso_stacks) if a.label != DRAIN]
    assert threads == sc_stacks
    for k, (a, s) in enumerate(zip(tso_run.actions, tso_stacks)):
        if a.label == DRAIN:
            b = int(a.actor[2:])
            store = m.entry_text(tso_run.states[k], tso_run.states[k][-1][b][0])
            assert s == (f"store buffer of CPU{b} drains {store}",)


@pytest.mark.parametrize("mech,name,variant,seeds", TSO_RUNS)
def test_a_tso_run_with_stores_waiting_has_a_stack_at_every_step(mech, name, variant, seeds):
    """Steps taken while their CPU's stores wait run on its view: the replay follows each one, and its stack
    ends in the step's own function; the interactive session gives the same stacks step by step."""
    ex = experiment.open(mech, name, variant).under("tso")
    waited = 0
    for seed in seeds:
        trace = ex.run(seed=seed)
        waited += sum(a.label != DRAIN and any(trace.states[k][-1]) for k, a in enumerate(trace.actions))
        stacks = replay.call_stacks(ex.model, trace, code.calls)
        assert stacks is not None, f"seed {seed}"
        sources = ex.model.sources()
        for a, s in zip(trace.actions, stacks):
            where = sources[a.label]
            if a.label != DRAIN and where.in_kernel:
                assert s and s[-1] == where.function, (seed, a, s)
    assert waited, "some step ran while a store waited"


def test_the_interactive_session_sends_the_same_stacks_as_the_player():
    from kstep.views import context
    from kstep.views.interactive import Session

    ex = experiment.open("qspinlock", "two-waiters", "head-ignores-pending").under("tso")
    cex = ex.explore().counterexample
    s = Session("qspinlock", "two-waiters", "head-ignores-pending", calls="[]", memory_model="tso")
    for action in cex.actions:
        s.step(str(action))
    cols = s.columns()
    sent = [cols["strings"][i] for i in cols["stack"]]
    played = [""] + [context.stack_line(st, s.calls)
                     for st in replay.call_stacks(s.model, s.trace(), s.calls)]
    assert sent == played
    assert all(line for a, line in zip(s.actions, sent[1:]) if s.sources[a.label].in_kernel or a.label == DRAIN)
    assert "store buffer of CPU0 drains A->locked = 0" in sent  # C0's unlock, drained before C1 locks


# --- every buffered store reads as the 6.12 code writes it ------------------------------------------------

LOCKS = re.compile(r"\b[A-E](?=->|$)")  # a qspinlock's name where the code has its `lock`


def kernel_text(model, action, stack) -> str:
    """The 6.12 code of the functions step ``action`` runs in (its stack), and the step's own text."""
    excerpts = load()["excerpts"]
    where = {str(src) for src in model.sources().values() if src is not None and src.function in stack}
    return "\n".join(excerpts[w]["text"] for w in where if w in excerpts) + "\n" + model.what(action.label)


def written(where: str, text: str) -> bool:
    """Whether the code (or the step's text) writes the location a buffered store names: its expression
    with the lock's name back to ``lock`` (``A->locked``: ``lock->locked``; ``*(u16 *)A``: ``(u16 *)lock``),
    without the bytes a partial store keeps (`` &0xff``) and the object it names (`` (VMA 0)``).  vma-locks'
    steps are coarser than its code's lines: there the member alone must be named (``vm_flags`` in
    ``vm_flags_init``'s text), and the maple tree is written through ``&vmi->mas`` (vma_iter_store,
    vma_complete) or named as the tree."""
    expr = LOCKS.sub("lock", where.split(" (")[0].split(" &")[0]).lstrip("*")
    if expr in text:
        return True
    pointer, _, member = expr.partition("->")
    if pointer == "mm" and member == "mm_mt":
        return re.search(r"vmi->mas|vma_iter_store|vma_complete|maple tree", text) is not None
    return pointer in ("vma", "mm") and re.search(rf"\b{re.escape(member)}", text) is not None


def stores_named(mech, name, variant, seeds):
    """(where, the step's code and text) of every store a step of these tso runs puts in a buffer."""
    ex = experiment.open(mech, name, variant).under("tso")
    m = ex.model
    out = []
    for seed in seeds:
        trace = ex.run(seed=seed)
        stacks = replay.call_stacks(m, trace, code.calls)
        for k, a in enumerate(trace.actions):
            if a.label == DRAIN:
                continue
            before, after = trace.states[k], trace.states[k + 1]
            mem = m.memory(before)
            i = next((i for i, t in enumerate(mem[0]) if t[0] == a.actor), None)
            if i is None:
                continue
            b = m.cpu(mem, i)
            for e in (e for e in after[-1][b] if e not in before[-1][b]):  # the stores it buffered
                out.append((m.entry_parts(after, e)[0], a, kernel_text(m.inner, a, stacks[k])))
    return out


NAMED = (("qspinlock", "two-waiters", None), ("qspinlock", "three-waiters", None), ("qspinlock", "nesting", None),
         ("qspinlock", "fair-ticket", "ticket"), ("qspinlock", "one-bit-pending", None),
         ("vma-locks", "recheck-race", None), ("vma-locks", "munmap-vs-fault", None),
         ("vma-locks", "map-fixed-vs-munmap", None), ("vma-locks", "fork-vs-fault", None))


def names_checked(mech, name, variant) -> set[str]:
    """The names of the stores six seeded tso runs buffer, each checked against its step's code."""
    stores = stores_named(mech, name, variant, range(6))
    assert stores, "some step buffers a store"
    wrong = sorted({(where, str(a)) for where, a, text in stores if not written(where, text)})
    assert wrong == []
    return {where for where, _, _ in stores}


@pytest.mark.parametrize("mech,name,variant", NAMED)
def test_every_buffered_store_is_named_as_its_steps_code_writes_it(mech, name, variant):
    names_checked(mech, name, variant)


def test_mcs_node_stores_name_the_pointer_the_code_writes_through():
    named = {re.sub(r" \(cpu\d/idx\d\)", "", w) for w in names_checked("qspinlock", "three-waiters", None)}
    # (mcs_node_init's stores change nothing here: every node is used once, and starts unlocked and unlinked)
    assert {"prev->next", "next->locked", "A->locked"} <= named, named


# --- the checks catch a broken replay or generic names --------------------------------------------------------

def no_tso_replay(model, config, first, calls):
    return None if isinstance(model, StoreBuffered) else real_replay(model, config, first, calls)


real_replay = replay.stack_replay


MUTANTS = {
    "no-stacks-under-tso": (replay, "stack_replay", no_tso_replay, lambda: (
        test_a_tso_run_whose_stores_drain_at_once_shows_the_stacks_of_its_sc_run(*SC_RUNS[0]))),
    # store_parts naming no store: the state's fields name them all (nodes[5].next, words[0] &0xff, mm.tree)
    "qspinlock-fields-as-names": (QspinlockModel, "store_parts", lambda self, s, entry: None, lambda: (
        names_checked("qspinlock", "three-waiters", None))),
    "vma-fields-as-names": (VmaLocksModel, "store_parts", lambda self, s, entry: None, lambda: (
        names_checked("vma-locks", "recheck-race", None))),
    # the MCS node stores named after the node's field alone (node->next for prev->next)
    "one-name-per-field": (QspinlockModel, "store_parts", lambda self, s, entry: (
        real_parts(self, s, entry)[0].replace("prev->", "node->").replace("next->locked", "node->locked"),
        real_parts(self, s, entry)[1]), test_mcs_node_stores_name_the_pointer_the_code_writes_through),
}
real_parts = QspinlockModel.store_parts


@pytest.mark.parametrize("mutant", MUTANTS)
def test_the_checks_catch_a_mutant(monkeypatch, mutant):
    where, name, replacement, check = MUTANTS[mutant]
    monkeypatch.setattr(where, name, replacement)
    with pytest.raises(AssertionError):
        check()


# --- kstep run --memory-model tso --html: the offline player of the run -----------------------------------------

def page_document(path):
    """The Bokeh document a standalone page embeds (as BokehJS reads it: the JSON is HTML-escaped there)."""
    from bokeh.document import Document

    text = path.read_text()
    found = re.search(r'<script type="application/json" id="[^"]+">\s*(.*?)\s*</script>', text, re.S)
    docs = json.loads(html.unescape(found.group(1)))
    return Document.from_json(next(iter(docs.values())))


def test_the_offline_page_of_a_tso_run_draws_its_buffers_and_names_its_memory_model(tmp_path, capsys):
    from kstep.cli import main
    from kstep.views.player import Frames
    from test_store_buffers_view import SOURCE, drawn, held

    path = tmp_path / "run.html"
    assert main(["run", "qspinlock", "--scenario", "two-waiters", "--memory-model", "tso", "-s", "7",
                 "--html", str(path)]) == 0
    capsys.readouterr()
    doc = page_document(path)
    header = doc.select_one({"name": "kstep-header"}).text
    assert "24 steps on x86-TSO, store buffers of 2 · random schedule, seed 7" in header
    ex = experiment.open("qspinlock", "two-waiters").under("tso")
    trace = ex.run(seed=7)
    frames = Frames(doc)
    assert frames.exports[SOURCE]["start"].shape == (len(trace.states),)
    for k, state in enumerate(trace.states):
        assert drawn(frames.rows(SOURCE, k), 3) == held(ex.model, state), f"frame {k}"
    assert any(held(ex.model, s) != [[], [], []] for s in trace.states)


@pytest.mark.slow
def test_the_offline_page_of_a_tso_run_played_as_sc_is_caught(monkeypatch, tmp_path, capsys):
    from kstep.views import player

    monkeypatch.setattr(player, "StoreBuffered", type("NoMemoryModel", (), {}))  # a player that sees no tso
    with pytest.raises((AssertionError, KeyError)):
        test_the_offline_page_of_a_tso_run_draws_its_buffers_and_names_its_memory_model(tmp_path, capsys)
