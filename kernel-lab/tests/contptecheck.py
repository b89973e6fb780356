"""Identity of arm64's contpte helpers and folio_pte_batch() over them, compiled from the tree, and the
fork model's arm64 PTE format.

kernel-lab/build/arm64/contpte runs arch/arm64/mm/contpte.c's functions and the wrappers core mm calls
(arch/arm64/include/asm/pgtable.h's ptep_get, pte_batch_hint, wrprotect_ptes and set_ptes, under
CONFIG_ARM64_CONTPTE), and mm/internal.h's folio_pte_batch() as the arm64 kernel builds it, over those
wrappers, all copied from the tree by scripts/kernel-functions, under qemu-aarch64. This module records
every call the fork model (simulator/kstep/models/fork_batch/pgtable.py, format arm64-4K-contpte) makes
to those four helpers, and every folio_pte_batch() it runs (kstep.models.fork_batch.internal), while it
runs the bundled arm64 scenarios and layouts drawn from seeds: the page table before, the arguments, what
it returned, what it counted and the table after. It writes the model's PTE words in arm64's layout, runs
the kernel's function on them, and compares the returned PTE, hint or batch length (and the batch's
any_writable), the whole table after (read back in the model's bits), and the loads, stores, atomics and
TLB flushes of page-table memory.

    python kernel-lab/tests/contptecheck.py [--layouts N] [--edge-layouts N] [--first-seed S] [--binary NAME]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from kstep.models.fork_batch import pgtable as pt
from kstep.models.fork_batch.internal import fpb_flags
from ptebatchcheck import batches, copy_steps

LAB = Path(__file__).resolve().parents[1]
# arch/arm64/include/asm/pgtable-hwdef.h and pgtable-prot.h
PTE_VALID, PTE_TYPE_PAGE, PTE_USER, PTE_RDONLY = 1 << 0, 3 << 0, 1 << 6, 1 << 7
PTE_AF, PTE_NG, PTE_WRITE, PTE_CONT, PTE_UXN = 1 << 10, 1 << 11, 1 << 51, 1 << 52, 1 << 54
PTE_DIRTY, PTE_SPECIAL, PTE_UFFD_WP = 1 << 55, 1 << 56, 1 << 58
PTE_ADDR_LOW = ((1 << (50 - 12)) - 1) << 12
# every user data page's PTE carries these; a helper that dropped one would show as a difference
USER_PAGE = PTE_TYPE_PAGE | PTE_USER | PTE_NG | PTE_UXN
ARM64_BITS = {pt.PTE_WRITE: PTE_WRITE, pt.PTE_YOUNG: PTE_AF, pt.PTE_CONT: PTE_CONT, pt.PTE_SPECIAL: PTE_SPECIAL,
              pt.PTE_UFFD_WP: PTE_UFFD_WP}
LOW_BITS = (1 << pt.PFN_PTE_SHIFT) - 1
COUNTED = (pt.LOADS, pt.STORES, pt.ATOMICS, pt.TLB_FLUSHES)
# The model's virtual page 0 is mapped at 1 GiB: __contpte_try_fold() computes a folio's start address
# in unsigned arithmetic, which wraps for a folio mapped in part near address 0, where user space never
# is (mmap_min_addr).
FIRST_VPN = 1 << 18


def arm64(word: int) -> int:
    """The model's PTE word as arm64 lays it out, as the kernel builds it: a dirty entry has the software
    PTE_DIRTY, and PTE_RDONLY clear if it is writable too (pte_mkdirty(); do_anonymous_page() and the
    write fault make them so); a clean one has PTE_RDONLY. An entry the hardware dirtied through DBM
    (PTE_RDONLY cleared, no PTE_DIRTY) has no model word of its own. A non-present entry (none, or a
    swap entry) is the model's word moved above the valid bit: no helper here reads more of it."""
    if not word & pt.PTE_PRESENT:
        return word << 12
    if word & LOW_BITS & ~(pt.PTE_PRESENT | pt.PTE_DIRTY | sum(ARM64_BITS)):
        raise ValueError(f"PTE {word:#x} has a bit arm64 does not have")
    out = (word >> pt.PFN_PTE_SHIFT) << 12 | USER_PAGE
    for bit, arm_bit in ARM64_BITS.items():
        if word & bit:
            out |= arm_bit
    if word & pt.PTE_DIRTY:
        return out | PTE_DIRTY if word & pt.PTE_WRITE else out | PTE_DIRTY | PTE_RDONLY
    return out | PTE_RDONLY


