"""The qspinlock board's rows and charts, in the standard library only (boxes.py says why): the lock
word bit by bit with its fields and last transitions, the CPUs' contexts, their MCS nodes, and each
lock's queue; the timeline of the CPUs and the lock words, and the counters.  qspinlock.py draws
them; the page's interactive mode computes them for a student's own run."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, NamedTuple

from ...models.qspinlock import invariants as qinv
from ...models.qspinlock import powerpc as qppc
from ...models.qspinlock import qspinlock as qgen
from ...models.qspinlock import qspinlock_types as qtypes
from ...models.qspinlock import spinlock_types as ttypes
from ...models.qspinlock import state as q
from .. import charts, style
from ..presentation import present
from ..boxes import LEFT, RIGHT, BoardSource, Box, columns, in_a_row

# --- what a CPU (a task or an interrupt on it) is doing, in palette order ----------------------------

FAST = ("fast path: one cmpxchg of the word", style.LOCKLESS)
PENDING = ("pending: spins on the lock word", style.IN_PROGRESS)
QUEUED = ("queued: spins on its own node->locked", style.WAITS)
HEAD = ("queue head: spins on the lock word", style.FIRST_IN_LINE)
HOLDING = ("the lock", style.HOLDS)
RELEASING = ("the lock, and releases its node: hands the queue on, count--", style.HOLDS_2)
NO_IRQ = ("no interrupt in progress", style.FREE)
TAS = ("test-and-set: spins on the lock word (virt_spin_lock)", style.WAITS_2)
PHASES = (FAST, PENDING, QUEUED, HEAD, HOLDING, RELEASING, NO_IRQ, style.DONE, TAS)
FAST_PATH, PENDING_PATH, IN_QUEUE, QUEUE_HEAD, HOLDS, RELEASES, IRQ_IDLE, DONE, TAS_SPIN = range(len(PHASES))

# Each step label of each program, by the phase a context whose *next* step it is is in.
PHASE_OF = {
    q.QSPINLOCK: {
        "queued_spin_lock": FAST_PATH,
        **dict.fromkeys(("wait_pending_handover", "queued_fetch_set_pending_acquire", "trylock_pending_cmpxchg",
                         "clear_pending", "wait_locked_clear", "clear_pending_set_locked"), PENDING_PATH),
        **dict.fromkeys(("node_count_inc", "mcs_node_init", "store_node_count", "queued_spin_trylock", "xchg_tail",
                         "link_prev", "mcs_spin"), IN_QUEUE),
        **dict.fromkeys(("wait_head", "claim_cmpxchg", "set_locked"), QUEUE_HEAD),
        **dict.fromkeys(("wait_next", "mcs_handoff", "release_node"), RELEASES),
        **dict.fromkeys(("critical_section", "queued_spin_unlock"), HOLDS),
        **dict.fromkeys(("virt_spin_lock", "virt_spin_lock_cmpxchg"), TAS_SPIN),
    },
    q.TICKET: {
        "arch_spin_lock": FAST_PATH, "wait_ticket": IN_QUEUE,
        **dict.fromkeys(("critical_section", "arch_spin_unlock"), HOLDS),
    },
    q.POWERPC: {
        "queued_spin_lock": FAST_PATH, "try_to_steal_lock": PENDING_PATH,
        **dict.fromkeys(("queued_spin_lock_mcs_queue", "mcs_node_init", "publish_tail_cpu", "get_tail_qnode",
                         "link_prev", "mcs_spin", "queued_spin_trylock"), IN_QUEUE),
        **dict.fromkeys(("wait_head", "set_mustq", "trylock_clean_tail"), QUEUE_HEAD),
        **dict.fromkeys(("wait_next", "mcs_handoff", "release_node"), RELEASES),
        **dict.fromkeys(("critical_section", "queued_spin_unlock"), HOLDS),
    },
}
# What the phases mean where a layout has its own words for them (the colour key says these).
PHASE_NAMES = {
    q.QSPINLOCK: {},
    q.TICKET: {FAST_PATH: "draws a ticket: one fetch_add", IN_QUEUE: "waits for its ticket: spins on the lock word"},
    q.POWERPC: {PENDING_PATH: "tries to steal: spins on the lock word (try_to_steal_lock)"},
}
SHOWN_PHASES = {q.QSPINLOCK: (FAST_PATH, PENDING_PATH, IN_QUEUE, QUEUE_HEAD, HOLDS, RELEASES),
                q.TICKET: (FAST_PATH, IN_QUEUE, HOLDS),
                q.POWERPC: (FAST_PATH, PENDING_PATH, IN_QUEUE, QUEUE_HEAD, HOLDS, RELEASES)}


def phase(s, i: int) -> int:
    """What context ``i`` is doing in state ``s``.  An interrupt is in progress from its first step
    into spin_lock until it has unlocked (the model holds its task back exactly then)."""
    t = s.threads[i]
    if not t.frames:
        return DONE
    if t.level and not t.entered:
        return IRQ_IDLE
    return PHASE_OF[s.layout][t.frames[0].label]


# --- the lock word -----------------------------------------------------------------------------------

NOTATION = {q.QSPINLOCK: "(tail, pending, locked)", q.POWERPC: "(tail, must-queue, locked)",
            q.TICKET: "(next, owner)"}
UNUSED = ("not used", style.UNUSED)


class Field(NamedTuple):
    name: str
    lo: int  # lowest bit
    hi: int  # highest bit
    colour: str
    text: Callable[[int], str]  # the field's value, said for a word


def _bits(mask: int) -> tuple[int, int]:
    return (mask & -mask).bit_length() - 1, mask.bit_length() - 1


def _value(mask: int) -> Callable[[int], int]:
    lo = _bits(mask)[0]
    return lambda w: (w & mask) >> lo


def word_fields(layout: str, pending_bits: int) -> list[Field]:
    """The fields of the word, from bit 31 down, with the constants of the layout's own header."""
    if layout == q.QSPINLOCK:
        lay = qtypes.LAYOUTS[pending_bits]
        cpu, idx = _value(lay.TAIL_CPU_MASK), _value(lay.TAIL_IDX_MASK)
        pend, locked = _value(lay.PENDING_MASK), _value(qtypes._Q_LOCKED_MASK)
        fields = [
            Field("tail cpu (+1)", *_bits(lay.TAIL_CPU_MASK), style.WAITS,
                  lambda w: f"tail cpu = {cpu(w)}" + (f": CPU {cpu(w) - 1}" if cpu(w) else ": no queue")),
            Field("tail idx", *_bits(lay.TAIL_IDX_MASK), style.WAITS_2, lambda w: f"tail idx = {idx(w)}"),
        ]
        pending_bit = _bits(qtypes._Q_PENDING_VAL)[0]
        if lay.PENDING_BITS > 1:  # bits 9-15 of the pending byte: only bit 8 is ever set
            fields.append(Field("not used", pending_bit + 1, _bits(lay.PENDING_MASK)[1], UNUSED[1],
                                lambda w: "not used"))
        fields += [
            Field("pending", pending_bit, pending_bit, style.IN_PROGRESS,
                  lambda w: f"pending = {pend(w)}"),
            Field("locked byte", *_bits(qtypes._Q_LOCKED_MASK), style.HOLDS, lambda w: f"locked = {locked(w)}"),
        ]
        return fields
    if layout == q.POWERPC:
        tail, owner = _value(qppc.PPC_TAIL_CPU_MASK), _value(qppc.PPC_OWNER_CPU_MASK)
        return [
            Field("tail cpu (+1)", *_bits(qppc.PPC_TAIL_CPU_MASK), style.WAITS,
                  lambda w: f"tail cpu = {tail(w)}" + (f": CPU {tail(w) - 1}" if tail(w) else ": no queue")),
            Field("must-queue", *_bits(qppc.PPC_MUST_Q_VAL), style.WAITS_2,
                  lambda w: f"must-q = {int(bool(w & qppc.PPC_MUST_Q_VAL))}"),
            Field("sleepy (paravirt only)", *_bits(qppc.PPC_SLEEPY_VAL), UNUSED[1],
                  lambda w: f"sleepy = {int(bool(w & qppc.PPC_SLEEPY_VAL))}"),
            Field("owner cpu", *_bits(qppc.PPC_OWNER_CPU_MASK), style.HOLDS_2,
                  lambda w: f"owner cpu = {owner(w)}"),
            Field("locked", *_bits(qppc.PPC_LOCKED_VAL), style.HOLDS,
                  lambda w: f"locked = {int(bool(w & qppc.PPC_LOCKED_VAL))}"),
        ]
    return [
        Field("next ticket", ttypes.TICKET_SHIFT, 31, style.WAITS, lambda w: f"next = {w >> ttypes.TICKET_SHIFT}"),
        Field("owner (now serving)", 0, ttypes.TICKET_SHIFT - 1, style.HOLDS, lambda w: f"owner = {w & qtypes.U16}"),
    ]


