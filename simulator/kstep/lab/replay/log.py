"""Observation-log format 2, as every C port writes it: a versioned header, one line per atomic
step, an end marker with the step count.  What a line holds after the ticket is the mechanism's
own (``qspinlock``, ``vma_locks``); this is the part they share."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from ...errors import UserError

MAGIC = "# kstep-log"
VERSION = 2  # 2: MCS fields on every line, the end marker, node_count_inc, trylock_pending_cmpxchg
END = f"{MAGIC} end"
LOG_FORMATS = ("qspinlock", "vma-locks")  # the mechanisms whose C port writes observation logs
NUMBER = re.compile(r"0|[1-9][0-9]{0,18}")  # int() of thousands of digits would fail; no count gets near 10**19
_END = re.compile(re.escape(END) + r" steps=(0|[1-9][0-9]{0,17})")


STEP_VERDICT = "NOT a step the model allows"
END_VERDICT = "NOT a finished run"


class StepLines:
    """The lines after a format-2 log's header, shared by every mechanism's replay.

    Iterating yields (line number, text, fields) for each step line: one that ends in its newline,
    has ``count`` fields and a ticket of at most 19 digits.  The end marker is kept as ``end``
    (its line number, the step count it gives); nothing may follow it.  Bad lines are bad input.
    """

    def __init__(self, lines: Iterable[str], where: str, count: int, fields: str):
        self.lines, self.where, self.count, self.fields = lines, where, count, fields
        self.lineno = 1  # the header's
        self.end: Optional[tuple[int, int]] = None

    def __iter__(self):
        where = self.where
        for raw in self.lines:
            self.lineno += 1
            lineno = self.lineno
            if not raw.endswith("\n"):
                # the last line of a log the writer did not finish: refuse rather than guess
                raise UserError(f"{where}:{lineno}: truncated line (no newline at the end): {raw[:80]!r}")
            text = raw.rstrip("\r\n")
            if self.end is not None:
                raise UserError(f"{where}:{lineno}: a line after the end marker of line {self.end[0]}: {text[:80]!r}")
            if text.startswith(END):
                m = _END.fullmatch(text)
                if not m:
                    raise UserError(f"{where}:{lineno}: expected '{END} steps=<N>', got {text[:80]!r}")
                self.end = (lineno, int(m[1]))
                continue
            parts = text.split()
            if len(parts) != self.count:
                raise UserError(f"{where}:{lineno}: expected '{self.fields}', "
                                f"got {len(parts)} field{'s' if len(parts) != 1 else ''}: {text[:80]!r}")
            if not NUMBER.fullmatch(parts[0]):
                raise UserError(f"{where}:{lineno}: ticket {parts[0][:20]!r} is not a whole number of at most "
                                f"19 digits")
            yield lineno, text, parts

    def unfinished(self, result, why: Optional[str]) -> None:
        """Mark ``result`` (every step legal) as no finished run, for ``why``, at the end marker."""
        if why:
            result.line, result.verdict, result.why = (self.end[0] if self.end else self.lineno + 1), END_VERDICT, why
            result.text = f"{END} steps={self.end[1]}" if self.end else "(the end of the log)"
