"""The player on every screen (issue 12, item 5; issue 21, section 2), the context of a step on screen (issue 12,
item 4) and the player from a keyboard and a screen reader (issue 21, section 3), in a real browser: one page,
opened once for the module, resized and driven from the keyboard.

Screenshots at the four widths are written to build/screenshots/ (make's output folder, never
committed) for a person to look at; what the tests assert is read from the page itself.
"""

from pathlib import Path

import pytest

from browser import PAINTED, SIDEWAYS, Opened, misfits, player_parts
import kstep
from kstep.views import code, predict, style
from kstep.views.call_stacks import call_stacks

pytestmark = pytest.mark.browser

# A 390-pixel phone, a JupyterLab pane, a laptop and a 1920-pixel projector (issue 21, section 2).
WIDTHS = {"phone": 390, "jupyterlab-pane": 800, "laptop": 1366, "projector": 1920}
SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


@pytest.fixture(scope="module")
def opened(browser, tmp_path_factory):
    """munmap-vs-fault's page (its late fault is killed by SIGSEGV), opened once, and its run."""
    ex = kstep.open("vma-locks", "munmap-vs-fault")
    trace, model = ex.run(schedule=ex.scenario.schedule), ex.model
    path = tmp_path_factory.mktemp("screens") / "vma.html"
    ex.save_html(trace, path)
    p = Opened(browser, path, viewport=(1024, 900), predict=True)
    yield p, trace, model
    p.check_clean()
    p.close()


BOARD_HEIGHT = 590  # vma_lock.py's board, as designed
# The sizes in pixels of the type the board's canvas draws (its texts' font sizes, as BokehJS draws them).
BOARD_TYPE = """m('kstep-plot-state').renderers.map((r) => r.glyph).filter((g) => 'text_font_size' in g.properties)
  .map((g) => parseFloat(g.text_font_size.value) * (g.text_font_size.value.endsWith('pt') ? 4 / 3 : 1))"""


def at(p, k, n):
    p.js("m('kstep-slider').value = arg", k)
    p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {k} / {n}')")


def overflow(p) -> int:
    """How many pixels the page is wider than the window: what a reader would have to scroll sideways."""
    p.page.evaluate(PAINTED)
    return p.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def test_predict_mode_asks_before_each_marked_step_then_reveals_and_keeps_score(opened):
    """munmap-vs-fault's three questions: the player stops before each, keeps its state hidden until it is
    answered, judges the answer as questions.matches would (hex is a number) and counts.  Runs first:
    the later tests move freely over a run whose questions are answered."""
    p, trace, model = opened
    n = len(trace)
    asked = predict.predictions(trace, model)
    assert [q["id"] for q in asked] == ["seq-after-epoch", "detached-verdict", "killed"]
    guess = p.root.locator("input[type=text]")
    ask = p.root.locator(".kstep-ask")
    # Turned off while it asks, predict mode lets the player move on; turned on again, it asks again.
    p.js("m('kstep-slider').value = arg", n)
    p.wait(f"m('kstep-slider').value === {asked[0]['step'] - 1} && !m('kstep-guess').disabled")
    p.click("predict mode")
    p.wait("m('kstep-guess').disabled && !m('kstep-predict-on').active")
    at(p, asked[0]["step"] + 2, n)
    p.click("predict mode")
    at(p, 0, n)
    verdicts = ["✓ right: 2", "✗ not quite; the answer: true", "The answer: T1"]
    for q, given, verdict in zip(asked, ["0x2", "false", None], verdicts):
        p.js("m('kstep-slider').value = arg", n)  # a jump past the question stops before its step
        p.wait(f"m('kstep-slider').value === {q['step'] - 1} && !m('kstep-guess').disabled")
        assert f"step {q['step'] - 1} / {n}" in p.status()
        assert q["ask"] in ask.inner_text()
        if given is None:
            p.click("Show me")
        else:
            guess.fill(given)
            guess.press("Enter")
        p.wait(f"m('kstep-slider').value === {q['step']} && m('kstep-guess').disabled")
        assert ask.inner_text().startswith(verdict)
    assert p.root.locator(".kstep-score").inner_text() == "predictions: 1 right of 3 (3 in this run)"
    p.js("m('kstep-slider').value = arg", n)
    p.wait(f"m('kstep-slider').value === {n}")


