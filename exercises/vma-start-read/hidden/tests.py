"""Hidden tests of vma-start-read: the student's steps explored against Linux's own.

CANARY-KSTEP-HIDDEN-vma-start-read: this line must never reach a student's output.
"""

import functools
import importlib.util
import json
from pathlib import Path

from kstep.engine import scenario
from kstep.grading.harness import Fail
from kstep.models.vma_locks import VmaLocksModel

HERE = Path(__file__).resolve().parent.parent


def _driver():
    spec = importlib.util.spec_from_file_location("vma_start_read_driver", HERE / "driver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=64)
def _kernel(scenario_name, base, overrides):
    """Linux's own steps on the same scenario: computed once per grader process."""
    sc = scenario.load("vma-locks", VmaLocksModel.scenario_schema,
                       str(HERE / scenario_name) if scenario_name.endswith(".toml") else scenario_name,
                       list(json.loads(overrides)))
    return _driver().verdict(VmaLocksModel(base), sc.config, 200_000)


def _compare(ctx, scenario_name, base, overrides=()):
    request = {"scenario": scenario_name, "base": base, "set": list(overrides)}
    mine = ctx.driver(request)
    kernel = _kernel(scenario_name, base, json.dumps(list(overrides)))
    if not isinstance(mine, dict) or mine.get("verdict") != kernel["verdict"] \
            or mine.get("invariant") != kernel["invariant"] or mine.get("states") != kernel["states"]:
        where = f"{scenario_name} ({base}{', ' + ', '.join(overrides) if overrides else ''})"
        if isinstance(mine, dict) and mine.get("verdict") == "violation":
            raise Fail(f"{where}: with your steps the model breaks {mine.get('invariant')}, Linux's does not; "
                       f"the shortest interleaving:", " ".join(str(a) for a in mine.get("interleaving", [])))
        got = f"{mine.get('verdict')}, {mine.get('states')} states" if isinstance(mine, dict) else repr(mine)
        raise Fail(f"{where}: your steps give {got}; Linux's give {kernel['verdict']}, {kernel['states']} states "
                   f"(a different set of reachable states: some check or some next step differs)")


def test_races_of_your_variant(ctx):
    v = ctx.variant
    ops = {"mprotect": "{op='mprotect', start=0, end=4, prot='r'}", "munmap": "{op='munmap', start=0, end=4}",
           "fork": "{op='fork'}"}
    _compare(ctx, "data/race.toml", v["base"], [f"threads.2.ops=[{ops[v['writer']]}]",
                                                f"threads.0.faults=[{v['fault']}]"])


def test_other_scenarios(ctx):
    _compare(ctx, "fork-vs-fault", "v6.12")


def test_seqcount_kernels(ctx):
    _compare(ctx, "recheck-race", "seqcount")
