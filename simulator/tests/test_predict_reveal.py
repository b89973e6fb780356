"""The CLI's question table answers nothing before the reveal: ``kstep run`` without ``-c``.

Every scenario with questions (bundled, and every predict exercise's data) is run as a student
runs it; each question's answer is computed from the same run (its trace, written by ``--json``)
and searched for in what the student sees before ``-c``: the scenario's text, which tells the
outcome, is not there; no step from the first one a question is about shows what it did; no state
after the initial one shows a value.  On the site, a page whose player asks the scenario's
questions keeps the scenario's text, which tells the answers, folded below the player.
"""

import html
import re
from pathlib import Path

import pytest
from bokeh.embed import file_html
from bokeh.resources import INLINE
from browser import PAINTED, Opened

from kstep.cli import main
from kstep.engine import replay
from kstep.scenario_spec import questions, scenario
from kstep.grading import exercise, variants
from kstep.errors import UserError
from kstep import views
from kstep.views import course, notebook, predict
from kstep.views.player import Frames
from kstep.models import MODELS, make_model

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^ *(\d+) +\d+ +\S+ +(\S+) +(.*)$")  # step, tick, actor: label, the rest


def asked_scenarios():
    """(mechanism, scenario argument, extra arguments) of every scenario file that asks questions."""
    for mech in MODELS:
        for name in scenario.bundled(mech):
            sc = scenario.load(mech, MODELS[mech].scenario_schema, name)
            if sc.questions:
                yield pytest.param(mech, name, [], id=f"{mech}/{name}")
    for path in sorted((ROOT / "exercises").glob("*-predict")):
        ex = exercise.load(path)
        if ex.kind != "predict":  # mm-predict asks about a litmus test, not a scenario's run
            continue
        seeds = {}  # each scenario file once, with the first seed a variant gives it
        for v in variants.all_variants(ex.variants):
            seeds.setdefault(v["scenario"], v["seed"])
        for data, seed in seeds.items():
            yield pytest.param(ex.mechanism, str(path / data), ["-s", str(seed)], id=f"{ex.id}/{Path(data).stem}")


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("mech, name, extra", list(asked_scenarios()))
def test_nothing_before_the_reveal_answers_a_question(mech, name, extra, tmp_path, capsys):
    out_json = tmp_path / "run.json"
    main(["run", mech, "--scenario", name, *extra, "--json", str(out_json)])
    seen = capsys.readouterr().out
    run, model = replay.load(out_json, make_model)
    sc = scenario.load(mech, model.scenario_schema, name)
    answered = [a for a in questions.answers(model, sc.questions, run) if a.step]  # step 0: the initial state, given
    assert answered, "no question of this run to check"
    before = seen[:seen.index("Questions:")]

    # The scenario's own text narrates the run ("counts a miss"): not before the reveal.
    for text in (sc.description, sc.look_for):
        assert words(text)[:60] not in words(before)

    rows = {int(m.group(1)): m.groups()[1:] for m in map(ROW.match, before.splitlines()) if m}
    assert sorted(rows) == list(range(1, len(run.actions) + 1))  # every step (row 0, the given state, has no tick)
    for k in range(1, len(run.actions) + 1):  # no state after the initial one shows a value
        label, rest = rows[k]
        assert set(rest.split()[1 if label != "?" else 0:]) <= {"?"}, (k, rest)
    for a in answered:
        about_all = a.question.at.where == "end" or a.question.at.nth < 0
        first_hidden = 1 if about_all else a.step  # the step into the state asked about, and every later one
        for k in range(first_hidden, len(run.actions) + 1):
            assert rows[k][0] == "?" and set(rows[k][1].split()) == {"?"}, (a.question.id, k, rows[k])

    # The reveal shows it all: the answers, and every step's label.
    main(["run", mech, "--scenario", name, *extra, "-c"])
    revealed = capsys.readouterr().out
    assert all(f"answer: {questions.text(a.value)}" in revealed for a in answered)
    assert run.actions[-1].label in revealed


def visible_before_the_fold_text(text: str) -> str:
    """A page's text up to its folded "how this run goes" (scripts, styles and tags dropped)."""
    text = text.split('<details class="kstep-told">')[0]
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S)
    return words(html.unescape(re.sub(r"<[^>]+>", " ", text)))


def visible_before_the_fold(page: Path) -> str:
    return visible_before_the_fold_text(page.read_text())


@pytest.mark.slow  # the built site
def test_a_page_whose_player_asks_keeps_the_scenarios_text_folded_below_it(site):
    """The scenario's text and checked claims tell how the run goes, so on a page whose player asks the
    scenario's questions they come after the player, in a closed <details>; the tour's too."""
    pages = []
    for mech in MODELS:
        for name in scenario.bundled(mech):
            model, sc, run = course.scripted_run(mech, name)
            if predict.scenario_questions(run, model):
                pages.append((site / "animations" / mech / f"{name}.html", sc))
                if (mech, name) == ("vma-locks", "munmap-vs-fault"):
                    pages.append((site / "tour.html", sc))
    assert len(pages) >= 8
    for page, sc in pages:
        source = page.read_text()
        assert source.count('<details class="kstep-told">') == 1, page
        before = visible_before_the_fold(page)
        for text in (sc.description, sc.look_for, *(e.claim for e in sc.expect)):
            assert words(text)[:60] not in before, (page.name, text[:60])


