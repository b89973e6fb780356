"""Real DAMON results as an observation trace: damo record files and ``damon_aggregated`` tracepoint text.

An observation trace is what a real kernel reported, never re-simulated: one frame per
aggregation interval, holding the regions as ``kdamond_reset_aggregated()`` reported them
(start, end, nr_accesses, age).  It is checked with the region invariants only -- sorted,
non-empty, non-overlapping regions; an age that grows by at most one per aggregation; and, when
the file gives the monitoring intervals, no more accesses than the aggregation has samples --
and the player draws it with the DAMON view, labelled as observed.

Three inputs are read, told apart by their content:

**The tracepoint text**, exactly as ``/sys/kernel/tracing/trace`` (or ``trace_pipe``) prints it
with only ``events/damon/damon_aggregated`` enabled: ``#`` header lines, then one line per region::

    # tracer: nop
    #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
    #              | |         |   |||||     |         |
           kdamond.0-71      [001] .....    12.345678: damon_aggregated: target_id=0 nr_regions=3 4194304-8388608: 5 2

The part after ``damon_aggregated:`` is 6.12's ``TP_printk("target_id=%lu nr_regions=%u %lu-%lu: %u %u")``
(include/trace/events/damon.h): the target's index in the context, its region count, the region
(decimal addresses), nr_accesses and age.  ``kdamond_reset_aggregated()`` traces every region of
every target in list order, so each run of ``nr_regions`` lines of one target is one aggregation.
A text captured after monitoring started may begin inside an aggregation, and one read while it
runs may end inside one: those partial aggregations are left out, each with a note saying so.
Lines of other events and blank lines are skipped; the ``TASK-PID [CPU] flags`` prefix may have
any of the forms ftrace's options give it (with or without the irq-info flags column, with a
TGID column).  The intervals are not in the text, so the access bound is not checked.

**damo's record files** (``damo record``, damo 3.x): ``json_compressed``, its default (zlib over
the JSON text), and ``json``: a list of records, one per target, each with ``intervals``
(``sample_us``/``aggr_us``; older damo wrote ``sample``/``aggr`` as text such as ``5 ms``) and
``snapshots``, each with an ``end_time`` in ns and ``regions`` of ``start``, ``end`` (decimal text,
``,``-grouped), ``nr_accesses.samples`` and ``age.aggr_intervals``; numbers may be JSON numbers or
text, as damo's raw writer gives them.
"""

from __future__ import annotations

import json
import re
import zlib
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple, Optional

from ...engine import Action, Trace
from ...engine.model import Checks
from ...errors import UserError, shorten
from ...files import RECORD_CAP, open_input, size_text
from ...models.damon.core import Attrs, Region
from ...models.damon.model import INVARIANTS, KDAMOND, RESET, Config, DamonModel, DamonState, Kdamond
from ...models.damon.rand import Rng

TRACEPOINT = re.compile(
    r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:\S{4,5}\s+)?"
    r"(?P<ts>\d+\.\d+):\s+damon_aggregated:\s+(?P<rest>.*)$")
FIELDS = re.compile(r"target_id=(\d+) nr_regions=(\d+) (\d+)-(\d+): (\d+) (\d+)$")
# The region rules an observation can be held to: a real kernel's lists cannot be compared with a
# simulated run's steps, nor with monitored ranges nobody recorded.
CHECKED = ("regions-cover-monitored-ranges", "age-grows-at-most-one", "nr-accesses-within-samples")
UNITS_US: dict[str, int | Fraction] = {"us": 1, "ms": 1000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000,
                                        "ns": Fraction(1, 1000)}
ULONG = 1 << 64  # addresses, counts and times in damo's records are the kernel's unsigned longs


class Snapshot(NamedTuple):
    time_ns: int
    regions: tuple  # core.Region as reported: nr_accesses (also as last_nr_accesses) and age


class Observation(NamedTuple):
    kind: str  # "damon_aggregated tracepoint" or "damo record (json_compressed)" ...
    target: int  # the target shown (the first one in the file)
    targets: int  # how many targets the file holds
    attrs: Optional[Attrs]  # the monitoring intervals, when the file says
    snapshots: tuple
    notes: tuple = ()  # what the reader left out, and why


class TraceLine(NamedTuple):
    n: int  # line number in the file
    ts: int  # ns
    nr: int  # nr_regions as the line gives it
    region: Region


def starts_over(prev: TraceLine, line: TraceLine) -> bool:
    """``line`` cannot follow ``prev`` inside one aggregation: another region count, or an address
    below the end of the region before it (kdamond_reset_aggregated walks a sorted list)."""
    return line.nr != prev.nr or line.region.start < prev.region.end


def whole_aggregation_at(lines: list, j: int) -> bool:
    """Lines ``j`` on hold one whole aggregation first: nr_regions lines of that count, sorted."""
    group = lines[j:j + lines[j].nr]
    return len(group) == lines[j].nr and not any(starts_over(a, b) for a, b in zip(group, group[1:]))