def from_arm64(word: int) -> int:
    """An arm64 PTE word read back in the model's bits (dirty as pte_dirty() answers it)."""
    if not word & PTE_VALID:
        return word >> 12
    if word & USER_PAGE != USER_PAGE:
        raise ValueError(f"arm64 PTE {word:#x} lost a bit of a user page")
    out = (word & PTE_ADDR_LOW) >> 12 << pt.PFN_PTE_SHIFT | pt.PTE_PRESENT
    for bit, arm_bit in ARM64_BITS.items():
        if word & arm_bit:
            out |= bit
    if word & PTE_DIRTY or (word & PTE_WRITE and not word & PTE_RDONLY):
        out |= pt.PTE_DIRTY
    return out


class Call(NamedTuple):
    op: str  # get, hint, wrprotect, set, batch, copy
    table: tuple  # the model's words before
    args: tuple  # (I,), (I, PTE), (I, NR), (I, PTE, NR), (I, MAX_NR, FPB), (I, NR, PTE, SRC_FLAGS, DST_FLAGS)
    folios: tuple  # (first PFN, nr pages) of every folio set_ptes could fold over; the batch's or copy's folio
    ret: int  # the PTE ptep_get returned, the hint, the batch's length, or 0
    ops: tuple  # loads, stores, atomics, TLB flushes
    after: tuple  # the model's words after
    origin: str
    writable: bool = False  # folio_pte_batch's any_writable
    child: tuple = ((), ())  # __copy_present_ptes: the child's table before and after


def batch_calls(trace, origin: str) -> list[Call]:
    """Every folio_pte_batch() call of a fork model run on the arm64 format: the parent's table, entry
    and max_nr it started from, and the length, any_writable and page-table accesses of the model's."""
    out = []
    for step, start, end in batches(trace):
        c, f = start.copy, start.folios[start.copy.folio]
        ops = tuple(end.ops[k] - start.ops[k] for k in COUNTED)
        out.append(Call("batch", tuple(start.parent), (c.addr, c.max_nr, fpb_flags(start.vm[c.vma])),
                        ((f.pfn, 1 << f.order),), end.copy.nr, ops, tuple(start.parent), f"{origin} step {step}",
                        end.copy.any_writable))
    return out


def copy_calls(trace, origin: str) -> list[Call]:
    """Every __copy_present_ptes() call of a fork model run on the arm64 format: both tables before and
    after, the template, the VMAs' flags, and the page-table accesses of the model's."""
    out = []
    for step, pre, post, nr, src, dst in copy_steps(trace):
        c = pre.copy
        f = pre.folios[c.folio] if c.folio >= 0 else None
        ops = tuple(post.ops[k] - pre.ops[k] for k in COUNTED)
        out.append(Call("copy", tuple(pre.parent), (c.addr, nr, c.pte, src, dst),
                        ((f.pfn, 1 << f.order),) if f and f.order else (), 0, ops, tuple(post.parent),
                        f"{origin} step {step}", child=(tuple(pre.child), tuple(post.child))))
    return out


