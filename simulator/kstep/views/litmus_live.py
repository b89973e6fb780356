"""A litmus test scheduled by hand: the interactive session of a litmus page (issue 24, section 2).

The page's player steps one litmus test under one memory model (stepping.py); over ``kstep serve`` the
student takes the steps instead.  Under x86-TSO each choice is a CPU's next instruction or the drain of
the oldest store in its buffer (TsoMachine's actions, so every sequence of choices is a run of the
operational model and ends in a final state the model allows).  Under the axiomatic models the student
first picks the candidate execution (which write each read reads from; any candidate, allowed or not, so
that a forbidden one ends on the axiom it breaks, which is what the page teaches), then which of its
events comes next among those the model's order allows (Reveal's actions); the last step checks the
axioms and names the one a forbidden execution breaks.

Scrubbing back and choosing again branches the run, as on a mechanism's page (interactive.Session does
all of that; this module only builds the model and its board from the test's text).  The browser runs
it in Pyodide, so it imports the standard library and kstep's stdlib modules only.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ..errors import UserError
from ..memory import arm64, lkmm, power, sc
from ..memory.litmus import parse
from ..memory.stepping import Reveal, TsoMachine, candidate_executions, choose_execution
from .interactive import Session
from .boards.litmus import reveal_sources, tso_sources


# The models a page steps by hand in the browser.  The LKMM runs the kernel tree's own .bell and .cat files:
# in the browser, the copy of them the page's zip ships (kernel_tree.kernel_root finds it).
AXIOMATIC = {m.NAME: m for m in (sc, arm64, power, lkmm)}
MODELS = ("tso", *AXIOMATIC)


class Test(NamedTuple):
    """What Session keeps of its scenario: the test's name, and no configuration (the text is the test)."""

    name: str
    config: None = None


def litmus_model(text: str, name: str, run: str, kernel: dict):
    """The stepped model of the test ``text`` for ``run``: a model's name (the page's own execution, as
    ``stepping.stepped`` builds it), or under an axiomatic model the candidate the student picked, written
    ``MODEL READS`` (READS as stepping.candidate_executions names it: which write each read reads from).
    ``kernel``: the excerpt keys, "path:function", the code pane can show."""
    model, _, reads = run.partition(" ")
    if model not in MODELS:
        raise UserError(f"a litmus page steps {', '.join(MODELS)} by hand, not {model!r}")
    test = parse(text, name)
    if model == "tso":
        if reads:
            raise UserError("under tso the reads take their values as the run goes: pick no candidate")
        return TsoMachine(test, kernel)
    module = AXIOMATIC[model]
    if not reads:
        return Reveal(test, module, choose_execution(test, module), kernel)
    picked = dict(candidate_executions(test, module, only=reads)).get(reads)
    if picked is None:
        raise UserError(f"{name} has no candidate execution where {reads}")
    return Reveal(test, module, picked, kernel)


def candidates(text: str, name: str, model: str, labels: list) -> list[str]:
    """The runs a page under ``model`` offers besides its own: each candidate execution the student may
    reveal instead (an axiomatic model), those whose steps are the page's ``labels`` (its code pane)."""
    if model not in AXIOMATIC:
        return []
    test, module = parse(text, name), AXIOMATIC[model]
    return [f"{model} {reads}" for reads, x in candidate_executions(test, module)
            if sorted(Reveal(test, module, x, {}).sources()) == labels]


class LitmusSession(Session):
    """A hand-scheduled run of the litmus test ``text`` (named ``name``): ``run`` as litmus_model takes
    it.  ``kernel``: the JSON list of the excerpt keys the page's code pane has (live.enable_litmus ships
    them)."""

    def __init__(self, text: str, name: str, run: str, kernel: str = "[]", calls: str = "[]") -> None:
        machine = litmus_model(text, name, run, dict.fromkeys(json.loads(kernel)))
        board, _ = tso_sources(machine) if isinstance(machine, TsoMachine) else reveal_sources(machine)
        self._begin(Test(name), machine, board, [], calls)
