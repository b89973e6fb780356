"""The state board: labelled boxes laid out in rows, one per-frame source per kind of box.

A mechanism view turns the parts of a state (threads, VMAs, callbacks) into ``Box`` rows; the
board draws every box source the same way, so all mechanisms read alike on a projector.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure

from . import style

COLUMNS = {"x": float, "y": float, "w": float, "h": float, "fill": str, "line": str, "width": float,
           "head": str, "body": str}
LEFT = 1.9  # x where the boxes start; row titles sit left of it
RIGHT = 12.0


class Box(NamedTuple):
    x: float  # centre
    y: float
    w: float
    h: float
    fill: str
    head: str  # bold first line
    body: str = ""  # further lines, "\n"-separated
    line: str = style.INK  # outline colour: a second fact about the box (a pending quiescent state)
    width: float = 1.0  # outline width in pixels


def columns(boxes: Sequence[Box]) -> dict[str, list]:
    return {c: [getattr(b, c) for b in boxes] for c in COLUMNS}


def in_a_row(count: int, *, y: float, h: float = 0.8, left: float = LEFT, right: float = RIGHT,
             max_w: float = 2.0, gap: float = 0.12) -> list[tuple[float, float, float, float]]:
    """(x, y, w, h) of ``count`` boxes side by side between ``left`` and ``right``."""
    if count == 0:
        return []
    w = min(max_w, (right - left) / count - gap)
    return [(left + gap / 2 + w / 2 + j * (w + gap), y, w, h) for j in range(count)]


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


def draw_boxes(p: figure, source: ColumnDataSource, *, head_size: str = style.TEXT_SIZE,
               body_size: str = style.SMALL_SIZE) -> None:
    name = f"{p.name}-{source.name.removeprefix('kstep-src-')}"
    p.rect("x", "y", "w", "h", source=source, name=f"{name}-box", fill_color="fill", line_color="line",
           line_width="width",
           fill_alpha=0.75)  # lighter fills keep black text readable on blue and purple
    p.text("x", "y", "head", source=source, name=f"{name}-head", y_offset=-4, text_font_size=head_size, text_font_style="bold",
           text_align="center", text_baseline="bottom", text_color=style.INK, text_font=value(style.FONT))
    p.text("x", "y", "body", source=source, name=f"{name}-body", y_offset=0, text_font_size=body_size, text_align="center",
           text_baseline="top", text_color=style.INK, text_font=value(style.FONT), text_line_height=1.1)
