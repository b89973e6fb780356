"""Identity of the kernel's DAMON region functions and the model's: same input, same whole state after.

kernel-lab/build/<arch>/damon-regions runs mm/damon/core.c's and vaddr.c's own functions (copied
from the tree by scripts/kernel-functions) on cases read from stdin; this module writes the cases,
runs the model's function of the same name (simulator/kstep/models/damon/) on each, prints what
the harness prints for it, and compares: rc, the ranges found, every region's start, end,
nr_accesses, nr_accesses_bp, age and last_nr_accesses, t->nr_regions, the random generator's state
and draw count, the RCU read-side depth, and that the allocations balance the regions made and
destroyed. (sampling_addr is not compared: the kernel leaves it uninitialised in a new region.)

The cases come from every bundled damon scenario (each merge, split, access check and update the
model's run makes, on the state it makes it on) and from a seeded generator, per function.

    python kernel-lab/tests/regioncheck.py [--arch A] [--per-function N] [--seed S] [--binary NAME]

runs the drawn cases (N per function; default 1000) and the scenarios' cases on each architecture
(``make -C kernel-lab identity``); exit 1 names the first case that differs. It needs the kstep
package on the path (PYTHONPATH=simulator, the project's .venv).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from kstep.models.damon import core, vaddr
from kstep.models.damon.rand import Rng

LAB = Path(__file__).resolve().parents[1]
QEMU = {"x86_64": [], "arm64": ["qemu-aarch64"], "ppc64le": ["qemu-ppc64le"]}
PAGE = core.PAGE_SIZE
U32 = core.U32
OPERATIONS = ("merge_two", "merge_regions_of", "kdamond_merge_regions", "split_region_at", "split_regions_of",
              "set_regions", "update_access_rate", "evenly_split", "three_regions")


class Case(NamedTuple):
    op: str  # one of OPERATIONS
    args: tuple  # the operation's numbers, as the harness reads them
    regions: tuple = ()  # core.Region values
    attrs: core.Attrs = core.Attrs()
    rng: int = 0  # the SplitMix64 state
    origin: str = ""  # where the case comes from, for a failure's message

    def text(self) -> str:
        a = self.attrs
        lines = ["case", f"attrs {a.sample_interval} {a.aggr_interval} {a.ops_update_interval} "
                 f"{a.min_nr_regions} {a.max_nr_regions}", f"rng {self.rng}", f"regions {len(self.regions)}"]
        lines += [f"region {r.start} {r.end} {r.nr_accesses} {r.nr_accesses_bp} {r.age} {r.last_nr_accesses}"
                  for r in self.regions]
        return "\n".join(lines + [" ".join(map(str, (self.op,) + self.args)), "end"]) + "\n"


def pairs(args) -> list[tuple[int, int]]:
    return list(zip(args[0::2], args[1::2]))


def model(case: Case) -> tuple[str, tuple, Rng]:
    """The model's function on the case: (the rc line, regions after, generator after)."""
    rs, a, rng, args = case.regions, case.attrs, Rng(case.rng), case.args
    rc = 0
    if case.op == "merge_two":
        rs = core.damon_merge_two_regions(rs, args[0])
    elif case.op == "merge_regions_of":
        rs = core.damon_merge_regions_of(rs, args[0], args[1], bool(args[2]))
    elif case.op == "kdamond_merge_regions":
        rs, _ = core.kdamond_merge_regions(rs, args[0], args[1], a)
    elif case.op == "split_region_at":
        rs = core.damon_split_region_at(rs, args[0], args[1])
    elif case.op == "split_regions_of":
        rs, rng = core.damon_split_regions_of(rs, args[0], rng)
    elif case.op == "set_regions":
        rc, rs = core.damon_set_regions(rs, pairs(args))
    elif case.op == "update_access_rate":
        i = args[0]
        rs = rs[:i] + (core.damon_update_region_access_rate(rs[i], bool(args[1]), a),) + rs[i + 1:]
    elif case.op == "evenly_split":
        rc, rs = vaddr.damon_va_evenly_split_region(rs, args[0], args[1])
    elif case.op == "three_regions":
        rc, ranges = vaddr.__damon_va_three_regions(tuple(vaddr.Vma(s, e) for s, e in pairs(args)))
        return " ".join([f"rc {rc}"] + [f"{s} {e}" for s, e in ranges]), rs, rng
    return f"rc {rc}", rs, rng


