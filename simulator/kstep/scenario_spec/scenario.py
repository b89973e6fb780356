"""Scenarios: TOML files validated against a small declarative schema with legal ranges.

Every model declares its scenario schema as ``Table`` of fields; the same schema validates files,
renders as documentation (``kstep list MECH --schema``) and drives the fuzz tests.  Every problem
is reported as one line naming the file and the key path (``threads[1].faults[0]: 99 is out of
range 0..63``).
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional

from ..errors import Invalid, UserError, number_text, shorten
from ..files import SCENARIO_CAP, STDIN, read_text
from ..scenarios import LECTURE
from . import expect, questions


class Int(NamedTuple):
    lo: int
    hi: int
    doc: str = ""
    words: tuple = ()  # words accepted besides the integers, as they are ("forever")

    def check(self, v: Any, path: str) -> int | str:
        if isinstance(v, str) and v in self.words:
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            also = "".join(f" or {w!r}" for w in self.words)
            raise bad(path, f"expected an integer{also}, got {_kind(v)}")
        if not self.lo <= v <= self.hi:
            raise bad(path, f"{number_text(v)} is out of range {self.lo}..{self.hi}")
        return v

    def text(self) -> str:
        return f"integer {self.lo}..{self.hi}" + "".join(f" or {w!r}" for w in self.words)


class Bool(NamedTuple):
    doc: str = ""

    def check(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            raise bad(path, f"expected true or false, got {_kind(v)}")
        return v

    def text(self) -> str:
        return "true or false"


class Str(NamedTuple):
    choices: tuple = ()
    doc: str = ""
    max_len: int = 2000

    def check(self, v: Any, path: str) -> str:
        if not isinstance(v, str):
            raise bad(path, f"expected a string, got {_kind(v)}")
        if self.choices and v not in self.choices:
            raise bad(path, f"{v!r} is not one of {', '.join(self.choices)}")
        if len(v) > self.max_len:
            raise bad(path, f"longer than {self.max_len} characters")
        return v

    def text(self) -> str:
        return "one of " + ", ".join(self.choices) if self.choices else "string"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class Name(NamedTuple):
    """An actor's name: schedules name actors (``-P "T1*3 W"``), so it must be a schedulable word."""

    doc: str = ""
    max_len: int = 12

    def check(self, v: Any, path: str) -> str:
        if not isinstance(v, str):
            raise bad(path, f"expected a name, got {_kind(v)}")
        if len(v) > self.max_len or not _NAME.fullmatch(v):
            raise bad(path, f"{v!r} is not a name (a letter or _, then letters, digits, _ . -; "
                            f"at most {self.max_len} characters)")
        return v

    def text(self) -> str:
        return f"name (letters, digits, _ . -; at most {self.max_len})"


def unique_names(names: list, reserved: tuple, path: str) -> None:
    """Actors are told apart by name: no two alike, none taken by the mechanism's own actors."""
    seen = set()
    for n in names:
        if n in reserved:
            raise bad(path, f"{n!r} is the name of the mechanism's own actor")
        if n in seen:
            raise bad(path, f"two threads are named {n!r}")
        seen.add(n)


class List(NamedTuple):
    item: Any
    min_len: int
    max_len: int
    doc: str = ""

    def check(self, v: Any, path: str) -> tuple:
        if not isinstance(v, list):
            raise bad(path, f"expected a list, got {_kind(v)}")
        if not self.min_len <= len(v) <= self.max_len:
            raise bad(path, f"has {len(v)} entries; allowed {self.min_len}..{self.max_len}")
        return tuple(self.item.check(x, f"{path}[{i}]") for i, x in enumerate(v))

    def text(self) -> str:
        return f"list of {self.min_len}..{self.max_len} × ({self.item.text()})"


class Key(NamedTuple):
    field: Any
    default: Any = None  # None: required

    @property
    def required(self) -> bool:
        return self.default is None


