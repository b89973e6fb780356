"""Pages: a trace's view as a standalone HTML file that works offline."""

from __future__ import annotations

from pathlib import Path

from bokeh.embed import file_html
from bokeh.resources import INLINE, Resources

from ..engine import Model, Trace
from ..engine.trace import write_text
from .registry import view_for


def layout(trace: Trace, model: Model):
    """The Bokeh layout animating ``trace`` (the mechanism's registered view)."""
    return view_for(trace.mechanism)(trace, model)


def title(trace: Trace) -> str:
    parts = ["kstep", trace.mechanism] + ([trace.scenario] if trace.scenario else []) + [trace.variant]
    return " · ".join(parts)


def page(trace: Trace, model: Model, resources: Resources = INLINE) -> str:
    """The page's HTML; with INLINE resources BokehJS is inside it, so it needs no network."""
    return file_html(layout(trace, model), resources=resources, title=title(trace))


def save_html(trace: Trace, model: Model, path: str | Path) -> None:
    """Write a single-file animation (BokehJS inline), replacing ``path``; a missing directory is a UserError."""
    write_text(path, page(trace, model))