def expected(case: Case) -> str:
    """What the harness prints for the case if the kernel's function does what the model's does (the
    allocation counts aside: compare() checks those against the region counts)."""
    rc, rs, rng = model(case)
    lines = [rc, f"regions {len(rs)}"]
    lines += [f"{r.start} {r.end} {r.nr_accesses} {r.nr_accesses_bp} {r.age} {r.last_nr_accesses}" for r in rs]
    return "\n".join(lines + [f"rng {rng.state} {rng.draws}", "rcu 0"])


def run(arch: str, cases: list[Case], binary: str = "damon-regions") -> list[str]:
    """The harness's output per case (its `case K` line dropped; the count line checked and reduced
    to the RCU depth)."""
    path = LAB / "build" / arch / binary
    if not path.exists():
        raise SystemExit(f"{path} is missing: run make -C kernel-lab")
    p = subprocess.run(QEMU[arch] + [str(path)], input="".join(c.text() for c in cases), capture_output=True,
                       text=True, timeout=600)
    if p.returncode or p.stderr:
        raise RuntimeError(f"{arch}: {binary} exited {p.returncode}: {p.stderr.strip()}")
    blocks = p.stdout.split("case ")[1:]
    if len(blocks) != len(cases):
        raise RuntimeError(f"{arch}: {binary} printed {len(blocks)} cases for {len(cases)}")
    out = []
    for case, block in zip(cases, blocks):
        lines = block.rstrip("\n").split("\n")[1:]
        count = lines.pop().split()  # count allocs A frees F rcu D
        allocs, frees = int(count[2]), int(count[4])
        if allocs - frees != int(lines[1].split()[1]) - len(case.regions):
            lines.append(f"allocations unbalanced: {allocs} allocs, {frees} frees")
        out.append("\n".join(lines + [f"rcu {count[6]}"]))
    return out


def differences(arch: str, cases: list[Case], binary: str = "damon-regions") -> list[str]:
    """One message per case on which the kernel's function and the model's end in different states."""
    got = run(arch, cases, binary)
    out = []
    for case, c_text in zip(cases, got):
        want = expected(case)
        if c_text != want:
            diff = [f"  kernel: {g}\n  model:  {w}" for g, w in zip(c_text.split("\n"), want.split("\n")) if g != w]
            out.append(f"{arch}: {case.op} ({case.origin}) differs\n" + "\n".join(diff[:4] or ["  (lengths differ)"])
                       + "\ninput:\n" + case.text())
    return out


# --- cases from the bundled scenarios --------------------------------------------------------------------


def nr_subregions(regions: tuple, attrs: core.Attrs, last_nr_regions: int) -> int | None:
    """What the model's kdamond_split_regions() passes damon_split_regions_of(), or None: no split."""
    subs = []

    def record(rs, nr_subs, rng, min_region):
        subs.append(nr_subs)
        return rs, rng

    core.kdamond_split_regions(regions, attrs, last_nr_regions, Rng(0), PAGE, split_of=record)
    return subs[0] if subs else None


