"""Identity of the kernel's copy_present_ptes() and the fork model's: the folio counts it leaves.

kernel-lab/build/ARCH/fork-copy runs mm/memory.c's copy_present_ptes() and copy_present_page() with
include/linux/rmap.h's folio_try_dup_anon_rmap_pte(s)/folio_dup_file_rmap_pte(s), include/linux/
page_ref.h's and mm.h's refcount and pin queries and page-flags.h's PageAnonExclusive, all copied from
the tree by scripts/kernel-functions, over x86-64's PTE helpers (ARCH x86_64) or over arm64's with
arch/arm64/mm/contpte.c behind them (ARCH arm64, under qemu-aarch64). This module takes every
copy_present_ptes() call the fork model (strategy folio-batch, in the x86-64 format or the arm64 contpte
one) makes in the bundled scenarios and in layouts drawn from seeds, from its step to the one its return
leads to (the next ptep_get, or add_mm_rss_vec at the table's end or on -EAGAIN), gives the kernel's
function the same page tables (the parent's and the child's, whole, mapped where the model maps them:
arm64's contpte helpers read and fold aligned 16-entry blocks), folios, preallocated page, VMA flags and
MMF_HAS_PINNED, and compares what both leave: the return value, the rss vector, each folio's _refcount,
_large_mapcount, every page's _mapcount and PageAnonExclusive, whether the preallocated page was used,
and the parent's and the child's entries. A call another thread's step interleaves with (a GUP-fast pin
between two of the model's steps) is left out and counted: the kernel runs the call under the page-table
lock, which GUP-fast does not take, so the kernel's function run alone is no reference for it.

On arm64, the edge layouts of contptecheck.py too (folios ending inside contpte blocks and at their edges).

    python kernel-lab/tests/copycheck.py [--arch x86_64|arm64] [--layouts N] [--edge-layouts N] [--first-seed S]
        [--binary NAME]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from contptecheck import FIRST_VPN, arm64, edge_layout, from_arm64  # noqa: E402
from ptebatchcheck import VM_MAYWRITE, VM_SHARED, VM_UFFD_WP, drawn_runs, from_x86, scenario_runs, x86  # noqa: E402

from kstep.models.fork_batch import pgtable as pt  # noqa: E402
from kstep.models.fork_batch.state import (ANON, COPIED, FILE, NO_LARGE_MAPCOUNT, SHARED, SHMEM,  # noqa: E402
                                           folio_index)

LAB = Path(__file__).resolve().parents[1]
VM_WRITE, VM_SOFTDIRTY = 0x2, 0x08000000  # include/linux/mm.h
EAGAIN = 11
KINDS = {ANON: 0, FILE: 1, SHMEM: 2}
NEW = 3  # the harness's kind of a preallocated page not mapped yet
RETURNS_TO = ("ptep_get", "add_mm_rss_vec")  # the steps copy_pte_range takes after copy_present_ptes() returns


class Arch(NamedTuple):
    fmt: str  # the model's PTE format
    word: object  # the model's PTE word -> the architecture's
    model: object  # the architecture's PTE word -> the model's
    run: tuple  # what runs a binary of build/ARCH/


ARCHES = {"x86_64": Arch(pt.X86_64, x86, from_x86, ()), "arm64": Arch(pt.ARM64, arm64, from_arm64, ("qemu-aarch64",))}


class Call(NamedTuple):
    text: str  # the harness's input
    want: str  # what the model left, in the harness's output format
    origin: str


def folio_text(f, kind: int) -> str:
    pages = " ".join(map(str, f.mapcount))
    excl = " ".join(str(f.exclusive >> k & 1) for k in range(f.nr_pages))
    return (f"folio {f.pfn} {f.nr_pages} {kind} {f.refcount} {f.pincount} {f.large_mapcount}\n"
            f"pages {pages}\nexcl {excl}\n")


def folio_result(f) -> str:
    excl = " ".join(str(f.exclusive >> k & 1) for k in range(f.nr_pages))
    # an order-0 folio has no _large_mapcount of its own: the harness prints what it was given
    return f"folio {f.refcount} {f.large_mapcount} {' '.join(map(str, f.mapcount))} {excl}"


def involved(s, c) -> list[int]:
    """The folios the parent's present entries from the copy's on map, and the preallocated one."""
    ks = set()
    for w in s.parent[c.addr:c.addr + c.max_nr]:
        if pt.pte_present(w) and not pt.pte_special(w):
            ks.add(folio_index(s, pt.pte_pfn(w)))
    if c.prealloc >= 0:
        ks.add(c.prealloc)
    return sorted(ks)


def vm_flags(s, c) -> tuple[int, int]:
    """The source and the child's VMA's vm_flags, as the model's VMA has them."""
    vm = s.vm[c.vma]
    flags = VM_MAYWRITE | (VM_SHARED if vm.kind == SHARED else 0) | (VM_WRITE if "w" in s.vmas[c.vma].prot else 0)
    flags |= 0 if vm.soft_dirty else VM_SOFTDIRTY
    return flags, flags | (VM_UFFD_WP if vm.uffd_wp else 0)


