"""The qspinlock view: the lock word bit by bit, the CPUs, their MCS nodes and the queue.

What a student should see: the whole lock is one 32-bit word, (tail, pending, locked) in the
source's comments, and every step of ``models/qspinlock.py`` changes a few of its bits (the
unlock only the locked byte, ``xchg_tail`` only the tail); the first contender spins on the word
with the pending bit, everyone after it queues on an MCS node of its own CPU and spins on that
node's ``locked`` flag, so only the queue head (and the pending owner) ever spin on the word; and
the head takes the lock with a cmpxchg that also clears the tail when it is alone, with the plain
``set_locked()`` byte store when others are queued behind it (patch 07/11, 2014).

The same view draws the model's other layouts: the generic ticket lock (next ticket and owner in
the two halves of the word, no nodes) and powerpc's own queued spinlock (owner CPU and must-queue
bits in the word, no pending bit, nodes found by scanning for ``node->lock``).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from bokeh.core.properties import value
from bokeh.plotting import figure

from ..models import qspinlock as q
from . import style
from .board import board_figure, board_source, draw_boxes
from .counters import counters_figure
from .player import Player
from .qspinlock_board import (CELL, CONTEXT_H, CONTEXT_ROW, CONTEXT_Y, DONE, IRQ_IDLE, LEVEL_ROWS, LINK, NESTING,
                              NODE_BAD, NODE_FREE, NODE_Y, NOTATION, PHASE_NAMES, PHASES, QUEUE_H, SHOWN_PHASES,
                              STALE_LINK, STATE_SCALE, WORD_BLOCK, Field, bit_x, board_sources, context_levels, phase,
                              queue_y, tail_text, triple, word_fields, word_top)
from .registry import register
from .timeline import actor_marks, lanes_figure, marks, phase_bars, runs



def word_figure(player: Player, fields: list[Field]) -> figure:
    trace = player.trace
    s0 = trace.states[0]
    nlocks = len(s0.words)
    rows = [(word_top(lock) - 1.05, f"lock {q.lock_name(lock)}") for lock in range(nlocks)]
    p = board_figure("word", f"the lock word{'s' if nlocks > 1 else ''}, bit 31 … bit 0 "
                             f"(changed by this step: blue outline)", rows, height=40 + int(70 * WORD_BLOCK * nlocks),
                     y_range=(-WORD_BLOCK * nlocks + 0.1, 0.25))

    # Bit numbers and the coloured strips under each field do not change.
    xs = [round(bit_x(b), 4) for b in range(31, -1, -1)]
    p.text(x="x", y="y", text="text", source=player.static_source("word-bit-numbers", {
        "x": xs * nlocks, "y": [word_top(lock) - 0.62 for lock in range(nlocks) for _ in xs],
        "text": [str(b) for _ in range(nlocks) for b in range(31, -1, -1)]}), name="kstep-plot-word-bit-numbers",
        text_font_size="9pt", text_align="center", text_baseline="middle", text_color=style.DARK_GREY,
        text_font=value(style.FONT))
    strips = {"x": [], "y": [], "w": [], "fill": []}
    for lock in range(nlocks):
        for f in fields:
            strips["x"].append(round((bit_x(f.hi) + bit_x(f.lo)) / 2, 4))
            strips["y"].append(word_top(lock) - 1.45)
            strips["w"].append(round((f.hi - f.lo + 1) * CELL - 0.04, 4))
            strips["fill"].append(f.colour)
    p.rect("x", "y", "w", 0.13, source=player.static_source("word-fields", strips), fill_color="fill",
           line_color=None, name="kstep-plot-word-field-strips")

    src = {b.name: b for b in board_sources(s0)}
    bits = board_source(player, src["bits"])
    p.rect("x", "y", round(CELL - 0.03, 4), 0.55, source=bits, fill_color="fill", line_color="line",
           line_width="width", name="kstep-plot-word-bits")
    p.text("x", "y", "bit", source=bits, name="kstep-plot-word-bit-values", text_font_size=style.TEXT_SIZE,
           text_font_style="bold", text_align="center", text_baseline="middle", text_color="ink",
           text_font=value(style.MONO))

    head = board_source(player, src["word-head"])
    p.text("x", "y", "text", source=head, name="kstep-plot-word-head", text_font_size=style.TEXT_SIZE,
           text_font_style="bold", text_baseline="middle", text_color=style.INK, text_font=value(style.MONO))
    labels = board_source(player, src["fields"])
    p.text("x", "y", "text", source=labels, name="kstep-plot-word-field-values", text_font_size=style.SMALL_SIZE,
           text_align="align", text_baseline="middle", text_color=style.INK, text_font=value(style.FONT))

    history = board_source(player, src["transitions"])
    p.text("x", "y", "text", source=history, name="kstep-plot-word-transitions", text_font_size=style.SMALL_SIZE,
           text_baseline="middle", text_color="color", text_font=value(style.MONO))
    return p


def state_figure(player: Player) -> figure:
    trace = player.trace
    s0 = trace.states[0]
    nlocks = len(s0.words)
    has_nodes = s0.layout != q.TICKET
    levels = context_levels(s0)
    if levels == [q.TASK]:
        rows = [(CONTEXT_Y, "CPUs")]
    else:
        rows = [(CONTEXT_Y + k * CONTEXT_ROW, LEVEL_ROWS[level]) for k, level in enumerate(levels)]
    if has_nodes:
        rows += [(NODE_Y - idx, f"qnodes[{idx}]\n({NESTING[idx]})") for idx in range(q.MAX_NODES)]
    rows += [(queue_y(s0.layout, lock), f"lock {q.lock_name(lock)}") for lock in range(nlocks)]
    bottom = queue_y(s0.layout, nlocks - 1) - QUEUE_H / 2 - 0.1
    top = CONTEXT_Y + (len(levels) - 1) * CONTEXT_ROW + CONTEXT_H / 2 + 0.1
    title = ("CPUs, their MCS nodes (qnodes[0..3] of each CPU), who holds and who waits" if has_nodes
             else "CPUs, who holds and who waits (tickets in the order drawn)")
    p = board_figure("state", title, rows, height=int(STATE_SCALE * (top - bottom)) + 40, y_range=(bottom, top))
    src = {b.name: b for b in board_sources(s0)}
    draw_boxes(p, board_source(player, src["contexts"]), body_size="10pt")
    if has_nodes:
        head = board_source(player, src["cpu-count"])
        p.text("x", "y", "text", source=head, name="kstep-plot-state-cpu-count", text_font_size=style.TEXT_SIZE,
               text_font_style="bold", text_align="center", text_baseline="middle", text_color=style.DARK,
               text_font=value(style.FONT))
        small = len(s0.count) > 4  # eight CPUs: narrower columns, smaller print
        draw_boxes(p, board_source(player, src["nodes"]),
                   head_size="10pt" if small else style.SMALL_SIZE, body_size="8pt" if small else "10pt")
        for name, live, colour, width in (("stale-links", False, STALE_LINK[1], 1.5), ("links", True, LINK[1], 3.0)):
            links = board_source(player, src[name])
            p.bezier("x0", "y0", "x1", "y1", "cx0", "cy0", "cx1", "cy1", source=links, line_color=colour,
                     line_width=width, line_dash="solid" if live else "dashed", name=f"kstep-plot-state-{name}")
            p.scatter("x1", "y1", source=links, marker="inverted_triangle", size=14 if live else 10, color=colour,
                      name=f"kstep-plot-state-{name}-heads")
    draw_boxes(p, board_source(player, src["queue"]), body_size="10pt")
    return p


# --- the timeline and the counters --------------------------------------------------------------------------

def lock_lanes(p: figure, player: Player, first_lane: int) -> None:
    """Per lock one lane of three thin bars, top to bottom as in the source's triple: tail (labelled with
    whom it names at each change), pending or must-queue, locked (powerpc: labelled with the owner);
    the ticket lock has one bar, held, labelled (next, owner) at each change."""
    states = player.trace.states
    s0 = states[0]
    words = np.array([s.words for s in states], dtype=np.int64)
    if s0.layout == q.QSPINLOCK:
        lay = q.LAYOUTS[s0.pending_bits]
        bars = [("tail", lay.TAIL_MASK, style.ORANGE, -0.24), ("pending", lay.PENDING_MASK, style.YELLOW, 0.0),
                ("locked", q._Q_LOCKED_MASK, style.GREEN, 0.24)]
    elif s0.layout == q.POWERPC:
        bars = [("tail", q.PPC_TAIL_CPU_MASK, style.ORANGE, -0.24), ("mustq", q.PPC_MUST_Q_VAL, style.PURPLE, 0.0),
                ("locked", q.PPC_LOCKED_VAL, style.GREEN, 0.24)]
    else:
        bars = []
    labels = {"x": [], "y": [], "text": []}
    for lock in range(words.shape[1]):
        lane = first_lane + lock
        w = words[:, lock]
        if bars:
            for name, mask, colour, dy in bars:
                on = ((w & mask) != 0).astype(np.int8)[:, None]
                phase_bars(p, player, f"{name}-{q.lock_name(lock)}", on, [style.LIGHT, colour], skip=(0,),
                           first_lane=lane, dy=dy, height=0.2)
            starts, _, tails = runs(w & bars[0][1])
            for k, t in zip(starts, tails):
                if t:
                    labels["x"].append(float(k) + 0.15)
                    labels["y"].append(-lane + 0.24 + 0.17)
                    labels["text"].append(tail_text(s0, int(t)))
        else:
            held = ((w >> q.TICKET_SHIFT) != (w & q.U16)).astype(np.int8)[:, None]
            phase_bars(p, player, f"held-{q.lock_name(lock)}", held, [style.LIGHT, style.GREEN], skip=(0,),
                       first_lane=lane, height=0.3)
            starts, _, _ = runs(w)
            for k in starts:
                labels["x"].append(float(k) + 0.15)
                labels["y"].append(-lane + 0.3)
                labels["text"].append(triple(s0, int(w[k])))
    src = player.windowed_source("word-labels", {"x": np.array(labels["x"], dtype=np.float32),
                                                 "y": np.array(labels["y"], dtype=np.float32),
                                                 "text": np.array(labels["text"], dtype=object)}, "x", "x")
    p.text("x", "y", "text", source=src, name="kstep-plot-timeline-word-labels", text_font_size="10pt",
           text_baseline="middle", text_color=style.INK, text_font_style="bold")
    changed = np.flatnonzero((words[1:] != words[:-1]).any(axis=1)) + 1
    lane_of = [first_lane + int(np.flatnonzero(words[k] != words[k - 1])[0]) for k in changed]
    marks(p, player, "word-changes", changed.astype(np.int32), np.array(lane_of, dtype=np.int16),
          color=style.BLUE, marker="diamond", size=9, dy=-0.45)


def counter_table(trace, model) -> tuple[list[str], np.ndarray]:
    """The model's own ``answers`` counters after every step: each step counted alone, then summed."""
    final = model.answers(trace)
    names = [k for k, v in final.items() if k not in trace.stats and isinstance(v, int) and not isinstance(v, bool)]
    per_step = [[0] * len(names)]
    for a, before, after in zip(trace.actions, trace.states, trace.states[1:]):
        one = model.answers(SimpleNamespace(actions=[a], states=[before, after], stats={}))
        per_step.append([one[n] for n in names])
    return names, np.cumsum(np.array(per_step, dtype=np.int64), axis=0)


