"""A litmus test stepped, as an engine model the player animates (issue 24, section 2).

Two ways to step, one per kind of model:

* :class:`TsoMachine`, x86-TSO operationally (Owens, Sarkar, Sewell, TPHOLs 2009, section 3): each
  CPU runs its thread in program order; a store goes into the CPU's FIFO store buffer, the oldest
  buffered store drains to memory whenever the CPU lets it, a load reads its own CPU's newest
  buffered store to the location or else memory, and ``smp_mb()`` (``lock addl``) or a locked RMW
  waits until the buffer is empty. ``smp_rmb()``/``smp_wmb()``, acquire and release are plain
  instructions or compiler barriers on x86 (:mod:`kstep.memory.tso` has the mapping).
* :class:`Reveal`, for the axiomatic models (sc, arm64, POWER, the LKMM): one execution of the test
  is fixed (one reaching the ``exists`` condition if the model allows it, else one the model
  forbids, with the axiom it breaks); a step reveals one event, in a linear extension of the
  model's order (:data:`ORDER` of the model module), then a step shows its rf/co/fr edges to the
  events already revealed; the last step checks the axioms, and a forbidden execution's cycle is
  the one :func:`kstep.memory.axioms.cycle` finds.

Which event a thread reveals, or which CPU moves next, is the scheduler's choice: the same seed
gives the same run. Both models import only the standard library and the engine.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple, Optional

from kstep.engine.model import Action, Invariant, Model, Source, Variant
from kstep.engine.schedule import Random, simulate
from kstep.engine.trace import Trace
from kstep.errors import UserError
from kstep.memory import axioms as ax
from kstep.memory import relations as rel
from kstep.memory.executions import (FENCES, LOCK_KINDS, Event, coherence_orders, initial_co0, thread_runs,
                                     with_reads_from)
from kstep.memory.hardware import LKMM_ONLY_FENCES
from kstep.memory.litmus import Litmus
from kstep.memory.primitives import definition
from kstep.memory.sc import coherence, from_reads
from kstep.memory.verdict import final_memory, holds, observed

STORE_BUFFER = Source.outside("the CPU's store buffer (x86-TSO hardware, no kernel code)")
MODEL_CHECK = Source.outside("the memory model's axioms (no kernel code)")
LKMM_CHECK = Source.outside("the LKMM's axioms in tools/memory-model/linux-kernel.cat (no code)")
EDGES = Source.outside("the memory model's candidate execution (no kernel code)")
PLAIN = Source.outside("a plain C access (no kernel macro)")
MODEL_TITLES = {"sc": "sequential consistency", "tso": "x86-TSO", "arm64": "arm64 (ARMv8)", "power": "POWER",
                "lkmm": "the Linux-kernel memory model"}
FULL = frozenset({"mb"})  # the fences x86 executes as a locked instruction (smp_mb, a full RMW's two F[mb])


def step_label(primitive: str) -> str:
    return {"*p": "plain load", "*p =": "plain store"}.get(primitive, primitive)


def event_names(events) -> dict[int, str]:
    """``init x`` for an initial write, else a letter in the order of the events (as ``kstep litmus``)."""
    names, k = {}, 0
    for e in events:
        if e.thread < 0:
            names[e.id] = f"init {e.loc}"
        else:
            names[e.id] = chr(ord("a") + k % 26) + (str(k // 26) if k >= 26 else "")
            k += 1
    return names


def primitive_sources(model: str, primitives, excerpts: dict) -> dict[str, Source]:
    """Each primitive's label and the 6.12 definition it shows under ``model`` (primitives.py)."""
    out = {}
    for p in primitives:
        found = definition(model, p, excerpts)
        out[step_label(p)] = Source(*found) if found else PLAIN
    return out


# -- x86-TSO, operationally -------------------------------------------------------------------------
class Tso(NamedTuple):
    pc: tuple  # per CPU: how many of its events it has executed
    values: tuple  # per CPU: what its reads returned so far (which run of its thread this is)
    buffers: tuple  # per CPU: its store buffer, oldest first: ((loc, value, writer), ...)
    memory: tuple  # per location (Litmus.shared order): (value, writer); writer (cpu, index) or None (init)
    reads: tuple  # ghost, for the board: ((cpu, index), writer, "buffer" | "memory"), in order
    drained: tuple  # ghost, for the board: the writers in the order they reached memory


