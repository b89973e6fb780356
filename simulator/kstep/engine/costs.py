"""What a step costs in nanoseconds: a cost table and a MESI-style directory of cache lines.

Nothing here enters a model's state: the directory lives beside the run (in the timed scheduler),
so exploration, every verdict and every counterexample are what they are without it.

Cache lines.  A location of a shared memory field (``MemoryAccess.memory_fields``) lies on a line:
element k of a tuple field is a line of its own (qspinlock's lock word ``words[k]``, whose
locked, pending and tail share one line; a per-CPU MCS node ``nodes[k]``; a VMA ``vmas[k]``,
whose lock is its own line); each field of a struct field is a line of its own (``mm.mmap_lock``,
``mm.mm_lock_seq``, ``mm.tree``).  Every other location (a thread's own record and locals, per-CPU
data only its CPU touches, ghost fields, counters) is on no shared line and costs no transfer.

Accesses.  A step writes the lines whose value it changes (as ``changed`` sees it) and those its
declared footprint writes, and reads those its footprint reads.  A write of a step the model calls
FULL (``MemoryAccess.ordering``) is an atomic RMW, any other write a plain store, a read a load.

Directory.  Per line, an owner (the CPU holding it Modified/Exclusive) or a set of sharers.  A load
by a CPU that holds the line is a hit; else it fetches the line (one transfer) and joins the
sharers (the owner, if any, keeps a shared copy).  A store or RMW by the line's owner is a hit; else
it fetches the line for ownership, invalidating every other copy (one transfer).  A line nobody has
touched yet is had without a transfer (as if warm from the initial state's setup), so a line only
one CPU ever touches never costs a transfer.  A CPU spinning on a line (a blocked actor waiting on
what its next step reads) keeps a shared copy and spins in its own cache: no transfer until
another CPU writes the line, then one per such write (it re-reads the line): the local spinning MCS
is for, against a whole queue re-reading the one lock word.

Queueing.  A line moves to one CPU at a time: a fetch for ownership, or a load that takes the line
from its owner, cannot start before the line's previous such transfer has ended, so CPUs hammering
one line (faulters on ``mmap_lock``, waiters on a lock word) wait in turn for it, and N of them
cost N transfers' time where 2 cost two.  A load of a line others merely share is served beside
them and waits for nobody.  The timed scheduler keeps when each line is free (``Cost.serial``
names the lines a step takes in turn, in the order it takes them); the wait is part of the step's
transfer time.

Work.  A step costs ``step`` (the instructions of one atomic step) plus its accesses' own costs,
plus ``transfer`` per line transfer, plus the work the model counts for it (``Timing.work``: by
default its label's ``Timing.step_work``, page_zero, page_copy, tlb_flush, ipi, page_fault; a model
whose memory is not shared lines, as fork's page tables, counts its loads, stores and atomics there).

When a step happens.  A step's effect on the state (the word it writes, the lock it takes) happens
all at once when the timed scheduler picks it, at its start; its cost comes after: its line
transfers are queued one after another from that start (each after its line's previous transfer,
Queueing), and its actor's clock moves on by its work and those transfers.  Other CPUs see what it
wrote from its start.  What this can show: how many lines each step moves, which CPUs queue for one
line and for how long (N CPUs on one word pay N transfers in turn), local spinning against a whole
queue re-reading one word, and the order in which the steps take effect (by start time).  What it
cannot show: a write's latency as another CPU sees it (a release reaches a waiter at the release's
start, up to its transfers' time early, so a hand-over looks faster than it is, and a step that
starts during another's transfers already reads the other's result); transfers of one step that a
CPU would overlap (here they run one after another); and, under sc, a store that waits in a store
buffer while its CPU goes on (a plain store's transfer holds up its CPU as an RMW's does, the two
differing only by ``store`` against ``atomic``: so the model cannot show why the qspinlock queue
head's plain ``set_locked()`` store might beat its ``cmpxchg``, which is that the store need not wait
for the line).  Under tso (``memory_model.StoreBuffered.accessed``) a plain store takes its line when
its buffer drains it, on the drain's clock, not its CPU's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Optional

from ..errors import UserError
from . import memory_model, timing
from .model import FULL, Action, Model, State
from .reductions import changed

FORMAT = "kstep-costs"
VERSION = 1
# Each kind of cost, in nanoseconds, and what it is.
KINDS = {
    "step": "one atomic step's own instructions (a few ALU ops and branches)",
    "load": "a load that hits the CPU's own cache",
    "store": "a plain store that hits a line the CPU owns",
    "atomic": "an uncontended atomic RMW (lock-prefixed) on a line the CPU owns",
    "transfer": "one cache-line transfer between two CPUs (half a ping-pong round trip)",
    "page_zero": "clearing one 4 KiB page (clear_page)",
    "page_copy": "copying one 4 KiB page (copy_page)",
    "tlb_flush": "mprotect of one page, with its TLB flush, on a single-threaded process",
    "ipi": "what a TLB-shootdown IPI to one other CPU adds to that mprotect",
    "page_fault": ("a page fault's entry, page allocation and return "
                   "(a first write to a fresh anonymous mapping, minus page_zero)"),
}
WORK_KINDS = ("page_zero", "page_copy", "tlb_flush", "ipi", "page_fault")
DEFAULT = Path(__file__).resolve().parent.parent / "costs.json"


class CostTable(NamedTuple):
    """Nanoseconds per kind of cost (``KINDS``), and where and how they were measured."""

    ns: Mapping[str, float]
    measured: Mapping[str, str]
    source: str  # the file it came from, as the user named it ("the committed table" for the default)


def load(path: Optional[str | Path] = None) -> CostTable:
    """The cost table in ``path`` (None: the committed default), validated: any fault is a UserError."""
    shown = "the committed cost table" if path is None else str(path)
    try:
        text = Path(path or DEFAULT).read_text(encoding="utf-8")
        data = json.loads(text)
    except OSError as e:
        raise UserError(f"--costs {shown}: cannot read it ({e.strerror or e})") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise UserError(f"--costs {shown}: not JSON ({e})") from None
    return CostTable(validate(data, shown), data["measured"], shown)


def validate(data: Any, shown: str) -> dict:
    """The ``ns`` table of a cost file's data, or a UserError naming the first fault."""
    def bad(why: str) -> UserError:
        return UserError(f"--costs {shown}: {why}")

    if not isinstance(data, dict):
        raise bad("not a JSON object")
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise bad(f"not a cost table (format {FORMAT!r}, version {VERSION} expected)")
    measured = data.get("measured")
    if not isinstance(measured, dict) or not all(isinstance(v, str) for v in measured.values()):
        raise bad("'measured' must say in words where, when and how it was measured")
    ns = data.get("ns")
    if not isinstance(ns, dict):
        raise bad("'ns' must be an object of nanoseconds per kind of cost")
    missing = [k for k in KINDS if k not in ns]
    unknown = sorted(k for k in ns if k not in KINDS)
    if missing:
        raise bad(f"'ns' lacks {', '.join(missing)}")
    if unknown:
        raise bad(f"'ns' has unknown kinds {', '.join(unknown)} (known: {', '.join(KINDS)})")
    for k, v in ns.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1e9:
            raise bad(f"ns.{k} must be a number of nanoseconds in 0..1e9, not {json.dumps(v)[:30]}")
    return {k: float(ns[k]) for k in KINDS}


