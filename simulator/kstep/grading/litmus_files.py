"""The files of the litmus exercises (mm-find-barrier, mm-predict): the command that writes a student's
litmus test from their variant.toml, and the public check of their answer's form."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..files import SMALL_CAP, read_text
from .harness import Fail


def write_test(argv: list[str], name: str, make: Callable[[dict], str]) -> int:
    """``python -m kstep.grading.<module> [FOLDER]``: write FOLDER/``name``, the text ``make`` gives for
    FOLDER/variant.toml.  A bad folder or variant: one line and exit status 2."""
    folder = Path(argv[0] if argv else ".")
    try:
        variant = tomllib.loads(read_text(folder / "variant.toml", SMALL_CAP, "variant"))
        (folder / name).write_text(make(variant))
    except tomllib.TOMLDecodeError as e:
        print(f"kstep: {folder / 'variant.toml'}: not TOML: {e}", file=sys.stderr)
        return 2
    except (UserError, OSError) as e:
        print(f"kstep: {e}", file=sys.stderr)
        return 2
    print(f"wrote {folder / name}")
    return 0


def form_problems(folder, answer: str, check: Callable[[dict, str], object]) -> list[str]:
    """What is wrong with the form of FOLDER/``answer`` (the public test): ``check(variant, text)``
    raises Fail with what it finds."""
    folder = Path(folder)
    try:
        check(tomllib.loads((folder / "variant.toml").read_text()), (folder / answer).read_text())
    except Fail as f:
        return [f.message]
    except (OSError, UnicodeDecodeError) as e:
        return [f"{answer}: cannot read it: {e}"]
    return []
