"""Replay a per-VMA lock observation log (kernel-lab/vma-locks) against the vma-locks model.

The C port writes log format 2, as the qspinlock port does: a versioned header, one line per
atomic step, an end marker with the step count::

    # kstep-log 2 vma-locks variant=v6.12 seed=1 vmas=0-16:rw:anon,16-32:r:none thread=F1:fault:3:1.17 ...
    <ticket> <actor> <label> <mm_lock_seq> <mmap_lock> <vma> <vm_lock_seq> <vma lock> <detached> <in tree>
    # kstep-log end steps=<N>

The header is the run's scenario: ``vmas=START-END:PROT:anon|none,...`` is the address space, and
each ``thread=NAME:fault|writer:REPEAT:ITEMS`` a thread in CPU order, its items the fault addresses
(``3.17.25``) or the operations (``munmap-20-24,mmap-20-24-rw,mprotect-36-40-r,fork``); the
model's scenario schema checks them.  Each line gives the state after the step: ``mm_lock_seq``,
mmap_lock's ``sem->count`` (``0x%08x``: RWSEM_WRITER_LOCKED bit 0, RWSEM_FLAG_WAITERS bit 1,
RWSEM_FLAG_HANDOFF bit 2, readers from bit 8), and for the VMA the step touched (``-`` for none,
and then ``- - - -``) its ``vm_lock_seq`` (``-`` without CONFIG_PER_VMA_LOCK), its lock's count,
``detached`` and whether the maple tree holds it (``0``/``1``); a freed VMA logs ``freed - -``
and its tree membership.  VMAs are named by creation order, as the model names them.

The checker advances the model by each line's (actor, label) and fails at the first line the model
cannot take there, whose logged state differs from the model's, or that breaks one of the model's
invariants; and at the end of a log without its end marker, or whose threads have not all
finished there.  RCU's quiescent-state reports happen inside liburcu, unlogged: after each line
the checker takes every report (``rcu_report_qs_rdp``, ``rcu_gp_fqs``) the model then allows,
which is the most a grace period can have seen.  Bad input is a UserError: one line, exit 2.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

from ...engine import Action
from ...engine.model import first_violation, without_cyclic_gc
from ...engine.program import thread_index
from ...scenario_spec.scenario import Invalid
from ...errors import UserError
from ...files import LOG_CAP, STDIN, open_input, text_lines
from .log import MAGIC, STEP_VERDICT, VERSION, StepLines
from ...models import make_model
from ...models.rcu import RCU_ACTOR
from ...models.vma_locks.rwsem import NOBODY
from ...models.vma_locks.scenario import SCHEMA
from ...models.vma_locks.state import FREED

MECH = "vma-locks"
_NUMBER = re.compile(r"0|[1-9][0-9]*")
_SEQ = re.compile(r"-?(0|[1-9][0-9]{0,18})")
_WORD = re.compile(r"0x[0-9a-fA-F]{8}")
STEP_FIELDS = ("<ticket> <actor> <label> <mm_lock_seq> <mmap_lock> <vma> <vm_lock_seq> <vma lock> "
               "<detached> <in tree>")
HIDDEN = ("rcu_report_qs_rdp", "rcu_gp_fqs")  # RCU's reports: inside liburcu, taken by the checker


@dataclass
class VmaCheckResult:
    variant: str
    header: dict
    threads: int = 0
    steps: int = 0
    counters: Optional[dict] = None  # the model's counters after the last legal line
    line: Optional[int] = None
    text: str = ""
    verdict: str = ""
    why: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.line is None


def _vmas(text: str, where: str) -> list:
    out = []
    for item in text.split(","):
        m = re.fullmatch(r"(0|[1-9][0-9]{0,3})-(0|[1-9][0-9]{0,3}):(r|rw):(anon|none)", item)
        if not m:
            raise UserError(f"{where}: VMA {item[:40]!r} is not START-END:r|rw:anon|none")
        out.append({"start": int(m[1]), "end": int(m[2]), "prot": m[3], "anon_vma": m[4] == "anon"})
    return out


def _op(text: str, where: str) -> dict:
    if text == "fork":
        return {"op": "fork"}
    m = re.fullmatch(r"(mmap|mprotect)-(0|[1-9][0-9]{0,3})-(0|[1-9][0-9]{0,3})-(r|rw)", text) or \
        re.fullmatch(r"(munmap)-(0|[1-9][0-9]{0,3})-(0|[1-9][0-9]{0,3})()", text)
    if not m:
        raise UserError(f"{where}: operation {text[:40]!r} is not fork, munmap-S-E or mmap|mprotect-S-E-r|rw")
    op = {"op": m[1], "start": int(m[2]), "end": int(m[3])}
    if m[4]:
        op["prot"] = m[4]
    return op


def _thread(text: str, where: str) -> dict:
    parts = text.split(":")
    if len(parts) != 4 or parts[1] not in ("fault", "writer") or not _NUMBER.fullmatch(parts[2][:6]):
        raise UserError(f"{where}: thread {text[:60]!r} is not NAME:fault|writer:REPEAT:ITEMS")
    name, kind, repeat, items = parts
    t = {"name": name, "kind": kind, "repeat": int(repeat)}
    if kind == "fault":
        if not re.fullmatch(r"(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3}))*", items):
            raise UserError(f"{where}: fault addresses {items[:60]!r} are not page numbers joined by '.'")
        t["faults"] = [int(a) for a in items.split(".")]
    else:
        t["ops"] = [_op(o, where) for o in items.split(",")]
    return t


def parse_header(line: str, where: str):
    """(model, config, fields) from the header line."""
    words = line.split()
    if words[:2] != ["#", "kstep-log"] or len(words) < 3:
        raise UserError(f"{where}: line 1 is not a '{MAGIC} {VERSION} {MECH} ...' header")
    if words[2] != str(VERSION):
        raise UserError(f"{where}: a log of format {words[2][:20]!r}; this kstep reads format {VERSION} only")
    if len(words) < 4 or words[3] != MECH:
        raise UserError(f"{where}: the header is for {words[3][:40] if len(words) > 3 else 'nothing'!r}, not {MECH}")
    fields, threads = {}, []
    for item in words[4:]:
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise UserError(f"{where}: header item {item[:40]!r} is not KEY=VALUE")
        if key == "thread":
            threads.append(_thread(value, where))
        elif key in ("variant", "seed", "vmas"):
            if key in fields:
                raise UserError(f"{where}: header field {key} given twice")
            fields[key] = value
        else:
            raise UserError(f"{where}: unknown header field {key[:40]!r} (known: variant, seed, vmas, thread)")
    for key in ("variant", "vmas"):
        if key not in fields:
            raise UserError(f"{where}: header has no {key}= field")
    if not threads:
        raise UserError(f"{where}: header has no thread= field")
    model = make_model(MECH, fields["variant"])
    try:
        config = SCHEMA.check({"vmas": _vmas(fields["vmas"], where), "threads": threads}, "")
    except Invalid as e:
        raise UserError(f"{where}: header: {e}") from None
    fields["threads"] = len(threads)
    return model, config, fields


def rwsem_count(sem) -> int:
    """sem->count as 6.12 lays it out, from the model's rwsem."""
    return ((sem.owner != NOBODY) | (2 if sem.waiters else 0) | (4 if sem.handoff else 0)
            | len(sem.readers) << 8)


