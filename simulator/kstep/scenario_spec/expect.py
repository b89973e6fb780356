"""Scenario expectations: what a scenario's text promises, checked against its own run.

A scenario's description and "look for" tell a student what the run will show.  Each
``[[expect]]`` table in the scenario file turns one sentence of that text into a check of the
scenario's scripted run, so the text cannot drift from what the model does::

    [[expect]]
    claim = "the grace period that frees B waiting for T1 to leave its read-side section"
    sometime = "gp_running() and in_section('T1') and not enabled('rcu:rcu_gp_cleanup')"

A table has a ``claim`` and exactly one form: ``always``, ``never``, ``sometime`` or ``at_end``
(an expression over each state of the run), or ``order`` (steps ``"ACTOR:label"`` that are taken
in this order).  Expressions are a small, safe subset of Python: names of the state's fields
(``mm.mm_lock_seq``, ``counters.vma_lock_miss``), indexing, and/or/not, comparisons, ``in``,
``+``/``-``, ``len``, and the functions ``thread(name)``, ``enabled("A:label")``,
``took("A:label")`` (the step that led to this state), ``done(actor)``, plus those a model
offers by declaring ``Expectations``.  Nothing else is evaluated.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any, Callable, NamedTuple, Optional

from ..engine.memory_model import StoreBuffered
from ..engine.model import Action, Model, State
from ..errors import UserError

class Expectations:
    """What a model may offer a scenario's ``[[expect]]`` expressions: an optional interface beside
    the semantics (``engine.model.Model``), inherited to opt in."""

    def expect_functions(self) -> dict[str, Callable[..., Any]]:
        """Named helpers the expressions may call: ``fn(state, *args)``."""
        return {}


def functions(model: Model) -> dict[str, Callable[..., Any]]:
    """The helpers ``model`` offers (a memory model's wrapper: its mechanism's), else none."""
    inner = model.inner if isinstance(model, StoreBuffered) else model
    return inner.expect_functions() if isinstance(inner, Expectations) else {}


FORMS = ("always", "never", "sometime", "at_end", "order")
_BUILTINS = ("thread", "enabled", "took", "done", "len")
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b}
MAX_EXPR = 500  # characters: a claim is one sentence, its check one line


class Expect(NamedTuple):
    claim: str
    form: str  # one of FORMS
    check: Any  # a parsed expression (ast.expr), or a tuple of Actions for "order"
    text: str  # the expression or step list as written


class ExpectError(ValueError):
    """An expectation that is not well formed (a scenario-file mistake)."""


def parse(entry: dict) -> Expect:
    """One ``[[expect]]`` table (already type-checked by the scenario schema) as an Expect."""
    given = [f for f in FORMS if entry.get(f)]
    if len(given) != 1:
        raise ExpectError(f"needs exactly one of {', '.join(FORMS)} (got {', '.join(given) or 'none'})")
    form = given[0]
    if form == "order":
        steps = tuple(_action(spec) for spec in entry["order"])
        return Expect(entry["claim"], form, steps, " -> ".join(entry["order"]))
    text = entry[form]
    return Expect(entry["claim"], form, compile_expr(text, form), text.strip())


def compile_expr(text: str, where: str) -> ast.expr:
    """An expression of the language above, parsed and checked; ``where`` names it in errors.

    Other scenario tables (``[[questions]]``, kstep.scenario_spec.questions) use the same language
    through this function and ``evaluate``.
    """
    if len(text) > MAX_EXPR:
        raise ExpectError(f"{where}: longer than {MAX_EXPR} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ExpectError(f"{where}: not an expression: {e.msg}") from None
    _allowed(tree, where)
    return tree


def evaluate(model: Model, state: State, action: Optional[Action], tree: ast.expr, root: Any = None) -> Any:
    """The value of a compiled expression in ``state``, reached by ``action`` (None: the initial state).

    Bare names are fields of ``root`` (default: the state); functions always see the whole state.
    A mistake in the expression (no such field, wrong operand types) raises ExpectError.
    """
    return _Frame(model, functions(model), state, action, root).eval(tree)


def _action(spec: Any) -> Action:
    if not isinstance(spec, str):
        raise ExpectError(f"{spec!r} is not a step 'ACTOR:label'")
    actor, sep, label = spec.partition(":")
    if not sep or not actor or not label:
        raise ExpectError(f"order: {spec!r} is not ACTOR:label")
    return Action(actor, label)


def _allowed(node: ast.AST, form: str) -> None:
    """Only the subset the module docstring lists; anything else is a scenario-file mistake."""
    ok = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.BinOp,
          ast.Add, ast.Sub, ast.Call, ast.Name, ast.Load, ast.Attribute, ast.Subscript, ast.Constant,
          *_COMPARE)
    for n in ast.walk(node):
        if not isinstance(n, ok):
            raise ExpectError(f"{form}: {type(n).__name__} is not allowed in an expectation")
        if isinstance(n, ast.Constant) and not isinstance(n.value, (int, str)):
            raise ExpectError(f"{form}: only integers, strings, True and False are allowed as constants")
        name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
        if name.startswith("_"):
            raise ExpectError(f"{form}: {name!r} is not a state field or function")
        if isinstance(n, ast.Call) and (not isinstance(n.func, ast.Name) or n.keywords):
            raise ExpectError(f"{form}: only plain calls of named functions are allowed")


class _Frame:
    """What an expression sees: one state of the run and the step that led to it."""

    def __init__(self, model: Model, functions: dict, state: State, action: Optional[Action], root: Any = None):
        self.model, self.functions, self.state, self.action = model, functions, state, action
        self.root = state if root is None else root

    def eval(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BoolOp):
            values = (self.eval(v) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            return (not v) if isinstance(node.op, ast.Not) else _typed(node, lambda a: -a, v)
        if isinstance(node, ast.BinOp):
            return _typed(node, _ARITH[type(node.op)], self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node)
                if not _typed(node, _COMPARE[type(op)], left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Name):
            return _field(self.root, node.id, "the state" if self.root is self.state else "the thread")
        if isinstance(node, ast.Attribute):
            return _field(self.eval(node.value), node.attr, ast.unparse(node.value))
        if isinstance(node, ast.Subscript):
            seq, index = self.eval(node.value), self.eval(node.slice)
            if not isinstance(seq, tuple) or not isinstance(index, int) or not -len(seq) <= index < len(seq):
                raise ExpectError(f"{ast.unparse(node)}: no such entry")
            return seq[index]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self.call(node.func.id, [self.eval(a) for a in node.args])
        raise ExpectError(f"{type(node).__name__} is not allowed")  # _allowed() rules this out

    def call(self, name: str, args: list) -> Any:
        if name in _BUILTINS and len(args) != 1:
            raise ExpectError(f"{name}() takes one argument")
        if name == "len":
            return _typed(name, len, *args)
        if name in ("enabled", "took"):
            action = _action(*args)
            return action == self.action if name == "took" else action in self.model.actions(self.state)
        if name == "thread":
            (who,) = args
            match = [t for t in self.state.threads if t.name == who]
            if not match:
                raise ExpectError(f"thread({who!r}): no such thread")
            return match[0]
        if name == "done":
            (who,) = args
            if who not in self.model.actors(self.state):
                raise ExpectError(f"done({who!r}): no such actor")
            return self.model.done(self.state, who)
        fn = self.functions.get(name)
        if fn is None:
            known = ", ".join(sorted((*_BUILTINS, *self.functions)))
            raise ExpectError(f"unknown function {name!r} (known: {known})")
        return _model_call(name, fn, self.state, args)


def _model_call(name: str, fn: Callable, state: State, args: list) -> Any:
    """A model's function, given the scenario's arguments: the wrong number of them, or values outside
    what the function reads (a string where it indexes, an address past the page tables), is a
    mistake in the scenario file, said in one line."""
    params = list(inspect.signature(fn).parameters)[1:]  # the first is the state, never the scenario's
    if len(args) != len(params):
        wanted = (f"{len(params)} argument{'s' if len(params) > 1 else ''} ({', '.join(params)})" if params
                  else "no arguments")
        raise ExpectError(f"{name}() takes {wanted}, not {len(args)}")
    try:
        return fn(state, *args)
    except ExpectError:  # the model's own explanation (a ValueError too): already one line
        raise
    except (TypeError, ValueError, IndexError, KeyError, OverflowError) as e:
        shown = ", ".join(repr(a) for a in args)
        raise ExpectError(f"{name}({shown}): not a value it reads ({type(e).__name__}: {e})") from None


def _typed(node: Any, fn: Callable, *args: Any) -> Any:
    """Apply an operator; mismatched operands (a string compared with a number) are a scenario mistake."""
    try:
        return fn(*args)
    except TypeError:
        where = node if isinstance(node, str) else ast.unparse(node)
        types = ", ".join(type(a).__name__ for a in args)
        raise ExpectError(f"{where}: operands of the wrong type ({types})") from None


def _field(value: Any, name: str, where: str) -> Any:
    fields = getattr(value, "_fields", None)
    if fields is None or name not in fields:
        known = ", ".join(fields) if fields else "none"
        raise ExpectError(f"{where} has no field {name!r} (fields: {known})")
    return getattr(value, name)


def check(model: Model, trace: Any, expects: tuple, strict: bool = True) -> list[tuple[Expect, str]]:
    """The expectations the run does not meet, each with why (``sometime X: holds in none ...``).
    An expression that cannot be read on a state (a finished thread's frame) is a UserError when
    ``strict``, as on the run the scenario was written for; otherwise (a run under another variant)
    it is a claim this run does not meet, with the reason."""
    helpers = functions(model)
    failures = []
    for e in expects:
        why = _why_not(model, helpers, trace, e, strict)
        if why:
            failures.append((e, f"{e.form} {e.text}: {why}"))
    return failures


def _why_not(model: Model, functions: dict, trace: Any, e: Expect, strict: bool) -> Optional[str]:
    if e.form == "order":
        k = 0
        for action in trace.actions:
            if k < len(e.check) and action == e.check[k]:
                k += 1
        if k < len(e.check):
            return f"{e.check[k]} is not taken after {e.check[k - 1]}" if k else f"{e.check[0]} is never taken"
        return None
    frames = list(trace.frames())
    if e.form == "at_end":
        frames = frames[-1:]
    seen = []
    for step, (action, state) in enumerate(frames, start=len(trace.states) - len(frames)):
        try:
            holds = bool(_Frame(model, functions, state, action).eval(e.check))
        except ExpectError as err:
            if not strict:
                return f"cannot be read at step {step}: {err}"
            raise UserError(f"expectation {e.claim!r}: {err}") from None
        if e.form == "always" and not holds:
            return f"does not hold at step {step}" + (f" ({action})" if action else " (the initial state)")
        if e.form == "never" and holds:
            return f"holds at step {step}" + (f" ({action})" if action else " (the initial state)")
        seen.append(holds)
    if e.form == "sometime" and not any(seen):
        return f"holds in none of the {len(seen)} states of the run"
    if e.form == "at_end" and not seen[0]:
        return f"does not hold at the end (step {len(trace)})"
    return None
