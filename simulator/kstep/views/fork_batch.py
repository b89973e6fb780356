"""The fork-batch view: the parent's and the child's page tables side by side, batch by batch.

What a student should see: the two tables next to each other, parent on the left, each PTE a cell
coloured by the folio it maps (faded once it is read-only), so a page and its copy sit at the same
place in both grids; the copy in progress is outlined in the parent, growing as folio_pte_batch grows the
batch; every copy made so far is outlined in the child, so the batch boundaries appear one by one;
arm64's folded 64 KiB blocks carry a thick outline in both tables; and the counters run beside
them, loads and TLB flushes first, since those are what the December 2023 thread argued about.
"""

from __future__ import annotations

import numpy as np

from ..models import rwsem
from bokeh.layouts import row
from bokeh.models import Range1d
from bokeh.plotting import figure

from ..models.fork_batch import folio_index
from ..models.pgtable import CONT_PTES, Ops, pte_cont, pte_pfn, pte_present, pte_special, pte_write
from . import style
from .board import board_figure, box_source, draw_boxes
from .boxes import Box, columns, in_a_row
from .counters import counters_figure
from .generic import DONE, PHASES, phases
from .player import Player
from .registry import register
from .timeline import actor_marks, lanes_figure, phase_bars
from .vma_board import sem_text

EMPTY = ("pte_none", style.EMPTY)
ZERO_PAGE = ("the shared zero page (special)", style.UNUSED)
SWAPPED = ("swap entry (not present)", style.GONE)
READ_ONLY = 0.3  # fill alpha of a read-only PTE; a writable one is opaque
IN_PROGRESS = ("the copy in progress (copy_pte_range's addr, the batch so far)", style.STEP)
BATCH_DONE = ("a copy made: one batch, or one PTE", style.INK)
FOLDED = ("arm64 folded block (contiguous bit; thick)", style.DARK)
CELL = 0.9  # a cell's side, in grid units (1 apart)
GRID_WIDTH = style.WIDTH // 2  # the parent's and the child's grids share the page's width
ROW_HEIGHT = {32: 18, 64: 10}  # pixels a grid row takes: cells about square at GRID_WIDTH
RECTS = {"x": float, "y": float, "w": float, "h": float}


def span_of(s) -> tuple[int, int]:
    """The pages the picture shows: from the first VMA's start to the last one's end."""
    return min(v.start for v in s.vmas), max(v.end for v in s.vmas)


def grid_columns(npages: int) -> int:
    return 32 if npages <= 128 else 64


def place(page: int, first: int, ncols: int) -> tuple[int, int]:
    """(column, row) of a page's cell."""
    return (page - first) % ncols, (page - first) // ncols


def segments(start: int, n: int, first: int, ncols: int) -> list[tuple[float, float, float, float]]:
    """Rectangles (x, y, w, h) around pages start..start + n - 1, one per grid row they cover."""
    out = []
    page, end = start, start + n
    while page < end:
        col, row = place(page, first, ncols)
        run = min(end - page, ncols - col)
        out.append((col + run / 2, -row, run, 1.0))
        page += run
    return out


def cells(s, ptes: tuple, first: int, last: int, ncols: int) -> dict[str, list]:
    xs, ys, fills, alphas = [], [], [], []
    for page in range(first, last):
        col, row = place(page, first, ncols)
        pte = ptes[page]
        if pte == 0:
            fill, alpha = EMPTY[1], 1.0
        elif not pte_present(pte):
            fill, alpha = SWAPPED[1], 1.0
        elif pte_special(pte):
            fill, alpha = ZERO_PAGE[1], READ_ONLY
        else:
            fill = style.FOLIO[folio_index(s, pte_pfn(pte)) % len(style.FOLIO)]
            alpha = 1.0 if pte_write(pte) else READ_ONLY
        xs.append(col + 0.5)
        ys.append(-row)
        fills.append(fill)
        alphas.append(alpha)
    return {"x": xs, "y": ys, "fill": fills, "alpha": alphas}


def folded_blocks(ptes: tuple, first: int, last: int, ncols: int) -> dict[str, list]:
    rects = []
    for start in range(first - first % CONT_PTES, last, CONT_PTES):
        if start >= first and pte_present(ptes[start]) and pte_cont(ptes[start]):
            rects += segments(start, CONT_PTES, first, ncols)
    return rect_columns(rects)


def rect_columns(rects) -> dict[str, list]:
    return {c: [r[j] for r in rects] for j, c in enumerate(RECTS)}


def copies(s, first: int, ncols: int) -> dict[str, list]:
    return rect_columns([r for b in s.ghost_batches for r in segments(b.addr, b.nr, first, ncols)])


def in_progress(s, first: int, ncols: int) -> dict[str, list]:
    c = s.copy
    if c.vma < 0 or c.addr >= c.end:
        return rect_columns([])
    return rect_columns(segments(c.addr, max(c.nr, 1), first, ncols))


