"""Notebook answers that Run All does not give away.

An answer cell computes its answer from the run and prints it inside ``with answer("Answer 1"):``.
What it prints is shown as one closed ``<details>`` block whose summary says only which answer it
is: JupyterLab, a static page and the course site all draw it closed, with no first line showing,
however often the notebook is run, and the student opens it after predicting.
"""

from __future__ import annotations

import contextlib
import io
from html import escape
from typing import Iterator


def answer_html(title: str, text: str) -> str:
    """The closed block: ``title`` as its summary, ``text`` (what the cell printed) inside."""
    return (f'<details class="kstep-answer"><summary><b>{escape(title)}</b> (open it after you have predicted)'
            f'</summary><pre>{escape(text)}</pre></details>')


@contextlib.contextmanager
def answer(title: str) -> Iterator[None]:
    """Collect what the block prints and display it as a closed answer block."""
    from IPython.display import HTML, display

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        yield
    display(HTML(answer_html(title, out.getvalue())))
