"""Interactive scheduling in a real browser: Chromium, a page served by ``kstep serve`` on 127.0.0.1,
kstep's Python running in Pyodide from the page's own static folder, and nothing else reachable.

A student opens the munmap-vs-fault scenario's page (its recorded run is 6.12's), picks the
``free-immediately`` kernel, picks the actor of every step, reads why the others cannot move, and
races the munmap into the use-after-free; the player
shows each of their steps (status line, board) exactly as the Python Session computes it.  Pyodide
takes seconds to start: every wait is on a state of the page, with a generous limit, never a sleep.
"""

import re
import subprocess
import sys

import pytest

from browser import Opened
from kstep.engine import Scripted, scenario, simulate
from kstep.models import make_model
from kstep.views import live
from kstep.views.interactive import Session

pytestmark = pytest.mark.browser

UAF_SCHEDULE = ["T1", "T1"] + ["W"] * 9 + ["T1"]  # the student's choices, one actor per step
BRANCH = ["T1", "T1"] + ["W"] * 5  # from step 2: T1 read-locks VMA B first, and W's unmap must wait
BOOT_MS = 180_000  # Pyodide's first start on a loaded 2-core machine: compiling 10 MB of WebAssembly
STEP_MS = 30_000


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """munmap-vs-fault's page as the course has it (its scripted run on 6.12), with interactive mode's files."""
    folder = tmp_path_factory.mktemp("live")
    model = make_model("vma-locks")
    sc = scenario.load("vma-locks", model.scenario_schema, "munmap-vs-fault")
    trace = simulate(model, model.initial(sc.config), Scripted(sc.schedule), scenario=sc.name, config=sc.config)
    live.write_page(folder, trace, model, about=sc)
    return folder


@pytest.fixture(scope="module")
def origin(site):
    proc = subprocess.Popen([sys.executable, "-m", "kstep", "serve", str(site), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def html(text):
    """``text`` as the page writes it into HTML (interactive.js's and player.js's esc)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def panel_at(p, state, step=None):
    where = f'.kstep-live[data-state="{state}"]' + ("" if step is None else f'[data-step="{step}"]')
    p.page.wait_for_selector(where, timeout=BOOT_MS if state == "live" and step == 0 else STEP_MS)


def test_a_student_schedules_the_munmap_race_into_the_use_after_free_offline(browser, origin):
    p = Opened(browser, origin + "/index.html", origin=origin)
    try:
        panel_at(p, "ready")
        p.page.select_option('.kstep-live select[data-do="variant"]', "free-immediately")
        p.page.click('.kstep-live button[data-do="start"]')
        panel_at(p, "live", 0)
        assert p.js("m('kstep-plot-timeline').visible") is False  # the recorded run's chart is not this run
        assert "broken variant free-immediately" in p.js("m('kstep-header').text")
        expected = Session("vma-locks", "munmap-vs-fault", "free-immediately")
        for k, actor in enumerate(UAF_SCHEDULE, start=1):
            p.page.click(f'.kstep-live button[data-action^="{actor}:"]')
            panel_at(p, "live", k)
            view = expected.step(actor)
            assert f"step {k} / {k}" in p.status() and view["label"] in p.status()
            assert html(view["what"]) in p.status(), f"step {k}: the step's text under free-immediately"
            for name, rows in view["board"].items():
                col = "head" if "head" in rows else "text"
                assert p.shown(name)[col] == rows[col], f"step {k}: {name}"
        found = p.page.locator('.kstep-live [data-found="no-use-after-free"]')
        assert "You found it" in found.inner_text() and "freed" in found.inner_text()
        assert p.page.locator(".kstep-live button[data-action]").count() == 0  # the run is over
        assert "no-use-after-free" in p.js("m('kstep-banner').text") and p.js("m('kstep-banner').visible")

        p.page.click('.kstep-live button[data-do="back"]')  # step back: the free happened, the read not yet
        panel_at(p, "live", 11)
        assert p.page.locator(".kstep-live [data-found]").count() == 0

        # Branch: slide back to step 2 and let T1 take VMA B's read lock before W unmaps it.
        p.js("m('kstep-slider').value = 2")
        p.wait("m('kstep-slider').value === 2")
        for k, actor in enumerate(BRANCH, start=3):
            p.page.click(f'.kstep-live button[data-action^="{actor}:"]')
            panel_at(p, "live", k)
        waiting = p.page.inner_text('.kstep-live li[data-actor="W"]')  # W cannot move, and the page says why
        assert "W cannot run: blocked at rwsem_try_write_lock: waits for the lock of VMA 1 (held for read by T1)" \
            in waiting
        assert p.page.locator('.kstep-live button[data-action^="W:"]').count() == 0
        assert p.page.inner_text(".kstep-live-schedule").startswith("T1:rcu_read_lock T1:mas_walk T1:vma_start_read")

        p.page.select_option('.kstep-live select[data-do="variant"]', "v6.12")  # another kernel: a new run
        panel_at(p, "live", 0)
        assert p.page.locator('.kstep-live select[data-do="variant"]').input_value() == "v6.12"
        assert "step 0 / 0" in p.status()
        p.check_clean()
    finally:
        p.close()


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
