"""The store buffers of a tso run, as Chromium draws them from a page ``kstep show --html`` wrote offline:
at every frame, moving forward and back, each CPU's row shows the entries the trace's state holds, oldest
first, and a drained entry is gone (test_store_buffers_view.py's ``drawn`` and ``held``)."""

from __future__ import annotations

import pytest
from browser import Opened
from test_store_buffers_view import SOURCE, drawn, held

from kstep.cli import main, load_trace


@pytest.mark.browser
def test_the_page_draws_the_buffers_the_trace_holds_at_each_step(browser, tmp_path, capsys):
    saved, page = tmp_path / "run.json", tmp_path / "run.html"
    assert main(["run", "qspinlock", "--scenario", "two-waiters", "--memory-model", "tso", "-s", "7",
                 "--json", str(saved)]) == 0
    assert main(["show", str(saved), "--html", str(page)]) == 0
    capsys.readouterr()
    trace, model = load_trace(str(saved))
    cpus = len(trace.states[0][-1])
    drains = [k + 1 for k, a in enumerate(trace.actions) if a.label == "drain_store_buffer"]
    assert any(len(b) == 2 for s in trace.states for b in s[-1]) and drains
    p = Opened(browser, page)
    try:
        for k in [*range(len(trace) + 1), *drains, 0]:  # forward, then back to each drain, then the start
            p.js("m('kstep-slider').value = arg", k)
            p.wait(f"[].concat(m('kstep-status').html).join('').includes('step {k} / ')")
            assert drawn(p.shown(SOURCE), cpus) == held(model, trace.states[k]), f"frame {k}"
        p.check_clean()
    finally:
        p.close()
