"""Hidden tests of vma-measure: the student's counts against kstep's run of their variant, and
their conclusion against their own counts (never against numbers measured again).

CANARY-KSTEP-HIDDEN-vma-measure: this line must never reach a student's output.
"""

from pathlib import Path

import kstep
from kstep.engine import RoundRobin
from kstep.grading.harness import Fail

# The two kernels, as measurements.toml names them, and the model variants they are.
KERNELS = {"vma-locks": "v6.12", "mmap-lock": "no-per-vma-lock"}
COUNTERS = ("rounds", "vma_lock_success", "mmap_lock_faults")
SCENARIO = Path(__file__).resolve().parent.parent / "data" / "launch.toml"


def expected(variant, kernel):
    ex = kstep.open("vma-locks", str(SCENARIO), kernel,
                    [f"threads.0.count={variant['count']}", f"threads.0.work={variant['work']}"])
    return ex.answers(ex.run(RoundRobin()))


def runs(ctx):
    data = ctx.toml("measurements.toml")
    got = data.get("runs")
    if not isinstance(got, dict) or any(not isinstance(got.get(k), dict) for k in KERNELS):
        raise Fail("measurements.toml needs [runs.vma-locks] and [runs.mmap-lock]")
    return data, got


def fault_blocked(run):
    table = run.get("blocked_rounds")
    if not isinstance(table, dict) or not all(isinstance(v, int) for v in table.values()):
        raise Fail("blocked_rounds must be a table of thread = rounds ({} for none)")
    return sum(v for k, v in table.items() if k.startswith("F"))


def test_counts(ctx):
    _, got = runs(ctx)
    wrong = []
    for kernel, variant in KERNELS.items():
        want = expected(ctx.variant, variant)
        for key in COUNTERS:
            if got[kernel].get(key) != want[key]:
                wrong.append(f"{kernel} {key}")
        if got[kernel].get("blocked_rounds") != want["blocked_rounds"]:
            wrong.append(f"{kernel} blocked_rounds")
    if wrong:
        raise Fail(f"these counts are not what the run of your variant gives: {', '.join(wrong)}",
                   credit=1 - len(wrong) / (2 * (len(COUNTERS) + 1)))


def test_conclusion_follows(ctx):
    data, got = runs(ctx)
    c = data.get("conclusion")
    if not isinstance(c, dict):
        raise Fail("measurements.toml has no [conclusion]")
    blocked = {k: fault_blocked(got[k]) for k in KERNELS}
    less = min(KERNELS, key=lambda k: blocked[k]) if len(set(blocked.values())) > 1 else "neither"
    if c.get("less_blocked") != less:
        raise Fail(f"less_blocked = {c.get('less_blocked')!r}, but by your own numbers the fault threads were "
                   f"blocked {blocked['vma-locks']} rounds with per-VMA locks and {blocked['mmap-lock']} with mmap_lock only")
    rounds = [got[k].get("rounds") for k in ("vma-locks", "mmap-lock")]
    if not all(isinstance(r, int) and r > 0 for r in rounds):
        raise Fail("rounds must be positive whole numbers")
    ratio = rounds[1] / rounds[0]
    given = c.get("slowdown")
    if not isinstance(given, (int, float)) or abs(given - ratio) > 0.01 * ratio + 0.005:
        raise Fail(f"slowdown = {given!r}, but your rounds give {rounds[1]} / {rounds[0]} = {ratio:.2f}")