def logged_state(s, vma: int) -> tuple:
    """The fields after <label> that the log gives for state s, as text."""
    out = (str(s.mm.mm_lock_seq), f"0x{rwsem_count(s.mm.mmap_lock):08x}")
    if vma < 0:
        return out + ("-",) * 5
    v = s.vmas[vma]
    in_tree = "1" if vma in s.mm.tree else "0"
    if v.status == FREED:
        return out + (str(vma), "freed", "-", "-", in_tree)
    seq = "-" if v.vm_lock_seq is None else str(v.vm_lock_seq)
    return out + (str(vma), seq, f"0x{rwsem_count(v.lock):08x}", "1" if v.detached else "0", in_tree)


_NAMES = ("mm_lock_seq", "mmap_lock", "vma", "vm_lock_seq", "vma lock", "detached", "in tree")


def _hidden(model, s):
    """Take every RCU report the model allows now, until none is left."""
    while True:
        acts = [a for a in model.actions(s) if a.label in HIDDEN]
        if not acts:
            return s
        s = model.step(s, acts[0])


def _why_not(model, s, actor: str, label: str) -> str:
    if actor == RCU_ACTOR:
        return f"the grace-period kthread cannot take {label} now"
    t = s.threads[thread_index(s, actor)]
    if not t.frames:
        return f"{actor} has already finished" + (f" (killed by {t.died})" if t.died else "")
    nxt = t.frames[0].label
    if nxt != label:
        return f"{actor}'s next step is {nxt}, not {label}"
    return f"{actor} is waiting at {label}: its condition does not hold yet"


