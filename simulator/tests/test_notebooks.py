"""The course notebooks: each runs headlessly from top to bottom, and none is committed with outputs.

Outputs are never committed: an executed notebook carries BokehJS inline (megabytes) and random
Bokeh ids, so it is executed here, in CI and at site build instead.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook extra is not installed")

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 300  # seconds for one cell: only a guard against a hung kernel, not a performance check


def read(path: Path):
    return nbformat.read(path, as_version=4)


def test_the_course_has_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = read(path)
    nbformat.validate(nb)
    dirty = [f"cell {k} ({cell.get('id', '?')}): "
             + ("outputs" if cell.outputs else f"execution count {cell.execution_count}")
             for k, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)]
    assert not dirty, f"{path.name} was saved with outputs; clear them before committing: {dirty}"
    # JupyterLab can also save widget state into the notebook's metadata: an output by another name.
    assert "widgets" not in nb.metadata, f"{path.name} carries saved widget state"


def answer_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code" and re.fullmatch(r"answer-\d+", cell.get("id", ""))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_answers_stay_closed_however_the_notebook_is_run(path):
    """A cell hidden by metadata is no answer key: JupyterLab expands its output when Run All runs it
    and shows the output's first line while it is collapsed.  Every answer prints inside
    ``with answer(...)``, which shows it as one closed block, and nothing else hides a cell."""
    nb = read(path)
    hidden = [cell.get("id", "?") for cell in nb.cells
              if cell.metadata.get("jupyter", {}).get("outputs_hidden") or cell.metadata.get("jupyter", {}).get(
                  "source_hidden") or {"hide-output", "hide-cell", "hide-input"} & set(cell.metadata.get("tags", ()))]
    assert hidden == [], f"{path.name}: cells hidden by metadata: {hidden}"
    answers = answer_cells(nb)
    predicts = [cell for cell in nb.cells if cell.cell_type == "markdown"
                and re.search(r"^> \*\*Predict \d+\.\*\*", cell.source, re.M)]
    assert len(answers) == len(predicts), f"{path.name}: each Predict has its answer-N cell"
    for cell in answers:
        assert cell.source.startswith(f'with answer("Answer {cell.id.split("-")[1]}"):'), cell.id


def test_an_answer_block_is_closed_and_its_summary_gives_nothing_away():
    from kstep.views.notebook import answer_html

    html = answer_html("Answer 1", "T1 counts vma_lock_miss first <b>")
    summary = html[:html.index("</summary>")]
    assert html.startswith("<details") and " open" not in html[:html.index(">")]
    assert "vma_lock_miss" not in summary and "T1 counts vma_lock_miss first &lt;b&gt;" in html


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executes(path):
    nbclient = pytest.importorskip("nbclient", reason="the notebook extra is not installed")
    nb = read(path)
    # One extra cell, run last, tells which interpreter the kernel was: the venv's, not a system one.
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix, end='')"))
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError, naming the cell, when any cell raises
    errors = [cell.id for cell in nb.cells if cell.cell_type == "code"
              for out in cell.outputs if out.output_type == "error"]
    assert not errors, f"cells that raised: {errors}"
    for cell in answer_cells(nb):  # after Run All: one closed block, nothing printed beside it
        texts = [out for out in cell.outputs if out.output_type == "stream"]
        blocks = [out.data["text/html"] for out in cell.outputs if "text/html" in out.get("data", {})]
        assert texts == [] and len(blocks) >= 1 and blocks[0].startswith('<details class="kstep-answer">'), cell.id
    kernel_prefix = "".join(out.get("text", "") for out in nb.cells[-1].outputs)
    assert kernel_prefix == sys.prefix, f"the kernel ran in {kernel_prefix}, not in this environment ({sys.prefix})"
