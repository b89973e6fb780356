"""A litmus test scheduled by hand: the interactive session of a litmus page (issue 24, section 2).

The page's player steps one litmus test under one memory model (stepping.py); over ``kstep serve`` the
student takes the steps instead.  Under x86-TSO each choice is a CPU's next instruction or the drain of
the oldest store in its buffer (TsoMachine's actions, so every sequence of choices is a run of the
operational model and ends in a final state the model allows).  Under the axiomatic models the choice
is which event of the execution the page reveals comes next, among those the model's order allows
(Reveal's actions); the last step checks the axioms and names the one a forbidden execution breaks.

Scrubbing back and choosing again branches the run, as on a mechanism's page (interactive.Session does
all of that; this module only builds the model and its board from the test's text).  The browser runs
it in Pyodide, so it imports the standard library and kstep's stdlib modules only.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ..errors import UserError
from ..memory import arm64, power, sc
from ..memory.litmus import parse
from ..memory.stepping import Reveal, TsoMachine, choose_execution
from .interactive import Session
from .litmus_board import reveal_sources, tso_sources


# The models a page steps by hand in the browser.  The LKMM runs the kernel tree's own .bell and .cat files,
# which the browser does not have: its pages play their recorded execution only.
AXIOMATIC = {m.NAME: m for m in (sc, arm64, power)}
MODELS = ("tso", *AXIOMATIC)


class Test(NamedTuple):
    """What Session keeps of its scenario: the test's name, and no configuration (the text is the test)."""

    name: str
    config: None = None


def litmus_model(text: str, name: str, model: str, kernel: dict):
    """The stepped model of the test ``text`` under ``model``, as ``stepping.stepped`` builds the page's
    (``kernel``: the excerpt keys, "path:function", the code pane can show)."""
    if model not in MODELS:
        raise UserError(f"a litmus page steps {', '.join(MODELS)} by hand, not {model!r}")
    test = parse(text, name)
    if model == "tso":
        return TsoMachine(test, kernel)
    module = AXIOMATIC[model]
    return Reveal(test, module, choose_execution(test, module), kernel)


class LitmusSession(Session):
    """A hand-scheduled run of the litmus test ``text`` (named ``name``) under ``model``.  ``kernel``: the
    JSON list of the excerpt keys the page's code pane has (live.enable ships them)."""

    def __init__(self, text: str, name: str, model: str, kernel: str = "[]", calls: str = "[]") -> None:
        machine = litmus_model(text, name, model, dict.fromkeys(json.loads(kernel)))
        board, _ = tso_sources(machine) if isinstance(machine, TsoMachine) else reveal_sources(machine)
        self._begin(Test(name), machine, board, [], calls)
