"""The course notebooks: each runs headlessly from top to bottom, and none is committed with outputs.

Outputs are never committed: an executed notebook carries BokehJS inline (megabytes) and random
Bokeh ids, so it is executed here, in CI and at site build instead.
"""

from __future__ import annotations

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
    kernel_prefix = "".join(out.get("text", "") for out in nb.cells[-1].outputs)
    assert kernel_prefix == sys.prefix, f"the kernel ran in {kernel_prefix}, not in this environment ({sys.prefix})"