class TsoMachine(Model):
    name = "litmus"
    variants = {"tso": Variant.implementation(
        "tso", "x86-TSO: per-CPU FIFO store buffers (Owens, Sarkar, Sewell 2009)")}
    default_variant = "tso"

    def __init__(self, litmus: Litmus, excerpts: dict):
        super().__init__()
        self.litmus = litmus
        self.model_name = "tso"
        self.title = f"{litmus.name} under {MODEL_TITLES['tso']}"
        self.paths = tuple(tuple(paths) for paths in thread_runs(litmus)[1])
        self.locs = litmus.shared()
        self.cpus = tuple(f"P{t}" for t in range(len(litmus.threads)))
        for paths in self.paths:
            for path in paths:
                for kind, _, _, tags, _, primitive, line in path.events:
                    if kind in LOCK_KINDS or tags & LKMM_ONLY_FENCES:
                        raise UserError(f"{litmus.name}: line {line}: {primitive}() is LKMM-only; the tso model "
                                        "takes ONCE accesses, acquire/release, fences and atomics")
        prims = {e[5] for paths in self.paths for p in paths for e in p.events}
        self._sources = {**primitive_sources("tso", prims, excerpts), "drain": STORE_BUFFER}

    # -- the thread's own run, chosen by the values its reads returned
    def runs(self, s: Tso, t: int):
        def reads(path):
            return [e[2] for e in path.events if e[0] == "R"]

        return [p for p in self.paths[t] if reads(p)[:len(s.values[t])] == list(s.values[t])]

    def next_event(self, s: Tso, t: int):
        runs = self.runs(s, t)
        longer = [p for p in runs if len(p.events) > s.pc[t]]
        return (longer[0], s.pc[t]) if longer else (None, None)

    def initial(self, config=None) -> Tso:
        memory = tuple((self.litmus.init.get(loc, 0), None) for loc in self.locs)
        n = len(self.cpus)
        return Tso((0,) * n, ((),) * n, ((),) * n, memory, (), ())

    def actors(self, state) -> tuple:
        return self.cpus

    def sources(self) -> dict:
        return self._sources

    def what(self, label: str) -> str:
        if label == "drain":
            return "the oldest store in this CPU's buffer reaches memory: from now on every CPU reads it"
        return f"{label} as x86 executes it (the code pane shows its 6.12 definition)"

    def actions(self, s: Tso) -> list[Action]:
        out = []
        for t, cpu in enumerate(self.cpus):
            path, i = self.next_event(s, t)
            if path is not None and self.can_issue(s, t, path, i):
                out.append(Action(cpu, step_label(path.events[i][5])))
            if s.buffers[t]:
                out.append(Action(cpu, "drain"))
        return out

    def can_issue(self, s: Tso, t: int, path, i: int) -> bool:
        kind, loc, _, tags, *_ = path.events[i]
        locked = is_rmw(path.events[i]) or (kind == "F" and tags & FULL)
        if locked and s.buffers[t]:  # mfence and lock-prefixed instructions drain the buffer first
            return False
        if kind == "R" or is_rmw(path.events[i]):
            # A value no run of the thread goes on from (it would dereference what is no location) is a
            # run herd discards, and so does kstep: that read waits for another value.
            loc = path.events[i + (kind == "F")][1]
            got = self.load(s, t, loc)[0]
            return bool(self.runs(s._replace(values=_put(s.values, t, s.values[t] + (got,))), t))
        return True

    def load(self, s: Tso, t: int, loc: str):
        """What a load of ``loc`` by CPU t returns: its own newest buffered store (store forwarding), else memory."""
        for bloc, value, writer in reversed(s.buffers[t]):
            if bloc == loc:
                return value, writer, "buffer"
        value, writer = s.memory[self.locs.index(loc)]
        return value, writer, "memory"

    def step(self, s: Tso, a: Action) -> Tso:
        t = self.cpus.index(a.actor)
        if a.label == "drain":
            (loc, value, writer), rest = s.buffers[t][0], s.buffers[t][1:]
            return s._replace(buffers=_put(s.buffers, t, rest),
                              memory=_put(s.memory, self.locs.index(loc), (value, writer)),
                              drained=s.drained + (writer,))
        path, i = self.next_event(s, t)
        if is_rmw(path.events[i]):
            return self.locked_rmw(s, t, path, i)
        kind, loc, value, tags, rmw, *_ = path.events[i]
        me = (t, i)
        if kind == "F":
            return s._replace(pc=_put(s.pc, t, i + 1))
        if kind == "W":
            return s._replace(pc=_put(s.pc, t, i + 1), buffers=_put(s.buffers, t, s.buffers[t] + ((loc, value, me),)))
        got, writer, where = self.load(s, t, loc)
        return s._replace(pc=_put(s.pc, t, i + 1), values=_put(s.values, t, s.values[t] + (got,)),
                          reads=s.reads + ((me, writer, where),))

    def locked_rmw(self, s: Tso, t: int, path, i: int) -> Tso:
        """One lock-prefixed instruction (xchg, lock cmpxchg, lock xadd ...), fenced or not, failing or not:
        with the store buffer empty it reads memory and writes memory in one step. Which events the call
        has depends on what it reads (a failed cmpxchg has no write and no F[mb]: herd-representation.txt),
        so the run is chosen by the value read."""
        j = i + (path.events[i][0] == "F")
        loc = path.events[j][1]
        got, writer, _ = self.load(s, t, loc)
        s = s._replace(values=_put(s.values, t, s.values[t] + (got,)))
        run = next(p for p in self.runs(s, t) if len(p.events) > i)
        fenced = run.events[i][0] == "F"
        r = i + fenced
        s = s._replace(reads=s.reads + (((t, r), writer, "memory"),))
        end = r + 1
        pair = next((w for rd, w in run.rmw if rd == r), None)
        if pair is not None:  # its write goes straight to memory, nothing between it and the read
            s = s._replace(memory=_put(s.memory, self.locs.index(loc), (run.events[pair][2], (t, pair))),
                           drained=s.drained + ((t, pair),))
            end = pair + 1
        # A fully ordered RMW that wrote is F[mb] R* W* F[mb]: its last fence too (x86's lock prefix is both).
        return s._replace(pc=_put(s.pc, t, end + fenced))

    def done(self, s: Tso, actor: str) -> bool:
        t = self.cpus.index(actor)
        return self.next_event(s, t)[0] is None and not s.buffers[t]

    def acts_on(self, s: Tso, a: Action) -> str:
        """The step in a few words: what it stores, loads, drains or waits for."""
        t = self.cpus.index(a.actor)
        if a.label == "drain":
            loc, value, _ = s.buffers[t][0]
            return f"{loc} = {value}: P{t}'s store buffer to memory"
        path, i = self.next_event(s, t)
        kind, loc, value, tags, *_ = path.events[i]
        if is_rmw(path.events[i]):
            loc = path.events[i + (kind == "F")][1]
            got, _, _ = self.load(s, t, loc)
            return f"{loc}: a locked instruction with the store buffer empty: reads {got} from memory, writes memory"
        if kind == "W":
            return f"{loc} = {value} into P{t}'s store buffer"
        if kind == "F":
            return (f"a full fence: P{t}'s store buffer is empty, so it passes" if tags & FULL
                    else "a compiler barrier on x86: nothing to wait for")
        got, _, where = self.load(s, t, loc)
        return f"{loc}: reads {got} from {'its own store buffer' if where == 'buffer' else 'memory'}"

    # -- the final state, as kstep litmus prints it
    def outcome(self, s: Tso) -> Optional[tuple]:
        if not self.finished(s):
            return None
        regs: dict = {}
        for t in range(len(self.cpus)):
            regs.update(((t, k), v) for k, v in self.runs(s, t)[0].regs)
        memory = {loc: s.memory[j][0] for j, loc in enumerate(self.locs)}
        return outcome_state(self.litmus, regs, memory)

    def exists_holds(self, s: Tso) -> bool:
        if not self.finished(s):
            return False
        regs: dict = {}
        for t in range(len(self.cpus)):
            regs.update(((t, k), v) for k, v in self.runs(s, t)[0].regs)
        memory = {loc: s.memory[j][0] for j, loc in enumerate(self.locs)}
        return holds(self.litmus.condition, regs, memory)