def field_of_bits(fields: list[Field]) -> list[Field]:
    """For bit b (0..31), the field it belongs to."""
    out = [None] * 32
    for f in fields:
        for b in range(f.lo, f.hi + 1):
            out[b] = f
    assert None not in out, "the fields must cover the word"
    return out


def triple(s, w: int) -> str:
    """A word in the source's own notation: (tail, pending, locked) for the generic qspinlock, as the
    model's step table writes it; powerpc's (tail, must-queue, locked by) and the ticket lock's
    (next, owner) the same way."""
    if s.layout == q.QSPINLOCK:
        lay = qtypes.LAYOUTS[s.pending_bits]
        tail = w & lay.TAIL_MASK
        t = "0" if not tail else "cpu{}/idx{}".format(*qgen.decode_tail(lay, tail))
        return f"({t},{(w & lay.PENDING_MASK) >> qtypes._Q_PENDING_OFFSET},{w & qtypes._Q_LOCKED_MASK})"
    if s.layout == q.POWERPC:
        t = f"cpu{qppc.ppc_decode_tail_cpu(w)}" if w & qppc.PPC_TAIL_CPU_MASK else "0"
        owner = (w & qppc.PPC_OWNER_CPU_MASK) >> qppc.PPC_OWNER_CPU_OFFSET
        locked = f"cpu{owner}" if w & qppc.PPC_LOCKED_VAL else "0"
        return f"({t},{int(bool(w & qppc.PPC_MUST_Q_VAL))},{locked})"
    return f"({w >> ttypes.TICKET_SHIFT},{w & qtypes.U16})"


