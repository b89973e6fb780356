"""Scenario questions: predict-then-reveal, with every answer computed from the run.

One format serves every question a student is asked about a run: the predict exercises, the
notebooks' questions and the player's predict mode.  A scenario file lists them as
``[[questions]]`` tables; nobody writes an answer down, ``answers(model, questions, trace)``
computes each one from the trace it is asked about::

    [[questions]]
    id = "seq-after-epoch"
    at = "after the first W:vma_end_write_all"
    kind = "value"
    ask = "What is mm_lock_seq once the writer's first write epoch has ended?"
    field = "mm.mm_lock_seq"

``at`` anchors the question to a step by what happens, not by a step number, so it survives a
model that gains or loses steps elsewhere::

    start | end
    before|after [the] [first|second|third|fourth|fifth|last|<N>th] [ACTOR:]label

``after X`` is the state right after that step, ``before X`` the state in which it is about to be
taken; without an actor any actor's step counts (``after the second critical_section``).

``kind`` says what shape the answer has; ``field`` is an expression of the language of
kstep.scenario_spec.expect (state fields, indexing, comparisons, ``thread()``, ``enabled()`` and the
model's own helpers), parsed with it and evaluated by it:

- ``value``: the value of ``field`` in the anchored state (an integer, a string, true/false);
- ``choose``: the same, and it must be one of ``choices`` (strings; numbers and true/false as
  text), which the question offers;
- ``thread``: which threads: ``field`` is evaluated once per thread, its bare names being that
  thread's fields (``vma_locked and vma == 0``), and the answer is the names of the threads for
  which it holds, in thread order.

Questions are validated when the scenario is loaded (``kstep.scenario_spec.scenario`` calls ``parse``),
their labels against the model by ``validate``; each mistake is one line and exit status 2 at the
command line.  ``kstep run MECH --scenario S`` prints the questions with ``?`` (and, from the first
step a question is about, only who ran: ``steps_shown``); ``-c`` prints the answers this run gives
(practice: graded predict exercises grade what it does not print, kstep.grading.decided).  A
question whose anchor step does not happen in a run (another seed, another schedule) has no answer
in that run and says so.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from ..engine.model import Action, Model
from ..errors import UserError
from .expect import ExpectError, compile_expr, evaluate

KINDS = ("value", "choose", "thread")
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}
_ANCHOR = re.compile(r"^(before|after)\s+(?:the\s+)?(?:(first|second|third|fourth|fifth|last|[1-9][0-9]{0,3}"
                     r"(?:st|nd|rd|th))\s+)?(?:([A-Za-z_][A-Za-z0-9_.-]*):)?([A-Za-z_][A-Za-z0-9_]*)$")
_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")  # fullmatch: "q1\n" is no id


class Anchor(NamedTuple):
    where: str  # "start", "end", "before" or "after"
    nth: int = 1  # which occurrence, from 1; -1: the last
    actor: Optional[str] = None  # None: any actor
    label: str = ""

    def __str__(self) -> str:
        if self.where in ("start", "end"):
            return self.where
        nth = next((w for w, n in ORDINALS.items() if n == self.nth), f"#{self.nth}")
        return f"{self.where} the {nth} {self.actor + ':' if self.actor else ''}{self.label}"


class Question(NamedTuple):
    id: str
    at: Anchor
    kind: str  # one of KINDS
    ask: str
    field: Any  # the compiled expression (ast.expr)
    text: str  # the expression as written
    choices: tuple = ()


class Answer(NamedTuple):
    question: Question
    step: Optional[int]  # index of the anchored state in trace.states; None: not reached in this run
    value: Any  # int, str, bool, or a tuple of thread names (kind "thread"); None when not reached


def parse_anchor(text: str) -> Anchor:
    words = " ".join(text.split())
    if words in ("start", "end"):
        return Anchor(words)
    m = _ANCHOR.match(words)
    if not m:
        raise ExpectError(f"at: {text!r} is not 'start', 'end' or 'before|after [the first|second|...|last|Nth] "
                          f"[ACTOR:]label'")
    where, nth, actor, label = m.groups()
    n = 1 if nth is None else ORDINALS.get(nth) or int(nth[:-2])
    return Anchor(where, n, actor, label)


def parse(entry: dict) -> Question:
    """One ``[[questions]]`` table (already type-checked by the scenario schema) as a Question."""
    anchor = parse_anchor(entry["at"])
    kind = entry["kind"]
    choices = tuple(entry["choices"])
    if kind == "choose":
        if len(choices) < 2:
            raise ExpectError("choices: a 'choose' question offers at least two choices")
        if len(set(choices)) != len(choices):
            raise ExpectError("choices: two choices are the same")
    elif choices:
        raise ExpectError(f"choices: only a 'choose' question has choices (this one is {kind!r})")
    return Question(entry["id"], anchor, kind, entry["ask"], compile_expr(entry["field"], "field"),
                    entry["field"].strip(), choices)


def check_ids(questions: list, path: str) -> None:
    seen = set()
    for q in questions:
        if not _ID.fullmatch(q["id"]):
            raise ExpectError(f"{path}: id {q['id']!r} is not lower-case letters, digits and '-' (at most 40)")
        if q["id"] in seen:
            raise ExpectError(f"{path}: two questions have the id {q['id']!r}")
        seen.add(q["id"])


def validate(model: Model, questions: tuple) -> None:
    """Every anchor names a step this model has (a scenario-file mistake otherwise)."""
    labels = model.sources()
    for q in questions:
        if q.at.label and q.at.label not in labels:
            raise UserError(f"question {q.id}: {model.name} has no step {q.at.label!r}")


def anchored(at: Anchor, trace: Any) -> Optional[int]:
    """The index in ``trace.states`` of the state the anchor names, or None if the run never gets there."""
    if at.where == "start":
        return 0
    if at.where == "end":
        return len(trace.states) - 1
    hits = [k for k, a in enumerate(trace.actions)
            if a.label == at.label and (at.actor is None or a.actor == at.actor)]
    if not hits or (at.nth > 0 and len(hits) < at.nth):
        return None
    k = hits[-1] if at.nth < 0 else hits[at.nth - 1]
    return k + 1 if at.where == "after" else k


def answers(model: Model, questions: tuple, trace: Any) -> list[Answer]:
    """Each question's answer in this run, computed from its anchored state."""
    out = []
    for q in questions:
        k = anchored(q.at, trace)
        if k is None:
            out.append(Answer(q, None, None))
            continue
        out.append(Answer(q, k, value_at(model, q, trace.states[k], trace.actions[k - 1] if k else None)))
    return out


