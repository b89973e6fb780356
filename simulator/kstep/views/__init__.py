"""Views: a trace as one Bokeh layout whose playback runs in the browser (player.js).

``layout(trace, model)`` gives the layout (for notebooks), ``save_html(trace, model, path)``
writes a standalone page that works offline, and ``VIEWS`` maps a mechanism's name to its view;
``register`` adds one.  ``python -m kstep.views.course`` builds every scenario into a course.
"""

from . import damon as _damon, fork_batch as _fork_batch, qspinlock as _qspinlock, rcu as _rcu, vma_lock as _vma_lock  # noqa: F401  (each registers its view)
from .export import layout, page, save_html
from .registry import VIEWS, register, view_for

__all__ = ["VIEWS", "layout", "page", "register", "save_html", "view_for"]