def tail_text(s, w: int) -> str:
    """Who the tail names, or "" for no tail (the timeline's tail labels)."""
    if s.layout == q.QSPINLOCK:
        lay = qtypes.LAYOUTS[s.pending_bits]
        return "cpu{}/idx{}".format(*qgen.decode_tail(lay, w & lay.TAIL_MASK)) if w & lay.TAIL_MASK else ""
    if s.layout == q.POWERPC:
        return f"cpu{qppc.ppc_decode_tail_cpu(w)}" if w & qppc.PPC_TAIL_CPU_MASK else ""
    return f"next {w >> ttypes.TICKET_SHIFT}"


# Geometry of the word board, in board units (the bits fill LEFT..RIGHT).
CELL = (RIGHT - LEFT) / 32
WORD_BLOCK = 3.4  # height of one lock's block
HISTORY = 3  # transitions listed under each word


def bit_x(b: int) -> float:
    """Bit 31 on the left, bit 0 on the right, as the kernel's layout comments draw the word."""
    return LEFT + (31 - b + 0.5) * CELL


def word_top(lock: int) -> float:
    return -lock * WORD_BLOCK


def bit_rows(fields: list[Field], nlocks: int) -> Callable:
    """Rows of the 32 bit cells of every lock, for a frame's (words before, words after)."""
    of = field_of_bits(fields)

    def rows(frame):
        before, after = frame
        out = {c: [] for c in ("x", "y", "fill", "line", "width", "bit", "ink")}
        for lock in range(nlocks):
            w, was = after[lock], before[lock]
            for b in range(31, -1, -1):
                on = (w >> b) & 1
                changed = ((w ^ was) >> b) & 1
                out["x"].append(round(bit_x(b), 4))
                out["y"].append(word_top(lock) - 1.05)
                out["fill"].append(of[b].colour if on else style.tint(of[b].colour, 0.18))
                out["line"].append(style.STEP if changed else style.DARK)
                out["width"].append(4.0 if changed else 1.0)
                out["bit"].append(str(on))
                out["ink"].append(style.INK if on else style.DARK)
        return out

    return rows