class Table(NamedTuple):
    """A TOML table; ``rules(value, path)`` adds checks across keys (raise ``Invalid``)."""

    keys: Mapping[str, Key]
    doc: str = ""
    rules: Optional[Any] = None

    def check(self, v: Any, path: str) -> dict:
        if not isinstance(v, dict):
            raise bad(path, f"expected a table, got {_kind(v)}")
        unknown = sorted(set(v) - set(self.keys))
        if unknown:
            raise bad(_join(path, unknown[0]), f"unknown key (allowed: {', '.join(self.keys)})")
        out = {}
        for name, key in self.keys.items():
            sub = _join(path, name)
            if name in v:
                out[name] = key.field.check(v[name], sub)
            elif key.required:
                raise bad(sub, "missing")
            else:
                out[name] = key.field.check(key.default, sub)
        if self.rules:
            self.rules(out, path)
        return out

    def text(self) -> str:
        return "table"

    def describe(self, indent: str = "") -> list[str]:
        """The schema as documentation lines, one per key, nested tables indented."""
        lines = []
        for name, key in self.keys.items():
            f = key.field
            need = "required" if key.required else f"default {key.default!r}"
            lines.append(f"{indent}{name}: {f.text()} ({need}) — {f.doc}".rstrip(" —"))
            inner = f.item if isinstance(f, List) else f
            if isinstance(inner, Table):
                lines += inner.describe(indent + "    ")
        return lines


def bad(path: str, what: str) -> Invalid:
    return Invalid(f"{path or '(top)'}: {what}")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)


# --- scenario files -------------------------------------------------------------------------------

def _parsed_by(parse):
    """Table rules that keep ``parse(entry)`` as the entry's "parsed" value; its ExpectError is
    the scenario file's mistake."""

    def rules(entry: dict, path: str) -> None:
        try:
            entry["parsed"] = parse(entry)
        except expect.ExpectError as e:
            raise bad(path, str(e)) from None

    return rules


EXPECT = Table({
    "claim": Key(Str(doc="the sentence of the description or look_for this checks", max_len=500)),
    **{form: Key(Str(doc=f"an expression that {says}", max_len=expect.MAX_EXPR), "")
       for form, says in (("always", "holds in every state of the run"), ("never", "holds in no state"),
                          ("sometime", "holds in some state"), ("at_end", "holds in the final state"))},
    "order": Key(List(Str(max_len=80), 0, 32, "steps 'ACTOR:label' taken in this order"), []),
}, rules=_parsed_by(expect.parse))


QUESTION = Table({
    "id": Key(Str(doc="a short name answers are filed under (lower-case letters, digits, '-')", max_len=40)),
    "at": Key(Str(doc="the state asked about: start, end, or before|after [the first|...|last|Nth] "
                      "[ACTOR:]label", max_len=120)),
    "kind": Key(Str(questions.KINDS, doc="value: a number or word; choose: one of choices; "
                                         "thread: which threads")),
    "ask": Key(Str(doc="the question as the student reads it", max_len=500)),
    "field": Key(Str(doc="the expression whose value is the answer (kstep.scenario_spec.expect's language; "
                         "kind thread: evaluated on each thread)", max_len=expect.MAX_EXPR)),
    "choices": Key(List(Str(max_len=120), 0, 12, "choose: the answers offered"), []),
}, rules=_parsed_by(questions.parse))


def _common_rules(table: dict, path: str) -> None:
    try:
        questions.check_ids(table["questions"], "questions")
    except expect.ExpectError as e:
        raise Invalid(str(e)) from None
    if not -1 <= table["cycle_start"] < table["steps"]:
        raise bad(_join(path, "cycle_start"), f"a lasso's cycle starts before the run's last step "
                                              f"(steps = {table['steps']})")


