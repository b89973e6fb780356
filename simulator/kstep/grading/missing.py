"""Find-the-missing-barrier exercises: a mechanism's litmus test with one barrier gone.

A student's variant (``mutant = [test, pick]``) names one of the mechanisms' correct litmus tests
(``kstep litmus --list``) and which of the test's *breaking mutations* they get.  A breaking mutation
removes one fence statement or weakens one ordered access to its relaxed form
(``smp_load_acquire(x)`` to ``READ_ONCE(*x)``, ``xchg_release`` to ``xchg_relaxed``...), and makes
the bad outcome reachable on arm64 or POWER; the mutations are taken in the order of the file.  The
student gets the mutant without its comments, name or the kernel's names for its locations
(``python -m kstep.grading.missing`` writes ``mutant.litmus``), finds the missing barrier, and hands
in ``answer.toml``::

    line = 14                 # a line of mutant.litmus
    barrier = "smp_wmb"       # a fence put before that line, or the ordered form its access takes

Graded here by the models, never by comparing with the original: the one change must leave the
program as it was but for ordering (:func:`kstep.grading.barriers.same_program`), forbid the bad
outcome on x86, arm64 and POWER, and cost no more than the barrier the mutant lost (under the
committed cost table of mm-barriers; a cheaper fix the models accept is as good).  kstep checks a
candidate (``kstep litmus mutant.litmus --model all``) but no command names the fix.
"""

from __future__ import annotations

import functools
import re
import sys
import tomllib

from ..errors import UserError
from ..memory import bundled
from ..memory.litmus import PRIMITIVES, Litmus, parse
from . import barriers, litmus_files
from .harness import Fail

ANSWER, MUTANT = "answer.toml", "mutant.litmus"
ARCHS = ("arm64", "power")  # x86 always counts too (barriers.cost and allowed_on add it)
_FENCE_LINE = re.compile(r"^\s*(%s)\(\);\s*$" % "|".join(barriers.FENCES))
_ORDERED_CALL = re.compile(r"\b([a-z_]+?)(_acquire|_release)\(")
_COMMENT = re.compile(r"\(\*.*?\*\)", re.S)
# an ordered load or store and its relaxed form, both ways
_WEAKER = ((re.compile(r"\bsmp_load_acquire\((\w+)\)"), r"READ_ONCE(*\1)"),
           (re.compile(r"\bsmp_store_release\((\w+),"), r"WRITE_ONCE(*\1,"))
_STRONGER = {"smp_load_acquire": (re.compile(r"\bREAD_ONCE\(\*(\w+)\)"), r"smp_load_acquire(\1)"),
             "smp_store_release": (re.compile(r"\bWRITE_ONCE\(\*(\w+),"), r"smp_store_release(\1,")}


def _clean(text: str) -> list[str]:
    """The test's lines without comments, blank runs, its name or the kernel's names of its shared
    locations (x, y, z... in the order the test first names them; kstep names events a, b, c...):
    what a student may not look up."""
    lines = [ln.rstrip() for ln in _COMMENT.sub("", text).splitlines()[1:]]
    out = ["C find-the-barrier"]
    for ln in lines:
        if ln or (out[-1] != ""):
            out.append(ln)
    test = parse(_text(out), MUTANT)
    kernel = list(dict.fromkeys([*test.init, *(p for t in test.threads for p in t.params)]))
    taken = set(re.findall(r"\w+", _text(out)))
    short = [c for c in ("x", "y", "z", "w", "v", "u", "t", "s", "q", "p") if c not in taken]
    rename = dict(zip(kernel, short))
    word = re.compile(r"\b(%s)\b" % "|".join(map(re.escape, kernel)))
    return out[:1] + [word.sub(lambda m: rename[m.group(1)], ln) for ln in out[1:]]


def _weakened(line: str) -> str | None:
    """``line`` with its ordered access made relaxed, or with its fence gone ("" ), or None."""
    if _FENCE_LINE.match(line):
        return ""
    for pattern, relaxed in _WEAKER:
        if pattern.search(line):
            return pattern.sub(relaxed, line, count=1)
    m = _ORDERED_CALL.search(line)
    if m:
        for weaker in (m.group(1) + "_relaxed", m.group(1)):
            if weaker in PRIMITIVES and barriers.access(weaker) == barriers.access(m.group(0)[:-1]):
                return line[:m.start()] + weaker + "(" + line[m.end():]
    return None


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


@functools.cache
def mutations(name: str) -> tuple[str, ...]:
    """The breaking mutants of bundled test ``name``, in the order of its lines: each with one
    barrier removed or weakened, reaching the bad outcome on arm64 or POWER."""
    lines = _clean(bundled.path(name).read_text())
    out: list[str] = []
    if barriers.allowed_on(parse(_text(lines), MUTANT), ARCHS):
        return ()  # a test whose bad outcome is reachable already has no missing barrier
    for k, line in enumerate(lines):
        weaker = _weakened(line)
        if weaker is None:
            continue
        mutant = lines[:k] + ([weaker] if weaker else []) + lines[k + 1:]
        if barriers.allowed_on(parse(_text(mutant), MUTANT), ARCHS):
            out.append(_text(mutant))
    return tuple(out)