def is_rmw(event: tuple) -> bool:
    """An event of an atomic RMW call: its R* or W*, or an F[mb] the call itself brings (not a fence macro)."""
    kind, _, _, _, rmw, primitive, _ = event
    return rmw or (kind == "F" and primitive not in FENCES and primitive != "smp_store_mb")


def _put(tup: tuple, i: int, value) -> tuple:
    return tup[:i] + (value,) + tup[i + 1:]


def outcome_state(litmus: Litmus, regs: dict, memory: dict) -> tuple:
    """The final state's observed places and values, as verdict.check keys them."""
    return tuple((f"{p[1]}:{p[2]}" if p[0] == "reg" else p[1],
                  regs.get((p[1], p[2]), 0) if p[0] == "reg" else memory.get(p[1])) for p in observed(litmus))


# -- the axiomatic models: reveal one execution ----------------------------------------------------------
class Shown(NamedTuple):
    events: tuple  # ids of the revealed events, in order
    edges: bool  # the last revealed event's rf/co/fr edges are shown
    judged: bool  # the axioms were checked (the last step)


class Execution(NamedTuple):
    """The execution a Reveal plays: events, relations (as bit rows), final state, and the verdict."""

    events: tuple[Event, ...]
    po: tuple
    rf: tuple
    co: tuple
    fr: tuple
    order: tuple  # the model's order, revealed in a linear extension
    fenced: tuple  # ((a, b, fence), ...): memory events a fence stands between and the model orders
    broken: Optional[ax.Axiom]  # the axiom the execution breaks (None: the model allows it)
    state: tuple
    exists: bool  # the final state satisfies the exists clause


