"""Binary relations over the n events of one execution, as bitsets.

A relation is a tuple of n ints: bit j of ``rel[i]`` says that event i is related to event j.
A set of events is one int. These few functions are all the models need; they keep a
candidate execution's check to a few microseconds per relation.
"""

from __future__ import annotations


def bits(mask: int):
    """The indices of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def empty(n: int) -> tuple[int, ...]:
    return (0,) * n


def from_pairs(n: int, pairs) -> tuple[int, ...]:
    rows = [0] * n
    for a, b in pairs:
        rows[a] |= 1 << b
    return tuple(rows)


def pairs(rel: tuple[int, ...]) -> list[tuple[int, int]]:
    return [(i, j) for i, row in enumerate(rel) for j in bits(row)]


def identity(n: int, on: int) -> tuple[int, ...]:
    return tuple((1 << i) if on >> i & 1 else 0 for i in range(n))


def cartesian(n: int, left: int, right: int) -> tuple[int, ...]:
    return tuple(right if left >> i & 1 else 0 for i in range(n))


def union(a, b):
    return tuple(x | y for x, y in zip(a, b))


def inter(a, b):
    return tuple(x & y for x, y in zip(a, b))


def diff(a, b):
    return tuple(x & ~y for x, y in zip(a, b))


def seq(a, b):
    out = []
    for row in a:
        acc = 0
        while row:
            low = row & -row
            acc |= b[low.bit_length() - 1]
            row ^= low
        out.append(acc)
    return tuple(out)


def inverse(a):
    rows = [0] * len(a)
    for i, row in enumerate(a):
        for j in bits(row):
            rows[j] |= 1 << i
    return tuple(rows)


def plus(a):
    """Transitive closure (Warshall's algorithm on bit rows)."""
    rows = list(a)
    n = len(rows)
    for k in range(n):
        bit, rk = 1 << k, rows[k]
        if not rk:
            continue
        for i in range(n):
            if rows[i] & bit:
                rows[i] |= rk
    return tuple(rows)


def reflexive(a):
    return tuple(row | (1 << i) for i, row in enumerate(a))


def domain(a) -> int:
    return sum(1 << i for i, row in enumerate(a) if row)


def range_(a) -> int:
    acc = 0
    for row in a:
        acc |= row
    return acc


def is_empty(a) -> bool:
    return not any(a)


def irreflexive(a) -> bool:
    return not any(row >> i & 1 for i, row in enumerate(a))


def acyclic(a) -> bool:
    return irreflexive(plus(a))
