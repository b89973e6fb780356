"""Feedback that teaches, for exercises where a student writes some steps of a kstep model.

Such an exercise's driver builds the model with the student's functions in place of the kernel's
(``with_steps``) and explores it.  ``explain`` compares that exploration with the kernel's and says
what differs in words a student can act on: the invariant the student's steps break and its
message, or the deadlock they reach, with the shortest interleaving that shows it, written as a
trace file that ``kstep show TRACE --steps FILE.py`` replays through the student's own steps; or,
when nothing breaks, that the steps reach a different set of states than Linux's.  Public tests
print it; hidden tests (which run the student's code only through the driver) pass ``verdict``'s
answer, a JSON object, to ``differs``.

Partial credit follows the protocol, step by step: ``step_credit`` judges each of the student's
steps alone, with every other step Linux's own, so a recheck that forgets ``up_read`` loses the
recheck's share of a scenario and keeps the lockless check's.  Steps that are each right alone but
wrong together earn at most all but one share.  Only the standard library and kstep are imported:
this runs inside the sandbox, in the student's driver.
"""

from __future__ import annotations

import json
from typing import Callable, Optional

from ..engine import explore
from ..engine.model import Model

STUDENT = "+steps"  # a variant name's suffix: the base kernel's, with a student's steps in place


def step_names(model_cls: type[Model], module: object) -> dict:
    """The functions of ``module`` named after a step label of ``model_cls`` (the ones it replaces)."""
    labels = set(model_cls(None).sources())
    return {name: fn for name, fn in vars(module).items() if name in labels and callable(fn)}


def with_steps(model_cls: type[Model], base: str, steps: dict) -> Model:
    """``model_cls``'s variant ``base`` with ``steps`` (label -> step function) in place of its own."""
    kernel = model_cls.variants[base]
    name = base + STUDENT
    mine = kernel._replace(name=name, doc=f"{base} with {', '.join(sorted(steps))} written by the student",
                           replaces={**kernel.replaces, **steps})
    cls = type(f"Student{model_cls.__name__}", (model_cls,), {"variants": {**model_cls.variants, name: mine}})
    return cls(name)


def verdict(model: Model, config: dict, max_states: int, trace: Optional[str] = None, scenario: str = "") -> dict:
    """Explore every interleaving: the verdict, the broken invariant and its message, the number of
    states, and the shortest interleaving to the violation (written to ``trace`` when given)."""
    result = explore(model, model.initial(config), max_states=max_states, config=config, scenario=scenario)
    v, cex = result.violation, result.counterexample
    if cex is not None and trace:
        cex.write(model, trace)
    return {"verdict": "violation" if v else "clean" if result.exhausted else "bounded",
            "invariant": v.invariant if v else None, "message": v.message if v else None,
            "states": result.states,
            "interleaving": [str(a) for a in cex.actions] if cex is not None else []}


def differs(mine: object, kernel: dict, trace: Optional[str] = None, steps: str = "") -> Optional[str]:
    """None when the student's exploration ``mine`` is the kernel's; else what differs, in words
    (``mine`` may be a string: why the student's code gave no exploration at all)."""
    if isinstance(mine, str):
        return mine
    if not isinstance(mine, dict):
        return f"the driver's answer {json.dumps(mine)[:200]} is not an exploration"
    if (mine.get("verdict"), mine.get("invariant"), mine.get("states")) == \
            (kernel["verdict"], kernel["invariant"], kernel["states"]):
        return None
    if mine.get("verdict") == "violation" and mine.get("invariant") != kernel["invariant"]:
        what = "reach a deadlock" if mine["invariant"] == "deadlock" else \
            f"break the invariant {mine['invariant']} ({mine.get('message')})"
        run = " ".join(str(a) for a in mine.get("interleaving", []))
        shown = f"; kstep show {trace}{steps} replays it" if trace else ""
        return (f"your steps {what}, Linux's do not; the shortest interleaving "
                f"({len(mine.get('interleaving', []))} steps{shown}): {run}")
    return (f"your steps give {mine.get('verdict')} with {mine.get('states')} states, Linux's "
            f"{kernel['verdict']} with {kernel['states']}: no invariant breaks, but some check or next "
            f"step differs from Linux's")


def explain(mine: Model, kernel: Model, config: dict, *, steps_file: str, scenario: str = "",
            max_states: int = 200_000, trace: str = "counterexample.json") -> None:
    """Print what the student's model does differently from the kernel's (nothing when alike);
    the shortest counterexample goes to ``trace`` for ``kstep show``."""
    message = differs(verdict(mine, config, max_states, trace, scenario), verdict(kernel, config, max_states),
                      trace, f" --steps {steps_file}")
    if message:
        print(message)


def step_credit(ask: Callable[[Optional[list]], object], steps: tuple, kernel: dict) -> tuple[float, str]:
    """(share of the credit, what is wrong) for one scenario: ``ask(names)`` explores with the
    student's steps ``names`` (None: all of them) and Linux's others, as the driver answers (or a
    string saying why it could not).  The first line of what is wrong sums it up."""
    whole = differs(ask(None), kernel)
    if whole is None:
        return 1.0, ""
    wrong = {name: differs(ask([name]), kernel) for name in steps} if len(steps) > 1 else {steps[0]: whole}
    right = [name for name, why in wrong.items() if why is None]
    credit = min(len(right), len(steps) - 1) / len(steps)
    head = f"{len(right)} of your {len(steps)} steps behave as Linux's, each judged with Linux's other steps"
    if len(right) == len(steps):
        head = f"each of your steps behaves as Linux's alone, but together: {whole}"
    alike = "as Linux's"
    lines = [f"{name}: {why or alike}" for name, why in wrong.items()]
    return credit, "\n".join([head, *lines])
