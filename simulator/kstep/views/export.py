"""Pages: a trace's view as a standalone HTML file that works offline."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from bokeh.core.templates import get_env
from bokeh.embed import file_html
from bokeh.resources import INLINE, Resources

from ..engine import Model, Trace
from ..scenario_spec.scenario import Scenario
from ..files import write_text
from .live import enable, enable_litmus, install
from .registry import view_for

# Bokeh's own page with a margin around the animation, what the scenario is for and, in a course, a
# link back to the index.
TEMPLATE = get_env().from_string("""{% extends "file.html.jinja" %}
{% block postamble %}{% if live %}<script src="{{ live }}/kstep/interactive.js" defer></script>{% endif %}{% endblock %}
{% block preamble %}<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { padding: 10px 16px; background: #FFFFFF; color: #222222; }
@media (prefers-color-scheme: dark) { body { background: #111214; color: #DDDDDD; } a { color: #56B4E9; } }
@media (max-width: 600px) { body { padding: 6px; } }
nav.kstep-nav, section.kstep-purpose { font: 13pt 'DejaVu Sans', Arial, sans-serif; margin-bottom: 8px;
  max-width: 1200px; }</style>{% endblock %}
{% block contents %}{% if back %}<nav class="kstep-nav"><a href="{{ back }}">&larr; all animations</a></nav>{% endif %}
{% if purpose %}<section class="kstep-purpose">{% for label, text in purpose %}<p>{% if label %}<b>{{ label|e }}</b>
{% endif %}{{ text|e }}</p>{% endfor %}</section>{% endif %}
{{ super() }}{% endblock %}""")


def layout(trace: Trace, model: Model):
    """The Bokeh layout animating ``trace`` (the mechanism's registered view)."""
    return view_for(trace.mechanism)(trace, model)


def title(trace: Trace) -> str:
    parts = ["kstep", trace.mechanism] + ([trace.scenario] if trace.scenario else []) + [trace.variant]
    return " · ".join(parts)


def purpose(sc: Scenario) -> list[tuple[str, str]]:
    """What a page about scenario ``sc`` says above its animation: what happens, what to look for."""
    return [("", " ".join(sc.description.split())), ("What to look for:", " ".join(sc.look_for.split()))]


def page(trace: Trace, model: Model, resources: Resources = INLINE, back: Optional[str] = None,
         about: Optional[Scenario] = None, live: Optional[str] = None, litmus: Optional[str] = None) -> str:
    """The page's HTML; with INLINE resources BokehJS is inside it, so it needs no network.

    ``back`` is a link to put above the animation (a course's index); ``about`` the scenario the
    trace runs, whose description and what to look for the page states.  ``live`` is the URL of a
    static folder (relative to the page) where ``live.install`` put interactive mode's files: the
    page then lets the student schedule the scenario's threads by hand (served over HTTP); the
    threads of the litmus test whose text is ``litmus``, when the trace steps one.
    """
    lay = layout(trace, model)
    if live is not None and litmus is not None:
        enable_litmus(lay, model, litmus)
    elif live is not None:
        enable(lay, trace, model)
    return file_html(lay, resources=resources, title=title(trace), template=TEMPLATE,
                     template_variables={"back": back, "purpose": purpose(about) if about else [], "live": live})


def save_html(trace: Trace, model: Model, path: str | Path, about: Optional[Scenario] = None) -> None:
    """Write a single-file animation (BokehJS inline), replacing ``path``; a missing directory is a UserError."""
    write_text(path, page(trace, model, about=about))


def write_page(folder: Path, trace: Trace, model: Model, about: Optional[Scenario] = None,
               litmus: Optional[str] = None) -> Path:
    """A standalone interactive page of ``trace`` in ``folder`` (index.html, its _static beside it):
    what ``kstep serve folder`` serves for a student to schedule the scenario (or the litmus test whose
    text is ``litmus``) by hand."""
    (folder / "index.html").write_text(page(trace, model, about=about, live="_static", litmus=litmus))
    install(folder / "_static")
    return folder / "index.html"
