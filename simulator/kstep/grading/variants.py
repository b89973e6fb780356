"""Per-student variants: the same (student, exercise, course secret) always gives the same variant.

An exercise's ``[variants]`` table lists its parameters and their values; the variant space is
their product, in the order written, so an exercise with parameters of 3, 4 and 10 values has 120
variants.  A student's variant is entry ``HMAC-SHA256(secret, exercise id NUL student id) mod N``:
deterministic at release and at grading, unpredictable without the secret, and (the hash being
uniform) two students share a variant with probability 1/N.  Every exercise has at least
``MIN_VARIANTS`` (simulator/tests/test_exercises.py holds them to it).

The public example (``EXAMPLE``) is entry 0, needs no secret, and is what the committed solutions
solve and what students' public tests may show.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
from typing import Any

from ..errors import UserError

MIN_VARIANTS = 8  # K: two students of one exercise collide with probability at most 1/K
EXAMPLE = "example"
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")  # matched whole (fullmatch): no "alice\n"


def size(variants: dict) -> int:
    n = 1
    for values in variants.values():
        n *= len(values)
    return n


def entry(variants: dict, index: int) -> dict[str, Any]:
    """The index-th combination of the parameters (the last parameter varies fastest)."""
    out = {}
    for name, values in reversed(list(variants.items())):
        index, k = divmod(index, len(values))
        out[name] = values[k]
    return dict(reversed(list(out.items())))


def index(exercise_id: str, student: str, secret: str, n: int) -> int:
    if student == EXAMPLE:
        return 0
    check_student(student)
    if not secret:
        raise UserError(f"student {student!r}: a per-student variant needs the course secret (--config)")
    mac = hmac.new(secret.encode(), f"{exercise_id}\0{student}".encode(), hashlib.sha256).digest()
    return int.from_bytes(mac, "big") % n


def for_student(exercise, student: str, secret: str) -> dict[str, Any]:
    """The variant parameters of ``student`` for this exercise."""
    return entry(exercise.variants, index(exercise.id, student, secret, size(exercise.variants)))


def check_student(student: str) -> None:
    if student != EXAMPLE and not STUDENT_ID.fullmatch(student):
        raise UserError(f"student id {student!r} is not letters, digits and . _ @ + - (at most 100)")


def all_variants(variants: dict):
    names = list(variants)
    for combo in itertools.product(*variants.values()):
        yield dict(zip(names, combo))
