"""Views: a trace as one Bokeh layout whose playback runs in the browser (player.js).

``layout(trace, model)`` gives the layout (for notebooks), ``save_html(trace, model, path)``
writes a standalone page that works offline, and ``VIEWS`` maps a mechanism's name to its view;
``register`` adds one.  ``python -m kstep.views.course`` builds every scenario into a course.

Importing the package imports no Bokeh: the standard-library modules (columns, boxes, the
``boards/`` rows, interactive) also run in the browser, in Pyodide, where Bokeh and numpy are not.
The names below load the Bokeh views on first use.
"""

from importlib import import_module

__all__ = ["VIEWS", "layout", "page", "register", "save_html", "view_for"]
_WHERE = {"layout": "export", "page": "export", "save_html": "export", "VIEWS": "registry", "register": "registry",
          "view_for": "registry"}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import_module(f"{__name__}.registry").load_views()
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
