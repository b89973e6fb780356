"""Pages in a real browser: Debian's Chromium as its headless shell, driven by Playwright, with no network.

``Opened`` opens a page (file:// or a local server), aborts and records every request that would
leave the machine, collects page errors and console errors and warnings, and waits until every
Bokeh document on the page is built.  Its methods drive one document's player the way a student
does, by clicking its buttons.  The ``browser`` fixture is in conftest.py.
"""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path
from typing import Optional

# The same Blink as Debian's chromium without the browser around it (what Playwright itself runs headless):
# the site crawls of 20 DAMON pages took 25-30 % less Chromium CPU in it (29.7-35.8 s against 41.0-50.3 s).
CHROMIUM = "/usr/bin/chromium-headless-shell"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
# Every Bokeh document of the page built: one per embed target (an element with data-root-id).
READY = ("() => { const n = document.querySelectorAll('[data-root-id]').length;"
         " return n === 0 || (window.Bokeh !== undefined && Bokeh.documents.length >= n"
         " && Bokeh.documents.every((d) => d.is_idle)); }")
# Every player of the page with predict mode off (a student's click on its toggle does the same).
NO_PREDICT = ("() => { for (const d of window.Bokeh === undefined ? [] : Bokeh.documents) { const t = d.get_model_by_name('kstep-predict-on');"
              " if (t !== null && t.active) { t.active = false; } } }")
# What an interactive page downloads before Python starts (interactive.js's DOWNLOADS, and pyodide.js).
PYTHON = ("*/_static/pyodide/*", "*/_static/kstep/kstep.zip*")
SPEED = "1000 steps/s"  # the player's fastest speed: a whole run plays in moments
# Two animation frames: BokehJS paints on the next one, so after this the screen shows the model.
PAINTED = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
# How long a page may take to load or reach a state (ms).  Every wait is on a state, never on time; this
# only bounds how long a state that never comes is waited for.  It is generous because a clean-clone
# `make test` beside other work (load 14-20 on 2 cores) took more than 30 s to load a notebook's page.
PATIENCE = 120_000