@contextmanager
def recording(calls: list, origin: list):
    """While inside, the fork model's calls to the four arm64 helpers are recorded into ``calls``
    (``origin[0]`` names the run)."""
    saved = {name: getattr(pt, name) for name in ("ptep_get", "pte_batch_hint", "wrprotect_ptes", "set_ptes")}

    def record(op, table, args, folios, ret, before, ops, after):
        calls.append(Call(op, tuple(table), args, folios, ret, tuple(ops[k] - before[k] for k in COUNTED),
                          tuple(after), f"{origin[0]} call {len(calls)}"))

    def ptep_get(fmt, table, i, ops):
        before, old = list(ops), list(table)
        pte = saved["ptep_get"](fmt, table, i, ops)
        if fmt == pt.ARM64:
            record("get", old, (i,), (), pte, before, ops, table)
        return pte

    def pte_batch_hint(fmt, i, pte):
        nr = saved["pte_batch_hint"](fmt, i, pte)
        if fmt == pt.ARM64:
            calls.append(Call("hint", (), (i, pte), (), nr, (0, 0, 0, 0), (), f"{origin[0]} call {len(calls)}"))
        return nr

    def wrprotect_ptes(fmt, table, i, nr, ops):
        before, old = list(ops), list(table)
        saved["wrprotect_ptes"](fmt, table, i, nr, ops)
        if fmt == pt.ARM64:
            record("wrprotect", old, (i, nr), (), 0, before, ops, table)

    def set_ptes(fmt, table, i, pte, nr, ops, folio_span):
        before, old = list(ops), list(table)
        pfns = {pt.pte_pfn(w) for w in old + [pte] if w & pt.PTE_PRESENT} | {pt.pte_pfn(pte) + k for k in range(nr)}
        folios = tuple(sorted({span for span in map(folio_span, pfns) if span is not None and span[1] > 1}))
        saved["set_ptes"](fmt, table, i, pte, nr, ops, folio_span)
        if fmt == pt.ARM64:
            record("set", old, (i, pte, nr), folios, 0, before, ops, table)

    for name, fn in (("ptep_get", ptep_get), ("pte_batch_hint", pte_batch_hint),
                     ("wrprotect_ptes", wrprotect_ptes), ("set_ptes", set_ptes)):
        setattr(pt, name, fn)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(pt, name, fn)


# What edge_layout draws: runs of folios that end inside a contpte block or at its edge.
EDGE_END = 200  # the address space of an edge layout: one PTE table
EDGE_RUNS = ("small", "whole", "part")  # order-0 folios side by side; order-4 ones mapped whole; one in part


def edge_layout(seed: int) -> dict:
    """An arm64 fork-alone layout drawn from a seed, where folios end inside contpte blocks and at their
    edges, with the next folio's pages physically contiguous and mapped with the same bits:

    - runs of order-0 folios side by side (the allocator places them at consecutive PFNs), mapped from an
      address that is the first one's PFN modulo CONT_PTES and on past the next whole block (a block of
      separate folios that looks foldable but for __contpte_try_fold()'s folio test, and a run that ends
      inside the block after it), or from anywhere, 1 to 20 of them;
    - runs of order-4 folios mapped whole, one after the other (a folded block's batch ends at its
      folio's end, with the next folio's block of the same bits right after it);
    - an order-4 folio mapped in part, from or up to a page inside its block.

    Every layout starts with one run of each of the first two kinds, then draws its runs. Folios are
    placed as the scenario's initial_state places them (in order, each aligned to its size, from
    FIRST_PFN). random_layout() seldom draws a whole block of order-0 folios."""
    from kstep.engine.prng import SplitMix64
    from kstep.models.fork_batch.scenario import MAX_MAPS, SCHEMA
    from kstep.models.fork_batch.state import FIRST_PFN

    r = SplitMix64(seed)
    folios, maps = [], []
    at, pfn, block = r.below(pt.CONT_PTES), FIRST_PFN, pt.CONT_PTES

    def place(order, first, pages, bits):
        nonlocal at, pfn
        pfn = (pfn + (1 << order) - 1) >> order << order
        folios.append({"name": f"F{len(folios)}", "order": order, "pinned": False})
        maps.append({"at": at, "folio": folios[-1]["name"], "first": first, "pages": pages, **bits})
        at += pages
        pfn += 1 << order

    def run(kind, aligned=True, count=1):
        nonlocal at
        bits = {b: r.below(2) == 1 for b in ("write", "dirty", "young")}
        if kind == "small":
            if aligned:
                at += (pfn - at) % block
                count = -pfn % block + block + r.below(block)
            for _ in range(count):
                place(0, 0, 1, bits)
        elif kind == "whole":
            at += -at % block  # an order-4 folio's PFN is a multiple of CONT_PTES
            for _ in range(count):
                place(4, 0, block, bits)
        else:
            first = r.below(block)
            at += (first - at) % block
            place(4, first, block - first if r.below(2) else 1 + r.below(block - first), bits)
        at += (0, 0, 1)[r.below(3)]

    run("small")
    run("whole", count=2 + r.below(2))
    while at + 4 * block <= EDGE_END and len(maps) <= MAX_MAPS - 3 * block:  # room for the longest run
        kind = EDGE_RUNS[r.below(len(EDGE_RUNS))]
        run(kind, aligned=r.below(2) == 1, count=1 + r.below(20 if kind == "small" else 3))
    return SCHEMA.check({"format": pt.ARM64, "mmf_has_pinned": False,
                         "vmas": [{"start": 0, "end": EDGE_END, "soft_dirty": False}], "folios": folios,
                         "maps": maps, "threads": [{"name": "P", "kind": "fork"}]}, "edge layout")


