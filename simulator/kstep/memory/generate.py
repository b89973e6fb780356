"""Seeded random litmus tests in the hardware models' domain, for cross-checking the models.

:func:`generate` draws 2-4 threads over 2-4 locations from every primitive the x86, arm64
and POWER models accept (ONCE accesses, acquire/release, the fences, ``xchg``/``cmpxchg``
in all four orderings, value-returning and non-returning atomics, data and control
dependencies), at most ``max_events`` memory accesses in all (shared evenly among the
threads), a ``locations`` clause naming every location and an ``exists`` clause asking for
one combination of the registers' values. :func:`render` writes it as a C
litmus test, with threads and locations renamed by the given permutations, so a test and
its renamings are the same program.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstep.engine.prng import SplitMix64

LOCATIONS = ("x", "y", "z", "w")
FENCES = ("smp_mb", "smp_rmb", "smp_wmb", "smp_mb__before_atomic", "smp_mb__after_atomic")
ORDERS = ("", "_relaxed", "_acquire", "_release")
# memory accesses of each kind of operation (an RMW reads and writes); every other kind makes one
ACCESSES = {"fence": 0, "xchg": 2, "cmpxchg": 2, "atomic": 2}


@dataclass(frozen=True)
class Test:
    """Threads of operations ``(kind, location index, value, register or None)``."""

    seed: int
    locations: int
    threads: tuple[tuple[tuple, ...], ...]
    outcome: tuple[tuple[int, str, int], ...]  # (thread, register, value) to ask about


def accesses(op: tuple) -> int:
    """How many memory accesses the operation makes at most."""
    return ACCESSES.get(op[0], 1)


def _op(rng: SplitMix64, nloc: int, reg: str, earlier: list[str]) -> tuple:
    loc = rng.below(nloc)
    value = 1 + rng.below(2)
    kind = rng.below(10)
    if kind == 0:
        return ("fence", FENCES[rng.below(len(FENCES))])
    if kind in (1, 2):
        return ("store", ("WRITE_ONCE", "smp_store_release")[rng.below(2)], loc, value)
    if kind in (3, 4):
        return ("load", ("READ_ONCE", "smp_load_acquire")[rng.below(2)], loc, reg)
    if kind == 5:
        return ("xchg", "xchg" + ORDERS[rng.below(4)], loc, value, reg)
    if kind == 6:
        return ("cmpxchg", "cmpxchg" + ORDERS[rng.below(4)], loc, rng.below(2), value, reg)
    if kind == 7:
        return ("atomic", ("atomic_inc", "atomic_inc_return")[rng.below(2)], loc, reg)
    if kind == 8 and earlier:
        return ("data", earlier[rng.below(len(earlier))], loc)
    if earlier:
        return ("ctrl", earlier[rng.below(len(earlier))], loc, value)
    return ("store", "WRITE_ONCE", loc, value)


def _returns(op: tuple) -> bool:
    """Whether the operation puts a value in a register."""
    return op[0] in ("load", "xchg", "cmpxchg") or op[:2] == ("atomic", "atomic_inc_return")


def generate(seed: int, max_events: int = 8) -> Test:
    rng = SplitMix64(seed)
    nthreads, nloc = 2 + rng.below(3), 2 + rng.below(3)
    budget = max_events
    threads = []
    for t in range(nthreads):
        # an even share of what is left: weak outcomes need threads of two accesses or more, and
        # the first threads took all but one access each of the last ones
        share = budget // (nthreads - t)
        ops: list[tuple] = []
        regs: list[str] = []
        for _ in range(2 + rng.below(3)):
            reg = f"r{len(regs)}"
            op = _op(rng, nloc, reg, regs)
            if accesses(op) > share:
                break
            share -= accesses(op)
            budget -= accesses(op)
            ops.append(op)
            if _returns(op):
                regs.append(reg)
        if not any(accesses(op) for op in ops):  # a thread of fences alone orders nothing
            ops.append(("store", "WRITE_ONCE", rng.below(nloc), 1))
            budget -= 1
        threads.append(tuple(ops))
    asked = [
        (t, reg, rng.below(3))
        for t, ops in enumerate(threads)
        for op in ops
        for reg in [op[-1]]
        if _returns(op)
    ]
    return Test(seed, nloc, tuple(threads), tuple(asked))


def render(test: Test, thread_order: tuple[int, ...] | None = None,
           location_names: tuple[str, ...] = LOCATIONS) -> str:
    """The test in the kernel's C litmus format; ``thread_order[i]`` is the old thread of Pi."""
    order = thread_order or tuple(range(len(test.threads)))
    names = location_names[: test.locations]
    params = ", ".join(f"int *{n}" for n in names)
    lines = [f"C random-{test.seed}", "{}"]
    for new, old in enumerate(order):
        body = []
        regs = sorted(op[-1] for op in test.threads[old] if _returns(op))
        body += [f"int {r};" for r in regs]
        for op in test.threads[old]:
            kind = op[0]
            if kind == "fence":
                body.append(f"{op[1]}();")
            elif kind == "store":
                target = f"*{names[op[2]]}" if op[1] == "WRITE_ONCE" else names[op[2]]
                body.append(f"{op[1]}({target}, {op[3]});")
            elif kind == "load":
                target = f"*{names[op[2]]}" if op[1] == "READ_ONCE" else names[op[2]]
                body.append(f"{op[3]} = {op[1]}({target});")
            elif kind == "xchg":
                body.append(f"{op[4]} = {op[1]}({names[op[2]]}, {op[3]});")
            elif kind == "cmpxchg":
                body.append(f"{op[5]} = {op[1]}({names[op[2]]}, {op[3]}, {op[4]});")
            elif op[1] == "atomic_inc":
                body.append(f"atomic_inc({names[op[2]]});")
            elif kind == "atomic":
                body.append(f"{op[3]} = atomic_inc_return({names[op[2]]});")
            elif kind == "data":
                body.append(f"WRITE_ONCE(*{names[op[2]]}, {op[1]});")
            else:
                body.append(f"if ({op[1]}) WRITE_ONCE(*{names[op[2]]}, {op[3]});")
        lines.append(f"P{new}({params})")
        lines.append("{ " + " ".join(body) + " }")
    new_of = {old: new for new, old in enumerate(order)}
    asked = [f"{new_of[t]}:{reg}={v}" for t, reg, v in test.outcome]
    condition = " /\\ ".join(asked) if asked else "true"
    # every location's final value is part of a final state: coherence-only outcomes (2+2W, S)
    # show in memory, not in registers
    lines.append(f"locations [{'; '.join(names)}]")
    lines.append(f"exists ({condition})")
    return "\n".join(lines) + "\n"
