"""One meaning per colour across every panel of every mechanism (issue 12): what the views declare.

A page of every mechanism and of every layout its view draws differently (the qspinlock's three
words, fork's two page-table formats) is laid out from a short run (keys and glyphs are declared by
the view, not by the run), and two things are read from it: the colour key, where each chip gives
a colour and what it means (the bold part of the chip, or the chip's whole text when it has none), and
every colour a glyph, an annotation, a colour mapper or a per-frame colour column paints with.
"""

import re
from html import unescape

import numpy as np
import pytest
from bokeh.models import Annotation, ColorMapper, GlyphRenderer, Title

import kstep
from kstep import views
from kstep.views import style

STEPS = 12  # a page's keys and glyphs do not depend on how long its run is
CHIP = re.compile(r'<span class="kstep-chip"><span (?:class="kstep-swatch" )?style="(?P<css>[^"]*)">(?P<symbol>[^<]*)'
                  r'</span>(?P<text>.*?)</span>(?= <span class="kstep-chip">|</div>)')
HEX = re.compile(r"#[0-9A-Fa-f]{6}\b")
PAGES = [("damon", "hot-block", None), ("fork-batch", "mthp-batches", None), ("fork-batch", "contpte-arm64", None),
         ("qspinlock", "three-waiters", None), ("qspinlock", "three-waiters", "ticket"),
         ("qspinlock", "powerpc-stealing", None), ("rcu", "call-rcu-callback", None),
         ("vma-locks", "munmap-vs-fault", None)]


def short_run(mech, name, variant):
    ex = kstep.open(mech, name, variant)
    if ex.scenario.schedule and not variant:
        return ex.run(schedule=ex.scenario.schedule, max_steps=STEPS), ex.model
    return ex.run(seed=1, max_steps=STEPS), ex.model


def chips(key_html: str) -> list[tuple[str, str]]:
    """(colour, meaning) of every chip of a colour key: a swatch's fill, an outline's colour or a mark's colour."""
    out = []
    for m in CHIP.finditer(key_html):
        css = m["css"]
        outline = re.search(r"border:3px solid (#[0-9A-Fa-f]{6})", css)
        colour = outline[1] if outline else HEX.search(css)[0]
        bold = re.match(r"<b>(.*?)</b>", m["text"].strip())
        out.append((colour.upper(), unescape(bold[1] if bold else re.sub(r"<[^>]+>", "", m["text"]).strip())))
    return out


def painted(lay) -> set[str]:
    """Every colour the layout's plots paint with: their glyphs' and annotations' own colours, the colour
    columns of the per-frame sources, and the palette entries a colour mapper gives the values drawn."""
    spec = lay.select_one({"name": "kstep-player"}).args["kstep"]
    strings = spec["strings"]
    stores = {f"kstep-src-{s['name']}": s for s in spec["sources"]}
    colours = set()
    refs = lay.references()
    renderers = [r for r in refs if isinstance(r, GlyphRenderer)]  # r.glyph: not Bokeh's faded selection copies
    for model in [r.glyph for r in renderers] + [a for a in refs if isinstance(a, Annotation) and not isinstance(a, Title)]:
        for part in ("fill", "line", "text"):
            value, alpha = getattr(model, f"{part}_color", None), getattr(model, f"{part}_alpha", 1.0)
            if isinstance(value, str) and alpha != 0:  # an invisible line (a curtain's) paints nothing
                colours.add(value)
    for r in renderers:
        spec_ = getattr(r.glyph, "fill_color", None)
        if isinstance(getattr(spec_, "transform", None), ColorMapper):
            drawn = np.unique(stores[r.data_source.name]["store"].data[spec_.field])
            colours.update(spec_.transform.palette[int(v)] for v in drawn)
    for src in spec["sources"]:
        for col, kind in src["cols"]:
            if kind == "str":
                values = {strings[int(i)] for i in np.unique(src["store"].data[col])}
                colours.update(v for v in values if HEX.fullmatch(v))
    return {c.upper() for c in colours if HEX.fullmatch(c)}


@pytest.fixture(scope="module")
def pages():
    out = {}
    for mech, name, variant in PAGES:
        trace, model = short_run(mech, name, variant)
        lay = views.layout(trace, model)
        out[mech, name, variant] = (lay.select_one({"name": "kstep-key"}).text, painted(lay))
    return out


def test_no_colour_is_given_two_meanings(pages):
    meanings: dict[str, dict[str, set]] = {}
    for (mech, _, _), (key, _) in pages.items():
        for colour, meaning in chips(key):
            if colour not in (style.INK, style.DARK):  # ink: a mark or an outline named by its own words
                meanings.setdefault(colour, {}).setdefault(meaning, set()).add(mech)
    assert meanings, "no colour key found"
    twice = {c: {m: sorted(ms) for m, ms in by.items()} for c, by in meanings.items() if len(by) > 1}
    assert twice == {}, f"colours with more than one meaning across the keys: {twice}"


def test_every_colour_on_a_page_is_in_the_palette_and_its_key_states_it(pages):
    palette = {c.upper() for c in style.MEANINGS} | {c.upper() for c in style.NEUTRAL}
    for (mech, name, variant), (key, colours) in pages.items():
        stray = {c for c in colours if style.base(c) not in palette}
        assert stray == set(), f"{mech}/{name} ({variant}) paints with colours outside style.MEANINGS: {sorted(stray)}"
        keyed = {style.base(c) for c, _ in chips(key)}
        unexplained = {c for c in colours if style.base(c) in style.MEANINGS and style.base(c) not in keyed
                       and c not in style.HEAT and style.base(c) != style.EMPTY}
        assert unexplained == set(), f"{mech}/{name} ({variant}): its key does not say what {sorted(unexplained)} mean"


def test_a_chip_states_its_colours_meaning():
    html = style.key_html("VMAs:", [("read-locked by faults", style.HOLDS)], outline=[("a bit changed", style.STEP)],
                          marks=[("▲", style.DARK, "took a step")])
    assert chips(html) == [(style.HOLDS, "holds a lock"), (style.STEP, "this step"), (style.DARK, "took a step")]
    assert "<b>holds a lock</b>: read-locked by faults" in html