def choose_execution(litmus: Litmus, module, lkmm_root=None) -> Execution:
    """One execution reaching the ``exists`` condition that the model allows; else one reaching it that
    it forbids, with the first axiom it breaks; else (the condition is unreachable even by a candidate)
    the first allowed execution."""
    fallback = forbidden = None
    for c, rf in with_reads_from(litmus):
        regs = {(t, k): v for t, path in enumerate(c.paths) for k, v in path.regs}
        allowed = module.executions(c, rf) if module.NAME != "lkmm" else module.executions(c, rf, lkmm_root)
        for co, full_rf, fr, _ in allowed:
            memory = final_memory(c, co)
            if litmus.filter is not None and not holds(litmus.filter, regs, memory):
                continue
            wanted = holds(litmus.condition, regs, memory)
            if wanted or fallback is None:
                found = _execution(litmus, module, c, rf, full_rf, co, fr, None, regs, memory, wanted, lkmm_root)
                if wanted:
                    return found
                fallback = found
        if forbidden is None:
            forbidden = _forbidden(litmus, module, c, rf, regs, lkmm_root)
    if forbidden is not None:
        return forbidden
    if fallback is None:
        raise UserError(f"{litmus.name}: the {module.NAME} model allows no execution to show")
    return fallback


def candidate_executions(litmus: Litmus, module, only: Optional[str] = None) -> list[tuple[str, Execution]]:
    """Every candidate of the test (which write each read reads from: ``b<-init y d<-a``), with the execution
    the model makes of it: allowed with the first coherence order it allows, else forbidden with the first
    axiom it breaks.  What a student picks on a litmus page before revealing the execution.  ``only``: the
    candidate so named alone (the one picked: the model runs on no other)."""
    out = []
    for c, rf in with_reads_from(litmus):
        regs = {(t, k): v for t, path in enumerate(c.paths) for k, v in path.regs}
        names = event_names(c.events)
        picked = " ".join(sorted(f"{names[r]}<-{names[w]}" for w, r in rel.pairs(rf))) or "no reads"
        if only is not None and picked != only:
            continue
        found = None
        for co, full_rf, fr, _ in module.executions(c, rf):
            memory = final_memory(c, co)
            if litmus.filter is None or holds(litmus.filter, regs, memory):
                found = _execution(litmus, module, c, rf, full_rf, co, fr, None, regs, memory,
                                   holds(litmus.condition, regs, memory), None)
                break
        found = found or _forbidden(litmus, module, c, rf, regs, None, reach=False)
        if found is not None:
            out.append((picked, found))
    return out


