"""What a vma-locks scenario file may say (``SCHEMA``: the VMAs, the threads and what each runs),
the rules a valid one follows, and the program of each thread (``thread_loop``).
"""

from __future__ import annotations

from ...engine import Frame, Program
from ...scenario_spec.scenario import Bool, Int, Key, List, Name, Str, Table, bad, unique_names
from ..rcu import RCU_ACTOR
from . import rwsem

program = Program()  # this file's steps and calls; model.py joins the files' programs


PAGES = 64  # addresses are page numbers 0..PAGES-1
PROTS = ("r", "rw")
OPS = ("mmap", "munmap", "mprotect", "fork")


def _vma_rules(vma, path):
    if vma["start"] >= vma["end"]:
        raise bad(path, f"start {vma['start']} must be below end {vma['end']}")


def _op_rules(op, path):
    if op["op"] != "fork" and op["start"] >= op["end"]:
        raise bad(path, f"{op['op']} needs start below end (got {op['start']}..{op['end']})")


def _thread_rules(t, path):
    if t["kind"] == "fault" and not t["faults"]:
        raise bad(path + ".faults", "a fault thread needs at least one address")
    if t["kind"] == "writer" and not t["ops"]:
        raise bad(path + ".ops", "a writer thread needs at least one operation")


def _scenario_rules(sc, path):
    vmas = sorted(sc["vmas"], key=lambda v: v["start"])
    for a, b in zip(vmas, vmas[1:]):
        if b["start"] < a["end"]:
            raise bad("vmas", f"[{a['start']}, {a['end']}) and [{b['start']}, {b['end']}) overlap")
    names = [n for t in sc["threads"] for n in thread_names(t)]
    unique_names(names, (RCU_ACTOR,), "threads")
    if len(names) > MAX_THREADS:
        raise bad("threads", f"{len(names)} threads; at most {MAX_THREADS}")


MAX_THREADS = 128  # the thread's app launch has about 100 threads: a timed run simulates that many
FOREVER = "forever"  # a thread's repeat with no end: the state keeps no count (liveness)
# A fault's own work (allocate a page, zero it, set the PTE) against one lock operation: zeroing a
# 4 KiB page already in the cache took 18 times as long as an uncontended atomic read-modify-write on
# the development machine (90 ns against 5 ns), so a fault handles its page in 18 rounds by default.
# A cold page costs far more; timed runs price it from the cost table's page_zero, not from this.
FAULT_WORK = 18


def thread_names(t):
    return [t["name"]] if t["count"] == 1 else [f"{t['name']}{k}" for k in range(1, t["count"] + 1)]


SCHEMA = Table({
    "vmas": Key(List(Table({
        "start": Key(Int(0, PAGES - 1, "vm_start, a page number")),
        "end": Key(Int(1, PAGES, "vm_end (exclusive)")),
        "prot": Key(Str(PROTS, doc="protection"), "rw"),
        "anon_vma": Key(Bool(doc="already has an anon_vma (false: the first fault must prepare one)"), True),
    }, rules=_vma_rules), 0, 8, "the address space at the start, non-overlapping")),
    "threads": Key(List(Table({
        "name": Key(Name(doc="actor name (a count > 1 appends 1, 2, ...)", max_len=10)),
        "kind": Key(Str(("fault", "writer"), doc="fault: takes page faults; writer: runs mm syscalls")),
        "count": Key(Int(1, MAX_THREADS, "how many identical threads"), 1),
        "repeat": Key(Int(1, 50, "how many times the thread runs its list (\"forever\": with no end, for "
                              "kstep explore --liveness)", words=(FOREVER,)), 1),
        "faults": Key(List(Int(0, PAGES - 1), 0, 16, "fault: the addresses it faults on, in order"), []),
        "work": Key(Int(1, 1000, "fault: rounds each fault's own work takes under round-robin "
                              "(timing only; exploration ignores it)"), FAULT_WORK),
        "ops": Key(List(Table({
            "op": Key(Str(OPS, doc="the system call; mmap is MAP_FIXED (it replaces what is mapped in the range)")),
            "start": Key(Int(0, PAGES - 1, "first page of the range"), 0),
            "end": Key(Int(0, PAGES, "end of the range (exclusive)"), 0),
            "prot": Key(Str(PROTS, doc="mmap/mprotect: the protection"), "rw"),
        }, rules=_op_rules), 0, 16, "writer: the operations, in order"), []),
    }, rules=_thread_rules), 1, MAX_THREADS, "the threads, each on its own CPU")),
    "handoff_after": Key(Int(0, 20, "RWSEM_WAIT_TIMEOUT, counted in a queued writer's failed "
                                    "rwsem_try_write_lock calls: the failed try after this many sets "
                                    "RWSEM_FLAG_HANDOFF (0: the first, at any moment, for the engine has "
                                    "no clock; \"never\": readers may steal ahead of the writer forever)",
                         words=(rwsem.NEVER,)), 0),
}, rules=_scenario_rules)


@program.call("thread_loop")
def thread_loop(s, i, frames):
    """A thread whose list repeats forever: its list, then the loop again."""
    return frames + (Frame("thread_loop", frames),)


def thread_program(t):
    frames = _list(t)
    return (Frame("thread_loop", frames),) if t["repeat"] == FOREVER else frames * t["repeat"]


def _list(t):
    if t["kind"] == "fault":
        return tuple(Frame("do_user_addr_fault", a) for a in t["faults"])
    frames = []
    for op in t["ops"]:
        if op["op"] == "mmap":
            frames.append(Frame("sys_mmap", (op["start"], op["end"], op["prot"])))
        elif op["op"] == "munmap":
            frames.append(Frame("sys_munmap", (op["start"], op["end"])))
        elif op["op"] == "mprotect":
            frames.append(Frame("sys_mprotect", (op["start"], op["end"], op["prot"])))
        else:
            frames.append(Frame("sys_fork"))
    return tuple(frames)
