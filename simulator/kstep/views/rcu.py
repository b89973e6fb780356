"""The RCU view, and the RCU panels every view of a model built on ``add_rcu`` reuses.

What a student should see: a CPU inside a read-side section holds up the grace period that
started while it was inside (its quiescent state stays pending, drawn as an orange outline), the
grace period ends only when every CPU has reported, and a callback (kfree) runs only after the
grace period it waits for has ended.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import AdaptiveTicker, Range1d
from bokeh.plotting import figure

from ..models.rcu import FREED, RCU_ACTOR, awaited, gp_running, gp_seq_long, grace_periods_ended, rcu_seq_done
from . import style
from .board import Box, board_figure, box_source, columns, draw_boxes, in_a_row
from .counters import counters_figure
from .player import Player
from .registry import register
from .timeline import actor_marks, add_cursor, interval_lane, lanes_figure, marks, phase_bars

GP_RUNNING = ("grace period running", style.YELLOW)
QS_PENDING = ("quiescent state still needed", style.ORANGE)
CB_READY = ("callback ready (its grace period ended)", style.GREEN)
CB_WAITING = ("callback waiting", style.LIGHT)
OBJ_CURRENT = ("object gp points to", style.GREEN)
OBJ_OLD = ("old object, not yet freed", style.LIGHT)
OBJ_FREED = ("freed", style.GREY)
OBJ_UAF = ("freed while a reader holds it", style.VERMILLION)

# Thread phases of the stand-alone RCU mechanism, in palette order.
PHASES = (style.IDLE, style.RCU_READ, ("waiting for a grace period (synchronize_rcu)", style.ORANGE), style.DONE)
RUNNING, READING, WAITING_GP, DONE = range(len(PHASES))
MAX_SHOWN = 6  # boxes per row before the rest are summarised


# --- RCU pieces shared with other views -------------------------------------------------------------

def qs_needed(rcu, cpu: int) -> bool:
    """The running grace period still waits for this CPU: its bit in qsmask is set."""
    return bool(rcu.qsmask >> cpu & 1)


def grace_periods_completed(states) -> list[int]:
    """Grace periods that ended from the first state up to each state."""
    first = states[0].rcu.gp_seq
    return [grace_periods_ended(first, s.rcu.gp_seq) for s in states]


def gp_box(rcu, names, x: float, y: float, w: float) -> Box:
    """gp_seq as the tracepoints print it ((long)gp_seq), and whom the grace period waits for."""
    head = f"gp_seq {gp_seq_long(rcu.gp_seq)}"
    if gp_running(rcu):
        holdouts = [names[c] for c in awaited(rcu)]
        body = f"grace period running\nqsmask waits for: {', '.join(holdouts) or 'nobody'}"
        return Box(x, y, w, 0.8, GP_RUNNING[1], head, body)
    return Box(x, y, w, 0.8, style.LIGHT, head, "idle: no grace period running")


def callback_boxes(rcu, describe, *, y: float) -> list[Box]:
    """The callback queue in call_rcu() order; ``describe(callback)`` names what it does."""
    cbs = rcu.callbacks
    shown = cbs[:MAX_SHOWN] if len(cbs) <= MAX_SHOWN else cbs[:MAX_SHOWN - 1]
    slots = in_a_row(max(len(shown) + (len(cbs) > len(shown)), 1), y=y, max_w=2.2)
    out = []
    for (x, _, w, h), cb in zip(slots, shown):
        ready = rcu_seq_done(rcu.gp_seq, cb.wait)
        fill = CB_READY[1] if ready else CB_WAITING[1]
        when = f"gp_seq reached {gp_seq_long(cb.wait)}" if ready else f"waits for gp_seq\n≥ {gp_seq_long(cb.wait)}"
        out.append(Box(x, y, w, h, fill, describe(cb), when))
    if len(cbs) > len(shown):
        x, _, w, h = slots[len(shown)]
        out.append(Box(x, y, w, h, style.WHITE, f"+{len(cbs) - len(shown)} more", "queued later"))
    if not cbs:
        x, _, w, h = slots[0]
        out.append(Box(x, y, w, h, style.WHITE, "(none queued)", "", line=style.GREY))
    return out


def qs_reports(states) -> list[tuple[int, int]]:
    """(frame, cpu) for every quiescent state reported: the CPU's bit in qsmask is cleared."""
    out = []
    for k in range(1, len(states)):
        cleared = states[k - 1].rcu.qsmask & ~states[k].rcu.qsmask
        out += [(k, c) for c in range(len(states[k].rcu.nesting)) if cleared >> c & 1]
    return out


