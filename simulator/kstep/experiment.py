"""Where to start reading kstep: one mechanism, one scenario, one variant, ready to run.

    import kstep
    ex = kstep.open("vma-locks", "munmap-vs-fault", variant="free-immediately")
    trace = ex.run(seed=3)              # one interleaving (seeded; or schedule="R*2 U", or round_robin=True)
    print(trace.violation)              # the first broken invariant, or None
    result = ex.explore()               # every interleaving: result.verdict, result.counterexample
    lassos = ex.liveness()              # starvation, livelock, deadlock (a scenario whose runs never end)
    ex.save_html(result.counterexample, "bug.html")    # the animation, offline

What happens underneath, in the order data flows (DESIGN.md, "One data flow"):

* ``kstep.models`` holds one ``Model`` per mechanism (``models/vma_locks/`` beside ``mm/memory.c``
  and friends); a model is pure: ``initial(config)``, ``actions(state)``, ``step(state, action)``
  and named invariants, and its ``variants`` are releases, other implementations or bugs.
* ``kstep.scenario_spec`` reads a scenario (a bundled name or a TOML file, checked against the
  mechanism's schema, with ``KEY.PATH=VALUE`` overrides) into the config ``initial`` starts from;
  ``from_text`` takes a scenario written in code instead.
* ``kstep.engine`` runs a model: ``simulate`` under a scheduler (``schedule.py``), ``explore``
  (``explore.py``, with its reductions) and ``liveness`` (``liveness.py``); each run is a
  ``Trace`` (``trace.py``) that ``engine.replay`` can load and run again.
* ``kstep.views`` turns a trace into columns and one Bokeh player; only ``save_html`` and
  ``layout`` here load it, so this module, like the engine and the models, needs nothing beyond
  Python's standard library and runs in the browser too.

The command line (``kstep run``, ``kstep explore``), the notebooks, the tests, the benchmarks and
the graders all start from ``open``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from .engine.explore import ExploreResult, explore
from .engine.liveness import LivenessResult, liveness
from .engine import memory_model as memory_models
from .engine.memory_model import MEMORY_MODELS, memory_model as wrap_memory
from .engine.model import Model, State
from .engine.schedule import Random, RoundRobin, Scripted, simulate
from .engine.trace import Trace
from .errors import UserError
from .models import make_model
from .scenario_spec import scenario as scenarios
from .scenario_spec.runs import own_run, own_schedule
from .scenario_spec.scenario import Scenario
from .views.presentation import present


def open(mechanism: str, scenario: str | Scenario, variant: Optional[str] = None,
         overrides: Sequence[str] = ()) -> "Experiment":
    """``mechanism`` (``kstep list`` names them) in ``scenario`` (a bundled scenario's name or a TOML
    file's path), under ``variant``: when None, the variant the scenario names, else the kernel's own.
    ``overrides`` are ``KEY.PATH=VALUE`` changes to the scenario, as ``--set`` takes them.  A name or
    value that does not fit is a UserError saying which.

    ``scenario`` may also be one already read (``kstep.scenario_spec.scenario.load``), which is then
    not read again: whoever binds one scenario under every variant reads its file once.  It must be
    this mechanism's, and its overrides were given when it was read."""
    model = make_model(mechanism, variant)
    if isinstance(scenario, Scenario):
        if scenario.mechanism != model.name:
            raise UserError(f"scenario {scenario.name!r} was read for {scenario.mechanism}, not {model.name}")
        if overrides:
            raise UserError(f"scenario {scenario.name!r} was read already: give its overrides when reading it")
        return _bound(model, variant, scenario, scenario.name)
    sc = scenarios.load(model.name, model.scenario_schema, scenario, list(overrides))
    return _bound(model, variant, sc, scenario)


def from_text(mechanism: str, text: str, variant: Optional[str] = None, where: str = "text.toml") -> "Experiment":
    """As ``open``, for a scenario written in code: ``text`` is what a scenario file would hold
    (``description`` and ``look_for`` included); errors name it ``where``, and its runs, as a file's
    are, by that name's stem."""
    model = make_model(mechanism, variant)
    sc = scenarios.parse(model.name, model.scenario_schema, Path(where).stem, text, where, [])
    return _bound(model, variant, sc, where)


def _bound(model: Model, variant: Optional[str], sc: Scenario, where: str) -> "Experiment":
    """``model`` in ``sc`` (read from ``where``), under the scenario's own variant when the caller named none."""
    if sc.variant and sc.variant not in model.variants:  # the schema knows no mechanism's variants
        raise UserError(f"{where}: variant: {sc.variant!r} is no variant of {model.name} "
                        f"(choose from: {', '.join(model.variants)})")
    if variant is None and sc.variant:
        model = make_model(model.name, sc.variant)
    return Experiment(model, sc)


class Experiment:
    """A model bound to one variant and one loaded scenario, with the state it starts from.

    ``model``, ``scenario`` and ``start`` are there for what the methods do not cover.
    """

    def __init__(self, model: Model, scenario: Scenario):
        self.model = model
        self.scenario = scenario
        self.start: State = model.initial(scenario.config)

    def __repr__(self) -> str:
        return f"kstep.open({self.model.name!r}, {self.scenario.name!r}, variant={self.model.variant.name!r})"

    def variant(self, name: Optional[str]) -> "Experiment":
        """The same scenario under another variant (None: the mechanism's default)."""
        return Experiment(make_model(self.model.name, name), self.scenario)

    def under(self, memory_model: str) -> "Experiment":
        """The same run on a machine with memory model ``memory_model`` ("sc": this one; "tso": a store
        buffer per CPU, ``engine.memory_model``), its buffers as deep as the scenario's ``store_buffer``.
        A model that declares no shared memory, or a variant whose code runs on another machine, is a
        UserError saying so, as is a name that is no memory model."""
        if memory_model not in MEMORY_MODELS:
            raise UserError(f"--memory-model {memory_model}: no such memory model (one of: {', '.join(MEMORY_MODELS)})")
        if memory_model == "sc":
            return self
        model = self.model
        if not memory_models.of(model).memory_fields:
            raise UserError(f"--memory-model {memory_model}: {model.name} declares no shared memory fields "
                            f"(only qspinlock and vma-locks do)")
        refusal = memory_models.of(model).refuses_memory_model(memory_model)
        if refusal:
            raise UserError(f"--memory-model {memory_model}: variant {model.variant.name}: {refusal}")
        return Experiment(wrap_memory(memory_model, model, self.scenario.store_buffer), self.scenario)

    def run(self, scheduler: Any = None, *, seed: Optional[int] = None, schedule: Optional[str] = None,
            round_robin: bool = False, max_steps: Optional[int] = None) -> Trace:
        """One interleaving: under ``scheduler`` (an engine scheduler), or seeded random, or a
        scripted ``schedule`` (``"R*2 U rcu"``, then round-robin), or ``round_robin``; with none of
        them, the scenario's own run (its script, else seed 1; a declared lasso judged).  At most
        ``max_steps`` steps (default: the scenario's declared steps, else ``SCENARIO_RUN``)."""
        chosen = [x for x in (scheduler, seed, schedule) if x is not None] + ([True] if round_robin else [])
        if len(chosen) > 1:
            raise UserError("run: give at most one of scheduler, seed, schedule and round_robin")
        if not chosen and max_steps is None:
            return own_run(self.model, self.scenario)
        if scheduler is None:
            scheduler = (Random(seed) if seed is not None else Scripted(schedule) if schedule is not None
                         else RoundRobin() if round_robin else
                         Scripted(own_schedule(self.model, self.scenario)[0]) if self.scenario.schedule
                         else Random(1))
        return simulate(self.model, self.start, scheduler, max_steps=max_steps or self.scenario.max_steps,
                        scenario=self.scenario.name, config=self.scenario.config)

    def explore(self, **options: Any) -> ExploreResult:
        """Every interleaving, breadth-first: a verdict, and the shortest counterexample when an
        invariant breaks or a run deadlocks (options: ``engine.explore``'s, e.g. ``max_states``)."""
        return explore(self.model, self.start, scenario=self.scenario.name, config=self.scenario.config, **options)

    def liveness(self, **options: Any) -> LivenessResult:
        """Starvation, livelock and deadlock lassos under weak fairness (``engine.liveness``'s options)."""
        return liveness(self.model, self.start, scenario=self.scenario.name, config=self.scenario.config, **options)

    def answers(self, trace: Trace) -> dict[str, Any]:
        """What ``kstep run -c`` reveals after ``trace``: the mechanism's counters, the scheduler's stats."""
        return present(self.model).answers(trace)

    def layout(self, trace: Trace):
        """The Bokeh player of ``trace``, for a notebook cell (loads Bokeh)."""
        from .views import layout

        return layout(trace, self.model)

    def save_html(self, trace: Trace, path: str) -> None:
        """Write ``trace``'s player as one offline HTML page that states the scenario's purpose."""
        from .views import save_html

        save_html(trace, self.model, path, about=self.scenario)
