"""What a model says about a litmus test: its final states, the verdict, one witness each.

:func:`check` runs a model over every candidate execution (:mod:`kstep.memory.executions`)
and gathers, per final state (the values of the registers and locations the test names),
one execution that reaches it. The verdict follows herd7: ``Always``, ``Sometimes`` or
``Never`` for the final condition over the allowed executions that pass the ``filter``,
and ``DEADLOCK`` when none does (tools/memory-model/scripts/judgelitmus.sh matches it
as herd's "Never 0 0").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kstep.memory import relations as rel
from kstep.memory.executions import Candidate, Event, with_reads_from
from kstep.memory.litmus import Litmus


@dataclass(frozen=True)
class Execution:
    """One allowed execution, ready to draw: events and the relations between them."""

    events: tuple[Event, ...]
    po: tuple[tuple[int, int], ...]
    rf: tuple[tuple[int, int], ...]
    co: tuple[tuple[int, int], ...]
    fr: tuple[tuple[int, int], ...]
    fences: tuple[int, ...]
    flags: tuple[str, ...]


@dataclass
class Verdict:
    model: str
    result: str  # Always, Sometimes, Never or DEADLOCK
    states: dict[tuple, Execution] = field(default_factory=dict)  # final state -> witness
    positive: int = 0  # allowed executions satisfying the condition
    negative: int = 0
    flags: frozenset[str] = frozenset()

    @property
    def exists_reachable(self) -> bool:
        return self.positive > 0


def holds(cond, regs: dict, memory: dict) -> bool:
    tag = cond[0]
    if tag == "true":
        return True
    if tag == "not":
        return not holds(cond[1], regs, memory)
    if tag == "and":
        return holds(cond[1], regs, memory) and holds(cond[2], regs, memory)
    if tag == "or":
        return holds(cond[1], regs, memory) or holds(cond[2], regs, memory)
    where, value = cond[1], cond[2]
    got = regs.get((where[1], where[2]), 0) if where[0] == "reg" else memory.get(where[1])
    return got == value


def _places(cond, out: list) -> None:
    if cond[0] in ("and", "or"):
        _places(cond[1], out)
        _places(cond[2], out)
    elif cond[0] == "not":
        _places(cond[1], out)
    elif cond[0] == "eq" and cond[1] not in out:
        out.append(cond[1])


def observed(litmus: Litmus) -> list[tuple]:
    """The registers and locations a final state shows: ``locations`` then the conditions'."""
    out: list = []
    for name in litmus.locations:
        tid, sep, reg = name.partition(":")
        place = ("reg", int(tid), reg) if sep else ("mem", name)
        if place not in out:
            out.append(place)
    _places(litmus.condition, out)
    if litmus.filter is not None:
        _places(litmus.filter, out)
    return out


def final_memory(c: Candidate, co) -> dict:
    memory = {}
    for loc, ids in c.by_loc.items():
        writes = [i for i in ids if c.events[i].kind in ("W", "LKW", "UL")]
        last = [w for w in writes if not (co[w] & sum(1 << x for x in writes))]
        memory[loc] = c.events[last[0]].value if len(last) == 1 else c.events[writes[0]].value
    return memory


def check(litmus: Litmus, model) -> Verdict:
    """Run ``model`` (a module with NAME and executions(candidate, rf)) over the test."""
    places = observed(litmus)
    verdict = Verdict(model.NAME, "DEADLOCK")
    flags: set[str] = set()
    for c, rf0 in with_reads_from(litmus):
        regs: dict[tuple[int, str], int] = {}
        for tid, path in enumerate(c.paths):
            regs.update(((tid, k), v) for k, v in path.regs)
        for co, rf, fr, exec_flags in model.executions(c, rf0):
            memory = final_memory(c, co)
            if litmus.filter is not None and not holds(litmus.filter, regs, memory):
                continue
            flags |= exec_flags
            if holds(litmus.condition, regs, memory):
                verdict.positive += 1
            else:
                verdict.negative += 1
            state = tuple(
                (f"{p[1]}:{p[2]}" if p[0] == "reg" else p[1],
                 regs.get((p[1], p[2]), 0) if p[0] == "reg" else memory.get(p[1]))
                for p in places
            )
            if state not in verdict.states:
                verdict.states[state] = Execution(
                    c.events, tuple(rel.pairs(c.po)), tuple(rel.pairs(rf)), tuple(rel.pairs(co)),
                    tuple(rel.pairs(fr)), tuple(e.id for e in c.events if e.kind == "F"),
                    tuple(sorted(exec_flags)),
                )
    verdict.flags = frozenset(flags)
    pos, neg = verdict.positive, verdict.negative
    if pos + neg:
        if litmus.quantifier == "forall":
            verdict.result = "Always" if neg == 0 else ("Sometimes" if pos else "Never")
        else:
            verdict.result = "Never" if pos == 0 else ("Always" if neg == 0 else "Sometimes")
    return verdict
