"""A scenario's own run: what its page plays, ``kstep run`` shows by default, and its claims are
checked against."""

from __future__ import annotations

from ..errors import UserError
from ..engine.liveness import judge
from ..engine.model import Model
from ..engine.schedule import Random, Scripted, simulate
from ..engine.trace import Trace, recorded
from .scenario import Scenario

SEED = 1  # the random scheduler's seed for a scenario without a scripted schedule


def own_run(model: Model, sc: Scenario, seed: int = SEED) -> Trace:
    """The scenario's own run: its scripted schedule (else the random scheduler's ``seed``), at most
    ``steps`` steps when it declares them.  A declared lasso is judged on the run of the variant the
    scenario is written for (UserError if the run does not show it); another variant's run is only
    bounded."""
    schedule, _ = own_schedule(model, sc)
    sched = Scripted(schedule) if sc.schedule else Random(seed)
    trace = simulate(model, model.initial(sc.config), sched, max_steps=sc.max_steps, scenario=sc.name,
                     config=sc.config)
    if sc.cycle_start >= 0 and written_for(model, sc):
        trace.cycle_start = sc.cycle_start
        trace.lasso = judge(model, trace, sc.cycle_start)
    return trace


def own_schedule(model: Model, sc: Scenario) -> tuple[str, str]:
    """The scenario's scripted schedule as ``model``'s variant can follow it, and a note when it
    cannot.  A schedule is written for the scenario's own variant; under another, an entry may name
    an actor that is blocked or done there: the entries before it are kept, round-robin takes over
    from it, and the note says so (empty when the whole schedule fits)."""
    if not sc.schedule or written_for(model, sc):
        return sc.schedule, ""
    sched = Scripted(sc.schedule)
    try:
        simulate(model, model.initial(sc.config), sched, max_steps=sc.max_steps, check=False)
    except UserError as e:
        kept = sched.script[:sched.pos - 1]
        own = sc.variant or model.default_variant
        memory = recorded(model).memory_model
        under = model.variant.name + (f" with {memory['name']}" if memory else "")
        return " ".join(kept), (f"the scenario's own schedule, written for {own}: under {under} its {e}, "
                                f"so its first {len(kept)} entries are followed, then round-robin")
    return sc.schedule, ""


def written_for(model: Model, sc: Scenario) -> bool:
    """Whether ``model`` runs the scenario as it was written: its own variant, every store seen at once
    (under a memory model's store buffers a scripted actor may still wait where it did not)."""
    return model.variant.name == (sc.variant or model.default_variant) and not recorded(model).memory_model
