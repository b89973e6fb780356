"""A bar per counter, redrawn per frame: what a run has done so far."""

from __future__ import annotations

from typing import Sequence

from bokeh.models import AdaptiveTicker, FixedTicker, Range1d
from bokeh.plotting import figure

from . import style
from .board import board_source
from .boxes import BoardSource
from .player import Player


def counters_figure(player: Player, title: str, names: Sequence[str], src: BoardSource) -> figure:
    """The counters ``names`` of ``src`` (charts.counters), on an axis that holds the largest of the run."""
    name = src.name
    p = figure(name=f"kstep-plot-{name}", title=title, width=style.WIDTH, height=50 + 36 * len(names),
               x_range=Range1d(0, 1, name=f"kstep-x-{name}"),
               y_range=Range1d(-len(names) + 0.5, 0.5, name=f"kstep-y-{name}"), tools="", toolbar_location=None)
    style.style_figure(p)
    p.yaxis.ticker = FixedTicker(ticks=[-j for j in range(len(names))])
    p.yaxis.major_label_overrides = {-j: n for j, n in enumerate(names)}
    p.yaxis.major_label_text_font = style.MONO
    p.xaxis.ticker = AdaptiveTicker(min_interval=1, num_minor_ticks=0)
    source = board_source(player, src)
    player.fit(p.x_range, name, "value", scale=1.15, least=1.15)  # room for the value written after a bar
    p.hbar(y="y", right="value", left=0, height=0.6, source=source, color=style.DARK, fill_alpha=0.85,
           name=f"kstep-plot-{name}-bars")
    p.text("value", "y", "text", source=source, name=f"kstep-plot-{name}-values", text_baseline="middle",
           text_font_size=style.TEXT_SIZE, text_font_style="bold", text_color=style.INK)
    return p
