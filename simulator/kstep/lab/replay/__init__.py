"""Replaying what the kernel lab observed against the models: the C ports' observation logs (one
checker per mechanism that writes them, chosen from ``CHECKERS``), the DAMON and fork-batch ports'
runs side by side with the simulator's, and real DAMON's recorded regions."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from ...errors import UserError
from ...models import model_class
from . import qspinlock, vma_locks
from .log import LOG_FORMATS

CHECKERS = dict(zip(LOG_FORMATS, (qspinlock, vma_locks)))


def checker(mechanism: str):
    """The module that replays ``mechanism``'s logs; an unknown mechanism gets the usual message."""
    if mechanism not in CHECKERS:
        model_class(mechanism)
        raise UserError(f"no observation-log format for {mechanism} (logs exist for: {', '.join(LOG_FORMATS)})")
    return CHECKERS[mechanism]


def check_lines(mechanism: str, lines: Iterable[str], where: str = "log",
                progress: Optional[Callable[[int], None]] = None, progress_every: float = 1.0):
    """Replay ``lines`` (the header first, the end marker last) against the mechanism's model."""
    return checker(mechanism).check_lines(lines, where, progress, progress_every)


def check_file(mechanism: str, path: str | Path, progress=None):
    """Check the log at ``path`` (``-``: standard input), the mechanism named before the file is opened."""
    return checker(mechanism).check_file(path, progress)