def field_label_rows(fields: list[Field], nlocks: int) -> Callable:
    """Under each field its value for the word, on two staggered lines so narrow fields never collide;
    a narrow field at either end of the word is aligned with that end, to stay on the board."""
    place = []
    for _j, f in enumerate(fields):
        narrow = f.hi - f.lo < 4
        if narrow and f.lo == 0:
            place.append((round(bit_x(0) + CELL / 2, 4), "right"))
        elif narrow and f.hi == 31:
            place.append((round(bit_x(31) - CELL / 2, 4), "left"))
        else:
            place.append((round((bit_x(f.hi) + bit_x(f.lo)) / 2, 4), "center"))

    def rows(words):
        out = {"x": [], "y": [], "text": [], "align": []}
        for lock, w in enumerate(words):
            for j, (f, (x, align)) in enumerate(zip(fields, place)):
                out["x"].append(x)
                out["y"].append(word_top(lock) - 1.72 - 0.32 * (j % 2))
                out["text"].append(f.text(w))
                out["align"].append(align)
        return out

    return rows


def word_changes(trace) -> list[list[tuple[int, str, str, int, int]]]:
    """Per lock: every step that changed its word, as (step, actor, label, word before, word after)."""
    states = trace.states
    out = [[] for _ in states[0].words]
    for k, (a, before, after) in enumerate(zip(trace.actions, states, states[1:]), start=1):
        for lock, (was, w) in enumerate(zip(before.words, after.words)):
            if was != w:
                out[lock].append((k, a.actor, a.label, was, w))
    return out


def history_frames(trace) -> list[tuple]:
    """Per frame: the last HISTORY transitions of each word up to that step, newest first, as text rows
    (the newest in blue when it is this very step).  No step numbers: without them the same few lines
    recur all through a long run and are shipped once (the timeline's diamonds say when)."""
    s0 = trace.states[0]
    changes = word_changes(trace)
    frames = []
    seen = [0] * len(changes)
    for k in range(len(trace.states)):
        rows = []
        for lock, ch in enumerate(changes):
            while seen[lock] < len(ch) and ch[seen[lock]][0] <= k:
                seen[lock] += 1
            recent = ch[max(0, seen[lock] - HISTORY):seen[lock]][::-1]
            for j, (step, actor, label, was, w) in enumerate(recent):
                now = step == k
                text = f"{actor} {label}  {triple(s0, was)} → {triple(s0, w)}" + ("   ← this step" if now else "")
                rows.append((LEFT, word_top(lock) - 2.5 - 0.3 * j, text, style.STEP if now else style.DARK))
            if not recent:
                rows.append((LEFT, word_top(lock) - 2.5, "no transition yet", style.DARK))
                recent = [None]
            # Every frame has the same number of rows: BokehJS 3.9 throws (RangeError in
            # TextView.after_visuals) when a text glyph with a per-row colour loses rows.
            rows.extend((LEFT, word_top(lock) - 2.5 - 0.3 * j, "", style.DARK) for j in range(len(recent), HISTORY))
        frames.append(tuple(rows))
    return frames


# --- the CPUs, their MCS nodes and the queue ------------------------------------------------------------

NODE_FREE = ("node free (its fields are stale)", style.EMPTY)
NODE_BAD = ("node used by a context while the count says it is free", style.HARM)
LINK = ("node->next of a node in use", style.INK)
STALE_LINK = ("stale node->next of a free node", style.UNUSED)
NESTING = ("task", "softirq", "hardirq", "NMI")  # kernel/locking/qspinlock.c: what each of the 4 nodes is for

