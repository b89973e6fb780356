"""Trace: the one artifact every view, verdict and grader consumes.

A trace is the initial state plus a list of (action, state) frames, with enough metadata
(mechanism, variant, scenario config) to replay it through the model.  On disk it is versioned
JSON validated by ``trace.schema.json``; loading replays every action and checks every recorded
state, so a trace cannot claim a transition the model does not allow.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import UserError
from .model import Action, Model, Violation
from .scenario import Invalid

FORMAT = "kstep-trace"
VERSION = 1
OUTCOMES = ("finished", "deadlock", "violation", "max-steps", "schedule-end")


@dataclass
class Trace:
    mechanism: str
    variant: str
    scenario: str
    config: dict
    scheduler: str
    seed: Optional[int]
    states: list  # states[0] is the initial state; states[k] follows actions[k-1]
    actions: list = field(default_factory=list)
    ticks: list = field(default_factory=list)  # round (round-robin) or step number of each action
    outcome: str = "finished"
    violation: Optional[Violation] = None
    stats: dict = field(default_factory=dict)  # scheduler facts: rounds, blocked rounds per actor

    def __len__(self) -> int:
        return len(self.actions)

    def frames(self):
        """(action, state) pairs; the first has action None and the initial state."""
        yield None, self.states[0]
        yield from zip(self.actions, self.states[1:])

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self, model: Model) -> dict:
        sources = model.sources()
        return {
            "format": FORMAT,
            "version": VERSION,
            "mechanism": self.mechanism,
            "variant": self.variant,
            "scenario": self.scenario,
            "config": self.config,
            "scheduler": self.scheduler,
            "seed": self.seed,
            "outcome": self.outcome,
            "violation": None if self.violation is None else self.violation._asdict(),
            "stats": self.stats,
            "actors": list(model.actors(self.states[0])),
            "initial": model.describe(self.states[0]),
            "steps": [
                {
                    "actor": a.actor,
                    "label": a.label,
                    "source": str(sources[a.label]),
                    "tick": tick,
                    "state": model.describe(s),
                }
                for a, tick, s in zip(self.actions, self.ticks, self.states[1:])
            ],
        }

    def dumps(self, model: Model) -> str:
        return json.dumps(self.to_json(model), indent=1, sort_keys=False) + "\n"

    def write(self, model: Model, path: str | Path) -> None:
        write_text(path, self.dumps(model))

    def columns(self, model: Model) -> dict[str, Any]:
        """Numeric columns shared by every view: step, tick, actor and label indices.

        They are stdlib ``array``s (int32 and int16), so that the engine runs where numpy does not
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


def schema() -> dict:
    return json.loads(resources.files(__package__).joinpath("trace.schema.json").read_text())


def validate(data: Any, where: str = "trace") -> None:
    """Check JSON data against the trace schema; one line naming the first problem."""
    import jsonschema

    try:
        jsonschema.validate(data, schema())
    except jsonschema.ValidationError as e:
        path = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise UserError(f"{where}: not a kstep trace: at {path}: {e.message}") from None


def load(path: str | Path, model_for: Callable[[str, str], Model]) -> tuple[Trace, Model]:
    """Read, validate and replay a trace file; ``model_for(mechanism, variant)`` builds the model."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not JSON: {e}") from None
    except RecursionError:
        raise UserError(f"{path}: not a kstep trace: nested too deeply") from None
    validate(data, str(path))
    model = model_for(data["mechanism"], data["variant"])
    try:  # the config must be one the mechanism's scenarios could have produced
        model.scenario_schema.check(data["config"], "config")
    except Invalid as e:
        raise UserError(f"{path}: not a kstep trace: {e}") from None
    return replay(data, model, str(path)), model


def replay(data: dict, model: Model, where: str) -> Trace:
    """Rebuild a Trace by running its actions through the model, checking every recorded state."""
    state = model.initial(data["config"])
    if model.describe(state) != data["initial"]:
        raise UserError(f"{where}: the initial state does not match the scenario's config")
    trace = Trace(
        data["mechanism"], data["variant"], data["scenario"], data["config"], data["scheduler"],
        data["seed"], [state], outcome=data["outcome"], stats=data["stats"],
    )
    for k, rec in enumerate(data["steps"], start=1):
        action = Action(rec["actor"], rec["label"])
        if action not in model.actions(state):
            raise UserError(f"{where}: step {k} ({action}) is not enabled in the model at that point")
        state = model.step(state, action)
        if model.describe(state) != rec["state"]:
            raise UserError(f"{where}: step {k} ({action}) records a state the model does not reach")
        trace.actions.append(action)
        trace.ticks.append(rec["tick"])
        trace.states.append(state)
    if data["violation"] is not None:
        trace.violation = Violation(**data["violation"])
    return trace


def write_text(path: str | Path, text: str) -> None:
    """Write a user-named output file: replace it if present, never create missing directories."""
    path = Path(path)
    if not path.parent.is_dir():
        raise UserError(f"{path}: directory {path.parent} does not exist")
    try:
        path.write_text(text)
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror}") from None