@pytest.mark.slow  # the built site
def test_a_notebooks_predictions_are_not_answered_above_them_or_outside_their_blocks(site):
    """Notebook 01 asks how many misses T1 counts: the scenario's text, which narrates them, comes only
    after it; and no notebook page shows a question's why (its answer) outside a script."""
    page = site / "notebooks" / "01-per-vma-locks-and-rcu.html"
    before = page.read_text().split(notebook.BLOCK)[0]
    _, sc, _ = course.scripted_run("vma-locks", "munmap-vs-fault")
    assert words(sc.description)[:60] not in visible_before_the_fold_text(before)
    for nb in sorted((site / "notebooks").glob("0*.html")):
        if not notebook_questions_of(nb.stem):
            continue
        shown = visible_before_the_fold_text(nb.read_text())
        for q, why in notebook_questions_of(nb.stem).values():
            assert words(why)[:60] not in shown, (nb.name, q.id)


def notebook_questions_of(stem: str) -> dict:
    try:
        return notebook.notebook_questions(stem)
    except UserError:  # a notebook that asks nothing
        return {}


@pytest.mark.browser
def test_the_folded_text_is_not_on_screen_until_opened(browser, site):
    """In a browser the closed <details> shows its summary only; a click on it shows the text."""
    _, sc, _ = course.scripted_run("vma-locks", "munmap-vs-fault")
    first = sc.description.split()[:6]
    for page in (site / "animations" / "vma-locks" / "munmap-vs-fault.html", site / "tour.html"):
        opened = Opened(browser, page, predict=True)
        told = opened.page.locator("details.kstep-told")
        text = told.locator("p", has_text=" ".join(first)).first
        assert told.locator("summary").is_visible() and not text.is_visible(), page.name
        told.locator("summary").click()
        assert text.is_visible(), page.name
        opened.context.close()


def asked_runs():
    """Per mechanism whose scenarios ask questions, the bundled scenario that asks the most: (model, run).
    The player's charts and their axes are one code path for every page (player.js); these two runs ask
    mid-run and at the end, of counters that grow after the question."""
    for mech in MODELS:
        schema = MODELS[mech].scenario_schema
        asks = {name: len(scenario.load(mech, schema, name).questions) for name in scenario.bundled(mech)}
        name = max(asks, key=asks.get, default=None)
        if name is not None and asks[name]:
            model, _, run = course.scripted_run(mech, name)
            yield model, run


def fitted_ends(fits, frames: Frames, n: int) -> list[dict]:
    """Per frame k, each fitted range's end (by name) over frames 0..k, by Player.fit's rule."""
    columns = {f["range"].name: [max(frames.rows(f["source"], k)[f["column"]], default=0) for k in range(n + 1)]
               for f in fits if f["source"] is not None}
    out, tops = [], {}
    for k in range(n + 1):
        tops = {name: max(tops.get(name, 0), values[k]) for name, values in columns.items()}
        out.append({f["range"].name: max(f["least"], f["scale"] * (tops[f["range"].name] if f["source"] else n + 1)
                                         + f["add"]) for f in fits})
    return out


@pytest.mark.browser
def test_the_players_charts_show_nothing_of_the_steps_to_come_before_the_reveal(browser, tmp_path):
    """The player's own counters and charts: at each question's stop, every axis fitted to the run (a
    counter's, a count's over the steps) holds only the frames up to the one shown, as if the run ended
    there (an axis over the whole run tells how high a count goes before the student predicts it), and
    each counter reads its value at that frame; once every question is answered, the axes hold the run."""
    p = None
    try:
        for model, run in asked_runs():
            mech, name = run.mechanism, run.scenario
            lay = views.layout(run, model)
            frames = Frames(lay)
            fits = lay.select_one({"name": "kstep-player"}).args["kstep"]["fits"]
            assert fits and all(f["range"].name for f in fits), f"{mech}/{name}: a chart fitted to the run"
            ends = fitted_ends(fits, frames, len(run))

            path = tmp_path / f"{mech}-{name}.html"
            path.write_text(file_html(lay, resources=INLINE, title=name))  # the layout read above
            if p is None:
                p = Opened(browser, path, predict=True)
            else:
                p.goto(path)
            shown = "(names) => Object.fromEntries(names.map((n) => [n, Bokeh.documents[0].get_model_by_name(n).end]))"
            names = [f["range"].name for f in fits]
            asked = predict.predictions(run, model)
            assert asked, f"{mech}/{name}: its player asks"
            for q in asked:
                stop = q["step"] - 1
                p.js("m('kstep-slider').value = arg", len(run))  # a jump to the end stops before the question
                p.wait(f"m('kstep-slider').value === {stop} && !m('kstep-guess').disabled")
                p.page.evaluate(PAINTED)
                assert p.page.evaluate(shown, names) == pytest.approx(ends[stop]), f"{mech}/{name} {q['id']}"
                if "counters" in frames.exports:
                    assert p.shown("counters")["text"] == frames.rows("counters", stop)["text"], q["id"]
                p.click("Show me")
                p.wait(f"m('kstep-slider').value === {q['step']} && m('kstep-guess').disabled")
            p.page.evaluate(PAINTED)
            assert p.page.evaluate(shown, names) == pytest.approx(ends[len(run)]), f"{mech}/{name}: revealed"
        p.check_clean()
    finally:
        if p is not None:
            p.close()
