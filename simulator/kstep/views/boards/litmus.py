"""The litmus board's rows, in the standard library only (boxes.py says why).

Threads are columns, their events boxes in program order under the initial writes; under x86-TSO
each CPU's store buffer and the memory follow. Edges are arrows between the boxes: ``po`` between
consecutive events of a thread, ``rf`` from a write to the read that takes its value, ``co`` from
a write to the next write of its location, ``fr`` from a read to the write that overwrites what it
read, a fence's edge between the accesses it orders, and, once the axioms are checked, the cycle
that forbids the execution, in the colour of harm, each edge named after the relation it comes from.
"""

from __future__ import annotations

from ...memory.stepping import FULL
from .. import style
from ..boxes import LEFT, RIGHT, BoardSource, Box, columns

EDGE_COLUMNS = {"x0": float, "y0": float, "x1": float, "y1": float, "color": str, "width": float, "text": str,
                "tx": float, "ty": float}
# Edges are ink, each named beside it (a mark in ink says what it is in words, style.NEUTRAL); only the
# cycle that forbids an execution has a colour, harm's.
EDGE_COLOURS = {"po": style.DARK, "rf": style.INK, "co": style.INK, "fr": style.INK, "fence": style.INK}
DONE = ("executed (x86-TSO) or revealed (the other models)", style.FREE)
UNSEEN = ("not yet executed or revealed", style.EMPTY)
WAITING = ("a fence or locked instruction that waits for the store buffer to drain; a store not yet in memory",
           style.WAITS)
CYCLE = ("the cycle that forbids the execution, each edge named after its relation", style.HARM)
ROW = 1.0  # between two events of a thread
H = 0.62  # a box's height
INIT_Y = 0.0


class Geometry:
    """Where the boxes of a test go: ``threads`` columns of at most ``depth`` events, ``locs`` locations."""

    def __init__(self, threads: int, depth: int, locs: tuple, tso: bool):
        self.threads, self.depth, self.locs, self.tso = threads, depth, locs, tso
        self.cw = (RIGHT - LEFT) / threads
        self.w = min(2.5, self.cw * 0.72)
        self.buffer_y = -(depth + 1) * ROW - 0.2
        self.memory_y = self.buffer_y - 1.1
        self.verdict_y = (self.memory_y if tso else -(depth + 1) * ROW) - 1.1

    def x(self, t: int) -> float:
        return LEFT + self.cw * (t + 0.5)

    def event(self, t: int, i: int) -> tuple[float, float]:
        return self.x(t), -(i + 1) * ROW

    def init(self, loc: str) -> tuple[float, float]:
        k = self.locs.index(loc)
        return LEFT + (RIGHT - LEFT) * (k + 0.5) / len(self.locs), INIT_Y

    def memory(self, loc: str) -> tuple[float, float]:
        return self.init(loc)[0], self.memory_y

    def rows(self) -> list[tuple[float, str]]:
        out = [(INIT_Y, "initial")]
        if self.tso:
            out += [(self.buffer_y, "store buffers"), (self.memory_y, "memory")]
        return out + [(self.verdict_y, "outcome")]

    def y_range(self) -> tuple[float, float]:
        return self.verdict_y - 0.6, INIT_Y + 0.9


def edge(g: Geometry, a: tuple[float, float], b: tuple[float, float], kind: str, text: str = "",
         color: str | None = None, width: float = 2.0, slot: int = 0) -> dict:
    """An arrow from box a to box b: down a column between its boxes, along the right of a column between
    two boxes of one thread that are not neighbours, else from side to side."""
    (xa, ya), (xb, yb) = a, b
    if abs(xa - xb) < 1e-9 and kind == "po":
        x0, y0, x1, y1 = xa, ya - H / 2, xb, yb + H / 2
        tx, ty = xa - 0.1, (y0 + y1) / 2
    elif abs(xa - xb) < 1e-9:
        x0 = x1 = xa + g.w / 2 + 0.15 + 0.22 * slot
        y0, y1 = ya, yb
        tx, ty = x0 + 0.05, (y0 + y1) / 2 - 0.25 * slot
    else:
        side = 1 if xb > xa else -1
        x0, y0, x1, y1 = xa + side * g.w / 2, ya, xb - side * g.w / 2, yb
        tx, ty = (x0 + x1) / 2, (y0 + y1) / 2 + 0.12
    return {"x0": x0, "y0": y0, "x1": x1, "y1": y1, "color": color or EDGE_COLOURS[kind], "width": width,
            "text": text or kind, "tx": tx, "ty": ty}


