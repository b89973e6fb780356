"""Candidate executions of a litmus test: events, program order, dependencies, rf and co.

This is the part herd7's C front end plays for the LKMM, written down here:

* **Events** (tools/memory-model/Documentation/herd-representation.txt, linux-kernel.def):
  ``READ_ONCE``/``rcu_dereference``/``atomic_read`` are ``R[once]``, ``WRITE_ONCE``/``atomic_set``
  ``W[once]``, ``smp_load_acquire`` ``R[acquire]``, ``smp_store_release``/``rcu_assign_pointer``
  ``W[release]``, a plain ``*p`` access an untagged R or W, each fence macro one ``F`` with
  its tag. A value-returning RMW with no suffix is ``F[mb] R*[once] W*[once] F[mb]``;
  ``_relaxed`` is ``R*[once] W*[once]``, ``_acquire`` ``R*[acquire] W*[once]``, ``_release``
  ``R*[once] W*[release]``; a non-returning one (``atomic_inc``) ``R*[noreturn] W*[once]``.
  A conditional RMW (``cmpxchg``, ``atomic_add_unless``) that fails is one ``R*[once]``
  with no write and no fence: it stays in the RMW class (the star), which is what lets
  ``smp_mb__after_atomic()`` order it (Documentation/litmus-tests/atomic/cmpxchg-fail-ordered-*).
  ``spin_lock`` is ``LKR`` then ``LKW``, ``spin_unlock`` ``UL``, a failing ``spin_trylock``
  ``LF``, ``spin_is_locked`` ``RL`` (true) or ``RU`` (false). Every location has an initial
  write (``IW``).
* **Dependencies** (explanation.txt, "dependency relations"): values carry the set of reads
  they were computed from, through registers only; ``addr`` goes from those reads to an
  access whose address they gave, ``data`` to a write whose value they gave, ``ctrl`` to
  every event syntactically inside an arm of an ``if`` whose condition they gave. Through
  plain memory (``*z1 = a; *z2 = *z1``) dependencies are carried by linux-kernel.bell's own
  ``carry-dep``, not here.
* **Values**: a read may return any value some write to its location can produce. The set is
  found by iterating every thread's paths to a fixed point; each thread then runs once per
  choice of its reads' values, giving its possible *paths* (event sequences).
* **rf**: each plain/ONCE/acquire/RMW read reads from a write of the same location and
  value that is not after it in its own thread. Lock events get their rf from lock.cat.
* **co**: :func:`coherence_orders`, herd's ``cos-opt.cat`` in kstep's code: per location, every
  total order of the writes extending the observed order (``cobase``), so uniproc violations
  are cut before any model runs.

Limits: a test with more than :data:`MAX_EVENTS` events in one candidate, more than
:data:`MAX_VALUES` values per location, more than :data:`MAX_PATHS` runs of one thread,
more than :data:`MAX_CANDIDATES` combinations of runs or rf choices, or more than
:data:`MAX_EXECUTIONS` candidate executions (rf choices times coherence orders, the latter
counted by :func:`coherence_bound`) is refused with a UserError that says so, before any
model runs.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field

from kstep.errors import UserError
from kstep.memory import relations as rel
from kstep.memory.litmus import Litmus

MAX_EVENTS = 40
MAX_VALUES = 16
MAX_CANDIDATES = 100_000  # thread-run combinations, and (combination, rf) pairs in all
MAX_PATHS = 4096  # runs of one thread (one per choice of its reads' values)
# (candidate, rf, co) triples: each is one check of a model, and the coherence orders alone grow as
# the factorial of the writes to a location (ten threads writing x: 3.6 million orders)
MAX_EXECUTIONS = 200_000

FENCES = {
    "smp_mb": "mb", "smp_rmb": "rmb", "smp_wmb": "wmb", "barrier": "barrier",
    "smp_mb__before_atomic": "before-atomic", "smp_mb__after_atomic": "after-atomic",
    "smp_mb__after_spinlock": "after-spinlock", "smp_mb__after_unlock_lock": "after-unlock-lock",
    "rcu_read_lock": "rcu-lock", "rcu_read_unlock": "rcu-unlock",
    "synchronize_rcu": "sync-rcu", "synchronize_rcu_expedited": "sync-rcu",
}
LOADS = {"READ_ONCE": "once", "rcu_dereference": "once", "atomic_read": "once",
         "smp_load_acquire": "acquire", "atomic_read_acquire": "acquire"}
STORES = {"WRITE_ONCE": "once", "atomic_set": "once", "smp_store_release": "release",
          "rcu_assign_pointer": "release", "atomic_set_release": "release"}
LOCK_KINDS = frozenset({"LKR", "LKW", "UL", "LF", "RL", "RU"})


@dataclass(frozen=True)
class Event:
    """One event: ``kind`` is R, W, F or a lock event class (LKR, LKW, UL, LF, RL, RU)."""

    id: int
    thread: int  # -1 for an initial write
    kind: str
    loc: str | None
    value: object
    tags: frozenset[str]
    rmw: bool = False  # part of an RMW instruction, successful or not (herd's R*/W*)
    primitive: str = ""
    line: int = 0

    def label(self) -> str:
        tag = "".join(sorted(self.tags))
        where = f"{self.loc}={self.value}" if self.loc is not None else ""
        star = "*" if self.rmw else ""
        return f"{self.kind}{star}[{tag}] {where}".rstrip() if tag else f"{self.kind}{star} {where}".rstrip()


@dataclass(frozen=True)
class Path:
    """One run of one thread: its events and the relations among them (thread-local indices)."""

    events: tuple[tuple, ...]  # (kind, loc, value, tags, rmw, primitive, line)
    rmw: tuple[tuple[int, int], ...]
    addr: frozenset[tuple[int, int]]
    data: frozenset[tuple[int, int]]
    ctrl: frozenset[tuple[int, int]]
    regs: tuple[tuple[str, object], ...]


class _Need(Exception):
    """A read needs one more value choice (raised to the path enumerator)."""

    def __init__(self, loc: str | tuple[str, str]) -> None:
        self.loc = loc


class _Run:
    """One deterministic run of a thread body given the values its reads return, in order."""

    def __init__(self, litmus: Litmus, tid: int, choices: list) -> None:
        self.choices, self.next = choices, 0
        self.events: list[tuple] = []
        self.rmw: list[tuple[int, int]] = []
        self.addr: set = set()
        self.data: set = set()
        self.ctrl: set = set()
        self.regs: dict[str, tuple] = {
            name: (v, frozenset()) for (t, name), v in litmus.reg_init.items() if t == tid
        }
        self.guard: frozenset[int] = frozenset()
        self.shared = set(litmus.shared())

    # An event; returns its index. ``deps`` gives addr edges, ``value_deps`` data edges.
    def emit(self, kind, loc, value, tags, addr_deps=frozenset(), data_deps=frozenset(),
             rmw=False, primitive="", line=0) -> int:
        i = len(self.events)
        self.events.append((kind, loc, value, frozenset(tags), rmw, primitive, line))
        self.addr.update((d, i) for d in addr_deps)
        self.data.update((d, i) for d in data_deps)
        self.ctrl.update((d, i) for d in self.guard)
        return i

    def choose(self, loc: str | tuple[str, str]):
        if self.next == len(self.choices):
            raise _Need(loc)
        value = self.choices[self.next]
        self.next += 1
        return value

    def location(self, addr: tuple, line: int) -> str:
        loc = addr[0]
        if not isinstance(loc, str) or loc not in self.shared:
            raise _Dead()
        return loc

    def read(self, addr, tags, primitive, line, rmw=False) -> tuple[int, object, str]:
        loc = self.location(addr, line)
        value = self.choose(loc)
        i = self.emit("R", loc, value, tags, addr[1], rmw=rmw, primitive=primitive, line=line)
        return i, value, loc

    # -- statements
    def block(self, stmts) -> None:
        for s in stmts:
            tag = s[0]
            if tag == "decl":
                self.regs[s[1]] = self.eval(s[2]) if s[2] is not None else (0, frozenset())
            elif tag == "assign":
                self.regs[s[1]] = self.eval(s[2])
            elif tag == "store":
                addr, value = self.eval(s[1]), self.eval(s[2])
                loc = self.location(addr, s[3])
                self.emit("W", loc, value[0], (), addr[1], value[1], primitive="*p =", line=s[3])
            elif tag == "do":
                self.eval(s[1])
            else:
                cond = self.eval(s[1])
                saved = self.guard
                self.guard = saved | cond[1]
                self.block(s[2] if _true(cond[0]) else s[3])
                self.guard = saved

    # -- expressions: (value, the reads it depends on)
    def eval(self, e) -> tuple:
        tag = e[0]
        if tag == "const":
            return e[1], frozenset()
        if tag == "reg":
            return self.regs.get(e[1], (0, frozenset()))
        if tag == "loc":
            return e[1], frozenset()
        if tag == "load":
            i, value, _ = self.read(self.eval(e[1]), (), "*p", e[2])
            return value, frozenset({i})
        if tag == "not":
            v, d = self.eval(e[1])
            return int(not _true(v)), d
        if tag == "op":
            (a, da), (b, db) = self.eval(e[2]), self.eval(e[3])
            return _binary(e[1], a, b), da | db
        return self.call(e[1], [self.eval(a) for a in e[2]], e[3])

    def call(self, name: str, args: list, line: int) -> tuple:
        if name in FENCES:
            self.emit("F", None, None, {FENCES[name]}, primitive=name, line=line)
            return 0, frozenset()
        if name in LOADS:
            i, value, _ = self.read(args[0], {LOADS[name]}, name, line)
            return value, frozenset({i})
        if name in STORES or name == "smp_store_mb":
            loc = self.location(args[0], line)
            self.emit("W", loc, args[1][0], {STORES.get(name, "once")}, args[0][1], args[1][1],
                      primitive=name, line=line)
            if name == "smp_store_mb":
                self.emit("F", None, None, {"mb"}, primitive=name, line=line)
            return 0, frozenset()
        if name.startswith("spin_"):
            return self.lock_op(name, args[0], line)
        return self.atomic(name, args, line)

    def lock_op(self, name, addr, line) -> tuple:
        loc = self.location(addr, line)
        if name == "spin_unlock":
            self.emit("UL", loc, 0, (), addr[1], primitive=name, line=line)
            return 0, frozenset()
        if name == "spin_is_locked":
            locked = self.choose(("is_locked", loc))
            self.emit("RL" if locked else "RU", loc, int(locked), (), addr[1], primitive=name, line=line)
            return int(locked), frozenset()
        if name == "spin_trylock" and not self.choose(("trylock", loc)):
            self.emit("LF", loc, 1, (), addr[1], primitive=name, line=line)
            return 0, frozenset()
        # lock.cat pairs LKR with LKW itself (lk-rmw); the front end gives no rmw edge
        self.emit("LKR", loc, 0, (), addr[1], primitive=name, line=line)
        self.emit("LKW", loc, 1, (), addr[1], primitive=name, line=line)
        return 1, frozenset()

    def atomic(self, name: str, args: list, line: int) -> tuple:
        """The RMW primitives: xchg, cmpxchg, atomic_* (herd-representation.txt's table)."""
        base = name
        order = "mb"
        for suffix, o in (("_relaxed", "once"), ("_acquire", "acquire"), ("_release", "release")):
            if name.endswith(suffix):
                base, order = name[: -len(suffix)], o
        base = base.removeprefix("atomic_")
        if base in ("xchg", "cmpxchg") or base == "add_unless":
            addr, operands = args[0], args[1:]
        elif base in ("inc", "dec", "inc_return", "dec_return", "fetch_inc", "fetch_dec",
                      "inc_and_test", "dec_and_test"):
            addr, operands = args[0], [(1, frozenset())]
        else:  # add, sub, *_return, fetch_*, sub_and_test, add_negative: (V, X)
            addr, operands = args[1], [args[0]]
        noreturn = base in ("add", "sub", "inc", "dec")
        if noreturn:
            order = "noreturn"
        loc = self.location(addr, line)
        value = self.choose(loc)
        if base == "cmpxchg":
            new = operands[1][0] if value == operands[0][0] else None
            deps = operands[1][1]
        elif base == "add_unless":
            new = _binary("+", value, operands[0][0]) if value != operands[1][0] else None
            deps = operands[0][1]
        elif base == "xchg":
            new, deps = operands[0]
        else:
            op = "-" if ("sub" in base or "dec" in base) else "+"
            new, deps = _binary(op, value, operands[0][0]), operands[0][1]
        if new is None:  # a failed conditional RMW: R*[once] alone, no ordering
            r = self.emit("R", loc, value, {"once"}, addr[1], rmw=True, primitive=name, line=line)
            return (0 if base == "add_unless" else value), frozenset({r})
        full = order == "mb"
        if full:
            self.emit("F", None, None, {"mb"}, primitive=name, line=line)
        rtag = "noreturn" if noreturn else ("acquire" if order == "acquire" else "once")
        wtag = "release" if order == "release" else "once"
        r = self.emit("R", loc, value, {rtag}, addr[1], rmw=True, primitive=name, line=line)
        w = self.emit("W", loc, new, {wtag}, addr[1], deps, rmw=True, primitive=name, line=line)
        self.rmw.append((r, w))
        if full:
            self.emit("F", None, None, {"mb"}, primitive=name, line=line)
        if base == "add_unless":
            return 1, frozenset({r})
        if base.endswith("and_test"):
            return int(new == 0), frozenset({r})
        if base == "add_negative":
            return int(isinstance(new, int) and new < 0), frozenset({r})
        return (new if base.endswith("_return") else value), frozenset({r})


class _Dead(Exception):
    """A path dereferences something that is not a location: herd discards such runs."""


def _true(v) -> bool:
    return v != 0


def _binary(op: str, a, b):
    if op == "==":
        return int(a == b)
    if op == "!=":
        return int(a != b)
    if op in ("&&", "||"):
        return int(_true(a) and _true(b)) if op == "&&" else int(_true(a) or _true(b))
    if not (isinstance(a, int) and isinstance(b, int)):
        raise _Dead()
    return {"+": a + b, "-": a - b, "<": int(a < b), ">": int(a > b),
            "<=": int(a <= b), ">=": int(a >= b)}[op]


def thread_paths(litmus: Litmus, tid: int, domains: dict[str, set]) -> list[Path]:
    """Every run of thread ``tid`` when each read may return any value of its domain."""
    body = litmus.threads[tid].body
    paths: list[Path] = []
    stack: list[list] = [[]]
    while stack:
        choices = stack.pop()
        run = _Run(litmus, tid, choices)
        try:
            run.block(body)
        except _Need as need:
            if len(paths) + len(stack) > MAX_PATHS:
                raise UserError(
                    f"{litmus.name}: thread P{tid} has more than {MAX_PATHS} runs (one per "
                    "value each of its reads may return); kstep refuses tests that large"
                ) from None
            options = sorted(domains.get(need.loc, {0, 1}) if isinstance(need.loc, str) else (0, 1), key=repr)
            stack.extend(choices + [v] for v in reversed(options))
            continue
        except _Dead:
            continue
        paths.append(Path(tuple(run.events), tuple(run.rmw), frozenset(run.addr),
                          frozenset(run.data), frozenset(run.ctrl),
                          tuple(sorted((k, v[0]) for k, v in run.regs.items()))))
    return paths


def _write_sites(node) -> int:
    """How many writes a thread body can make at most: its write statements and calls.

    Litmus bodies have no loops, so each runs at most once.
    """
    if not isinstance(node, tuple) or not node:
        return 0
    if not isinstance(node[0], str):  # a statement list
        return sum(_write_sites(part) for part in node)
    here = int(node[0] == "store" or (
        node[0] == "call" and node[1] not in LOADS and node[1] not in FENCES
        and not node[1].startswith("spin_")
    ))
    return here + sum(_write_sites(part) for part in node[1:])


def value_domains(litmus: Litmus) -> dict[str, set]:
    """Per location, every value a read of it may return (:func:`thread_runs`)."""
    return thread_runs(litmus)[0]


def thread_runs(litmus: Litmus) -> tuple[dict[str, set], list[list[Path]]]:
    """Per location, every value a read of it may return; and each thread's runs when its reads may
    return those.

    A value reaches a read through a chain of writes, each reading the one before (an
    increment of an increment ...), and no chain is longer than the write sites of the
    whole test; so the rounds stop there even where the values would grow for ever. The round
    that finds no new value ran the threads under the final domains: its runs are the answer.
    """
    domains = {loc: {litmus.init.get(loc, 0)} for loc in litmus.shared()}
    longest = sum(_write_sites(t.body) for t in litmus.threads)
    threads = range(len(litmus.threads))
    for _ in range(longest):  # round k finds the values at the end of chains of k writes
        runs = [thread_paths(litmus, tid, domains) for tid in threads]
        found = [
            (loc, value)
            for paths in runs
            for path in paths
            for kind, loc, value, *_ in path.events
            if kind == "W" and value not in domains[loc]
        ]
        if not found:
            return domains, runs
        for loc, value in found:
            domains[loc].add(value)
            if len(domains[loc]) > MAX_VALUES:
                raise UserError(
                    f"{litmus.name}: location {loc} may hold more than {MAX_VALUES} "
                    "values; kstep refuses tests that large"
                )
    return domains, [thread_paths(litmus, tid, domains) for tid in threads]


@dataclass
class Candidate:
    """One choice of a path per thread, with the events numbered and the static relations."""

    litmus: Litmus
    events: tuple[Event, ...]
    paths: tuple[Path, ...]
    po: tuple[int, ...]
    addr: tuple[int, ...]
    data: tuple[int, ...]
    ctrl: tuple[int, ...]
    rmw: tuple[int, ...]
    loc: tuple[int, ...]
    ext: tuple[int, ...]
    by_loc: dict[str, list[int]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.events)

    def set_of(self, pred) -> int:
        return sum(1 << e.id for e in self.events if pred(e))


def candidates(litmus: Litmus, readable: bool = False, runs: list[list[Path]] | None = None):
    """Every combination of one path per thread, as a :class:`Candidate`, in the order of
    ``itertools.product``; with ``readable``, only those where every read has a write it may read
    from (:func:`_sources` is not None), found before the candidate is built: a test whose runs
    read many values has many combinations that no rf completes. ``runs``: :func:`thread_runs`'s,
    when the caller has them."""
    per_thread = runs if runs is not None else thread_runs(litmus)[1]
    combinations = 1
    for paths in per_thread:
        combinations *= len(paths)
    if combinations > MAX_CANDIDATES:
        raise UserError(
            f"{litmus.name}: {combinations} combinations of the threads' runs; "
            f"kstep refuses more than {MAX_CANDIDATES}"
        )
    shared = litmus.shared()
    sketches = [[(path, *_reads_and_writes(litmus, path)) for path in paths] for paths in per_thread]
    for combo in itertools.product(*sketches):
        size = sum(len(path.events) for path, _, _ in combo)
        if size > MAX_EVENTS:
            raise UserError(
                f"{litmus.name}: a candidate execution has {size} events; kstep refuses more than {MAX_EVENTS}"
            )
        if readable and not all(
            any(want in written for u, (_, _, written) in enumerate(combo) if u != t)
            for t, (_, unmet, _) in enumerate(combo) for want in unmet
        ):
            continue
        yield _candidate(litmus, shared, tuple(path for path, _, _ in combo))


def _reads_and_writes(litmus: Litmus, path: Path) -> tuple[tuple, frozenset]:
    """The (location, value) of each of the path's reads that neither the initial write nor a write
    before it in the path gives (another thread must), and of every write the path makes."""
    written: set = set()
    unmet = []
    for kind, loc, value, *_ in path.events:
        if kind == "R" and value != litmus.init.get(loc, 0) and (loc, value) not in written:
            unmet.append((loc, value))
        elif kind == "W":
            written.add((loc, value))
    return tuple(unmet), frozenset(written)


def _candidate(litmus: Litmus, shared: tuple[str, ...], combo: tuple[Path, ...]) -> Candidate:
    events: list[Event] = [
        Event(i, -1, "W", loc, litmus.init.get(loc, 0), frozenset(), primitive="init")
        for i, loc in enumerate(shared)
    ]
    po: list[tuple[int, int]] = []
    addr: list[tuple[int, int]] = []
    data: list[tuple[int, int]] = []
    ctrl: list[tuple[int, int]] = []
    rmw: list[tuple[int, int]] = []
    own_threads = []
    for tid, path in enumerate(combo):
        base = len(events)
        for k, (kind, loc, value, tags, star, primitive, line) in enumerate(path.events):
            events.append(Event(base + k, tid, kind, loc, value, tags, star, primitive, line))
        own = range(base, len(events))
        own_threads.append(sum(1 << i for i in own))
        po += [(a, b) for a in own for b in own if a < b]
        for src, dst in ((path.addr, addr), (path.data, data), (path.ctrl, ctrl)):
            dst += [(base + a, base + b) for a, b in src]
        rmw += [(base + a, base + b) for a, b in path.rmw]
    n = len(events)
    by_loc: dict[str, list[int]] = {}
    for e in events:
        if e.loc is not None:
            by_loc.setdefault(e.loc, []).append(e.id)
    loc_rows = [0] * n
    for ids in by_loc.values():
        mask = sum(1 << i for i in ids)
        for i in ids:
            loc_rows[i] = mask
    # an initial write is external to every event; a thread's event to every other thread's and the initial writes
    everything = (1 << n) - 1
    ext_rows = tuple(everything if e.thread < 0 else everything & ~own_threads[e.thread] for e in events)
    return Candidate(
        litmus, tuple(events), combo, rel.from_pairs(n, po), rel.from_pairs(n, addr),
        rel.from_pairs(n, data), rel.from_pairs(n, ctrl), rel.from_pairs(n, rmw),
        tuple(loc_rows), ext_rows, by_loc,
    )


def _sources(c: Candidate) -> list[tuple[int, list[int]]] | None:
    """Each ordinary read with the writes it may read from (None: some read has none)."""
    choices = []
    for e in c.events:
        if e.kind != "R":
            continue
        sources = [
            w.id for w in c.events
            if w.kind == "W" and w.loc == e.loc and w.value == e.value
            and not (w.thread == e.thread and c.po[e.id] >> w.id & 1)
        ]
        if not sources:
            return None
        choices.append((e.id, sources))
    return choices


def reads_from(c: Candidate):
    """Every rf for the candidate's ordinary reads (lock events excluded): a relation each."""
    choices = _sources(c)
    if choices is None:
        return
    total = math.prod(len(sources) for _, sources in choices)
    if total > MAX_CANDIDATES:
        raise UserError(
            f"{c.litmus.name}: {total} ways for its reads to read; kstep refuses more than {MAX_CANDIDATES}"
        )
    n = c.n
    for picks in itertools.product(*(s for _, s in choices)):
        rows = [0] * n
        for (r, _), w in zip(choices, picks):
            rows[w] |= 1 << r
        yield tuple(rows)


def cobase(c: Candidate, rf, writes: int, co0) -> tuple[int, ...]:
    """The coherence order forced by what the threads observe (herd's cos-opt.cat ``cobase``).

    Write-write in program order on one location; a write read by a read that is
    po-before another write; a write po-before a read that reads another write; two
    reads in program order reading different writes; plus ``co0`` (initial writes first).
    """
    n = c.n
    poloc = rel.inter(c.po, c.loc)
    wset = writes
    ww = rel.inter(poloc, rel.cartesian(n, wset, wset))
    invrf = rel.inverse(rf)
    rw = rel.seq(rf, rel.inter(poloc, rel.cartesian(n, rel.range_(rf), wset)))
    wr = rel.seq(rel.inter(poloc, rel.cartesian(n, wset, rel.range_(rf))), invrf)
    rr = rel.seq(rel.seq(rf, rel.inter(poloc, rel.cartesian(n, rel.range_(rf), rel.range_(rf)))), invrf)
    obs = rel.union(rel.union(ww, rw), rel.union(wr, rr))
    obs = tuple(row & ~(1 << i) for i, row in enumerate(obs))
    return rel.union(obs, co0)


def coherence_orders(c: Candidate, writes: int, base):
    """Every co: per location a total order of ``writes`` extending ``base`` (none if cyclic)."""
    if not rel.acyclic(base):
        return
    closure = rel.plus(base)
    per_loc = []
    for ids in c.by_loc.values():
        ws = [i for i in ids if writes >> i & 1]
        if len(ws) > 1:
            per_loc.append(list(_linearisations(ws, closure)))
    n = c.n
    for orders in itertools.product(*per_loc):
        rows = [0] * n
        for order in orders:
            later = 0
            for w in reversed(order):
                rows[w] |= later
                later |= 1 << w
        yield tuple(rows)


def _linearisations(ws: list[int], closure):
    """Total orders of ``ws`` in which no event comes after one it must precede."""
    if not ws:
        yield []
        return
    for w in ws:
        # w may go first if nothing left must come before it
        if any(closure[v] >> w & 1 for v in ws if v != w):
            continue
        rest = [v for v in ws if v != w]
        for tail in _linearisations(rest, closure):
            yield [w] + tail


def initial_co0(c: Candidate, writes: int) -> tuple[int, ...]:
    """Initial writes before every other write of their location (stdlib.cat's co0, IW part)."""
    iw = c.set_of(lambda e: e.thread < 0)
    return rel.inter(c.loc, rel.cartesian(c.n, iw, writes & ~iw))


def coherence_bound(c: Candidate) -> int:
    """At most how many coherence orders the candidate's writes have, whatever they read: per
    location, the interleavings of each thread's writes to it (program order keeps those in
    order, cobase's ``ww``; the initial write comes first)."""
    bound = 1
    for ids in c.by_loc.values():
        per_thread = Counter(c.events[i].thread for i in ids
                             if c.events[i].kind in ("W", "LKW", "UL") and c.events[i].thread >= 0)
        bound *= math.factorial(sum(per_thread.values()))
        for count in per_thread.values():
            bound //= math.factorial(count)
    return bound


def with_reads_from(litmus: Litmus):
    """Every (candidate, rf) of the test; a test with more than MAX_CANDIDATES of them, or more than
    MAX_EXECUTIONS candidate executions once the coherence orders are counted, is refused before the
    first is given."""
    pairs = executions = 0
    runs = thread_runs(litmus)[1]
    for c in candidates(litmus, readable=True, runs=runs):
        choices = _sources(c)
        if choices is None:
            continue
        rfs = math.prod(len(sources) for _, sources in choices)
        pairs += rfs
        executions += rfs * coherence_bound(c)
        if pairs > MAX_CANDIDATES:
            raise UserError(f"{litmus.name}: more than {MAX_CANDIDATES} choices of what its reads read; "
                            "kstep refuses tests that large")
        if executions > MAX_EXECUTIONS:
            raise UserError(f"{litmus.name}: more than {MAX_EXECUTIONS} candidate executions (what its reads "
                            "read, times the orders of its writes to each location); kstep refuses tests that large")
    for c in candidates(litmus, readable=True, runs=runs):
        for rf in reads_from(c):
            yield c, rf
