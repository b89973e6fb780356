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



def test_each_seed_chapter_opens_its_story_with_the_bench_table():
    from kstep.views import seeds as view
    for mech in view.HEADERS:
        text = (ROOT / "docs" / "chapters" / f"{mech}.md").read_text()
        story = text.index("\n## The story")
        assert text.index(f"```{{kstep-seeds}} {mech}\n", story) < text.index("\n## ", story + 1)
        rows, comparable = view.table(mech)
        assert len(rows) == 1 + len(COMMITTED[mech]["rows"]) and comparable == COMMITTED[mech]["comparable"]