@pytest.mark.parametrize("screen", list(WIDTHS))
def test_the_player_fits_the_screen_and_no_part_overflows_or_overlaps_another(opened, screen):
    p, trace, _ = opened
    width = WIDTHS[screen]
    p.page.set_viewport_size({"width": width, "height": 900})
    at(p, 5, len(trace))  # a step with a long status line, a call stack and code
    assert overflow(p) == 0, f"{screen}: the page is wider than {width} px"
    parts = player_parts(p)
    assert misfits(parts, width) == []
    board, code = parts["kstep-panel-0"], parts["kstep-code-pane"]
    stage = parts["kstep-stage"]["box"]
    assert (stage[2] - stage[0] >= style.SIDE_BY_SIDE) == (width >= 1366), f"{screen}: the stage is {stage}"
    if stage[2] - stage[0] >= style.SIDE_BY_SIDE:
        assert code["box"][0] >= board["box"][2] and code["box"][1] < board["box"][3], "side by side"
    else:
        assert code["box"][1] >= board["box"][3], "on a narrow screen the code pane goes under the board"
    # Nothing scrolls sideways, on a phone either: there the board is drawn as a picture of it at the width it
    # is legible at would be, smaller as a whole, its proportions kept and its type still readable.
    assert p.page.evaluate(SIDEWAYS) == [], f"{screen}: a part of the player scrolls sideways"
    sizes = p.js(BOARD_TYPE)
    wide, tall = board["box"][2] - board["box"][0], board["box"][3] - board["box"][1]
    if width < style.MIN_PLOT_WIDTH:
        scale = wide / style.MIN_PLOT_WIDTH
        assert abs(tall / wide - BOARD_HEIGHT / style.MIN_PLOT_WIDTH) < 0.03, f"{screen}: proportions {board}"
        assert min(sizes) >= 8 and abs(max(sizes) - 13 * 4 / 3 * scale) < 0.5, sizes
    else:
        assert round(tall) == BOARD_HEIGHT and max(sizes) == 13 * 4 / 3, f"{screen}: the board as designed"
    SHOTS.mkdir(parents=True, exist_ok=True)
    p.page.screenshot(path=str(SHOTS / f"vma-munmap-vs-fault-{screen}-{width}px.png"), full_page=True)
    assert p.page.evaluate("() => document.querySelector('meta[name=viewport]').content") == \
        "width=device-width, initial-scale=1"


def test_projector_mode_shows_the_board_and_the_code_in_large_type_on_one_screen(opened):
    p, trace, _ = opened
    n = len(trace)
    p.page.set_viewport_size({"width": WIDTHS["projector"], "height": 1080})
    at(p, 5, n)
    hidden = ["kstep-header", "kstep-predict", "kstep-key", "kstep-panel-1", "kstep-panel-2"]
    visible = "(names) => names.map((name) => Bokeh.documents[0].get_model_by_name(name).visible)"
    before = p.page.evaluate(visible, hidden)
    status = p.root.locator(".kstep-status")
    small = status.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)")
    board_type = p.js(BOARD_TYPE)
    board = player_parts(p)["kstep-panel-0"]["box"]
    p.click("projector mode")
    p.wait("m('kstep-projector').active && !m('kstep-key').visible")
    assert p.page.evaluate(visible, hidden) == [False] * len(hidden)
    assert status.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)") >= 1.5 * small
    # The board's own type (drawn on its canvas) grows too, and the board with it, as tall as it is wide.
    large = p.js(BOARD_TYPE)
    assert all(abs(b - style.PROJECTOR_SCALE * a) < 0.1 for a, b in zip(board_type, large)), (board_type, large)
    grown = player_parts(p)["kstep-panel-0"]["box"]
    assert grown[3] - grown[1] >= 1.3 * (board[3] - board[1])
    p.page.evaluate("() => window.scrollTo(0, 0)")
    parts = player_parts(p)
    top = parts["kstep-reset"]["box"][1]
    bottom = max(parts["kstep-panel-0"]["box"][3], parts["kstep-code-pane"]["box"][3])
    assert bottom - top <= 1080, "controls, status, board and code fit one projector screen"
    p.click("projector mode")
    p.wait("!m('kstep-projector').active && m('kstep-key').visible")
    assert p.page.evaluate(visible, hidden) == before
    assert status.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)") == small
    assert p.js(BOARD_TYPE) == board_type


