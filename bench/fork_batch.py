"""fork's page-table copy, counted by the fork-batch model: operations per copied GiB for order-0,
order-4 and order-9 folios under each strategy of the December 2023 thread, on every PTE format,
with the change relative to per-pte (the shape of the thread's tables).  Counts, not times: the
model is run, never timed."""

import json

from kstep.fork_cost import STRATEGIES, predicted_relative_cost, strategy_table
from kstep.models.pgtable import FORMATS


def run(out_dir, say=print) -> dict:
    result = {"unit": "counted operations per GiB copied (4 KiB pages, 512 PTE tables)",
              "strategies": list(STRATEGIES), "formats": {}}
    for fmt in FORMATS:
        say(f"fork-batch: {fmt} ...")
        result["formats"][fmt] = {"strategies": strategy_table(fmt),
                                  "lab_modes_relative_to_4K": predicted_relative_cost(fmt)}
    (out_dir / "fork-batch.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