CONTEXT_Y = 8.3  # the tasks' row; interrupts of higher levels in rows above it
CONTEXT_H = 1.2
CONTEXT_ROW = CONTEXT_H + 0.15
LEVEL_ROWS = ("tasks", "softirqs", "hardirqs", "NMIs", "nested\nNMIs")  # row titles, by q.LEVELS
HEADER_Y = 7.35
NODE_Y = 6.25  # qnodes[0]; qnodes[idx] one unit lower per idx
NODE_H = 0.84
QUEUE_H = 1.0
STATE_SCALE = 88  # pixels per board unit: room for a head and two lines of body in a node


def node_name(n: int) -> str:
    return "cpu{}/idx{}".format(*divmod(n, q.MAX_NODES))


def queue_y(layout: str, lock: int) -> float:
    top = NODE_Y - q.MAX_NODES - 0.05 if layout != q.TICKET else HEADER_Y - 0.1
    return top - lock * 1.15


def holders_of_nodes(s) -> dict[int, list[str]]:
    """node id -> the contexts using it (a context uses node ctx.idx of its CPU from grab to release)."""
    out: dict[int, list[str]] = {}
    for t in s.threads:
        if 0 <= t.idx < q.MAX_NODES:
            out.setdefault(q.node_id(t.cpu, t.idx), []).append(t.name)
    return out


def cpu_columns(s) -> list[tuple[float, float, float, float]]:
    return in_a_row(len(s.count), y=NODE_Y, max_w=2.5, gap=0.2)


def node_boxes(s) -> list[Box]:
    """qnodes[0..3] of every CPU: a column per CPU, idx 0 at the top."""
    users = holders_of_nodes(s)
    phase_of = {t.name: phase(s, i) for i, t in enumerate(s.threads)}
    out = []
    for cpu, (x, _, w, _) in enumerate(cpu_columns(s)):
        for idx in range(q.MAX_NODES):
            n = q.node_id(cpu, idx)
            node = s.nodes[n]
            who = users.get(n, [])
            counted = idx < s.count[cpu]
            nxt = "NULL" if node.next == q.NULL else node_name(node.next)
            on = f" · lock {q.lock_name(node.lock)}" if s.layout == q.POWERPC and node.lock >= 0 else ""
            if who:
                fill = PHASES[phase_of[who[0]]][1]
                first = f"{', '.join(who)}{on}"
            else:
                fill = style.FREE if counted else NODE_FREE[1]
                first = f"free{on}" if not counted else f"counted, unused{on}"
            bad = (who and not counted) or len(who) > 1
            out.append(Box(x, NODE_Y - idx, w, NODE_H, fill, node_name(n),
                           f"{first}\nlocked {node.locked} · next {nxt}",
                           line=NODE_BAD[1] if bad else style.INK if who or counted else style.UNUSED,
                           width=5.0 if bad else 1.0))
    return out


def node_key(s):
    return (s.nodes, s.count, tuple((t.cpu, t.idx, t.frames[:1]) for t in s.threads))


