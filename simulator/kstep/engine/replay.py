"""Reading a trace file back: a trace file is a claim, not an answer.

Loading one re-runs its scheduler through ``simulate`` and checks every action, tick and state,
the scheduler's stats, the outcome and the violation against the file, naming the first field and
step that differ.  What ``show`` prints is the re-run.  The file is read as a stream of JSON values
(the header first, ``steps`` last), so ``show`` never holds the whole document either.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import Invalid, UserError, number_text, shorten
from ..files import STDIN, TRACE_CAP, open_input, text_chunks
from .liveness import judge
from .memory_model import StoreBuffered
from .model import Model
from .schedule import scheduler_for, simulate
from .trace import FORMAT, VERSION, Trace
from .trace import recorded as record_of

STEP_KEYS = {"actor", "label", "source", "tick", "state"}  # trace.schema.json's steps/items, checked directly
MAX_VALUE = 64 << 20  # the most one header member or one step of a trace file may take, in characters


def schema() -> dict:
    return json.loads(resources.files(__package__).joinpath("trace.schema.json").read_text(encoding="utf-8"))


def validate(data: Any, where: str = "trace") -> None:
    """Check a whole trace document against the schema; one line naming the first problem."""
    _validator(schema(), where)(data)


def jsonschema():
    """The jsonschema package, imported without rfc3987_syntax where nothing has imported it yet.
    jsonschema loads that package only to offer an "iri" format check, which no kstep schema asks
    for (and no format checker is used), while rfc3987_syntax compiles a grammar on import: two
    seconds of CPU time added to every ``kstep show``."""
    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # its import fails: no "iri" check
        try:
            import jsonschema
        finally:
            del sys.modules["rfc3987_syntax"]
    import jsonschema

    return jsonschema


def _validator(sub: dict, where: str, prefix: str = ""):
    schemas = jsonschema()
    check = schemas.Draft202012Validator(sub)

    def validate_one(data: Any) -> None:
        error = schemas.exceptions.best_match(check.iter_errors(data))
        if error is not None:
            path = "/".join([prefix] * bool(prefix) + [str(p) for p in error.absolute_path]) or "(top)"
            raise UserError(f"{where}: not a kstep trace: at {path}: {shorten(error.message)}")

    return validate_one


# --- reading: a stream of JSON values, the header first and ``steps`` last ------------------------------


def _json_constant(name: str):
    raise UserError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_json_constant)
_SPACE = re.compile(r"[ \t\n\r]*")


class _Stream:
    """JSON values decoded one at a time from text chunks, none larger than ``MAX_VALUE``."""

    def __init__(self, chunks: Iterator[str], where: str) -> None:
        self.chunks, self.where = chunks, where
        self.buf, self.pos, self.base = "", 0, 0  # base: characters consumed before buf
        self.eof = False

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = next(self.chunks, None)
        if chunk is None:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            space = _SPACE.match(self.buf, self.pos)
            assert space is not None  # it matches the empty string
            self.pos = space.end()
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos:self.pos + 1]

    def punct(self, allowed: str, what: str) -> str:
        c = self.peek()
        if not c or c not in allowed:
            found = repr(c) if c else "the end of the file"
            raise UserError(f"{self.where}: not a kstep trace: expected {what} at character {self.base + self.pos}, "
                            f"found {found}")
        self.pos += 1
        return c

    def value(self, what: str) -> Any:
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if self._grow(what):
                    continue
                raise UserError(f"{self.where}: not JSON: {e.msg} in {what} (character {self.base + e.pos})") from None
            except RecursionError:
                raise UserError(f"{self.where}: not a kstep trace: {what} is nested too deeply") from None
            except ValueError:  # the decoder's int() of a number longer than Python converts
                raise UserError(f"{self.where}: not a kstep trace: an integer of more than "
                                f"{sys.get_int_max_str_digits()} digits in {what}") from None
            except UserError as e:
                raise UserError(f"{self.where}: not a kstep trace: {e} in {what}") from None
            if end < len(self.buf) or not self._grow(what):  # a number may go on in the next chunk
                self.pos = end
                return value

    def _grow(self, what: str) -> bool:
        if len(self.buf) - self.pos > MAX_VALUE:
            raise UserError(f"{self.where}: not a kstep trace: {what} is larger than {MAX_VALUE >> 20} MiB")
        return self._more()

    def end(self) -> None:
        if self.peek():
            raise UserError(f"{self.where}: not a kstep trace: more after the end of the trace (character "
                            f"{self.base + self.pos})")


def _header(stream: _Stream) -> dict:
    """Every member before ``steps``, which must come last (so that the steps can be streamed)."""
    stream.punct("{", "'{'")
    header: dict = {}
    while True:
        if stream.peek() != '"':
            stream.punct("", "a member name")
        key = stream.value("a member name")
        stream.punct(":", "':'")
        if key == "steps":
            return header
        if key in header:
            raise UserError(f"{stream.where}: not a kstep trace: member {shorten(key)!r} given twice")
        header[key] = stream.value(f"member {shorten(key)!r}")
        if stream.punct(",}", "',' or '}'") == "}":
            missing = "the steps" if header.get("version") == VERSION else "a version 2 header and steps"
            raise UserError(f"{stream.where}: not a kstep trace: no 'steps' member after {missing}")


def _steps(stream: _Stream) -> Iterator[Any]:
    stream.punct("[", "'[' (the list of steps)")
    if stream.peek() == "]":
        stream.pos += 1
    else:
        k = 1
        while True:
            yield stream.value(f"step {k}")
            if stream.punct(",]", "',' or ']' after a step") == "]":
                break
            k += 1
    if stream.punct(",}", "'}' (steps come last)") == ",":
        raise UserError(f"{stream.where}: not a kstep trace: 'steps' must be the last member")
    stream.end()


def load(path: str | Path, model_for: Callable[[str, str], Model]) -> tuple[Trace, Model]:
    """Read a trace file (``-``: standard input) and re-run it; ``model_for(mechanism, variant)``
    builds the model.  Returns the re-run, which the file has been checked to match."""
    where = "standard input" if str(path) == STDIN else str(path)
    with open_input(path, TRACE_CAP, "trace") as f:
        stream = _Stream(text_chunks(f, where), where)
        header = _header(stream)
        trace, model = rerun(header, model_for, where)
        compare_steps(trace, model, _steps(stream), where)
    compare_verdict(trace, header, where)
    compare_lasso(trace, model, header, where)
    return trace, model


def rerun(header: dict, model_for: Callable[[str, str], Model], where: str) -> tuple[Trace, Model]:
    """Check the header and run its scheduler again, through the engine's own ``simulate``."""
    if header.get("format") != FORMAT:
        raise UserError(f"{where}: not a kstep trace (no \"format\": \"{FORMAT}\")")
    if header.get("version") != VERSION:
        version = header.get("version")
        shown = number_text(version) if isinstance(version, int) and not isinstance(version, bool) else repr(version)
        raise UserError(f"{where}: trace format version {shorten(shown)}; this kstep reads version {VERSION} "
                        f"only (write the trace again with this kstep)")
    _validator(_header_schema(), where)(header)
    model = model_for(header["mechanism"], header["variant"])
    try:  # the config must be one the mechanism's scenarios could have produced
        model.scenario_schema.check(header["config"], "config")
    except Invalid as e:
        raise UserError(f"{where}: not a kstep trace: {e}") from None
    memory = header.get("memory_model")
    if memory is not None:
        try:
            model = StoreBuffered(model, memory["store_buffer"])
        except ValueError as e:
            raise UserError(f"{where}: memory model {memory['name']}: {e}") from None
    state = model.initial(header["config"])
    if not same(header["actors"], list(model.actors(state))):
        raise UserError(f"{where}: the actors {header['actors']} are not the config's {list(model.actors(state))}")
    if not same(header["initial"], record_of(model).describe(state)):
        raise UserError(f"{where}: the initial state does not match the scenario's config")
    params = header["scheduler"]
    try:
        scheduler = scheduler_for(params)
    except UserError as e:
        raise UserError(f"{where}: scheduler: {e}") from None
    try:
        trace = simulate(model, state, scheduler, max_steps=params["max_steps"], scenario=header["scenario"],
                         config=header["config"])
    except UserError as e:  # a script that names a finished or blocked actor
        raise UserError(f"{where}: the scheduler cannot run: {e}") from None
    return trace, model


