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


def setup(app):
    from .. import course
    from . import litmus_pages, outputs, pages, theme

    app.add_config_value("kstep_digest", course.source_digest(), "env")
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