class Opened:
    """A page opened offline, with what it tried to fetch and what went wrong on it.

    ``origin`` (``http://127.0.0.1:PORT``) is the one place requests may go; without it (file://)
    every http(s) request is aborted.  ``doc`` picks the Bokeh document the player methods drive.
    """

    def __init__(self, browser, where: Path | str, *, origin: Optional[str] = None, doc: int = 0,
                 viewport=(1280, 1000), predict: bool = False, init: Optional[str] = None, crawl: bool = False):
        """``predict``: leave the players' predict mode on (else it is turned off, so that a test moves
        freely over a run whose scenario asks questions).  ``init``: a script every page runs before its
        own (to watch it from the start).

        ``crawl``: for going through many pages of one site in this tab.  A request that would leave the
        machine is recorded as it starts rather than routed, since Playwright turns a context's HTTP cache
        off while it routes (each page then loaded BokehJS and the theme again); and a page's requests for
        Python (Pyodide, kstep.zip) are held, never answered, as on a very slow network: its players work
        while Python loads, and Python's start, seconds of CPU, is not paid again on every page.  ``python``
        lists the held requests of the page open."""
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.context.set_default_timeout(PATIENCE)
        self.origin = origin
        self.requests: list[str] = []
        self.problems: list[str] = []
        self.python: list[str] = []
        self.clock = False  # stop_clock installed the fake clock
        if init is not None:
            self.context.add_init_script(init)
        self.page = self.context.new_page()
        if crawl:
            self.page.on("request", self._leaving)
            cdp = self.context.new_cdp_session(self.page)
            cdp.on("Fetch.requestPaused", lambda e: self.python.append(e["request"]["url"]))
            cdp.send("Fetch.enable", {"patterns": [{"urlPattern": p} for p in PYTHON]})
        else:
            self.context.route(re.compile(r"^https?://"), self._route)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("console", self._console)
        self.predict = predict
        self.goto(where, doc)

    def goto(self, where: Path | str, doc: int = 0) -> None:
        """Open another page in the same tab (what it requests and logs is added to the same lists)."""
        self.start(where)
        self.ready(doc)

    def start(self, where: Path | str) -> None:
        """Begin opening another page in this tab: return once the browser has its response, while it
        loads and builds the page on its own (``visit_pages`` drives another tab meanwhile)."""
        self.python.clear()
        self.page.goto(where.as_uri() if isinstance(where, Path) else where, wait_until="commit")

    def ready(self, doc: int = 0) -> None:
        """Wait until the page ``start`` opened has loaded and built every Bokeh document; use ``doc``."""
        self.page.wait_for_load_state("load")
        self.page.wait_for_function(READY)
        if not self.predict:
            self.page.evaluate(NO_PREDICT)
        self.use(doc)

    def _route(self, route):
        if self.origin is not None and route.request.url.startswith(self.origin + "/"):
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def _leaving(self, request):
        if request.url.startswith(("http:", "https:")) and not (
                self.origin is not None and request.url.startswith(self.origin + "/")):
            self.requests.append(request.url)

    def _console(self, msg):
        # Unrouted, the browser asks a server for /favicon.ico on its own (the site names no icon): not the page's.
        if msg.type in ("error", "warning") and not (self.origin is not None and
                                                     msg.location.get("url") == self.origin + "/favicon.ico"):
            self.problems.append(f"console {msg.type}: {msg.text}")

    def documents(self) -> int:
        return self.page.evaluate("() => window.Bokeh === undefined ? 0 : Bokeh.documents.length")

    def use(self, doc: int) -> None:
        """Point the player methods at the page's Bokeh document number ``doc``."""
        self.doc = doc
        self.model = f"(name) => Bokeh.documents[{doc}].get_model_by_name(name)"
        if doc < self.documents():
            root = self.page.evaluate(f"() => Bokeh.documents[{doc}].roots()[0].id")
            self.root = self.page.locator(f'[data-root-id="{root}"]')

    def open_collapsed(self) -> None:
        """Expand every collapsed block (a notebook's hidden answers), as a student opens them."""
        self.page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")

    def is_player(self) -> bool:
        return self.js("m('kstep-slider') !== null")

    def js(self, expr, arg=None):
        """Evaluate ``expr`` with ``m(name)`` returning the named Bokeh model of the document in use."""
        return self.page.evaluate(f"(arg) => {{ const m = {self.model}; return {expr}; }}", arg)

    def wait(self, expr, timeout=PATIENCE):
        """Wait until ``expr`` (with ``m(name)`` as in ``js``) is true: states, never time."""
        self.page.wait_for_function(f"() => {{ const m = {self.model}; return {expr}; }}", timeout=timeout)

    @property
    def frame(self) -> int:
        return self.js("m('kstep-slider').value")

    def status(self) -> str:
        return self.js("[].concat(m('kstep-status').html).join('')")

    def click(self, text):
        self.root.locator("button.bk-btn", has_text=text).click()

    def speed(self, label):
        self.root.locator("select").select_option(label=label)

    def toggle(self):
        """The play/pause button element as it is in the page now."""
        return self.page.evaluate_handle(
            f"() => Bokeh.index.query_one((v) => v.model === ({self.model})('kstep-play')).button_el")

    def playing(self) -> bool:
        """The player's own timer is running (player.js keeps its state on the slider model)."""
        return self.js("m('kstep-slider').__kstep.timer !== null")

    def stop_clock(self):
        """Stop the page's clock (Date, performance.now, requestAnimationFrame): playback then moves
        only by ``run_for``, so what a test sees mid-play does not depend on the machine's load.
        ``resume_clock`` lets it run again.  The fake clock, once installed, stays for the tab's later
        pages (running with real time until stopped again).  It stops a minute ahead of the page's time
        (pause_at takes seconds): a time still to come however long the call takes on a loaded machine;
        the jump fires the page's due timers once, before anything is clicked."""
        if not self.clock:
            self.page.clock.install()
            self.clock = True
        self.page.clock.pause_at(self.page.evaluate("() => Date.now()") / 1000 + 60)

    def run_for(self, ms):
        self.page.clock.run_for(ms)

    def resume_clock(self):
        self.page.clock.resume()

    def shown(self, source):
        """The display source's columns as BokehJS holds them now."""
        return self.js("Object.fromEntries(Object.entries(m('kstep-src-' + arg).data)"
                       ".map(([c, v]) => [c, Array.from(v)]))", source)

    def picture(self, name):
        """A digest of a screenshot of the named Bokeh model's element: what the student sees of it."""
        el = self.page.evaluate_handle(
            f"(name) => {{ const m = Bokeh.documents[{self.doc}].get_model_by_name(name);"
            " return Bokeh.index.query_one((v) => v.model === m).el; }", name)
        self.page.evaluate(PAINTED)
        return hashlib.sha256(el.screenshot()).hexdigest()

    def box(self, name):
        """Where the named Bokeh model's element is on the page: {x, y, width, height} in pixels."""
        el = self.page.evaluate_handle(
            f"(name) => {{ const m = Bokeh.documents[{self.doc}].get_model_by_name(name);"
            " return Bokeh.index.query_one((v) => v.model === m).el; }", name)
        self.page.evaluate(PAINTED)
        return el.bounding_box()

    def ink(self, name, lo, hi):
        """How many pixels of the named plot's frame, between steps ``lo`` and ``hi`` on its x axis,
        are not the plot's white background: what the chart shows the student there."""
        from PIL import Image  # Bokeh's own dependency

        el = self.page.evaluate_handle(
            f"(name) => {{ const m = Bokeh.documents[{self.doc}].get_model_by_name(name);"
            " return Bokeh.index.query_one((v) => v.model === m).el; }", name)
        box = self.page.evaluate(
            f"([name, lo, hi]) => {{ const m = Bokeh.documents[{self.doc}].get_model_by_name(name);"
            " const v = Bokeh.index.query_one((v) => v.model === m); const f = v.frame;"
            " const x = (s) => Math.min(Math.max(f.x_scale.compute(s), f.bbox.left), f.bbox.right);"
            " return [x(lo), f.bbox.top, x(hi), f.bbox.bottom]; }", [name, lo, hi])
        self.page.evaluate(PAINTED)  # BokehJS paints on the next animation frame: wait for it, not for a time
        shot = Image.open(io.BytesIO(el.screenshot())).convert("RGB")
        x0, top, x1, bottom = (round(c) for c in box)
        # Two pixels in from each edge: the cursor's outline and anti-aliasing sit on the edges.
        part = shot.crop((x0 + 2, top + 2, max(x0 + 2, x1 - 2), bottom - 2))
        return sum(1 for px in part.get_flattened_data() if px != (255, 255, 255))

    def check_clean(self):
        assert self.problems == []
        assert self.requests == [], "an offline page must not request anything"

    def close(self):
        self.context.close()


