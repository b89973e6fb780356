"""A mechanism page scheduled by hand under x86-TSO in a real browser: the qspinlock chapter's page of
head-ignores-pending's tso counterexample, served by ``kstep serve``, its Session running in Pyodide.

The student follows the explorer's run by hand until C0's unlock waits in CPU 0's store buffer, picks
CPU 0's drain (the button names the store as the panel draws it) and sees the drawn buffer shrink; lets C1
lock; then scrubs back to before the drain, where the store is drawn again, and branches: C1 runs with the
store still waiting, and the page's run is the model's.  (That the whole counterexample, up to the broken
mutual exclusion, is a sequence of choices the panel offers, test_interactive_tso.py checks on the same
Session.)  At every step
the store-buffer panel draws what the Session's state holds (test_store_buffers_view's ``drawn`` and
``held``).  Every wait is on a state of the page, never a sleep."""

from __future__ import annotations

import pytest
from browser import Opened
from test_interactive_browser import offered, panel_at, served, slide_to
from test_store_buffers_view import SOURCE, drawn, held

from kstep import experiment
from kstep.engine import Scripted, simulate
from kstep.views import export
from kstep.views.interactive import Session

pytestmark = pytest.mark.browser

MECH, NAME, VARIANT = "qspinlock", "two-waiters", "head-ignores-pending"
UNLOCKED = 3  # the counterexample's first steps: C0 locks, runs its critical section and unlocks


def counterexample():
    ex = experiment.open(MECH, NAME, VARIANT).under("tso")
    return ex.explore().counterexample, ex.model


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tso-live")
    trace, model = counterexample()
    export.write_page(folder, trace, model, about=experiment.open(MECH, NAME, VARIANT).scenario)
    with served(folder) as url:
        yield url


def pick(p, action, k, expected):
    """Click ``action``'s button; once the page shows step k, its buffers are the Session's."""
    p.page.click(f'.kstep-live button[data-action="{action}"]')
    panel_at(p, "live", k)
    expected.step(action, at=None if k - 1 == len(expected.actions) else k - 1)
    same_buffers(p, expected, k)
    assert offered(p) == [c["action"] for c in expected.view()["choices"]], f"step {k}"


def same_buffers(p, expected, k):
    cpus = len(expected.states[0][-1])
    assert drawn(p.shown(SOURCE), cpus) == held(expected.model, expected.states[k]), f"step {k}"


def test_a_student_drains_a_store_buffer_by_hand_then_scrubs_back_and_branches(browser, origin):
    trace, model = counterexample()
    unlocked = [str(a) for a in trace.actions[:UNLOCKED]]
    assert unlocked[-1] == "C0:queued_spin_unlock" and "SB0:drain_store_buffer" not in unlocked
    p = Opened(browser, origin + "/index.html", origin=origin)
    try:
        panel_at(p, "ready")
        p.page.click('.kstep-live button[data-do="start"]')
        panel_at(p, "live", 0)
        assert "on x86-TSO, store buffers of 2" in p.js("m('kstep-header').text")
        assert "at most 2 per CPU (the scenario's store_buffer" in p.page.inner_text(".kstep-live-memory")
        expected = Session(MECH, NAME, VARIANT, memory_model="tso")
        same_buffers(p, expected, 0)
        for k, action in enumerate(unlocked, start=1):
            pick(p, action, k, expected)
        assert drawn(p.shown(SOURCE), 3)[0] == [("A->locked", "0")], "C0's unlock waits in CPU 0's buffer"
        assert offered(p) == [c["action"] for c in expected.view()["choices"]]
        button = p.page.locator('.kstep-live button[data-action="SB0:drain_store_buffer"]')
        assert button.inner_text() == "CPU 0 drains A->locked = 0 to memory"
        pick(p, "SB0:drain_store_buffer", UNLOCKED + 1, expected)
        assert drawn(p.shown(SOURCE), 3)[0] == [], "CPU 0's drawn buffer shrank"
        pick(p, "C1:queued_spin_lock", UNLOCKED + 2, expected)

        slide_to(p, UNLOCKED)  # back before the drain: the store drawn again, its drain offered again
        same_buffers(p, expected, UNLOCKED)
        assert offered(p) == [c["action"] for c in expected.view(UNLOCKED)["choices"]]
        pick(p, "C1:queued_spin_lock", UNLOCKED + 1, expected)  # the run branches: C1 runs, the store still waits
        assert drawn(p.shown(SOURCE), 3)[0] == [("A->locked", "0")]
        assert f"step {UNLOCKED + 1} / {UNLOCKED + 1}" in p.status()
        schedule = p.page.inner_text(".kstep-live-schedule")
        assert schedule == expected.schedule() == " ".join(unlocked + ["C1:queued_spin_lock"])
        ex = experiment.open(MECH, NAME, VARIANT).under("tso")
        assert simulate(ex.model, ex.start, Scripted(schedule), max_steps=UNLOCKED + 1).states == expected.states
        p.check_clean()
    finally:
        p.close()