# 6.12's batched copy, and the single-PTE path for every PTE, which write-protects and maps a folded block
# one entry at a time: unfolding it (contpte_convert) and folding the child's back (contpte_try_fold)
STRATEGIES = ("folio-batch", "per-pte")


def runs_calls(first_seed: int, layouts: int, edges: int) -> list[Call]:
    """Every call the steps of the bundled arm64 scenarios (their schedules), of ``layouts`` arm64
    layouts random_layout() draws from seeds ``first_seed`` on and of ``edges`` edge_layout() draws from
    the same seeds (the fork alone) make under each of ``STRATEGIES``, and every folio_pte_batch() they
    run. Building the
    initial state is not recorded: it maps a scenario's folios with one set_ptes each, across PTE
    tables, where the kernel's faults would map them table by table."""
    from kstep.engine import Random, simulate
    from kstep.engine.schedule import Scripted
    from kstep.lab.replay.fork_batch import random_layout
    from kstep.models import MODELS, make_model
    from kstep.scenario_spec import scenario

    runs = []
    for name in scenario.bundled("fork-batch"):
        sc = scenario.load("fork-batch", MODELS["fork-batch"].scenario_schema, name)
        if sc.config["format"] == pt.ARM64:
            runs.append((sc.config, Scripted(sc.schedule) if sc.schedule else Random(0), name))
    seed, drawn = first_seed, 0
    while drawn < layouts:
        config = random_layout(seed)
        if config["format"] == pt.ARM64:
            runs.append((config, Random(0), f"layout seed {seed}"))
            drawn += 1
        seed += 1
    runs += [(edge_layout(seed), Random(0), f"edge layout seed {seed}")
             for seed in range(first_seed, first_seed + edges)]
    calls: list[Call] = []
    origin = [""]
    for config, schedule, name in runs:
        for strategy in STRATEGIES:
            model = make_model("fork-batch", strategy)
            state = model.initial(config)
            origin[0] = f"{name} ({strategy})"
            with recording(calls, origin):
                trace = simulate(model, state, schedule, max_steps=10_000_000, check=False)
            calls += batch_calls(trace, origin[0]) + copy_calls(trace, origin[0])
    return calls


def table_span(call: Call) -> tuple[int, int]:
    """The entries of the model's table the harness's table holds: the PTE table (PTRS_PER_PTE entries)
    the call works in; for ptep_get, which only reads, that table up to the end of the block of entry I;
    for pte_batch_hint, which reads no entry, none of it (only the address of entry I counts); for
    folio_pte_batch, the whole table."""
    base = call.args[0] - call.args[0] % pt.PTRS_PER_PTE
    if call.op == "hint":
        return base, base
    if call.op == "get":
        return base, min(pt.block_start(call.args[0]) + pt.CONT_PTES, len(call.table))
    return base, min(base + pt.PTRS_PER_PTE, len(call.table))