# The player's parts a student reads or works (the board is the view's first panel, kstep-panel-0).
PARTS = ["kstep-reset", "kstep-back", "kstep-play", "kstep-step", "kstep-speed", "kstep-slider", "kstep-projector",
         "kstep-status-pane", "kstep-code-pane", "kstep-panel-0", "kstep-key"]
# Per part (and the stage holding the board and the code pane): its box on the page, the width and height of
# what it holds (scrollWidth, scrollHeight) and of the box it shows (clientWidth, clientHeight), and whether it
# is shown at all.
BOXES = """([doc, names]) => Object.fromEntries(names.map((name) => {
  const m = Bokeh.documents[doc].get_model_by_name(name);
  const el = Bokeh.index.query_one((v) => v.model === m).el;
  const r = el.getBoundingClientRect();
  return [name, {box: [r.left, r.top, r.right, r.bottom], content: [el.scrollWidth, el.scrollHeight],
                 client: [el.clientWidth, el.clientHeight], shown: r.width > 0 && r.height > 0}];
}))"""


def player_parts(p: Opened) -> dict:
    """Where the parts of the player in use are, once painted (see BOXES)."""
    p.page.evaluate(PAINTED)
    return p.page.evaluate(BOXES, [p.doc, [*PARTS, "kstep-stage"]])


def misfits(parts: dict, width: int) -> list[str]:
    """What does not fit a window ``width`` pixels wide: a part that leaves it or is not shown, a part whose
    content is wider than it (the board too: on a phone it is drawn smaller, never scrolled sideways), two
    parts that overlap."""
    out = []
    for name in PARTS:
        part = parts[name]
        left, _, right, _ = part["box"]
        if not part["shown"] or left < 0 or right > width + 0.5:
            out.append(f"{name} leaves the window: {part}")
        if part["content"][0] > part["client"][0] + 1:
            out.append(f"{name}'s content is wider than it: {part}")
    for i, a in enumerate(PARTS):
        for b in PARTS[i + 1:]:
            if overlap(parts[a]["box"], parts[b]["box"]) > 0:
                out.append(f"{a} and {b} overlap: {parts[a]['box']}, {parts[b]['box']}")
    return out


