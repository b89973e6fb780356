"""Notebook outputs on a static, offline site: BokehJS from _static, no dead widgets, no CDN.

An executed notebook carries three things a static page must not show as they are:

- the output of ``output_notebook(INLINE)``: all of BokehJS, inline (megabytes per page).  The site
  drops it and loads BokehJS once, from its own ``_static/bokeh/``, on every page that embeds a
  Bokeh document;
- each ``show()``: a ``text/html`` target, an ``application/javascript`` embed script and an empty
  ``application/vnd.bokehjs_exec.v0+json`` marker for Jupyter.  The script renders the document
  with that BokehJS; the marker is dropped;
- ipywidgets, whose callbacks need a running kernel: their outputs and saved state are dropped (a
  notebook says where its live controls are; the site has nothing to click that does nothing).

MyST-NB would log each Bokeh mime type as unknown (a warning, which fails the -W build); the
renderer below knows them.  The site also ships no math renderer: MathJax would come from a CDN,
so a page with math fails the build with a warning naming where.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bokeh.util.paths import bokehjs_path
from docutils import nodes
from myst_nb.core.render import NbElementRenderer
from sphinx.util import logging

from .. import live
from .pages import BOKEH, LIVE

logger = logging.getLogger(__name__)
BOKEH_LOAD = "application/vnd.bokehjs_load.v0+json"
BOKEH_EXEC = "application/vnd.bokehjs_exec.v0+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DROPPED_BUNDLES = (BOKEH_LOAD, WIDGET_VIEW)  # the whole output goes
BOKEH_JS = ("bokeh.min.js", "bokeh-widgets.min.js")  # what kstep's layouts and plots use
STATIC = "bokeh"  # under _static/


class SiteRenderer(NbElementRenderer):
    """MyST-NB's renderer with the Bokeh and widget mime types marked, for ``clean_outputs``."""

    def render_mime_type(self, data):
        if data.mime_type in (BOKEH_LOAD, BOKEH_EXEC, WIDGET_VIEW):
            return [nodes.comment("", data.mime_type)]
        return super().render_mime_type(data)

    def render_mime_type_inline(self, data):
        if data.mime_type in (BOKEH_LOAD, BOKEH_EXEC, WIDGET_VIEW):
            return [nodes.comment("", data.mime_type)]
        return super().render_mime_type_inline(data)

    def render_nb_finalise(self, metadata):
        # Saved widget state would only feed a widget manager, and the site loads none.
        super().render_nb_finalise({k: v for k, v in metadata.items() if k != "widgets"})


def clean_outputs(app, doctree) -> None:
    """doctree-read: drop BokehJS loaders and widget outputs; keep each Bokeh embed, note it."""
    def is_bundle(node):
        return isinstance(node, nodes.container) and node.get("nb_element") == "mime_bundle"

    for bundle in list(doctree.findall(is_bundle)):
        kinds = [child.get("mime_type") for child in bundle.children]
        if any(kind in DROPPED_BUNDLES for kind in kinds):
            bundle.parent.remove(bundle)
        elif BOKEH_EXEC in kinds:
            bundle.remove(bundle.children[kinds.index(BOKEH_EXEC)])
            doctree[BOKEH] = True


def add_bokehjs(app, pagename, templatename, context, doctree) -> None:
    """html-page-context: a page that embeds a Bokeh document loads BokehJS, before its embed scripts."""
    if doctree is not None and doctree.get(BOKEH):
        for name in BOKEH_JS:
            app.add_js_file(f"{STATIC}/{name}", priority=100)
    if doctree is not None and doctree.get(LIVE):
        app.add_js_file(f"{live.KSTEP}/interactive.js", priority=200, loading_method="defer")


def copy_static(app, exception) -> None:
    """build-finished: BokehJS into _static, from the installed bokeh (the version that wrote the pages),
    and what interactive mode loads: Pyodide's runtime, kstep.zip and interactive.js."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / STATIC
    target.mkdir(parents=True, exist_ok=True)
    for name in BOKEH_JS:
        shutil.copyfile(Path(bokehjs_path()) / "js" / name, target / name)
    live.install(Path(app.outdir) / "_static")


def refuse_math(self, node):
    logger.warning("math needs MathJax, which the offline course site does not ship: "
                   "write it as text or code", location=node)
    raise nodes.SkipNode


NO_MATH = ((refuse_math, None), (refuse_math, None))  # (inline, block) renderers