def table_span(s, c) -> tuple[int, int]:
    """The entries of the PTE table the call works in that the harness is given: from the table's first
    one to the last that is not none in either table, or that the call may copy."""
    base = c.addr - c.addr % pt.PTRS_PER_PTE
    end = min(base + pt.PTRS_PER_PTE, len(s.parent))
    used = [k + 1 for k in range(base, end) if s.parent[k] or s.child[k]]
    return base, max(used + [c.addr + c.max_nr])


def calls(trace, origin: str, arch: str = "x86_64") -> tuple[list[Call], int]:
    """Every copy_present_ptes() call of a fork model run no other thread interleaves with, and the
    count of those left out."""
    word, model = ARCHES[arch].word, ARCHES[arch].model
    out, left_out = [], 0
    actions = trace.actions
    for step, a in enumerate(actions):
        if getattr(a, "label", "") != "copy_present_ptes":
            continue
        k = step + 1
        while k < len(actions) and not (actions[k].actor == a.actor and actions[k].label in RETURNS_TO):
            k += 1
        pre, post = trace.states[step], trace.states[k] if k < len(trace.states) else None
        c = pre.copy
        ks = involved(pre, c)
        if (post is None or any(b.actor != a.actor for b in actions[step:k])
                or any(pre.folios[j].large_mapcount == NO_LARGE_MAPCOUNT for j in ks)):
            left_out += 1
            continue
        src, dst = vm_flags(pre, c)
        folios = "".join(folio_text(pre.folios[j], NEW if j == c.prealloc else KINDS[pre.folios[j].kind]) for j in ks)
        base, end = table_span(pre, c)
        prealloc = pre.folios[c.prealloc].pfn if c.prealloc >= 0 else 0
        tables = "".join(f"{key} {end - base} {' '.join(str(word(w)) for w in table[base:end])}\n"
                         for key, table in (("ptes", pre.parent), ("child", pre.child)))
        text = (f"case\nmm {int(pre.mmf_has_pinned)}\nvma {src} {dst} {word(pt.PTE_PRESENT | pt.PTE_YOUNG)}\n{folios}"
                f"prealloc {prealloc}\n{tables}copy {FIRST_VPN + base} {c.addr - base} {c.max_nr}\nend\n")
        child = post.child[c.addr:c.addr + c.max_nr]
        nr = sum(1 for before, after in zip(pre.child[c.addr:], child) if before != after)

        def entries(table) -> str:  # as the architecture's words read back give them
            return " ".join(hex(model(word(w))) for w in table[base:end])

        rss = [x - y for x, y in zip(post.copy.rss, c.rss)]
        # a preallocated page the call did not use: the model's step drops it at once (copy_pte_range's
        # folio_put(prealloc) after the call), so count back that reference
        left = c.prealloc >= 0 and not (nr and post.ghost_batches[-1].how == COPIED)
        after = [post.folios[j]._replace(refcount=post.folios[j].refcount + (left and j == c.prealloc)) for j in ks]
        want = " ".join([f"ret {nr or -EAGAIN} rss {' '.join(map(str, rss))}", *map(folio_result, after),
                         f"prealloc {int(left)} parent {entries(post.parent)} child {entries(post.child)}"])
        out.append(Call(text, want, f"{origin} step {step}"))
    return out, left_out


