"""A bar per counter, redrawn per frame: what a run has done so far.

The bars are ink: each is named beside it, and a colour would give a counter a meaning it shares with a board."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from bokeh.models import AdaptiveTicker, FixedTicker, Range1d
from bokeh.plotting import figure

from . import style
from .player import Player


def counters_figure(player: Player, name: str, title: str, names: Sequence[str], values: np.ndarray) -> figure:
    """``values[k, j]`` is counter ``names[j]`` at frame k."""
    values = np.asarray(values, dtype=np.int64)
    top = max(1, int(values.max()) if values.size else 1)
    p = figure(name=f"kstep-plot-{name}", title=title, width=style.WIDTH, height=50 + 36 * len(names),
               x_range=Range1d(0, top * 1.15, name=f"kstep-x-{name}"),
               y_range=Range1d(-len(names) + 0.5, 0.5, name=f"kstep-y-{name}"), tools="", toolbar_location=None)
    style.style_figure(p)
    p.yaxis.ticker = FixedTicker(ticks=[-j for j in range(len(names))])
    p.yaxis.major_label_overrides = {-j: n for j, n in enumerate(names)}
    p.yaxis.major_label_text_font = style.MONO
    p.xaxis.ticker = AdaptiveTicker(min_interval=1, num_minor_ticks=0)
    ys = [-j for j in range(len(names))]

    def rows(counts):
        return {"y": ys, "value": list(counts), "text": [f" {c}" for c in counts]}

    source = player.frame_source(name, {"y": int, "value": int, "text": str}, rows,
                                 frames=[tuple(int(v) for v in r) for r in values])
    p.hbar(y="y", right="value", left=0, height=0.6, source=source, color=style.DARK, fill_alpha=0.85,
           name=f"kstep-plot-{name}-bars")
    p.text("value", "y", "text", source=source, name=f"kstep-plot-{name}-values", text_baseline="middle", text_font_size=style.TEXT_SIZE,
           text_font_style="bold", text_color=style.INK)
    return p