def leading_partial(lines: list) -> int:
    """How many lines a text that begins inside an aggregation holds of it: tracing enabled while
    kdamond_reset_aggregated() was half-way down its list, or a ring buffer that overwrote its
    oldest events.  Such a text starts with the last regions of an aggregation, then the first region
    of the next one (the lowest address, often another nr_regions).  Only a start over that is
    followed by a whole sorted aggregation counts: an unsorted list is left to the invariants."""
    for j in range(1, min(lines[0].nr, len(lines))):
        if starts_over(lines[j - 1], lines[j]):
            return j if whole_aggregation_at(lines, j) else 0
    return 0


def aggregations_of(target: int, lines: list, where: str) -> tuple[list, list]:
    """One target's lines counted off into aggregations of nr_regions lines each; (snapshots, notes
    on the partial aggregations left out at either end)."""
    notes = []
    lead = leading_partial(lines)
    if lead:
        notes.append(f"skipped the first {lead} damon_aggregated lines of target {target}: the end of an "
                     f"aggregation whose start the trace missed (line {lines[lead].n} starts a whole one)")
    snaps: list[Snapshot] = []
    k = lead
    while k < len(lines):
        nr = lines[k].nr
        group = lines[k:k + nr]
        for line in group:
            if line.nr != nr:
                raise UserError(f"{where}:{line.n}: nr_regions={line.nr} in the middle of an aggregation of {nr} "
                                f"regions (target {target})")
        if len(group) < nr:
            if not snaps:
                raise UserError(f"{where}: the trace ends inside an aggregation: target {target} has {len(group)} "
                                f"of its {nr} regions, and no whole aggregation")
            notes.append(f"skipped the last {len(group)} damon_aggregated lines of target {target}: an aggregation "
                         f"the trace ends inside ({len(group)} of its {nr} regions)")
            break
        snaps.append(Snapshot(group[-1].ts, tuple(line.region for line in group)))
        k += nr
    return snaps, notes


def parse_tracepoint_text(text: str, where: str) -> Observation:
    """The ``damon_aggregated`` lines of a tracefs ``trace`` file, grouped into aggregations."""
    by_target: dict[int, list] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = TRACEPOINT.match(line)
        if m is None:
            if "damon_aggregated:" in line:
                raise UserError(f"{where}:{n}: not a damon_aggregated trace line: {line.strip()[:80]}")
            continue
        f = FIELDS.match(m["rest"].strip())
        if f is None:
            raise UserError(f"{where}:{n}: damon_aggregated fields are not 'target_id=T nr_regions=N START-END: "
                            f"NR_ACCESSES AGE': {m['rest'].strip()[:80]}")
        target, nr, start, end, nr_accesses, age = map(int, f.groups())
        if not nr:
            raise UserError(f"{where}:{n}: nr_regions=0 on a line that reports a region")
        ts = round(float(m["ts"]) * 1e9)
        by_target.setdefault(target, []).append(TraceLine(n, ts, nr, Region(start, end, nr_accesses, 0, age,
                                                                            nr_accesses)))
    if not by_target:
        raise UserError(f"{where}: no damon_aggregated lines (enable events/damon/damon_aggregated and read trace)")
    notes: list = []
    done = {}
    for target, lines in sorted(by_target.items()):
        done[target], skipped = aggregations_of(target, lines, where)
        notes += skipped
    first = min(done)
    return Observation("damon_aggregated tracepoint", first, len(done), None, tuple(done[first]), tuple(notes))


def _number(v, what: str, where: str) -> int:
    """A count or an address: a JSON integer, or decimal text that may be ``,``-grouped."""
    if isinstance(v, str) and re.fullmatch(r"\s*[0-9][0-9,]*\s*", v, re.ASCII):
        v = int(v.strip().replace(",", ""))
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < ULONG:
        raise UserError(f"{where}: {what} is not a number from 0 to 2**64-1: {shorten(repr(v), 60)}")
    return v


def _quantity(v, unit: str, what: str, where: str) -> Fraction:
    """A JSON integer in ``unit``, or text such as ``5 ms`` or ``1.5``: ASCII digits, at most one point."""
    if isinstance(v, int) and not isinstance(v, bool):
        n = Fraction(v)
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ns|us|ms|s|m|h)?\s*", v if isinstance(v, str) else "", re.ASCII)
        if m is None:
            raise UserError(f"{where}: {what} is not a time: {shorten(repr(v), 60)}")
        n = Fraction(m[1]) * UNITS_US[m[2] or unit] / UNITS_US[unit]
    if not 0 <= n < ULONG:
        raise UserError(f"{where}: {what} is not a time from 0 to 2**64-1 {unit}: {shorten(repr(v), 60)}")
    return n


def _interval_us(v, where: str) -> int:
    """damo writes an interval as a plain number of microseconds (raw) or as text such as '5 ms'."""
    us = round(_quantity(v, "us", "an interval", where))
    if not us:
        raise UserError(f"{where}: an interval is not a positive time: {shorten(repr(v), 60)}")
    return us