def scenario_cases(sample: int | None = None, seed: int = 0) -> list[Case]:
    """Each region operation the model's run of every bundled damon scenario makes, on the state it
    makes it on, each distinct input once; with ``sample``, at most that many per scenario and
    operation, drawn with ``seed``."""
    from kstep.scenario_spec import scenario
    from kstep.lab.replay.damon import simulated
    from kstep.models import MODELS
    from kstep.models.damon import model as dmodel

    out: list[Case] = []
    rnd = random.Random(seed)
    for name in scenario.bundled("damon"):
        cases: list[Case] = []
        sc = scenario.load("damon", MODELS["damon"].scenario_schema, name)
        trace = simulated(sc.config, sc.schedule)
        cfg = trace.states[0].cfg
        if cfg.min_region != PAGE:  # the harness is the kernel's build, DAMON_MIN_REGION = PAGE_SIZE
            raise ValueError(f"{name}: min_region {cfg.min_region}; damon-regions is built with {PAGE}")
        a = cfg.attrs
        for step, (action, pre, post) in enumerate(zip(trace.actions, trace.states, trace.states[1:])):
            where = f"{name} step {step + 1}"
            label = getattr(action, "label", "")
            if label == dmodel.MERGE:
                thres = pre.k.max_nr_accesses // 10
                cases.append(Case("kdamond_merge_regions", (thres, pre.k.sz_limit), pre.regions, a, origin=where))
                cases.append(Case("merge_regions_of", (thres, pre.k.sz_limit, 1), pre.regions, a, origin=where))
            elif label == dmodel.SPLIT:
                subs = nr_subregions(pre.regions, a, pre.k.last_nr_regions)
                if subs:
                    cases.append(Case("split_regions_of", (subs,), pre.regions, a, pre.k.rng.state, where))
            elif label == dmodel.CHECK:
                for r, r2 in zip(pre.regions, post.regions):  # the function reads and writes r alone
                    accessed = int(r2.nr_accesses != r.nr_accesses)
                    cases.append(Case("update_access_rate", (0, accessed), (r,), a, origin=where))
            elif label in (dmodel.UPDATE, dmodel.INIT):
                vmas = tuple(x for v in pre.vmas for x in (v.start, v.end))
                cases.append(Case("three_regions", vmas, origin=where))
                rc, ranges = vaddr.__damon_va_three_regions(pre.vmas)
                if rc:
                    continue
                flat = tuple(x for rg in ranges for x in rg)
                if label == dmodel.UPDATE:
                    cases.append(Case("set_regions", flat, pre.regions, a, origin=where))
                    continue
                sz = max(sum(e - s for s, e in ranges) // (a.min_nr_regions or 1), PAGE)
                for s, e in ranges:
                    cases.append(Case("evenly_split", (0, (e - s) // sz), (core.Region(s, e),), a, origin=where))
        for op in OPERATIONS:
            of_op = [c for c in cases if c.op == op]
            out += of_op if sample is None or len(of_op) <= sample else rnd.sample(of_op, sample)
    unique = {c._replace(origin=""): c for c in reversed(out)}  # the same input once, named where first met
    return list(reversed(unique.values()))


# --- drawn cases ---------------------------------------------------------------------------------------


def drawn_regions(rnd: random.Random, nr_max: int = 12, contiguous: bool = False) -> tuple:
    """Page-aligned regions in address order, adjacent or with holes, with counts a run can reach."""
    at = rnd.randrange(0, 1 << 20) * PAGE
    out = []
    for _ in range(rnd.randint(1, nr_max)):
        if not contiguous and rnd.random() < 0.2:
            at += rnd.randint(1, 8) * PAGE
        size = rnd.choice((1, 2, 3, 5, 8, 16, 64, 512, 4096)) * PAGE
        nr = rnd.randint(0, 20)
        out.append(core.Region(at, at + size, nr, rnd.randint(0, 200_000), rnd.randint(0, 300),
                               rnd.choice((nr, rnd.randint(0, 20)))))
        at += size
    return tuple(out)


def drawn_attrs(rnd: random.Random) -> core.Attrs:
    sample = rnd.choice((0, 1, 5000, 5000, 10_000))
    aggr = rnd.choice((max(sample, 1), 100_000, 100_000, 1_000_000))
    lo = rnd.randint(3, 30)
    return core.Attrs(sample, aggr, 60_000_000, lo, rnd.choice((lo, lo + 5, 100, 1000)))


def drawn_ranges(rnd: random.Random, n: int, lo: int, hi: int, aligned: bool) -> tuple:
    """n sorted, non-overlapping (start, end) pairs in [lo, hi), flattened."""
    points = sorted(rnd.sample(range(lo, hi), 2 * n))
    if aligned:
        points = [p - p % PAGE for p in points]
    return tuple(points)


def drawn_case(op: str, rnd: random.Random, k: int) -> Case:
    rs = drawn_regions(rnd, contiguous=op in ("merge_two",))
    a = drawn_attrs(rnd)
    origin = f"drawn #{k}"
    if op == "merge_two":
        rs = rs if len(rs) > 1 else rs + (core.Region(rs[0].end, rs[0].end + PAGE),)
        return Case(op, (rnd.randrange(len(rs) - 1),), rs, a, origin=origin)
    total = rs[-1].end - rs[0].start
    if op == "merge_regions_of":
        return Case(op, (rnd.randint(0, 25), rnd.choice((PAGE, total // 3, total, 1 << 62)), rnd.randint(0, 1)), rs, a,
                    origin=origin)
    if op == "kdamond_merge_regions":
        a = a._replace(max_nr_regions=rnd.randint(1, 12))
        return Case(op, (rnd.randint(0, 25), rnd.choice((PAGE, total // 3, total, 1 << 62))), rs, a, origin=origin)
    if op == "split_region_at":
        i = rnd.randrange(len(rs))
        pages = (rs[i].end - rs[i].start) // PAGE
        return Case(op, (i, rnd.randint(1, max(pages - 1, 1)) * PAGE), rs, a, origin=origin)
    if op == "split_regions_of":
        return Case(op, (rnd.randint(1, 4),), rs, a, rnd.getrandbits(64), origin)
    if op == "set_regions":
        lo, hi = rs[0].start - 64 * PAGE, rs[-1].end + 64 * PAGE
        ranges = drawn_ranges(rnd, rnd.randint(1, 3), max(lo, 0), hi, rnd.random() < 0.7)
        if rnd.random() < 0.1:  # overlapping or empty ranges: -EINVAL since 6.12.101
            ranges = ranges[:2] + (ranges[0], ranges[1]) if rnd.random() < 0.5 else (ranges[0], ranges[0])
        return Case(op, ranges, rs, a, origin=origin)
    if op == "update_access_rate":
        return Case(op, (rnd.randrange(len(rs)), rnd.randint(0, 1)), rs, a, origin=origin)
    if op == "evenly_split":
        r = rs[0]
        return Case(op, (0, rnd.choice((0, 1, 2, 3, 7, 10, 4096, 5000))), (r,) + rs[1:2], a, origin=origin)
    if op == "three_regions":
        n = rnd.choice((0, 1, 2, 3, 3, 4, 6, 10))
        return Case(op, drawn_ranges(rnd, n, 0, 1 << 40, rnd.random() < 0.5) if n else (), origin=origin)
    raise ValueError(op)


def drawn_cases(seed: int, per_function: int) -> list[Case]:
    rnd = random.Random(seed)
    return [drawn_case(op, rnd, k) for op in OPERATIONS for k in range(per_function)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", action="append", choices=sorted(QEMU), help="default: all three")
    parser.add_argument("--per-function", type=int, default=1000, metavar="N")
    parser.add_argument("--seed", type=int, default=None, help="default: drawn, and printed")
    parser.add_argument("--binary", default="damon-regions", help="a mutated build to run instead")
    args = parser.parse_args(argv)
    seed = random.randrange(1 << 32) if args.seed is None else args.seed
    cases = drawn_cases(seed, args.per_function)
    scenarios = scenario_cases()
    print(f"seed {seed}: {args.per_function} drawn cases per function ({len(OPERATIONS)} functions), "
          f"{len(scenarios)} from the bundled scenarios", flush=True)
    failed = 0
    for arch in args.arch or sorted(QEMU):
        bad = differences(arch, cases + scenarios, args.binary)
        print(f"{arch}: {len(cases) + len(scenarios) - len(bad)} of {len(cases) + len(scenarios)} cases identical",
              flush=True)
        for message in bad[:3]:
            print(message)
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
