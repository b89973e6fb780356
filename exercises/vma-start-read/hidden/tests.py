"""Hidden tests of vma-start-read: the student's steps explored against Linux's own.

CANARY-KSTEP-HIDDEN-vma-start-read: this line must never reach a student's output.
"""

import functools
import json
from pathlib import Path

from kstep.scenario_spec import scenario
from kstep.grading.feedback import step_credit, verdict
from kstep.grading.harness import Fail
from kstep.models.vma_locks import VmaLocksModel

HERE = Path(__file__).resolve().parent.parent
STEPS = ("vma_start_read", "vma_start_read_recheck")


@functools.lru_cache(maxsize=64)
def _kernel(scenario_name, base, overrides):
    """Linux's own steps on the same scenario: computed once per grader process."""
    sc = scenario.load("vma-locks", VmaLocksModel.scenario_schema,
                       str(HERE / scenario_name) if scenario_name.endswith(".toml") else scenario_name,
                       list(json.loads(overrides)))
    return verdict(VmaLocksModel(base), sc.config, 200_000)


def _compare(ctx, scenario_name, base, overrides=()):
    """Full credit when the student's steps explore as Linux's; else a share per step that does,
    judged alone with Linux's other step (feedback.step_credit)."""
    kernel = _kernel(scenario_name, base, json.dumps(list(overrides)))

    def ask(steps):
        try:
            return ctx.driver({"scenario": scenario_name, "base": base, "set": list(overrides),
                               **({"steps": steps} if steps else {})})
        except Fail as f:  # the code crashed or hit a limit: that choice of steps earns nothing
            return f.message

    credit, why = step_credit(ask, STEPS, kernel)
    if credit < 1:
        where = f"{scenario_name} ({base}{', ' + ', '.join(overrides) if overrides else ''})"
        raise Fail(f"{where}: {why.splitlines()[0]}", "\n".join(why.splitlines()[1:]), credit=credit)


def test_races_of_your_variant(ctx):
    v = ctx.variant
    ops = {"mprotect": "{op='mprotect', start=0, end=4, prot='r'}", "munmap": "{op='munmap', start=0, end=4}",
           "fork": "{op='fork'}"}
    _compare(ctx, "data/race.toml", v["base"], [f"threads.2.ops=[{ops[v['writer']]}]",
                                                f"threads.0.faults=[{v['fault']}]"])


def test_other_scenarios(ctx):
    _compare(ctx, "fork-vs-fault", "v6.12")


def test_v6_12_0_kernel(ctx):
    _compare(ctx, "recheck-race", "v6.12.0")
