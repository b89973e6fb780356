"""Which view draws which mechanism: new mechanisms plug in here, never in the player."""

from __future__ import annotations

from importlib import import_module
from typing import Callable

from bokeh.models import LayoutDOM

from ..engine import Model, Trace

View = Callable[[Trace, Model], LayoutDOM]

VIEWS: dict[str, View] = {}
MECHANISM_VIEWS = ("damon", "fork_batch", "litmus", "qspinlock", "rcu", "vma_locks")  # the modules that register one


def register(mechanism: str) -> Callable[[View], View]:
    """Decorator: ``@register("rcu")`` makes a function ``(trace, model) -> layout`` the mechanism's view."""

    def add(view: View) -> View:
        if mechanism in VIEWS:
            raise ValueError(f"a view for {mechanism!r} is already registered")
        VIEWS[mechanism] = view
        return view

    return add


def view_for(mechanism: str) -> View:
    """The mechanism's own view, or the generic one (actor lanes and the status line) without one."""
    from .generic import generic_view

    load_views()
    return VIEWS.get(mechanism, generic_view)


def load_views() -> None:
    """Import every mechanism's view module: each registers its view when first imported."""
    for module in MECHANISM_VIEWS:
        import_module(f"{__package__}.{module}")
