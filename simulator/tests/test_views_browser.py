"""The animations in a real browser: Debian's Chromium, headless, driven by Playwright, offline.

Every page is opened from file:// with every http(s) request aborted and counted (there must be
none), page errors and console errors collected (there must be none but the known harmless ones),
and the controls clicked the way a student would.  What is on screen is checked against what the
view computed in Python for that frame.
"""

import hashlib
import os
import re
from pathlib import Path

import pytest

from kstep import views
from kstep.engine import Random, Scripted, explore, scenario, simulate
from kstep.models import make_model
from kstep.views.player import Frames

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
# Console messages known to be harmless (see shared/reference/viz-stack.md): pydata-sphinx-theme's
# one line when a page is embedded in the course site.
HARMLESS = (re.compile(r"invalid theme mode"),)
READY = ("() => window.Bokeh !== undefined && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle"
         " && Bokeh.documents[0].get_model_by_name('kstep-slider') !== null")
MODEL = "(name) => Bokeh.documents[0].get_model_by_name(name)"
VIEW = "(name) => Bokeh.index.query_one((v) => v.model === Bokeh.documents[0].get_model_by_name(name))"
# Two animation frames: BokehJS paints on the next one, so after this the screen shows the model.
PAINTED = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-system (Debian package chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright gives the browser a fresh temporary profile itself.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


class Opened:
    """A page opened offline, with what it tried to fetch and what went wrong on it."""

    def __init__(self, browser, path: Path):
        self.context = browser.new_context(viewport={"width": 1280, "height": 1000})
        self.requests: list[str] = []
        self.problems: list[str] = []
        self.context.route(re.compile(r"^https?://"), self._abort)
        self.context.clock.install()  # time runs as usual until a test stops it (stopped_clock)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("console", self._console)
        self.page.goto(path.as_uri())
        self.page.wait_for_function(READY, timeout=30_000)

    def _abort(self, route):
        self.requests.append(route.request.url)
        route.abort()

    def _console(self, msg):
        if msg.type in ("error", "warning") and not any(p.search(msg.text) for p in HARMLESS):
            self.problems.append(f"console {msg.type}: {msg.text}")

    def js(self, expr, arg=None):
        """Evaluate ``expr`` with ``m(name)`` returning the named Bokeh model."""
        return self.page.evaluate(f"(arg) => {{ const m = {MODEL}; return {expr}; }}", arg)

    @property
    def frame(self) -> int:
        return self.js("m('kstep-slider').value")

    def status(self) -> str:
        return self.js("[].concat(m('kstep-status').html).join('')")

    def click(self, text):
        self.page.locator("button.bk-btn", has_text=text).click()

    def toggle(self):
        """The play/pause button element as it is in the page now."""
        return self.page.evaluate_handle(f"() => ({VIEW})('kstep-play').button_el")

    def wait_frame(self, condition):
        """Wait until the slider's value satisfies ``condition`` (a JS expression in ``k``)."""
        self.page.wait_for_function(f"() => {{ const k = ({MODEL})('kstep-slider').value; return {condition}; }}",
                                    timeout=30_000)

    def playing(self) -> bool:
        """The player's own timer is running (player.js keeps its state on the slider model)."""
        return self.js("m('kstep-slider').__kstep.timer !== null")

    def stop_clock(self):
        """Stop the page's clock (Date, performance.now, requestAnimationFrame): playback then moves
        only by ``run_for``, so what a test sees mid-play does not depend on the machine's load."""
        self.page.clock.pause_at(self.js("Date.now()") + 1)

    def run_for(self, ms):
        self.page.clock.run_for(ms)

    def shown(self, source):
        """The display source's columns as BokehJS holds them now."""
        return self.js("Object.fromEntries(Object.entries(m('kstep-src-' + arg).data)"
                       ".map(([c, v]) => [c, Array.from(v)]))", source)

    def picture(self, name):
        """A digest of a screenshot of the named Bokeh model's element: what the student sees of it."""
        el = self.page.evaluate_handle(
            "(name) => { const m = Bokeh.documents[0].get_model_by_name(name);"
            " return Bokeh.index.query_one((v) => v.model === m).el; }", name)
        self.page.evaluate(PAINTED)
        return hashlib.sha256(el.screenshot()).hexdigest()

    def check_clean(self):
        assert self.problems == []
        assert self.requests == [], "an offline page must not request anything"

    def close(self):
        self.context.close()


def assert_on_screen(opened, lay, k):
    for name, cols in Frames(lay)(k).items():
        shown = opened.shown(name)
        for col, values in cols.items():
            assert shown[col] == pytest.approx(values) if values and isinstance(values[0], float) \
                else shown[col] == values, f"frame {k}: {name}.{col}"


def trace_of(mech, name, variant=None):
    model = make_model(mech, variant)
    sc = scenario.load(mech, model.scenario_schema, name)
    sched = Scripted(sc.schedule) if sc.schedule else Random(1)
    return simulate(model, model.initial(sc.config), sched, scenario=sc.name, config=sc.config), model


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The exported animations the tests open: (trace, model, layout, path) by key."""
    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for key, (mech, name) in {"rcu": ("rcu", "grace-period-basics"), "vma": ("vma-locks", "munmap-vs-fault"),
                              "qspinlock": ("qspinlock", "three-waiters")}.items():
        trace, model = trace_of(mech, name)
        path = folder / f"{key}.html"
        views.save_html(trace, model, path)
        out[key] = (trace, model, views.layout(trace, model), path)
    return out


def play_step_back_reset(browser, trace, model, lay, path):
    n = len(trace)
    p = Opened(browser, path)
    try:
        assert p.frame == 0
        status0 = p.status()
        assert f"step 0 / {n}" in status0
        assert_on_screen(p, lay, 0)
        board0 = p.picture("kstep-plot-state")

        p.page.locator("select").select_option(label="4 steps/s")
        p.stop_clock()
        button = p.toggle()
        button.click()
        p.run_for(1000)
        assert p.frame == 4 and p.js("m('kstep-play').active") and p.playing()
        button.click()  # the element clicked to play is the one there to pause: never re-created
        assert not p.js("m('kstep-play').active") and not p.playing(), "pause must stop the timer"
        stopped = p.frame
        p.run_for(1000)
        assert p.frame == stopped == 4, "pause must stop the timer"
        p.page.clock.resume()
        assert_on_screen(p, lay, stopped)
        if Frames(lay)(stopped) != Frames(lay)(0):
            assert p.picture("kstep-plot-state") != board0, "playing must redraw the state"

        at = min(stopped, n - 1)
        p.js("m('kstep-slider').value = arg", at)  # dragging the slider shows that frame
        p.page.wait_for_function(f"() => [].concat(({MODEL})('kstep-status').html).join('').includes('step {at} / {n}')")
        p.click("Step")
        p.page.wait_for_function(f"() => ({MODEL})('kstep-slider').value === {at + 1}")
        action = trace.actions[at]
        status = p.status()
        assert f"step {at + 1} / {n}" in status and action.actor in status and action.label in status
        assert str(model.sources()[action.label]) in status
        assert_on_screen(p, lay, at + 1)
        p.click("Back")
        p.page.wait_for_function(f"() => ({MODEL})('kstep-slider').value === {at}")
        assert_on_screen(p, lay, at)
        p.click("Reset")
        p.page.wait_for_function(f"() => ({MODEL})('kstep-slider').value === 0")
        assert p.status() == status0
        assert_on_screen(p, lay, 0)
        assert p.picture("kstep-plot-state") == board0, "reset must redraw the initial state"

        assert not p.js("m('kstep-banner').visible")
        p.page.locator("select").select_option(label="1000 steps/s")
        p.toggle().click()
        p.page.wait_for_function(f"() => ({MODEL})('kstep-slider').value === {n} && !({MODEL})('kstep-play').active",
                                 timeout=30_000)
        assert p.js("m('kstep-banner').visible"), "the end of the run shows its outcome"
        assert_on_screen(p, lay, n)
        p.check_clean()
    finally:
        p.close()


def test_rcu_page_plays_pauses_steps_back_and_resets_offline(browser, pages):
    play_step_back_reset(browser, *pages["rcu"])


def test_vma_page_plays_pauses_steps_back_and_resets_offline(browser, pages):
    play_step_back_reset(browser, *pages["vma"])


def test_qspinlock_page_plays_pauses_steps_back_and_resets_offline(browser, pages):
    """The lock word's bits, the MCS nodes and their next arrows, the queue: every frame source the
    qspinlock view ships is on screen exactly as Python computed it, with no request and no error."""
    play_step_back_reset(browser, *pages["qspinlock"])


def test_the_play_pause_button_is_one_element_that_keeps_the_keyboard_focus(browser, pages):
    """Playing and pausing change the toggle's state, never its element: the button a user (or
    Playwright) is about to click is the one that was there, and it keeps the keyboard focus, so
    Space pauses what Space started."""
    trace, model, lay, path = pages["vma"]
    p = Opened(browser, path)
    try:
        button = p.toggle()
        same = "(el) => el === ({VIEW})('kstep-play').button_el && el.isConnected".replace("{VIEW}", VIEW)
        visible = "(el) => [...el.querySelectorAll('span')].filter((s) => getComputedStyle(s).display !== 'none')" \
                  ".map((s) => s.textContent).join('')"
        assert button.evaluate(visible) == "▶ Play"
        p.page.locator("select").select_option(label="2 steps/s")
        p.stop_clock()
        button.focus()
        p.page.keyboard.press("Space")
        p.run_for(1000)
        assert p.frame == 2 and p.playing() and button.evaluate(same), "playing replaced the button"
        assert button.evaluate("(el) => el.getRootNode().activeElement === el"), "playing took the focus away"
        assert button.evaluate(visible) == "▮▮ Pause"
        p.page.keyboard.press("Space")
        assert not p.playing() and not p.js("m('kstep-play').active")
        assert button.evaluate(same) and button.evaluate(visible) == "▶ Play"
        p.page.clock.resume()
        p.page.locator("select").select_option(label="1000 steps/s")
        button.click()
        p.wait_frame(f"k === {len(trace)}")
        p.page.wait_for_function(f"() => !({MODEL})('kstep-play').active")
        assert button.evaluate(same), "the end of the run replaced the button"
        p.check_clean()
    finally:
        p.close()


def test_every_frame_on_screen_is_the_frame_python_computed(browser, pages):
    trace, model, lay, path = pages["vma"]
    p = Opened(browser, path)
    try:
        for k in list(range(len(trace) + 1)) + [3, 0]:
            p.js("m('kstep-slider').value = arg", k)
            p.page.wait_for_function(f"() => [].concat(({MODEL})('kstep-status').html).join('').includes('step {k} / ')")
            assert_on_screen(p, lay, k)
            cursor = p.js("[m('kstep-plot-timeline-cursor').left, m('kstep-plot-timeline-cursor').right]")
            assert cursor == [k, k + 1]
        p.check_clean()
    finally:
        p.close()


def test_a_counterexample_ends_with_the_violated_invariant_in_view(browser, tmp_path):
    model = make_model("vma-locks", "free-immediately")
    sc = scenario.load("vma-locks", model.scenario_schema, "munmap-vs-fault")
    trace = explore(model, model.initial(sc.config), scenario=sc.name, config=sc.config).counterexample
    path = tmp_path / "cex.html"
    views.save_html(trace, model, path)
    p = Opened(browser, path)
    try:
        banner = p.page.locator(".kstep-banner")
        assert not banner.is_visible()
        p.js("m('kstep-slider').value = m('kstep-slider').end")
        banner.wait_for(state="visible")
        text = banner.inner_text()
        assert trace.violation.invariant in text and trace.violation.message in text
        p.check_clean()
    finally:
        p.close()


@pytest.mark.slow
def test_course_index_and_every_page_it_links_load_offline(browser, tmp_path):
    from kstep.views import course

    index = course.build(tmp_path / "course", say=lambda line: None)
    assert sorted(p.name for p in (tmp_path / "course" / "static" / "js").iterdir()) == \
        ["bokeh-widgets.min.js", "bokeh.min.js"]
    context = browser.new_context()
    requests = []
    context.route(re.compile(r"^https?://"), lambda route: (requests.append(route.request.url), route.abort()))
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(index.as_uri())
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    context.close()
    assert len(links) >= 5
    assert all(link.startswith("file://") for link in links)
    for link in links:
        p = Opened(browser, Path(link.removeprefix("file://")))
        try:
            assert p.js("m('kstep-slider').end") >= 1
            p.click("Step")
            p.wait_frame("k === 1")
            p.check_clean()
        finally:
            p.close()
    assert problems == [] and requests == []