def text(call: Call) -> str:
    base, end = table_span(call)
    words = [arm64(w) for w in call.table[base:end]]
    while words and not words[-1]:
        words.pop()
    child = [arm64(w) for w in call.child[0][base:end]]
    while child and not child[-1]:
        child.pop()
    pfns = [(w & PTE_ADDR_LOW) >> 12 for w in words + child if w & PTE_VALID] + [first for first, _ in call.folios]
    args = [call.args[0] - base, *call.args[1:]]
    template = {"hint": 1, "set": 1, "copy": 2}.get(call.op)
    if template:
        pfns.append(pt.pte_pfn(args[template]))
        args[template] = arm64(args[template])
    folios = " ".join(f"{first} {nr}" for first, nr in call.folios)
    tables = f"ptes {len(words)}{''.join(f' {w}' for w in words)}\n{call.op} {' '.join(map(str, args))}\n"
    if call.op == "copy":
        tables += f"child {len(child)}{''.join(f' {w}' for w in child)}\n"
    return (f"case\nfirst {min(pfns, default=0)} {FIRST_VPN + base}\nfolios {len(call.folios)}{' ' if folios else ''}{folios}\n"
            f"{tables}end\n")


def differences(calls: list[Call], binary: str = "contpte") -> list[str]:
    """One message per call whose kernel result, table after or counts differ from the model's. The
    kernel's function runs once per distinct input (the model calls ptep_get on one table many times)."""
    path = LAB / "build" / "arm64" / binary
    inputs = list(dict.fromkeys(map(text, calls)))
    p = subprocess.run(["qemu-aarch64", str(path)], input="".join(inputs), capture_output=True, text=True,
                       timeout=600)
    if p.returncode or p.stderr:
        raise RuntimeError(f"{binary} exited {p.returncode}: {p.stderr.strip()}")
    lines = p.stdout.splitlines()
    if len(lines) != len(inputs):
        raise RuntimeError(f"{binary} printed {len(lines)} results for {len(inputs)} inputs")
    result = dict(zip(inputs, lines))
    out = []
    for call in calls:
        head, _, tail = result[text(call)].partition(" ptes")
        f = dict(zip(head.split()[::2], map(int, head.split()[1::2])))
        parent, _, child = tail.partition(" child")
        ret, ops = f["ret"], (f["loads"], f["stores"], f["atomics"], f["flushes"])
        ret = from_arm64(ret) if call.op == "get" else ret
        base, end = table_span(call)

        def read_back(words: str, model: tuple) -> tuple:
            kernel = [int(w) for w in words.split()]
            return model[:base] + tuple(map(from_arm64, kernel + [0] * (end - base - len(kernel)))) + model[end:]

        after = read_back(parent, call.after)
        child_after = read_back(child, call.child[1]) if call.op == "copy" else call.child[1]
        model_ops = call.ops if call.op != "hint" else ops
        if (ret, bool(f["writable"]), after, child_after, ops) != (call.ret, call.writable, call.after, call.child[1],
                                                                 model_ops):
            if child_after != call.child[1]:  # name the child's entries that differ
                after, call = child_after, call._replace(after=call.child[1])
            changed = [k for k in range(len(after)) if after[k] != call.after[k]][:4]
            out.append(f"{call.origin}: {call.op} {call.args}: kernel returned {ret:#x} (writable {f['writable']}), "
                       f"counted {ops}, entries {[(k, hex(after[k])) for k in changed]}; model {call.ret:#x} "
                       f"(writable {int(call.writable)}), {call.ops}, "
                       f"{[(k, hex(call.after[k])) for k in changed]}\ninput:\n{text(call)[:400]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", type=int, default=200, metavar="N", help="arm64 layouts drawn (default 200)")
    parser.add_argument("--edge-layouts", type=int, default=20, metavar="N",
                        help="edge_layout() draws: folios ending inside contpte blocks and at their edges (default 20)")
    parser.add_argument("--first-seed", type=int, default=0, metavar="S")
    parser.add_argument("--binary", default="contpte", help="contpte, or the mutated contpte-get-drops-dirty")
    args = parser.parse_args(argv)
    calls = runs_calls(args.first_seed, args.layouts, args.edge_layouts)
    bad = differences(calls, args.binary)
    kinds = {op: sum(c.op == op for c in calls) for op in ("get", "hint", "wrprotect", "set", "batch", "copy")}
    print(f"{len(calls)} calls ({', '.join(f'{n} {op}' for op, n in kinds.items())}) of the arm64 helpers, folio_pte_batch and __copy_present_ptes, "
          f"{len(bad)} differing")
    for message in bad[:3]:
        print(message)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
