"""The course site's machinery without building it: the make course command, generated pages,
the exercise list, and what happens to notebook outputs (test_site.py builds and browses it)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from docutils.utils import new_document

from kstep.errors import UserError
from kstep.scenario_spec import scenario
from kstep.models import MODELS
from kstep.views import course
from kstep.views.site import pages

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_course_refuses_an_out_folder_whose_parent_is_missing(tmp_path, capsys):
    status = course.main(["--docs", str(DOCS), "--out", str(tmp_path / "no" / "course")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "does not exist" in err
    assert not (tmp_path / "no").exists()


def test_course_refuses_a_docs_folder_without_conf_py(tmp_path, capsys):
    status = course.main(["--docs", str(tmp_path), "--out", str(tmp_path / "course")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "no conf.py" in err
    assert not (tmp_path / "course").exists()


class App:
    def __init__(self, srcdir):
        self.srcdir = srcdir


def test_a_deleted_site_is_rebuilt_whole_even_with_its_cache_left(tmp_path, monkeypatch):
    """Deleting the output but not OUT-cache left doctrees of pages that are gone, and Sphinx's
    incremental build then warned ("search index couldn't be loaded"): the build failed once."""
    import sphinx.cmd.build

    seen = []
    monkeypatch.setattr(sphinx.cmd.build, "build_main", lambda args: seen.append(doctrees.exists()) or 0)
    docs, out = tmp_path / "docs", tmp_path / "course"
    docs.mkdir()
    (docs / "conf.py").write_text("")
    doctrees = tmp_path / "course-cache" / "doctrees"
    doctrees.mkdir(parents=True)
    course.build(docs, out)
    assert seen == [False], "the doctrees of a site that is gone were kept"
    out.mkdir()
    (out / "searchindex.js").write_text("")
    doctrees.mkdir(parents=True)
    course.build(docs, out)
    assert seen == [False, True], "a whole site's doctrees must be kept for the incremental build"


@pytest.mark.parametrize("jobs", [2, 3])
def test_a_parallel_build_reads_each_notebook_in_a_chunk_of_its_own_and_every_page_once(tmp_path, jobs):
    """Sphinx's reading processes take consecutive names in chunks: sorted, the notebooks fell into one
    chunk and were executed one after another (make test-site's notebooks, 114 s on one process)."""
    from sphinx.util.parallel import make_chunks

    from kstep.views.site import spread_notebooks

    names = sorted([f"animations/page-{k:03}" for k in range(139)] + [f"notebooks/0{k}" for k in range(1, 7)])
    env = SimpleNamespace(doc2path=lambda name: Path(name + (".ipynb" if name.startswith("notebooks/") else ".md")))
    app = SimpleNamespace(parallel=jobs, config=SimpleNamespace(nb_execution_mode="cache",
                                                                nb_execution_cache_path=str(tmp_path / "cache")))
    read = list(names)
    spread_notebooks(app, env, read)
    assert sorted(read) == names
    chunks = make_chunks(read, jobs)
    assert [chunk[0] for chunk in chunks[:6]] == [f"notebooks/0{k}" for k in range(1, 7)]
    assert all(sum(name.startswith("notebooks/") for name in chunk) <= 1 for chunk in chunks)
    assert (tmp_path / "cache" / "global.db").is_file(), "the processes would race to create the cache"


@pytest.mark.parametrize("before", [None, "1"])
def test_the_build_skips_bokehs_document_checks_fixes_the_kernels_hash_seed_and_gives_the_environment_back(
        tmp_path, monkeypatch, before):
    """Bokeh's checks of every document it serializes were a fifth of each player's embedding; they
    only log, and test_views runs them on every bundled scenario's layout.  A notebook kernel's hash
    seed ordered its plots' colour columns differently at each build."""
    import sphinx.cmd.build
    from bokeh.settings import settings

    for name in course.BUILD_ENV:
        if before is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, before)
    seen = []
    monkeypatch.setattr(sphinx.cmd.build, "build_main", lambda args: seen.append(
        (settings.perform_document_validation(), os.environ["PYTHONHASHSEED"])) or 1)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "conf.py").write_text("")
    with pytest.raises(UserError):  # a failed build gives it back too
        course.build(tmp_path / "docs", tmp_path / "course")
    assert seen == [(False, "0")]  # the notebook kernels inherit os.environ
    assert [os.environ.get(name) for name in course.BUILD_ENV] == [before] * len(course.BUILD_ENV)