def _forbidden(litmus, module, c, rf, regs, lkmm_root, reach: bool = True) -> Optional[Execution]:
    """A coherence order of (c, rf) reaching the condition (any, unless ``reach``) that the model forbids,
    with its broken axiom.
    The co orders that what the reads observe allows come first; then any co with the initial writes
    first, which shows the per-location axiom an outcome breaks when no such co reaches it (herd's
    cos-opt cuts those candidates before any model runs: CoRR, CoRW)."""
    if module.NAME == "lkmm":  # lock.cat adds the lock events' rf and writes: the model's own branches first
        for axiom, env in module.rejections(c, rf, lkmm_root):
            if "co" not in env:
                continue
            memory = final_memory(c, env["co"])
            wanted = holds(litmus.condition, regs, memory)
            if (wanted or not reach) and (litmus.filter is None or holds(litmus.filter, regs, memory)):
                return _execution(litmus, module, c, rf, env["rf"], env["co"], env["fr"], axiom, regs, memory, wanted,
                                  lkmm_root)
    writes = c.set_of(lambda e: e.kind == "W")
    for co in itertools.chain(coherence(c, rf), coherence_orders(c, writes, initial_co0(c, writes))):
        memory = final_memory(c, co)
        wanted = holds(litmus.condition, regs, memory)
        if (reach and not wanted) or (litmus.filter is not None and not holds(litmus.filter, regs, memory)):
            continue
        fr = from_reads(c, co, rf)
        broken = (module.broken(c, rf, co, lkmm_root) if module.NAME == "lkmm"
                  else ax.first_broken(module.axioms(c, rf)(co, fr)))
        if broken is not None:
            return _execution(litmus, module, c, rf, rf, co, fr, broken, regs, memory, wanted, lkmm_root)
    return None


def _execution(litmus, module, c, rf0, rf, co, fr, broken, regs, memory, wanted, lkmm_root) -> Execution:
    """``rf0``: the ordinary reads' rf of the candidate; ``rf``: all of it (the LKMM's lock.cat adds the lock
    events')."""
    if broken is not None:  # a forbidden execution has no order of the model: program order, reads after their writes
        order = rel.union(c.po, rf)
    elif module.NAME == "lkmm":
        order = module.order(c, rf0, rf, co, lkmm_root)
    else:
        order = next(a for a in module.axioms(c, rf)(co, fr) if a.name == module.ORDER).relation()
    if order is None or not rel.acyclic(order):
        order = c.po
    order, fenced = with_fences(c, order)
    return Execution(c.events, c.po, rf, co, fr, order, fenced, broken, outcome_state(litmus, regs, memory), wanted)


def with_fences(c, order) -> tuple[tuple, tuple]:
    """``order`` with each fence placed between the memory events around it that the order relates
    (a fence ordering nothing may come at any time), and those pairs with their fence."""
    closure = rel.plus(order)
    before = rel.inverse(c.po)
    rows = list(order)
    fenced = []
    memory = c.set_of(lambda e: e.kind in ("R", "W") and e.thread >= 0)
    for f in (e.id for e in c.events if e.kind == "F"):
        for a in rel.bits(before[f] & memory):
            for b in rel.bits(c.po[f] & memory & closure[a]):
                rows[a] |= 1 << f
                rows[f] |= 1 << b
                fenced.append((a, b, f))
    return tuple(rows), tuple(fenced)


