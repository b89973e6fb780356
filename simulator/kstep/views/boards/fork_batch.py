"""The fork-batch board's rows, in the standard library only (boxes.py says why): the parent's and the
child's page tables cell by cell, with the folded blocks, the copy in progress and the copies made
outlined, and the threads and the parent's mm.  fork_batch.py draws them; the page's interactive
mode computes them for a student's own run."""

from __future__ import annotations

from ...models.vma_locks import rwsem
from ...models.fork_batch.pgtable import CONT_PTES, Ops, pte_cont, pte_pfn, pte_present, pte_special, pte_write
from ...models.fork_batch.state import folio_index
from .. import charts, style
from ..boxes import BoardSource, Box, columns, in_a_row
from ..phases import DONE, PHASES, phases
from .vma_locks import sem_text

EMPTY = ("pte_none", style.EMPTY)
ZERO_PAGE = ("the shared zero page (special)", style.UNUSED)
SWAPPED = ("swap entry (not present)", style.GONE)
READ_ONLY = 0.3  # fill alpha of a read-only PTE; a writable one is opaque
IN_PROGRESS = ("the copy in progress (copy_pte_range's addr, the batch so far)", style.STEP)
BATCH_DONE = ("a copy made: one batch, or one PTE", style.INK)
FOLDED = ("arm64 folded block (contiguous bit; thick)", style.DARK)
CELL = 0.9  # a cell's side, in grid units (1 apart)
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


def board_sources(s0, model) -> list[BoardSource]:
    """The boards of a run starting at ``s0``: each page table's cells and outlines (the parent's
    copy in progress, the child's copies made, both tables' folded blocks), then the threads and the mm."""
    names = [t.name for t in s0.threads]
    first, last = span_of(s0)
    ncols = grid_columns(last - first)
    out = []
    for side, ptes in (("parent", lambda s: s.parent), ("child", lambda s: s.child)):
        name = f"pt-{side}"
        out += [
            BoardSource(f"{name}-cells", lambda s, ptes=ptes: cells(s, ptes(s), first, last, ncols),
                        lambda s, ptes=ptes: (ptes(s), len(s.folios)), {"x": float, "y": float, "fill": str,
                                                                         "alpha": float}),
            BoardSource(f"{name}-folded", lambda s, ptes=ptes: folded_blocks(ptes(s), first, last, ncols), ptes,
                        RECTS),
            BoardSource(f"{name}-copies", lambda s: copies(s, first, ncols), lambda s: s.ghost_batches, RECTS)
            if side == "child" else
            BoardSource(f"{name}-copying", lambda s: in_progress(s, first, ncols), lambda s: s.copy, RECTS),
        ]
    return out + [
        BoardSource("threads", lambda s: columns(thread_boxes(model, s, names)),
                    lambda s: (tuple((t.frames[:1], t.pinned) for t in s.threads), s.mm.mmap_lock, s.vmas)),
        BoardSource("mm", lambda s: columns([mm_box(s, names)]),
                    lambda s: (s.mm.mmap_lock, s.write_protect_seq, s.mmf_has_pinned, s.copy.vma, s.copy.addr)),
    ]


def chart_sources(s0, model) -> list[BoardSource]:
    """Each thread's lane (can take a step, blocked), who took each step, and what the copy has done so
    far (models/fork_batch/pgtable.py's Ops)."""
    n = len(s0.threads)
    return [
        charts.phase_bars("timeline-phases", lambda s: phases(model, s)[:n], skip=(DONE,)),
        *charts.actor_marks("timeline", {t.name: i for i, t in enumerate(s0.threads)}),
        charts.counters("counters", len(Ops._fields), lambda t: [tuple(s.ops) for s in t.states]),
    ]
