#!/usr/bin/env python3
"""The kernel lab's checks, for every architecture: one implementation for two callers.

``make -C kernel-lab test`` runs them all from here (``python3 tests/labcheck.py``, standard
library only); ``simulator/tests/test_kernel_lab.py`` imports this file and runs each check as
its own pytest case.  A check is a function that returns a short note on success and raises
``LabFailure`` with a message naming the architecture, the tool and what went wrong otherwise.

    python3 tests/labcheck.py                 every check
    python3 tests/labcheck.py -k arm64 -k log only checks whose name contains all of these
    python3 tests/labcheck.py --list          the check names
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

LAB = Path(__file__).resolve().parents[1]
REPO = LAB.parent
BUILD = LAB / "build"
ARCHES = ("x86_64", "arm64", "ppc64le")
QEMU = {"x86_64": [], "arm64": ["qemu-aarch64"], "ppc64le": ["qemu-ppc64le"]}
OBJDUMP = {"x86_64": "objdump", "arm64": "aarch64-linux-gnu-objdump",
           "ppc64le": "powerpc64le-linux-gnu-objdump"}

CORRECT = ("v6.12", "before-set-locked")
BROKEN = ("clear-tail-always", "pending-not-undone", "head-ignores-pending", "link-before-init")

# Exit statuses of qspinlock-torture.
CLEAN, VIOLATION, USAGE, HANG, INCONCLUSIVE = 0, 1, 2, 3, 4
VERDICTS = {CLEAN: "clean", VIOLATION: "violation", USAGE: "bad input", HANG: "hang",
            INCONCLUSIVE: "inconclusive"}

# Every torture run of these checks has its waiters yield every 256 polls, as the tool does by itself
# when it has more CPUs than processors: the checks share the machine (make test runs them beside
# another test worker on two cores), and a waiter that spins out its time slice while the holder
# waits for a processor costs time, not coverage.  Natively on x86_64, 200,000 ticket-lock
# acquisitions by two CPUs take 0.12 s on an idle machine and took 75 s beside a busy worker.
SPIN_YIELD = ["--spin-yield", "256"]

# 10^7 acquisitions on each architecture: two CPUs, the default delays.  Measured at a load average
# of 4 to 5, yielding / spinning: x86_64 11-13 s / 37-54 s natively, arm64 21 s / 46 s and ppc64le
# 35 s / 52 s under qemu-user.
LONG_RUN = ["--threads", "2", "--acquisitions", "5000000"]
# Hunting races: three CPUs (pending-not-undone needs a third to queue between another's sample
# of the word and its fetch_or), longer critical sections and delays before 1 in 8 lock steps.
HUNT = ["--threads", "3", "--step-delay", "200", "--delay-in", "100"]
HUNT_ACQUISITIONS = 200000  # per CPU: a cap, a broken variant stops at its first catch
HUNT_SEEDS = (1, 2, 3)      # a broken variant must be caught under one of these
HUNT_HANG_S = 2.0

QSPINLOCK_LABELS = (
    "queued_spin_lock", "wait_pending_handover", "queued_fetch_set_pending_acquire",
    "trylock_pending_cmpxchg", "clear_pending", "wait_locked_clear", "clear_pending_set_locked", "node_count_inc",
    "mcs_node_init", "queued_spin_trylock", "xchg_tail", "link_prev", "mcs_spin", "wait_head",
    "claim_cmpxchg", "set_locked", "wait_next", "mcs_handoff", "release_node",
    "critical_section", "queued_spin_unlock")
TICKET_LABELS = ("arch_spin_lock", "wait_ticket", "critical_section", "arch_spin_unlock")
# Steps that read or wait but never write the lock word.
WORD_UNCHANGED = {"wait_pending_handover", "wait_locked_clear", "node_count_inc", "mcs_node_init",
                  "link_prev", "mcs_spin", "wait_head", "wait_next", "mcs_handoff",
                  "release_node", "critical_section", "wait_ticket"}


class LabFailure(AssertionError):
    """A check failed; the message says on which architecture, with which tool, and what."""


# ---- running the tools -----------------------------------------------------------------------

def tool(arch: str, name: str) -> Path:
    path = BUILD / arch / name
    if not path.exists():
        raise LabFailure(f"{arch}: {path.relative_to(REPO)} is missing: run 'make -C kernel-lab'")
    return path


@dataclass
class Run:
    arch: str
    argv: list
    rc: int
    summary: dict
    stderr: str
    seconds: float

    @property
    def verdict(self) -> str:
        return self.summary.get("verdict", VERDICTS.get(self.rc, f"exit {self.rc}"))

    def describe(self) -> str:
        return f"{self.arch}: {' '.join(self.argv)}"


def run_tool(arch: str, name: str, args: list, timeout: float, cpu: Optional[str] = None,
             stdin: Optional[str] = None) -> Run:
    """Run a lab tool (under qemu-user off x86_64); a run past `timeout` is a failure of its own."""
    qemu = list(QEMU[arch])
    if cpu:
        qemu += ["-cpu", cpu]
    argv = qemu + [str(tool(arch, name))] + [str(a) for a in args]
    shown = [Path(a).name if a.startswith("/") else a for a in argv]
    start = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin)
    except subprocess.TimeoutExpired:
        raise LabFailure(f"{arch}: '{' '.join(shown)}' ran past {timeout:.0f} s; its own watchdog "
                         "should have ended it (is the machine overloaded?)") from None
    seconds = time.monotonic() - start
    summary = {}
    lines = p.stdout.strip().splitlines()
    if lines and lines[-1].startswith("{"):
        try:
            summary = json.loads(lines[-1])
        except json.JSONDecodeError:
            raise LabFailure(f"{arch}: {name} printed a summary that is not JSON: {lines[-1]!r}")
    return Run(arch, shown, p.returncode, summary, p.stderr.strip(), seconds)


def torture(arch: str, args: list, timeout: float = 300, cpu: Optional[str] = None) -> Run:
    # A check's own --spin-yield comes after SPIN_YIELD, and the last one given counts.
    return run_tool(arch, "qspinlock-torture", SPIN_YIELD + args, timeout, cpu)


def expect_clean(r: Run) -> str:
    if r.rc != CLEAN:
        raise LabFailure(f"{r.describe()}: expected a clean run, got {r.verdict} (exit {r.rc}): "
                         f"{r.stderr or r.summary.get('why')}")
    return f"{r.summary['total']} acquisitions clean in {r.summary['seconds']:.2f} s"


# ---- splitmix64 --------------------------------------------------------------------------------

def python_prng():
    """simulator/kstep/engine/prng.py, loaded by path: it needs nothing but the standard library."""
    path = REPO / "simulator" / "kstep" / "engine" / "prng.py"
    spec = importlib.util.spec_from_file_location("kstep_prng_for_lab", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def splitmix_vectors() -> str:
    prng = python_prng()
    lines = []
    for seed, outputs in prng.VECTORS:
        lines.append(f"next {seed} " + " ".join(map(str, outputs)))
    for seed, n, draws in prng.BELOW_VECTORS:
        lines.append(f"below {seed} {n} " + " ".join(map(str, draws)))
    # Beyond the published vectors: long runs, a power of two (no rejection) and a bound just
    # above 2^63, where rejection throws away almost half the draws.
    for seed, n, count in ((0, None, 1000), (2**64 - 1, None, 50), (99, 2**20, 500),
                           (5, 2**63 + 1, 200), (123, 7, 1000)):
        r = prng.SplitMix64(seed)
        values = [r.next() if n is None else r.below(n) for _ in range(count)]
        lines.append((f"next {seed} " if n is None else f"below {seed} {n} ") +
                     " ".join(map(str, values)))
    return "\n".join(lines) + "\n"


def check_splitmix64(arch: str) -> str:
    r = run_tool(arch, "splitmix64-check", [], timeout=60, stdin=splitmix_vectors())
    if r.rc != 0:
        raise LabFailure(f"{arch}: splitmix64.h differs from simulator/kstep/engine/prng.py: "
                         f"{r.stderr}")
    return "VECTORS, BELOW_VECTORS and 5 long sequences match Python"


def check_splitmix64_detects_drift(arch: str) -> str:
    """The comparison itself must fail when a value is off by one."""
    vectors = splitmix_vectors().splitlines()
    words = vectors[0].split()
    words[-1] = str(int(words[-1]) ^ 1)
    r = run_tool(arch, "splitmix64-check", [], timeout=60, stdin=" ".join(words) + "\n")
    if r.rc != 1 or "in Python" not in r.stderr:
        raise LabFailure(f"{arch}: splitmix64-check accepted a wrong value (exit {r.rc}): {r.stderr}")
    return "a changed value is reported"


# ---- disassembly -------------------------------------------------------------------------------

def disassemble(arch: str, path: Path, relocs: bool = False) -> str:
    objdump = OBJDUMP[arch]
    if not shutil.which(objdump):
        raise LabFailure(f"{arch}: {objdump} is missing (scripts/setup-system installs it)")
    argv = [objdump, "-d", "--no-show-raw-insn"] + (["-r"] if relocs else []) + [str(path)]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def function_body(asm: str, name: str, where: str) -> str:
    m = re.search(rf"^[0-9a-f]+ <{re.escape(name)}>:\n(.*?)(?:\n\n|\Z)", asm, re.S | re.M)
    if not m:
        raise LabFailure(f"{where}: no function {name} in the disassembly")
    return m.group(1)


def lock_object(arch: str, variant_id: str = "V6_12", pb: int = 8) -> Path:
    path = BUILD / arch / "obj" / "bench" / f"qspinlock-{variant_id}-pb{pb}.o"
    if not path.exists():
        raise LabFailure(f"{arch}: {path.relative_to(REPO)} is missing: run 'make -C kernel-lab'")
    return path


# What a 16-bit atomic exchange looks like on each architecture.
HALFWORD_XCHG = {
    # A register and a memory operand: "xchg %ax,%ax" is a two-byte nop used as padding.
    "x86_64": re.compile(r"\bxchg\s+%(?:ax|bx|cx|dx|si|di|bp|r\d+w),(?:-?0x[0-9a-f]+)?\(%"),
    "ppc64le": re.compile(r"\blharx\b(?s:.*)\bsthcx\."),
}


def check_xchg_tail(arch: str) -> str:
    """xchg_tail of the 8-bit-pending layout is a 16-bit atomic exchange of the tail halfword."""
    obj = lock_object(arch)
    where = f"{arch}: {obj.name}"
    body = function_body(disassemble(arch, obj, relocs=True), "xchg_tail", where)
    slowpath = function_body(disassemble(arch, obj), "queued_spin_lock_slowpath_V6_12_pb8", where)
    if not re.search(r"\b(call|bl)\s+[0-9a-f]+ <xchg_tail>", slowpath):
        raise LabFailure(f"{where}: the slow path does not call xchg_tail")
    if arch in HALFWORD_XCHG:
        if not HALFWORD_XCHG[arch].search(body):
            raise LabFailure(f"{where}: xchg_tail has no 16-bit atomic exchange:\n{body}")
        return "xchg %ax (16-bit)" if arch == "x86_64" else "lharx/sthcx. loop (16-bit)"
    # arm64: inline LL/SC or LSE, or (Debian's -moutline-atomics) a call to libgcc's helper,
    # which picks LSE or LL/SC at run time the way the kernel's alternatives do.
    inline = re.search(r"\bswpa?l?h\b", body) or (re.search(r"\bld[a]?xrh\b", body) and
                                                 re.search(r"\bst[l]?xrh\b", body))
    if inline:
        return "inline halfword exchange"
    helper = re.search(r"R_AARCH64_CALL26\s+(__aarch64_swp2_\w+)", body)
    if not helper:
        raise LabFailure(f"{where}: xchg_tail neither exchanges a halfword nor calls "
                         f"__aarch64_swp2_*:\n{body}")
    binary = tool(arch, "qspinlock-bench")
    impl = function_body(disassemble(arch, binary), helper.group(1), f"{arch}: {binary.name}")
    lse = re.search(r"\bswpa?l?h\b", impl)
    llsc = re.search(r"\bld[a]?xrh\b", impl) and re.search(r"\bst[l]?xrh\b", impl)
    if not (lse and llsc):
        raise LabFailure(f"{arch}: {helper.group(1)} lacks the 16-bit LSE swph or the "
                         f"ldxrh/stxrh loop:\n{impl}")
    return f"calls {helper.group(1)}: swph (LSE) or ldxrh/stxrh (LL/SC), both 16-bit"


def check_pb1_xchg_tail(arch: str) -> str:
    """With 1-bit pending the tail is not a halfword: xchg_tail is a 32-bit cmpxchg loop."""
    obj = lock_object(arch, pb=1)
    body = function_body(disassemble(arch, obj, relocs=True), "xchg_tail", f"{arch}: {obj.name}")
    word_cas = {"x86_64": r"lock cmpxchg\s+%e", "ppc64le": r"\blwarx\b",
                "arm64": r"(__aarch64_cas4_\w+|\bcas\b|\bldxr\s+w)"}[arch]
    if not re.search(word_cas, body):
        raise LabFailure(f"{arch}: {obj.name}: xchg_tail is not a 32-bit cmpxchg loop:\n{body}")
    if HALFWORD_XCHG.get(arch) and HALFWORD_XCHG[arch].search(body):
        raise LabFailure(f"{arch}: {obj.name}: xchg_tail still exchanges a halfword:\n{body}")
    return "32-bit cmpxchg loop"


# The other sub-word accesses the kernel relies on, in the unhooked objects.
UNLOCK_BYTE_STORE = {"x86_64": r"\bmovb\s+\$0x0,", "arm64": r"\bstlrb\b",
                     "ppc64le": r"\blwsync\b\s*\n.*\n?.*\bstb\b"}


def check_subword_accesses(arch: str) -> str:
    obj = lock_object(arch)
    asm = disassemble(arch, obj)
    where = f"{arch}: {obj.name}"
    unlock = function_body(asm, "lab_unlock", where)
    if not re.search(UNLOCK_BYTE_STORE[arch], unlock):
        raise LabFailure(f"{where}: queued_spin_unlock is not a release byte store:\n{unlock}")
    notes = ["unlock is a release byte store"]
    if arch == "x86_64":
        slowpath = function_body(asm, "queued_spin_lock_slowpath_V6_12_pb8", where)
        if not re.search(r"\block btsl\s+\$0x8,", slowpath):
            raise LabFailure(f"{where}: queued_fetch_set_pending_acquire is not LOCK BTSL "
                             "(a 32-bit RmW, 7aa54be29765)")
        notes.append("pending is set by lock btsl (32-bit RmW)")
    return "; ".join(notes)


# ---- torture runs ------------------------------------------------------------------------------

def check_long_run(arch: str) -> str:
    """10^7 acquisitions of the 6.12 port, every path taken, no violation."""
    return expect_clean(torture(arch, LONG_RUN, timeout=600))


def check_hunting_config_clean(arch: str, variant: str, pb: int = 8, cpu: Optional[str] = None) -> str:
    """The race-hunting configuration finds nothing in a correct variant (the control)."""
    r = torture(arch, HUNT + ["--variant", variant, "--pending-bits", pb,
                              "--acquisitions", 20000], timeout=300, cpu=cpu)
    note = expect_clean(r)
    steps = r.summary["steps"]
    shown = ("trylock_pending_cmpxchg", "claim_cmpxchg") if variant == "before-set-locked" else (
        "clear_pending", "set_locked")
    return f"{note}; " + ", ".join(f"{label} {steps.get(label, 0)}" for label in shown)


def check_ticket(arch: str) -> str:
    r = torture(arch, ["--lock", "ticket", "--threads", "2", "--acquisitions", 200000], timeout=300)
    return expect_clean(r)


def check_broken_caught(arch: str, variant: str) -> str:
    """A broken variant ends in a violation or a hang under one of the hunting seeds."""
    tried = []
    for seed in HUNT_SEEDS:
        r = torture(arch, HUNT + ["--variant", variant, "--acquisitions", HUNT_ACQUISITIONS,
                                  "--seed", seed, "--hang-timeout", HUNT_HANG_S], timeout=300)
        if r.rc in (VIOLATION, HANG):
            first = r.stderr.splitlines()[0] if r.stderr else r.verdict
            return f"caught with seed {seed} in {r.seconds:.1f} s: {first}"
        tried.append(f"seed {seed}: {r.verdict} (exit {r.rc})")
    raise LabFailure(f"{arch}: broken variant {variant} was not caught by qspinlock-torture "
                     f"{' '.join(map(str, HUNT))}: " + "; ".join(tried))


def check_bad_input(arch: str) -> str:
    cases = [["--threads", "0"], ["--variant", "v9.99"], ["--lock", "rwlock"], ["--bogus", "1"],
             ["--acquisitions", "-5"], ["--threads", "1"], ["--pending-bits", "4"],
             ["--lock", "pthread-mutex", "--log", "/tmp/x"], ["--threads"]]
    # numbers are decimal: no base prefixes, signs, blanks, exponents or words
    cases += [["--threads", v] for v in ("0x10", "+3", " 3", "3 ", "", "1e1", "99999999999999999999")]
    cases += [["--seed", "0x10"], ["--acquisitions", "5junk"], ["--hang-timeout", "0x1p3"],
              ["--hang-timeout", "inf"], ["--duration", "1e1"], ["--delay-in", "-0"]]
    for args in cases:
        r = torture(arch, args, timeout=60)
        lines = r.stderr.splitlines()
        if r.rc != USAGE or len(lines) != 1 or not lines[0].startswith("qspinlock-torture: "):
            raise LabFailure(f"{r.describe()}: expected one line on stderr and exit 2, got exit "
                             f"{r.rc} and {r.stderr!r}")
    with tempfile.TemporaryDirectory() as tmp:
        missing = Path(tmp) / "no-such-dir" / "x.log"
        r = torture(arch, ["--log", missing], timeout=60)
        if r.rc != USAGE or "cannot write" not in r.stderr or missing.parent.exists():
            raise LabFailure(f"{r.describe()}: a log in a missing directory should be refused "
                             f"with exit 2, got {r.rc}: {r.stderr!r}")
    return f"{len(cases) + 1} bad command lines refused with one line and exit 2"


def check_log_to_a_fifo_nobody_reads(arch: str) -> str:
    """--log to a FIFO without a reader is refused at once; with a reader the log goes through it."""
    args = ["--lock", "qspinlock", "--threads", "2", "--acquisitions", "10"]
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "log"
        os.mkfifo(fifo)
        r = logged_run(arch, fifo, args)
        if r.rc != USAGE or "a FIFO that no process is reading" not in r.stderr:
            raise LabFailure(f"{r.describe()}: a FIFO nobody reads should be refused with exit 2, "
                             f"got {r.rc}: {r.stderr!r}")
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, before the writer comes
        try:
            r = logged_run(arch, fifo, args)  # a few KB: the pipe holds it all until it is read
            text = os.read(reader, 1 << 20).decode()
        finally:
            os.close(reader)
        if r.rc == USAGE or not text.startswith("# kstep-log "):  # too short a run to be conclusive
            raise LabFailure(f"{r.describe()}: exit {r.rc}, and the reader of the FIFO got {text[:80]!r}, "
                             f"not the log: {r.stderr!r}")
    return "a FIFO without a reader refused with exit 2; with one, the log goes through"


def check_decimal_options(arch: str) -> str:
    """A leading zero is not octal: --threads 010 is ten CPUs and --seed 010 is seed ten, as
    kstep's -s 010 is (strtoull's base 0 once read them as 8)."""
    r = torture(arch, ["--lock", "pthread-mutex", "--threads", "010", "--seed", "010", "--acquisitions",
                       "010", "--hang-timeout", "010"], timeout=60)
    expect_clean(r)
    got = {k: r.summary[k] for k in ("threads", "seed", "acquisitions")}
    if got != {"threads": 10, "seed": 10, "acquisitions": 10}:
        raise LabFailure(f"{r.describe()}: read as {got}, not ten each")
    return "010 is ten for --threads, --seed and --acquisitions"


# ---- observation logs --------------------------------------------------------------------------

HEADER = re.compile(r"# kstep-log 2 qspinlock variant=(?P<variant>\S+) "
                    r"cpus=(?P<cpus>\d+) acquisitions=(?P<acquisitions>\d+) pending_bits=(?P<pending_bits>8|1)")
LINE = re.compile(r"(?P<ticket>\d+) (?P<cpu>\d+(?:\.irq)?) (?P<label>[a-z_]+) "
                  r"(?P<before>0x[0-9a-f]{8}) (?P<after>0x[0-9a-f]{8}) "
                  r"(?P<count>\d+) (?:- - -|(?P<idx>\d) (?P<next>-|\d+/\d) (?P<locked>[01]))")
END = re.compile(r"# kstep-log end steps=(?P<steps>\d+)")


@dataclass
class Log:
    header: dict
    steps: list  # (ticket, cpu, label, before, after)
    mutex_violation: Optional[str]
    ended: bool  # the log has its end marker: every CPU finished

    def count(self, label: str) -> int:
        return sum(1 for s in self.steps if s[2] == label)


def read_log(path: Path, complete: bool = True) -> Log:
    """Parse and check an observation log (format 2); `complete`: every CPU did all its acquisitions.

    Well-formed means: the header; consecutive tickets from 0; known CPUs and labels; each step's
    word-before equal to the previous step's word-after (the log is one linear order), starting
    from an unlocked word; read-only steps leave the word alone; MCS fields that fit a CPU that
    never nests (node 0 while its count is 1, none while it is 0); an end marker counting the steps
    last, if anywhere.  A complete log has the marker.  Mutual exclusion is recorded, not raised,
    so a check on a broken variant can expect it to fail."""
    text = path.read_text()
    lines = text.splitlines()
    if not lines or not HEADER.fullmatch(lines[0]):
        raise LabFailure(f"{path.name}: line 1 is not a kstep-log header: {lines[:1]!r}")
    h = HEADER.fullmatch(lines[0]).groupdict()
    cpus, acquisitions = int(h["cpus"]), int(h["acquisitions"])
    ticket_lock = h["variant"] == "ticket"
    labels = TICKET_LABELS if ticket_lock else QSPINLOCK_LABELS
    unlock = "arch_spin_unlock" if ticket_lock else "queued_spin_unlock"
    steps, word, holder, mutex_violation = [], 0, None, None
    done = [0] * cpus
    body = lines[1:]
    end = END.fullmatch(body[-1]) if body else None
    if end:
        body = body[:-1]
        if int(end["steps"]) != len(body):
            raise LabFailure(f"{path.name}: the end marker counts {end['steps']} steps, the log has {len(body)}")
    elif complete:
        raise LabFailure(f"{path.name}: no end marker after {len(body)} steps: the run did not finish")
    for n, line in enumerate(body, start=2):
        m = LINE.fullmatch(line)
        if not m:
            raise LabFailure(f"{path.name}:{n}: not '<ticket> <cpu> <label> <before> <after> <count> <idx> "
                             f"<next> <locked>': {line!r}")
        ticket, cpu, label = int(m["ticket"]), m["cpu"], m["label"]
        before, after = int(m["before"], 16), int(m["after"], 16)
        if ticket != n - 2:
            raise LabFailure(f"{path.name}:{n}: ticket {ticket}, expected {n - 2}")
        if cpu.endswith(".irq") or int(cpu) >= cpus:
            raise LabFailure(f"{path.name}:{n}: CPU {cpu} is not one of the {cpus} CPUs")
        if label not in labels:
            raise LabFailure(f"{path.name}:{n}: {label!r} is not a label of variant {h['variant']}")
        if before != word:
            raise LabFailure(f"{path.name}:{n}: word before is {before:#010x} but the previous "
                             f"step left {word:#010x}: the log is not one linear order")
        if label in WORD_UNCHANGED and after != before:
            raise LabFailure(f"{path.name}:{n}: {label} changed the word {before:#010x} -> {after:#010x}")
        node = None if m["idx"] is None else int(m["idx"])
        if (int(m["count"]), node) not in ((0, None), (1, 0)) or (ticket_lock and node is not None):
            raise LabFailure(f"{path.name}:{n}: count {m['count']} and node {m['idx'] or '-'}: a CPU "
                             f"that never nests holds node 0 while its count is 1, none while it is 0")
        c = int(cpu)
        if label == "critical_section":
            if holder is not None and mutex_violation is None:
                mutex_violation = f"line {n}: C{c} enters the critical section held by C{holder}"
            holder = c
            done[c] += 1
        elif label == unlock and holder == c:
            holder = None
        word = after
        steps.append((ticket, c, label, before, after))
    if complete:
        short = [f"C{c}: {d}" for c, d in enumerate(done) if d != acquisitions]
        if short and mutex_violation is None:
            raise LabFailure(f"{path.name}: header says {acquisitions} acquisitions per CPU, "
                             f"the log has {', '.join(short)}")
        held = (word >> 16) != (word & 0xFFFF) if ticket_lock else word & 0xFF
        if held and mutex_violation is None:
            raise LabFailure(f"{path.name}: the run ended with the lock held ({word:#010x})")
    return Log(h, steps, mutex_violation, end is not None)


def logged_run(arch: str, path: Path, args: list) -> Run:
    return torture(arch, ["--log", path] + [str(a) for a in args], timeout=300)


def check_log(arch: str, variant: str = "v6.12", threads: int = 2, pb: int = 8,
              lock: str = "qspinlock") -> str:
    """A logged run: well-formed, complete, mutually exclusive, through the racing paths."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.log"
        r = logged_run(arch, path, ["--lock", lock, "--variant", variant, "--threads", threads,
                                    "--acquisitions", 2000, "--pending-bits", pb])
        expect_clean(r)
        log = read_log(path)
    if log.mutex_violation:
        raise LabFailure(f"{r.describe()}: the log shows {log.mutex_violation}")
    expected = {"variant": variant if lock == "qspinlock" else "ticket", "cpus": str(threads),
                "acquisitions": "2000", "pending_bits": str(pb)}
    if log.header != expected:
        raise LabFailure(f"{r.describe()}: header {log.header} != {expected}")
    if lock == "qspinlock" and variant == "before-set-locked":
        needed = ["trylock_pending_cmpxchg", "clear_pending_set_locked", "xchg_tail", "mcs_handoff"]
    elif lock == "qspinlock":
        needed = ["queued_fetch_set_pending_acquire", "clear_pending_set_locked", "xchg_tail", "set_locked"]
    else:
        needed = ["wait_ticket"]
    missing = [label for label in needed if not log.count(label)]
    if missing:
        raise LabFailure(f"{r.describe()}: the log never shows {', '.join(missing)}")
    return f"{len(log.steps)} steps; " + ", ".join(f"{lbl} {log.count(lbl)}" for lbl in needed)


