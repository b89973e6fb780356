"""Hidden tests of qspin-head-claim: the student's claim and hand-off built into the lab's
torture tool, raced on the student's architecture and layout, and logged and replayed step by step
through kstep's Linux 6.12 model.

CANARY-KSTEP-HIDDEN-qspin-head-claim: this line must never reach a student's output.
"""

from kstep.errors import UserError
from kstep.grading.harness import Fail
from kstep.lab.replay.log import END_VERDICT
from kstep.lab.replay import check_lines

RACE = ["--threads", "3", "--step-delay", "200", "--delay-in", "100", "--hang-timeout", "2"]
STATUS = {1: "two CPUs were in the critical section at once", 3: "a CPU waited for ever (a lost hand-off?)",
          4: "the run never took the queue's paths (inconclusive)"}


def _race(ctx, arch, pending_bits, acquisitions, extra=()):
    """The driver tries the next seeds while a run is inconclusive; a violation or a hang ends it."""
    answer = ctx.driver({"arch": arch, "pending_bits": pending_bits, "seed": ctx.variant["seed"],
                         "args": RACE + ["--acquisitions", str(acquisitions), *extra]})
    if not isinstance(answer, dict) or not answer.get("built"):
        raise Fail(f"head_claim.c does not build for {arch}", str((answer or {}).get("errors", ""))[-2000:])
    status = answer.get("status")
    if status != 0:
        why = STATUS.get(status, f"the torture tool {status}" if isinstance(status, str)
                         else f"the torture tool exited with status {status}")
        raise Fail(f"{arch}, _Q_PENDING_BITS {pending_bits}, seed {answer.get('seed')}, 3 CPUs: {why}",
                   str(answer.get("stderr", ""))[-1500:])


def test_your_architecture(ctx):
    _race(ctx, ctx.variant["arch"], ctx.variant["pending_bits"], 2000)


def test_three_cpus_x86_64(ctx):
    _race(ctx, "x86_64", 9 - ctx.variant["pending_bits"], 8000)


def test_log_replays_in_the_model(ctx):
    """A logged run: every step, with the lock word before and after, must be one the model allows."""
    _race(ctx, "x86_64", ctx.variant["pending_bits"], 300, ["--log", "run.log"])
    text = ctx.output("run.log").decode(errors="replace")
    try:
        result = check_lines("qspinlock", text.splitlines(keepends=True), "run.log")
    except UserError as e:
        raise Fail(f"run.log is not a well-formed observation log: {e}") from None
    if result.verdict == END_VERDICT:
        raise Fail(f"run.log is not a finished run: {result.why}")
    if not result.ok:
        raise Fail(f"run.log line {result.line} is not a step Linux 6.12 takes: {result.why}", result.text)
