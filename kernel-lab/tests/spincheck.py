#!/usr/bin/env python3
"""Check qspinlock/qspinlock.pml with Debian's spin: verify a variant, or list reachable triples.

    python3 tests/spincheck.py verify [--variant NAME] [--cpus N] [--acquisitions K]
    python3 tests/spincheck.py triples [--variant NAME] [--cpus N] [--acquisitions K]

``verify`` runs ``spin -a``, compiles pan with -DSAFETY and searches every interleaving: mutual
exclusion is an assertion, a deadlock or lost wake-up an invalid end state.  It exits 0 when the
search is complete and clean, 1 when it found an error (the trail is kept in build/spin/), 2 on
bad input.  ``triples`` prints every reachable (tail, pending, locked) triple of the lock word,
tail as the upper halfword ((cpu + 1) << 2 | idx, 8-bit pending layout).  Standard library only;
work files go to kernel-lab/build/spin/.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

LAB = Path(__file__).resolve().parents[1]
MODEL = LAB / "qspinlock" / "qspinlock.pml"
WORK = LAB / "build" / "spin"

# Variant names as everywhere in the lab, and the model's #define for each.
VARIANTS = {
    "v6.12": None,
    "before-set-locked": "BEFORE_SET_LOCKED",
    "clear-tail-always": "CLEAR_TAIL_ALWAYS",
    "pending-not-undone": "PENDING_NOT_UNDONE",
    "head-ignores-pending": "HEAD_IGNORES_PENDING",
    "link-before-init": "LINK_BEFORE_INIT",
}
BROKEN = ("clear-tail-always", "pending-not-undone", "head-ignores-pending", "link-before-init")
MAX_CPUS = 4  # the model's node arrays and the search stay small


class SpinError(Exception):
    """spin or pan could not run (not a verification result)."""


@dataclass
class SpinResult:
    variant: str
    cpus: int
    acquisitions: int
    states: int            # states stored
    transitions: int
    depth: int
    seconds: float         # pan's own search time
    complete: bool         # the search was not cut short (depth or memory)
    error: Optional[str]   # None, or what pan reported first
    mutual_exclusion_violated: Optional[bool] = None  # asked again with -E for broken variants
    triples: set = field(default_factory=set)
    workdir: Optional[Path] = None

    def describe(self) -> str:
        what = "clean" if self.error is None else self.error
        return (f"{self.variant}, {self.cpus} CPUs x {self.acquisitions}: {what}; "
                f"{self.states} states, {self.transitions} transitions, {self.seconds:.2f} s")


def _require(program: str):
    if not shutil.which(program):
        raise SpinError(f"{program} is missing (scripts/setup-system installs it: Debian package "
                        f"{'spin' if program == 'spin' else 'gcc'})")


def _run(argv, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SpinError(f"'{' '.join(argv)}' ran past {timeout:.0f} s in {cwd}") from None


def _number(pattern: str, text: str, what: str) -> float:
    m = re.search(pattern, text)
    if not m:
        raise SpinError(f"pan's output has no {what}:\n{text[-2000:]}")
    return float(m.group(1))


@functools.cache
def run(variant: str = "v6.12", cpus: int = 2, acquisitions: int = 2, enumerate_triples=False,
        reduce=True, timeout: float = 300) -> SpinResult:
    """Generate, compile and run pan for one configuration in build/spin/<name>/, once a process:
    pan's search is exhaustive, so a configuration's result is always the same, and the lab's checks
    ask for some twice (a broken variant is caught, and fails the clean check; the triples that
    the C port's log and the Python model are each compared with)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (choose from: {', '.join(VARIANTS)})")
    if not 1 <= cpus <= MAX_CPUS or not 1 <= acquisitions <= 4:
        raise ValueError(f"cpus must be 1..{MAX_CPUS} and acquisitions 1..4")
    _require("spin")
    _require("gcc")
    name = f"{variant}-{cpus}cpu-{acquisitions}acq" + ("-triples" if enumerate_triples else "") + \
        ("" if reduce else "-noreduce")
    work = WORK / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(MODEL, work / MODEL.name)
    defines = [f"-DNCPUS={cpus}", f"-DACQUISITIONS={acquisitions}"]
    if VARIANTS[variant]:
        defines.append(f"-D{VARIANTS[variant]}")
    if enumerate_triples:
        defines.append("-DENUMERATE")
    p = _run(["spin", "-a"] + defines + [MODEL.name], work, 60)
    if p.returncode:
        raise SpinError(f"spin -a {' '.join(defines)} failed:\n{p.stdout}{p.stderr}")
    cflags = ["-O2", "-DSAFETY"] + ([] if reduce and not enumerate_triples else ["-DNOREDUCE"])
    p = _run(["gcc"] + cflags + ["-o", "pan", "pan.c"], work, 120)
    if p.returncode:
        raise SpinError(f"compiling pan failed:\n{p.stderr[-2000:]}")
    p = _run(["./pan", "-m100000"], work, timeout)
    out = p.stdout
    (work / "pan.out").write_text(out)
    error = None
    m = re.search(r"^pan:1: (.*?)(?: \(at depth \d+\))?$", out, re.M)
    if m:
        error = ("deadlock or lost wake-up (invalid end state)" if "invalid end state" in m.group(1)
                 else "mutual exclusion violated" if "in_cs==1" in m.group(1) else m.group(1))
    result = SpinResult(
        variant, cpus, acquisitions,
        states=int(_number(r"(\d+) states, stored", out, "state count")),
        transitions=int(_number(r"(\d+) transitions \(= stored\+matched\)", out, "transition count")),
        depth=int(_number(r"depth reached (\d+)", out, "depth")),
        seconds=_number(r"pan: elapsed time ([\d.e+-]+) seconds", out, "elapsed time"),
        complete="max search depth too small" not in out and "out of memory" not in out.lower(),
        error=error, workdir=work)
    if enumerate_triples:
        result.triples = {tuple(map(int, t)) for t in re.findall(r"^triple (\d+) (\d+) (\d+)$", out, re.M)}
    if error and variant in BROKEN:
        # Which kinds of failure exist: search again ignoring invalid end states (-E).
        e = _run(["./pan", "-m100000", "-E"], work, timeout)
        result.mutual_exclusion_violated = "assertion violated (in_cs==1)" in e.stdout
    return result


def triples(cpus: int, acquisitions: int = 2, variant: str = "v6.12") -> set:
    r = run(variant, cpus, acquisitions, enumerate_triples=True)
    if r.error:
        raise SpinError(f"the enumeration run found an error: {r.error}")
    return r.triples


class _Parser(argparse.ArgumentParser):
    """Bad command lines get one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"spincheck: {message}\n")


def main(argv=None) -> int:
    ap = _Parser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for cmd in ("verify", "triples"):
        s = sub.add_parser(cmd)
        s.add_argument("--variant", default="v6.12", choices=VARIANTS)
        s.add_argument("--cpus", type=int, default=2)
        s.add_argument("--acquisitions", type=int, default=2)
    a = ap.parse_args(argv)
    try:
        if a.command == "verify":
            r = run(a.variant, a.cpus, a.acquisitions)
            print(r.describe())
            if r.error:
                print(f"trail: {r.workdir}/{MODEL.name}.trail (spin -t -p -g in that folder)")
            return 1 if r.error or not r.complete else 0
        for t in sorted(triples(a.cpus, a.acquisitions, a.variant)):
            print(*t)
        return 0
    except ValueError as e:
        print(f"spincheck: {e}", file=sys.stderr)
        return 2
    except SpinError as e:
        print(f"spincheck: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