def edge_runs(first_seed: int, edges: int) -> list[tuple]:
    """(trace, origin) of the fork alone on ``edges`` arm64 edge layouts drawn from seeds first_seed on."""
    from kstep.lab.replay.fork_batch import simulated

    return [(simulated(edge_layout(seed), "folio-batch"), f"edge layout seed {seed}")
            for seed in range(first_seed, first_seed + edges)]


def paths(all_calls: list[Call]) -> str:
    """How many calls took each of copy_present_ptes()'s ways out, as the model's results say."""
    counts = {"a batch": 0, "one PTE": 0, "a copied page": 0, "-EAGAIN": 0}
    for call in all_calls:
        ret = int(call.want.split()[1])
        used = "prealloc 0" in call.want and "\nprealloc 0\n" not in call.text
        way = "-EAGAIN" if ret < 0 else "a batch" if ret > 1 else "a copied page" if used else "one PTE"
        counts[way] += 1
    return ", ".join(f"{n} {way}" for way, n in counts.items())


def differences(all_calls: list[Call], binary: str = "fork-copy", arch: str = "x86_64") -> list[str]:
    path = LAB / "build" / arch / binary
    p = subprocess.run([*ARCHES[arch].run, str(path)], input="".join(c.text for c in all_calls), capture_output=True,
                       text=True, timeout=600)
    if p.returncode or p.stderr:
        raise RuntimeError(f"{binary} exited {p.returncode}: {p.stderr.strip()}")
    lines = p.stdout.splitlines()
    if len(lines) != len(all_calls):
        raise RuntimeError(f"{binary} printed {len(lines)} results for {len(all_calls)} calls")
    out = []
    for call, line in zip(all_calls, lines):
        head, tables = line.split(" parent ")
        parent, child = tables.split(" child ")
        got = " ".join([head, "parent", *(hex(ARCHES[arch].model(int(w))) for w in parent.split()),
                        "child", *(hex(ARCHES[arch].model(int(w))) for w in child.split())])
        if got != call.want:
            out.append(f"{call.origin}:\n kernel {got}\n model  {call.want}\ninput:\n{call.text}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=ARCHES, default="x86_64",
                        help="x86_64: x86-64 layouts; arm64: the model's arm64 contpte ones (default x86_64)")
    parser.add_argument("--layouts", type=int, default=200, metavar="N", help="layouts drawn (default 200)")
    parser.add_argument("--edge-layouts", type=int, default=0, metavar="N",
                        help="arm64 only: contptecheck.py's edge layouts drawn (default 0)")
    parser.add_argument("--first-seed", type=int, default=0, metavar="S")
    parser.add_argument("--binary", default="fork-copy", help="a build of kernel-lab/build/ARCH/ (a mutant)")
    args = parser.parse_args(argv)
    if args.edge_layouts and args.arch != "arm64":
        parser.error("--edge-layouts: the edge layouts are arm64's")
    all_calls, left_out = [], 0
    fmt = ARCHES[args.arch].fmt
    runs = scenario_runs(fmt) + drawn_runs(args.first_seed, args.layouts, fmt) + edge_runs(args.first_seed,
                                                                                       args.edge_layouts)
    for trace, origin in runs:
        got, n = calls(trace, origin, args.arch)
        all_calls += got
        left_out += n
    bad = differences(all_calls, args.binary, args.arch)
    print(f"{len(all_calls)} copy_present_ptes() calls ({left_out} left out: another thread between their steps; "
          f"{paths(all_calls)}), {len(bad)} differing")
    for message in bad[:3]:
        print(message)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
