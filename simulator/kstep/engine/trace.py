"""Trace: the one artifact every view, verdict and grader consumes.

A trace is the initial state plus a list of (action, state) frames, with enough metadata
(mechanism, variant, scenario config, the scheduler and its parameters) to run it again.  On disk
it is versioned JSON described by ``trace.schema.json``, written as a stream (one step per line,
``steps`` last), so a long run's writer never holds the whole document.  Reading one back, which
runs it again, is :mod:`kstep.engine.replay`.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from ..files import write_chunks
from .model import Model, State, Violation, to_jsonable

FORMAT = "kstep-trace"
VERSION = 2
OUTCOMES = ("finished", "deadlock", "violation", "max-steps", "schedule-end")


class Recorded:
    """What a trace file records of a model's runs besides its actions: an optional interface beside
    the semantics (``model.Model``).  The defaults: each state as it is, on a machine that is sc."""

    memory_model: Optional[dict] = None  # the memory model a wrapper runs the model under (None: sc)

    def describe(self, state: State) -> Any:
        """The state as plain JSON data."""
        return to_jsonable(state)


NONE = Recorded()


def recorded(model: Any) -> Recorded:
    """What ``model`` declares of its record: the model itself when it opts in, else the defaults."""
    return model if isinstance(model, Recorded) else NONE


@dataclass
class Trace:
    mechanism: str
    variant: str
    scenario: str
    config: dict
    scheduler: str  # the scheduler's kind: random, round-robin, scripted or explore
    seed: Optional[int]
    states: list  # states[0] is the initial state; states[k] follows actions[k-1]
    actions: list = field(default_factory=list)
    ticks: list = field(default_factory=list)  # round (round-robin) or step number of each action
    outcome: str = "finished"
    violation: Optional[Violation] = None
    stats: dict = field(default_factory=dict)  # scheduler facts: rounds, blocked rounds per actor
    script: Optional[str] = None  # a scripted schedule, or explore's exact actions
    max_steps: Optional[int] = None  # the step limit the run had
    cycle_start: Optional[int] = None  # a lasso: the steps after this one repeat forever (liveness.judge)
    lasso: Optional[dict] = None  # what its cycle shows, as liveness.judge computes it

    def __len__(self) -> int:
        return len(self.actions)

    def frames(self):
        """(action, state) pairs; the first has action None and the initial state."""
        yield None, self.states[0]
        yield from zip(self.actions, self.states[1:])

    @property
    def schedule(self) -> dict:
        """The scheduler's parameters as a trace file records them."""
        return {"kind": self.scheduler, "seed": self.seed, "script": self.script, "max_steps": self.max_steps}

    # -- JSON ------------------------------------------------------------------------------------
    def header(self, model: Model) -> dict:
        """Every member of the trace file but ``steps``, in the order they are written."""
        record = recorded(model)
        return {
            "format": FORMAT,
            "version": VERSION,
            "mechanism": self.mechanism,
            "variant": self.variant,
            "scenario": self.scenario,
            "config": self.config,
            **({"memory_model": record.memory_model} if record.memory_model else {}),
            "scheduler": self.schedule,
            "outcome": self.outcome,
            "violation": None if self.violation is None else self.violation._asdict(),
            "stats": self.stats,
            "actors": list(model.actors(self.states[0])),
            "initial": record.describe(self.states[0]),
        } | ({} if self.cycle_start is None else {"cycle_start": self.cycle_start, "lasso": self.lasso})

    def chunks(self, model: Model) -> Iterator[str]:
        """The trace file as text, a member of the header or a step at a time."""
        header = self.header(model)
        yield "{"
        for key, value in header.items():
            yield f"{json.dumps(key)}: {json.dumps(value)},\n"
        yield '"steps": ['
        sources = model.sources()
        describe = recorded(model).describe
        for k, (a, tick, s) in enumerate(zip(self.actions, self.ticks, self.states[1:])):
            step = {"actor": a.actor, "label": a.label, "source": str(sources[a.label]), "tick": tick,
                    "state": describe(s)}
            yield ("\n" if k == 0 else ",\n") + json.dumps(step)
        yield "\n]}\n"

    def dumps(self, model: Model) -> str:
        return "".join(self.chunks(model))

    def write(self, model: Model, path: str | Path) -> None:
        write_chunks(path, self.chunks(model))

    def columns(self, model: Model) -> dict[str, Any]:
        """Numeric columns shared by every view: step, tick, actor and label indices.

        They are standard-library arrays (``array.array``, int32 and int16), so that the engine runs where numpy does not
        (Pyodide's core runtime); a view hands them to numpy or Bokeh as they are (buffer protocol)."""
        actors = list(model.actors(self.states[0]))
        labels = sorted(model.sources())
        actor_ix = {a: i for i, a in enumerate(actors)}
        label_ix = {l: i for i, l in enumerate(labels)}
        n = len(self.actions)
        return {
            "actors": actors,
            "labels": labels,
            "step": array("i", range(n + 1)),
            "tick": array("i", [0, *self.ticks]),
            "actor": array("h", [-1, *(actor_ix[a.actor] for a in self.actions)]),
            "label": array("h", [-1, *(label_ix[a.label] for a in self.actions)]),
        }