def _time_ns(v, where: str) -> int:
    return round(_quantity(v, "ns", "a snapshot time", where))


def _list_of_tables(v, what: str, where: str) -> list:
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise UserError(f"{where}: not a damo record file: {what} is not a list of tables")
    return v


def parse_damo_records(data, kind: str, where: str) -> Observation:
    """damo's JSON records (already decoded): the first target's snapshots and its intervals."""
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{where}: not a damo record file (a JSON list of records)")
    rec = data[0]
    try:
        iv = rec.get("intervals")
        attrs = None
        if isinstance(iv, dict):
            sample = _interval_us(iv.get("sample_us", iv.get("sample")), where)
            aggr = _interval_us(iv.get("aggr_us", iv.get("aggr")), where)
            attrs = Attrs(sample, aggr, 1 << 32)
        snaps = []
        for s in _list_of_tables(rec["snapshots"], "snapshots", where):
            regions = []
            for r in _list_of_tables(s["regions"], "regions", where):
                nr = r["nr_accesses"]["samples"] if isinstance(r.get("nr_accesses"), dict) else r.get("nr_accesses", 0)
                age = r["age"]["aggr_intervals"] if isinstance(r.get("age"), dict) else r.get("age", 0)
                nr = _number(nr, "nr_accesses", where)
                regions.append(Region(_number(r["start"], "start", where), _number(r["end"], "end", where),
                                      nr, 0, _number(age, "age", where), nr))
            snaps.append(Snapshot(_time_ns(s["end_time"], where), tuple(regions)))
    except (KeyError, TypeError) as e:
        raise UserError(f"{where}: not a damo record file: a record lacks {e}") from None
    if not snaps:
        raise UserError(f"{where}: the damo record holds no snapshots")
    target = rec.get("target_id")
    return Observation(kind, target if isinstance(target, int) else 0, len(data), attrs, tuple(snaps))


def read(path: str | Path) -> Observation:
    """Whichever of the three formats the file holds."""
    with open_input(path, RECORD_CAP, "DAMON recording") as stream:
        raw = stream.read()
    if raw[:1] == b"\x78":  # a zlib stream's first byte (deflate, 32 KiB window): damo's json_compressed
        inflate = zlib.decompressobj()
        try:
            raw = inflate.decompress(raw, RECORD_CAP + 1)
        except zlib.error as e:
            raise UserError(f"{path}: not a damo json_compressed record: {e}") from None
        if len(raw) > RECORD_CAP:
            raise UserError(f"{path}: unpacks to more than {size_text(RECORD_CAP)}, the most kstep reads from one "
                            f"DAMON recording")
        kind = "damo record (json_compressed)"
    else:
        kind = "damo record (json)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: neither a damo record nor tracepoint text") from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as e:
            raise UserError(f"{path}: not JSON: {e}") from None
        return parse_damo_records(data, kind, str(path))
    return parse_tracepoint_text(text, str(path))


def observed_trace(obs: Observation, source: str) -> tuple[Trace, DamonModel]:
    """The frames the player draws: an empty initial state, then one kdamond_reset_aggregated step per
    aggregation; the first invariant broken stops the trace there."""
    model = DamonModel()
    counts = [len(s.regions) for s in obs.snapshots]
    # what the file does not say is what the player's scales need: without intervals, one "sample"
    # per access seen at most; min/max_nr_regions (never recorded) as the fewest and most observed
    top = max((r.nr_accesses for s in obs.snapshots for r in s.regions), default=0)
    attrs = (obs.attrs or Attrs(1, max(top, 1), 1 << 32))._replace(min_nr_regions=min(counts),
                                                                  max_nr_regions=max(counts))
    cfg = Config(attrs, len(obs.snapshots), 0, (), (), (), (), ())
    checks = Checks([i for i in INVARIANTS if i.name in CHECKED and (obs.attrs or i.name != "nr-accesses-within-samples")])
    s0 = DamonState((), Kdamond(RESET, rng=Rng(0)), (), (), frozenset(), (), (), (), cfg)
    trace = Trace(model.name, model.variant.name, source, {}, "observed", None, [s0])
    step = Action(KDAMOND, RESET)
    sample = attrs.sample_interval or 1
    for k, snap in enumerate(obs.snapshots, start=1):
        ranges = tuple((r.start, r.end) for r in snap.regions)
        now_us = snap.time_ns // 1000
        t = s0._replace(regions=snap.regions, ranges=ranges,
                        k=s0.k._replace(aggregations=k, now_us=now_us,
                                        passed_sample_intervals=k * (attrs.aggr_interval // sample)))
        trace.actions.append(step)
        trace.ticks.append(k)
        trace.states.append(t)
        v = checks.after(trace.states[-2], step if k > 1 else None, t, k)
        if v is not None:
            trace.violation, trace.outcome = v, "violation"
            break
    return trace, model
