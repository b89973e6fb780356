"""Barrier-placement exercises: a broken litmus test, fixed at the least cost.

A student gets one of the mechanisms' broken twins (``kstep litmus --list``; the variant's
``test``) and the architectures the fix must hold on (``architectures``), and hands in
``answer.litmus``: the same program with barriers added or accesses made acquire/release.
Graded here, never trusted from the student:

- the program is the variant's own (:func:`skeleton`): the same threads, accesses, locations,
  initial values and ``exists`` clause; only ordering may change (a fence statement added or
  removed, an access's ordering flavour: ``WRITE_ONCE`` <-> ``smp_store_release``,
  ``xchg_relaxed`` <-> ``xchg_acquire``...);
- the bad outcome is forbidden by the x86-TSO model and the model of every required architecture;
- its cost, by the exercise's committed table (``data/costs.toml``: what each primitive compiles to
  on each architecture, as ``arch/*/include/asm/barrier.h`` and ``cmpxchg.h`` of 6.12 define it),
  summed over x86 and the required architectures, is the least any fix reaches
  (:func:`least_cost`: a search over every placement, cheapest first).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import UserError
from ..memory import arm64, bundled, power, tso
from ..memory.litmus import PRIMITIVES, Litmus, parse
from ..memory.verdict import check
from .harness import Fail

ANSWER = "answer.litmus"
MODELS = {"x86": tso, "arm64": arm64, "power": power}
FENCES = ("smp_rmb", "smp_wmb", "smp_mb", "smp_mb__before_atomic", "smp_mb__after_atomic")
# a fence statement changes ordering only: a student may add or drop these (barrier() orders the
# compiler alone, so it is free and counts for nothing)
DROPPED = frozenset(FENCES + ("barrier",))
# The access each ordered form performs: the program a fix must keep (smp_store_mb is WRITE_ONCE
# followed by smp_mb, as include/asm-generic/barrier.h defines it).
ACCESS = {"smp_store_release": "WRITE_ONCE", "rcu_assign_pointer": "WRITE_ONCE", "smp_store_mb": "WRITE_ONCE",
          "smp_load_acquire": "READ_ONCE", "rcu_dereference": "READ_ONCE"}
ORDERS = ("_relaxed", "_acquire", "_release")
# value-returning atomics with no suffix are fully ordered (Documentation/atomic_t.txt)
FULL_RMW = ("xchg", "cmpxchg", "atomic_xchg", "atomic_cmpxchg", "atomic_add_unless", "atomic_sub_and_test",
            "atomic_dec_and_test", "atomic_inc_and_test", "atomic_add_negative")
STRONGER = {"WRITE_ONCE": ("smp_store_release",), "READ_ONCE": ("smp_load_acquire",)}
MAX_EDITS = 4  # the search stops here: no bundled twin needs more than two changes


def _rmw(name: str) -> tuple[str, str] | None:
    """(the RMW's base name, its ordering key in the cost table) for a value-returning atomic."""
    base = next((name.removesuffix(o) for o in ORDERS if name.endswith(o)), name)
    returning = base.startswith("atomic_fetch_") or (base.startswith("atomic_") and base.endswith("_return"))
    if base in FULL_RMW or returning:
        return base, "rmw" + name[len(base):]
    return None


def access(name: str) -> str:
    """The access a primitive performs, whatever its ordering."""
    rmw = _rmw(name)
    return rmw[0] if rmw else ACCESS.get(name, name)


def load_costs(path: Path) -> dict:
    """The cost table: primitive -> {architecture: (cost, instruction)}; a mistake is one line."""
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"{path}: cannot read the cost table: {e}") from None
    table = {}
    for prim, row in raw.items():
        if not isinstance(row, dict) or set(row) != set(MODELS) or not all(
                isinstance(v, list) and len(v) == 2 and isinstance(v[0], int) and v[0] >= 0 and isinstance(v[1], str)
                for v in row.values()):
            raise UserError(f"{path}: {prim}: expected x86, arm64 and power = [cost, \"instruction\"]")
        table[prim] = {arch: tuple(v) for arch, v in row.items()}
    return table


def primitive_cost(name: str, arch: str, table: dict) -> int:
    rmw = _rmw(name)
    key = rmw[1] if rmw else name
    return table[key][arch][0] if key in table else 0


def _calls(e, out: list) -> None:
    if e[0] == "call":
        out.append(e[1])
        for a in e[2]:
            _calls(a, out)
    elif e[0] == "op":
        _calls(e[2], out)
        _calls(e[3], out)
    elif e[0] in ("not", "load"):
        _calls(e[1], out)