def edge_columns(edges: list[dict]) -> dict[str, list]:
    return {c: [e[c] for e in edges] for c in EDGE_COLUMNS}


def event_box(g: Geometry, pos: tuple[float, float], kind: str, head: str, body: str, seen: bool,
              waiting: bool = False, next_up: bool = False) -> Box:
    fill = (WAITING if waiting else DONE if seen else UNSEEN)[1]
    return Box(pos[0], pos[1], g.w, H, fill, head, body, line=style.INK, width=3.0 if next_up else 1.0)


def short(e, value_known: bool) -> str:
    """An event as its box heads it (the primitive, under it, says acquire, release or ONCE):
    ``W x=1``, ``R* y=?`` before a read is revealed, ``F wmb``."""
    if e.kind == "F":
        return "F " + " ".join(sorted(e.tags))
    return f"{e.kind}{'*' if e.rmw else ''} {e.loc}={e.value if value_known else '?'}"


def verdict_box(g: Geometry, text: str, harm: bool) -> Box:
    head, _, body = text.partition(": ")
    return Box((LEFT + RIGHT) / 2, g.verdict_y, RIGHT - LEFT - 0.4, 0.9, style.HARM if harm else style.FREE,
               head, body.replace("; ", "\n"))


# -- x86-TSO --------------------------------------------------------------------------------------------
def tso_sources(model) -> tuple[list[BoardSource], Geometry]:
    """The boxes and arrows of a TsoMachine's states."""
    depth = max(len(p.events) for paths in model.paths for p in paths)
    g = Geometry(len(model.cpus), depth, model.locs, tso=True)

    def pos(s, writer, loc):
        return g.init(loc) if writer is None else g.event(*writer)

    def boxes(s):
        out = [Box(*g.init(loc), g.w, H, style.FREE, f"{loc} = {model.litmus.init.get(loc, 0)}", "initial value")
               for loc in model.locs]
        for t in range(len(model.cpus)):
            run = model.runs(s, t)[0]
            for i, (kind, loc, value, tags, rmw, prim, _) in enumerate(run.events):
                done, here = i < s.pc[t], i == s.pc[t]
                shown = value if (done or kind == "W") else "?"
                head = f"F {''.join(sorted(tags))}" if kind == "F" else f"{kind}{'*' if rmw else ''} {loc}={shown}"
                waits = here and bool(s.buffers[t]) and not model.can_issue(s, t, run, i)
                body = prim + ("\nwaits: buffer not empty" if waits else "")
                out.append(event_box(g, g.event(t, i), kind, head, body, done, waits, here))
            entries = ", ".join(f"{loc}={v}" for loc, v, _ in s.buffers[t])
            out.append(Box(g.x(t), g.buffer_y, g.w, 0.8, style.WAITS if s.buffers[t] else style.FREE,
                           f"P{t}'s store buffer", f"oldest first: {entries}" if entries else "empty"))
        for j, loc in enumerate(model.locs):
            value, writer = s.memory[j]
            out.append(Box(*g.memory(loc), g.w, 0.8, style.FREE, f"{loc} = {value}",
                           "initial value" if writer is None else f"written by P{writer[0]}"))
        final = model.outcome(s)
        if final is not None:
            weak = model.exists_holds(s)
            text = ("final state: " + " ".join(f"{k}={v}" for k, v in final)
                    + (" — the exists clause holds" if weak else " — the exists clause does not hold"))
            out.append(verdict_box(g, text, False))
        return columns(out)

    def edges(s):
        out = []
        for t in range(len(model.cpus)):
            events = model.runs(s, t)[0].events
            out += [edge(g, g.event(t, i), g.event(t, i + 1), "po") for i in range(len(events) - 1)]
            # smp_mb() orders the accesses around it (the store before it drained first): once it has run
            for f, (kind, _, _, tags, _, prim, _) in enumerate(events[:s.pc[t]]):
                if kind == "F" and tags & FULL:
                    before = [i for i in range(f) if events[i][0] in "RW"]
                    after = [i for i in range(f + 1, len(events)) if events[i][0] in "RW"]
                    if before and after:
                        out.append(edge(g, g.event(t, before[-1]), g.event(t, after[0]), "fence", prim, slot=1))
        for me, writer, where in s.reads:
            loc = model.runs(s, me[0])[0].events[me[1]][1]
            out.append(edge(g, pos(s, writer, loc), g.event(*me), "rf",
                            "rf (own buffer)" if where == "buffer" else "rf"))
        order = {loc: [None] for loc in model.locs}
        for w in s.drained:
            order[model.runs(s, w[0])[0].events[w[1]][1]].append(w)
        for loc, ws in order.items():
            out += [edge(g, pos(s, a, loc), pos(s, b, loc), "co") for a, b in zip(ws, ws[1:])]
        for me, writer, _ in s.reads:
            loc = model.runs(s, me[0])[0].events[me[1]][1]
            ws = order[loc]
            if writer in ws and ws.index(writer) + 1 < len(ws):
                out.append(edge(g, g.event(*me), pos(s, ws[ws.index(writer) + 1], loc), "fr"))
        return edge_columns(out)

    return [BoardSource("litmus-boxes", boxes, lambda s: s),
            BoardSource("litmus-edges", edges, lambda s: s, columns=EDGE_COLUMNS)], g


