"""Interactive scheduling in a real browser: Chromium, a page served by ``kstep serve`` on 127.0.0.1,
kstep's Python running in Pyodide from the page's own static folder, and nothing else reachable.

A student opens the munmap-vs-fault scenario's page (its recorded run is 6.12's) and watches Python
and kstep load with a progress bar before clicking anything; picks the ``free-immediately`` kernel,
picks the actor of every step, reads why the others cannot move, and races the munmap into the
use-after-free; the player shows each of their steps (status line, board, timeline) exactly as the
Python Session computes it.  Sliding back to an earlier step offers that step's choices, and a pick
there branches the run as the model does; a refused pick is one line, and the panel stays usable.
These tests share the page (one Pyodide start), in this order.
On a page of four players (qspinlock, fork-batch and vma-locks, as a chapter holds several, and the
qspinlock chapter's x86-TSO counterexample), each player's boards, charts, code pane and call stack follow
the student's own steps, a chart's axis holds the student's run when it counts higher than the recorded
one, and under x86-TSO a store buffer's drain is a choice whose drawn buffer shrinks, and scrubbing back
branches as under sc.  Pyodide
takes seconds to start: every wait is on a state of the page, with a generous limit, never a sleep.
"""

import contextlib
import json
import re
import subprocess
import sys

import pytest
from bokeh.embed import components
from bokeh.resources import INLINE

from browser import Opened
import kstep
from kstep import experiment, views
from kstep.engine import Scripted, simulate
from kstep.views import code, columns, context, course, export, live
from kstep.views.interactive import Session
from test_store_buffers_view import SOURCE, drawn, held

pytestmark = pytest.mark.browser

UAF_SCHEDULE = ["T1", "T1"] + ["W"] * 10 + ["T1"]  # the student's choices, one actor per step
BRANCH = ["T1", "T1"] + ["W"] * 6  # from step 2: T1 read-locks VMA B first, and W's unmap must wait
BOOT_MS = 180_000  # Pyodide's first start on a loaded 2-core machine: compiling 10 MB of WebAssembly
STEP_MS = 30_000


def scripted_run():
    """munmap-vs-fault under its scripted schedule on 6.12: T1 faults on the VMA W unmaps and dies of it."""
    ex = kstep.open("vma-locks", "munmap-vs-fault")
    return ex.run(schedule=ex.scenario.schedule)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """munmap-vs-fault's page as the course has it (its scripted run on 6.12), with interactive mode's files."""
    folder = tmp_path_factory.mktemp("live")
    ex = kstep.open("vma-locks", "munmap-vs-fault")
    export.write_page(folder, scripted_run(), ex.model, about=ex.scenario)
    return folder


