"""One litmus test judged by several memory models in turn, as a run a question can be asked about.

Each memory model is an actor with one step, ``check``: :func:`kstep.memory.verdict.check` runs the
model over every candidate execution of the test and records herd's verdict on its ``exists``
clause. The state keeps one record per model, so a question of kind ``thread`` (which models reach
the weak outcome?) is answered from the run (kstep.scenario_spec.questions), and the table a
notebook shows after the question is the same run's last state. Standard library and engine only.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple

from kstep.engine.model import Action, Model, Source, Variant
from kstep.engine.schedule import RoundRobin, simulate
from kstep.engine.trace import Trace
from kstep.memory.litmus import Litmus
from kstep.memory.verdict import check

MODELS = ("sc", "tso", "arm64", "power")  # sequential consistency and the three hardware models
CHECK = Source.outside("the memory model's axioms over every candidate execution (no kernel code)")


class Judged(NamedTuple):
    name: str  # the memory model: sc, tso, arm64, power or lkmm
    result: str  # herd's verdict, Always, Sometimes, Never or DEADLOCK; "" until checked
    allowed: bool  # some allowed execution satisfies the exists clause


class Judging(NamedTuple):
    threads: tuple[Judged, ...]  # one per model, in the order asked


class Compared(Model):
    name = "litmus-verdicts"  # no player view: its run is a table (kstep.views.notebook.verdict_table)
    variants = {"verdicts": Variant.implementation(
        "verdicts", "each memory model's verdict on the test's exists clause, one model a step")}
    default_variant = "verdicts"

    def __init__(self, litmus: Litmus, models: tuple[str, ...]):
        super().__init__()
        self.litmus, self.models = litmus, models
        self.modules = {m: import_module(f"kstep.memory.{m}") for m in models}
        # What a question block and a verdict table name as the run they are about: another set of models
        # is another run (IRIW+acquires with the LKMM beside the hardware asks something new).
        self.title = litmus.name if models == MODELS else f"{litmus.name} ({', '.join(models)})"

    def initial(self, config=None) -> Judging:
        return Judging(tuple(Judged(m, "", False) for m in self.models))

    def actors(self, state) -> tuple:
        return self.models

    def sources(self) -> dict:
        return {"check": CHECK}

    def actions(self, s: Judging) -> list[Action]:
        return [Action(j.name, "check") for j in s.threads if not j.result]

    def step(self, s: Judging, a: Action) -> Judging:
        v = check(self.litmus, self.modules[a.actor])
        return Judging(tuple(Judged(j.name, v.result, v.exists_reachable) if j.name == a.actor else j
                             for j in s.threads))

    def done(self, s: Judging, actor: str) -> bool:
        return next(j for j in s.threads if j.name == actor).result != ""


def compared(litmus: Litmus, models: tuple[str, ...] = MODELS) -> tuple[Compared, Trace]:
    """The models' verdicts on ``litmus``, one model a step, in the order given (``lkmm`` reads the
    kernel tree's tools/memory-model/: without the tree, one line saying how to get it)."""
    model = Compared(litmus, models)
    return model, simulate(model, model.initial(), RoundRobin())
