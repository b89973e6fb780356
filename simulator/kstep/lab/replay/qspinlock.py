"""Replay an observation log against a model: every logged step must be one the model can take.

The kernel-lab C port (and, later, probes of the real kernel) write one line per atomic step,
between a header and an end marker (log format 2)::

    # kstep-log 2 qspinlock variant=v6.12 cpus=2 acquisitions=1000 pending_bits=8
    <ticket> <cpu> <label> <word-before> <word-after> <count> <idx> <next> <locked>
    ...
    # kstep-log end steps=<N>

``<ticket>`` counts 0, 1, 2, ... in the order the steps happened (the port takes it under one
global mutex together with the step's memory operation, so the log is a linearisation);
``<cpu>`` is the CPU index, ``<k>.irq`` for an interrupt on CPU k; the words are the lock word the
step read or wrote, as ``0x%08x`` (a step that does not touch the word logs its value at that
moment twice).  The last four fields are the MCS state after the step: ``<count>`` is the CPU's
nesting count (``qnodes[0].mcs.count``), and ``<idx> <next> <locked>`` the node the context holds
-- its index, ``node->next`` as ``<cpu>/<idx>`` or ``-`` for NULL, and ``node->locked`` -- or
``- - -`` when it holds none.  The header chooses the model's configuration: the variant, how many
CPUs, how many acquisitions each CPU makes, the ``_Q_PENDING_BITS`` layout; optional ``irq=N``
gives every CPU an interrupt that takes lock B N times, and powerpc's ``steal_spins``/``head_spins``
default to 6.12's 32 and 256.  The end marker repeats the number of steps; a writer that did not
finish (a hang, a crash, a violation it reported) leaves it out.

The checker keeps the set of model states consistent with the log so far, advances each by the
logged action and keeps those whose lock word and MCS fields match; it fails at the first line
that leaves the set empty -- a step not enabled for that CPU, or a change the step cannot make --
at a line whose step the model allows but that breaks one of its invariants (a log from a
deliberately broken C variant), and at the end of a log without its end marker, or whose
contexts have not all finished there (a header promising work that never ran).  Bad input (a
truncated line, a wrong header, a log of another format version, garbage) is a UserError: one
line, exit status 2.  The vma-locks port's logs share the header and the end marker (``log``) and
have fields of their own: kstep.lab.replay.vma_locks reads them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from ...engine import Action, thread_index
from ...engine.model import first_violation, without_cyclic_gc
from ...errors import UserError, shorten
from ...files import LOG_CAP, STDIN, open_input, text_lines
from ...models import make_model, model_class
from ...models.qspinlock.powerpc import HEAD_SPINS_6_12, STEAL_SPINS_6_12
from ...models.qspinlock.state import LOCK_NAMES, MAX_NODES, NULL
from .log import END, LOG_FORMATS, MAGIC, NUMBER, STEP_VERDICT, VERSION, StepLines

MECH = "qspinlock"
_WORD = re.compile(r"0x[0-9a-fA-F]{8}")
_CPU = re.compile(r"(0|[1-9][0-9]*)(\.irq)?")
_NODE = re.compile(r"(0|[1-9][0-9]*)/([0-9])")
STEP_FIELDS = "<ticket> <cpu> <label> <before> <after> <count> <idx> <next> <locked>"


@dataclass
class CheckResult:
    mechanism: str
    variant: str
    header: dict
    steps: int = 0  # log lines replayed and found legal
    acquisitions: int = 0  # critical sections among them
    line: Optional[int] = None  # the failing line's number (1-based, header included)
    text: str = ""  # the failing line
    verdict: str = ""  # what fails there: a step, or the run as a whole
    why: str = ""  # what the model says about it
    seconds: float = 0.0
    states: int = 1  # candidate states after the last line (1 unless steps are ambiguous)

    @property
    def ok(self) -> bool:
        return self.line is None


@dataclass
class _Header:
    fields: dict
    model: object
    config: dict
    actors: dict = field(default_factory=dict)  # the log's cpu field -> actor name


def _int_field(fields, key, lo, hi, where, default=None):
    if key not in fields:
        if default is None:
            raise UserError(f"{where}: header has no {key}= field")
        return default
    text = fields[key]
    if not re.fullmatch(r"0|[1-9][0-9]{0,18}", text) or not lo <= int(text) <= hi:
        raise UserError(f"{where}: header field {key}={shorten(text, 40)}: expected a whole number {lo}..{hi}")
    return int(text)


HEADER_FIELDS = ("variant", "cpus", "acquisitions", "pending_bits", "irq", "steal_spins", "head_spins")


def parse_header(mechanism: str, line: str, where: str) -> _Header:
    if not line.startswith(MAGIC + " "):
        raise UserError(f"{where}: line 1 is not a '{MAGIC} {VERSION} {mechanism} ...' header")
    words = line[len(MAGIC):].split()
    if words and words[0] in LOG_FORMATS:  # format 1 had no version: the mechanism came first
        raise UserError(f"{where}: a log of format 1, which kstep no longer reads: write it again with "
                        f"the current kernel-lab tools (format {VERSION})")
    if not words or not NUMBER.fullmatch(words[0][:20]):
        raise UserError(f"{where}: line 1 is not a '{MAGIC} {VERSION} {mechanism} ...' header")
    if words[0] != str(VERSION):
        raise UserError(f"{where}: a log of format {words[0][:20]}; this kstep reads format {VERSION} only")
    words = words[1:]
    if not words or words[0] != mechanism:
        got = words[0] if words else "nothing"
        raise UserError(f"{where}: the header is for {got!r}, not {mechanism}")
    fields = {}
    for item in words[1:]:
        key, eq, value = item.partition("=")
        if not eq or not key or not value:
            raise UserError(f"{where}: header item {item!r} is not KEY=VALUE")
        if key not in HEADER_FIELDS:
            raise UserError(f"{where}: unknown header field {key!r} (known: {', '.join(HEADER_FIELDS)})")
        if key in fields:
            raise UserError(f"{where}: header field {key} given twice")
        fields[key] = value
    if "variant" not in fields:
        raise UserError(f"{where}: header has no variant= field")
    cls = model_class(mechanism)
    if fields["variant"] not in cls.variants:
        raise UserError(f"{where}: unknown variant {fields['variant']!r} for {mechanism} "
                        f"(choose from: {', '.join(cls.variants)})")
    cpus = _int_field(fields, "cpus", 1, 1024, where)
    acquisitions = _int_field(fields, "acquisitions", 1, 10**9, where)
    pending_bits = _int_field(fields, "pending_bits", 1, 8, where)
    if pending_bits not in (1, 8):
        raise UserError(f"{where}: header field pending_bits={pending_bits}: neither 8 nor 1")
    irq = _int_field(fields, "irq", 0, 10**9, where, default=0)
    config = {
        "pending_bits": pending_bits,
        "steal_spins": _int_field(fields, "steal_spins", 0, 2**31 - 1, where, default=STEAL_SPINS_6_12),
        "head_spins": _int_field(fields, "head_spins", 1, 2**31 - 1, where, default=HEAD_SPINS_6_12),
        "cpus": [{"locks": [LOCK_NAMES[0]], "repeat": acquisitions, "irq": [LOCK_NAMES[1]] if irq else [],
                  "irq_repeat": max(irq, 1)} for _ in range(cpus)],
    }
    header = _Header(fields, make_model(mechanism, fields["variant"]), config)
    for k in range(cpus):
        header.actors[str(k)] = f"C{k}"
        if irq:
            header.actors[f"{k}.irq"] = f"C{k}.irq"
    return header


def _why_not(model, s, actor: str, label: str) -> str:
    """Why ``actor`` cannot take ``label`` in state ``s``."""
    i = thread_index(s, actor)
    frames = s.threads[i].frames
    if not frames:
        return f"{actor} has already finished"
    nxt = frames[0].label
    if nxt != label:
        return f"{actor}'s next step is {nxt}, not {label}"
    if any(a.actor == actor for a in model.actions(s)):
        return f"{actor} cannot take {label} now"
    guard = model.table.steps[nxt].guard
    if guard is None or guard(s, i, frames[0].arg):
        return f"{actor} is held back: its interrupt is in progress"
    return f"{actor} is waiting at {label}: its condition does not hold yet"


def _mcs_fields(text: list, header: _Header, where: str) -> tuple:
    """``<count> <idx> <next> <locked>`` as ``Model.mcs_fields`` gives them: (count, None) or
    (count, (idx, next node id or NULL, locked))."""
    count, idx, nxt, locked = text
    if not NUMBER.fullmatch(count[:20]) or int(count[:20]) > MAX_NODES + 1:
        raise UserError(f"{where}: count {count[:20]!r} is not a nesting count 0..{MAX_NODES + 1}")
    if idx == "-":
        if (nxt, locked) != ("-", "-"):
            raise UserError(f"{where}: no node (idx -), yet next {nxt[:20]!r} and locked {locked[:20]!r} are not -")
        return int(count), None
    if len(idx) != 1 or not "0" <= idx < str(MAX_NODES):
        raise UserError(f"{where}: idx {idx[:20]!r} is neither - nor a node index 0..{MAX_NODES - 1}")
    if locked not in ("0", "1"):
        raise UserError(f"{where}: locked {locked[:20]!r} is neither 0 nor 1")
    if nxt == "-":
        return int(count), (int(idx), NULL, int(locked))
    m = _NODE.fullmatch(nxt[:20])
    if not m or int(m[1]) >= len(header.config["cpus"]) or int(m[2]) >= MAX_NODES:
        raise UserError(f"{where}: next {nxt[:20]!r} is neither - nor <cpu>/<idx> of a node of this log's CPUs")
    return int(count), (int(idx), int(m[1]) * MAX_NODES + int(m[2]), int(locked))


def _mcs_text(fields: tuple) -> str:
    count, node = fields
    if node is None:
        return f"count {count}, no node"
    idx, nxt, locked = node
    return f"count {count}, node {idx} with next {'-' if nxt == NULL else '{}/{}'.format(*divmod(nxt, MAX_NODES))} " \
           f"and locked {locked}"


@without_cyclic_gc
def check_lines(lines: Iterable[str], where: str = "log",
                progress: Optional[Callable[[int], None]] = None, progress_every: float = 1.0) -> CheckResult:
    """Replay ``lines`` (the header first, the end marker last) against the qspinlock model."""
    mechanism = MECH
    start = time.perf_counter()
    it = iter(lines)
    first = next(it, None)
    if first is None:
        raise UserError(f"{where}: empty (expected a '{MAGIC} {VERSION} {mechanism} ...' header)")
    header = parse_header(mechanism, first.rstrip("\n"), where)
    model = header.model
    known = set(model.sources())
    state_checks = model.state_invariants()
    step_checks = model.transition_invariants()
    result = CheckResult(mechanism, model.variant.name, header.fields)
    candidates = {model.initial(header.config)}
    next_report = start + progress_every
    expected = 0
    steps = StepLines(it, where, 9, STEP_FIELDS)
    for lineno, text, parts in steps:
        ticket, cpu, label, before, after = parts[:5]
        if not _CPU.fullmatch(cpu[:20]):
            raise UserError(f"{where}:{lineno}: cpu {cpu[:20]!r} is neither <k> nor <k>.irq")
        if cpu not in header.actors:
            what = "an interrupt context" if cpu.endswith(".irq") else "a CPU"
            raise UserError(f"{where}:{lineno}: {what} {cpu} that this log's header does not have")
        if label not in known:
            raise UserError(f"{where}:{lineno}: unknown label {label[:40]!r} for {mechanism} {model.variant.name}")
        for w in (before, after):
            if not _WORD.fullmatch(w):
                raise UserError(f"{where}:{lineno}: word {w[:20]!r} is not 0x followed by 8 hex digits")
        mcs = _mcs_fields(parts[5:], header, f"{where}:{lineno}")
        fail = None
        if int(ticket) != expected:
            fail = f"ticket {ticket} where {expected} comes next: the log is out of order or has a gap"
        else:
            actor = header.actors[cpu]
            w0, w1 = int(before, 16), int(after, 16)
            survivors = set()
            reasons = []
            action = Action(actor, label)
            for s in candidates:
                if action not in model.actions(s):
                    reasons.append(_why_not(model, s, actor, label))
                    continue
                i = thread_index(s, actor)
                lock = model.step_lock(s, i)
                t = model.step(s, action)
                if s.words[lock] != w0 or t.words[lock] != w1:
                    reasons.append(f"the word of lock {LOCK_NAMES[lock]} cannot change that way: here "
                                   f"{label} takes it from {s.words[lock]:#010x} to {t.words[lock]:#010x}")
                    continue
                if model.mcs_fields(t, i) != mcs:
                    reasons.append(f"the MCS fields cannot be that way: here {label} leaves {actor} "
                                   f"{_mcs_text(model.mcs_fields(t, i))}, the log says {_mcs_text(mcs)}")
                    continue
                v = first_violation(step_checks, (s, action, t)) or first_violation(state_checks, (t,))
                if v:
                    reasons.append(f"the model allows the step, and it breaks {v.invariant}: {v.message}")
                    continue
                survivors.add(t)
            if survivors:
                candidates = survivors
            else:
                fail = reasons[0]
        if fail:
            result.line, result.text, result.verdict, result.why = lineno, text, STEP_VERDICT, fail
            break
        expected += 1
        result.steps += 1
        if label == "critical_section":
            result.acquisitions += 1
        if progress and expected % 4096 == 0 and time.perf_counter() >= next_report:
            progress(expected)
            next_report = time.perf_counter() + progress_every
    if result.ok:
        steps.unfinished(result, _unfinished(model, candidates, steps.end, expected))
    result.states = len(candidates)
    result.seconds = time.perf_counter() - start
    return result


def _unfinished(model, candidates, end, steps) -> Optional[str]:
    """Why a log whose every step was legal does not show a finished run, or None."""
    if end is None:
        return (f"the log stops after {steps} step{'s' if steps != 1 else ''} without its end marker: the "
                f"run did not finish, or the log was cut short")
    if end[1] != steps:
        return f"the end marker counts {end[1]} steps, the log has {steps}"
    if any(model.finished(s) for s in candidates):
        return None
    s = next(iter(candidates))
    stuck = [a for a in model.actors(s) if not model.done(s, a)]
    return f"the log ends with {', '.join(stuck)} not finished: the header promised work that never ran"


def check_file(path: str | Path, progress=None) -> CheckResult:
    """Check the log at ``path`` (``-``: standard input).  Only reading it can be the user's problem:
    any other error while replaying is a bug and propagates."""
    where = "standard input" if str(path) == STDIN else str(path)
    with open_input(path, LOG_CAP, "log") as f:
        return check_lines(text_lines(f, where), where, progress)


# --- writing: the model's own log, the reference the C port's logs are compared with -------------------

def header_line(variant: str, cpus: int, acquisitions: int, pending_bits: int, **extra) -> str:
    items = [f"variant={variant}", f"cpus={cpus}", f"acquisitions={acquisitions}", f"pending_bits={pending_bits}"]
    items += [f"{k}={v}" for k, v in extra.items()]
    return f"{MAGIC} {VERSION} qspinlock " + " ".join(items)


def end_line(steps: int) -> str:
    return f"{END} steps={steps}"


def log_lines(model, trace) -> list[str]:
    """A trace of the qspinlock model as observation-log lines (without the header and end marker)."""
    out = []
    for k, (a, s, t) in enumerate(zip(trace.actions, trace.states, trace.states[1:])):
        i = thread_index(s, a.actor)
        lock = model.step_lock(s, i)
        count, node = model.mcs_fields(t, i)
        if node is None:
            mcs = f"{count} - - -"
        else:
            idx, nxt, locked = node
            mcs = f"{count} {idx} {'-' if nxt == NULL else '{}/{}'.format(*divmod(nxt, MAX_NODES))} {locked}"
        out.append(f"{k} {a.actor[1:]} {a.label} {s.words[lock]:#010x} {t.words[lock]:#010x} {mcs}")
    return out
