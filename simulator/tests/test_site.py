"""The course site as a student meets it: built by ``make course``, opened in Chromium, offline.

The site is built once per session into build/course, exactly as ``make course`` builds it, so
its caches are shared: after ``make course`` this build takes seconds (the fixture is in
conftest.py).  It is then served on 127.0.0.1 (and opened from file://): every page loads with no
console error and no request leaving the machine, every animation plays, steps and resets (the
animation pages in test_site_animations.py, so two workers share the visits), every internal
link resolves, and a screenshot of each chapter is kept in build/site-screenshots/.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from browser import Opened, plays_steps_and_resets, site_pages, visit_pages
from kstep.scenario_spec import scenario
from kstep.models import MODELS
from kstep.views import course
from kstep.views.site import pages

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "site-screenshots"
LECTURE_ORDER = ["rcu", "vma-locks", "qspinlock"]  # the order; later mechanisms follow


class Links(HTMLParser):
    """Every link and resource of a page, and every id it defines."""

    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (tag, target)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for attr in ("href", "src"):
            if a.get(attr):
                self.links.append((tag, a[attr]))


def parse(path: Path) -> Links:
    links = Links()
    links.feed(path.read_text())
    return links


def test_every_page_outside_the_animations_loads_clean_and_its_players_play(browser, site, origin):
    """The index, chapters, notebooks, lab and instructor pages (test_site_animations.py visits the rest)."""
    rels = [rel for rel in site_pages(site) if not rel.startswith("animations/")]
    assert len(rels) >= 15
    assert visit_pages(browser, origin, rels) >= len(MODELS)  # at least each chapter's tour


def test_the_site_works_from_file_and_its_search_finds_offline(browser, site):
    for rel in ("index.html", "chapters/rcu.html", "animations/qspinlock/nesting.html",
                "notebooks/02-qspinlock.html"):
        p = Opened(browser, site / rel)
        try:
            p.open_collapsed()
            if p.documents():
                p.use(p.documents() - 1)
                if p.is_player():
                    plays_steps_and_resets(p)
            p.check_clean()
        finally:
            p.close()
    p = Opened(browser, (site / "search.html").as_uri() + "?q=grace")
    try:
        hits = p.page.locator("#search-results ul.search li")
        hits.first.wait_for(timeout=30_000)
        assert any("grace-period-basics" in (hits.nth(k).get_attribute("class") or "") + hits.nth(k).inner_text()
                   for k in range(hits.count()))
        p.check_clean()
    finally:
        p.close()


def test_internal_links_resolve_and_resources_are_local(site):
    parsed = {rel: parse(site / rel) for rel in site_pages(site)}
    broken = []
    for rel, links in parsed.items():
        for tag, target in links.links:
            parts = urlsplit(target)
            if parts.scheme or target.startswith("//"):
                # Links to the kernel source or a thread are fine; a resource must come from the site.
                if tag != "a" and parts.scheme != "data":
                    broken.append(f"{rel}: <{tag}> loads {target}")
                continue
            path = (site / rel).parent / unquote(parts.path) if parts.path else site / rel
            if path.is_dir():
                path = path / "index.html"
            if not path.resolve().is_relative_to(site.resolve()) or not path.exists():
                broken.append(f"{rel}: {target} is missing")
            elif parts.fragment and path.suffix == ".html":
                ids = parsed.get(str(path.resolve().relative_to(site.resolve())))
                if ids is not None and unquote(parts.fragment) not in ids.ids:
                    broken.append(f"{rel}: {target} has no such anchor")
    assert broken == []


def test_chapters_come_in_lecture_order_and_reach_every_scenario_and_notebook(site):
    index = (site / "index.html").read_text()
    chapters = re.findall(r'href="chapters/([a-z0-9-]+)\.html"', index)
    # the mechanisms' chapters; memory ordering, which is no mechanism's, opens the course before them
    chapters = [c for c in dict.fromkeys(chapters) if c in MODELS]
    assert chapters[:len(LECTURE_ORDER)] == LECTURE_ORDER
    assert sorted(chapters) == sorted(MODELS), "every mechanism has a chapter, and only those"
    for mech in chapters:
        text = (site / "chapters" / f"{mech}.html").read_text()
        for name in scenario.bundled(mech):
            sc = scenario.load(mech, MODELS[mech].scenario_schema, name)
            assert f'href="../animations/{mech}/{name}.html"' in text, name
            page = " ".join(html.unescape((site / "animations" / mech / f"{name}.html").read_text()).split())
            for sentence in (sc.description, sc.look_for):
                assert " ".join(sentence.split()) in page, f"{mech}/{name}"
        for v in pages.broken_variants(mech):
            assert f'href="../animations/{mech}/broken-{v.name}.html"' in text, v.name
        # The chapter lists its scenarios simplest first, and each page's "next" link goes on in that order.
        order = scenario.lecture_order(mech)
        listed = list(dict.fromkeys(re.findall(rf'href="\.\./animations/{mech}/([a-z0-9-]+)\.html"', text)))
        assert [n for n in listed if n in order] == order, mech
        for name, after in zip(order, order[1:]):
            page = (site / "animations" / mech / f"{name}.html").read_text()
            assert re.search(rf'<a class="right-next"\s+href="{after}\.html"', page), f"{mech}/{name}: next is not {after}"
        assert re.search(r'href="\.\./notebooks/[^"]+\.html"', text), f"{mech}: no notebook linked"
        for folder, meta in pages.exercises(ROOT / "exercises", mech):
            assert html.escape(meta["title"], quote=False) in text, f"{mech}: exercise {folder.name} is not listed"
    # the memory-ordering exercises span the mechanisms: their chapter lists them (issue 24 asks for three)
    text = (site / "chapters" / "memory-ordering.html").read_text()
    memory = pages.exercises(ROOT / "exercises", pages.MEMORY_ORDERING)
    assert len(memory) >= 3
    for folder, meta in memory:
        assert html.escape(meta["title"], quote=False) in text, f"memory ordering: exercise {folder.name} is not listed"


def test_each_chapter_opens_with_its_main_scenarios_player_above_its_first_section(site):
    """A chapter's first player (a Bokeh embed, schedulable by hand) comes before its first section
    heading: the student sees the mechanism at work before the text, not two screens down."""
    for mech in MODELS:
        text = (site / "chapters" / f"{mech}.html").read_text()
        player = text.find('class="kstep-animation"')
        heading = re.search(r'<h2>[^<]*<a class="headerlink"', text)  # the chapter's, not the theme's "Contents"
        assert player >= 0, f"{mech}: the chapter has no player"
        assert heading is not None and player < heading.start(), f"{mech}: its first player is below its first section"
        assert '"live"' in text[player:heading.start()], f"{mech}: the chapter's player cannot be scheduled by hand"


@pytest.mark.parametrize("mech", ["qspinlock", "vma-locks"])
def test_a_chapters_tso_player_is_scheduled_by_hand_under_tso(site, mech):
    """The qspinlock chapter tells the student to reach the tso counterexample's state by hand on the player of
    its section "Under x86's store buffers", the vma-locks chapter to try to reorder the write epoch's last two
    stores (test_interactive_tso.py checks both runs on the Session): that player carries the live mark with
    the memory model, so its panel runs the Session under tso, and its buffer claim held when it was built."""
    text = (site / "chapters" / f"{mech}.html").read_text()
    start = re.search(r'<section id="under-x86[^"]*store-buffers">', text)
    assert start is not None, "no section on x86's store buffers"
    heading = text.index("</h2>", start.end())  # the section's own heading, then its text up to the next one
    section = text[heading:text.index("<h2", heading)]
    assert 'class="kstep-animation"' in section and '"live"' in section
    assert '["memory_model",{"type":"map","entries":[["name","tso"],["store_buffer",2]]}]' in section
    assert "✓ After step" in section and "✗ After step" not in section


def test_the_vma_chapters_timed_players_show_the_makespans_kstep_run_timed_prints(browser, site, origin, capsys):
    """Issue 25's story in nanoseconds: the vma-locks chapter plays app launch timed under v6.12, then under
    no-per-vma-lock (test_site_build.py checks the directive's runs and what the chapter says of them).  On the
    built page each one's caption, and its time panel's title as BokehJS draws it, give the makespan ``kstep run
    --timed -c`` prints for the same run; visit_pages plays them with the chapter's other players."""
    from test_cli import kstep
    from test_site_build import chapter_timed_players

    ends = []
    for mech, name, variant in chapter_timed_players():
        rc, out, err = kstep(capsys, "run", mech, "--scenario", name, "--variant", variant, "--timed", "-c")
        assert rc == 0, err
        makespan = re.search(r"^  makespan_ns: (\S+)$", out, re.M)
        assert makespan is not None, out
        ends.append(f"the run ends at {makespan.group(1)} ns")
    assert len(ends) == 2 and ends[0] != ends[1]
    text = html.unescape((site / "chapters" / "vma-locks.html").read_text())
    captions = re.findall(r'<p class="kstep-timed-player">(.*?)</p>', text, re.S)
    assert [re.search(r"the run ends at \S+ ns", c).group(0) for c in captions] == ends
    p = Opened(browser, f"{origin}/chapters/vma-locks.html", origin=origin, crawl=True)
    try:
        titles = []
        for doc in range(p.documents()):
            p.use(doc)
            if p.js("m('kstep-plot-timed') !== null"):
                titles.append(p.js("m('kstep-plot-timed').title.text").rsplit("; ", 1)[1])
        assert titles == ends
        p.check_clean()
    finally:
        p.close()


def test_the_real_kernel_lab_notebook_is_on_the_site_with_the_models_beside(site):
    assert 'href="notebooks/05-real-kernel-lab.html"' in (site / "kernel-lab.html").read_text()
    page = html.unescape((site / "notebooks" / "05-real-kernel-lab.html").read_text())
    for shown in ("RECORDED ", "model (folio-batch, x86-64 PTEs)", "model (as-of-6.12.", "reachable set for 3 CPUs"):
        assert shown in page, shown


def test_a_scenario_page_does_not_tell_how_its_run_ends_before_it_is_played(site):
    """The outcome is what a student predicts: only the banner at the run's last step states it."""
    for mech in MODELS:
        for name in scenario.bundled(mech):
            text = (site / "animations" / mech / f"{name}.html").read_text()
            before = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text.split('class="kstep-animation"')[0])).split())
            _, _, trace = course.scripted_run(mech, name)
            assert f"outcome: {trace.outcome}" not in before, f"{mech}/{name}"
            if trace.violation is not None:
                assert " ".join(trace.violation.message.split()) not in before, f"{mech}/{name}"