def _primitives(body: tuple, out: list) -> list:
    for s in body:
        if s[0] == "if":
            _calls(s[1], out)
            _primitives(s[2], out)
            _primitives(s[3], out)
        elif s[0] == "store":
            _calls(s[1], out)
            _calls(s[2], out)
        elif s[0] == "do":
            _calls(s[1], out)
        elif s[2] is not None:  # decl or assign
            _calls(s[2], out)
    return out


def cost(test: Litmus, archs: tuple, table: dict) -> int:
    """The test's ordering cost on x86 and ``archs``."""
    names = [n for t in test.threads for n in _primitives(t.body, [])]
    return sum(primitive_cost(n, a, table) for a in ("x86", *archs) for n in names)


def _bare(e):
    """An expression without its line numbers and with each call named by its access."""
    if e[0] == "call":
        return ("call", access(e[1]), tuple(_bare(a) for a in e[2]))
    if e[0] == "load":
        return ("load", _bare(e[1]))
    if e[0] == "op":
        return ("op", e[1], _bare(e[2]), _bare(e[3]))
    if e[0] == "not":
        return ("not", _bare(e[1]))
    return e


def _bare_body(body: tuple) -> tuple:
    out: list = []
    for s in body:
        if s[0] == "do" and s[1][0] == "call" and s[1][1] in DROPPED:
            continue
        if s[0] == "if":
            out.append(("if", _bare(s[1]), _bare_body(s[2]), _bare_body(s[3])))
        elif s[0] == "store":
            out.append(("store", _bare(s[1]), _bare(s[2])))
        elif s[0] == "do":
            out.append(("do", _bare(s[1])))
        else:
            out.append((s[0], s[1], None if s[2] is None else _bare(s[2])))
    return tuple(out)


def skeleton(test: Litmus) -> tuple:
    """Everything a barrier fix must leave unchanged: the accesses, in order, and the clauses."""
    return (tuple((t.params, _bare_body(t.body)) for t in test.threads), sorted(test.init.items()),
            sorted(test.reg_init.items()), test.quantifier, test.condition, test.filter, test.locations)


def same_program(answer: Litmus, original: Litmus) -> str | None:
    """Why ``answer`` is not ``original`` with only its ordering changed (None: it is)."""
    if len(answer.threads) != len(original.threads):
        return f"it has {len(answer.threads)} threads; your test has {len(original.threads)}"
    a, o = skeleton(answer), skeleton(original)
    for k, (ta, to) in enumerate(zip(a[0], o[0])):
        if ta != to:
            return f"P{k} is not your test's P{k} with only barriers or acquire/release changed"
    if a[1:] != o[1:]:
        return "its initial values, exists, filter or locations clauses are not your test's"
    return None


def forbids(test: Litmus, arch: str) -> bool:
    """Whether ``arch``'s model allows no execution reaching the exists clause."""
    return not check(test, MODELS[arch]).exists_reachable


# The search for the least cost: every place a fence may go and every access that may be ordered.

def _edits(body: tuple, path: tuple = ()) -> list:
    """(kind, path, choices): a fence before statement ``path`` (or at a block's end), or a stronger
    form of the statement's access; at most one choice per place is taken."""
    out: list = [("fence", path + (k,), FENCES) for k in range(len(body) + 1)]
    for k, s in enumerate(body):
        if s[0] == "if":
            out += _edits(s[2], path + (k, 2)) + _edits(s[3], path + (k, 3))
            continue
        e = s[1] if s[0] == "do" else s[2] if s[0] in ("assign", "decl") else None
        if e is not None and e[0] == "call":
            rmw = _rmw(e[1])
            stronger = STRONGER.get(e[1], ()) if not rmw else tuple(
                rmw[0] + o for o in ("_acquire", "_release", "") if rmw[0] + o != e[1] and rmw[0] + o in PRIMITIVES)
            if stronger:
                out.append(("order", path + (k,), stronger))
    return out


def _apply(body: tuple, changes: dict, path: tuple = ()) -> tuple:
    out: list = []
    for k in range(len(body) + 1):
        if ("fence", path + (k,)) in changes:
            out.append(("do", ("call", changes["fence", path + (k,)], (), 0)))
        if k == len(body):
            break
        s = body[k]
        if s[0] == "if":
            s = ("if", s[1], _apply(s[2], changes, path + (k, 2)), _apply(s[3], changes, path + (k, 3)))
        elif ("order", path + (k,)) in changes:
            i = 1 if s[0] == "do" else 2
            call = s[i]
            s = s[:i] + (("call", changes["order", path + (k,)], call[2], call[3]),) + s[i + 1:]
        out.append(s)
    return tuple(out)


def with_changes(test: Litmus, changes: dict) -> Litmus:
    """``test`` with ``changes`` (thread -> {(kind, path): primitive}) made."""
    threads = tuple(type(t)(t.index, t.params, _apply(t.body, changes.get(t.index, {})), t.line)
                    for t in test.threads)
    return type(test)(**{**test.__dict__, "threads": threads})