def steps_shown(answers: list[Answer]) -> Optional[int]:
    """How many leading steps of a run may show what they did (their labels) while its questions
    are open: those before the first step into a state a question asks about.  A question about the
    end of the run, or its last X, may depend on every step (count the misses), so none then; no
    question to answer (none reached, or only the initial state, which is given): None, every step.
    Past these steps a step table shows only who ran (the schedule, the puzzle's input)."""
    shown = [0 if a.question.at.where == "end" or a.question.at.nth < 0 else a.step - 1
             for a in answers if a.step]
    return min(shown) if shown else None


def value_at(model: Model, q: Question, state: Any, action: Optional[Action]) -> Any:
    """The question's answer in ``state``, reached by ``action`` (None: the initial state)."""
    try:
        return _value(model, q, state, action)
    except ExpectError as err:
        raise UserError(f"question {q.id}: {err}") from None


def _value(model: Model, q: Question, state: Any, action: Optional[Action]) -> Any:
    if q.kind == "thread":
        return tuple(t.name for t in state.threads if evaluate(model, state, action, q.field, root=t))
    value = evaluate(model, state, action, q.field)
    if not isinstance(value, (bool, int, str)):
        raise ExpectError(f"field {q.text}: a {type(value).__name__} is not an answer (ask for one of its fields)")
    if q.kind == "choose" and text(value) not in q.choices:
        raise ExpectError(f"field {q.text} is {text(value)!r} here, which is not one of its choices")
    return value


ULONG = 1 << 64  # a C unsigned long: kernel counters such as RCU's gp_seq live near its wrap


def text(value: Any) -> str:
    """An answer as a student writes it: ``3``, ``vma_start_read``, ``true``, ``T1, T2`` (``none``).

    An unsigned long past 2**63 is shown as the step table shows it, signed, then as unsigned.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    if isinstance(value, int) and ULONG // 2 <= value < ULONG:
        return f"{value - ULONG} (unsigned: {value})"
    return str(value)


def matches(answer: Answer, given: Any) -> bool:
    """Does what a student gave (a TOML value) equal the computed answer?

    Numbers must be numbers, true/false booleans; strings compare without surrounding blanks; a
    "thread" answer is a list of names (or one name) in any order and any case.  A number may be given as the
    signed or the unsigned view of the same 64-bit word (the step table shows RCU's gp_seq signed).
    """
    want = answer.value
    if answer.question.kind == "thread":
        names = [given] if isinstance(given, str) else given
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return False
        return sorted(n.strip().lower() for n in names) == sorted(n.lower() for n in want)
    if isinstance(want, bool) or isinstance(given, bool):
        return isinstance(want, bool) and isinstance(given, bool) and want == given
    if isinstance(want, int):
        return isinstance(given, int) and (given == want or (abs(given) < ULONG and given % ULONG == want % ULONG))
    return isinstance(given, str) and given.strip() == want
