"""The context of each step, as the status line shows it: the kernel functions it runs in, as one
line, and what it acts on; in the standard library only, so that the page's interactive mode gives a
student's own steps the same context as the recorded run's.

Whether one function's 6.12 code calls another (``calls``) comes from the committed excerpts
(code.calls) where the page is built; the page ships the relation for the model's functions
(``call_pairs``), since the excerpts do not travel to the browser.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from ..engine import display
from .call_stacks import call_stacks

INTO, SKIPPED = " › ", " › … › "  # a call seen in the caller's code; callers in between not modelled


def stack_line(stack: Optional[Sequence[str]], calls: Callable[[str, str], bool]) -> str:
    """A step's call stack as one line, outermost first; where the caller's code does not call the next
    function itself (the model skips functions in between), an ellipsis says so."""
    if not stack:
        return ""
    out = stack[0]
    for caller, callee in zip(stack, stack[1:]):
        out += (INTO if calls(caller, callee) else SKIPPED) + callee
    return out


def functions(model) -> list[str]:
    """The kernel functions the model's steps and calls mirror."""
    where = getattr(model, "locations", model.sources)()
    return sorted({s.function for s in where.values() if s is not None and s.in_kernel})


def call_pairs(model, calls: Callable[[str, str], bool]) -> list[list[str]]:
    """Every (caller, callee) among the model's functions for which ``calls`` holds."""
    names = functions(model)
    return [[a, b] for a in names for b in names if a != b and calls(a, b)]


def frame_context(trace, model, calls: Callable[[str, str], bool]) -> tuple[list[str], list[str]]:
    """Per frame of ``trace``: the step's call stack as one line ("" where the model cannot tell it) and
    what the step acts on ("mmap_lock", "VMA 1's lock"; "" when its label says it all)."""
    stacks = call_stacks(model, trace, calls)
    acts_on = display.of(model).acts_on
    lines = [""] + [stack_line(s, calls) for s in stacks] if stacks is not None else [""] * len(trace.states)
    on = [""] + [acts_on(trace.states[k], a) for k, a in enumerate(trace.actions)]
    return lines, on
