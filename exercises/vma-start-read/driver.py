"""Runs your vma_read.py inside kstep's per-VMA lock model.

    echo '{"scenario": "data/race.toml", "base": "v6.12"}' | python driver.py

Your two steps replace the model's ``vma_start_read`` and ``vma_start_read_recheck``; the rest
of the model is Linux 6.12.117 (``base`` "v6.12") or 6.12.0 (``base`` "v6.12.0").
``explore`` visits every interleaving of the scenario and prints one JSON line: the verdict, the
invariant broken if any and its message, how many states the search visited, and the shortest
interleaving to the violation.  A ``set`` list changes scenario values as ``kstep run --set`` does
("threads.2.ops.0.op='munmap'"); a ``steps`` list takes only those of your steps, and Linux's
others (the grader judges each step alone this way: docs/instructor/grading.md).
"""

import json
import sys

from kstep.scenario_spec import scenario
from kstep.grading.feedback import verdict, with_steps
from kstep.models.vma_locks import VmaLocksModel
from kstep.models.vma_locks.broken import recheck_skipped

STEPS = ("vma_start_read", "vma_start_read_recheck")


def lock_held(s, i):
    """vma_start_read() returns true: thread i holds its VMA read-locked and goes on to
    check_detached.  (The model's own continuation after a passing recheck: the one the broken
    no-recheck variant takes without rechecking.)"""
    return recheck_skipped(s, i, None)


def student_model(base: str, steps=STEPS):
    import vma_read  # here, not at the top: the grader's hidden tests never import your code

    return with_steps(VmaLocksModel, base, {name: getattr(vma_read, name) for name in steps})


def main():
    request = json.loads(sys.stdin.read())
    model = student_model(request.get("base", "v6.12"), tuple(request.get("steps") or STEPS))
    sc = scenario.load(model.name, model.scenario_schema, request["scenario"], request.get("set", []))
    print(json.dumps(verdict(model, sc.config, request.get("max_states", 200_000))))


if __name__ == "__main__":
    main()
