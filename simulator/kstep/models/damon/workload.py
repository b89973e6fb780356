"""The monitored process's memory accesses: a pure function ``accessed(page, sample_index, seed)``.

A workload is a list of ``Access`` entries.  Each names a byte range, the sampling intervals in
which it is active (a phase), a block width and a speed (a hotspot that moves through the range,
wrapping at its end) and a rate: the chance, in per-mille, that a page inside the block is
accessed during one sampling interval.  A page is accessed if some active block covers it and a
hash of (seed, page, sample index) falls below the rate, so nothing is stored per page and a run
is the same in Python and in C.  Pages no pattern covers are never accessed (cold).

The hash is SplitMix64's output function over ``seed ^ page * A ^ sample * B``
(kernel-lab/damon carries the same).
"""

from __future__ import annotations

from typing import NamedTuple

from ...engine.prng import MASK64
from .core import PAGE_SIZE

PAGE_MULT = 0x9E3779B97F4A7C15
SAMPLE_MULT = 0xC2B2AE3D27D4EB4F
FOREVER = (1 << 63) - 1


class Access(NamedTuple):
    start: int  # bytes; the range the block lives in
    end: int
    rate_permil: int = 1000  # chance a covered page is accessed in one sampling interval
    width: int = 0  # the hot block's size in bytes; 0: the whole range
    speed: int = 0  # bytes the block moves per sampling interval (wrapping inside the range)
    from_sample: int = 0  # active in sampling intervals [from_sample, until_sample)
    until_sample: int = FOREVER


def mix64(x: int) -> int:
    z = x & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def block(a: Access, sample: int) -> tuple[tuple[int, int], ...]:
    """The byte ranges hot in sampling interval ``sample`` (two when the block wraps), or none."""
    if not a.from_sample <= sample < a.until_sample:
        return ()
    span = a.end - a.start
    width = a.width or span
    if width >= span:
        return ((a.start, a.end),)
    off = (sample - a.from_sample) * a.speed % span
    lo = a.start + off
    hi = lo + width
    if hi <= a.end:
        return ((lo, hi),)
    return ((lo, a.end), (a.start, a.start + hi - a.end))


def accessed(workload: tuple, page: int, sample: int, seed: int) -> bool:
    """Whether the process touches page number ``page`` (address // PAGE_SIZE) in that interval."""
    addr = page * PAGE_SIZE
    for a in workload:
        for lo, hi in block(a, sample):
            if lo <= addr < hi:
                if a.rate_permil >= 1000 or mix64(seed ^ page * PAGE_MULT ^ sample * SAMPLE_MULT) % 1000 < a.rate_permil:
                    return True
                break
    return False


def folio_accessed(workload: tuple, first: int, size: int, sample: int, seed: int) -> bool:
    """Whether the process touches any page of the folio [first, first + size) in that interval.

    One accessed bit stands for the whole folio: a PMD-mapped THP is young when any of its 512
    pages is touched, since the MMU sets the PMD's bit (damon_young_pmd_entry reads pmd_young)."""
    for a in workload:
        for lo, hi in block(a, sample):
            lo, hi = max(lo, first), min(hi, first + size)
            if lo >= hi:
                continue
            if a.rate_permil >= 1000:
                return True
            if any(mix64(seed ^ page * PAGE_MULT ^ sample * SAMPLE_MULT) % 1000 < a.rate_permil
                   for page in range(lo // PAGE_SIZE, (hi + PAGE_SIZE - 1) // PAGE_SIZE)):
                return True
    return False


def hot_ranges(workload: tuple, sample: int) -> tuple[tuple[int, int, int], ...]:
    """(start, end, rate_permil) of every block active in that interval: the ground truth views draw."""
    return tuple((lo, hi, a.rate_permil) for a in workload if a.rate_permil for lo, hi in block(a, sample))
