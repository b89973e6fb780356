"""The course notebooks: each runs headlessly from top to bottom, and none is committed with outputs.

Outputs are never committed: an executed notebook carries BokehJS inline (megabytes) and random
Bokeh ids, so it is executed at site build instead.  ``test_executes`` checks the site build's run of
each notebook when it is current (``make test`` builds the site first), and runs the notebook itself
otherwise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 300  # seconds for one cell: only a guard against a hung kernel, not a performance check


def read(path: Path):
    import nbformat  # with jsonschema's format grammars: seconds, not paid at every worker's collection

    return nbformat.read(path, as_version=4)


def test_the_course_has_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    import nbformat

    nb = read(path)
    nbformat.validate(nb)
    dirty = [f"cell {k} ({cell.get('id', '?')}): "
             + ("outputs" if cell.outputs else f"execution count {cell.execution_count}")
             for k, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)]
    assert not dirty, f"{path.name} was saved with outputs; clear them before committing: {dirty}"
    # JupyterLab can also save widget state into the notebook's metadata: an output by another name.
    assert "widgets" not in nb.metadata, f"{path.name} carries saved widget state"


ASK = re.compile(r"""\bask\([^()]*?"([a-z0-9-]+)"\)""")


def asked(nb) -> list[str]:
    """The question ids the notebook's cells ask, in order."""
    return [qid for cell in nb.cells if cell.cell_type == "code" for qid in ASK.findall(cell.source)]


def plain(text: str) -> str:
    """Text as a reader sees it: no Markdown marks, blanks collapsed."""
    return " ".join(re.sub(r"[`*_]", "", text).split())


def sentences(why: str) -> list[str]:
    """The sentences of an explanation long enough to give it away if they appeared elsewhere."""
    return [s for s in re.split(r"(?<=[.:;])\s+", plain(why)) if len(s) >= 40]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_answers_are_only_given_through_predict_mode(path):
    """A cell hidden by metadata is no answer key: JupyterLab expands its output when Run All runs it
    and shows the output's first line while it is collapsed.  Every Predict is asked by a question
    block (``ask(trace, model, id)``, kstep.views.notebook) whose answer and why the notebook's
    source never contains; nothing else hides or holds an answer."""
    nb = read(path)
    hidden = [cell.get("id", "?") for cell in nb.cells
              if cell.metadata.get("jupyter", {}).get("outputs_hidden") or cell.metadata.get("jupyter", {}).get(
                  "source_hidden") or {"hide-output", "hide-cell", "hide-input"} & set(cell.metadata.get("tags", ()))]
    assert hidden == [], f"{path.name}: cells hidden by metadata: {hidden}"
    predicts = [cell for cell in nb.cells if cell.cell_type == "markdown"
                and re.search(r"^> \*\*Predict \d+\.\*\*", cell.source, re.M)]
    folded = [cell.get("id", "?") for cell in nb.cells if "<details" in cell.source or "answer(" in cell.source]
    assert folded == [], f"{path.name}: answers kept outside predict mode, in {folded}"
    if not predicts:
        return
    from kstep.views.notebook import notebook_questions

    questions = notebook_questions(path.stem)
    assert sorted(asked(nb)) == sorted(questions), f"{path.name}: each question of its file is asked once"
    assert len(asked(nb)) >= len(predicts), f"{path.name}: a Predict without its question"
    text = plain(" ".join(cell.source for cell in nb.cells))
    for qid, (_, why) in questions.items():
        given = [s for s in sentences(why) if s in text]
        assert given == [], f"{path.name}: the why of {qid} is in the notebook itself: {given}"


def executed_by_the_site_build(nb):
    """The notebook as ``make course`` executed it, from its jupyter-cache, or None.

    The site build runs every notebook top to bottom (MyST-NB, a raising cell fails the build) and
    keeps the results per digest of the kstep sources, so a cache entry is this very notebook run
    against this very kstep; ``make test`` builds the site before the tests start."""
    from kstep.views.course import source_digest

    where = NOTEBOOK_DIR.parent / "build" / "course-cache" / "notebooks" / source_digest()
    if not (where / "global.db").is_file():
        return None
    from jupyter_cache import get_cache

    try:
        return get_cache(where).merge_match_into_notebook(nb)[1]
    except KeyError:  # this notebook's code changed since that build
        return None


def executed_here(nb):
    import nbclient
    import nbformat
    # One extra cell, run last, tells which interpreter the kernel was: the venv's, not a system one.
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix, end='')"))
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError, naming the cell, when any cell raises
    kernel_prefix = "".join(out.get("text", "") for out in nb.cells.pop().outputs)
    assert kernel_prefix == sys.prefix, f"the kernel ran in {kernel_prefix}, not in this environment ({sys.prefix})"
    return nb


def test_the_python3_kernel_is_this_environment():
    """The command the site build and ``executed_here`` start a notebook's kernel with runs this
    venv's interpreter, not a system one that lacks kstep or has another version of it."""
    from jupyter_client.manager import KernelManager

    command = KernelManager(kernel_name="python3").format_kernel_cmd()
    assert Path(command[0]) == Path(sys.executable), command


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executes(path):
    nb = executed_by_the_site_build(read(path)) or executed_here(read(path))
    errors = [cell.id for cell in nb.cells if cell.cell_type == "code"
              for out in cell.outputs if out.output_type == "error"]
    assert not errors, f"cells that raised: {errors}"
    # After Run All: each question is one block, no answer's why shows anywhere outside its block, and
    # no output that shows a run's answers outright (a verdict table) comes before a question about that run.
    from kstep.views.notebook import ANSWERS, BLOCK, notebook_questions

    outside, answered = [], set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        html = [out.data["text/html"] for out in cell.outputs if "text/html" in out.get("data", {})]
        if ASK.search(cell.source):
            assert html and re.match(rf'<div class="{BLOCK}"[^>]*? data-about="', html[0]), cell.id
        for h in html:
            for kind, about in re.findall(rf'<div class="({BLOCK}|{ANSWERS})"[^>]*? data-about="([^"]*)"', h):
                assert kind == ANSWERS or about not in answered, \
                    f"cell {cell.id}: {about}'s answers show above its question"
                answered |= {about} if kind == ANSWERS else set()
        outside += [re.sub(rf'<div class="{BLOCK}".*?</script></div>', "", h, flags=re.S) for h in html]
        outside += [out.get("text", "") for out in cell.outputs if out.output_type == "stream"]
        outside += [out.data.get("text/plain", "") for out in cell.outputs if "data" in out]
    shown = plain(" ".join(outside))
    for qid, (_, why) in (notebook_questions(path.stem) if asked(nb) else {}).items():
        assert [s for s in sentences(why) if s in shown] == [], f"the why of {qid} shows outside its block"