def gp_lane(p: figure, player: Player, lane: int) -> None:
    """Grace periods as bars in ``lane``, numbered from 1 in this run."""
    states = player.trace.states
    done = grace_periods_completed(states)
    interval_lane(p, player, "gp", [gp_running(s.rcu) for s in states], GP_RUNNING[1], lane,
                  "gp-numbers", lambda k: f"GP {done[k] + 1}", style.INK)


def qs_marks(p: figure, player: Player, lane_of_cpu) -> None:
    reports = qs_reports(player.trace.states)
    marks(p, player, "qs", np.array([k for k, _ in reports], dtype=np.int32),
          np.array([lane_of_cpu[c] for _, c in reports], dtype=np.int16), color=style.GREEN, marker="diamond",
          size=14, dy=0.0)


def callbacks_figure(player: Player, x_range: Range1d) -> figure:
    """How many callbacks wait, step by step, below the timeline it shares its x range with."""
    counts = np.array([len(s.rcu.callbacks) for s in player.trace.states], dtype=np.int16)
    p = figure(name="kstep-plot-callbacks", title="callbacks queued (call_rcu) and not yet invoked",
               width=style.WIDTH, height=150, x_range=x_range,
               y_range=Range1d(0, max(1, int(counts.max())) + 0.5, name="kstep-y-callbacks"),
               tools="", toolbar_location=None)
    style.style_figure(p)
    src = player.windowed_source("callbacks-count", {"x": np.arange(len(counts) + 1, dtype=np.int32),
                                                     "y": np.append(counts, counts[-1])}, "x", "x")
    p.step("x", "y", source=src, mode="after", line_width=3, color=style.VERMILLION, name="kstep-plot-callbacks-count")
    p.yaxis.axis_label = "pending"
    p.yaxis.ticker = AdaptiveTicker(min_interval=1, num_minor_ticks=0)
    add_cursor(p, player)
    return p


def invoked_so_far(trace) -> np.ndarray:
    """Callbacks invoked up to each frame (the rcu kthread's rcu_do_batch steps)."""
    did = [1 if a.actor == RCU_ACTOR and a.label == "rcu_do_batch" else 0 for a in trace.actions]
    return np.concatenate([[0], np.cumsum(did, dtype=np.int64)])


# --- the stand-alone RCU mechanism ---------------------------------------------------------------

def phase(s, i: int) -> int:
    t = s.threads[i]
    if not t.frames:
        return DONE
    if s.rcu.nesting[i]:
        return READING
    if t.frames[0].label == "wait_rcu_gp" and not t.woken:
        return WAITING_GP
    return RUNNING


def thread_boxes(s) -> list[Box]:
    names = [t.name for t in s.threads]
    out = []
    for i, (x, y, w, h) in enumerate(in_a_row(len(s.threads), y=3, max_w=2.6)):
        t = s.threads[i]
        nxt = t.frames[0].label if t.frames else "done"
        facts = [f"next: {nxt}"]
        held = [f"RCU nesting {s.rcu.nesting[i]}"] if s.rcu.nesting[i] else []
        if t.obj >= 0:
            held.append(f"obj {t.obj}")
        if held:
            facts.append(" · ".join(held))
        pending = qs_needed(s.rcu, i)
        out.append(Box(x, y, w, h, PHASES[phase(s, i)][1], f"{names[i]} · CPU {i}", "\n".join(facts),
                       line=QS_PENDING[1] if pending else style.INK, width=5 if pending else 1))
    return out


def shown_objects(s) -> list[int]:
    """The objects worth drawing: the one gp points to, those threads hold or callbacks will free,
    then the newest others, MAX_SHOWN at most (a long run allocates thousands)."""
    wanted = {s.gp, *(t.obj for t in s.threads if t.obj >= 0 and t.frames),
              *(cb.obj for cb in s.rcu.callbacks if cb.func == "kfree")}
    recent = []
    o = len(s.objects) - 1
    while o >= 0 and len(recent) < MAX_SHOWN - len(wanted):
        if o not in wanted:
            recent.append(o)
        o -= 1
    return sorted(wanted | set(recent))[-MAX_SHOWN:]


def object_key(s):
    """Everything object_boxes reads, without hashing the whole (ever growing) object table."""
    ids = shown_objects(s)
    return (s.gp, tuple(ids), tuple(s.objects[o] for o in ids),
            tuple((t.obj, bool(t.frames)) for t in s.threads), s.rcu.nesting)