def test_generated_pages_follow_the_scenarios_and_broken_variants(tmp_path):
    stale = tmp_path / pages.GENERATED / "rcu" / "gone.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("# a scenario that no longer exists\n")
    pages.write_pages(App(tmp_path))
    root = tmp_path / pages.GENERATED
    written = {str(p.relative_to(root)) for p in root.rglob("*.md")}
    expected = {f"{m}/{n}.md" for m in MODELS for n in scenario.bundled(m)}
    expected |= {f"{m}/broken-{v.name}.md" for m in MODELS for v in pages.broken_variants(m)}
    assert written == expected
    page = root / "rcu" / "grace-period-basics.md"
    assert "{kstep-scenario} rcu grace-period-basics" in page.read_text()
    # An unchanged page is not rewritten, so Sphinx does not read it again.
    mtime = page.stat().st_mtime_ns
    pages.write_pages(App(tmp_path))
    assert page.stat().st_mtime_ns == mtime


def test_the_exercise_list_reads_exercise_toml_by_mechanism(tmp_path):
    for name, body in {"b-rcu-rule": 'title = "A grace-period rule"\nmechanism = "rcu"\nkind = "implement"\n',
                       "a-both": 'title = "Two at once"\nmechanisms = ["rcu", "qspinlock"]\n',
                       "c-other": 'title = "Locks"\nmechanism = "qspinlock"\n'}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "exercise.toml").write_text(body)
    found = pages.exercises(tmp_path, "rcu")
    assert [(folder.name, meta["title"]) for folder, meta in found] == [
        ("a-both", "Two at once"), ("b-rcu-rule", "A grace-period rule")]
    assert pages.exercises(tmp_path / "missing", "rcu") == []


def output(*mime_types):
    """A notebook output as MyST-NB parses it: a mime bundle with one container per mime type."""
    bundle = nodes.container(nb_element="mime_bundle")
    for mime in mime_types:
        bundle += nodes.container("", nodes.comment("", mime), mime_type=mime)
    return bundle


def test_notebook_outputs_lose_bokehjs_loaders_and_widgets_and_keep_bokeh_embeds():
    from kstep.views.site import outputs  # MyST-NB: not at every worker's collection

    doc = new_document("notebook")
    load = output("application/javascript", outputs.BOKEH_LOAD)
    embed = output("application/javascript", outputs.BOKEH_EXEC)
    widget = output(outputs.WIDGET_VIEW, "text/plain")
    plain = output("text/plain")
    doc += [load, embed, widget, plain]
    assert not doc.get(pages.BOKEH)
    outputs.clean_outputs(None, doc)
    assert list(doc.children) == [embed, plain]
    assert [c["mime_type"] for c in embed.children] == ["application/javascript"]
    assert doc[pages.BOKEH]


def test_a_page_without_bokeh_output_loads_no_bokehjs():
    from kstep.views.site import outputs  # MyST-NB: not at every worker's collection

    doc = new_document("page")
    doc += output("text/plain")
    outputs.clean_outputs(None, doc)
    assert not doc.get(pages.BOKEH)


def test_every_chapter_names_a_main_scenario_of_its_own_to_open_with():
    """The source side of test_site.py's check on the built chapters: each chapter's kstep-player comes
    before its first section and names one of its mechanism's bundled scenarios."""
    for mech in MODELS:
        lines = (DOCS / "chapters" / f"{mech}.md").read_text().splitlines()
        player = next(k for k, line in enumerate(lines) if line.startswith("```{kstep-player}"))
        section = next(k for k, line in enumerate(lines) if line.startswith("## "))
        assert player < section, mech
        _, shown, name = lines[player].split()
        assert shown == mech and name in scenario.bundled(mech), lines[player]


