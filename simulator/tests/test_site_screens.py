"""The course site on every screen, for a keyboard and for a screen reader (issue 21, sections 2 and 3): an
animation page's player fits a phone, a JupyterLab-pane-wide window, a laptop and a projector beside the
theme's sidebars; axe-core, the engine browser extensions and audits use, run offline in Chromium on the
site's index, a chapter, an animation page and a page with interactive players, finds no serious or
critical issue; and the players follow the theme's light/dark switch, whatever the system's setting.

axe-core comes from node_modules (package.json pins it; make setup installs it) and is put into each page
by the test: the site never loads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from browser import PAINTED, SIDEWAYS, Opened, misfits, player_parts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (390, 800, 1366, 1920)  # as test_player_screens: a phone, a JupyterLab pane, a laptop, a projector
PAGES = ["index.html", "chapters/vma-locks.html", "animations/vma-locks/munmap-vs-fault.html", "tour.html"]
# Each issue axe finds that is serious or critical: its rule, how bad, and the first few elements it is on.
AUDIT = """async () => {
  const found = await axe.run(document, {resultTypes: ["violations"]});
  return found.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ` + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; "));
}"""


@pytest.fixture(scope="module")
def opened(browser, origin):
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run make setup (npm ci installs axe-core)")
    p = Opened(browser, f"{origin}/index.html", origin=origin, viewport=(1366, 900))
    yield p
    p.close()


def test_an_animation_page_fits_every_screen(opened, origin):
    """Beside the theme's sidebar: nothing scrolls sideways, on a phone either; on a 1920-pixel projector the
    page uses the window (not the theme's 88rem), and the board and the code pane share a row."""
    p = opened
    p.goto(f"{origin}/animations/vma-locks/munmap-vs-fault.html")
    for width in WIDTHS:
        p.page.set_viewport_size({"width": width, "height": 900})
        p.page.evaluate(PAINTED)
        assert p.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") == 0, width
        parts = player_parts(p)
        assert misfits(parts, width) == [], width
        assert p.page.evaluate(SIDEWAYS) == [], width
        board, code = parts["kstep-panel-0"]["box"], parts["kstep-code-pane"]["box"]
        if width == 1920:
            assert code[0] >= board[2] and code[1] < board[3], f"side by side at 1920: {board}, {code}"
    p.page.set_viewport_size({"width": 1366, "height": 900})


@pytest.mark.parametrize("rel", PAGES)
def test_axe_finds_no_serious_or_critical_issue(opened, origin, rel):
    p = opened
    p.goto(f"{origin}/{rel}")
    if rel == "tour.html":  # the interactive players offer to let the student schedule
        p.page.wait_for_selector(".kstep-live[data-state=ready]")
    if p.documents() and p.is_player():  # at a step with code in the code pane and its lines marked
        p.js("m('kstep-slider').value = 6")
        p.wait("[].concat(m('kstep-code').html).join('').includes('kstep-marked')")
    p.page.evaluate(PAINTED)
    p.page.add_script_tag(path=str(AXE))
    assert p.page.evaluate(AUDIT) == []
    assert p.problems == [] and p.requests == []


def test_the_players_follow_the_themes_light_and_dark_switch_not_the_systems(opened, origin):
    """The theme keeps its own switch (light unless the reader picks dark); a player that followed the
    system instead wrote light text on the theme's white page, and dark on its black one."""
    p = opened
    p.goto(f"{origin}/animations/vma-locks/munmap-vs-fault.html")
    status = p.root.locator(".kstep-status")
    looks = ("() => { const m = Bokeh.documents[0].get_model_by_name('kstep-plot-state');"
             " return getComputedStyle(Bokeh.index.query_one((v) => v.model === m).el).filter; }")

    def seen(system, theme):
        p.page.emulate_media(color_scheme=system)
        p.page.evaluate("(t) => document.documentElement.dataset.theme = t", theme)
        p.page.evaluate(PAINTED)
        bg = status.evaluate("(el) => getComputedStyle(el).backgroundColor")
        ink = status.evaluate("(el) => getComputedStyle(el).color")
        return sum(map(int, bg[bg.index("(") + 1:-1].split(",")[:3])), \
            sum(map(int, ink[ink.index("(") + 1:-1].split(",")[:3])), p.page.evaluate(looks)

    try:
        for system in ("light", "dark"):
            bg, ink, plot = seen(system, "light")
            assert bg > ink and plot == "none", f"light theme, {system} system"
            bg, ink, plot = seen(system, "dark")
            assert bg < ink and "invert" in plot, f"dark theme, {system} system"
    finally:
        p.page.emulate_media(color_scheme="light")
