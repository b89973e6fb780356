"""A litmus page stepped by hand in a real browser, its LitmusSession running in Pyodide, served by
``kstep serve``.  SB under x86-TSO: the student issues both stores, lets both loads read memory past
their own buffered stores, drains the buffers and sees the weak outcome (0, 0); slides back to step 2,
drains P0's buffer first, and the run branches there to P1 reading x=1.  MP+wmb+rmb under arm64: the
student picks the forbidden candidate and the reveal ends on the axiom it breaks.  Every wait is on a
state of the page, never a sleep."""
import tomllib
from importlib import resources

import pytest

from browser import Opened
from kstep.source.excerpts import load
from kstep.memory.litmus import parse
from kstep.memory.stepping import stepped
from kstep.views import export
from kstep.views.litmus_live import LitmusSession
from test_interactive_browser import panel_at, served, slide_to

pytestmark = pytest.mark.browser

SB = next(s["litmus"] for s in tomllib.loads(resources.files("kstep.memory").joinpath("shapes.toml").read_text())
          ["shape"] if s["name"] == "SB")
WEAK = ["P0:WRITE_ONCE", "P1:WRITE_ONCE", "P0:READ_ONCE", "P1:READ_ONCE", "P0:drain", "P1:drain"]
BRANCH = ["P0:drain", "P1:READ_ONCE", "P0:READ_ONCE", "P1:drain"]  # from step 2


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("litmus-live")
    model, trace = stepped(parse(SB, "SB"), "tso", load()["excerpts"], seed=1)
    export.write_page(folder, trace, model, litmus=SB)
    with served(folder) as url:
        yield url


def pick(p, action, k):
    p.page.click(f'.kstep-live button[data-action="{action}"]')
    panel_at(p, "live", k)
    painted(p)


def painted(p):
    """Wait until the browser has painted what the last move changed (two animation frames)."""
    p.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def test_sb_weak_outcome_by_hand_under_tso_then_scrub_back_and_branch(browser, origin):
    p = Opened(browser, origin + "/index.html", origin=origin)
    try:
        panel_at(p, "ready")
        # First the recorded run, back over frames with fewer edges: the edge names' Text glyph once threw
        # in BokehJS there (check_clean, at the end, sees any error).
        for k in (6, 1, 6, 2):
            p.js(f"m('kstep-slider').value = {k}")
            p.wait(f"m('kstep-slider').value === {k}")
            painted(p)
        p.page.click('.kstep-live button[data-do="start"]')
        panel_at(p, "live", 0)
        expected = LitmusSession(SB, "SB", "tso")
        for k, action in enumerate(WEAK, start=1):
            pick(p, action, k)
            view = expected.step(action)
            assert p.shown("litmus-boxes")["head"] == view["board"]["litmus-boxes"]["head"], f"step {k}"
        body = p.shown("litmus-boxes")["body"][-1]
        assert "0:r0=0 1:r0=0" in body and "the exists clause holds" in body
        assert p.page.locator(".kstep-live button[data-action]").count() == 0  # the run is over

        slide_to(p, 2)  # both stores still in their buffers
        assert sorted(p.page.eval_on_selector_all(".kstep-live button[data-action]",
                                                  "(bs) => bs.map((b) => b.dataset.action)")) == \
            ["P0:READ_ONCE", "P0:drain", "P1:READ_ONCE", "P1:drain"]
        for k, action in enumerate(BRANCH, start=3):
            pick(p, action, k)
        body = p.shown("litmus-boxes")["body"][-1]
        assert "0:r0=0 1:r0=1" in body and "does not hold" in body
        assert p.page.inner_text(".kstep-live-schedule") == "P0:WRITE_ONCE P1:WRITE_ONCE " + " ".join(BRANCH)
        assert "step 6 / 6" in p.status()
        print(p.problems)
        p.check_clean()
    finally:
        p.close()


def test_a_student_picks_mps_forbidden_candidate_under_arm64_and_it_ends_on_the_broken_axiom(browser,
                                                                                                tmp_path):
    """MP with smp_wmb/smp_rmb under arm64: the student picks the candidate where the flag is read 1 and
    the data 0, reveals it in an order the model allows, and the last step names the axiom it breaks."""
    text = next(s["litmus"] for s in tomllib.loads(resources.files("kstep.memory").joinpath("shapes.toml")
                                                   .read_text())["shape"] if s["name"] == "MP+wmb+rmb")
    model, trace = stepped(parse(text, "MP+wmb+rmb"), "arm64", load()["excerpts"])
    export.write_page(tmp_path, trace, model, litmus=text)
    run = "arm64 d<-c f<-init x"
    expected = LitmusSession(text, "MP+wmb+rmb", run)
    with served(tmp_path) as url:
        p = Opened(browser, url + "/index.html", origin=url)
        try:
            panel_at(p, "ready")
            p.page.select_option('.kstep-live select[data-do="variant"]', run)
            p.page.click('.kstep-live button[data-do="start"]')
            panel_at(p, "live", 0)
            k = 0
            while p.page.locator(".kstep-live button[data-action]").count():
                action = p.page.get_attribute(".kstep-live button[data-action]", "data-action")
                k += 1
                pick(p, action, k)
                expected.step(action)
            assert k == len(expected.actions) and expected.view()["violation"]["invariant"] == "external"
            assert "forbidden by external" in p.js("m('kstep-banner').text")
            assert "forbidden by external" in p.shown("litmus-boxes")["head"][-1] + p.shown("litmus-boxes")["body"][-1]
            p.check_clean()
        finally:
            p.close()
