"""A small interpreter for the subset of herd's cat language the LKMM is written in.

kstep runs the kernel's own ``tools/memory-model/linux-kernel.bell``, ``linux-kernel.cat``
and ``lock.cat`` (read from the pinned 6.12 tree at run time): those files are the
specification, and this module only gives their language a meaning. The subset: ``let``,
``let rec ... and ...`` (least fixed points), functions (``let f(x) =``, ``let f x =``,
application by juxtaposition), ``let ... in``, ``try ... with``, ``include``,
``with x from e`` (the execution forks once per element), the checks ``acyclic``,
``irreflexive``, ``empty`` (``~`` negates; with ``flag`` a check only raises a flag), and the
operators ``| ++ ; \\ & *`` (binary: union, add-to-set, sequence, difference, intersection,
cartesian product, loosest first), ``~`` (complement), postfix ``* + ? ^-1``, ``[S]``,
``{e}``, ``0`` and ``_``. ``enum``, ``instructions`` and ``show`` only declare or display
and are skipped.

What herd supplies beyond those files is written here in kstep's own code, after herd's
library (herdtools7 ``herd/libdir/stdlib.cat``, ``cross.cat``, ``cos-opt.cat``):

* stdlib: ``emptyset``, ``po-loc = po & loc``, ``rfe``/``rfi``, ``co0`` (initial writes
  first), ``fencerel(B) = (po & (_ * B)) ; po``, ``singlestep(R)`` (R minus R;R), ``map``;
* cross.cat: ``cross(S)``, every union of one member of each set in S;
* cos-opt.cat: ``include "cos-opt.cat"`` forks over every coherence order of the current
  ``W`` extending the observed order (:func:`kstep.memory.executions.coherence_orders`)
  and binds ``co``, ``coi``, ``coe``, ``fr``, ``fri``, ``fre``.

The C front end's part (events, tags, dependencies, rf of ordinary reads) is in
:mod:`kstep.memory.executions`. ``FW`` (herd's final writes) is bound to the empty set:
the kernel's files use it only in the ``lock-final`` flag and in ``co0``, and kstep's
coherence orders let any write be last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kstep.memory import relations as rel

KEYWORDS = frozenset({
    "let", "rec", "and", "in", "as", "flag", "empty", "acyclic", "irreflexive", "include",
    "with", "from", "show", "unshow", "enum", "instructions", "try", "fun", "call", "procedure",
})
STATEMENT_START = frozenset({
    "let", "include", "flag", "empty", "acyclic", "irreflexive", "with", "show", "unshow",
    "enum", "instructions", "~",
})
HERD_LIBRARY = frozenset({"cross.cat", "stdlib.cat"})  # provided as built-ins below
COS = "cos-opt.cat"

_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<comment>//[^\n]*)|(?P<string>\"[^\"]*\")|(?P<tag>'[A-Za-z][\w.-]*)"
    r"|(?P<inv>\^-1)|(?P<name>[A-Za-z_][\w.-]*|0)|(?P<op>\+\+|\|\||[|&\\;*+?~\[\](){},=])"
)


class CatError(Exception):
    """The model file uses something this interpreter does not know (a kstep limitation)."""


def _tokens(text: str, name: str) -> list[str]:
    out, pos, depth = [], 0, 0
    while pos < len(text):
        if text.startswith("(*", pos):
            depth, j = 1, pos + 2
            while depth and j < len(text):
                if text.startswith("(*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*)", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            pos = j
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise CatError(f"{name}: cannot read {text[pos:pos + 20]!r}")
        if m.lastgroup not in ("space", "comment"):
            out.append(m.group())
        pos = m.end()
    out.append("<end>")
    return out


# ---------------------------------------------------------------------------------------
# Values: an event set is an int (bitset), a relation a tuple of int rows, a set of other
# values a frozenset; EMPTY stands for "0", the empty set or relation of any type.


class _Empty:
    def __repr__(self) -> str:
        return "0"


EMPTY = _Empty()


@dataclass(frozen=True)
class Ev:
    i: int


@dataclass(frozen=True)
class Pair:
    a: int
    b: int


@dataclass
class Func:
    params: tuple[str, ...]
    body: tuple
    env: dict


# ---------------------------------------------------------------------------------------
# Parsing


class _Parser:
    def __init__(self, tokens: list[str], name: str) -> None:
        self.t, self.i, self.name = tokens, 0, name

    def peek(self) -> str:
        return self.t[self.i]

    def take(self, want: str | None = None) -> str:
        tok = self.t[self.i]
        if want is not None and tok != want:
            raise CatError(f"{self.name}: expected {want!r}, found {tok!r}")
        self.i += 1
        return tok

    def statements(self) -> list[tuple]:
        out = []
        if self.peek().startswith('"'):
            self.take()
        while self.peek() != "<end>":
            out.append(self.statement())
        return [s for s in out if s is not None]

    def skip_declaration(self) -> None:
        self.take()
        while self.peek() not in STATEMENT_START and self.peek() != "<end>":
            self.take()

    def statement(self):
        tok = self.peek()
        if tok in ("enum", "instructions", "show", "unshow"):
            self.skip_declaration()
            return None
        if tok == "include":
            self.take()
            return ("include", self.take().strip('"'))
        if tok == "let":
            self.take()
            if self.peek() == "rec":
                self.take()
                return ("letrec", self.bindings())
            return ("let", self.bindings())
        if tok == "with":
            self.take()
            name = self.take()
            self.take("from")
            return ("with", name, self.expr())
        flag = False
        if tok == "flag":
            self.take()
            flag = True
        negate = False
        if self.peek() == "~":
            self.take()
            negate = True
        check = self.take()
        if check not in ("acyclic", "irreflexive", "empty"):
            raise CatError(f"{self.name}: unsupported statement {check!r}")
        e = self.expr()
        self.take("as")
        return ("check", flag, negate, check, e, self.take())

    def bindings(self) -> list[tuple[str, tuple, tuple]]:
        out = []
        while True:
            name = self.take()
            params: list[str] = []
            if self.peek() == "(":
                self.take()
                while self.peek() != ")":
                    params.append(self.take())
                    if self.peek() == ",":
                        self.take()
                self.take(")")
            elif self.peek() != "=":
                params.append(self.take())
            self.take("=")
            out.append((name, tuple(params), self.expr()))
            if self.peek() != "and":
                return out
            self.take()

    # expressions, loosest operator first
    _LEVELS = ("|", "++", ";", "\\", "&")

    def expr(self, level: int = 0) -> tuple:
        tok = self.peek()
        if level == 0 and tok == "let":
            self.take()
            rec = self.peek() == "rec"
            if rec:
                self.take()
            binds = self.bindings()
            self.take("in")
            return ("letin", rec, binds, self.expr())
        if level == 0 and tok == "try":
            self.take()
            first = self.expr()
            self.take("with")
            return ("try", first, self.expr())
        if level == len(self._LEVELS):
            return self.cartesian()
        op = self._LEVELS[level]
        left = self.expr(level + 1)
        if op == "++":  # right-associative: e ++ (f ++ S)
            if self.peek() == "++":
                self.take()
                return ("bin", "++", left, self.expr(level))
            return left
        while self.peek() == op:
            self.take()
            left = ("bin", op, left, self.expr(level + 1))
        return left

    def starts_atom(self, tok: str) -> bool:
        return tok in ("(", "[", "{", "_", "0", "~") or (
            tok[0].isalpha() and tok not in KEYWORDS
        )

    def cartesian(self) -> tuple:
        left = self.unary()
        while self.peek() == "*" and self.starts_atom(self.t[self.i + 1]):
            self.take()
            left = ("bin", "*", left, self.unary())
        return left

    def unary(self) -> tuple:
        if self.peek() == "~":
            self.take()
            return ("compl", self.unary())
        e = self.application()
        while True:
            tok = self.peek()
            if tok == "*" and not self.starts_atom(self.t[self.i + 1]):
                self.take()
                e = ("star", e)
            elif tok in ("+", "?", "^-1"):
                self.take()
                e = ({"+": "plus", "?": "opt", "^-1": "inv"}[tok], e)
            else:
                return e

    def application(self) -> tuple:
        e = self.atom()
        while self.peek() in ("(", "{", "_") or (
            self.peek()[0].isalpha() and self.peek() not in KEYWORDS
        ):
            e = ("app", e, self.atom())
        return e

    def atom(self) -> tuple:
        tok = self.take()
        if tok == "(":
            items = [self.expr()]
            while self.peek() == ",":
                self.take()
                items.append(self.expr())
            self.take(")")
            return items[0] if len(items) == 1 else ("tuple", tuple(items))
        if tok == "[":
            e = self.expr()
            self.take("]")
            return ("id", e)
        if tok == "{":
            if self.peek() == "}":
                self.take()
                return ("const", EMPTY)
            e = self.expr()
            self.take("}")
            return ("single", e)
        if tok == "0":
            return ("const", EMPTY)
        if tok == "_":
            return ("universe",)
        if tok[0].isalpha() and tok not in KEYWORDS:
            return ("name", tok)
        raise CatError(f"{self.name}: unexpected {tok!r}")


def load(path: Path) -> list[tuple]:
    """The statements of a cat/bell file, with kernel ``include``s spliced in."""
    stmts = _Parser(_tokens(path.read_text(), path.name), path.name).statements()
    out = []
    for s in stmts:
        if s[0] == "include" and s[1] not in HERD_LIBRARY and s[1] != COS:
            out.extend(load(path.with_name(s[1])))
        elif s[0] == "include" and s[1] == COS:
            out.append(("cos",))
        elif s[0] != "include":
            out.append(s)
    return out


# ---------------------------------------------------------------------------------------
# Evaluation


class Interpreter:
    """Evaluates a model's statements over one candidate (events and base relations)."""

    def __init__(self, n: int, base: dict, cos) -> None:
        self.n = n
        self.universe = (1 << n) - 1
        self.base = base
        self.cos = cos  # callable(env) -> iterable of co relations
        self.rejected: list | None = None  # a list: each branch a check stops gets (name, check, value, bindings) there

    def run(self, stmts: list[tuple]):
        """(final bindings, raised flags) of every branch that passes all the checks."""
        env = dict(self.base)
        yield from self._run(stmts, 0, env, frozenset())

    def _run(self, stmts, i, env, flags):
        while i < len(stmts):
            s = stmts[i]
            kind = s[0]
            if kind == "let":
                for name, params, body in s[1]:
                    env[name] = Func(params, body, env) if params else self.eval(body, env)
            elif kind == "letrec":
                self.letrec(s[1], env)
            elif kind == "check":
                _, flag, negate, check, e, name = s
                value = self.eval(e, env)
                ok = self.check(check, value)
                if negate:
                    ok = not ok
                if flag:
                    if ok:  # "flag ~empty X as f": raised when X is not empty
                        flags = flags | {name}
                elif not ok:
                    if self.rejected is not None:
                        self.rejected.append((name, check, value, env))
                    return
            elif kind == "with":
                for value in self._members(self.eval(s[2], env)):
                    branch = dict(env)
                    branch[s[1]] = value
                    yield from self._run(stmts, i + 1, branch, flags)
                return
            elif kind == "cos":
                for co in self.cos(env):
                    branch = dict(env)
                    self.bind_co(branch, co)
                    yield from self._run(stmts, i + 1, branch, flags)
                return
            i += 1
        yield env, flags

    def bind_co(self, env, co) -> None:
        ext, internal = env["ext"], env["int"]
        fr = rel.seq(rel.inverse(self.as_rel(env["rf"])), co)
        fr = tuple(row & ~(1 << i) for i, row in enumerate(fr))
        env.update(co=co, coe=rel.inter(co, ext), coi=rel.inter(co, internal),
                   fr=fr, fre=rel.inter(fr, ext), fri=rel.inter(fr, internal))

    def _members(self, value):
        if value is EMPTY:
            return []
        if isinstance(value, frozenset):
            return sorted(value, key=repr)
        raise CatError(f"'with ... from' needs a set of values, not {type(value).__name__}")

    def letrec(self, binds, env) -> None:
        for name, _, _ in binds:
            env[name] = EMPTY
        for _ in range(4 * self.n + 8):
            new = {name: self.eval(body, env) for name, _, body in binds}
            if all(self.same(new[k], env[k]) for k in new):
                return
            env.update(new)
        raise CatError("a 'let rec' did not reach a fixed point")

    def same(self, a, b) -> bool:
        if a is EMPTY or b is EMPTY:
            return self.is_empty(a) and self.is_empty(b)
        return a == b

    def is_empty(self, v) -> bool:
        if v is EMPTY:
            return True
        if isinstance(v, int):
            return v == 0
        if isinstance(v, tuple):
            return not any(v)
        return not v

    def check(self, check: str, v) -> bool:
        if check == "empty":
            return self.is_empty(v)
        r = self.as_rel(v)
        return rel.acyclic(r) if check == "acyclic" else rel.irreflexive(r)

    def as_rel(self, v):
        if v is EMPTY:
            return rel.empty(self.n)
        if isinstance(v, tuple):
            return v
        raise CatError(f"expected a relation, found {type(v).__name__}")

    def as_set(self, v) -> int:
        if v is EMPTY:
            return 0
        if isinstance(v, int):
            return v
        if isinstance(v, Ev):
            return 1 << v.i
        raise CatError(f"expected a set of events, found {type(v).__name__}")

    def eval(self, e, env):
        kind = e[0]
        if kind == "name":
            try:
                return env[e[1]]
            except KeyError:
                raise _Unbound(e[1]) from None
        if kind == "bin":
            return self.binary(e[1], self.eval(e[2], env), self.eval(e[3], env))
        if kind == "id":
            return rel.identity(self.n, self.as_set(self.eval(e[1], env)))
        if kind in ("star", "plus", "opt", "inv"):
            r = self.as_rel(self.eval(e[1], env))
            if kind == "inv":
                return rel.inverse(r)
            if kind == "plus":
                return rel.plus(r)
            return rel.reflexive(rel.plus(r) if kind == "star" else r)
        if kind == "compl":
            v = self.eval(e[1], env)
            if isinstance(v, tuple):
                return tuple(~row & self.universe for row in v)
            return self.universe & ~self.as_set(v)
        if kind == "app":
            return self.apply(self.eval(e[1], env), self.eval(e[2], env))
        if kind == "const":
            return e[1]
        if kind == "universe":
            return self.universe
        if kind == "single":
            v = self.eval(e[1], env)
            return (1 << v.i) if isinstance(v, Ev) else frozenset({v})
        if kind == "tuple":
            return tuple(self.eval(x, env) for x in e[1]) + ("<args>",)
        if kind == "letin":
            local = dict(env)
            if e[1]:
                self.letrec(e[2], local)
            else:
                for name, params, body in e[2]:
                    local[name] = Func(params, body, local) if params else self.eval(body, local)
            return self.eval(e[3], local)
        if kind == "try":
            try:
                return self.eval(e[1], env)
            except _Unbound:
                return self.eval(e[2], env)
        raise CatError(f"cannot evaluate {kind}")

    def apply(self, f, arg):
        if callable(f) and not isinstance(f, Func):
            return f(self, arg)
        if not isinstance(f, Func):
            raise CatError(f"applying a {type(f).__name__}, not a function")
        local = dict(f.env)
        if len(f.params) == 1:
            local[f.params[0]] = arg
        else:
            if not (isinstance(arg, tuple) and arg[-1:] == ("<args>",)):
                raise CatError(f"function of {len(f.params)} arguments given one")
            local.update(zip(f.params, arg[:-1]))
        return self.eval(f.body, local)

    def binary(self, op, a, b):
        if op == "++":
            if isinstance(a, Pair):
                rows = list(self.as_rel(b))
                rows[a.a] |= 1 << a.b
                return tuple(rows)
            if isinstance(a, Ev):
                return self.as_set(b) | (1 << a.i)
            return (frozenset() if b is EMPTY else b) | {a}
        if op == "*":
            return rel.cartesian(self.n, self.as_set(a), self.as_set(b))
        if op == ";":
            return rel.seq(self.as_rel(a), self.as_rel(b))
        if a is EMPTY or b is EMPTY:
            if op == "|":
                return b if a is EMPTY else a
            if op == "&":
                return EMPTY
            return EMPTY if a is EMPTY else a
        if isinstance(a, int) and isinstance(b, int):
            return a | b if op == "|" else a & b if op == "&" else a & ~b
        if isinstance(a, frozenset) and isinstance(b, frozenset):
            return a | b if op == "|" else a & b if op == "&" else a - b
        a, b = self.as_rel(a), self.as_rel(b)
        return rel.union(a, b) if op == "|" else rel.inter(a, b) if op == "&" else rel.diff(a, b)


