"""The state board: labelled boxes laid out in rows, one per-frame source per kind of box.

A mechanism view turns the parts of a state (threads, VMAs, callbacks) into ``Box`` rows; the
board draws every box source the same way, so all mechanisms read alike on a projector.  A box
the current step changed (new, moved, or with other text or colours than the frame before) gets
a blue halo, the colour of the timeline's cursor: blue always means "this step".
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping, Protocol, Sequence

from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure

from ..engine import Trace
from . import style
from .boxes import RIGHT, BoardSource, frames

CHANGED_NOTE = " (blue: this step changed it)"  # the halo's key, in the title of every board with one


def board_figure(name: str, title: str, rows: Sequence[tuple[float, str]], *, height: int,
                 y_range: tuple[float, float]) -> figure:
    """An axis-less figure with a title for each row of boxes (``rows``: (y, title))."""
    p = figure(name=f"kstep-plot-{name}", title=title, width=style.WIDTH, height=height, tools="",
               toolbar_location=None, x_range=Range1d(0, RIGHT, name=f"kstep-x-{name}"),
               y_range=Range1d(*y_range, name=f"kstep-y-{name}"))
    style.style_figure(p, axes=False)
    titles = ColumnDataSource({"x": [0.1] * len(rows), "y": [y for y, _ in rows], "text": [t for _, t in rows]},
                              name=f"kstep-static-{name}-rows")
    p.text("x", "y", "text", source=titles, name=f"{p.name}-row-titles", text_font_size=style.TEXT_SIZE,
           text_font_style="bold",
           text_baseline="middle", text_color=style.DARK, text_font=value(style.FONT))
    return p


class Drawing(Protocol):
    """What a board needs of the player that draws it (player.py's Player; the player draws with this
    module's helpers, so this module names only what it uses of it)."""

    trace: Trace

    def frame_source(self, name: str, columns: Mapping[str, type], rows: Callable[[Any], Mapping[str, Sequence]],
                     key: Callable[[Any], Hashable] | None = None,
                     frames: Sequence[Any] | None = None) -> ColumnDataSource: ...


def board_source(player: Drawing, src: BoardSource) -> ColumnDataSource:
    """The per-frame source a board declares (``src``, from its standard-library module) over the
    player's trace: the same frames interactive mode lays out for a student's run (boxes.frames)."""
    values, rows, key, kinds = frames(src, player.trace)
    return player.frame_source(src.name, kinds, rows, key=key, frames=values)


def draw_boxes(p: figure, source: ColumnDataSource, *, head_size: str = style.TEXT_SIZE,
               body_size: str = style.SMALL_SIZE) -> None:
    name = f"{p.name}-{source.name.removeprefix('kstep-src-')}"
    if not p.title.text.endswith(CHANGED_NOTE):
        p.title.text += CHANGED_NOTE
    # The halo first, so the box's own outline (a fact of its own) stays on top of it.
    p.rect("x", "y", "w", "h", source=source, name=f"{name}-changed", fill_alpha=0.0, line_color=style.STEP,
           line_width=9, line_alpha="changed")
    p.rect("x", "y", "w", "h", source=source, name=f"{name}-box", fill_color="fill", line_color="line",
           line_width="width",
           fill_alpha=0.75)  # lighter fills keep black text readable on blue and purple
    p.text("x", "y", "head", source=source, name=f"{name}-head", y_offset=-4, text_font_size=head_size, text_font_style="bold",
           text_align="center", text_baseline="bottom", text_color=style.INK, text_font=value(style.FONT))
    p.text("x", "y", "body", source=source, name=f"{name}-body", y_offset=0, text_font_size=body_size, text_align="center",
           text_baseline="top", text_color=style.INK, text_font=value(style.FONT), text_line_height=1.1)
