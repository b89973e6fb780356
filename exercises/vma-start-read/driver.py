"""Runs your vma_read.py inside kstep's per-VMA lock model.

    echo '{"scenario": "data/race.toml", "base": "v6.12"}' | python driver.py

Your two steps replace the model's ``vma_start_read`` and ``vma_start_read_recheck``; the rest
of the model is Linux 6.12 (``base`` "v6.12") or the seqcount kernels (``base`` "seqcount").
``explore`` visits every interleaving of the scenario and prints one JSON line: the verdict, the
invariant broken if any, and how many states the search visited.  A ``set`` list changes scenario
values as ``kstep run --set`` does ("threads.2.ops.0.op='munmap'").
"""

import json
import sys

from kstep.engine import Variant, explore, scenario
from kstep.models.vma_locks import VmaLocksModel
from kstep.models.vma_locks.broken import recheck_skipped


def lock_held(s, i):
    """vma_start_read() returns true: thread i holds its VMA read-locked and goes on to
    check_detached.  (The model's own continuation after a passing recheck: the one the broken
    no-recheck variant takes without rechecking.)"""
    return recheck_skipped(s, i, None)


def student_model(base: str) -> VmaLocksModel:
    import vma_read  # here, not at the top: the grader imports verdict() without your code

    kernel = VmaLocksModel.variants[base]
    mine = Variant("student", f"{base} with vma_read.py's vma_start_read and its recheck",
                   replaces={**kernel.replaces, "vma_start_read": vma_read.vma_start_read,
                             "vma_start_read_recheck": vma_read.vma_start_read_recheck},
                   params=kernel.params)
    cls = type("StudentVmaLocks", (VmaLocksModel,), {"variants": {**VmaLocksModel.variants, "student": mine}})
    return cls("student")


def verdict(model, config, max_states):
    result = explore(model, model.initial(config), max_states=max_states)
    v = result.violation
    return {"verdict": "violation" if v else "clean" if result.exhausted else "bounded",
            "invariant": v.invariant if v else None, "states": result.states,
            "interleaving": [str(a) for a in result.counterexample.actions] if v else []}


def main():
    request = json.loads(sys.stdin.read())
    model = student_model(request.get("base", "v6.12"))
    sc = scenario.load(model.name, model.scenario_schema, request["scenario"], request.get("set", []))
    print(json.dumps(verdict(model, sc.config, request.get("max_states", 200_000))))


if __name__ == "__main__":
    main()
