"""DAMON's region merge as mm/damon/core.c of Linux 6.12 computes it.

A region is a list ``[start, end, nr_accesses, last_nr_accesses, age]``: ``[start, end)`` in
bytes, ``nr_accesses`` the samples of this aggregation interval that found an access,
``last_nr_accesses`` the count of the previous one, ``age`` the aggregation intervals its count has
stayed similar.  A target's regions are a list in address order.

The counts and the age are ``unsigned int`` (32 bits, wrapping); sizes are ``unsigned long``.
``abs(a - b)`` of two unsigned ints converts the wrapped 32-bit difference to ``int`` first
(include/linux/math.h), and Python integers never wrap: do that arithmetic yourself.
"""

U32 = (1 << 32) - 1


def c_abs(a: int, b: int) -> int:
    """abs(a - b) for two unsigned ints, as C computes it."""
    # BEGIN SOLUTION
    # CANARY-KSTEP-SOLUTION-damon-merge
    d = (a - b) & U32
    return abs(d - (1 << 32) if d >> 31 else d)
    # END SOLUTION


def damon_merge_two_regions(left: list, right: list) -> list:
    """The region ``left`` becomes when ``right`` (its neighbour) is merged into it: it reaches to
    right's end, and its nr_accesses and age are the averages of both weighted by size."""
    # BEGIN SOLUTION
    sz_l, sz_r = left[1] - left[0], right[1] - right[0]
    nr = (left[2] * sz_l + right[2] * sz_r) // (sz_l + sz_r) & U32
    age = (left[4] * sz_l + right[4] * sz_r) // (sz_l + sz_r) & U32
    return [left[0], right[1], nr, left[3], age]
    # END SOLUTION


def damon_merge_regions_of(regions: list, thres: int, sz_limit: int) -> list:
    """One pass over the regions in order (count_age true): age each region (reset to 0 if its count
    moved by more than ``thres`` since the last aggregation, else one older), then merge it into
    the region before it when the two are adjacent, their counts differ by at most ``thres`` and
    their sizes add up to at most ``sz_limit``.  Returns the new list."""
    # BEGIN SOLUTION
    out = []
    for r in regions:
        r = list(r)
        r[4] = 0 if c_abs(r[2], r[3]) > thres else (r[4] + 1) & U32
        prev = out[-1] if out else None
        if (prev is not None and prev[1] == r[0] and c_abs(prev[2], r[2]) <= thres
                and (prev[1] - prev[0]) + (r[1] - r[0]) <= sz_limit):
            out[-1] = damon_merge_two_regions(prev, r)
        else:
            out.append(r)
    return out
    # END SOLUTION
