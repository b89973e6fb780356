"""The litmus view: one execution of a litmus test in the player, stepped operationally (x86-TSO) or
revealed event by event (sc, arm64, POWER, the LKMM); the board is boards/litmus.py's."""

from __future__ import annotations

from bokeh.models import Arrow, ColumnDataSource, VeeHead
from bokeh.core.properties import value

from kstep.memory.stepping import TsoMachine

from . import style
from .board import board_figure, board_source, draw_boxes
from .boards.litmus import CYCLE, DONE, UNSEEN, WAITING, reveal_sources, tso_sources
from .player import Player
from .registry import register


@register("litmus")
def litmus_view(trace, model):
    player = Player(trace, model)
    (boxes, edges), g = tso_sources(model) if isinstance(model, TsoMachine) else reveal_sources(model)
    y0, y1 = g.y_range()
    board = board_figure("litmus", f"{model.title}: threads as columns, events in program order",
                         g.rows(), height=int(90 * (y1 - y0)), y_range=(y0, y1))
    heads = ColumnDataSource({"x": [g.x(t) for t in range(g.threads)], "y": [y1 - 0.35] * g.threads,
                              "text": [f"P{t}" for t in range(g.threads)]}, name="kstep-static-litmus-threads")
    board.text("x", "y", "text", source=heads, text_align="center", text_font_style="bold",
               text_font_size=style.TEXT_SIZE, text_color=style.DARK, text_font=value(style.FONT))
    arrows = board_source(player, edges)
    board.add_layout(Arrow(source=arrows, x_start="x0", y_start="y0", x_end="x1", y_end="y1", line_color="color",
                           line_width="width", end=VeeHead(size=10, fill_color="color", line_color="color"),
                           name="kstep-litmus-arrows"))
    # The names in ink: a Text glyph whose colour is a column throws in BokehJS 3 when its source shrinks
    # (scrubbing back drops edges: RangeError in its colour vector), and the arrow carries the cycle's colour.
    board.text("tx", "ty", "text", source=arrows, text_color=style.INK, text_font_size=style.SMALL_SIZE,
               text_align="center", text_baseline="bottom", text_font=value(style.FONT), name="kstep-litmus-edge-names")
    draw_boxes(board, board_source(player, boxes))
    tso = isinstance(model, TsoMachine)
    key = (style.key_html("events:", [DONE, UNSEEN] + ([WAITING] if tso else []))
           + style.key_html("edges:", [CYCLE], marks=[("→", style.INK, "po (grey), rf, co, fr and a fence's edge, "
                                                                     "each named beside it")]))
    return player.layout(board, key=key)