def _exact(priced: list, budget: int, start: int = 0, taken: tuple = ()):
    """Every set of changes, at distinct places, whose prices add up to ``budget``."""
    if budget == 0:
        yield taken
        return
    if len(taken) == MAX_EDITS:
        return
    for k in range(start, len(priced)):
        price, opt = priced[k]
        if price <= budget and all(opt[:3] != o[:3] for o in taken):
            yield from _exact(priced, budget - price, k + 1, taken + (opt,))


def least_cost(test: Litmus, archs: tuple, table: dict) -> tuple[int, dict] | None:
    """The least cost of a fix forbidding the exists clause on x86 and ``archs``, and the changes of
    one such fix (None if no fix of at most MAX_EDITS changes exists). A change that costs nothing on a weak
    architecture orders nothing there, so every change searched costs at least one unit, and the
    search goes budget by budget, cheapest first, stopping at the first fix."""
    base = cost(test, archs, table)
    priced = []
    for t in test.threads:
        for kind, path, names in _edits(t.body):
            for name in names:
                price = cost(with_changes(test, {t.index: {(kind, path): name}}), archs, table) - base
                if price > 0:
                    priced.append((price, (t.index, kind, path, name)))
    for budget in range(1, MAX_EDITS * max((p for p, _ in priced), default=0) + 1):
        for combo in _exact(priced, budget):
            changes: dict = {}
            for tid, kind, path, name in combo:
                changes.setdefault(tid, {})[kind, path] = name
            fixed = with_changes(test, changes)
            if all(forbids(fixed, a) for a in ("x86", *archs)):
                return base + budget, changes
    return None


# What the hidden tests and the public check call.

def _case(variant: dict) -> tuple[Litmus, tuple]:
    return bundled.load(variant["test"]), tuple(variant["architectures"])


def _answer(text: str) -> Litmus:
    try:
        return parse(text, ANSWER)
    except UserError as e:
        raise Fail(str(e)) from None
    except RecursionError:
        raise Fail(f"{ANSWER}: nested too deeply to read") from None


def submitted(ctx) -> Litmus:
    """The student's test, checked to be their variant's program with only ordering changed."""
    original, _ = _case(ctx.variant)
    answer = _answer(ctx.text(ANSWER))
    why = same_program(answer, original)
    if why:
        raise Fail(f"{ANSWER}: {why}")
    return answer


def allowed_on(answer: Litmus, archs: tuple) -> list[str]:
    """The architectures (x86 first, then ``archs``) whose model lets the answer reach its exists
    clause; a test the models refuse (too many events for them) fails the submission in one line."""
    try:
        return [a for a in ("x86", *archs) if not forbids(answer, a)]
    except UserError as e:
        raise Fail(str(e)) from None


def check_forbidden(ctx) -> None:
    """Forbidden on x86 and every required architecture; partly right: a share of the weak ones
    (x86 forbids every broken twin already, so it earns nothing by itself)."""
    _, archs = _case(ctx.variant)
    answer = submitted(ctx)
    allowed = allowed_on(answer, archs)
    if allowed:
        credit = 0.0 if "x86" in allowed else (len(archs) - len(allowed)) / len(archs)
        raise Fail(f"the exists clause is still reachable on {', '.join(allowed)} "
                   f"(kstep litmus {ANSWER} --model all shows an execution)", credit=credit)


def check_least_cost(ctx) -> None:
    original, archs = _case(ctx.variant)
    answer = submitted(ctx)
    if allowed_on(answer, archs):
        raise Fail("the exists clause is still reachable: forbid it first, then make it cheap")
    table = load_costs(ctx.exercise.path / "data" / "costs.toml")
    spent, best = cost(answer, archs, table), least_cost(original, archs, table)
    if best is not None and spent > best[0]:
        raise Fail(f"your fix costs {spent} on {', '.join(('x86', *archs))}; a cheaper one costs {best[0]}",
                   credit=best[0] / spent)


def well_formed(mechanism: str, folder=".") -> list[str]:
    """What is wrong with the form of answer.litmus (not whether it forbids anything): the public test."""
    folder = Path(folder)
    variant = tomllib.loads((folder / "variant.toml").read_text())
    original, _ = _case(variant)
    try:
        answer = parse((folder / ANSWER).read_text(), ANSWER)
    except UserError as e:
        return [str(e)]
    except (OSError, UnicodeDecodeError, RecursionError) as e:
        return [f"{ANSWER}: cannot read it: {e}"]
    why = same_program(answer, original)
    return [f"{ANSWER}: {why}"] if why else []
