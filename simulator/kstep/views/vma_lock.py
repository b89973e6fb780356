"""The per-VMA lock view: the address space, mm, threads and RCU of ``models/vma_lock.py``.

What a student should see: a fault looks its VMA up under RCU and read-locks only that VMA, so a
writer holding mmap_lock for write elsewhere does not stop it; a VMA is write-locked exactly while
``vm_lock_seq == mm_lock_seq`` and mmap_lock is write-held, and every such VMA unlocks at once when
``vma_end_write_all`` bumps ``mm_lock_seq``; an unmapped VMA stays readable (detached, then
rcu-pending) until a grace period has passed.
"""

from __future__ import annotations

import numpy as np

from ..models import rwsem
from . import style
from .board import board_figure, box_source, draw_boxes
from .counters import counters_figure
from .player import Player
from .rcu import callbacks_figure, gp_lane, qs_marks
from .rcu_board import CB_READY, CB_WAITING, GP_RUNNING, QS_PENDING, grace_periods_completed
from .registry import register
from .vma_board import (DONE, EPOCH_LANE, MM_FREE, MM_READ_HELD, MM_WRITE_HELD, PHASES, VMA_DETACHED, VMA_FREED,
                        VMA_IDLE, VMA_READ_LOCKED, VMA_STALE, VMA_UAF, VMA_WRITE_LOCKED, board_sources, phase)
from .timeline import actor_marks, interval_lane, lanes_figure, phase_bars

COUNTERS = ("vma_lock_success", "vma_lock_abort", "vma_lock_retry", "vma_lock_miss", "mmap_lock_faults", "sigsegv")


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
        draw_boxes(board, box_source(player, name, src[name].rows, key=src[name].key),
                   **({"body_size": "10pt"} if name in ("tree", "off-tree") else {}))
    marks = src["faults"]
    faults = player.frame_source(marks.name, marks.columns, marks.rows, key=marks.key)
    board.scatter("x", "y", source=faults, marker="inverted_triangle", size=13, color=style.INK,
                  name="kstep-plot-state-faults")
    board.text("x", "y", "text", source=faults, name="kstep-plot-state-fault-names", x_offset=9, text_align="left", text_baseline="middle",
               text_font_size=style.SMALL_SIZE, text_font_style="bold", text_color=style.INK)

    lanes = [f"{n} (CPU {i})" for i, n in enumerate(names)] + ["mmap_lock write", "grace period"]
    timeline = lanes_figure(player, "timeline", "who did what: threads, write epochs and grace periods", lanes)
    nthreads = len(names)
    phases = np.array([[phase(s, i) for i in range(nthreads)] for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "phases", phases, [c for _, c in PHASES], skip=(DONE,), dy=-0.08, height=0.5)
    reading = np.array([[1 if n else 0 for n in s.rcu.nesting] for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "rcu", reading, [style.FREE, style.LOCKLESS], skip=(0,), dy=0.3, height=0.14)
    epoch_lane(timeline, player, nthreads)
    gp_lane(timeline, player, nthreads + 1)
    qs_marks(timeline, player, list(range(nthreads)))
    actor_marks(timeline, player, list(range(nthreads)) + [nthreads + 1])
    pending = callbacks_figure(player, timeline.x_range)

    counts = np.array([[getattr(s.counters, c) for c in COUNTERS] + [gp] for s, gp in
                       zip(trace.states, grace_periods_completed(trace.states))])
    counters = counters_figure(player, "counters", "counters so far (the VMA_LOCK_* events of /proc/vmstat)",
                               list(COUNTERS) + ["grace periods completed"], counts)
    key = (style.key_html("threads:", [(w, c) for w, c in PHASES[:-1]], outline=[QS_PENDING])
           + style.key_html("VMAs:", [VMA_IDLE, VMA_READ_LOCKED, VMA_WRITE_LOCKED, VMA_DETACHED, VMA_FREED, VMA_UAF],
                            outline=[VMA_STALE], marks=[("▼", style.INK, "a fault's address")])
           + style.key_html("mm:", [MM_FREE, MM_READ_HELD, MM_WRITE_HELD])
           + style.key_html("RCU:", [GP_RUNNING, CB_READY, CB_WAITING],
                            marks=[("▬", style.LOCKLESS, "read-side section (thin bar under a thread)")])
           + style.key_html("timeline:", [], marks=[("◆", style.INK, "quiescent state reported"),
                                                    ("▲", style.DARK, "took a step")]))
    return player.layout(board, timeline, pending, counters, key=key)


def epoch_lane(p, player: Player, lane: int) -> None:
    """Write epochs: mmap_lock held for write, each labelled with the mm_lock_seq it locks VMAs with."""
    states = player.trace.states
    interval_lane(p, player, "epochs", [s.mm.mmap_lock.owner != rwsem.NOBODY for s in states], EPOCH_LANE[1],
                  lane, "epoch-seq", lambda k: f"seq {states[k].mm.mm_lock_seq}", style.WHITE)
