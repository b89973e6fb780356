"""Predict-and-construct exercises: is a litmus test's ``exists`` outcome allowed, and by what execution.

A student's variant (``shape``, ``seed``) is a classic litmus shape (MP, SB, LB, WRC, IRIW, 2+2W, R,
S) whose threads each get, from the seed, an ordering of their two accesses (none, a fence,
acquire/release, a control dependency) and whose locations and registers get names of the seed's
choosing (:func:`generate`; ``python -m kstep.grading.outcomes`` writes it as ``test.litmus``).  For
each of the hardware models (sc, x86-TSO, arm64, POWER) the student hands in, in ``answer.toml``::

    [arm64]
    allowed = true                                # whether the exists outcome is reachable
    rf = { "1:r0" = "y=1", "1:r1" = "x=0" }       # which write each read reads from
    co = { x = ["x=0", "x=1"] }                    # per location, its writes in coherence order

    [sc]
    allowed = false
    rf = { "1:r0" = "y=1", "1:r1" = "x=0" }       # the candidate execution that would reach it
    axiom = "sc"                                  # an axiom of the model that this candidate breaks

A read is named as the ``exists`` clause names its register (``1:r0``), a write by its location and
the value it writes (``x=1``; ``x=0`` is the initial write: every write of a test writes a value of
its own).  Graded by the models, never by comparing with a stored answer: the verdict is the model's
(:func:`kstep.memory.verdict.check`); the execution is found among the test's candidates, its final
state checked against the ``exists`` clause and its consistency against the model's own axioms
(``axioms(candidate, rf)(co, fr)`` of :mod:`kstep.memory.sc`, ``tso``, ``arm64``, ``power``).
"""

from __future__ import annotations

import functools
import sys
import tomllib
from typing import NamedTuple

from ..engine.prng import SplitMix64
from ..errors import UserError
from ..memory import arm64, power, sc, tso
from ..memory import relations as rel
from ..memory.executions import Candidate, coherence_orders, initial_co0, with_reads_from
from ..memory.litmus import Litmus, parse
from ..memory.verdict import check, final_memory, holds
from . import litmus_files
from .harness import Fail

ANSWER, TEST = "answer.toml", "test.litmus"
MODELS = {"sc": sc, "tso": tso, "arm64": arm64, "power": power}

# The shapes: per thread its accesses, ("W", location, value) or ("R", location, value the exists
# clause asks it to read); ``final``: locations whose last write the exists clause asks for.
# Locations are 0 and 1 (named per student); every write to a location writes its own value.
SHAPES = {
    "MP": ((("W", 0, 1), ("W", 1, 1)), (("R", 1, 1), ("R", 0, 0))),
    "SB": ((("W", 0, 1), ("R", 1, 0)), (("W", 1, 1), ("R", 0, 0))),
    "LB": ((("R", 0, 1), ("W", 1, 1)), (("R", 1, 1), ("W", 0, 1))),
    "WRC": ((("W", 0, 1),), (("R", 0, 1), ("W", 1, 1)), (("R", 1, 1), ("R", 0, 0))),
    "IRIW": ((("W", 0, 1),), (("R", 0, 1), ("R", 1, 0)), (("R", 1, 1), ("R", 0, 0)), (("W", 1, 1),)),
    "2+2W": ((("W", 0, 1), ("W", 1, 2)), (("W", 1, 1), ("W", 0, 2))),
    "R": ((("W", 0, 1), ("W", 1, 1)), (("W", 1, 2), ("R", 0, 0))),
    "S": ((("W", 0, 2), ("W", 1, 1)), (("R", 1, 1), ("W", 0, 1))),
}
FINAL = {"2+2W": ((0, 1), (1, 1)), "R": ((1, 2),), "S": ((0, 2),)}
# What may order a thread's two accesses, by their kinds: the kernel's own means.
ORDERINGS = {
    "WW": ("none", "smp_wmb", "release", "smp_mb"),
    "RR": ("none", "smp_rmb", "acquire", "smp_mb"),
    "RW": ("none", "ctrl", "acquire", "release", "smp_mb"),
    "WR": ("none", "smp_mb", "release-acquire"),
}
LOCATION_NAMES = ("x", "y", "z", "u", "v", "w", "flag", "data", "seq", "next", "head", "tail")
REGISTER_PREFIXES = ("r", "s", "t", "v")