def link_rows(s, *, live: bool) -> dict[str, list]:
    """A curve from node to node->next for every node whose next is set: nodes in use (``live``) or
    free nodes still holding a stale pointer.  Each leaves the top of its node and lands on the top
    of the next, arching over the row so it never crosses a box in between."""
    cols = cpu_columns(s)
    users = holders_of_nodes(s)
    out = {c: [] for c in ("x0", "y0", "x1", "y1", "cx0", "cy0", "cx1", "cy1", "src", "dst")}
    for n, node in enumerate(s.nodes):
        if node.next == q.NULL or not 0 <= node.next < len(s.nodes):
            continue
        cpu, idx = divmod(n, q.MAX_NODES)
        in_use = n in users or idx < s.count[cpu]
        if in_use != live:
            continue
        (xa, _, wa, _), (xb, _, wb, _) = cols[cpu], cols[node.next // q.MAX_NODES]
        x0, x1 = xa + wa / 4, xb - wb / 4
        y0 = NODE_Y - idx + NODE_H / 2
        y1 = NODE_Y - node.next % q.MAX_NODES + NODE_H / 2
        rise = 0.25 + 0.05 * abs(cpu - node.next // q.MAX_NODES)
        top = max(y0, y1) + rise
        for c, v in zip(("x0", "y0", "x1", "y1", "cx0", "cy0", "cx1", "cy1"), (x0, y0, x1, y1, x0, top, x1, top)):
            out[c].append(round(v, 4))
        out["src"].append(node_name(n))
        out["dst"].append(node_name(node.next))
    return out


def context_levels(s) -> list[int]:
    """The nesting levels of a run's contexts, lowest first: one row of boxes each, above the CPUs'
    columns, so an interrupt is drawn over the task it interrupts."""
    return sorted({t.level for t in s.threads})


def context_boxes(s) -> list[Box]:
    out = []
    levels = context_levels(s)
    cols = cpu_columns(s)
    for i, t in enumerate(s.threads):
        x, _, w, _ = cols[t.cpu]
        y = CONTEXT_Y + levels.index(t.level) * CONTEXT_ROW
        ph = phase(s, i)
        if ph == IRQ_IDLE:
            lines = [NO_IRQ[0]]
        else:
            lines = [f"next: {t.frames[0].label}" if t.frames else "done"]
            on = []
            if t.lock >= 0:
                on.append(f"lock {q.lock_name(t.lock)}")
            if 0 <= t.idx < q.MAX_NODES:
                on.append(f"node {node_name(q.node_id(t.cpu, t.idx))}")
            elif t.idx >= q.MAX_NODES:
                on.append(f"idx {t.idx}: no node left")
            if s.layout == q.TICKET and t.lock >= 0:
                on.append(f"ticket {t.ticket}")
            if on:
                lines.append(" · ".join(on))
            if ph == QUEUE_HEAD and s.layout == q.QSPINLOCK:
                lines.append(f"val {triple(s, t.val)}")
        out.append(Box(x, y, w, CONTEXT_H, PHASES[ph][1], t.name, "\n".join(lines)))
    return out


def context_key(s):
    return tuple((t.frames[:1], t.lock, t.idx, t.val, t.ticket) for t in s.threads)


def is_tail(s, lock: int, t) -> bool:
    """Whether the word's tail names context ``t``'s node (powerpc: its CPU)."""
    w = s.words[lock]
    if s.layout == q.QSPINLOCK:
        lay = qtypes.LAYOUTS[s.pending_bits]
        return 0 <= t.idx < q.MAX_NODES and w & lay.TAIL_MASK == qgen.encode_tail(lay, t.cpu, t.idx)
    if s.layout == q.POWERPC:
        return t.idx >= 0 and bool(w & qppc.PPC_TAIL_CPU_MASK) and qppc.ppc_decode_tail_cpu(w) == t.cpu
    return False


def queue_boxes(s) -> list[Box]:
    """Per lock, left to right: who holds it, who holds pending, then the waiters in queue order (the
    order they queued, which the lock must keep: the model's ghost record, never read by the code),
    the one the word's tail names marked as the tail."""
    out = []
    for lock in range(len(s.words)):
        entries = []
        for i, t in enumerate(s.threads):
            if t.lock == lock and phase(s, i) in (HOLDS, RELEASES):
                entries.append((f"holds {q.lock_name(lock)}: {t.name}", "", HOLDING[1]))
        for t in s.threads:
            if t.lock == lock and t.frames and t.frames[0].label in qinv.PENDING_PATH and s.layout == q.QSPINLOCK:
                undo = t.frames[0].label == "clear_pending"
                entries.append((f"pending: {t.name}", "undoes it, then queues" if undo else "spins on the word",
                                PENDING[1]))
        order = [j for j in s.ghost_order[lock] if phase(s, j) not in (HOLDS, RELEASES)]
        for pos, j in enumerate(order):
            t = s.threads[j]
            ph = phase(s, j)
            where = f"ticket {t.ticket}" if s.layout == q.TICKET else node_name(q.node_id(t.cpu, t.idx))
            role = {QUEUE_HEAD: "head: spins on the word", IN_QUEUE: "spins on node->locked"}.get(ph, "")
            if s.layout == q.TICKET:
                role = "spins on the word"
            tail = " ← tail" if is_tail(s, lock, t) else ""
            entries.append((f"{pos + 1}. {t.name}{tail}", f"{where}\n{role}".strip(), PHASES[ph][1]))
        if not entries:
            entries.append(("free, nobody waiting", "", style.EMPTY))
        y = queue_y(s.layout, lock)
        for (x, _, w, _h), (head, body, fill) in zip(in_a_row(len(entries), y=y, max_w=2.3), entries):
            out.append(Box(x, y, w, QUEUE_H, fill, head, body))
    return out


def queue_key(s):
    return (s.words, s.ghost_order, tuple((t.lock, t.idx, t.ticket, t.frames[:1]) for t in s.threads))


def word_pairs(trace) -> list[tuple]:
    """Per frame: every lock's word before the step and after it (the bits it changed get an outline)."""
    states = trace.states
    return [(states[max(k - 1, 0)].words, s.words) for k, s in enumerate(states)]


def history_rows(frame) -> dict[str, list]:
    return {"x": [r[0] for r in frame], "y": [r[1] for r in frame], "text": [r[2] for r in frame],
            "color": [r[3] for r in frame]}


def board_sources(s0) -> list[BoardSource]:
    """The boards of a run starting at ``s0``: what qspinlock_view draws and interactive mode recomputes.
    The lock word (its bits, its value, each field's value, its last transitions), then the CPUs'
    contexts, each CPU's node count, nodes and node->next links (not for the ticket lock), the queues."""
    fields = word_fields(s0.layout, s0.pending_bits)
    nlocks = len(s0.words)
    same = lambda value: value  # noqa: E731  (a value of ``over`` is its own key)

    def heads(state):
        return {"x": [LEFT] * nlocks, "y": [word_top(lock) - 0.2 for lock in range(nlocks)],
                "text": [f"lock {q.lock_name(lock)} = {w:#010x}   {NOTATION[s0.layout]} = {triple(s0, w)}"
                         for lock, w in enumerate(state.words)]}

    def counts(s):
        cols = cpu_columns(s)
        return {"x": [c[0] for c in cols], "y": [HEADER_Y] * len(cols),
                "text": [f"CPU {cpu} · count {n}" for cpu, n in enumerate(s.count)]}

    text = {"x": float, "y": float, "text": str}
    out = [
        BoardSource("bits", bit_rows(fields, nlocks), same, {"x": float, "y": float, "fill": str, "line": str,
                                                             "width": float, "bit": str, "ink": str}, word_pairs),
        BoardSource("word-head", heads, lambda s: s.words, text),
        BoardSource("fields", field_label_rows(fields, nlocks), same, {**text, "align": str},
                    lambda trace: [s.words for s in trace.states]),
        BoardSource("transitions", history_rows, same, {**text, "color": str}, history_frames),
        BoardSource("contexts", lambda s: columns(context_boxes(s)), context_key),
    ]
    if s0.layout != q.TICKET:
        links = {c: float for c in ("x0", "y0", "x1", "y1", "cx0", "cy0", "cx1", "cy1")} | {"src": str, "dst": str}
        link_key = lambda s: (s.nodes, s.count, tuple((t.cpu, t.idx) for t in s.threads))  # noqa: E731
        out += [
            BoardSource("cpu-count", counts, lambda s: s.count, text),
            BoardSource("nodes", lambda s: columns(node_boxes(s)), node_key),
            BoardSource("stale-links", lambda s: link_rows(s, live=False), link_key, links),
            BoardSource("links", lambda s: link_rows(s, live=True), link_key, links),
        ]
    out.append(BoardSource("queue", lambda s: columns(queue_boxes(s)), queue_key))
    return out


# --- the timeline and the counters --------------------------------------------------------------------------

# Per layout, a lock's lane holds thin bars, top to bottom as in the source's triple: (name, the bits it
# shows, colour, how far down its lane).  The ticket lock has one bar, held.
LOCK_BARS = {
    q.QSPINLOCK: lambda s0: [("tail", qtypes.LAYOUTS[s0.pending_bits].TAIL_MASK, style.WAITS, -0.24),
                             ("pending", qtypes.LAYOUTS[s0.pending_bits].PENDING_MASK, style.IN_PROGRESS, 0.0),
                             ("locked", qtypes._Q_LOCKED_MASK, style.HOLDS, 0.24)],
    q.POWERPC: lambda s0: [("tail", qppc.PPC_TAIL_CPU_MASK, style.WAITS, -0.24),
                           ("mustq", qppc.PPC_MUST_Q_VAL, style.WAITS_2, 0.0),
                           ("locked", qppc.PPC_LOCKED_VAL, style.HOLDS, 0.24)],
    q.TICKET: lambda s0: [],
}


def ticket_held(w: int) -> bool:
    return (w >> ttypes.TICKET_SHIFT) != (w & qtypes.U16)


def lock_lanes(s0, first_lane: int) -> list[BoardSource]:
    """Per lock one lane of thin bars (LOCK_BARS), the tail labelled with whom it names at each change
    (the ticket lock's held bar with (next, owner)), and a diamond at every step that changed a word."""
    bars = LOCK_BARS[s0.layout](s0)
    out = []
    for lock in range(len(s0.words)):
        name = q.lock_name(lock)
        for bar, mask, _, dy in bars:
            out.append(charts.phase_bars(f"timeline-{bar}-{name}", lambda s, lock=lock, mask=mask: (
                1 if s.words[lock] & mask else 0,), first_lane=first_lane + lock, dy=dy, skip=(0,)))
        if not bars:
            out.append(charts.phase_bars(f"timeline-held-{name}", lambda s, lock=lock: (
                1 if ticket_held(s.words[lock]) else 0,), first_lane=first_lane + lock, skip=(0,)))

    def labels(trace):
        out = {"x": [], "y": [], "text": []}
        for lock in range(len(s0.words)):
            lane = first_lane + lock
            w = [s.words[lock] for s in trace.states]
            if bars:
                for k, _, tail in charts.runs([x & bars[0][1] for x in w]):
                    if tail:
                        out["x"].append(k + 0.15)
                        out["y"].append(-lane + 0.24 + 0.17)
                        out["text"].append(tail_text(s0, tail))
            else:
                for k, _, word in charts.runs(w):
                    out["x"].append(k + 0.15)
                    out["y"].append(-lane + 0.3)
                    out["text"].append(triple(s0, word))
        return out

    def changed(trace):
        states = trace.states
        return [(k, first_lane + next(j for j, (a, b) in enumerate(zip(states[k - 1].words, states[k].words))
                                      if a != b))
                for k in range(1, len(states)) if states[k].words != states[k - 1].words]

    return out + [charts.windowed("word-labels", charts.LABELS, labels, "x", "x"),
                  charts.marks("timeline-word-changes", changed, dy=-0.45)]


def counter_table(trace, model) -> tuple[list[str], list[tuple]]:
    """The counters ``-c`` reveals after every step: each step counted alone, then summed."""
    answers = present(model).answers
    final = answers(trace)
    names = [k for k, v in final.items() if k not in trace.stats and isinstance(v, int) and not isinstance(v, bool)]
    per_step = []
    for a, before, after in zip(trace.actions, trace.states, trace.states[1:]):
        one = answers(SimpleNamespace(actions=[a], states=[before, after], stats={}))
        per_step.append([one[n] for n in names])
    return names, charts.cumulative(per_step, [0] * len(names))


def counter_names(s0, model) -> list[str]:
    """The counters of ``answers`` (what -c prints) for a run from ``s0``: the same for every run."""
    return counter_table(SimpleNamespace(actions=[], states=[s0], stats={}), model)[0]


def chart_sources(s0, model) -> list[BoardSource]:
    """Who did what (each CPU's phase, each lock word's fields, who took each step) and the counters."""
    n = len(s0.threads)
    names = counter_names(s0, model)
    return [
        charts.phase_bars("timeline-phases", lambda s: [phase(s, i) for i in range(n)], skip=(IRQ_IDLE, DONE)),
        *lock_lanes(s0, n),
        *charts.actor_marks("timeline", {t.name: i for i, t in enumerate(s0.threads)}),
        charts.counters("counters", len(names), lambda t: counter_table(t, model)[1]),
    ]