def _check_fields(parts: list, lineno: int, where: str, nvmas: int) -> int:
    """Check the syntax of the state fields; the VMA id, or -1."""
    at = f"{where}:{lineno}"
    seq, word, vma, vseq, vword, detached, in_tree = parts
    if not _SEQ.fullmatch(seq[:24]):
        raise UserError(f"{at}: mm_lock_seq {seq[:24]!r} is not a whole number")
    if not _WORD.fullmatch(word):
        raise UserError(f"{at}: mmap_lock count {word[:24]!r} is not 0x followed by 8 hex digits")
    if vma == "-":
        if (vseq, vword, detached, in_tree) != ("-",) * 4:
            raise UserError(f"{at}: no VMA (-), yet its fields are not all -")
        return -1
    if not _NUMBER.fullmatch(vma[:12]):
        raise UserError(f"{at}: vma {vma[:24]!r} is neither - nor a VMA id")
    if in_tree not in ("0", "1"):
        raise UserError(f"{at}: in-tree {in_tree[:24]!r} is neither 0 nor 1")
    if vseq == "freed":
        if (vword, detached) != ("-", "-"):
            raise UserError(f"{at}: a freed VMA logs '- -' for its lock and detached flag")
    else:
        if vseq != "-" and not _SEQ.fullmatch(vseq[:24]):
            raise UserError(f"{at}: vm_lock_seq {vseq[:24]!r} is neither - nor a whole number")
        if not _WORD.fullmatch(vword):
            raise UserError(f"{at}: VMA lock count {vword[:24]!r} is not 0x followed by 8 hex digits")
        if detached not in ("0", "1"):
            raise UserError(f"{at}: detached {detached[:24]!r} is neither 0 nor 1")
    return int(vma[:12])


@without_cyclic_gc
def check_lines(lines: Iterable[str], where: str = "log",
                progress: Optional[Callable[[int], None]] = None, progress_every: float = 1.0) -> VmaCheckResult:
    start = time.perf_counter()
    it = iter(lines)
    first = next(it, None)
    if first is None:
        raise UserError(f"{where}: empty (expected a '{MAGIC} {VERSION} {MECH} ...' header)")
    model, config, fields = parse_header(first.rstrip("\n"), where)
    result = VmaCheckResult(model.variant.name, fields, threads=fields["threads"])
    known = set(model.sources())
    actors = set(model.actors(model.initial(config)))
    state_checks, step_checks = model.state_invariants(), model.transition_invariants()
    s = _hidden(model, model.initial(config))
    next_report = start + progress_every
    steps = StepLines(it, where, 10, STEP_FIELDS)
    for lineno, text, parts in steps:
        ticket, actor, label = parts[:3]
        if actor not in actors:
            raise UserError(f"{where}:{lineno}: actor {actor[:20]!r} is not in this log's header")
        if label not in known:
            raise UserError(f"{where}:{lineno}: unknown label {label[:40]!r} for {MECH} {model.variant.name}")
        vma = _check_fields(parts[3:], lineno, where, len(s.vmas))
        fail = None
        action = Action(actor, label)
        if int(ticket) != result.steps:
            fail = f"ticket {ticket} where {result.steps} comes next: the log is out of order or has a gap"
        elif action not in model.actions(s):
            fail = _why_not(model, s, actor, label)
        else:
            t = model.step(s, action)
            v = first_violation(step_checks, (s, action, t)) or first_violation(state_checks, (t,))
            if vma >= len(t.vmas):
                fail = f"VMA {vma} does not exist in the model after {label} ({len(t.vmas)} VMAs so far)"
            elif v:
                fail = f"the model allows the step, and it breaks {v.invariant}: {v.message}"
            else:
                want = logged_state(t, vma)
                diff = [(n, got, w) for n, got, w in zip(_NAMES, parts[3:], want) if got != w]
                if diff:
                    fail = "the state after the step differs from the model's: " + ", ".join(
                        f"{n} is {got} in the log, {w} in the model" for n, got, w in diff)
                else:
                    s = _hidden(model, t)
        if fail:
            result.line, result.text, result.verdict, result.why = lineno, text, STEP_VERDICT, fail
            break
        result.steps += 1
        if progress and result.steps % 4096 == 0 and time.perf_counter() >= next_report:
            progress(result.steps)
            next_report = time.perf_counter() + progress_every
    result.counters = s.counters._asdict()
    if result.ok:
        steps.unfinished(result, _unfinished(model, s, steps.end, result.steps))
    result.seconds = time.perf_counter() - start
    return result


