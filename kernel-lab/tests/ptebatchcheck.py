"""Identity of the kernel's folio_pte_batch() and __copy_present_ptes() over x86-64's own PTE helpers
and the fork model's.

kernel-lab/build/x86_64/fork-pte-batch runs mm/internal.h's folio_pte_batch() and
__pte_batch_clear_ignored() with arch/x86/include/asm/pgtable.h's helpers, all copied from the tree
by scripts/kernel-functions. This module takes every folio_pte_batch() call the fork model
(simulator/kstep/models/fork_batch/, strategy folio-batch, x86-64 format) makes in the bundled
scenarios and in layouts drawn from seeds, with the page table, folio and flags it made it on,
turns the model's PTE words into x86-64's (the model keeps its own bit layout: pgtable.py), and
compares the batch length and any_writable the kernel's function returns with the model's. Likewise
every __copy_present_ptes() call: the parent's and the child's entries of the batch after it (read
back in the model's bits: x86-64 keeps a write-protected PTE's dirty bit as SavedDirty, bit 58).

    python kernel-lab/tests/ptebatchcheck.py [--layouts N] [--first-seed S]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from kstep.models.fork_batch import pgtable as pt
from kstep.models.fork_batch.internal import fpb_flags
from kstep.models.fork_batch.state import SHARED

LAB = Path(__file__).resolve().parents[1]
# the model's bits -> x86-64's (arch/x86/include/asm/pgtable_types.h): present 0, RW 1, accessed 5,
# dirty 6, special SOFTW1 9, uffd-wp SOFTW2 10, soft-dirty SOFTW3 11; the PFN from bit 12 in both
X86_BITS = {pt.PTE_PRESENT: 1 << 0, pt.PTE_WRITE: 1 << 1, pt.PTE_YOUNG: 1 << 5, pt.PTE_DIRTY: 1 << 6,
            pt.PTE_SPECIAL: 1 << 9, pt.PTE_UFFD_WP: 1 << 10, pt.PTE_SOFT_DIRTY: 1 << 11}
LOW_BITS = (1 << pt.PFN_PTE_SHIFT) - 1
SAVED_DIRTY = 1 << 58
PFN_MASK = ((1 << 52) - 1) & ~LOW_BITS
VM_SHARED, VM_MAYWRITE, VM_UFFD_WP = 0x8, 0x20, 0x1000


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


def from_x86(word: int) -> int:
    """An x86-64 PTE word read back in the model's bits (dirty: Dirty or SavedDirty)."""
    out = word & PFN_MASK
    for bit, x86_bit in X86_BITS.items():
        if word & x86_bit:
            out |= bit
    return out | pt.PTE_DIRTY if word & SAVED_DIRTY else out


class Copy(NamedTuple):
    parent: tuple  # the model's words of the batch, before
    template: int
    src_flags: int
    dst_flags: int
    after: tuple  # (parent, child) words after, the model's
    origin: str


def copy_steps(trace):
    """(step, before, after, nr, src_flags, dst_flags) of every __copy_present_ptes() call of a fork model
    run. The model's call has no step of its own: it starts at the first of its steps (wrprotect_ptes,
    when it write-protects the parent, then set_ptes) and ends after set_ptes; nr is the child's entries
    from the call's on that it set."""
    labels = [getattr(a, "label", "") for a in trace.actions]
    for step, (label, pre) in enumerate(zip(labels, trace.states)):
        if label not in ("wrprotect_ptes", "set_ptes") or step and labels[step - 1] == "wrprotect_ptes":
            continue
        k = step
        while labels[k] != "set_ptes":
            k += 1
        post, c = trace.states[k + 1], pre.copy
        nr = 0
        while c.addr + nr < len(post.child) and post.child[c.addr + nr] != pre.child[c.addr + nr]:
            nr += 1
        vm = pre.vm[c.vma]
        src = VM_MAYWRITE | (VM_SHARED if vm.kind == SHARED else 0)
        yield step, pre, post, nr, src, VM_UFFD_WP if vm.uffd_wp else 0


def copies(trace, origin: str) -> list[Copy]:
    """Every __copy_present_ptes() call of a fork model run: the batch before, and both tables after."""
    out = []
    for step, pre, post, nr, src, dst in copy_steps(trace):
        a = pre.copy.addr
        out.append(Copy(tuple(pre.parent[a:a + nr]), pre.copy.pte, src, dst,
                        (tuple(post.parent[a:a + nr]), tuple(post.child[a:a + nr])), f"{origin} step {step}"))
    return out