STORE_BUFFER = 2  # store buffer entries per CPU under tso when a scenario names none (x86 has tens; 2 keeps two
# stores in flight, which every reordering of one store past a later load or store needs)
COMMON = {
    "description": Key(Str(doc="what happens in this scenario")),
    "look_for": Key(Str(doc="what a student should watch for")),
    "schedule": Key(Str(doc="a scripted schedule (actor names, ACTOR:label for one step, ACTOR*N) for the "
                            "worked interleaving; empty: none"), ""),
    "variant": Key(Str(doc="the variant the scenario is written for (--variant overrides it); "
                           "empty: the mechanism's default"), ""),
    "expect": Key(List(EXPECT, 0, 32, "claims of the text, checked against the scenario's own run "
                                      "(kstep.scenario_spec.expect)"), []),
    "explorable": Key(Bool(doc="false: written for its scripted run, with a state space far beyond an "
                               "exhaustive search (explore stops at its bound; what explores every "
                               "bundled scenario to the end leaves it out)"), True),
    "questions": Key(List(QUESTION, 0, 32, "predict-then-reveal questions, answered from the run "
                                           "(kstep.scenario_spec.questions)"), []),
    "steps": Key(Int(0, 100_000, "the length of the scenario's own run, for one whose runs never end "
                                 "(repeat = \"forever\"): explore --liveness judges it, the verdict table "
                                 "records its liveness; 0: the run goes until it ends"), 0),
    "store_buffer": Key(Int(1, 8, "explore --memory-model tso: the most stores one CPU's store buffer holds "
                                  "at once (a bound: runs with more waiting are left out; every verdict says it)"),
                        STORE_BUFFER),
    "cycle_start": Key(Int(-1, 100_000, "a lasso: the own run's steps after this many repeat forever (the "
                                        "run comes back to the state after them; judged like explore "
                                        "--liveness's lassos); -1: none"), -1),
}


SCENARIO_RUN = 100_000  # a run of a scenario that declares no steps stops here (Scenario.max_steps)


@dataclass
class Scenario:
    mechanism: str
    name: str
    description: str
    look_for: str
    schedule: str
    variant: str  # "" for the mechanism's default
    config: dict  # the validated model-specific part
    expect: tuple = ()  # expect.Expect: the claims of the text, checked against the scripted run
    explorable: bool = True  # False: a scripted demonstration, too large to explore to the end
    questions: tuple = ()  # questions.Question: asked about a run, answered from it
    steps: int = 0  # the own run's length when runs never end (repeat = "forever"); 0: until it ends
    cycle_start: int = -1  # the own run is a lasso whose steps after this many repeat forever; -1: none
    store_buffer: int = STORE_BUFFER  # entries per CPU store buffer under --memory-model tso

    @property
    def forever(self) -> bool:
        """Its runs never end: the own run is bounded by ``steps`` and liveness is what it is about."""
        return self.steps > 0

    @property
    def max_steps(self) -> int:
        """Where any run of it stops at the latest: its declared steps, else ``SCENARIO_RUN``."""
        return self.steps or SCENARIO_RUN


def bundled(mechanism: str) -> list[str]:
    """Names of the scenarios shipped for a mechanism."""
    folder = resources.files("kstep.scenarios").joinpath(mechanism)
    if not folder.is_dir():
        return []
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def lecture_order(mechanism: str) -> list[str]:
    """The bundled scenarios in the order a lecture meets them (``kstep.scenarios.LECTURE``); any
    scenario the list does not name yet follows, by name."""
    names = bundled(mechanism)
    ordered = [n for n in LECTURE.get(mechanism, ()) if n in names]
    return ordered + [n for n in names if n not in ordered]