# Every <style> of the page's Bokeh views watched: each time one is given text, whether it is the text it had.
WATCH_STYLES = """() => {
  const sets = globalThis.kstep_style_sets = [];
  const seen = new MutationObserver((records) => {
    for (const r of records) {
      if (r.target.tagName === "STYLE") {
        sets.push([...r.removedNodes].map((t) => t.textContent).join("") === r.target.textContent);
      }
    }
  });
  const roots = new Set([...Bokeh.index.query((v) => v.shadow_el != null)].map((v) => v.shadow_el));
  for (const root of roots) {
    seen.observe(root, {childList: true, subtree: true});
  }
  return roots.size;
}"""


def test_a_step_repaints_the_plots_without_setting_a_stylesheet_to_the_text_it_has(opened):
    """BokehJS sets each renderer's position stylesheet on every paint; set to its own text, it still made
    the browser recompute the page's styles at the next CSS value the paint read, some 25 times a step."""
    p, trace, _ = opened
    n = len(trace)
    at(p, 0, n)
    before = p.picture("kstep-plot-timeline")
    assert p.page.evaluate(WATCH_STYLES) > 10
    p.click("Step")
    p.wait("m('kstep-slider').value === 1")
    assert p.picture("kstep-plot-timeline") != before, "the step moved the timeline's cursor: the plot repainted"
    assert p.page.evaluate("() => globalThis.kstep_style_sets.filter((same) => same).length") == 0


# While the player plays: for each frame shown, which of the status line and the slider's handle changed.
WATCH_CONTROLS = """(() => {
  const st = m('kstep-slider').__kstep;
  const seen = globalThis.kstep_controls = {};
  const note = (what) => () => { if (st.timer !== null) { (seen[st.frame] = seen[st.frame] || []).push(what); } };
  m('kstep-status').properties.html.change.connect(note('status'));
  m('kstep-slider').properties.value.change.connect(note('slider'));
})()"""


