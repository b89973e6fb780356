"""The store-buffer panel of a mechanism run under x86-TSO (``kstep run/explore --memory-model tso``).

The player puts it under the mechanism's first panel, whatever the mechanism: its rows are
boards/store_buffers.py's, drawn as every board's boxes are, and they fill and drain as the steps play.
"""

from __future__ import annotations

from bokeh.plotting import figure

from . import style
from .board import board_figure, board_source, draw_boxes
from .boards.store_buffers import ENTRY, FREE_SLOT, ROW, board_source as buffers_source, cpu_rows


def buffers_figure(player) -> figure:
    model, s0 = player.model, player.trace.states[0]
    rows = cpu_rows(model, s0)
    bottom, top = -(len(rows) - 1) * ROW - 0.55, 0.55
    p = board_figure("store-buffers", f"x86-TSO store buffers of {model.depth}, oldest first", rows,
                     height=int(80 * (top - bottom)) + 40, y_range=(bottom, top))
    draw_boxes(p, board_source(player, buffers_source(model)), body_size="10pt")
    return p


def key() -> str:
    return style.key_html("store buffers (the boards above show memory, without these stores):", [ENTRY, FREE_SLOT])
