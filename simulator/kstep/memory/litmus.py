"""The kernel's C litmus format, parsed into per-thread programs.

A litmus test (``tools/memory-model/litmus-tests/*.litmus`` in the kernel tree) is::

    C NAME
    (* ... Result: Never ... *)
    { int x = 1; int *p = &x; atomic_t v = ATOMIC_INIT(1); }
    P0(int *x, int *y) { WRITE_ONCE(*x, 1); r0 = READ_ONCE(*y); ... }
    ...
    locations [x; 0:r1]
    filter (1:r0=0)
    exists (0:r0=0 /\\ 1:r0=0)          (or ~exists, or forall)

:func:`parse` turns the text into a :class:`Litmus`: the initial values, each thread's body
as a small statement tree (see the ``Stmt``/``Expr`` shapes below), and the clauses as
condition trees. Everything outside the supported subset (:data:`PRIMITIVES`, ``if``/``else``,
plain ``*p`` accesses, ``(void)`` casts, ``==``/``!=``/``<``/``>``/``+``/``-``/``&&``/``||``/``!``)
is a :class:`~kstep.errors.UserError` naming the construct and its line.  Which events a
primitive becomes is not decided here but in :mod:`kstep.memory.executions`.

Statement shapes (tuples, cheap to walk many times):
``("decl", reg, expr | None)``, ``("assign", reg, expr)``, ``("store", addr, expr, line)``
(a plain ``*addr = expr``), ``("do", expr)``, ``("if", expr, then, else)``.
Expression shapes: ``("const", v)``, ``("reg", name)``, ``("loc", name)`` (a parameter: the
address of a shared location), ``("load", addr, line)`` (a plain ``*addr`` read),
``("call", name, args, line)``, ``("op", op, a, b)``, ``("not", a)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kstep.errors import UserError, shorten

# Every kernel primitive the parser accepts, with its number of arguments. The event
# shapes come from tools/memory-model/linux-kernel.def and
# tools/memory-model/Documentation/herd-representation.txt (see executions.py).
_ORDERS = ("", "_relaxed", "_acquire", "_release")
PRIMITIVES: dict[str, int] = {
    "READ_ONCE": 1, "WRITE_ONCE": 2, "smp_load_acquire": 1, "smp_store_release": 2,
    "rcu_dereference": 1, "rcu_assign_pointer": 2, "smp_store_mb": 2,
    "smp_mb": 0, "smp_rmb": 0, "smp_wmb": 0, "barrier": 0,
    "smp_mb__before_atomic": 0, "smp_mb__after_atomic": 0, "smp_mb__after_spinlock": 0,
    "smp_mb__after_unlock_lock": 0,
    "spin_lock": 1, "spin_unlock": 1, "spin_trylock": 1, "spin_is_locked": 1,
    "rcu_read_lock": 0, "rcu_read_unlock": 0, "synchronize_rcu": 0,
    "synchronize_rcu_expedited": 0,
    "atomic_read": 1, "atomic_set": 2, "atomic_read_acquire": 1, "atomic_set_release": 2,
    "atomic_add": 2, "atomic_sub": 2, "atomic_inc": 1, "atomic_dec": 1,
    "atomic_add_unless": 3, "atomic_sub_and_test": 2, "atomic_dec_and_test": 1,
    "atomic_inc_and_test": 1, "atomic_add_negative": 2,
    **{f"{x}{o}": 2 for x in ("xchg", "atomic_xchg") for o in _ORDERS},
    **{f"{x}{o}": 3 for x in ("cmpxchg", "atomic_cmpxchg") for o in _ORDERS},
    **{f"atomic_{op}_return{o}": 2 for op in ("add", "sub") for o in _ORDERS},
    **{f"atomic_{op}_return{o}": 1 for op in ("inc", "dec") for o in _ORDERS},
    **{f"atomic_fetch_{op}{o}": 2 for op in ("add", "sub") for o in _ORDERS},
    **{f"atomic_fetch_{op}{o}": 1 for op in ("inc", "dec") for o in _ORDERS},
}
# Primitives whose first argument is the accessed object itself ("READ_ONCE(*x)"), not
# a pointer to it ("smp_load_acquire(x)"): linux-kernel.def writes X for the former and
# *X for the latter.
LVALUE_FIRST = frozenset({"READ_ONCE", "WRITE_ONCE", "rcu_dereference", "rcu_assign_pointer"})
TYPES = frozenset({"int", "intptr_t", "atomic_t", "spinlock_t", "unsigned", "long", "u32", "u64"})
# How deep a body or a clause may nest: parentheses, blocks, ifs, unary operators and the binary
# operators of one expression each count one level. The kernel's tests need a handful; every later
# stage walks the trees recursively, so a deeper file is refused here, not by Python's stack.
MAX_DEPTH = 40


@dataclass(frozen=True)
class Thread:
    index: int
    params: tuple[str, ...]
    body: tuple
    line: int


@dataclass(frozen=True)
class Litmus:
    """One parsed litmus test."""

    name: str
    expected: str | None  # the header comment's "Result:" word (Never, Sometimes, DEADLOCK, ...)
    init: dict[str, object]  # location -> initial value (int, or a location name for &x)
    reg_init: dict[tuple[int, str], object]
    threads: tuple[Thread, ...]
    quantifier: str  # "exists", "~exists" or "forall"
    condition: tuple
    filter: tuple | None
    locations: tuple[str, ...]

    def shared(self) -> tuple[str, ...]:
        """Every shared location: the initialised ones and every thread parameter, sorted."""
        names = set(self.init)
        for t in self.threads:
            names.update(t.params)
        return tuple(sorted(names))


_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+)|(?P<nl>\n)|(?P<comment>\(\*(?=\s).*?\*\)|/\*.*?\*/|//[^\n]*)
    |(?P<num>-?\d+)|(?P<id>[A-Za-z_][A-Za-z_0-9]*)
    |(?P<op>/\\|\\/|==|!=|<=|>=|&&|\|\||[-+(){}\[\];,=*&!~<>:])""",
    re.VERBOSE | re.DOTALL,
)
# "(* ... *)" comments follow the clauses; in C bodies "(*p)" is a dereference, so a
# comment's "(*" must be followed by white space, as the kernel's tests write them.