class Reveal(Model):
    name = "litmus"
    variants = {"reveal": Variant.implementation(
        "reveal", "an execution revealed in a linear extension of the model's order")}
    default_variant = "reveal"

    def __init__(self, litmus: Litmus, module, execution: Execution, excerpts: dict):
        super().__init__()
        self.litmus, self.x = litmus, execution
        self.model_name = module.NAME
        self.title = f"{litmus.name} under {MODEL_TITLES[module.NAME]}"
        self.names = event_names(execution.events)
        self.stepped = tuple(e.id for e in execution.events if e.thread >= 0)
        prims = {e.primitive for e in execution.events if e.thread >= 0}
        defs = primitive_sources(module.NAME, prims, excerpts)
        self._sources = {self.label(e): defs[step_label(e.primitive)] for e in execution.events if e.id in self.stepped}
        self._sources.update({"edges": EDGES, "check": LKMM_CHECK if module.NAME == "lkmm" else MODEL_CHECK})
        self.cpus = tuple(f"P{t}" for t in range(len(litmus.threads)))
        if execution.broken is not None:  # the player's end banner names the axiom and shows the cycle
            name = execution.broken.name
            self.invariants = (Invariant(name, f"the {module.NAME} model's axiom {name}",
                                         lambda s: self.verdict() if s.judged else None),)

    def label(self, e: Event) -> str:
        return f"{self.names[e.id]} {step_label(e.primitive)}"

    def initial(self, config=None) -> Shown:
        return Shown((), True, False)

    def actors(self, state) -> tuple:
        return (*self.cpus, "model")

    def sources(self) -> dict:
        return self._sources

    def what(self, label: str) -> str:
        if label == "edges":
            return "rf: the write each read takes its value from; co: the order of the writes to one location; " \
                   "fr: a read before the writes that overwrite what it read"
        if label == "check":
            return f"the {self.model_name} model's axioms, checked on the whole execution"
        return f"the event appears: the next in a linear extension of the {self.model_name} model's order"

    def pending_edges(self, s: Shown) -> list[tuple[int, int, str]]:
        """rf/co/fr edges between the last revealed event and those before it (and the initial writes)."""
        if not s.events:
            return []
        last = s.events[-1]
        seen = set(s.events) | {e.id for e in self.x.events if e.thread < 0}
        out = []
        for name, r in (("rf", self.x.rf), ("co", self.x.co), ("fr", self.x.fr)):
            out += [(a, b, name) for a, b in rel.pairs(r) if last in (a, b) and a in seen and b in seen]
        return out

    def ready(self, s: Shown) -> list[int]:
        before = rel.inverse(self.x.order)
        shown = sum(1 << i for i in s.events) | sum(1 << e.id for e in self.x.events if e.thread < 0)
        return [i for i in self.stepped if i not in s.events and not (before[i] & ~shown)]

    def actions(self, s: Shown) -> list[Action]:
        if s.judged:
            return []
        if not s.edges:
            return [Action(self.cpus[self.x.events[s.events[-1]].thread], "edges")]
        ready = self.ready(s)
        if not ready:
            return [Action("model", "check")]
        return [Action(self.cpus[self.x.events[i].thread], self.label(self.x.events[i])) for i in ready]

    def step(self, s: Shown, a: Action) -> Shown:
        if a.label == "edges":
            return s._replace(edges=True)
        if a.label == "check":
            return s._replace(judged=True)
        e = next(e for e in self.x.events if e.id in self.stepped and self.label(e) == a.label)
        return Shown(s.events + (e.id,), not self.pending_edges(Shown(s.events + (e.id,), True, False)), False)

    def done(self, s: Shown, actor: str) -> bool:
        return s.judged

    def acts_on(self, s: Shown, a: Action) -> str:
        if a.label == "edges":
            return ", ".join(f"{self.names[x]} -{r}-> {self.names[y]}" for x, y, r in self.pending_edges(s))
        if a.label == "check":
            return self.verdict()
        e = next(e for e in self.x.events if self.label(e) == a.label)
        return e.label()

    def verdict(self) -> str:
        state = " ".join(f"{k}={v}" for k, v in self.x.state)
        if self.x.broken is None:
            return f"allowed: {state}" + (" (the exists clause holds)" if self.x.exists else
                                          "; no candidate execution reaches the exists clause: every value a read "
                                          "returns comes from some write, so none comes out of thin air")
        cycle = ax.cycle(self.x.broken)
        path = " ".join(f"{self.names[a]} -{r}->" for a, _, r in cycle)
        path += f" {self.names[cycle[0][0]]}" if cycle else ""
        return f"forbidden by {self.x.broken.name} ({self.x.broken.check}): {path}; {state} cannot happen"


MODELS = ("sc", "tso", "arm64", "power", "lkmm")
SEEDS = 64  # seeds tried for an x86-TSO run that reaches the exists clause


def stepped(litmus: Litmus, model: str, excerpts: dict, seed: Optional[int] = None,
            lkmm_root=None) -> tuple[Model, Trace]:
    """The model that steps ``litmus`` under ``model`` and its run with the random scheduler's ``seed``.

    Without a seed, x86-TSO takes the first seed from 1 up (at most SEEDS) whose run ends in the
    exists clause when one does (the weak outcome is the one worth watching), else seed 1; the other
    models reveal the execution :func:`choose_execution` picks, in seed 1's order."""
    if model != "tso":
        from importlib import import_module

        module = import_module(f"kstep.memory.{model}")
        reveal = Reveal(litmus, module, choose_execution(litmus, module, lkmm_root), excerpts)
        return reveal, simulate(reveal, reveal.initial(), Random(1 if seed is None else seed))
    machine = TsoMachine(litmus, excerpts)
    if seed is not None:
        return machine, simulate(machine, machine.initial(), Random(seed))
    for k in range(1, SEEDS + 1):
        trace = simulate(machine, machine.initial(), Random(k))
        if machine.exists_holds(trace.states[-1]):
            return machine, trace
    return machine, simulate(machine, machine.initial(), Random(1))