COUNTER_COLOURS = {"fast path": style.SKY, "pending path": style.YELLOW, "queued": style.ORANGE,
                   "trylock in the slow path": style.GREY, "head claims: cmpxchg": style.SIENNA,
                   "head claims: set_locked": style.BLUE, "acquisitions": style.GREEN,
                   "ticket served at once": style.SKY, "waited for its ticket": style.ORANGE,
                   "stolen": style.YELLOW, "must-queue set": style.PURPLE, "head claims": style.SIENNA}


@register("qspinlock")
def qspinlock_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    fields = word_fields(s0.layout, s0.pending_bits)
    word = word_figure(player, fields)
    state = state_figure(player)

    names = [t.name for t in s0.threads]
    nlocks = len(s0.words)
    lanes = [f"{n} (CPU {t.cpu})" for n, t in zip(names, s0.threads)]
    lanes += [f"lock {q.lock_name(lock)} {NOTATION[s0.layout]}" if s0.layout != q.TICKET
              else f"lock {q.lock_name(lock)} held" for lock in range(nlocks)]
    timeline = lanes_figure(player, "timeline", "who did what: CPUs and the lock word over time", lanes)
    table = np.array([[phase(s, i) for i in range(len(names))] for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "phases", table, [c for _, c in PHASES], skip=(IRQ_IDLE, DONE))
    lock_lanes(timeline, player, len(names))
    actor_marks(timeline, player, list(range(len(names))))

    counter_names, counts = counter_table(trace, model)
    counters = counters_figure(player, "counters", "counters so far (model.answers: what -c prints)",
                               counter_names, counts, [COUNTER_COLOURS.get(n, style.DARK_GREY) for n in counter_names])

    named = PHASE_NAMES[s0.layout]
    key = style.key_html("CPUs:", [(named.get(ph, PHASES[ph][0]), PHASES[ph][1]) for ph in SHOWN_PHASES[s0.layout]])
    key += style.key_html("word:", [(f.name, f.colour) for f in fields],
                          outline=[("bit changed by this step", style.BLUE)])
    if s0.layout != q.TICKET:
        key += style.key_html("nodes:", [("filled: in use, in its context's colour", style.ORANGE), NODE_FREE],
                              outline=[NODE_BAD],
                              marks=[("⌒▼", LINK[1], LINK[0]), ("⌒▼", STALE_LINK[1], STALE_LINK[0])])
    key += style.key_html("timeline:", [], marks=[("▲", style.DARK, "took a step"),
                                                  ("◆", style.BLUE, "changed a lock word")])
    return player.layout(word, state, timeline, counters, key=key)