def test_every_chapters_players_can_be_scheduled_by_hand_and_ask_their_scenarios_questions():
    """A chapter's animations are its scenarios' pages: each player there offers interactive scheduling
    (its live mark, and interactive.js on the page) and, where the scenario has [[questions]], predict
    mode asks them."""
    asked = set()
    for mech in MODELS:
        chapter = (DOCS / "chapters" / f"{mech}.md").read_text()
        assert f"{{kstep-animations}} {mech}" in chapter, mech
    # Every page's player goes through the same directive: the mechanisms whose scenarios ask questions,
    # and one whose scenarios ask none, cover it (laying out every chapter's player would take minutes).
    for mech in ("vma-locks", "fork-batch", "rcu"):
        model = MODELS[mech]()
        with_questions = [n for n in scenario.lecture_order(mech)
                          if scenario.load(mech, model.scenario_schema, n).questions]
        for name in (with_questions or scenario.lecture_order(mech))[:1]:
            model, sc, trace = course.scripted_run(mech, name)
            directive = SimpleNamespace(state=SimpleNamespace(document={}))
            raw = pages.KstepDirective.animation(directive, trace, model).astext()
            assert directive.state.document == {pages.BOKEH: True, pages.LIVE: True}, f"{mech}/{name}"
            assert '"live"' in raw and f'"{mech}"' in raw, f"{mech}/{name}: no interactive scheduling"
            if sc.questions:
                assert any(f'"{q.id}"' in raw for q in sc.questions), f"{mech}/{name}: predict mode asks nothing"
                asked.add(mech)
    assert {"vma-locks", "fork-batch"} <= asked
    from kstep.views.site import outputs  # MyST-NB: not at every worker's collection

    added = []  # and a page holding one loads interactive.js
    outputs.add_bokehjs(SimpleNamespace(add_js_file=lambda name, **kw: added.append(name)), "chapters/rcu", None,
                        {}, {pages.BOKEH: True, pages.LIVE: True})
    assert "kstep/interactive.js" in added


def test_the_variants_table_shows_each_tso_verdict_of_the_file_beneath_sc_in_its_own_cell():
    """The instructor guide's tso cells are the table's: none dropped, none moved to another scenario or variant."""
    import json
    mech = "qspinlock"
    table = json.loads((Path(course.__file__).parent.parent / "verdicts.json").read_text())["verdicts"][mech]
    directive = SimpleNamespace(arguments=[mech], mechanism=lambda: mech)
    grid, sentence = pages.VariantsDirective.run(directive)
    header, *rows = ([[entry.astext().split("\n\n") for entry in row.findall(nodes.entry)]
                      for row in grid.findall(nodes.row)])
    names = [cell[0] for cell in header[3:]]
    shown = {(name, row[0][0].removesuffix(" (broken)")): cell
             for row in rows for name, cell in zip(names, row[3:])}
    def said(r):
        return f"{r['kind']}: {r['invariant']} in {r['steps']} steps" if r["verdict"] == "violation" else r["verdict"]

    def tso_said(r):
        if "tso" not in r:
            return []
        if r["tso"]["verdict"] == "refused":
            return ["tso: refused"]
        return [f"tso (buffers of {r['tso']['store_buffer']}): {said(r['tso'])}"]

    expected = {(name, variant): [said(r)] + tso_said(r)
                for name, by_variant in table.items() for variant, r in by_variant.items()}
    assert shown == expected
    tso = [cell[1] for cell in shown.values() if len(cell) == 2]
    assert any(t.endswith(" steps") for t in tso) and "tso: refused" in tso, "the table has both"
    assert "POWER" in sentence.astext() and "store buffers" in sentence.astext()


def tso_player_directive(**options):
    """The vma-locks chapter's ``kstep-tso-player`` directive outside Sphinx, its options changed by ``options``."""
    from test_interactive_tso import chapter_tso_player

    args, chapter, _ = chapter_tso_player()

    class Document(dict):
        settings = SimpleNamespace(env=SimpleNamespace(docname="chapters/vma-locks"))

    directive = object.__new__(pages.TsoPlayerDirective)
    directive.arguments, directive.lineno = list(args), 1
    directive.options = {**chapter, "step": int(chapter["step"]), "cpu": int(chapter["cpu"]), **options}
    directive.state = SimpleNamespace(document=Document())
    return directive