@contextlib.contextmanager
def served(folder):
    """``kstep serve folder`` on a free port of 127.0.0.1: its origin."""
    proc = subprocess.Popen([sys.executable, "-m", "kstep", "serve", str(folder), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def origin(site):
    with served(site) as url:
        yield url


# A pick rebuilds the panel: the focus goes back to one of its buttons, never to the top of the page.
FOCUS_STAYS = "() => document.activeElement !== null && document.activeElement.matches('.kstep-live button')"


def html(text):
    """``text`` as the page writes it into HTML (interactive.js's and player.js's esc)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def panel_at(p, state, step=None):
    where = f'.kstep-live[data-state="{state}"]' + ("" if step is None else f'[data-step="{step}"]')
    p.page.wait_for_selector(where, timeout=BOOT_MS if state == "live" and step == 0 else STEP_MS)


# Every state the panel's progress bar shows, as the page loads (before any script of the page runs).
WATCH_PROGRESS = """
window.kstep_progress = [];
new MutationObserver(() => {
  const bar = document.querySelector(".kstep-live-progress");
  const seen = window.kstep_progress, last = seen[seen.length - 1];
  const now = bar === null ? null : [Number(bar.getAttribute("aria-valuenow")), bar.textContent];
  if (now !== null && (last === undefined || last[1] !== now[1])) { seen.push(now); }
}).observe(document, {childList: true, subtree: true});
// When the page first asks for Python: how many of its Bokeh documents (its player) were built by then.
window.kstep_python_asked = null;
const fetch_first = window.fetch;
window.fetch = function (url, ...rest) {
  if (window.kstep_python_asked === null && String(url).includes("/pyodide/")) {
    window.kstep_python_asked = {built: window.Bokeh === undefined ? 0 : Bokeh.documents.length};
  }
  return fetch_first.call(this, url, ...rest);
};
"""


@pytest.fixture(scope="module")
def opened(browser, origin):
    """munmap-vs-fault's page, opened once for the tests that follow it (one Pyodide start)."""
    p = Opened(browser, origin + "/index.html", origin=origin, init=WATCH_PROGRESS)
    try:
        yield p
        p.check_clean()
    finally:
        p.close()


def test_python_loads_as_the_page_opens_and_the_panel_shows_how_far(opened):
    """Nobody clicks or scrolls: Pyodide and kstep start loading as the page opens, before BokehJS has
    even built the player, and the bar goes through the download (in MB) and the stages of starting,
    never backwards, and is gone when they are loaded."""
    p = opened
    assert p.page.evaluate("window.kstep_python_asked") == {"built": 0}
    p.page.wait_for_selector('.kstep-live[data-loaded="yes"]', timeout=BOOT_MS)
    assert p.page.locator(".kstep-live-progress").count() == 0
    seen = p.page.evaluate("window.kstep_progress")
    pcts = [pct for pct, _ in seen]
    assert pcts == sorted(pcts) and 0 <= pcts[0] < 20 <= pcts[-1] <= 100, seen
    texts = " | ".join(text for _, text in seen)
    for stage in ("downloading Python and kstep (", " MB)", "starting Python", "importing kstep's model"):
        assert stage in texts, f"no {stage!r} in {texts}"
    assert all(text.startswith("Loading Python and kstep: ") for _, text in seen)
    assert p.page.get_attribute(".kstep-live", "data-state") == "ready"  # still offering: nothing was clicked


def offered(p):
    """The actions the panel offers now, as its buttons carry them."""
    return p.page.eval_on_selector_all(".kstep-live button[data-action]", "(bs) => bs.map((b) => b.dataset.action)")


def slide_to(p, k):
    """Drag the player's slider to step k (as a student does); the panel follows it."""
    p.js(f"m('kstep-slider').value = {k}")
    panel_at(p, "live", k)


def new_run(p, variant):
    """A new run of the page's scenario under ``variant``, at step 0, whatever the panel showed."""
    p.page.select_option('.kstep-live select[data-do="variant"]', variant)  # under another kernel: a new run
    if p.page.locator('.kstep-live button[data-do="start"]').count():
        p.page.click('.kstep-live button[data-do="start"]')
    else:
        p.page.click('.kstep-live button[data-do="reset"]')  # the same kernel: start again
    panel_at(p, "live", 0)


def test_a_student_schedules_the_munmap_race_into_the_use_after_free_offline(opened):
    p = opened
    panel_at(p, "ready")
    new_run(p, "free-immediately")
    assert p.js("m('kstep-plot-timeline').visible") and p.shown("timeline-actions")["x"] == []  # none yet
    assert "broken variant free-immediately" in p.js("m('kstep-header').text")
    expected = Session("vma-locks", "munmap-vs-fault", "free-immediately")
    for k, actor in enumerate(UAF_SCHEDULE, start=1):
        p.page.click(f'.kstep-live button[data-action^="{actor}:"]')
        panel_at(p, "live", k)
        assert p.page.evaluate(FOCUS_STAYS), f"step {k}: the focus left the panel's buttons"
        view = expected.step(actor)
        assert f"step {k} / {k}" in p.status() and view["label"] in p.status()
        assert html(view["what"]) in p.status(), f"step {k}: the step's text under free-immediately"
        for name, rows in view["board"].items():
            col = "head" if "head" in rows else "text"
            assert p.shown(name)[col] == rows[col], f"step {k}: {name}"
        assert len(p.shown("timeline-actions")["x"]) == k, f"step {k}: a mark for each of the student's steps"
    found = p.page.locator('.kstep-live [data-found="no-use-after-free"]')
    assert "You found it" in found.inner_text() and "freed" in found.inner_text()
    assert p.page.locator(".kstep-live button[data-action]").count() == 0  # the run is over
    assert "no-use-after-free" in p.js("m('kstep-banner').text") and p.js("m('kstep-banner').visible")

    p.page.click('.kstep-live button[data-do="back"]')  # step back: the free happened, the read not yet
    panel_at(p, "live", len(UAF_SCHEDULE) - 1)
    assert p.page.locator(".kstep-live [data-found]").count() == 0

    # Branch: slide back to step 2 and let T1 take VMA B's read lock before W unmaps it.
    slide_to(p, 2)
    for k, actor in enumerate(BRANCH, start=3):
        p.page.click(f'.kstep-live button[data-action^="{actor}:"]')
        panel_at(p, "live", k)
    waiting = p.page.inner_text('.kstep-live li[data-actor="W"]')  # W cannot move, and the page says why
    assert "W cannot run: blocked at rwsem_try_write_lock: waits for VMA 1's lock (held for read by T1)" \
        in waiting
    assert p.page.locator('.kstep-live button[data-action^="W:"]').count() == 0
    assert p.page.inner_text(".kstep-live-schedule").startswith("T1:rcu_read_lock T1:mas_walk T1:vma_start_read")

    p.page.select_option('.kstep-live select[data-do="variant"]', "v6.12")  # another kernel: a new run
    panel_at(p, "live", 0)
    assert p.page.locator('.kstep-live select[data-do="variant"]').input_value() == "v6.12"
    assert "step 0 / 0" in p.status()
    # The scenario's own schedule on 6.12 ends with T1 killed by SIGSEGV: the page says how it died.
    for k, action in enumerate(scripted_run().actions, start=1):
        p.page.click(f'.kstep-live button[data-action="{action}"]')
        panel_at(p, "live", k)
    assert "T1 was killed by SIGSEGV" in p.js("m('kstep-banner').text") and p.js("m('kstep-banner').visible")
    assert "T1 (killed by SIGSEGV)" in p.page.inner_text(".kstep-live")
    p.check_clean()


def test_scrubbing_back_and_picking_another_thread_branches_the_run_as_the_model_does(opened):
    """Four times: go on a few steps, slide back to an earlier step, and pick a thread other than the one
    that ran there.  The panel offers the choices of the step shown (the model's, computed here in
    Python), the pick branches the run there, and the run the page ends with is the model's own."""
    p = opened
    new_run(p, "v6.12")
    expected = Session("vma-locks", "munmap-vs-fault")
    for forward, back in ((6, 2), (5, 4), (4, 1), (6, 5)):
        for _ in range(forward):
            k = len(expected.actions)
            choices = [c["action"] for c in expected.view()["choices"]]
            assert offered(p) == choices, f"step {k}: the choices of the step shown"
            action = choices[k % len(choices)]
            p.page.click(f'.kstep-live button[data-action="{action}"]')
            expected.step(action)
            panel_at(p, "live", k + 1)
        took = str(expected.actions[back])
        slide_to(p, back)
        choices = [c["action"] for c in expected.view(back)["choices"]]
        assert offered(p) == choices, f"back at step {back}: the choices of step {back}, not of the run's end"
        assert f"back at step {back} of your {len(expected.actions)}" in p.page.inner_text(".kstep-live")
        other = next(c for c in choices if c != took)
        p.page.click(f'.kstep-live button[data-action="{other}"]')
        expected.step(other, at=back)
        panel_at(p, "live", back + 1)
        assert p.page.inner_text(".kstep-live-schedule") == expected.schedule()
        assert f"step {back + 1} / {back + 1}" in p.status(), "the later steps are gone from the player"
    for _ in range(8):
        k = len(expected.actions)
        action = expected.view()["choices"][0]["action"]
        p.page.click(f'.kstep-live button[data-action="{action}"]')
        expected.step(action)
        panel_at(p, "live", k + 1)
    assert p.page.locator(".kstep-live[data-error]").count() == 0
    # The page's run is the model's: its schedule replays, in this Python, to the states the session holds.
    schedule = p.page.inner_text(".kstep-live-schedule")
    replay = kstep.open("vma-locks", "munmap-vs-fault").run(schedule=schedule, max_steps=len(schedule.split()))
    assert replay.states == expected.states and len(expected.states) > 10
    for name, rows in expected.view()["board"].items():
        col = "head" if "head" in rows else "text"
        assert p.shown(name)[col] == rows[col], name


def test_a_refused_choice_says_why_in_one_line_and_the_panel_stays_usable(opened):
    """A choice the model refuses (here a forged button) is a Python exception in the page: the panel
    keeps its choices and says why in one line, with no traceback, and the next pick works."""
    p = opened
    p.page.click('.kstep-live button[data-do="reset"]')
    panel_at(p, "live", 0)
    p.page.eval_on_selector(".kstep-live button[data-action]", "(b) => { b.dataset.action = 'W:vm_area_free'; }")
    p.page.click('.kstep-live button[data-action="W:vm_area_free"]')
    p.page.wait_for_selector(".kstep-live[data-error]", timeout=STEP_MS)
    error = p.page.inner_text(".kstep-live-error")
    assert error.startswith("W:vm_area_free is not an enabled action here (enabled: ") and "\n" not in error
    assert "Traceback" not in p.page.inner_text(".kstep-live")
    assert p.page.get_attribute(".kstep-live", "data-state") == "live"
    p.page.click('.kstep-live button[data-action^="T1:"]')
    panel_at(p, "live", 1)
    assert p.page.locator(".kstep-live[data-error]").count() == 0


def test_from_file_the_page_plays_its_recorded_run_and_says_how_to_schedule_it(browser, site):
    p = Opened(browser, site / "index.html")
    try:
        panel_at(p, "file")
        assert "kstep serve" in p.page.inner_text(".kstep-live")
        p.click("Step")
        p.wait("m('kstep-slider').value === 1")
        p.check_clean()
    finally:
        p.close()


# --- a page of four players: qspinlock, fork-batch, vma-locks, and qspinlock under x86-TSO -------------------------

LAB = (("qspinlock", "pending-path"), ("fork-batch", "batch-ends"), ("vma-locks", "munmap-vs-fault"))
TSO = ("qspinlock", "two-waiters", "head-ignores-pending")  # the qspinlock chapter's x86-TSO player


def tso_counterexample():
    """The explorer's shortest run of head-ignores-pending under x86-TSO, which the chapter plays."""
    ex = experiment.open(*TSO).under("tso")
    return ex.explore().counterexample, ex.model
PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kstep lab</title>{bokeh}</head>
<body>{divs}{scripts}<script src="_static/kstep/interactive.js" defer></script></body></html>"""


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory):
    """The players' page, served and opened once: one Pyodide serves every player (and every test)."""
    folder = tmp_path_factory.mktemp("lab")
    parts = []
    runs = [(model, trace) for model, _, trace in (course.scripted_run(mech, name) for mech, name in LAB)]
    runs.append(tso_counterexample()[::-1])
    for model, trace in runs:
        lay = views.layout(trace, model)
        live.enable(lay, trace, model)
        parts.append(components(lay))
    (folder / "index.html").write_text(PAGE.format(bokeh=INLINE.render(), divs="".join(d for _, d in parts),
                                                   scripts="".join(s for s, _ in parts)))
    live.install(folder / "_static")
    with served(folder) as url:
        p = Opened(browser, url + "/index.html", origin=url)
        try:
            yield p
            p.check_clean()
        finally:
            p.close()


def start(p, mech, memory="sc"):
    """Start scheduling the player of ``mech`` (under ``memory``) by hand; the Session the page runs, in
    this Python."""
    doc = p.page.evaluate("([mech, tso]) => { const g = (o, k) => o instanceof Map ? o.get(k) : o[k];"
                          " return Bokeh.documents.findIndex((d) => { const live = g(g(d.get_model_by_name("
                          "'kstep-player').args, 'kstep'), 'live'); return g(live, 'mechanism') === mech &&"
                          " (g(live, 'memory_model') !== null) === tso; }); }", [mech, memory == "tso"])
    assert doc >= 0, mech
    p.use(doc)
    panel = f'.kstep-live[data-mechanism="{mech}"][data-memory="{memory}"]'
    # ready: Pyodide and kstep loaded, which the page starts on opening (as long as a first boot)
    p.page.wait_for_selector(panel + '[data-state="ready"]', timeout=BOOT_MS)
    p.page.click(panel + ' button[data-do="start"]')
    p.page.wait_for_selector(panel + '[data-state="live"][data-step="0"]', timeout=BOOT_MS)
    if memory == "tso":
        return panel, Session(*TSO, memory_model="tso")
    name = dict(LAB)[mech]
    model = kstep.open(mech, name).model
    return panel, Session(mech, name, calls=json.dumps(context.call_pairs(model, code.calls)))


def take(p, panel, session, actor, k):
    """Click ``actor``'s step, wait for the page to show step k; the Session's view of the same step."""
    p.page.click(f'{panel} button[data-action^="{actor}:"]')
    p.page.wait_for_selector(f'{panel}[data-state="live"][data-step="{k}"]', timeout=STEP_MS)
    return session.step(actor)


def shown_frame(session, name, k):
    """Frame k of source ``name`` as the Session's columns of the whole run so far give it."""
    cols = session.columns()
    return columns.decode(cols["board"][name], cols["strings"], k)


def test_a_qspinlock_step_redraws_the_lock_word_its_chart_grows_and_the_code_pane_follows(lab):
    p = lab
    panel, s = start(p, "qspinlock")
    assert p.js("m('kstep-plot-timeline').visible") and p.js("m('kstep-plot-counters').visible")
    wheres = set()
    for k, actor in enumerate(["C0", "C1", "C1", "C0", "C0", "C1"], start=1):
        view = take(p, panel, s, actor, k)
        rows = view["board"]
        for name in ("bits", "word-head", "fields", "transitions", "contexts", "queue"):
            col = next(c for c in ("bit", "text", "head") if c in rows[name])
            assert p.shown(name)[col] == rows[name][col], f"step {k}: {name}"
        assert p.shown("bits")["line"] == rows["bits"]["line"], f"step {k}: the bits this step changed"
        # The charts are the student's run so far: a mark per step, the counters' values, a page as long.
        assert len(p.shown("timeline-actions")["x"]) == k
        assert p.shown("counters")["value"] == shown_frame(s, "counters", k)["value"]
        assert p.shown("timeline-phases")["left"] == shown_frame(s, "timeline-phases", k)["left"]
        assert p.js("m('kstep-x-timeline').end") == k + 1
        # The code pane shows the function of this very step, its lines marked; the status its call stack.
        pane = p.js("[].concat(m('kstep-code').html).join('')")
        shows = re.search(r'class="kstep-code-where">([^<]*)', pane).group(1)
        assert shows.startswith(view["where"]), f"step {k}: the code pane shows {shows}"
        if " in Linux " in shows:  # a kernel step (not the lock's caller): its call stack is on the status line
            wheres.add(view["where"])
            cols = s.columns()
            line = cols["strings"][cols["stack"][k]]
            assert line and html(line) in p.status(), f"step {k}: the call stack {line!r}"
    assert len(wheres) > 1, "the steps ran in more than one kernel function: the pane followed them"
    assert sum(shown_frame(s, "counters", 6)["value"]) > 0, "a counter moved on the student's run"


def test_a_fork_batch_step_redraws_both_page_tables_and_the_threads(lab):
    p = lab
    panel, s = start(p, "fork-batch")
    before = p.shown("pt-parent-copying")
    for k in range(1, 9):
        actor = s.view()["choices"][0]["actor"]
        view = take(p, panel, s, actor, k)
        for name, rows in view["board"].items():
            for col, want in rows.items():
                if isinstance(want[0] if want else "", str):
                    assert p.shown(name)[col] == want, f"step {k}: {name}.{col}"
                else:
                    assert p.shown(name)[col] == pytest.approx(want, abs=1e-5), f"step {k}: {name}.{col}"
        assert len(p.shown("timeline-actions")["x"]) == k
    assert p.shown("pt-parent-copying") != before or p.shown("pt-child-copies")["x"], "the copy moved"


def test_a_run_that_counts_past_the_recorded_one_widens_the_counters_axis(lab):
    """The recorded munmap-vs-fault run counts one event at most; a student who lets T1 and then T2
    fault to the end counts two vma_lock_success: the axis grows to hold the bar (recorded: 1.15)."""
    p = lab
    panel, s = start(p, "vma-locks")
    recorded = p.js("m('kstep-x-counters').end")
    k = 0
    for actor in ("T1", "T2"):
        while any(c["actor"] == actor for c in s.view()["choices"]):
            k += 1
            take(p, panel, s, actor, k)
    top = max(shown_frame(s, "counters", k)["value"])
    assert top * 1.15 > recorded, "the student's run counts past the recorded one"
    assert p.shown("counters")["value"] == shown_frame(s, "counters", k)["value"]
    assert p.js("m('kstep-x-counters').end") == pytest.approx(top * 1.15)


def test_under_tso_a_drain_shrinks_the_drawn_buffer_and_scrubbing_back_branches(lab):
    """The qspinlock chapter's x86-TSO player scheduled by hand: the student follows the explorer's run
    until C0's unlock waits in CPU 0's store buffer, picks CPU 0's drain (its button names the store as
    the panel draws it) and sees the drawn buffer shrink; lets C1 lock; then scrubs back to before the
    drain, where the store is drawn again, and branches: C1 runs with the store still waiting, and the
    page's run is the model's.  At every step the store-buffer panel draws what the Session's state holds
    (test_store_buffers_view's ``drawn`` and ``held``); that the whole counterexample is a sequence of
    choices the panel offers, test_interactive_tso.py checks on the same Session.  The status line gives each
    step's call stack, and a drain's store buffer and store."""
    p = lab
    trace, _ = tso_counterexample()
    unlocked = [str(a) for a in trace.actions[:3]]  # C0 locks, runs its critical section and unlocks
    assert unlocked[-1] == "C0:queued_spin_unlock"
    panel, expected = start(p, "qspinlock", "tso")
    assert "on x86-TSO, store buffers of 2" in p.js("m('kstep-header').text")
    assert "at most 2 per CPU (the scenario's store_buffer" in p.page.inner_text(panel + " .kstep-live-memory")

    def offered_here():
        return p.page.eval_on_selector_all(panel + " button[data-action]", "(bs) => bs.map((b) => b.dataset.action)")

    def buffers():
        return drawn(p.shown(SOURCE), len(expected.states[0][-1]))

    def pick(action, k):
        p.page.click(f'{panel} button[data-action="{action}"]')
        p.page.wait_for_selector(f'{panel}[data-state="live"][data-step="{k}"]', timeout=STEP_MS)
        expected.step(action, at=None if k - 1 == len(expected.actions) else k - 1)
        assert buffers() == held(expected.model, expected.states[k]), f"step {k}"
        assert offered_here() == [c["action"] for c in expected.view()["choices"]], f"step {k}"

    assert buffers() == held(expected.model, expected.states[0])
    for k, action in enumerate(unlocked, start=1):
        pick(action, k)
    assert buffers()[0] == [("A->locked", "0")], "C0's unlock waits in CPU 0's buffer"
    assert '<div class="kstep-stack">queued_spin_unlock</div>' in p.status()  # the step's call stack, as under sc
    drain = p.page.locator(f'{panel} button[data-action="SB0:drain_store_buffer"]')
    assert drain.inner_text() == "CPU 0 drains A->locked = 0 to memory"
    pick("SB0:drain_store_buffer", 4)
    assert buffers()[0] == [], "CPU 0's drawn buffer shrank"
    assert '<div class="kstep-stack">store buffer of CPU0 drains A-&gt;locked = 0</div>' in p.status()
    pick("C1:queued_spin_lock", 5)

    p.js("m('kstep-slider').value = 3")  # back before the drain: the store drawn again, its drain offered again
    p.page.wait_for_selector(f'{panel}[data-state="live"][data-step="3"]', timeout=STEP_MS)
    assert buffers() == held(expected.model, expected.states[3])
    assert offered_here() == [c["action"] for c in expected.view(3)["choices"]]
    pick("C1:queued_spin_lock", 4)  # the run branches: C1 runs, the store still waits
    assert buffers()[0] == [("A->locked", "0")] and "step 4 / 4" in p.status()
    schedule = p.page.inner_text(panel + " .kstep-live-schedule")
    assert schedule == expected.schedule() == " ".join(unlocked + ["C1:queued_spin_lock"])
    ex = experiment.open(*TSO).under("tso")
    assert simulate(ex.model, ex.start, Scripted(schedule), max_steps=4).states == expected.states