def same(recorded: Any, computed: Any) -> bool:
    """The file's value is the run's, as JSON writes it: ``true`` is not ``1`` nor ``1.0`` (Python's
    ``==`` says they are: bool is an int), and a list stands for a tuple."""
    return json.dumps(recorded, sort_keys=True) == json.dumps(computed, sort_keys=True)


def compare_steps(trace: Trace, model: Model, steps: Iterator[Any], where: str) -> None:
    """Each recorded step against the re-run's, one at a time."""
    sources = model.sources()
    n = 0
    for k, rec in enumerate(steps, start=1):
        if not isinstance(rec, dict) or rec.keys() != STEP_KEYS:
            got = sorted(rec) if isinstance(rec, dict) else type(rec).__name__
            raise UserError(f"{where}: not a kstep trace: step {k} is not an object with exactly "
                            f"{', '.join(sorted(STEP_KEYS))} (it has {shorten(str(got))})")
        if k > len(trace):
            raise UserError(f"{where}: step {k}: the file goes on after the run ends at step {len(trace)} "
                            f"({trace.outcome})")
        a, tick = trace.actions[k - 1], trace.ticks[k - 1]
        for name, recorded, computed in (("actor", rec["actor"], a.actor), ("label", rec["label"], a.label),
                                         ("tick", rec["tick"], tick), ("source", rec["source"], str(sources[a.label]))):
            if not same(recorded, computed):
                raise UserError(f"{where}: step {k}: {name} is {shorten(repr(recorded))}, the scheduler's run has "
                                f"{computed!r}")
        if not same(rec["state"], record_of(model).describe(trace.states[k])):
            raise UserError(f"{where}: step {k} ({a}): records a state the model does not "
                            f"reach")
        n = k
    if n < len(trace):
        raise UserError(f"{where}: steps: the file ends after step {n}, the scheduler's run goes on to step "
                        f"{len(trace)} ({trace.outcome})")