def object_boxes(s) -> list[Box]:
    held = {}
    for i, t in enumerate(s.threads):
        if t.obj >= 0 and t.frames:
            held.setdefault(t.obj, []).append(i)
    ids = shown_objects(s)
    out = []
    for (x, y, w, h), o in zip(in_a_row(len(ids), y=0, max_w=1.9), ids):
        readers = [i for i in held.get(o, []) if s.rcu.nesting[i]]
        facts = ["← gp points here" if o == s.gp else s.objects[o]]
        if held.get(o):
            facts.append("held by " + ", ".join(s.threads[i].name for i in held[o]))
        if s.objects[o] == FREED:
            fill = OBJ_UAF[1] if readers else OBJ_FREED[1]
        else:
            fill = OBJ_CURRENT[1] if o == s.gp else OBJ_OLD[1]
        out.append(Box(x, y, w, h, fill, f"obj {o}", "\n".join(facts)))
    return out


def thread_key(s):
    """What thread_boxes reads: each thread's next step, not its whole (possibly long) program."""
    return (tuple((t.frames[0].label if t.frames else None, t.obj, t.woken) for t in s.threads),
            s.rcu.nesting, s.rcu.qsmask)


def freed_so_far(states) -> list[int]:
    """Objects freed at each frame; the table is recounted only when it changed."""
    out, last, count = [], None, 0
    for s in states:
        if s.objects is not last:
            last, count = s.objects, s.objects.count(FREED)
        out.append(count)
    return out


@register("rcu")
def rcu_view(trace, model):
    player = Player(trace, model)
    s0 = trace.states[0]
    names = [t.name for t in s0.threads]

    def describe(cb):
        return f"wake {names[cb.obj]}" if cb.func == "wakeme_after_rcu" else f"kfree(obj {cb.obj})"

    def rcu_boxes(s):
        return columns([gp_box(s.rcu, names, 3.4, 2, 3.0)])

    board = board_figure("state", "state after this step", [(3, "CPUs"), (2, "grace period"), (1, "callbacks"),
                                                             (0, "objects")], height=470, y_range=(-0.55, 3.5))
    draw_boxes(board, box_source(player, "threads", lambda s: columns(thread_boxes(s)), key=thread_key))
    draw_boxes(board, box_source(player, "gp", rcu_boxes, key=lambda s: (s.rcu.gp_seq, s.rcu.qsmask)))
    draw_boxes(board, box_source(player, "callbacks", lambda s: columns(callback_boxes(s.rcu, describe, y=1)),
                                 key=lambda s: (s.rcu.gp_seq, s.rcu.callbacks)))
    draw_boxes(board, box_source(player, "objects", lambda s: columns(object_boxes(s)), key=object_key))

    lanes = [f"{n} (CPU {i})" for i, n in enumerate(names)] + ["grace period"]
    timeline = lanes_figure(player, "timeline", "who did what: CPUs and grace periods over time", lanes)
    phases = np.array([[phase(s, i) for i in range(len(names))] for s in trace.states], dtype=np.int8)
    phase_bars(timeline, player, "phases", phases, [c for _, c in PHASES], skip=(DONE,))
    gp_lane(timeline, player, len(names))
    qs_marks(timeline, player, list(range(len(names))))
    actor_marks(timeline, player, list(range(len(names))) + [len(names)])
    pending = callbacks_figure(player, timeline.x_range)

    counts = np.column_stack([
        grace_periods_completed(trace.states),
        [len(s.rcu.callbacks) for s in trace.states],
        invoked_so_far(trace),
        freed_so_far(trace.states),
    ])
    counters = counters_figure(player, "counters", "counters so far",
                               ["grace periods completed", "callbacks pending", "callbacks invoked",
                                "objects freed"], counts,
                               [GP_RUNNING[1], style.VERMILLION, CB_READY[1], OBJ_FREED[1]])
    key = (style.key_html("threads:", [(what, c) for what, c in PHASES[:3]], outline=[QS_PENDING])
           + style.key_html("RCU:", [GP_RUNNING, CB_READY, CB_WAITING])
           + style.key_html("objects:", [OBJ_CURRENT, OBJ_OLD, OBJ_FREED, OBJ_UAF])
           + style.key_html("timeline:", [], marks=[("◆", style.GREEN, "quiescent state reported"),
                                                    ("▲", style.DARK, "took a step")]))
    return player.layout(board, timeline, pending, counters, key=key)