def test_playing_fast_the_status_line_and_the_slider_take_turns(opened):
    """Rewriting both in one frame cost it 1.4 ms of its 2 ms of JavaScript: at 60 steps/s (a frame every
    16 ms) they take turns; at 4 steps/s both follow every frame (test_views_browser's pause mid-run)."""
    p, trace, _ = opened
    n = len(trace)
    p.js("m('kstep-predict-on').active = false")
    at(p, 0, n)
    p.js(WATCH_CONTROLS)
    p.speed("60 steps/s")
    p.stop_clock()
    p.js("m('kstep-play').active = true")
    p.run_for(n * 1000 // 60 + 200)
    p.resume_clock()
    p.wait(f"m('kstep-slider').value === {n} && !m('kstep-play').active")
    changed = p.js("globalThis.kstep_controls")
    assert len(changed) >= 4, changed
    assert {w for ws in changed.values() for w in ws} == {"status", "slider"}
    first = min(changed, key=int)  # the first frame of a playback shows both
    assert [k for k, ws in changed.items() if len(ws) > 1 and k != first] == [], changed
    assert f"step {n} / {n}" in p.status()


def test_each_step_says_what_it_acts_on_and_the_functions_it_runs_in(opened):
    p, trace, model = opened
    n = len(trace)
    stacks = call_stacks(model, trace, code.calls)
    k = next(k for k, (a, s) in enumerate(zip(trace.actions, stacks), start=1)
             if a.label == "rcu_read_lock" and s[-3:-1] == ("lock_vma_under_rcu", "vma_end_read"))
    at(p, k, n)
    text = p.root.locator(".kstep-stack").inner_text()
    assert text == "do_user_addr_fault › lock_vma_under_rcu › vma_end_read › rcu_read_lock"
    writes = [k for k, a in enumerate(trace.actions, start=1) if a.label == "down_write"]
    shown = set()
    for k in writes:
        at(p, k, n)
        shown.add(p.root.locator(".kstep-on").inner_text())
    assert shown == {"on " + model.acts_on(trace.states[k - 1], trace.actions[k - 1]) for k in writes}
    assert len(shown) >= 2, "munmap-vs-fault's writer takes mmap_lock and then a VMA's lock"


def test_the_keyboard_steps_plays_and_resets(opened):
    p, trace, _ = opened
    n = len(trace)
    at(p, 0, n)
    p.page.evaluate("() => document.activeElement && document.activeElement.blur()")
    p.page.keyboard.press("ArrowRight")
    p.wait("m('kstep-slider').value === 1")
    p.page.keyboard.press("ArrowRight")
    p.wait("m('kstep-slider').value === 2")
    p.page.keyboard.press("ArrowLeft")
    p.wait("m('kstep-slider').value === 1")
    p.speed("1000 steps/s")
    p.page.evaluate("() => document.activeElement && document.activeElement.blur()")
    p.page.keyboard.press(" ")
    p.wait(f"m('kstep-slider').value === {n} && !m('kstep-play').active")
    p.page.keyboard.press("Home")
    p.wait("m('kstep-slider').value === 0")


def test_the_state_is_a_text_table_for_a_screen_reader(opened):
    p, trace, _ = opened
    n = len(trace)
    at(p, n, n)
    table = p.root.locator("table.kstep-state")
    last = trace.actions[-1]
    table.locator("caption", has_text=f"step {n} of {n}: {last.actor} took {last.label}").wait_for()
    heads = table.locator("th").all_inner_texts()
    cells = table.locator("td").all_inner_texts()
    killed = [t.name for t in trace.states[-1].threads if t.died]
    assert killed and any(h.startswith(f"{killed[0]} ·") and "killed by SIGSEGV" in c for h, c in zip(heads, cells))
    assert any(h.startswith("VMA ") for h in heads) and any(h.startswith("mm_lock_seq") for h in heads)


def test_dark_mode_darkens_the_page_and_its_plots(opened):
    p, _, _ = opened
    status = p.root.locator(".kstep-status")

    def looks():
        bg = status.evaluate("(el) => getComputedStyle(el).backgroundColor")
        plot = p.page.evaluate("() => { const m = Bokeh.documents[0].get_model_by_name('kstep-plot-state');"
                               " return getComputedStyle(Bokeh.index.query_one((v) => v.model === m).el).filter; }")
        return bg, plot

    p.page.emulate_media(color_scheme="light")
    light_bg, light_plot = looks()
    p.page.emulate_media(color_scheme="dark")
    try:
        dark_bg, dark_plot = looks()
    finally:
        p.page.emulate_media(color_scheme="light")
    assert light_plot == "none" and "invert" in dark_plot
    assert sum(map(int, dark_bg[4:-1].split(",")[:3])) < sum(map(int, light_bg[4:-1].split(",")[:3])) / 3


def test_the_code_pane_keeps_one_height_whatever_it_shows(opened):
    """An excerpt of a few lines or of hundreds, or a line of text at step 0: a pane that grew or shrank
    made BokehJS lay out every plot of the page again, on every step of a student's own run."""
    p, trace, model = opened
    n = len(trace)
    p.js("m('kstep-predict-on').active = false")
    sources = model.sources()
    firsts = {}
    for k, a in enumerate(trace.actions, start=1):
        firsts.setdefault(str(sources[a.label]), k)
    heights = {}
    for k in [0, *sorted(firsts.values())[:6]]:
        at(p, k, n)
        p.page.evaluate(PAINTED)
        pane = p.root.locator(".kstep-code")
        heights[k] = (pane.inner_text().partition("\n")[0], pane.bounding_box()["height"])
    assert len({h for _, h in heights.values()}) == 1, heights
    assert len({w for w, _ in heights.values()}) >= 4, "the pane showed several functions and step 0's text"


# The element the keyboard is on, inside the shadow roots BokehJS draws its widgets in.
FOCUSED = """() => {
  let el = document.activeElement;
  while (el !== null && el.shadowRoot != null && el.shadowRoot.activeElement != null) {
    el = el.shadowRoot.activeElement;
  }
  let host = el, name = null;
  while (host !== null && name === null) {
    const view = Bokeh.index.query_one((v) => v.el === host);
    name = view === null ? null : view.model.name;
    host = host.parentNode instanceof ShadowRoot ? host.parentNode.host : host.parentElement;
  }
  const css = getComputedStyle(el);
  return {name: name, tag: el.tagName, ring: css.outlineStyle === "none" ? 0 : parseFloat(css.outlineWidth)};
}"""
CONTROLS = {"kstep-reset", "kstep-back", "kstep-play", "kstep-step", "kstep-speed", "kstep-slider", "kstep-projector",
            "kstep-predict-on"}


def test_every_control_is_reached_by_tab_with_a_visible_ring_and_works_from_the_keyboard(opened):
    p, trace, _ = opened
    n = len(trace)
    p.page.set_viewport_size({"width": WIDTHS["laptop"], "height": 900})
    p.js("m('kstep-predict-on').active = false")
    at(p, 0, n)
    p.page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    rings = {}
    for _ in range(40):
        p.page.keyboard.press("Tab")
        now = p.page.evaluate(FOCUSED)
        if now["name"] in CONTROLS:
            rings.setdefault(now["name"], now["ring"])
    assert set(rings) == CONTROLS
    assert all(ring >= 2 for ring in rings.values()), rings
    # Operated from the keyboard: Enter on Step, the arrow keys on the slider's handle.
    p.root.locator("button.bk-btn", has_text="Step").focus()
    p.page.keyboard.press("Enter")
    p.wait("m('kstep-slider').value === 1")
    p.root.locator(".noUi-handle").focus()
    p.page.keyboard.press("ArrowRight")
    p.wait("m('kstep-slider').value === 2")
    assert p.page.evaluate(FOCUSED)["name"] == "kstep-slider", "the focus stays on the slider"


def luminance(rgb: str) -> float:
    channels = [int(c) / 255 for c in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_play_button_and_the_slider_can_be_read(opened):
    p, _, _ = opened
    colours = p.toggle().evaluate("(el) => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]")
    light, dark = sorted(map(luminance, colours), reverse=True)
    assert (light + 0.05) / (dark + 0.05) >= 4.5, colours
    assert p.root.locator(".noUi-handle").get_attribute("aria-label") == "step of the run"


# What the live region says, one entry each time BokehJS gives it new text.
WATCH_SAID = """(() => { const said = globalThis.kstep_said = [];
  m('kstep-said').properties.html.change.connect(() => said.push([].concat(m('kstep-said').html).join(''))); })()"""


def test_a_step_the_player_stops_on_is_said_once_and_playing_says_only_where_it_stopped(opened):
    p, trace, _ = opened
    n = len(trace)
    p.js("m('kstep-predict-on').active = false")
    at(p, 0, n)
    live = p.root.locator("[aria-live=polite]")
    assert live.count() == 1 and live.get_attribute("aria-atomic") == "true"
    p.js(WATCH_SAID)
    p.click("Step")
    p.wait("m('kstep-slider').value === 1")
    p.page.evaluate(PAINTED)
    first = trace.actions[0]
    said = p.js("globalThis.kstep_said")
    assert len(said) == 1 and said[0].startswith(f"step 1 of {n}: {first.actor} took {first.label}"), said
    shown = live.evaluate("(el) => [...el.shadowRoot.children].filter((c) => c.tagName !== 'STYLE')"
                          ".map((c) => c.textContent).join('')")
    assert shown == said[0]
    p.speed("1000 steps/s")
    p.click("Play")
    p.wait(f"m('kstep-slider').value === {n} && !m('kstep-play').active")
    p.page.evaluate(PAINTED)
    said = p.js("globalThis.kstep_said")
    assert len(said) == 2 and said[1].startswith(f"step {n} of {n}:"), said