def test_pages_load_bokehjs_from_static_and_carry_no_inline_bokehjs_or_widgets(site):
    from kstep.views.site import outputs  # MyST-NB: not at every worker's collection

    bokeh = (site / "_static" / "bokeh" / "bokeh.min.js").read_text()
    banner = bokeh[:200]  # BokehJS's licence header: present wherever the library is inlined
    for rel in site_pages(site):
        text = (site / rel).read_text()
        assert banner not in text, f"{rel} inlines BokehJS"
        assert outputs.WIDGET_VIEW not in text and "widget-state+json" not in text, rel
        if "data-root-id=" in text:
            for name in outputs.BOKEH_JS:
                assert re.search(rf'<script src="(\.\./)*_static/bokeh/{re.escape(name)}', text), f"{rel}: {name}"


def test_a_screenshot_of_each_chapter(browser, site, origin):
    SHOTS.mkdir(exist_ok=True)
    # One tab for every chapter (crawl: Python is held, not started once per chapter, and BokehJS and the
    # theme come from the HTTP cache after the first).
    p = Opened(browser, f"{origin}/index.html", origin=origin, crawl=True)
    try:
        for mech in MODELS:
            p.goto(f"{origin}/chapters/{mech}.html")
            shot = SHOTS / f"chapter-{mech}.png"
            p.page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
    finally:
        p.close()
