"""An LKMM litmus page stepped by hand in a real browser, over ``kstep serve``: the LKMM runs in Pyodide from
the copy of the kernel tree's linux-kernel.bell, linux-kernel.cat and lock.cat that the page's kstep.zip
ships.  rcu-grace-period-free (a bundled mechanism test, LKMM-only: it takes RCU) is revealed step by step
as the Python session reveals it, and the last step names the rcu axiom its reader-after-free breaks.
Every wait is on a state of the page, never a sleep."""

import pytest

from browser import Opened
from kstep.source.excerpts import load
from kstep.memory import bundled
from kstep.memory.litmus import parse
from kstep.memory.stepping import stepped
from kstep.views import export
from kstep.views.litmus_live import LitmusSession
from test_interactive_browser import panel_at, served
from test_litmus_live_browser import pick

pytestmark = pytest.mark.browser

NAME = "rcu-grace-period-free"


def test_an_lkmm_page_steps_by_hand_to_the_axiom_its_execution_breaks(browser, tmp_path, linux_tree):
    text = bundled.path(NAME).read_text()
    model, trace = stepped(parse(text, NAME), "lkmm", load()["excerpts"])
    export.write_page(tmp_path, trace, model, litmus=text)
    expected = LitmusSession(text, NAME, "lkmm")
    with served(tmp_path) as url:
        p = Opened(browser, url + "/index.html", origin=url)
        try:
            panel_at(p, "ready")
            p.page.click('.kstep-live button[data-do="start"]')
            panel_at(p, "live", 0)
            k = 0
            while p.page.locator(".kstep-live button[data-action]").count():
                offered = p.page.eval_on_selector_all(".kstep-live button[data-action]",
                                                      "(bs) => bs.map((b) => b.dataset.action)")
                assert offered == [c["action"] for c in expected.view()["choices"]], f"step {k}"
                k += 1
                pick(p, offered[-1], k)
                view = expected.step(offered[-1])
                assert p.shown("litmus-boxes")["head"] == view["board"]["litmus-boxes"]["head"], f"step {k}"
            assert k == len(expected.actions) and expected.view()["violation"]["invariant"] == "rcu"
            assert "forbidden by rcu" in p.js("m('kstep-banner').text")
            assert "forbidden by rcu" in p.shown("litmus-boxes")["head"][-1] + p.shown("litmus-boxes")["body"][-1]
            p.check_clean()
        finally:
            p.close()
