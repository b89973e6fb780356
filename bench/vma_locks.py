"""6.12 with CONFIG_PER_VMA_LOCK=n (no-per-vma-lock) against 6.12 with per-VMA locks on
android-app-launch, in round-robin rounds, with its no-writer control, at the bundled size and at
two larger ones."""

import json

from kstep.measure.rounds import vma_contention

SIZES = {
    "bundled": [],
    "8 faulting threads, 2 mappers": ["threads.0.count=8", "threads.0.repeat=10",
                                      "threads.1.count=2", "threads.1.repeat=5"],
    "12 faulting threads, 4 mappers": ["threads.0.count=12", "threads.0.repeat=10",
                                       "threads.1.count=4", "threads.1.repeat=5"],
}


def run(out_dir, say=print) -> dict:
    result = {}
    for name, overrides in SIZES.items():
        say(f"vma-locks: {name} ...")
        result[name] = vma_contention("android-app-launch", overrides)
    (out_dir / "vma-locks.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