def grid_figure(player: Player, side: str, first: int, last: int, ncols: int) -> figure:
    """One page table as a grid of cells, with its folded blocks and (child) its copies outlined."""
    rows = -(-(last - first) // ncols)
    name = f"pt-{side}"
    p = figure(name=f"kstep-plot-{name}", title=f"{side}'s PTEs, pages {first}..{last - 1} ({ncols} a row)",
               width=GRID_WIDTH, height=70 + max(rows, 2) * ROW_HEIGHT[ncols], tools="",
               toolbar_location=None, x_range=Range1d(-0.2, ncols + 0.2, name=f"kstep-x-{name}"),
               y_range=Range1d(-rows + 0.4, 0.6, name=f"kstep-y-{name}"))
    style.style_figure(p, axes=False)
    ptes = (lambda s: s.parent) if side == "parent" else (lambda s: s.child)
    src = player.frame_source(f"{name}-cells", {"x": float, "y": float, "fill": str, "alpha": float},
                              lambda s: cells(s, ptes(s), first, last, ncols), key=lambda s: (ptes(s), len(s.folios)))
    p.rect("x", "y", CELL, CELL, source=src, fill_color="fill", fill_alpha="alpha", line_color=style.DARK,
           line_width=0.5, name=f"kstep-plot-{name}-cells")
    outlines = [(f"{name}-folded", lambda s: folded_blocks(ptes(s), first, last, ncols), lambda s: ptes(s),
                 FOLDED[1], 4)]
    if side == "child":
        outlines.append((f"{name}-copies", lambda s: copies(s, first, ncols), lambda s: s.ghost_batches,
                         BATCH_DONE[1], 2))
    else:
        outlines.append((f"{name}-copying", lambda s: in_progress(s, first, ncols), lambda s: s.copy,
                         IN_PROGRESS[1], 3))
    for src_name, rows_of, key, colour, width in outlines:
        src = player.frame_source(src_name, RECTS, rows_of, key=key)
        p.rect("x", "y", "w", "h", source=src, fill_alpha=0, line_color=colour, line_width=width,
               name=f"kstep-plot-{src_name}")
    return p


def thread_boxes(model, s, names) -> list[Box]:
    out = []
    phase = phases(model, s)
    for i, (x, y, w, h) in enumerate(in_a_row(len(s.threads), y=1, max_w=3.2)):
        t = s.threads[i]
        lines = [f"next: {t.frames[0].label}" if t.frames else "done", t.kind]
        if t.kind == "gup":
            lines[1] = f"gup: pins page {t.addr}" + (" (pinned)" if t.pinned else "")
        out.append(Box(x, y, w, h, PHASES[phase[i]][1], f"{names[i]} · CPU {i}", "\n".join(lines)))
    return out


def mm_box(s, names) -> Box:
    c = s.copy
    copying = f"copying VMA {c.vma}, page {c.addr}" if c.vma >= 0 else "not copying"
    held = sem_text(s.mm.mmap_lock, names) or "free"
    fill = style.WRITER if s.mm.mmap_lock.owner != rwsem.NOBODY else style.FREE
    return Box(6.9, 0, 10.0, 0.8, fill, f"write_protect_seq {s.write_protect_seq}"
               + (" (odd: fork is write-protecting)" if s.write_protect_seq & 1 else "")
               + (" · MMF_HAS_PINNED" if s.mmf_has_pinned else ""), f"mmap_lock {held} · {copying}")


@register("fork-batch")
def fork_batch_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    names = [t.name for t in s0.threads]
    first, last = span_of(s0)
    ncols = grid_columns(last - first)
    parent = grid_figure(player, "parent", first, last, ncols)
    child = grid_figure(player, "child", first, last, ncols)

    board = board_figure("state", "threads and the parent's mm", [(1, "threads"), (0, "mm")], height=250,
                         y_range=(-0.55, 1.5))
    draw_boxes(board, box_source(player, "threads", lambda s: columns(thread_boxes(model, s, names)),
                                 key=lambda s: (tuple((t.frames[:1], t.pinned) for t in s.threads),
                                                s.mm.mmap_lock, s.vmas)))
    draw_boxes(board, box_source(player, "mm", lambda s: columns([mm_box(s, names)]),
                                 key=lambda s: (s.mm.mmap_lock, s.write_protect_seq, s.mmf_has_pinned,
                                                s.copy.vma, s.copy.addr)))

    timeline = lanes_figure(player, "timeline", "who can move, step by step", [f"{n} (CPU {i})" for i, n in
                                                                                 enumerate(names)])
    table = np.array([phases(model, s)[:len(names)] for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "phases", table, [c for _, c in PHASES], skip=(DONE,))
    actor_marks(timeline, player, list(range(len(names))) + [-1] * (len(model.actors(s0)) - len(names)))

    counts = np.array([list(s.ops) for s in trace.states], dtype=np.int64)
    counters = counters_figure(player, "counters", "what the copy has done so far (models/pgtable.py's Ops)",
                               list(Ops._fields), counts)
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
