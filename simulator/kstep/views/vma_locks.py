"""The per-VMA lock view: the address space, mm, threads and RCU of ``models/vma_locks/``.

What a student should see: a fault looks its VMA up under RCU and read-locks only that VMA, so a
writer holding mmap_lock for write elsewhere does not stop it; a VMA is write-locked exactly while
``vm_lock_seq == mm_lock_seq`` and mmap_lock is write-held, and every such VMA unlocks at once when
``vma_end_write_all`` bumps ``mm_lock_seq``; an unmapped VMA stays readable (detached, then
rcu-pending) until a grace period has passed.
"""

from __future__ import annotations

from . import style
from .board import board_figure, board_source, draw_boxes
from .counters import counters_figure
from .player import Player
from .rcu import callbacks_figure, rcu_timeline
from .boards.rcu import CB_READY, CB_WAITING, GP_RUNNING, QS_PENDING
from .registry import register
from .timeline import actor_marks, interval_lane, lanes_figure, phase_bars
from .boards.vma_locks import (COUNTERS, EPOCH_LANE, MM_FREE, MM_READ_HELD, MM_WRITE_HELD, PHASES, VMA_DETACHED,
                               VMA_FREED, VMA_IDLE, VMA_READ_LOCKED, VMA_STALE, VMA_UAF, VMA_WRITE_LOCKED,
                               board_sources, chart_sources)


@register("vma-locks")
def vma_lock_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    names = [t.name for t in s0.threads]

    board = board_figure("state", "state after this step",
                         [(4, "threads"), (3, "mm · RCU"), (2, "maple tree"), (1, "off the tree"), (0, "callbacks")],
                         height=590, y_range=(-0.55, 4.5))
    src = {b.name: b for b in board_sources(s0)}
    for name in ("threads", "mm", "tree", "off-tree", "callbacks"):
        draw_boxes(board, board_source(player, src[name]),
                   **({"body_size": "10pt"} if name in ("tree", "off-tree") else {}))
    faults = board_source(player, src["faults"])
    board.scatter("x", "y", source=faults, marker="inverted_triangle", size=13, color=style.INK,
                  name="kstep-plot-state-faults")
    board.text("x", "y", "text", source=faults, name="kstep-plot-state-fault-names", x_offset=9, text_align="left", text_baseline="middle",
               text_font_size=style.SMALL_SIZE, text_font_style="bold", text_color=style.INK)

    lanes = [f"{n} (CPU {i})" for i, n in enumerate(names)] + ["mmap_lock write", "grace period"]
    timeline = lanes_figure(player, "timeline", "who did what: threads, write epochs and grace periods", lanes)
    chart = {c.name: c for c in chart_sources(s0)}
    phase_bars(timeline, player, chart["timeline-phases"], [c for _, c in PHASES], height=0.5)
    phase_bars(timeline, player, chart["timeline-rcu"], [style.FREE, style.LOCKLESS], height=0.14)
    interval_lane(timeline, player, chart["timeline-epochs"], chart["epoch-seq"], EPOCH_LANE[1], style.WHITE)
    rcu_timeline(timeline, player, chart)
    actor_marks(timeline, player, [chart["timeline-actions"], chart["timeline-violation"]])
    pending = callbacks_figure(player, timeline.x_range, chart["callbacks-count"])
    # A scenario whose threads repeat forever keeps no count in its states (they would never repeat),
    # so it has no counters to draw.
    counters = () if s0.forever else (counters_figure(
        player, "counters so far (the VMA_LOCK_* events of /proc/vmstat)", list(COUNTERS) + ["grace periods completed"],
        chart["counters"]),)
    key = (style.key_html("threads:", [(w, c) for w, c in PHASES[:-1]], outline=[QS_PENDING])
           + style.key_html("VMAs:", [VMA_IDLE, VMA_READ_LOCKED, VMA_WRITE_LOCKED, VMA_DETACHED, VMA_FREED, VMA_UAF],
                            outline=[VMA_STALE], marks=[("▼", style.INK, "a fault's address")])
           + style.key_html("mm:", [MM_FREE, MM_READ_HELD, MM_WRITE_HELD])
           + style.key_html("RCU:", [GP_RUNNING, CB_READY, CB_WAITING],
                            marks=[("▬", style.LOCKLESS, "read-side section (thin bar under a thread)")])
           + style.key_html("timeline:", [], marks=[("◆", style.INK, "quiescent state reported"),
                                                    ("▲", style.DARK, "took a step")]))
    return player.layout(board, timeline, pending, *counters, key=key)