def mutant(variant: dict) -> str:
    """The variant's mutant, as ``mutant.litmus`` holds it."""
    name, pick = variant["mutant"]
    found = mutations(name)
    if not 0 <= pick < len(found):
        raise UserError(f"{name}: has {len(found)} breaking mutations, not a mutation {pick}")
    return found[pick]


def _answer(text: str) -> tuple[int, str]:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise Fail(f"{ANSWER}: not TOML: {e}") from None
    line, barrier = raw.get("line"), raw.get("barrier")
    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise Fail(f"{ANSWER}: line must be a line number of {MUTANT} (an integer from 1)")
    if not isinstance(barrier, str) or not (barrier in barriers.FENCES or barrier in _STRONGER or (
            barrier in PRIMITIVES and barriers.access(barrier) != barrier)):
        raise Fail(f"{ANSWER}: barrier must be a fence ({', '.join(barriers.FENCES)}) or an ordered access "
                   f"(smp_load_acquire, smp_store_release, xchg_release, ...); got {barrier!r}")
    return line, barrier


def fixed(mutant_text: str, line: int, barrier: str) -> Litmus:
    """The mutant with the student's one change made, checked to change only ordering."""
    lines = mutant_text.splitlines()
    if line > len(lines):
        raise Fail(f"{ANSWER}: {MUTANT} has {len(lines)} lines, not {line}")
    here = lines[line - 1]
    if barrier in barriers.FENCES:
        lines.insert(line - 1, f"\t{barrier}();")
    else:
        if barrier in _STRONGER:
            pattern, ordered = _STRONGER[barrier]
            new = pattern.sub(ordered, here, count=1)
        else:
            base = barriers.access(barrier)
            new = re.sub(r"\b%s(_relaxed|_acquire|_release)?\(" % re.escape(base), barrier + "(", here, count=1)
        if new == here:
            raise Fail(f"{ANSWER}: line {line} of {MUTANT} has no access {barrier} can order")
        lines[line - 1] = new
    try:
        test = parse(_text(lines), MUTANT)
    except UserError as e:
        raise Fail(f"{ANSWER}: with {barrier} at line {line}, {MUTANT} no longer reads: {e}") from None
    why = barriers.same_program(test, parse(mutant_text, MUTANT))
    if why:
        raise Fail(f"{ANSWER}: {barrier} at line {line} changes more than ordering: {why}")
    return test


def submitted(ctx) -> tuple[Litmus, Litmus]:
    """(the mutant, the mutant with the student's change)."""
    text = mutant(ctx.variant)
    return parse(text, MUTANT), fixed(text, *_answer(ctx.text(ANSWER)))


def check_restores(ctx) -> None:
    """Forbidden on x86, arm64 and POWER; partly right: a share of the weak two."""
    _, answer = submitted(ctx)
    allowed = barriers.allowed_on(answer, ARCHS)
    if allowed:
        credit = 0.0 if "x86" in allowed else (len(ARCHS) - len(allowed)) / len(ARCHS)
        raise Fail(f"the exists clause is still reachable on {', '.join(allowed)}", credit=credit)


def check_cheapest(ctx) -> None:
    """No costlier than the barrier the mutant lost: Linux 6.12's own test, under the cost table."""
    _, answer = submitted(ctx)
    if barriers.allowed_on(answer, ARCHS):
        raise Fail("the exists clause is still reachable: restore the ordering first")
    table = barriers.load_costs(ctx.exercise.path / "data" / "costs.toml")
    kernel = parse(_text(_clean(bundled.path(ctx.variant["mutant"][0]).read_text())), MUTANT)
    spent, best = barriers.cost(answer, ARCHS, table), barriers.cost(kernel, ARCHS, table)
    if spent > best:
        raise Fail(f"with your barrier the test costs {spent} on x86, arm64 and POWER; with the one it lost, {best}",
                   credit=best / spent)


def well_formed(mechanism: str, folder=".") -> list[str]:
    """What is wrong with the form of answer.toml (not whether the barrier is the right one)."""
    return litmus_files.form_problems(folder, ANSWER, lambda variant, text: fixed(mutant(variant), *_answer(text)))


def _mutant_text(variant: dict) -> str:
    m = variant.get("mutant")
    if not (isinstance(m, list) and len(m) == 2 and m[0] in bundled.names() and type(m[1]) is int):
        raise UserError("variant.toml: not a find-the-barrier variant (mutant = [test, pick])")
    return mutant(variant)


def main(argv: list[str]) -> int:
    """``python -m kstep.grading.missing [FOLDER]``: write FOLDER/mutant.litmus from its variant.toml."""
    return litmus_files.write_test(argv, MUTANT, _mutant_text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
