"""Identity of the kernel's folio_pte_batch() over x86-64's own PTE helpers and the fork model's.

kernel-lab/build/x86_64/fork-pte-batch runs mm/internal.h's folio_pte_batch() and
__pte_batch_clear_ignored() with arch/x86/include/asm/pgtable.h's helpers, all copied from the tree
by scripts/kernel-functions. This module takes every folio_pte_batch() call the fork model
(simulator/kstep/models/fork_batch/, strategy folio-batch, x86-64 format) makes in the bundled
scenarios and in layouts drawn from seeds, with the page table, folio and flags it made it on,
turns the model's PTE words into x86-64's (the model keeps its own bit layout: pgtable.py), and
compares the batch length and any_writable the kernel's function returns with the model's.

    python kernel-lab/tests/ptebatchcheck.py [--seeds N] [--first-seed S]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from kstep.models.fork_batch import pgtable as pt
from kstep.models.fork_batch.internal import fpb_flags

LAB = Path(__file__).resolve().parents[1]
# the model's bits -> x86-64's (arch/x86/include/asm/pgtable_types.h): present 0, RW 1, accessed 5,
# dirty 6, special SOFTW1 9, uffd-wp SOFTW2 10, soft-dirty SOFTW3 11; the PFN from bit 12 in both
X86_BITS = {pt.PTE_PRESENT: 1 << 0, pt.PTE_WRITE: 1 << 1, pt.PTE_YOUNG: 1 << 5, pt.PTE_DIRTY: 1 << 6,
            pt.PTE_SPECIAL: 1 << 9, pt.PTE_UFFD_WP: 1 << 10, pt.PTE_SOFT_DIRTY: 1 << 11}
LOW_BITS = (1 << pt.PFN_PTE_SHIFT) - 1


class Call(NamedTuple):
    ptes: tuple  # the model's words, from the batch's first entry on
    max_nr: int
    flags: int
    folio_pfn: int
    folio_pages: int
    nr: int  # what the model's folio_pte_batch returned
    any_writable: bool
    origin: str


def x86(word: int) -> int:
    """The model's PTE word as x86-64 lays it out; a model bit x86-64 has no place for is an error."""
    if not word & pt.PTE_PRESENT and word:
        return (word >> pt.PFN_PTE_SHIFT) << pt.PFN_PTE_SHIFT | 1 << 9  # not present: never batched
    out = word & ~LOW_BITS
    for bit, x86_bit in X86_BITS.items():
        if word & bit:
            out |= x86_bit
    if word & LOW_BITS & ~sum(X86_BITS):
        raise ValueError(f"PTE {word:#x} has a bit x86-64 does not have")
    return out


def calls(trace, origin: str) -> list[Call]:
    """Every folio_pte_batch() call of a fork model run: its inputs, and what it returned."""
    out, start = [], None
    for step, (action, pre) in enumerate(zip(trace.actions, trace.states)):
        label = getattr(action, "label", "")
        if label == "folio_pte_batch" and start is None:
            start = pre
        elif label != "folio_pte_batch" and start is not None:
            c, f = start.copy, start.folios[start.copy.folio]
            out.append(Call(tuple(start.parent[c.addr:c.addr + c.max_nr]), c.max_nr, fpb_flags(start.vm[c.vma]),
                            f.pfn, 1 << f.order, pre.copy.nr, pre.copy.any_writable, f"{origin} step {step}"))
            start = None
    return out


def text(call: Call) -> str:
    words = [x86(w) for w in call.ptes]
    return (f"case\nfolio {call.folio_pfn} {call.folio_pages}\nflags {call.flags}\n"
            f"ptes {len(words)} {' '.join(map(str, words))}\nbatch 0 {call.max_nr}\nend\n")


def differences(all_calls: list[Call], binary: str = "fork-pte-batch") -> list[str]:
    path = LAB / "build" / "x86_64" / binary
    p = subprocess.run([str(path)], input="".join(map(text, all_calls)), capture_output=True, text=True, timeout=600)
    if p.returncode or p.stderr:
        raise RuntimeError(f"{binary} exited {p.returncode}: {p.stderr.strip()}")
    lines = p.stdout.splitlines()
    if len(lines) != len(all_calls):
        raise RuntimeError(f"{binary} printed {len(lines)} results for {len(all_calls)} calls")
    out = []
    for call, line in zip(all_calls, lines):
        f = line.split()
        if (int(f[1]), bool(int(f[3]))) != (call.nr, call.any_writable):
            out.append(f"{call.origin}: kernel nr {f[1]} writable {f[3]}, model nr {call.nr} writable "
                       f"{int(call.any_writable)}\ninput:\n{text(call)}")
    return out


def scenario_calls() -> list[Call]:
    from kstep.engine import scenario
    from kstep.lab.fork_batch import simulated
    from kstep.models import MODELS

    out = []
    for name in scenario.bundled("fork-batch"):
        sc = scenario.load("fork-batch", MODELS["fork-batch"].scenario_schema, name)
        if sc.config["format"] == pt.X86_64:
            out += calls(simulated(sc.config, "folio-batch", sc.schedule), name)
    return out


def drawn_calls(first_seed: int, layouts: int) -> list[Call]:
    """The calls of the first ``layouts`` x86-64 layouts random_layout() draws from seeds first_seed on."""
    from kstep.lab.fork_batch import random_layout, simulated

    out, seed, taken = [], first_seed, 0
    while taken < layouts:
        config = random_layout(seed)
        if config["format"] == pt.X86_64:
            out += calls(simulated(config, "folio-batch"), f"layout seed {seed}")
            taken += 1
        seed += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", type=int, default=200, metavar="N", help="x86-64 layouts drawn (default 200)")
    parser.add_argument("--first-seed", type=int, default=0, metavar="S")
    args = parser.parse_args(argv)
    all_calls = scenario_calls() + drawn_calls(args.first_seed, args.layouts)
    bad = differences(all_calls)
    print(f"{len(all_calls) - len(bad)} of {len(all_calls)} folio_pte_batch() calls identical")
    for message in bad[:3]:
        print(message)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