class Test(NamedTuple):
    """A student's test: its text and, per thread, the registers of its reads in program order."""

    text: str
    registers: tuple[tuple[str, ...], ...]


def _access(op: tuple, first: bool, ordering: str, loc: str, reg: str) -> str:
    """One access in C, in the ordered form ``ordering`` asks of it (``first``: the thread's first)."""
    acquire = ordering in ("acquire", "release-acquire") and (first or ordering == "release-acquire")
    release = ordering in ("release", "release-acquire") and (not first or ordering == "release-acquire")
    if op[0] == "R":
        return f"{reg} = smp_load_acquire({loc});" if acquire else f"{reg} = READ_ONCE(*{loc});"
    return f"smp_store_release({loc}, {op[2]});" if release else f"WRITE_ONCE(*{loc}, {op[2]});"


def generate(shape: str, seed: int) -> Test:
    """The variant's litmus test: ``shape`` with the orderings and the names ``seed`` draws.  Orderings
    that leave no candidate execution reaching the outcome are drawn again: LB with a control dependency
    in both threads asks for values only a write made out of thin air could give, and kstep's candidates
    read only values the program can produce (:func:`kstep.memory.executions.value_domains`), so there
    would be no execution for the student to write down."""
    if shape not in SHAPES:
        raise UserError(f"unknown litmus shape {shape!r} ({', '.join(SHAPES)})")
    rng = SplitMix64(seed)
    pool = list(LOCATION_NAMES)
    names = [pool.pop(rng.below(len(pool))) for _ in range(2)]
    prefix = REGISTER_PREFIXES[rng.below(len(REGISTER_PREFIXES))]
    while True:
        test = _draw(shape, seed, rng, names, prefix)
        if reaching(parse(test.text, TEST)):
            return test


def _draw(shape: str, seed: int, rng: SplitMix64, names: list, prefix: str) -> Test:
    params = ", ".join(f"int *{n}" for n in names)
    lines, registers, asked = [f"C {shape.lower()}-{seed}", "{}"], [], []
    for t, ops in enumerate(SHAPES[shape]):
        regs = tuple(f"{prefix}{rng.below(10)}{k}" for k, op in enumerate(ops) if op[0] == "R")
        pair = "".join(op[0] for op in ops)
        ordering = ORDERINGS[pair][rng.below(len(ORDERINGS[pair]))] if len(ops) == 2 else "none"
        body = [f"int {r};" for r in regs]
        reg = iter(regs)
        for k, op in enumerate(ops):
            r = next(reg) if op[0] == "R" else ""
            code = _access(op, k == 0, ordering, names[op[1]], r)
            if k == 1 and ordering == "ctrl":
                code = f"if ({regs[0]}) {code}"
            elif k == 1 and ordering.startswith("smp_"):
                body.append(f"{ordering}();")
            body.append(code)
            if op[0] == "R":
                asked.append(f"{t}:{r}={op[2]}")
        lines += [f"P{t}({params})", "{ " + " ".join(body) + " }"]
        registers.append(regs)
    asked += [f"{names[loc]}={value}" for loc, value in FINAL.get(shape, ())]
    lines.append("exists (" + " /\\ ".join(asked) + ")")
    return Test("\n".join(lines) + "\n", tuple(registers))


def reaching(litmus: Litmus) -> int:
    """How many candidate executions (an rf and a co, whatever a model says of them) reach the exists clause."""
    n = 0
    for c, _rf in with_reads_from(litmus):
        regs = {(t, k): v for t, path in enumerate(c.paths) for k, v in path.regs}
        writes = c.set_of(lambda e: e.kind == "W")
        n += sum(holds(litmus.condition, regs, final_memory(c, co))
                 for co in coherence_orders(c, writes, initial_co0(c, writes)))
    return n


def variant_test(variant: dict) -> Test:
    shape, seed = variant.get("shape"), variant.get("seed")
    if not isinstance(shape, str) or type(seed) is not int or seed < 0:
        raise UserError("variant.toml: not a predict-the-outcome variant (shape = NAME, seed = N)")
    return generate(shape, seed)