def copy_text(copy: Copy) -> str:
    words = " ".join(str(x86(w)) for w in copy.parent)
    return (f"case\nvma {copy.src_flags} {copy.dst_flags}\nptes {len(copy.parent)} {words}\n"
            f"copy {x86(copy.template)}\nend\n")


def copy_differences(all_copies: list[Copy], binary: str = "fork-pte-batch") -> list[str]:
    path = LAB / "build" / "x86_64" / binary
    p = subprocess.run([str(path)], input="".join(map(copy_text, all_copies)), capture_output=True, text=True,
                       timeout=600)
    if p.returncode or p.stderr:
        raise RuntimeError(f"{binary} exited {p.returncode}: {p.stderr.strip()}")
    out = []
    for copy, line in zip(all_copies, p.stdout.splitlines(), strict=True):
        words = [int(w) for w in line.split()[1:] if w != "child"]
        n = len(copy.parent)
        got = (tuple(map(from_x86, words[:n])), tuple(map(from_x86, words[n:])))
        if got != copy.after:
            out.append(f"{copy.origin}: kernel parent/child {[hex(w) for w in got[0] + got[1]]}, model "
                       f"{[hex(w) for w in copy.after[0] + copy.after[1]]}\ninput:\n{copy_text(copy)}")
    return out


def batches(trace):
    """(step, before, after) of every folio_pte_batch() call of a fork model run: the state before its
    first step and the state after its last one (the model's call is a step per loop turn)."""
    start = None
    for step, (action, pre) in enumerate(zip(trace.actions, trace.states)):
        label = getattr(action, "label", "")
        if label == "folio_pte_batch" and start is None:
            start = pre
        elif label != "folio_pte_batch" and start is not None:
            yield step, start, pre
            start = None


def calls(trace, origin: str) -> list[Call]:
    """Every folio_pte_batch() call of a fork model run: its inputs, and what it returned."""
    out = []
    for step, start, end in batches(trace):
        c, f = start.copy, start.folios[start.copy.folio]
        out.append(Call(tuple(start.parent[c.addr:c.addr + c.max_nr]), c.max_nr, fpb_flags(start.vm[c.vma]),
                        f.pfn, 1 << f.order, end.copy.nr, end.copy.any_writable, f"{origin} step {step}"))
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


def scenario_runs(fmt: str = pt.X86_64) -> list[tuple]:
    """(trace, name) of the fork model's run of every bundled scenario of PTE format ``fmt``."""
    from kstep.scenario_spec import scenario
    from kstep.lab.replay.fork_batch import simulated
    from kstep.models import MODELS

    out = []
    for name in scenario.bundled("fork-batch"):
        sc = scenario.load("fork-batch", MODELS["fork-batch"].scenario_schema, name)
        if sc.config["format"] == fmt:
            out.append((simulated(sc.config, "folio-batch", sc.schedule), name))
    return out


def drawn_runs(first_seed: int, layouts: int, fmt: str = pt.X86_64) -> list[tuple]:
    """(trace, origin) of the first ``layouts`` layouts of PTE format ``fmt`` random_layout() draws from seeds
    first_seed on."""
    from kstep.lab.replay.fork_batch import random_layout, simulated

    out, seed = [], first_seed
    while len(out) < layouts:
        config = random_layout(seed)
        if config["format"] == fmt:
            out.append((simulated(config, "folio-batch"), f"layout seed {seed}"))
        seed += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", type=int, default=200, metavar="N", help="x86-64 layouts drawn (default 200)")
    parser.add_argument("--first-seed", type=int, default=0, metavar="S")
    args = parser.parse_args(argv)
    runs = scenario_runs() + drawn_runs(args.first_seed, args.layouts)
    all_calls = [c for trace, origin in runs for c in calls(trace, origin)]
    all_copies = [c for trace, origin in runs for c in copies(trace, origin)]
    bad = differences(all_calls) + copy_differences(all_copies)
    print(f"{len(all_calls)} folio_pte_batch() and {len(all_copies)} __copy_present_ptes() calls, "
          f"{len(bad)} differing")
    for message in bad[:3]:
        print(message)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