def _tokens(text: str, first_line: int) -> list[tuple[str, str, int]]:
    """(kind, text, line) of each token; comments dropped, lines counted."""
    out, line, pos = [], first_line, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise UserError(f"line {line}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind in ("num", "id", "op"):
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    out.append(("end", "", line))
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.toks, self.i = tokens, 0
        self.depth = 0  # nesting of the tree being built (MAX_DEPTH)

    # -- plumbing
    def peek(self, ahead: int = 0) -> tuple[str, str, int]:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def line(self) -> int:
        return self.peek()[2]

    def next(self) -> tuple[str, str, int]:
        tok = self.peek()
        self.i += 1
        return tok

    def at(self, text: str) -> bool:
        return self.peek()[1] == text and self.peek()[0] != "end"

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        kind, got, line = self.next()
        if got != text or kind == "end":
            raise UserError(f"line {line}: expected {text!r}, found {got or 'end of file'!r}")

    def deeper(self, line: int) -> None:
        """One more level of nesting; the caller puts ``depth`` back when its tree is built."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise UserError(f"line {line}: nested more than {MAX_DEPTH} levels deep (parentheses, blocks, "
                            "operators of one expression); kstep refuses deeper ones")

    def ident(self) -> str:
        kind, got, line = self.next()
        if kind != "id":
            raise UserError(f"line {line}: expected a name, found {got or 'end of file'!r}")
        return got

    # -- initial state
    def init_block(self) -> tuple[dict, dict]:
        init: dict[str, object] = {}
        regs: dict[tuple[int, str], object] = {}
        self.expect("{")
        while not self.accept("}"):
            if self.accept(";"):
                continue
            line = self.line()
            while self.peek()[1] in TYPES:
                self.next()
            while self.accept("*"):
                pass
            if self.peek()[0] == "num" and self.peek(1)[1] == ":":
                tid = int(self.next()[1])
                self.expect(":")
                name = self.ident()
                self.expect("=")
                regs[(tid, name)] = self.init_value()
                continue
            name = self.ident()
            value: object = 0
            if self.accept("="):
                value = self.init_value()
            if name in init:
                raise UserError(f"line {line}: {name} is initialised twice")
            init[name] = value
        return init, regs

    def init_value(self) -> object:
        kind, text, line = self.next()
        if kind == "num":
            return int(text)
        if text == "&":
            return self.ident()
        if text == "ATOMIC_INIT":
            self.expect("(")
            value = self.init_value()
            self.expect(")")
            return value
        if kind == "id":
            return text
        raise UserError(f"line {line}: unsupported initial value {text!r}")

    # -- threads
    def thread(self) -> Thread:
        kind, text, line = self.next()
        m = re.fullmatch(r"P(\d+)", text)
        if kind != "id" or not m:
            raise UserError(f"line {line}: expected a thread P<n>(...), found {text!r}")
        params: list[str] = []
        self.expect("(")
        while not self.accept(")"):
            while self.peek()[1] in TYPES or self.at("*"):
                self.next()
            params.append(self.ident())
            self.accept(",")
        self.expect("{")
        body = self.block_rest()
        return Thread(int(m.group(1)), tuple(params), body, line)

    def block_rest(self) -> tuple:
        stmts = []
        while not self.accept("}"):
            if self.peek()[0] == "end":
                raise UserError(f"line {self.line()}: missing '}}'")
            stmts.extend(self.statement())
        return tuple(stmts)

    def statement(self) -> list:
        kind, text, line = self.peek()
        if text == ";":
            self.next()
            return []
        if text in ("{", "if"):
            saved = self.depth
            self.deeper(line)
            out = self.nested_statement()
            self.depth = saved
            return out
        if text in ("while", "for", "do", "goto", "return", "switch"):
            raise UserError(f"line {line}: unsupported construct {text!r} (litmus bodies are loop-free)")
        if text in TYPES:
            while self.peek()[1] in TYPES or self.at("*"):
                self.next()
            out = []
            while True:
                while self.accept("*"):
                    pass
                reg = self.ident()
                out.append(("decl", reg, self.expr() if self.accept("=") else None))
                if not self.accept(","):
                    break
            self.expect(";")
            return out
        if text == "*":
            self.next()
            addr = self.unary()
            self.expect("=")
            value = self.expr()
            self.expect(";")
            return [("store", addr, value, line)]
        if kind == "id" and self.peek(1)[1] == "=" and text not in PRIMITIVES:
            self.next()
            self.next()
            value = self.expr()
            self.expect(";")
            return [("assign", text, value, line)]
        value = self.expr()
        self.expect(";")
        return [("do", value)]

    def nested_statement(self) -> list:
        """A block or an if statement (one level deeper)."""
        if self.accept("{"):
            return list(self.block_rest())
        self.expect("if")
        self.expect("(")
        cond = self.expr()
        self.expect(")")
        then = tuple(self.statement())
        other = tuple(self.statement()) if self.accept("else") else ()
        return [("if", cond, then, other)]

    # -- expressions, loosest first
    _BINARY = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"))

    def expr(self, level: int = 0) -> tuple:
        if level == len(self._BINARY):
            return self.unary()
        saved = self.depth
        left = self.expr(level + 1)
        while self.peek()[1] in self._BINARY[level] and self.peek()[0] == "op":
            _, op, line = self.next()
            self.deeper(line)
            left = ("op", op, left, self.expr(level + 1))
        self.depth = saved
        return left

    def unary(self) -> tuple:
        kind, text, line = self.peek()
        if text in ("!", "-", "*", "(") and kind == "op":
            saved = self.depth
            self.deeper(line)
            out = self.prefixed()
            self.depth = saved
            return out
        self.next()
        if kind == "num":
            return ("const", int(text))
        if text == "&":
            raise UserError(f"line {line}: unsupported construct '&' (take addresses in the initial state)")
        if kind == "id":
            if self.accept("("):
                return self.call(text, line)
            return ("name", text, line)
        raise UserError(f"line {line}: unexpected {text or 'end of file'!r}")

    def prefixed(self) -> tuple:
        """``!a``, ``-a``, ``*a``, ``(void)a`` or ``(a)``: one level deeper than what precedes it."""
        _, text, line = self.next()
        if text == "!":
            return ("not", self.unary())
        if text == "-":
            return ("op", "-", ("const", 0), self.unary())
        if text == "*":
            return ("load", self.unary(), line)
        if self.peek()[1] == "void" and self.peek(1)[1] == ")":
            self.next()
            self.next()
            return self.unary()
        inner = self.expr()
        self.expect(")")
        return inner

    def call(self, name: str, line: int) -> tuple:
        if name not in PRIMITIVES:
            raise UserError(f"line {line}: unsupported construct {name}() (not a kernel primitive kstep models)")
        args = []
        while not self.accept(")"):
            args.append(self.expr())
            if not self.at(")"):
                self.expect(",")
        if len(args) != PRIMITIVES[name]:
            raise UserError(f"line {line}: {name}() takes {PRIMITIVES[name]} arguments, not {len(args)}")
        if name in LVALUE_FIRST:
            if args[0][0] != "load":
                raise UserError(f"line {line}: {name}() needs an object such as *x as its first argument")
            args[0] = args[0][1]
        return ("call", name, tuple(args), line)

    # -- clauses
    def condition(self) -> tuple:
        saved = self.depth
        left = self.conjunction()
        while self.at("\\/"):
            self.deeper(self.next()[2])
            left = ("or", left, self.conjunction())
        self.depth = saved
        return left

    def conjunction(self) -> tuple:
        saved = self.depth
        left = self.atom()
        while self.at("/\\"):
            self.deeper(self.next()[2])
            left = ("and", left, self.atom())
        self.depth = saved
        return left

    def atom(self) -> tuple:
        if self.at("~") or self.at("("):
            saved = self.depth
            _, text, line = self.next()
            self.deeper(line)
            if text == "~":
                inner = ("not", self.atom())
            else:
                inner = self.condition()
                self.expect(")")
            self.depth = saved
            return inner
        if self.accept("true"):
            return ("true",)
        if self.accept("false"):
            return ("not", ("true",))
        where = self.place()
        line = self.line()
        if not self.accept("="):
            op = self.peek()[1]
            raise UserError(f"line {line}: unsupported comparison {op!r} in a condition (only '=')")
        return ("eq", where, self.init_value())

    def place(self) -> tuple:
        """A register ``("reg", tid, name)`` or a location ``("mem", name)``."""
        self.accept("*")
        if self.peek()[0] == "num" and self.peek(1)[1] == ":":
            tid = int(self.next()[1])
            self.expect(":")
            return ("reg", tid, self.ident())
        return ("mem", self.ident())


def _resolve(stmts: tuple, params: frozenset[str], regs: set[str]) -> tuple:
    """Tell registers from parameters (shared locations) in a thread body."""

    def expr(e):
        tag = e[0]
        if tag == "name":
            if e[1] in regs:
                return ("reg", e[1])
            if e[1] in params:
                return ("loc", e[1])
            raise UserError(f"line {e[2]}: {e[1]} is neither a parameter nor a declared register")
        if tag == "load":
            return ("load", expr(e[1]), e[2])
        if tag == "call":
            return ("call", e[1], tuple(expr(a) for a in e[2]), e[3])
        if tag == "op":
            return ("op", e[1], expr(e[2]), expr(e[3]))
        if tag == "not":
            return ("not", expr(e[1]))
        return e

    out: list[tuple] = []
    for s in stmts:
        tag = s[0]
        if tag == "decl":
            value = expr(s[2]) if s[2] is not None else None
            regs.add(s[1])
            out.append(("decl", s[1], value))
        elif tag == "assign":
            if s[1] not in regs:
                raise UserError(f"line {s[3]}: assignment to {s[1]}, which is not a declared register")
            out.append(("assign", s[1], expr(s[2])))
        elif tag == "store":
            out.append(("store", expr(s[1]), expr(s[2]), s[3]))
        elif tag == "do":
            out.append(("do", expr(s[1])))
        else:
            out.append(("if", expr(s[1]), _resolve(s[2], params, set(regs)), _resolve(s[3], params, set(regs))))
    return tuple(out)


_RESULT = re.compile(r"Result:\s*(\w+)")


def parse(text: str, source: str = "litmus test") -> Litmus:
    """Parse one C litmus test; any problem is a one-line UserError naming the line."""
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise UserError(f"{source}: empty file")
    head = lines[first].split()
    if not head or head[0] != "C" or len(head) < 2:
        word = shorten(lines[first].strip(), 60)
        raise UserError(f"{source}: line {first + 1}: expected 'C NAME' (a C litmus test), found {word!r}")
    brace = next((i for i in range(first + 1, len(lines)) if lines[i].lstrip().startswith("{")), None)
    if brace is None:
        raise UserError(f"{source}: no initial-state block '{{...}}'")
    header = "\n".join(lines[first + 1 : brace])
    result = _RESULT.search(header)
    try:
        p = _Parser(_tokens("\n".join(lines[brace:]), brace + 1))
        init, reg_init = p.init_block()
        threads: list[Thread] = []
        while re.fullmatch(r"P\d+", p.peek()[1]):
            threads.append(p.thread())
        if not threads:
            raise UserError(f"line {p.line()}: expected a thread P0(...)")
        for want, t in enumerate(threads):
            if t.index != want:
                raise UserError(f"line {t.line}: thread P{t.index} where P{want} was expected")
        quantifier, condition, filt, locations = None, None, None, []
        while p.peek()[0] != "end":
            _, word, line = p.next()
            if word == "locations":
                p.expect("[")
                while not p.accept("]"):
                    where = p.place()
                    locations.append(f"{where[1]}:{where[2]}" if where[0] == "reg" else where[1])
                    p.accept(";")
            elif word == "filter":
                filt = p.condition()
            elif word in ("exists", "forall") or (word == "~" and p.accept("exists")):
                if quantifier is not None:
                    raise UserError(f"line {line}: a second final condition")
                quantifier = "~exists" if word == "~" else word
                condition = p.condition()
            else:
                raise UserError(f"line {line}: unsupported clause {word!r} "
                                "(exists, ~exists, forall, filter, locations)")
        if quantifier is None or condition is None:
            raise UserError(f"line {p.line()}: no final condition (exists, ~exists or forall)")
        threads = [
            Thread(t.index, t.params, _resolve(t.body, frozenset(t.params), set()), t.line) for t in threads
        ]
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None
    for t in threads:
        for param in t.params:
            init.setdefault(param, 0)
    return Litmus(
        name=head[1],
        expected=result.group(1) if result else None,
        init=init,
        reg_init=reg_init,
        threads=tuple(threads),
        quantifier=quantifier,
        condition=condition,
        filter=filt,
        locations=tuple(locations),
    )
