"""Hidden tests of rcu-seq: the student's functions against kernel/rcu/rcu.h's arithmetic and
against what kstep's RCU model does in the student's run.

CANARY-KSTEP-HIDDEN-rcu-seq: this line must never reach a student's output.
"""

import kstep
from kstep.engine import SplitMix64
from kstep.grading.harness import Fail

ULONG = 1 << 64
MASK = 3
ORIGIN = (ULONG - 300) << 2 & (ULONG - 1)  # kernel/rcu/tree.c: .gp_seq = (0UL - 300UL) << RCU_SEQ_CTR_SHIFT


def kernel(name, *args):
    if name == "rcu_seq_start":
        return (args[0] + 1) % ULONG
    if name == "rcu_seq_end":
        return ((args[0] | MASK) + 1) % ULONG
    if name == "rcu_seq_snap":
        return ((args[0] + 2 * MASK + 1) & ~MASK) % ULONG
    cur, snap = args
    return (ULONG - 1) // 2 >= (cur - snap) % ULONG


def _check(ctx, calls, what):
    calls = [[name, [a % ULONG for a in args]] for name, args in calls]
    got = ctx.driver({"calls": calls})
    results = got.get("results") if isinstance(got, dict) else None
    if not isinstance(results, list) or len(results) != len(calls):
        raise Fail(f"{what}: the driver did not answer every call")
    for (name, args), value in zip(calls, results):
        want = kernel(name, *args)
        if value != want or type(value) is not type(want):
            shown = ", ".join(hex(a) for a in args)
            raise Fail(f"{what}: {name}({shown}) returned {value!r}; the kernel computes "
                       f"{hex(want) if not isinstance(want, bool) else want}")


def _every(values):
    calls = []
    for s in values:
        calls += [["rcu_seq_start", [s]], ["rcu_seq_end", [s | 1]], ["rcu_seq_snap", [s]]]
        for d in (0, 1, 3, 4, 8, ULONG // 2 - 1, ULONG // 2, ULONG // 2 + 1):
            calls += [["rcu_seq_done", [s, (s - d) % ULONG]], ["rcu_seq_done", [s, (s + d) % ULONG]]]
    return calls


def test_agrees_with_the_model(ctx):
    """Every gp_seq kstep's RCU model passes through in the student's run, in each of the four uses."""
    trace = kstep.open("rcu", ctx.variant["scenario"]).run(seed=ctx.variant["seed"])
    seen = sorted({s.rcu.gp_seq % ULONG for s in trace.states})
    _check(ctx, _every(seen), f"in {ctx.variant['scenario']} with seed {ctx.variant['seed']}")


def test_kernel_origin(ctx):
    """Linux's own starting point, 300 grace periods before the counter wraps."""
    start = ORIGIN + 4 * (ctx.variant["seed"] % 7)
    _check(ctx, _every([start, start + 1, start + 4, start + 5]), "near Linux's initial gp_seq")


def test_wraparound(ctx):
    rng = SplitMix64(ctx.variant["seed"])
    values = [ULONG - 4, ULONG - 3, ULONG - 1, 0, 1] + [rng.next() for _ in range(8)]
    _check(ctx, _every(values), "around the wrap of unsigned long")
