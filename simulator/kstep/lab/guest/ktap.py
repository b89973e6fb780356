"""Read what a lab guest printed on its serial console: KTAP results, probe data, crashes.

The guest's ``/init`` (``kernel-lab/guest/init``) prints KTAP version 1::

    KTAP version 1
    # kstep-lab nonce=3f9c...
    # uname-r: 6.12.95+deb12-amd64
    # proc-version: Linux version 6.12.95+deb12-amd64 ...
    1..2
    # vma mode=faults ok=123 null=0 ...
    ok 1 vma
    not ok 2 fork
    # kstep-lab end nonce=3f9c...

A ``# PROBE key=value ...`` line belongs to the result that follows it, and so does a
``# PROBE NAME: text`` line, kept verbatim under NAME (DAMON's raw trace lines, a process's maps).  The kernel's own
messages share the console, so any line may sit between these, and a kernel crash is found by
its banner wherever it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The first line of a kernel crash report, as lib/bug.c, arch/*/kernel/traps.c,
# kernel/panic.c and mm/ print them.
_CRASH = re.compile(
    r"(Oops|BUG: |Kernel panic - not syncing|kernel BUG at |general protection fault|"
    r"Unable to handle kernel |Internal error: )"
)
_RESULT = re.compile(r"^(ok|not ok) (\d+) (\S+)(?:\s+#\s*(.*))?$")
_DATA = re.compile(r"^# (\w+) ((?:[\w.]+=\S*\s*)+)$")
_RAW = re.compile(r"^# (\w+) (\w+): (.*)$")
CRASH_CONTEXT = 40  # lines of the crash report kept


@dataclass
class Case:
    number: int
    name: str
    ok: bool
    directive: str = ""
    data: list[dict[str, str]] = field(default_factory=list)
    raw: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Console:
    """Everything the lab reads from one boot's console."""

    version: int | None = None
    nonce: str | None = None
    end_nonce: str | None = None
    uname_r: str | None = None
    proc_version: str | None = None
    nproc: int | None = None
    plan: int | None = None
    cases: list[Case] = field(default_factory=list)
    crash: str | None = None  # the crash report's first CRASH_CONTEXT lines

    @property
    def finished(self) -> bool:
        """The end marker was printed (with the boot's nonce: checked by the caller)."""
        return self.end_nonce is not None

    def case(self, name: str) -> Case | None:
        return next((c for c in self.cases if c.name == name), None)


def _header(line: str, key: str) -> str | None:
    prefix = f"# {key}: "
    return line[len(prefix):].strip() if line.startswith(prefix) else None


def parse(text: str) -> Console:
    """Parse a serial log; never fails (a log can be cut anywhere)."""
    out = Console()
    pending: dict[str, list[dict[str, str]]] = {}
    raw: dict[str, dict[str, list[str]]] = {}
    lines = [line.rstrip("\r") for line in text.split("\n")]
    for k, line in enumerate(lines):
        if out.crash is None and _CRASH.search(line):
            out.crash = "\n".join(lines[k : k + CRASH_CONTEXT]).rstrip()
        if line == "KTAP version 1":
            out.version = 1
        elif line.startswith("# kstep-lab nonce="):
            out.nonce = line.split("=", 1)[1].strip()
        elif line.startswith("# kstep-lab end nonce="):
            out.end_nonce = line.split("=", 1)[1].strip()
        elif (value := _header(line, "uname-r")) is not None:
            out.uname_r = value
        elif (value := _header(line, "proc-version")) is not None:
            out.proc_version = value
        elif (value := _header(line, "nproc")) is not None and value.isdigit():
            out.nproc = int(value)
        elif re.fullmatch(r"1\.\.\d+", line):
            out.plan = int(line[3:])
        elif m := _RESULT.match(line):
            name = m.group(3)
            out.cases.append(
                Case(int(m.group(2)), name, m.group(1) == "ok", m.group(4) or "", pending.pop(name, []),
                     raw.pop(name, {}))
            )
        elif m := _DATA.match(line):
            fields = dict(pair.split("=", 1) for pair in m.group(2).split())
            pending.setdefault(m.group(1), []).append(fields)
        elif m := _RAW.match(line):
            raw.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(m.group(3))
    return out
