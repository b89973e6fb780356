"""The fork-batch view: the parent's and the child's page tables side by side, batch by batch.

What a student should see: the two tables next to each other, parent on the left, each PTE a cell
coloured by the folio it maps (faded once it is read-only), so a page and its copy sit at the same
place in both grids; the copy in progress is outlined in the parent, growing as folio_pte_batch grows the
batch; every copy made so far is outlined in the child, so the batch boundaries appear one by one;
arm64's folded 64 KiB blocks carry a thick outline in both tables; and the counters run beside
them, loads and TLB flushes first, since those are what the December 2023 thread argued about.
"""

from __future__ import annotations

from bokeh.layouts import row
from bokeh.models import Range1d
from bokeh.plotting import figure

from ..models.fork_batch.pgtable import Ops
from . import style
from .board import board_figure, board_source, draw_boxes
from .counters import counters_figure
from .boards.fork_batch import (BATCH_DONE, CELL, EMPTY, FOLDED, IN_PROGRESS, SWAPPED, ZERO_PAGE, board_sources,
                                chart_sources, grid_columns, span_of)
from .phases import PHASES
from .player import Player
from .registry import register
from .timeline import actor_marks, lanes_figure, phase_bars

GRID_WIDTH = style.WIDTH // 2  # the parent's and the child's grids share the page's width
ROW_HEIGHT = {32: 18, 64: 10}  # pixels a grid row takes: cells about square at GRID_WIDTH


def grid_figure(player: Player, src: dict, side: str, first: int, last: int, ncols: int) -> figure:
    """One page table as a grid of cells, with its folded blocks and (child) its copies outlined."""
    rows = -(-(last - first) // ncols)
    name = f"pt-{side}"
    p = figure(name=f"kstep-plot-{name}", title=f"{side}'s PTEs, pages {first}..{last - 1} ({ncols} a row)",
               width=GRID_WIDTH, height=70 + max(rows, 2) * ROW_HEIGHT[ncols], tools="",
               toolbar_location=None, x_range=Range1d(-0.2, ncols + 0.2, name=f"kstep-x-{name}"),
               y_range=Range1d(-rows + 0.4, 0.6, name=f"kstep-y-{name}"))
    style.style_figure(p, axes=False)
    cells = board_source(player, src[f"{name}-cells"])
    p.rect("x", "y", CELL, CELL, source=cells, fill_color="fill", fill_alpha="alpha", line_color=style.DARK,
           line_width=0.5, name=f"kstep-plot-{name}-cells")
    outlines = [(f"{name}-folded", FOLDED[1], 4),
                (f"{name}-copies", BATCH_DONE[1], 2) if side == "child" else (f"{name}-copying", IN_PROGRESS[1], 3)]
    for src_name, colour, width in outlines:
        p.rect("x", "y", "w", "h", source=board_source(player, src[src_name]), fill_alpha=0, line_color=colour,
               line_width=width, name=f"kstep-plot-{src_name}")
    return p


@register("fork-batch")
def fork_batch_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    names = [t.name for t in s0.threads]
    first, last = span_of(s0)
    ncols = grid_columns(last - first)
    src = {b.name: b for b in board_sources(s0, model)}
    parent = grid_figure(player, src, "parent", first, last, ncols)
    child = grid_figure(player, src, "child", first, last, ncols)

    board = board_figure("state", "threads and the parent's mm", [(1, "threads"), (0, "mm")], height=250,
                         y_range=(-0.55, 1.5))
    for name in ("threads", "mm"):
        draw_boxes(board, board_source(player, src[name]))

    timeline = lanes_figure(player, "timeline", "who can move, step by step", [f"{n} (CPU {i})" for i, n in
                                                                                 enumerate(names)])
    chart = {c.name: c for c in chart_sources(s0, model)}
    phase_bars(timeline, player, chart["timeline-phases"], [c for _, c in PHASES])
    actor_marks(timeline, player, [chart["timeline-actions"], chart["timeline-violation"]])
    counters = counters_figure(player, "what the copy has done so far (models/fork_batch/pgtable.py's Ops)",
                               list(Ops._fields), chart["counters"])
    # Neighbouring folios alternate the two shades: each chip lists the folios of its shade.
    folios = [("; ".join(f"PFN {f.pfn} (order {f.order}, {f.kind})" for f in s0.folios[j::len(style.FOLIO)]), colour)
              for j, colour in enumerate(style.FOLIO) if s0.folios[j::len(style.FOLIO)]]
    key = (style.key_html("PTEs (faded: read-only):", folios + [EMPTY, ZERO_PAGE, SWAPPED])
           + style.key_html("outlines:", [], outline=[IN_PROGRESS, BATCH_DONE, FOLDED])
           + style.key_html("mm:", [("mmap_lock for write (fork holds it while it copies)", style.WRITER)])
           + style.key_html("threads:", [(w, c) for w, c in PHASES[:2]],
                            marks=[("▲", style.DARK, "took a step")]))
    tables = row(parent, child, name="kstep-page-tables")
    return player.layout(tables, counters, board, timeline, key=key)