# Every element of the page's players, inside the shadow roots BokehJS draws in, that a reader could scroll
# sideways: its content wider than its box, and its box scrolls (overflow-x auto or scroll).
SIDEWAYS = """() => {
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      const x = getComputedStyle(el).overflowX;
      if ((x === "auto" || x === "scroll") && el.scrollWidth > el.clientWidth + 1) {
        out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join(".")}: ${el.scrollWidth} in ${el.clientWidth}`);
      }
      if (el.shadowRoot) {
        walk(el.shadowRoot);
      }
    }
  };
  walk(document);
  return out;
}"""


def overlap(a, b) -> float:
    """The area two boxes share, less a pixel of rounding each way."""
    w = min(a[2], b[2]) - max(a[0], b[0]) - 1
    h = min(a[3], b[3]) - max(a[1], b[1]) - 1
    return max(w, 0) * max(h, 0)


def plays_steps_and_resets(p: Opened) -> int:
    """Drive the player in use: Step, Back, Play to the end at full speed, Reset.  Returns its length."""
    n = p.js("m('kstep-slider').end")
    assert n >= 1 and p.frame == 0
    status0 = p.status()
    assert f"step 0 / {n}" in status0
    p.click("Step")
    p.wait("m('kstep-slider').value === 1")
    assert f"step 1 / {n}" in p.status()
    p.click("Back")
    p.wait("m('kstep-slider').value === 0")
    p.speed(SPEED)
    # The page's clock stands still while the run plays, and then moves the run's length at once (n ms at
    # 1000 steps/s, and the last frame's 16): the player shows the frames a real clock's animation frames
    # show, without waiting n ms of real time for them (a DAMON run's thousands of steps took seconds).
    p.stop_clock()
    p.click("Play")
    p.run_for(n + 100)
    p.resume_clock()
    p.wait(f"m('kstep-slider').value === {n} && !m('kstep-play').active")
    p.click("Reset")
    p.wait("m('kstep-slider').value === 0")
    assert p.status() == status0
    return n


def site_pages(site: Path, under: str = "") -> list[str]:
    """The built site's pages (paths relative to it), those below folder ``under`` only if given."""
    return sorted(str(p.relative_to(site)) for p in (site / under).rglob("*.html") if "_static" not in p.parts)


def visit_pages(browser, origin: str, rels: list[str], tabs: int = 2) -> int:
    """One visit per page (``Opened``'s crawl: the HTTP cache on, Python held downloading): no page
    error, no console error or warning, no request leaving the machine; a page with an interactive
    panel asks for Python as it opens, a page without one never does; on a page that embeds Bokeh
    documents, every one is built and every player works.  Returns how many players played.

    The pages take turns in ``tabs`` tabs: while one page's players are driven, the next pages load
    and build in the other tabs, each its own renderer process."""
    opened = [Opened(browser, f"{origin}/index.html", origin=origin, crawl=True) for _ in range(min(tabs, len(rels)))]
    players = 0
    try:
        for k, rel in enumerate(rels[:len(opened) - 1]):
            opened[k].start(f"{origin}/{rel}")
        for k, rel in enumerate(rels):
            if k + len(opened) - 1 < len(rels):
                opened[(k - 1) % len(opened)].start(f"{origin}/{rels[k + len(opened) - 1]}")
            p = opened[k % len(opened)]
            p.ready()
            live = p.page.locator("script[src*='kstep/interactive.js']").count() > 0
            p.open_collapsed()
            embeds = p.page.locator("[data-root-id]").count()
            assert p.documents() == embeds, rel
            for doc in range(embeds):
                p.use(doc)
                if p.is_player():
                    plays_steps_and_resets(p)
                    players += 1
            assert p.problems == [], rel
            assert p.requests == [], f"{rel} requested from outside the machine"
            assert bool(p.python) == live, f"{rel}: {'no ' if live else ''}request for Python: {p.python}"
    finally:
        for p in opened:
            p.close()
    return players
