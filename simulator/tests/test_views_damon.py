"""The DAMON view: its address axis, and its pages in a real browser (Chromium, offline).

The axis tests build layouts in Python.  The browser tests open the pages the way test_views_browser
does (file://, every http(s) request aborted and counted, console errors collected) and wait on
the player's state, never on time: one simulated run and one imported trace, a few seconds each.
"""

import re

import pytest

from browser import Opened
from kstep import views
from kstep.engine import RoundRobin, simulate
from kstep.lab.replay import damon_observed as observed
from kstep.views.boards.damon import LOG_FROM, AddressAxis
from kstep.views.player import Frames

from support import load
from test_damon_observed import DATA

UNIT = re.compile(r"^\+\d+(\.\d)? (KiB|MiB|GiB|TiB)$")


def layout_of(name, overrides=()):
    model, sc, start = load("damon", name, overrides=overrides)
    trace = simulate(model, start, RoundRobin(), scenario=sc.name, config=sc.config)
    return trace, views.layout(trace, model)


def axes_of(lay):
    strip = lay.select_one({"name": "kstep-plot-regions"}).xaxis[0]
    heat = lay.select_one({"name": "kstep-plot-heatmap"}).yaxis[0]
    return strip, heat


def assert_same_axis(strip, heat):
    assert strip.ticker.ticks == heat.ticker.ticks
    assert strip.major_label_overrides == heat.major_label_overrides


# --- the address axis ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def huge():
    """hot-block with a 64 GiB mmap area instead of 48 MiB, two aggregations."""
    return layout_of("hot-block", ["vmas.1.end=0x7f1000000000", "aggregations=2"])


def test_a_small_target_has_linear_ticks_in_kib_mib_gib_from_each_ranges_start():
    trace, lay = layout_of("hot-block", ["aggregations=1"])
    strip, heat = axes_of(lay)
    assert_same_axis(strip, heat)
    labels = [strip.major_label_overrides[t] for t in strip.ticker.ticks]
    assert [t for t in labels if t.startswith("0x")] == ["0x555555550000", "0x7f0000000000", "0x7ffc00000000"]
    offsets = [t for t in labels if not t.startswith("0x")]
    assert offsets and all(UNIT.match(t) for t in offsets), labels
    assert "+16 MiB" in offsets and "linear" in strip.axis_label
    axis = AddressAxis([(0x7F0000000000, 0x7F0003000000)])
    assert axis(0x7F0001800000) == pytest.approx(0.5)


def test_a_huge_target_is_drawn_on_a_log_axis_that_the_strip_and_the_heatmap_share(huge):
    trace, lay = huge
    strip, heat = axes_of(lay)
    assert_same_axis(strip, heat)
    assert "log" in strip.axis_label and "log" in heat.axis_label
    labels = [strip.major_label_overrides[t] for t in strip.ticker.ticks]
    assert {"+64 KiB", "+1 MiB", "+4 GiB"} <= set(labels), labels
    # a page at the start of the 64 GiB range takes a 24th of its width, not a 16-millionth
    axis = AddressAxis([(0x7F0000000000, 0x7F1000000000)])
    assert axis.log and axis(0x7F0000000000 + 4096) == pytest.approx(1 / 24)
    # where a region is drawn in the strip is where its heatmap cell is
    frames = Frames(lay)
    last_reset = max(k for k, s in enumerate(trace.states) if s.k.phase == "kdamond_reset_aggregated")
    rows = frames.rows("regions", last_reset)
    cells = Frames(lay).rows("heatmap-cells", len(trace))
    n = len(trace.states[last_reset].regions)
    assert rows["left"][:2 * n:2] == pytest.approx(cells["bottom"][-n:])
    assert rows["right"][:2 * n:2] == pytest.approx(cells["top"][-n:])


def test_the_axis_turns_logarithmic_at_log_from_bytes():
    assert not AddressAxis([(0, LOG_FROM - 4096)]).log
    assert AddressAxis([(0, LOG_FROM)]).log


# --- in the browser ------------------------------------------------------------------------------------


@pytest.mark.browser
def test_the_damon_page_loads_offline_and_stepping_redraws_the_region_strip(browser, tmp_path):
    model, sc, start = load("damon", "hot-block", overrides=["aggregations=2"])
    trace = simulate(model, start, RoundRobin(), scenario=sc.name, config=sc.config)
    path = tmp_path / "damon.html"
    views.save_html(trace, model, path)
    frames = Frames(views.layout(trace, model))
    p = Opened(browser, path)
    try:
        assert p.frame == 0
        first = p.shown("regions")
        p.click("Step")  # damon_va_init: the three regions, each split evenly
        p.wait("m('kstep-slider').value === 1")
        after = p.shown("regions")
        assert after != first and len(after["left"]) > len(first["left"])
        assert after["left"] == pytest.approx(frames.rows("regions", 1)["left"])
        assert "damon_va_init" in p.status()
        p.check_clean()
    finally:
        p.close()


@pytest.mark.browser
def test_an_imported_tracepoint_trace_shows_as_observed(browser, tmp_path):
    obs = observed.read(DATA / "hot-block.trace")
    trace, model = observed.observed_trace(obs, "hot-block.trace")
    path = tmp_path / "observed.html"
    views.save_html(trace, model, path)
    p = Opened(browser, path)
    try:
        assert p.page.get_by_text("observed on a real kernel").first.is_visible()
        n = p.js("m('kstep-slider').end")
        assert n == len(obs.snapshots)
        p.click("Step")
        p.wait("m('kstep-slider').value === 1")
        shown = p.shown("regions")
        assert len(shown["left"]) >= 2 * len(obs.snapshots[0].regions)
        p.check_clean()
    finally:
        p.close()