# -- an execution revealed --------------------------------------------------------------------------------
def reveal_sources(model) -> tuple[list[BoardSource], Geometry]:
    """The boxes and arrows of a Reveal's states."""
    x = model.x
    index = {}
    for e in x.events:
        if e.thread >= 0:
            index[e.id] = sum(1 for f in x.events if f.thread == e.thread and f.id < e.id)
    depth = max(index.values(), default=0) + 1
    locs = tuple(e.loc for e in x.events if e.thread < 0)
    g = Geometry(len(model.cpus), depth, locs, tso=False)
    names = model.names

    def pos(i):
        e = x.events[i]
        return g.init(e.loc) if e.thread < 0 else g.event(e.thread, index[i])

    def boxes(s):
        out = []
        for e in x.events:
            if e.thread < 0:
                out.append(Box(*g.init(e.loc), g.w, H, style.FREE, f"{e.loc} = {e.value}", "initial value"))
                continue
            seen = e.id in s.events
            out.append(event_box(g, pos(e.id), e.kind, f"{names[e.id]}: {short(e, seen or e.kind != 'R')}",
                                 e.primitive, seen))
        if s.judged:
            out.append(verdict_box(g, model.verdict(), x.broken is not None))
        return columns(out)

    def visible(s):
        return set(s.events) | {e.id for e in x.events if e.thread < 0}

    def edges(s):
        out = []
        for t in range(len(model.cpus)):
            ids = [e.id for e in x.events if e.thread == t]
            out += [edge(g, pos(a), pos(b), "po") for a, b in zip(ids, ids[1:])]
        seen = visible(s)
        hidden = set() if s.edges or not s.events else {s.events[-1]}
        for kind, pairs in (("rf", _pairs(x.rf)), ("co", _immediate(x.co, x.co)), ("fr", _immediate(x.fr, x.co))):
            out += [edge(g, pos(a), pos(b), kind) for a, b in pairs
                    if a in seen and b in seen and not hidden & {a, b}]
        out += [edge(g, pos(a), pos(b), "fence", x.events[f].primitive, slot=1) for a, b, f in x.fenced
                if {a, b, f} <= seen]
        if s.judged and x.broken is not None:
            from kstep.memory.axioms import cycle

            out += [edge(g, pos(a), pos(b), "po", f"{x.broken.name}: {part}", color=style.HARM, width=5.0, slot=2)
                    if x.events[a].thread == x.events[b].thread and x.events[a].thread >= 0 and index[b] == index[a] + 1
                    else edge(g, pos(a), pos(b), "rf", f"{x.broken.name}: {part}", color=style.HARM, width=5.0, slot=2)
                    for a, b, part in cycle(x.broken)]
        return edge_columns(out)

    return [BoardSource("litmus-boxes", boxes, lambda s: s),
            BoardSource("litmus-edges", edges, lambda s: s, columns=EDGE_COLUMNS)], g


def _pairs(r) -> list[tuple[int, int]]:
    return [(i, j) for i, row in enumerate(r) for j in range(len(r)) if row >> j & 1]


def _immediate(r, co) -> list[tuple[int, int]]:
    """The pairs (a, b) of r with no c between them (a r c, c co b): co's and fr's nearest writes only."""
    return [(a, b) for a, b in _pairs(r) if not any(r[a] >> c & 1 and co[c] >> b & 1 for c in range(len(r)))]