class Cost(NamedTuple):
    """What one step cost: its work (instructions, accesses, named work) and its transfers, in ns."""

    work: float
    transfer: float
    moved: tuple = ()  # the lines it transferred, one entry per transfer
    serial: tuple = ()  # the lines whose transfer waits for the line's previous one (see Queueing)

    @property
    def transfers(self) -> int:
        return len(self.moved)

    @property
    def total(self) -> float:
        return self.work + self.transfer


class Directory:
    """Per cache line, the CPU that owns it or the CPUs that share it (see the module docstring)."""

    def __init__(self) -> None:
        self.owner: dict = {}  # line -> the CPU holding it Modified/Exclusive
        self.sharers: dict = {}  # line -> frozenset of CPUs holding it Shared

    def load(self, cpu: Any, line: Any) -> int:
        """Transfers a load of ``line`` by ``cpu`` costs (0 or 1); the CPU holds the line after it."""
        return 1 if self.take(cpu, line) else 0

    def take(self, cpu: Any, line: Any) -> Optional[bool]:
        """A load of ``line`` by ``cpu``: None for a hit, False for a fetch from the sharers, True for a
        fetch from the line's owner (the transfer that waits its turn on the line)."""
        owner = self.owner.get(line)
        shared = self.sharers.get(line, frozenset())
        if owner == cpu or cpu in shared or (owner is None and not shared):
            if owner is None:
                self.sharers[line] = shared | {cpu}
            return None
        if owner is not None:  # the owner's copy is written back and kept Shared
            del self.owner[line]
            shared = shared | {owner}
        self.sharers[line] = shared | {cpu}
        return owner is not None

    def write(self, cpu: Any, line: Any) -> int:
        """Transfers a store or RMW of ``line`` by ``cpu`` costs (0 or 1); the CPU owns it after it."""
        owner = self.owner.get(line)
        others = self.sharers.pop(line, frozenset()) - {cpu}
        self.owner[line] = cpu
        return 0 if (owner in (None, cpu) and not others) else 1

    def holds(self, cpu: Any, line: Any) -> bool:
        return self.owner.get(line) == cpu or cpu in self.sharers.get(line, frozenset())