def compare_verdict(trace: Trace, header: dict, where: str) -> None:
    """The scheduler's stats, the outcome and the violation: recomputed, never taken from the file."""
    violation = None if trace.violation is None else trace.violation._asdict()
    for name, computed in (("stats", trace.stats), ("outcome", trace.outcome), ("violation", violation)):
        if not same(header[name], computed):
            raise UserError(f"{where}: {name} is {shorten(json.dumps(header[name]))}, but the run ends with "
                            f"{shorten(json.dumps(computed))} (at step {len(trace)})")


def compare_lasso(trace: Trace, model: Model, header: dict, where: str) -> None:
    """A lasso's claim (its cycle repeats, fairly, and starves who it says): judged again on the re-run."""
    if "cycle_start" not in header:
        return
    try:
        computed = judge(model, trace, header["cycle_start"])
    except UserError as e:
        raise UserError(f"{where}: cycle_start {header['cycle_start']}: {e}") from None
    if not same(header["lasso"], computed):
        raise UserError(f"{where}: lasso is {shorten(json.dumps(header['lasso']))}, but its cycle shows "
                        f"{shorten(json.dumps(computed))}")
    trace.cycle_start, trace.lasso = header["cycle_start"], computed


def _header_schema() -> dict:
    full = schema()
    props = {k: v for k, v in full["properties"].items() if k != "steps"}
    return {**full, "properties": props, "required": [k for k in full["required"] if k != "steps"]}
