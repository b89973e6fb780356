"""scripts/site-diff: two builds of the course site are the same site when they differ only in the
names Bokeh makes up per build; any other change to a page, or a page more or less, is a difference."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "site-diff"


@pytest.fixture(scope="module")
def site_diff():
    loader = importlib.machinery.SourceFileLoader("site_diff", str(SCRIPT))
    spec = importlib.util.spec_from_loader("site_diff", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def page(root: str, doc: str, div: str, data: str) -> str:
    """A page shaped like the site's animations: a root div and the embed script naming it."""
    return (f'<div id="{div}" data-root-id="{root}"></div>\n<script>const docs_json = {{"{doc}":{{"roots":'
            f'[{{"type":"object","id":"{root}","attributes":{{"source":{{"type":"ref","id":"p{int(root[1:]) + 1}"}},'
            f'"data":[{data}]}}}}]}}}};\nconst render_items = [{{"docid":"{doc}","roots":{{"{root}":"{div}"}}}}];'
            f"</script><p>step p2 of 9</p><pre>34 states, exhausted in 0.16 s</pre>")


def build(tmp_path: Path, name: str, pages: dict[str, str]) -> Path:
    site = tmp_path / name
    for rel, text in {"index.html": "<p>kstep</p>", **pages}.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    return site


BEFORE = {"animations/rcu/a.html": page("p1001", "62bedca9-e9a4-47b0-88dd-ddcec55a0c0d",
                                        "e785195f-a2ba-43b0-8583-9c90fb4049eb", "1,2,3")}


def test_pages_that_differ_only_in_bokeh_ids_uuids_and_durations_are_the_same_site(tmp_path, site_diff, capsys):
    before = build(tmp_path, "before", BEFORE)
    after = build(tmp_path, "after", {"animations/rcu/a.html": page(
        "p8952", "0d8e1f3c-1111-4b2a-9c3d-2e4f5a6b7c8d", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "1,2,3")
        .replace("in 0.16 s", "in 3.2 s")})
    assert site_diff.main([str(before), str(after)]) == 0
    assert "the same site (2 pages, 2 files)" in capsys.readouterr().out


@pytest.mark.parametrize("change", ["player data", "text that looks like an id", "a count", "a page less"])
def test_any_other_change_is_a_difference(tmp_path, site_diff, capsys, change):
    before = build(tmp_path, "before", BEFORE)
    text = BEFORE["animations/rcu/a.html"]
    after_pages = {"player data": {"animations/rcu/a.html": text.replace("1,2,3", "1,2,4")},
                   "text that looks like an id": {"animations/rcu/a.html": text.replace("step p2", "step p3")},
                   "a count": {"animations/rcu/a.html": text.replace("34 states", "35 states")},
                   "a page less": {}}[change]
    after = build(tmp_path, "after", after_pages)
    assert site_diff.main([str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert ("only in" if change == "a page less" else "differs: animations/rcu/a.html") in out


def test_a_folder_that_is_not_a_built_site_is_one_line_and_status_2(tmp_path, site_diff, capsys):
    site = build(tmp_path, "site", {})
    assert site_diff.main([str(site), str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a built site" in err
