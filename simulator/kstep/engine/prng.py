"""SplitMix64: the one pseudo-random generator of kstep, written so C can match it bit for bit.

Sebastiano Vigna's splitmix64 (public domain).  ``kernel-lab`` carries the same generator in C;
both are checked against the vectors in ``VECTORS`` so a seed means the same run everywhere.
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15

# (seed, first five outputs) — published vectors for splitmix64 with seed 1234567.
VECTORS = (
    (1234567, (6457827717110365317, 3203168211198807973, 9817491932198370423,
               4593380528125082431, 16408922859458223821)),
)


# (seed, n, first eight below(n)): the contract for kstep's own range draws, which the schedulers
# use; a port must reproduce these exactly (rejection above the largest multiple of n, then x % n).
BELOW_VECTORS = (
    (1, 3, (2, 1, 0, 2, 0, 2, 0, 0)),
    (42, 10, (3, 1, 8, 4, 0, 2, 5, 8)),
    (7, 1000003, (291423, 625217, 913369, 465503, 301666, 592581, 639182, 925500)),
)


class SplitMix64:
    """``next()`` returns 64-bit outputs; ``below(n)`` an unbiased integer in ``[0, n)``."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + GOLDEN_GAMMA) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Rejection sampling: draws are retried above the largest multiple of n (no modulo bias)."""
        if n <= 0:
            raise ValueError("below() needs n >= 1")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:  # next(), inlined: the random scheduler draws once per step
            z = self.state = (self.state + GOLDEN_GAMMA) & MASK64
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            x = z ^ (z >> 31)
            if x < limit:
                return x % n
