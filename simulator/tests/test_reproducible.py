"""What the course site shows does not depend on the process that built it: two builds of one tree are
the same site (scripts/site-diff), whatever Python's hash seed was in each Sphinx worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SIMULATOR = Path(__file__).resolve().parents[1]
# Every variant's replaced steps, in the order a broken variant's page lists them.
LISTED = """
import json
from kstep.models import MODELS
print(json.dumps({m: {n: list(v.replaces) for n, v in MODELS[m].variants.items()} for m in sorted(MODELS)}))
"""


def listed(seed: int) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(SIMULATOR)}
    out = subprocess.run([sys.executable, "-c", LISTED], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_variants_replaced_steps_come_in_the_same_order_under_any_hash_seed():
    """damon's as-of variants listed them in a set's order: their pages differed from build to build."""
    first = listed(1)
    assert any(steps for variants in first.values() for steps in variants.values())
    assert listed(2) == first
