"""kstep's Sphinx extension for the course site (``extensions = [..., "kstep.views.site"]`` in docs/conf.py).

``pages`` generates a page per scenario and per broken variant and provides the directives that
fill pages from the library, ``litmus_pages`` the same for the classic litmus shapes; ``outputs``
makes executed notebooks fit a static, offline site; ``theme`` names the theme's controls for a
screen reader.
The config value ``kstep_digest`` (a digest of the kstep package) makes Sphinx read every page
again when a model, view or scenario changes, since any page may show what they compute.
Sphinx imports the modules in ``setup``: a test that imports ``pages`` or ``litmus_pages`` alone does not
import MyST-NB with ``outputs`` (seconds for every test worker that collects it).
"""

from __future__ import annotations

from pathlib import Path


def spread_notebooks(app, env, docnames: list[str]) -> None:
    """env-before-read-docs: with parallel reading, each notebook goes to the head of a chunk of its own.

    Sphinx reads the pages in chunks of consecutive names (``make_chunks``), so the six notebooks, which
    MyST-NB executes as it reads them (114 s of kernel CPU from a clean cache), fell into one chunk and ran
    one after another in one process while the others ran out of pages.  Spread over the chunks, they
    run on every process, each started first in its chunk.  Their jupyter-cache is made here, before the
    processes start, or two of them would race to create its tables."""
    from sphinx.util.parallel import make_chunks

    notebooks = [name for name in docnames if env.doc2path(name).suffix == ".ipynb"]
    if app.parallel <= 1 or not notebooks:
        return
    if app.config.nb_execution_mode == "cache":
        from jupyter_cache.cache.db import create_db

        cache = Path(app.config.nb_execution_cache_path or ".jupyter_cache")  # MyST-NB's own default
        cache.mkdir(parents=True, exist_ok=True)
        create_db(cache)
    chunks = make_chunks(docnames, app.parallel)
    heads: list[list[str]] = [[] for _ in chunks]
    for k, name in enumerate(notebooks):
        heads[k % len(chunks)].append(name)
    others = [name for name in docnames if name not in notebooks]
    order: list[str] = []
    for chunk, head in zip(chunks, heads):
        fill = max(len(chunk) - len(head), 0)
        order += head + others[:fill]
        others = others[fill:]
    docnames[:] = order + others


def setup(app):
    from .. import course
    from . import litmus_pages, outputs, pages, theme

    app.add_config_value("kstep_digest", course.source_digest(), "env")
    app.connect("env-before-read-docs", spread_notebooks)
    app.connect("builder-inited", pages.write_pages)
    app.connect("builder-inited", litmus_pages.write_pages)
    app.connect("doctree-read", outputs.clean_outputs)
    app.connect("html-page-context", outputs.add_bokehjs)
    app.connect("html-page-context", theme.name_toggles, priority=900)  # after the theme's own
    app.connect("build-finished", outputs.copy_static)
    for name, directive in {**pages.DIRECTIVES, **litmus_pages.DIRECTIVES}.items():
        app.add_directive(name, directive)
    app.add_html_math_renderer("kstep-none", *outputs.NO_MATH)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