@functools.cache
def verdicts(text: str) -> dict[str, bool]:
    """Per model, whether it lets the test reach its exists clause."""
    test = parse(text, TEST)
    return {name: check(test, module).exists_reachable for name, module in MODELS.items()}


# -- the student's execution ------------------------------------------------------------------------

def names(events, registers: tuple) -> dict[int, str]:
    """Each read and write of a candidate's events by the name answer.toml gives it."""
    out, seen = {}, [0] * len(registers)
    for e in events:
        if e.kind == "W":
            out[e.id] = f"{e.loc}={e.value}"
        elif e.kind == "R":
            out[e.id] = f"{e.thread}:{registers[e.thread][seen[e.thread]]}"
            seen[e.thread] += 1
    return out


class Built(NamedTuple):
    """The student's execution, as the models take it."""

    candidate: Candidate
    rf: tuple
    co: tuple
    fr: tuple
    reaches: bool  # its final state satisfies the exists clause


def _co(c: Candidate, named: dict, given: dict, model: str) -> tuple:
    """co from ``given`` (location -> its writes, initial first); a location with one write besides
    the initial one may be left out."""
    by_name = {v: k for k, v in named.items() if c.events[k].kind == "W"}
    rows = [0] * c.n
    for loc, ids in c.by_loc.items():
        writes = [i for i in ids if c.events[i].kind == "W"]
        order = given.get(loc)
        if order is None:
            if len(writes) > 2:
                raise Fail(f"{ANSWER}: [{model}] co: give the coherence order of {loc}'s writes")
            order = [named[i] for i in writes]
        if not isinstance(order, list) or sorted(map(str, order)) != sorted(named[i] for i in writes):
            raise Fail(f"{ANSWER}: [{model}] co.{loc} must list {loc}'s writes of your execution, each once: "
                       f"{', '.join(named[i] for i in writes)}")
        if by_name[order[0]] != writes[0]:
            raise Fail(f"{ANSWER}: [{model}] co.{loc}: the initial write {named[writes[0]]} comes first")
        later = 0
        for w in reversed(order):
            rows[by_name[w]] |= later
            later |= 1 << by_name[w]
    return tuple(rows)


def build(test: Test, litmus: Litmus, entry: dict, model: str) -> Built:
    """The candidate execution an answer's rf and co describe; a malformed one fails in one line."""
    rf_given, co_given = entry.get("rf"), entry.get("co", {})
    if not isinstance(rf_given, dict) or not all(isinstance(v, str) for v in rf_given.values()):
        raise Fail(f'{ANSWER}: [{model}] rf must be a table of read = write ("1:r0" = "x=1")')
    if not isinstance(co_given, dict):
        raise Fail(f'{ANSWER}: [{model}] co must be a table of location = [writes] (x = ["x=0", "x=1"])')
    reads = [f"{t}:{r}" for t, regs in enumerate(test.registers) for r in regs]
    if set(rf_given) != set(reads):
        raise Fail(f"{ANSWER}: [{model}] rf must name each read of {TEST} once: {', '.join(reads)}")
    unknown = sorted(set(co_given) - set(litmus.shared()))
    if unknown:
        raise Fail(f"{ANSWER}: [{model}] co: {unknown[0][:40]!r} is not a location of {TEST}")
    for c, rf in with_reads_from(litmus):
        named = names(c.events, test.registers)
        if {named[r]: named[w] for w, r in rel.pairs(rf)} == rf_given:
            co = _co(c, named, co_given, model)
            fr = sc.from_reads(c, co, rf)
            regs = {(t, k): v for t, path in enumerate(c.paths) for k, v in path.regs}
            return Built(c, rf, co, fr, holds(litmus.condition, regs, final_memory(c, co)))
    raise Fail(f"{ANSWER}: [{model}] rf: no execution of {TEST} has its reads read so (a read reads a write "
               "of its own location, and not one after it in its thread)")


def axiom_names(model: str, built: Built) -> list[str]:
    return [a.name for a in MODELS[model].axioms(built.candidate, built.rf)(built.co, built.fr)]


