"""Notebook answers that Run All does not give away.

An answer cell computes its answer from the run and prints (or displays) it inside
``with answer("Answer 1"):``.  What it prints is shown as one closed ``<details>`` block whose summary says only which answer it
is: JupyterLab, a static page and the course site all draw it closed, with no first line showing,
however often the notebook is run, and the student opens it after predicting.
"""

from __future__ import annotations

import contextlib
from html import escape
from typing import Iterator


def answer_html(title: str, text: str, html: str = "") -> str:
    """The closed block: ``title`` as its summary, ``text`` (what the cell printed) and ``html`` (the
    tables it displayed) inside."""
    printed = f"<pre>{escape(text)}</pre>" if text else ""
    return (f'<details class="kstep-answer"><summary><b>{escape(title)}</b> (open it after you have predicted)'
            f'</summary>{printed}{html}</details>')


@contextlib.contextmanager
def answer(title: str) -> Iterator[None]:
    """Collect what the block prints and displays and show it as one closed answer block."""
    from IPython.display import HTML, display
    from IPython.utils.capture import capture_output

    with capture_output(stdout=True, stderr=False, display=True) as cap:
        yield
    html = "".join(o.data["text/html"] if "text/html" in o.data else f"<pre>{escape(o.data.get('text/plain', ''))}</pre>"
                   for o in cap.outputs)
    display(HTML(answer_html(title, cap.stdout, html)))