def lines(model: Model, state: State, locations: Iterable[tuple]) -> set:
    """The cache lines of ``locations`` (see the module docstring); other locations lie on none."""
    fields = memory_model.of(model).memory_fields
    out: set = set()
    for loc in locations:
        if loc[0] not in fields:
            continue
        value = getattr(state, loc[0])
        if len(loc) == 1 and hasattr(value, "_fields"):  # a struct: each field its own line
            out.update((loc[0], part) for part in value._fields)
        else:
            out.add(loc[:2])
    return out


def written(model: Model, before: State, after: State) -> set:
    """The lines whose value a step from ``before`` to ``after`` changed (struct fields part by part)."""
    out: set = set()
    for loc in changed(before, after):
        value = getattr(before, loc[0])
        if len(loc) == 1 and hasattr(value, "_fields") and loc[0] in memory_model.of(model).memory_fields:
            out.update((loc[0], part) for part, x, y in zip(value._fields, value, getattr(after, loc[0])) if x != y)
        else:
            out |= lines(model, before, (loc,))
    return out


def accesses(model: Model, state: State, action: Action, after: State) -> tuple[set, set]:
    """The lines a step reads and the lines it writes."""
    fp = memory_model.of(model).accessed(state, action, after)
    writes = written(model, state, after)
    reads: set = set()
    if fp is not None:
        writes |= lines(model, state, fp.writes)
        reads = lines(model, state, fp.reads) - writes
    return reads, writes


def step_cost(model: Model, table: CostTable, directory: Directory, cpu: Any, state: State, action: Action,
              after: State) -> Cost:
    """What ``action`` of ``cpu`` costs from ``state`` (to ``after``), the directory updated."""
    ns = table.ns
    reads, writes = accesses(model, state, action, after)
    moved, serial = [], []
    for line in sorted(reads, key=repr):
        took = directory.take(cpu, line)
        if took is not None:
            moved.append(line)
        if took:
            serial.append(line)
    for line in sorted(writes, key=repr):
        if directory.write(cpu, line):
            moved.append(line)
            serial.append(line)
    per_write = ns["atomic"] if writes and memory_model.of(model).ordering(state, action) == FULL else ns["store"]
    work = ns["step"] + ns["load"] * len(reads) + per_write * len(writes)
    work += sum(ns[kind] * n for kind, n in timing.of(model).work(state, action, after).items())
    return Cost(work, ns["transfer"] * len(moved), tuple(moved), tuple(serial))


def spin_lines(model: Model, state: State, actor: str) -> set:
    """The shared lines a blocked actor's next step reads (what it spins on); empty when undeclared."""
    frames = _next_frame(state, actor)
    if frames is None:
        return set()
    try:
        fp = memory_model.of(model).accessed(state, Action(actor, frames))
    except (KeyError, IndexError, TypeError, ValueError):
        return set()
    return set() if fp is None else lines(model, state, fp.reads)


def _next_frame(state: State, actor: str) -> Optional[str]:
    """The label of a thread's next step, if the state has threads with frames (ProgramModel's)."""
    threads = state[0] if state and type(state[0]) is tuple else ()
    for t in threads:
        if t and t[0] == actor and len(t) > 1 and type(t[1]) is tuple and t[1]:
            return t[1][0][0]
    return None
