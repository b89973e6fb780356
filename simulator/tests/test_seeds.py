"""The committed seed tables (simulator/kstep/seeds.json, written by `python bench/run.py seeds`)
are what the model computes now: the bundled slice is run again and must match number for number,
so no table quotes a number the model no longer gives."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import seeds  # noqa: E402

COMMITTED = json.loads(seeds.COMMITTED.read_text())


def test_the_committed_vma_and_qspinlock_rows_are_what_the_model_gives():
    now = seeds.model_tables(("vma-locks", "qspinlock"), vma_sizes=seeds.BUNDLED)
    bundled = [r for r in COMMITTED["vma-locks"]["rows"] if r["size"] == "bundled"]
    assert now["vma-locks"]["rows"] == bundled
    assert now["qspinlock"] == COMMITTED["qspinlock"]


# DAMON's cheap slice: hot/cold's overhead at every size (the busy workload's reruns take minutes) and
# prcl on the process that comes back to its paged-out heap, the row whose refaults the table costs
DAMON_SLICE = {"overhead_workloads": ("hot/cold",), "prcl": ("phase-change, back at 7 s",), "ethp": ()}


def test_the_committed_damon_rows_are_what_the_model_gives():
    now = seeds.damon(**DAMON_SLICE)
    slice_ = {(r["kind"], r["workload"]) for r in now}
    assert len(now) == len(slice_) == 2
    assert now == [r for r in COMMITTED["damon"]["rows"] if (r["kind"], r["workload"]) in slice_]
    assert COMMITTED["damon"]["comparable"] == seeds.COMPARABLE["damon"]



def test_each_seed_chapter_opens_its_story_with_the_bench_table():
    from kstep.views import seeds as view
    for mech in view.HEADERS:
        text = (ROOT / "docs" / "chapters" / f"{mech}.md").read_text()
        story = text.index("\n## The story")
        assert text.index(f"```{{kstep-seeds}} {mech}\n", story) < text.index("\n## ", story + 1)
        rows, comparable = view.table(mech)
        assert len(rows) == 1 + len(COMMITTED[mech]["rows"]) and comparable == COMMITTED[mech]["comparable"]