class _Unbound(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


# ---------------------------------------------------------------------------------------
# herd's library, in kstep's code (see the module docstring)


def _domain(interp, r):
    return 0 if r is EMPTY else rel.domain(interp.as_rel(r))


def _range(interp, r):
    return 0 if r is EMPTY else rel.range_(interp.as_rel(r))


def _fencerel(interp, fences):
    po = interp.base["po"]
    return rel.seq(rel.inter(po, rel.cartesian(interp.n, interp.universe, interp.as_set(fences))), po)


def _singlestep(interp, r):
    r = interp.as_rel(r)
    return rel.diff(r, rel.seq(r, r))


def _map(interp, f):
    def over(interp2, collection):
        if collection is EMPTY:
            return frozenset()
        if isinstance(collection, int):
            items = [Ev(i) for i in rel.bits(collection)]
        elif isinstance(collection, tuple):
            items = [Pair(a, b) for a, b in rel.pairs(collection)]
        else:
            items = list(collection)
        return frozenset(interp.apply(f, x) for x in items)

    return over


def _cross(interp, sets):
    """Every union of one member of each set (cross.cat's ``cross``)."""
    results = [rel.empty(interp.n)]
    for options in interp._members(sets):
        members = interp._members(options)
        results = [rel.union(acc, interp.as_rel(m)) for acc in results for m in members]
    return frozenset(results)


def _different_values(interp, r):
    values = interp.base["<values>"]
    return tuple(
        sum(1 << j for j in rel.bits(row) if values[i] != values[j]) for i, row in enumerate(interp.as_rel(r))
    ) if r is not EMPTY else EMPTY


BUILTINS = {
    "domain": _domain,
    "range": _range,
    "fencerel": _fencerel,
    "singlestep": _singlestep,
    "map": _map,
    "cross": _cross,
    "different-values": _different_values,
}
