"""damon_rand(): DAMON's random numbers, drawn from kstep's SplitMix64 in the kernel's order.

``include/linux/damon.h`` defines ``damon_rand(l, r) = l + get_random_u32_below(r - l)``: the span
is passed as a ``u32``, so a region of 4 GiB or more is sampled only within the first
``(r - l) mod 2^32`` bytes (a span of exactly 4 GiB becomes 0, for which
``__get_random_u32_below()`` in ``drivers/char/random.c`` returns a whole random ``u32``).

The kernel's ``get_random_u32()`` reads ChaCha20 output; kstep's reads the upper 32 bits of one
SplitMix64 output, so a seed means the same run in Python and in the kernel lab's C port.  The
generator state is a plain ``Rng`` value (state, draws) that every function takes and returns:
the model stays pure, and ``draws`` counts the ``get_random_u32()`` calls, rejections included.
"""

from __future__ import annotations

from typing import NamedTuple

from ...engine.prng import GOLDEN_GAMMA, MASK64

U32 = 0xFFFF_FFFF


class Rng(NamedTuple):
    state: int  # the SplitMix64 word
    draws: int = 0  # get_random_u32() calls so far


def seeded(seed: int) -> Rng:
    return Rng(seed & MASK64)


def get_random_u32(rng: Rng) -> tuple[int, Rng]:
    """The upper half of the next SplitMix64 output."""
    state = (rng.state + GOLDEN_GAMMA) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return z >> 32, Rng(state, rng.draws + 1)


def get_random_u32_below(rng: Rng, ceil: int) -> tuple[int, Rng]:
    """drivers/char/random.c ``__get_random_u32_below()``: Lemire's multiply-and-reject, exactly."""
    ceil &= U32
    rand, rng = get_random_u32(rng)
    if not ceil:
        return rand, rng
    mult = ceil * rand
    if (mult & U32) < ceil:
        bound = ((1 << 32) - ceil) % ceil  # -ceil % ceil in u32
        while (mult & U32) < bound:
            rand, rng = get_random_u32(rng)
            mult = ceil * rand
    return mult >> 32, rng


def damon_rand(rng: Rng, l: int, r: int) -> tuple[int, Rng]:
    """include/linux/damon.h ``damon_rand()``: a value in [l, r), the span truncated to u32."""
    below, rng = get_random_u32_below(rng, (r - l) & U32)
    return l + below, rng