def load(mechanism: str, schema: Table, name_or_path: str, overrides: Optional[list[str]] = None) -> Scenario:
    """A bundled scenario by name, or a TOML file by path (``-``: standard input), with
    ``KEY.PATH=VALUE`` overrides."""
    if name_or_path == STDIN or name_or_path.endswith(".toml") or "/" in name_or_path:
        where = "standard input" if name_or_path == STDIN else name_or_path
        name = "stdin" if name_or_path == STDIN else printable(Path(name_or_path).stem)
        text = read_text(name_or_path, SCENARIO_CAP, "scenario file")
    else:
        names = bundled(mechanism)
        if name_or_path not in names:
            raise UserError(f"unknown scenario {name_or_path!r} for {mechanism} (choose from: {', '.join(names)})")
        where, name = f"{name_or_path}.toml", name_or_path
        text = resources.files("kstep.scenarios").joinpath(mechanism, where).read_text(encoding="utf-8")
    return parse(mechanism, schema, name, text, where, overrides or [])


def printable(name: str) -> str:
    """A file name as text that can be written anywhere: bytes that were not UTF-8 become ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def full_schema(schema: Table) -> Table:
    """A mechanism's scenario schema with the keys (and the rules across keys) every scenario has."""
    def rules(table: dict, path: str) -> None:
        if schema.rules:
            schema.rules(table, path)
        _common_rules(table, path)
    return Table({**COMMON, **schema.keys}, schema.doc, rules)


def parse(mechanism: str, schema: Table, name: str, text: str, where: str, overrides: list[str]) -> Scenario:
    data = read_toml(text, where)
    for item in overrides:
        _override(data, item)
    try:
        checked = full_schema(schema).check(data, "")
    except Invalid as e:
        raise UserError(f"{where}: {e}") from None
    common = {k: checked.pop(k) for k in COMMON}
    return Scenario(mechanism, name, common["description"], common["look_for"], common["schedule"],
                    common["variant"], to_config(checked), tuple(e["parsed"] for e in common["expect"]),
                    common["explorable"], tuple(q["parsed"] for q in common["questions"]), common["steps"],
                    common["cycle_start"], common["store_buffer"])


def read_toml(text: str, where: str, syntax: str = "") -> dict:
    """TOML text as data; ``syntax`` replaces the parser's own words for a syntax error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where}: {syntax or f'not valid TOML: {e}'}") from None
    except ValueError:  # tomllib's int() of a decimal longer than Python converts (4300 digits)
        raise UserError(f"{where}: an integer too long to read (more than {sys.get_int_max_str_digits()} "
                        f"digits)") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise UserError(f"{where}: arrays or tables nested too deeply to read") from None


def to_config(value: Any) -> Any:
    """Validated data as plain JSON-able config (tuples become lists), as traces record it."""
    if isinstance(value, dict):
        return {k: to_config(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_config(v) for v in value]
    return value


def _override(data: dict, item: str) -> None:
    """Apply ``threads.0.count=4`` (one TOML value after '=') to the raw scenario data."""
    key, sep, raw = item.partition("=")
    where = f"--set {shorten(item, 80)!r}"
    if not sep or not key:
        raise UserError(f"{where}: expected KEY=VALUE")
    parsed = read_toml(f"v = {raw}", where, f"{shorten(raw, 80)!r} is not a TOML value (strings need quotes)")
    if list(parsed) != ["v"]:  # 'k=1\nx = 5' is two values, not the 1 it starts with
        raise UserError(f"{where}: {shorten(raw, 80)!r} is not one TOML value")
    value = parsed["v"]
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            index = int(part) if _INDEX.fullmatch(part) else len(node)
            if index >= len(node):
                raise UserError(f"{where}: no entry {shorten(part, 40)} in {'.'.join(parts[:i]) or '(top)'}")
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            elif part not in node:
                raise UserError(f"{where}: no key {shorten('.'.join(parts[:i + 1]), 80)}")
            else:
                node = node[part]
        else:
            raise UserError(f"{where}: {'.'.join(parts[:i]) or '(top)'} is not a table or list")


_INDEX = re.compile(r"0|[1-9][0-9]{0,5}")  # a list index in --set: ASCII decimal digits, lists are short