def check_log_repeats(arch: str) -> str:
    """A logged run is a seeded schedule: the same seed gives the same log."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b, c = (Path(tmp) / f"{n}.log" for n in "abc")
        args = ["--threads", 3, "--acquisitions", 500, "--seed", 7]
        for path in (a, b):
            expect_clean(logged_run(arch, path, args))
        expect_clean(logged_run(arch, c, args[:-1] + [8]))
        if a.read_text() != b.read_text():
            raise LabFailure(f"{arch}: two logged runs with seed 7 differ")
        if a.read_text() == c.read_text():
            raise LabFailure(f"{arch}: seeds 7 and 8 gave the same log")
        return f"seed 7 twice: the same {len(a.read_text().splitlines()) - 1} steps; seed 8 differs"


def check_log_same_on_arm64_and_ppc64le() -> str:
    """The generic slow path with _Q_PENDING_LOOPS = 1 takes the same steps on both weakly
    ordered ISAs for the same seed (x86_64 differs: 512 hand-over polls, BTSL)."""
    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for arch in ("arm64", "ppc64le"):
            logs[arch] = Path(tmp) / f"{arch}.log"
            expect_clean(logged_run(arch, logs[arch], ["--threads", 3, "--acquisitions", 500,
                                                       "--seed", 11]))
        if logs["arm64"].read_text() != logs["ppc64le"].read_text():
            raise LabFailure("arm64 and ppc64le logged runs with seed 11 differ")
        return f"{len(logs['arm64'].read_text().splitlines()) - 1} identical steps"


def check_broken_log(arch: str, variant: str) -> str:
    """A logged run of a broken variant is caught by the tool itself (a violation or a hang), and
    its log has no end marker; where the log shows two CPUs in the critical section at once, the
    tool must have said so (its owner check follows the log's order)."""
    tried = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in HUNT_SEEDS:
            path = Path(tmp) / f"{seed}.log"
            r = logged_run(arch, path, ["--variant", variant, "--threads", 3, "--acquisitions",
                                        2000, "--seed", seed, "--hang-timeout", HUNT_HANG_S])
            log = read_log(path, complete=False)
            if log.mutex_violation and r.rc != VIOLATION:
                raise LabFailure(f"{r.describe()}: the log shows {log.mutex_violation}, yet the tool "
                                 f"said {r.verdict}")
            if r.rc in (VIOLATION, HANG):
                if log.ended:
                    raise LabFailure(f"{r.describe()}: {r.verdict}, yet the log has its end marker")
                return f"seed {seed}: {r.verdict} after {len(log.steps)} logged steps, no end marker"
            tried.append(f"seed {seed}: {r.verdict}")
    raise LabFailure(f"{arch}: logged runs of {variant} were not caught: " + "; ".join(tried))


def check_logged_owner_check(arch: str) -> str:
    """The case that once came out clean: head-ignores-pending, 3 CPUs, seed 3, 2,000 acquisitions
    with --log, whose own log had 80 overlapping critical sections.  The owner is now taken and
    given up by the logged steps, so the first overlap in the log is the violation reported."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.log"
        r = logged_run(arch, path, ["--variant", "head-ignores-pending", "--threads", 3,
                                    "--acquisitions", 2000, "--seed", 3])
        first = r.stderr.splitlines()[0] if r.stderr else ""
        if r.rc != VIOLATION or "entered the critical section held by" not in first:
            raise LabFailure(f"{r.describe()}: expected the owner check's violation, got {r.verdict} "
                             f"(exit {r.rc}): {first or r.summary.get('why')}")
        log = read_log(path, complete=False)
    overlap = log.mutex_violation or "no overlap"
    if not overlap.startswith(f"line {len(log.steps) + 1}:"):
        raise LabFailure(f"{r.describe()}: the log should end at its first overlap; it shows {overlap} "
                         f"and has {len(log.steps)} steps")
    return f"{first.split(': ', 1)[1]}; the log ends at its {overlap}"


# ---- the Promela model -----------------------------------------------------------------------

def _load(name: str):
    """A sibling module of this file, loaded by path (pytest imports this file the same way)."""
    spec = importlib.util.spec_from_file_location(f"kernel_lab_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


spincheck = _load("spincheck")
vmacheck = _load("vmacheck")
damoncheck = _load("damoncheck")


def spin(*args, **kwargs):
    try:
        return spincheck.run(*args, **kwargs)
    except spincheck.SpinError as e:
        raise LabFailure(f"spin: {e}") from None


def check_spin_clean(variant: str, cpus: int) -> str:
    r = spin(variant, cpus, 2)
    if r.error or not r.complete:
        raise LabFailure(f"spin: {r.describe()}; search complete: {r.complete}; trail in {r.workdir}")
    return r.describe()


def check_spin_caught(variant: str) -> str:
    r = spin(variant, 3, 2)
    if not r.error:
        raise LabFailure(f"spin did not catch {variant}: {r.describe()}")
    return r.describe() + ("; mutual exclusion violated too" if r.mutual_exclusion_violated else "")


def word_triples(log: Log) -> set:
    words = {s[3] for s in log.steps} | {s[4] for s in log.steps}
    return {(w >> 16, (w >> 8) & 0xFF, w & 0xFF) for w in words}


def check_spin_triples_cover_c(arch: str, cpus: int) -> str:
    """Every lock word a logged C run passes through is a reachable triple of the Promela model
    with as many CPUs, and the run reaches all of them."""
    reachable = spin("v6.12", cpus, 2, enumerate_triples=True).triples
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.log"
        expect_clean(logged_run(arch, path, ["--threads", cpus, "--acquisitions", 2000]))
        seen = word_triples(read_log(path))
    if not seen <= reachable:
        raise LabFailure(f"{arch}: the C port's logged run reached triples the {cpus}-CPU Promela "
                         f"model cannot: {sorted(seen - reachable)}")
    if seen != reachable:
        raise LabFailure(f"{arch}: the logged run never reached {sorted(reachable - seen)} of the "
                         f"{len(reachable)} triples spin finds reachable with {cpus} CPUs")
    return f"the logged run reaches exactly spin's {len(reachable)} triples"


# ---- the list of checks ------------------------------------------------------------------------

@dataclass
class Check:
    name: str
    fn: Callable[..., str]
    args: tuple = ()

    def __call__(self) -> str:
        return self.fn(*self.args)


def checks() -> list[Check]:
    out = []
    for arch in ARCHES:
        out += [Check(f"{arch}-splitmix64", check_splitmix64, (arch,)),
                Check(f"{arch}-splitmix64-detects-drift", check_splitmix64_detects_drift, (arch,)),
                Check(f"{arch}-xchg_tail-is-16-bit", check_xchg_tail, (arch,)),
                Check(f"{arch}-xchg_tail-pb1-is-32-bit-cmpxchg", check_pb1_xchg_tail, (arch,)),
                Check(f"{arch}-subword-accesses", check_subword_accesses, (arch,)),
                Check(f"{arch}-bad-input", check_bad_input, (arch,)),
                Check(f"{arch}-log-to-a-fifo", check_log_to_a_fifo_nobody_reads, (arch,)),
                Check(f"{arch}-decimal-options", check_decimal_options, (arch,)),
                Check(f"{arch}-10e7-acquisitions", check_long_run, (arch,))]
        for variant in CORRECT:
            out.append(Check(f"{arch}-{variant}-hunt-clean", check_hunting_config_clean, (arch, variant)))
        out += [Check(f"{arch}-v6.12-pb1-hunt-clean", check_hunting_config_clean, (arch, "v6.12", 1)),
                Check(f"{arch}-ticket-clean", check_ticket, (arch,))]
        if arch == "arm64":
            out.append(Check("arm64-v6.12-llsc-hunt-clean", check_hunting_config_clean,
                             (arch, "v6.12", 8, "cortex-a57")))
        for variant in BROKEN:
            out.append(Check(f"{arch}-{variant}-caught", check_broken_caught, (arch, variant)))
        threads = 3 if arch == "x86_64" else 2
        out += [Check(f"{arch}-log-v6.12", check_log, (arch, "v6.12", threads)),
                Check(f"{arch}-log-before-set-locked", check_log, (arch, "before-set-locked", 3)),
                Check(f"{arch}-log-v6.12-pb1", check_log, (arch, "v6.12", 3, 1)),
                Check(f"{arch}-log-ticket", check_log, (arch, "v6.12", 2, 8, "ticket")),
                Check(f"{arch}-log-repeats", check_log_repeats, (arch,))]
        for variant in BROKEN:
            out.append(Check(f"{arch}-log-{variant}-caught", check_broken_log, (arch, variant)))
        out.append(Check(f"{arch}-log-owner-check", check_logged_owner_check, (arch,)))
    out.append(Check("log-same-on-arm64-and-ppc64le", check_log_same_on_arm64_and_ppc64le))
    for variant in CORRECT:
        for cpus in (2, 3):
            out.append(Check(f"spin-{variant}-{cpus}cpu-clean", check_spin_clean, (variant, cpus)))
    for variant in BROKEN:
        out.append(Check(f"spin-{variant}-caught", check_spin_caught, (variant,)))
    out += [Check("spin-triples-2cpu-match-arm64-log", check_spin_triples_cover_c, ("arm64", 2)),
            Check("spin-triples-3cpu-match-x86_64-log", check_spin_triples_cover_c, ("x86_64", 3))]
    out += vmacheck.checks(sys.modules[__name__])
    out += damoncheck.checks(sys.modules[__name__])
    return out


class _Parser(argparse.ArgumentParser):
    """Bad command lines get one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"labcheck: {message}\n")


def main(argv=None) -> int:
    ap = _Parser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", action="append", default=[], metavar="TEXT",
                    help="run only checks whose name contains TEXT (repeat: all must match)")
    ap.add_argument("--list", action="store_true", help="list the checks and exit")
    a = ap.parse_args(argv)
    selected = [c for c in checks() if all(k in c.name for k in a.k)]
    if a.list:
        print("\n".join(c.name for c in selected))
        return 0
    if not selected:
        print(f"labcheck: no check name contains all of {a.k}", file=sys.stderr)
        return 2
    failed = []
    start = time.monotonic()
    for c in selected:
        t = time.monotonic()
        try:
            note = c()
        except LabFailure as e:
            failed.append(c.name)
            print(f"FAIL {c.name} ({time.monotonic() - t:.1f} s): {e}", flush=True)
        else:
            print(f"ok   {c.name} ({time.monotonic() - t:.1f} s): {note}", flush=True)
    print(f"labcheck: {len(selected) - len(failed)} of {len(selected)} checks passed in "
          f"{time.monotonic() - start:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
