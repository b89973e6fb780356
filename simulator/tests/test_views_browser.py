"""The animations in a real browser: Debian's Chromium, headless, driven by Playwright, offline.

Every page is opened from file:// with every http(s) request aborted and counted (there must be
none), page errors and console errors and warnings collected (there must be none),
and the controls clicked the way a student would.  What is on screen is checked against what the
view computed in Python for that frame.
"""

import pytest

from browser import Opened
import kstep
from kstep import views
from kstep.source import excerpts
from kstep.models import MODELS
from kstep.views import code
from kstep.views.player import Frames

pytestmark = pytest.mark.browser


def assert_on_screen(opened, lay, k):
    for name, cols in Frames(lay)(k).items():
        shown = opened.shown(name)
        for col, values in cols.items():
            assert shown[col] == pytest.approx(values) if values and isinstance(values[0], float) \
                else shown[col] == values, f"frame {k}: {name}.{col}"


def trace_of(mech, name, variant=None):
    ex = kstep.open(mech, name, variant or MODELS[mech].default_variant)
    schedule = ex.scenario.schedule
    return (ex.run(schedule=schedule) if schedule else ex.run(seed=1)), ex.model


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The exported animations the tests open: (trace, model, layout, path) by key."""
    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for key, (mech, name) in {"rcu": ("rcu", "grace-period-basics"), "vma": ("vma-locks", "munmap-vs-fault"),
                              "qspinlock": ("qspinlock", "three-waiters"),
                              "fork": ("fork-batch", "contpte-arm64")}.items():
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

        # The page's clock stands still while the player plays: it moves 1 s, then Pause is clicked, so
        # Pause lands mid-run however loaded the machine is.
        p.speed("4 steps/s")
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
        p.resume_clock()
        assert_on_screen(p, lay, stopped)
        if Frames(lay)(stopped) != Frames(lay)(0):
            assert p.picture("kstep-plot-state") != board0, "playing must redraw the state"

        at = min(stopped, n - 1)
        p.js("m('kstep-slider').value = arg", at)  # dragging the slider shows that frame
        p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {at} / {n}')")
        p.click("Step")
        p.wait(f"m('kstep-slider').value === {at + 1}")
        action = trace.actions[at]
        status = p.status()
        assert f"step {at + 1} / {n}" in status and action.actor in status and action.label in status
        assert str(model.sources()[action.label]) in status
        assert_on_screen(p, lay, at + 1)
        p.click("Back")
        p.wait(f"m('kstep-slider').value === {at}")
        assert_on_screen(p, lay, at)
        p.click("Reset")
        p.wait("m('kstep-slider').value === 0")
        assert p.status() == status0
        assert_on_screen(p, lay, 0)
        assert p.picture("kstep-plot-state") == board0, "reset must redraw the initial state"

        assert not p.js("m('kstep-banner').visible")
        p.speed("1000 steps/s")
        p.click("Play")
        p.wait(f"m('kstep-slider').value === {n} && !m('kstep-play').active")
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
        same = ("(el) => el === Bokeh.index.query_one((v) => v.model === (" + p.model + ")('kstep-play')).button_el"
                " && el.isConnected")
        visible = "(el) => [...el.querySelectorAll('span')].filter((s) => getComputedStyle(s).display !== 'none')" \
                  ".map((s) => s.textContent).join('')"
        assert button.evaluate(visible) == "▶ Play"
        p.speed("2 steps/s")
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
        p.resume_clock()
        p.speed("1000 steps/s")
        button.click()
        p.wait(f"m('kstep-slider').value === {len(trace)} && !m('kstep-play').active", timeout=30_000)
        assert button.evaluate(same), "the end of the run replaced the button"
        p.check_clean()
    finally:
        p.close()


def test_fork_batch_page_plays_pauses_steps_back_and_resets_offline(browser, pages):
    """Both page-table grids, the outlines of copies, folded blocks and the batch in progress, and the
    counters: on screen as Python computed them, with no request and no error."""
    play_step_back_reset(browser, *pages["fork"])


def test_fork_batch_grids_stand_side_by_side_on_screen(browser, pages):
    """In a 1280-pixel window the parent's grid and the child's share one band of the page, parent
    on the left, neither overlapping the other nor running off the right edge."""
    p = Opened(browser, pages["fork"][3])
    try:
        parent, child = p.box("kstep-plot-pt-parent"), p.box("kstep-plot-pt-child")
        assert parent["y"] == child["y"] and parent["height"] == child["height"]
        assert parent["x"] + parent["width"] <= child["x"] and child["x"] + child["width"] <= 1280
        p.check_clean()
    finally:
        p.close()


def test_every_frame_on_screen_is_the_frame_python_computed(browser, pages):
    trace, model, lay, path = pages["vma"]
    p = Opened(browser, path)
    try:
        for k in list(range(len(trace) + 1)) + [3, 0]:
            p.js("m('kstep-slider').value = arg", k)
            p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {k} / ')")
            assert_on_screen(p, lay, k)
            cursor = p.js("[m('kstep-plot-timeline-cursor').left, m('kstep-plot-timeline-cursor').right]")
            assert cursor == [k, k + 1]
        p.check_clean()
    finally:
        p.close()


def test_plots_out_of_view_catch_up_when_playback_stops(browser, pages):
    """While playing, player.js updates only the plots on screen; pausing brings every plot, seen or
    not, to the frame the player stopped on."""
    trace, model, lay, path = pages["vma"]
    p = Opened(browser, path)
    try:
        p.wait("m('kstep-slider').__kstep.offscreen.size > 0")  # the vma page's lower plots, at 1280 x 1000
        p.stop_clock()
        p.js("m('kstep-play').active = true")
        p.run_for(20_100)  # 2 steps a second: frame 40, past the counters' first changes
        p.js("m('kstep-play').active = false")
        p.resume_clock()
        assert 0 < p.frame < len(trace)
        assert_on_screen(p, lay, p.frame)
        p.check_clean()
    finally:
        p.close()


def test_a_counterexample_ends_with_the_violated_invariant_in_view(browser, tmp_path):
    ex = kstep.open("vma-locks", "munmap-vs-fault", "free-immediately")
    trace, model = ex.explore().counterexample, ex.model
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


def test_the_code_pane_shows_each_steps_kernel_lines_and_links_to_them(browser, pages):
    """At each step the pane holds the 6.12.117 source of the step's function with the step's own lines
    marked, and the status line links to the first of them on Elixir (not to the top of the file);
    a run played to its end leaves the pane on its last step."""
    trace, model, lay, path = pages["vma"]
    n = len(trace)
    data = excerpts.load()["excerpts"]
    p = Opened(browser, path)
    try:
        for label, expected in (("vma_write_seq", ["WRITE_ONCE(vma->vm_lock_seq, mm_lock_seq);"]),
                                ("check_detached", ["if (vma->detached) {", "vma_end_read(vma);",
                                                    "count_vm_vma_lock_event(VMA_LOCK_MISS);", "goto retry;"])):
            k = next(k for k, a in enumerate(trace.actions, start=1) if a.label == label)
            where = model.sources()[label]
            p.js("m('kstep-slider').value = arg", k)
            p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {k} / {n}')")
            pane = p.root.locator(".kstep-code")
            assert f"{where} in Linux 6.12.117" in pane.locator(".kstep-code-where").inner_text()
            ex = data[str(where)]
            lines = ex["text"].split("\n")
            marked = code.marked_lines(label, where, lines)
            assert [lines[i].strip() for i in marked] == expected
            assert pane.locator(".kstep-marked").all_inner_texts() == [f"{ex['line'] + i}{lines[i]}" for i in marked]
            first = ex["line"] + marked[0]
            href = p.root.locator("a.kstep-where").get_attribute("href")
            assert href == f"https://elixir.bootlin.com/linux/v6.12.117/source/{where.path}#L{first}"
        # Playing leaves the pane alone (a note says so); where the run stops, it shows that step's code.
        p.speed("1000 steps/s")
        p.click("Play")
        p.wait(f"m('kstep-slider').value === {n} && !m('kstep-play').active")
        last = model.sources()[trace.actions[-1].label]
        assert f"{last} in Linux 6.12.117" in p.root.locator(".kstep-code-where").inner_text()
        p.check_clean()
    finally:
        p.close()


@pytest.mark.parametrize("key", ["rcu", "vma", "qspinlock"])
def test_charts_over_the_run_show_it_only_up_to_the_current_step(browser, pages, key):
    """Who did what, and how many callbacks wait, must not be readable ahead of the cursor: at step 0
    the run's future is blank, and each step uncovers exactly its own column."""
    trace, model, lay, path = pages[key]
    n = len(trace)
    charts = [name for name in ("kstep-plot-timeline", "kstep-plot-callbacks") if lay.select_one({"name": name})]
    p = Opened(browser, path)
    try:
        for k in (0, n // 2, n - 1):
            p.js("m('kstep-slider').value = arg", k)
            p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {k} / {n}')")
            for name in charts:
                assert p.ink(name, k + 1, n + 2) == 0, f"{name} shows steps after step {k}"
                assert p.ink(name, 0, k + 1) > 0, f"{name} shows nothing of steps 0..{k}"
        p.check_clean()
    finally:
        p.close()


@pytest.mark.parametrize("key", ["rcu", "vma", "qspinlock", "fork"])
def test_jumping_back_from_the_end_redraws_without_a_page_error(browser, pages, key):
    """Reset after a run has ended is a jump from the last frame to the first: every source that
    shrinks on the way must be redrawn without BokehJS throwing."""
    trace, model, lay, path = pages[key]
    n = len(trace)
    p = Opened(browser, path)
    try:
        for k in (n, 0, n // 2, n, 1):
            p.js("m('kstep-slider').value = arg", k)
            p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {k} / {n}')")
            assert_on_screen(p, lay, k)
        p.check_clean()
    finally:
        p.close()
