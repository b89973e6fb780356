"""The qspinlock view: the lock word bit by bit, the CPUs, their MCS nodes and the queue.

What a student should see: the whole lock is one 32-bit word, (tail, pending, locked) in the
source's comments, and every step of ``models/qspinlock/`` changes a few of its bits (the
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

from bokeh.core.properties import value
from bokeh.plotting import figure

from ..models.qspinlock import state as q
from . import style
from .board import board_figure, board_source, draw_boxes
from .counters import counters_figure
from .player import Player
from .boards.qspinlock import (CELL, CONTEXT_H, CONTEXT_ROW, CONTEXT_Y, LEVEL_ROWS, LINK, NESTING, NODE_BAD, NODE_FREE,
                               NODE_Y, NOTATION, PHASE_NAMES, PHASES, QUEUE_H, SHOWN_PHASES, STALE_LINK, STATE_SCALE,
                               TAS_SPIN, WORD_BLOCK, LOCK_BARS, Field, bit_x, board_sources, chart_sources,
                               context_levels, counter_names, phase, queue_y, word_fields, word_top)
from .registry import register
from .timeline import actor_marks, lanes_figure, marks, phase_bars



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
        text_font_size="9pt", text_align="center", text_baseline="middle", text_color=style.DARK,
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
    chart = {c.name: c for c in chart_sources(s0, model)}
    phase_bars(timeline, player, chart["timeline-phases"], [c for _, c in PHASES])
    for lock in range(nlocks):
        lock_name = q.lock_name(lock)
        for bar, _, colour, _ in LOCK_BARS[s0.layout](s0):
            phase_bars(timeline, player, chart[f"timeline-{bar}-{lock_name}"], [style.FREE, colour], height=0.2)
        if s0.layout == q.TICKET:
            phase_bars(timeline, player, chart[f"timeline-held-{lock_name}"], [style.FREE, style.HOLDS], height=0.3)
    timeline.text("x", "y", "text", source=board_source(player, chart["word-labels"]),
                  name="kstep-plot-timeline-word-labels", text_font_size="10pt", text_baseline="middle",
                  text_color=style.INK, text_font_style="bold")
    marks(timeline, player, chart["timeline-word-changes"], color=style.INK, marker="diamond", size=9)
    actor_marks(timeline, player, [chart["timeline-actions"], chart["timeline-violation"]])
    counters = counters_figure(player, "counters so far (model.answers: what -c prints)", counter_names(s0, model),
                               chart["counters"])

    named = PHASE_NAMES[s0.layout]
    spins = any(phase(s, i) == TAS_SPIN for s in trace.states for i in range(len(names)))
    shown = SHOWN_PHASES[s0.layout] + ((TAS_SPIN,) if spins else ())
    key = style.key_html("CPUs:", [(named.get(ph, PHASES[ph][0]), PHASES[ph][1]) for ph in shown])
    key += style.key_html("word:", [(f.name, f.colour) for f in fields],
                          outline=[("a bit changed", style.STEP)])
    if s0.layout != q.TICKET:
        key += style.key_html("nodes (in use: in the colour of the context using it):",
                              [("counted by its CPU, no context using it", style.FREE), NODE_FREE],
                              outline=[NODE_BAD],
                              marks=[("⌒▼", LINK[1], LINK[0]), ("⌒▼", STALE_LINK[1], STALE_LINK[0])])
    key += style.key_html("timeline:", [], marks=[("▲", style.DARK, "took a step"),
                                                  ("◆", style.INK, "changed a lock word")])
    return player.layout(word, state, timeline, counters, key=key)