def broken(model: str, built: Built) -> list[str]:
    """The model's axioms the execution breaks (none: the model allows it)."""
    return [a.name for a in MODELS[model].axioms(built.candidate, built.rf)(built.co, built.fr) if not a.holds()]


# -- answer.toml ------------------------------------------------------------------------------------

def answer(text: str, test: Test) -> dict[str, tuple[bool, Built, str]]:
    """Per model: (allowed, the execution, the axiom named for a forbidden outcome), or Fail in one line."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise Fail(f"{ANSWER}: not TOML: {e}") from None
    except RecursionError:
        raise Fail(f"{ANSWER}: nested too deeply to read") from None
    litmus = parse(test.text, TEST)
    out = {}
    extra = sorted(set(raw) - set(MODELS))
    if extra:
        raise Fail(f"{ANSWER}: [{extra[0][:40]}] is not a model; the tables are {', '.join(MODELS)}")
    for model in MODELS:
        entry = raw.get(model)
        if not isinstance(entry, dict):
            raise Fail(f"{ANSWER}: [{model}] is missing (a table with allowed, rf, co and, if forbidden, axiom)")
        unknown = sorted(set(entry) - {"allowed", "rf", "co", "axiom"})
        if unknown:
            raise Fail(f"{ANSWER}: [{model}] {unknown[0][:40]!r} is not a key (allowed, rf, co, axiom)")
        allowed = entry.get("allowed")
        if not isinstance(allowed, bool):
            raise Fail(f"{ANSWER}: [{model}] allowed must be true or false")
        built = build(test, litmus, entry, model)
        axiom = entry.get("axiom", "")
        if allowed and "axiom" in entry:
            raise Fail(f"{ANSWER}: [{model}] an allowed outcome breaks no axiom: leave axiom out")
        if not allowed and axiom not in axiom_names(model, built):
            raise Fail(f"{ANSWER}: [{model}] axiom must be one of the {model} model's axioms: "
                       f"{', '.join(axiom_names(model, built))}")
        out[model] = (allowed, built, axiom)
    return out


def submitted(ctx) -> tuple[Test, dict]:
    test = variant_test(ctx.variant)
    return test, answer(ctx.text(ANSWER), test)


def check_verdicts(ctx) -> None:
    """Each model's verdict on the exists clause; partly right: the share of models right."""
    test, given = submitted(ctx)
    truth = verdicts(test.text)
    wrong = [m for m in MODELS if given[m][0] != truth[m]]
    if wrong:
        raise Fail(f"the verdict is wrong for {', '.join(wrong)}", credit=1 - len(wrong) / len(MODELS))


def judge(model: str, allowed: bool, built: Built, axiom: str) -> str | None:
    """Why the model's execution (allowed) or axiom (forbidden) is wrong; None when it is right.  Judged
    by the model's axioms on the student's own execution, whatever the verdict: a wrong verdict has
    no execution the model allows, or no candidate that breaks an axiom, to back it."""
    if not built.reaches:
        return f"{model}: your execution does not reach the exists clause"
    breaks = broken(model, built)
    if allowed and breaks:
        return f"{model}: the model forbids your execution (it breaks {breaks[0]})"
    if not allowed and axiom not in breaks:
        return f"{model}: your execution does not break {axiom}"
    return None


def check_executions(ctx) -> None:
    """Per model, the execution is consistent and reaches the outcome, or the named axiom is one the
    candidate breaks; partly right: the share of models right."""
    _, given = submitted(ctx)
    why = [w for m in MODELS if (w := judge(m, *given[m])) is not None]
    if why:
        raise Fail("; ".join(why), credit=1 - len(why) / len(MODELS))


def well_formed(mechanism: str, folder=".") -> list[str]:
    """What is wrong with the form of answer.toml (not whether its verdicts or executions are right)."""
    return litmus_files.form_problems(folder, ANSWER, lambda variant, text: answer(text, variant_test(variant)))


def main(argv: list[str]) -> int:
    """``python -m kstep.grading.outcomes [FOLDER]``: write FOLDER/test.litmus from its variant.toml."""
    return litmus_files.write_test(argv, TEST, lambda variant: variant_test(variant).text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
