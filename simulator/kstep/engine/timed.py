"""The timed scheduler: every actor has a clock in nanoseconds, and the earliest one moves next.

The next step is the enabled one whose actor's clock is earliest (ties to the actor that comes
first in ``Model.actors``; an actor's enabled optional step before its next frame, as round-robin
takes it).  The step costs what ``costs.step_cost`` says (its work plus its cache-line transfers,
from a MESI-style directory kept here, never in the state) and moves its actor's clock by that
much.  An actor that has no enabled step is blocked (a daemon with nothing to do is idle, not
blocked); when a step enables it again its clock jumps to the end of that step, if that is later,
and the jump is time it waited.  While blocked it spins on the lines its next step reads
(``costs.spin_lines``): each write of such a line by another CPU costs it one transfer.  A line
goes to one CPU at a time: a step that must take a line waits until the line's previous transfer
has ended (``costs``, Queueing), and that wait is part of the step's transfer time.

A chosen step changes the state at once, at its start (``choose`` returns it and the run applies it
before anything else moves), and is charged afterwards (``_charge``, when the next step is chosen):
its transfers are queued one after another from its start, and only its own actor's clock moves by
them (a later step that needs one of those lines waits for the line, not for the step).  So a step
that another CPU starts before those transfers end already sees what it wrote: the order of effects
is the order of start times, and a write's latency to its readers is not modelled (``costs``, When a
step happens, says what that can and cannot show).

A trace's ``tick`` of a timed run is the nanosecond its step started (rounded down); ``stats``
holds the makespan, each actor's waiting time, transfers and time queued for lines, the same two per
line (named as ``line_name`` names them: ``mm.mmap_lock``, ``vmas.0``) and per actor and line (who paid
for each line: a measurement that asks what a fault costs counts the faulting threads' alone), and per
step its work, the wait before it and its transfer time, the columns a player colours steps by.  Everything is a
function of the scenario, the schedule's rules and the cost table, so a run is the same on every
machine.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Optional

from ..errors import UserError
from . import memory_model
from .costs import FORMAT, VERSION, CostTable, Directory, spin_lines, step_cost, validate
from .model import Action, Model, State


STEP_COSTS = "step_costs_ns"  # the stats member with each step's (work, wait before it, transfers) in ns
ACTOR_LINE_TRANSFERS = "actor_line_transfers"  # the stats member: actor -> line -> transfers to its CPU
ACTOR_LINE_QUEUE = "actor_line_queue_ns"  # the stats member: actor -> line -> ns its steps queued for it


class Timed:
    name = "timed"

    def __init__(self, table: CostTable) -> None:
        self.table = table
        self.directory = Directory()
        self.clock: defaultdict[str, float] = defaultdict(float)  # actor -> ns at which it can take its next step
        self.waiting: defaultdict[str, float] = defaultdict(float)  # actor -> ns spent blocked
        self.transfers: Counter = Counter()  # actor -> cache-line transfers (its steps' and its spinning's)
        self.spin_transfers: Counter = Counter()  # actor -> those of its spinning alone
        self.blocked: set = set()
        self.line_free: dict = {}  # line -> when its last transfer to a CPU ends (costs.py, Queueing)
        self.line_wait: defaultdict[str, float] = defaultdict(float)  # actor -> ns its steps queued for lines
        # actor -> line -> the transfers of that line to the actor's CPU (its steps' and its spinning's),
        # and the ns its steps queued for that line
        self.actor_line_transfers: defaultdict[str, Counter] = defaultdict(Counter)
        self.actor_line_queue: defaultdict[str, defaultdict] = defaultdict(lambda: defaultdict(float))
        self.end = 0.0  # when the last step taken ends
        self.started = 0.0  # when the last chosen step starts
        self.woke_at = 0.0  # when the step taken last ended: an actor it enabled waited until then
        self.pending: Optional[tuple] = None  # (model, state, action, cpu) of the step chosen last, not yet charged
        self.costs: list = []  # per step: (work ns, wait ns before it, transfer ns)
        self._waited: defaultdict[str, float] = defaultdict(float)  # actor -> wait not yet put on a step

    def choose(self, model: Model, state: State, enabled: list[Action]) -> Optional[Action]:
        if self.pending is not None:
            self._charge(self.pending, state)
        actors = model.actors(state)
        by_actor: dict[str, Action] = {}
        for a in enabled:
            if a.actor not in by_actor or model.is_optional(a) and not model.is_optional(by_actor[a.actor]):
                by_actor[a.actor] = a
        for actor in actors:
            if actor in by_actor:
                if actor in self.blocked:  # woken by the step just taken
                    self.blocked.discard(actor)
                    jump = max(0.0, self.woke_at - self.clock[actor])
                    self.clock[actor] += jump
                    self.waiting[actor] += jump
                    self._waited[actor] += jump
            elif not model.done(state, actor) and not model.is_daemon(actor):
                self.blocked.add(actor)
                cpu = memory_model.of(model).cache_of(state, actor)
                for line in sorted(spin_lines(model, state, actor), key=repr):
                    moved = self.directory.load(cpu, line)
                    self.transfers[actor] += moved
                    self.spin_transfers[actor] += moved
                    self.actor_line_transfers[actor][line] += moved
        if not by_actor:
            return None
        order = {a: k for k, a in enumerate(actors)}
        actor = min(by_actor, key=lambda a: (self.clock[a], order[a]))
        action = by_actor[actor]
        self.started = self.clock[actor]
        self.pending = (model, state, action, memory_model.of(model).cache_of(state, actor))
        return action

    def _charge(self, pending: tuple, after: State) -> None:
        model, state, action, cpu = pending
        self.pending = None
        cost = step_cost(model, self.table, self.directory, cpu, state, action, after)
        queued = self._queue(self.clock[action.actor], cost.serial, self.actor_line_queue[action.actor])
        self.line_wait[action.actor] += queued
        cost = cost._replace(transfer=cost.transfer + queued)
        self.clock[action.actor] += cost.total
        self.transfers[action.actor] += cost.transfers
        self.actor_line_transfers[action.actor].update(cost.moved)
        self.woke_at = self.clock[action.actor]
        self.end = max(self.end, self.woke_at)
        self.costs.append((cost.work, self._waited.pop(action.actor, 0.0), cost.transfer))

    def _queue(self, start: float, serial: tuple, queue: defaultdict) -> float:
        """How long a step starting at ``start`` waits for the lines it takes in turn, each after the
        line's previous transfer (the step's transfers run one after another from its start); each
        line's wait is added to ``queue`` (its actor's, line -> ns)."""
        per = self.table.ns["transfer"]
        t, waited = start, 0.0
        for line in serial:
            begin = max(t, self.line_free.get(line, 0.0))
            waited += begin - t
            queue[line] += begin - t
            t = self.line_free[line] = begin + per
        return waited

    @property
    def tick(self) -> int:
        return int(self.started)

    def stats(self) -> dict:
        if self.pending is not None:  # a run that ended at its last step (a limit, a harm) asked no more
            model, state, action, _ = self.pending
            self._charge(self.pending, model.step(state, action))
        return {
            "cost_table": self.table.source,
            "makespan_ns": round(self.end, 1),
            "waiting_ns": {a: round(w, 1) for a, w in sorted(self.waiting.items()) if w},
            "transfers": dict(sorted((a, n) for a, n in self.transfers.items() if n)),
            "spin_transfers": dict(sorted((a, n) for a, n in self.spin_transfers.items() if n)),
            "line_wait_ns": {a: round(w, 1) for a, w in sorted(self.line_wait.items()) if w},
            "line_transfers": per_line(sum(self.actor_line_transfers.values(), Counter())),
            "line_queue_ns": per_line(sum(map(Counter, self.actor_line_queue.values()), Counter())),
            ACTOR_LINE_TRANSFERS: {a: per_line(c) for a, c in sorted(self.actor_line_transfers.items()) if +c},
            ACTOR_LINE_QUEUE: {a: per_line(q) for a, q in sorted(self.actor_line_queue.items()) if any(q.values())},
            STEP_COSTS: [[round(x, 1) for x in c] for c in self.costs],
        }

    def params(self) -> dict:
        """The cost table rides in ``script`` (as JSON), so a saved trace's run can be had again with it."""
        table = {"source": self.table.source, "measured": self.table.measured, "ns": self.table.ns}
        return {"kind": self.name, "seed": None, "script": json.dumps(table, sort_keys=True)}

    @classmethod
    def of(cls, script: str) -> "Timed":
        """The timed scheduler ``params()["script"]`` describes."""
        try:
            data = json.loads(script)
            table = CostTable(validate({"format": FORMAT, "version": VERSION, **data}, data["source"]),
                              data["measured"], data["source"])
        except (ValueError, TypeError, KeyError):
            raise UserError("a timed scheduler's script must be the cost table it ran with, as JSON") from None
        return cls(table)


def per_line(amounts: dict) -> dict:
    """Amounts per cache line as the stats give them: by ``line_name``, sorted, none of nothing, ns to 0.1."""
    return dict(sorted((line_name(k), round(v, 1) if isinstance(v, float) else v) for k, v in amounts.items() if v))


def line_name(line: tuple) -> str:
    """A cache line as the stats name it: its field, then its part or index (``mm.mmap_lock``)."""
    return ".".join(str(p) for p in line)