def test_the_chapters_tso_player_is_the_schedules_run_under_tso_with_its_claim_checked():
    from kstep import experiment

    claim, animation, cmd = tso_player_directive().run()
    assert claim.astext().startswith("✓ After step 31 (W: vma_end_write_all), CPU 2's store buffer holds "
                                     "vma->vm_flags (VMA 0) = VM_READ; mm->mm_lock_seq = 2, oldest first")
    raw = animation.astext()
    assert '"store-buffers"' in raw and '"live"' in raw and '"relaxed-mm-lock-seq"' in raw
    assert '["memory_model",{"type":"map","entries":[["name","tso"],["store_buffer",2]]}]' in raw
    assert "--memory-model tso -P 'T1*3 W*2 SB2" in cmd.astext()
    d = tso_player_directive(holds="mm->mm_lock_seq = 2; vma->vm_flags (VMA 0) = VM_READ")  # the wrong order
    ex = experiment.open("vma-locks", "recheck-race", "relaxed-mm-lock-seq").under("tso")
    wrong = d.claim("vma-locks", "relaxed-mm-lock-seq", ex.model, ex.run(schedule=d.options["schedule"]))
    assert wrong.astext().startswith("✗ After step 31")


def chapter_timed_players(path="docs/chapters/vma-locks.md") -> list[tuple[str, str, str]]:
    """(mechanism, scenario, variant) of each ``kstep-player`` block with ``:timed:`` in the chapter."""
    import re
    text = (Path(__file__).resolve().parents[2] / path).read_text()
    blocks = re.findall(r"```\{kstep-player\} (\S+) (\S+)\n((?::\w+:.*\n)+)```", text)
    return [(mech, name, dict(re.findall(r":(\w+):[ ]*(.*)", opts))["variant"])
            for mech, name, opts in blocks if ":timed:" in opts]


def timed_player_directive(mech, name, variant):
    directive = object.__new__(pages.PlayerDirective)
    directive.arguments, directive.lineno = [mech, name], 1
    directive.options = {"timed": None, "variant": variant}
    directive.state = SimpleNamespace(document={})
    return directive


def test_the_vma_chapters_timed_players_say_the_makespan_kstep_run_timed_prints(capsys):
    """The seed table's story played in time: app launch under v6.12, then no-per-vma-lock. Each player's
    caption and its time panel's title give the makespan ``kstep run --timed -c`` prints for the same run, and
    what the chapter says of them holds: no fault waits with per-VMA locks; without them both faults wait
    and all three threads queue for mmap_lock's line, the only line anyone queues for."""
    import re
    from test_cli import kstep

    players = chapter_timed_players()
    assert [(m, n, v) for m, n, v in players] == [("vma-locks", "android-app-launch", "v6.12"),
                                                  ("vma-locks", "android-app-launch", "no-per-vma-lock")]
    said = {}
    for mech, name, variant in players:
        directive = timed_player_directive(mech, name, variant)
        caption, animation, cmd = directive.run()
        assert directive.state.document == {pages.BOKEH: True}, "a timed player only plays: no live mark"
        assert '"live"' not in animation.astext()
        rc, out, err = kstep(capsys, *cmd.astext().split()[1:])
        assert rc == 0, err
        answers = dict(re.findall(r"^  (\w+): (.*)$", out, re.M))
        makespan = answers["makespan_ns"]
        assert f"the run ends at {makespan} ns." in caption.astext()
        assert f"the run ends at {makespan} ns" in animation.astext()  # the time panel's title
        said[variant] = answers
    new, old = said["v6.12"], said["no-per-vma-lock"]
    assert new["waiting_ns"] == "none" and new["vma_lock_success"] == "4"
    waited = dict(w.split("=") for w in old["waiting_ns"].split(", "))
    assert float(waited["F1"]) > 0 and float(waited["F2"]) > 0 and old["mmap_lock_faults"] == "4"
    assert set(dict(w.split("=") for w in old["line_wait_ns"].split(", "))) == {"F1", "F2", "S"}
    assert old["line_queue_ns"].startswith("mm.mmap_lock=") and "," not in old["line_queue_ns"]
    assert float(new["makespan_ns"]) < float(old["makespan_ns"])


def test_a_timed_player_refuses_a_variant_the_mechanism_lacks_and_variant_without_timed():
    from docutils.parsers.rst import DirectiveError

    with pytest.raises(DirectiveError) as e:
        timed_player_directive("vma-locks", "android-app-launch", "nonesuch").run()
    assert "'nonesuch'" in e.value.msg
    directive = timed_player_directive("vma-locks", "android-app-launch", "v6.12")
    directive.options = {"variant": "v6.12"}
    with pytest.raises(DirectiveError) as e:
        directive.run()
    assert e.value.msg.startswith(":variant: goes with :timed:")