def _unfinished(model, s, end, steps) -> Optional[str]:
    if end is None:
        return (f"the log stops after {steps} step{'s' if steps != 1 else ''} without its end marker: the "
                f"run did not finish, or the log was cut short")
    if end[1] != steps:
        return f"the end marker counts {end[1]} steps, the log has {steps}"
    if model.finished(s):
        return None
    stuck = [a for a in model.actors(s) if not model.done(s, a)]
    return f"the log ends with {', '.join(stuck)} not finished: the header promised work that never ran"


def check_file(path: str | Path, progress=None) -> VmaCheckResult:
    """Check the log at ``path`` (``-``: standard input).  Only reading it can be the user's problem:
    any other error while replaying is a bug and propagates."""
    where = "standard input" if str(path) == STDIN else str(path)
    with open_input(path, LOG_CAP, "log") as f:
        return check_lines(text_lines(f, where), where, progress)


# --- writing: the model's own runs as logs, the reference the C port's logs are compared with -----------

def header_line(variant: str, config: dict, seed: int = 0) -> str:
    """The header for a run of ``config`` (a vma-locks scenario whose threads each have count 1)."""
    vmas = ",".join(f"{v['start']}-{v['end']}:{v['prot']}:{'anon' if v['anon_vma'] else 'none'}"
                    for v in config["vmas"])
    threads = []
    for t in config["threads"]:
        if t["kind"] == "fault":
            items = ".".join(str(a) for a in t["faults"])
        else:
            items = ",".join("fork" if o["op"] == "fork" else
                             f"{o['op']}-{o['start']}-{o['end']}" + ("" if o["op"] == "munmap" else f"-{o['prot']}")
                             for o in t["ops"])
        threads.append(f"thread={t['name']}:{t['kind']}:{t['repeat']}:{items}")
    return f"{MAGIC} {VERSION} {MECH} variant={variant} seed={seed} vmas={vmas} " + " ".join(threads)


def log_lines(model, trace) -> list[str]:
    """A trace of the vma-locks model as log lines, without header and end marker.  RCU's reports
    are left out, as the port leaves them out; each line names the VMA the step's thread points at
    (or the VMA in the step's argument), as the port names the VMA it touched."""
    out = []
    for a, s, t in zip(trace.actions, trace.states, trace.states[1:]):
        if a.label in HIDDEN:
            continue
        vma = _touched(s, a, t)
        out.append(f"{len(out)} {a.actor} {a.label} " + " ".join(logged_state(t, vma)))
    return out


def _touched(s, a, t) -> int:
    if a.actor == RCU_ACTOR:
        if a.label != "rcu_do_batch":
            return -1
        gone = [cb for cb in s.rcu.callbacks if cb not in t.rcu.callbacks]
        return gone[0].obj
    i = thread_index(s, a.actor)
    arg = s.threads[i].frames[0].arg
    if a.label == "vm_area_alloc":
        return len(t.vmas) - 1
    if a.label in ("__split_vma", "vma_set_range", "vm_flags_reset"):
        return arg[0]
    if a.label == "commit_merge":
        return arg[1]
    if isinstance(arg, int) and arg >= 0 and a.label not in ("mas_walk", "find_vma", "vma_lock_miss", "vma_lock_retry"):
        return arg
    if a.label in ("vma_lock_success", "vma_lock_abort", "vma_lock_retry", "get_mmap_lock_carefully",
                   "rcu_read_lock", "rcu_read_unlock", "bad_area_nosemaphore", "mmap_read_unlock",
                   "vma_end_write_all", "vma_iter_clear_gfp", "down_write", "up_write", "downgrade_write"):
        return -1
    return t.threads[i].vma if t.threads[i].vma >= 0 else s.threads[i].vma
