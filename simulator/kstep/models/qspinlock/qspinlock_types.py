"""include/asm-generic/qspinlock_types.h of Linux 6.12: the generic qspinlock's 32-bit word.

The word is (tail, pending, locked); ``_Q_PENDING_BITS`` is 8 (a whole byte, with NR_CPUS < 16384)
or 1, and each choice lays the tail out differently, so its constants are computed per layout
(``QLayout``) as the header's ``#if`` does.
"""

from __future__ import annotations

from typing import NamedTuple

U32 = (1 << 32) - 1
U16 = 0xffff  # the upper and lower halves of the word


def _q_set_mask(bits: int, offset: int) -> int:
    """``_Q_SET_MASK(type)``: ((1U << _Q_<type>_BITS) - 1) << _Q_<type>_OFFSET."""
    return ((1 << bits) - 1) << offset


_Q_LOCKED_OFFSET = 0
_Q_LOCKED_BITS = 8
_Q_LOCKED_MASK = _q_set_mask(_Q_LOCKED_BITS, _Q_LOCKED_OFFSET)
_Q_PENDING_OFFSET = _Q_LOCKED_OFFSET + _Q_LOCKED_BITS
_Q_TAIL_IDX_BITS = 2
_Q_LOCKED_VAL = 1 << _Q_LOCKED_OFFSET
_Q_PENDING_VAL = 1 << _Q_PENDING_OFFSET


def pending_bits_for(nr_cpus: int) -> int:
    """``#if CONFIG_NR_CPUS < (1U << 14)``: a whole pending byte, else one pending bit."""
    return 8 if nr_cpus < (1 << 14) else 1


class QLayout(NamedTuple):
    """The constants of one ``_Q_PENDING_BITS`` layout, computed as qspinlock_types.h does."""

    PENDING_BITS: int
    PENDING_MASK: int
    TAIL_IDX_OFFSET: int
    TAIL_IDX_MASK: int
    TAIL_CPU_OFFSET: int
    TAIL_CPU_BITS: int
    TAIL_CPU_MASK: int
    TAIL_OFFSET: int
    TAIL_MASK: int
    LOCKED_PENDING_MASK: int  # kernel/locking/qspinlock.c


def q_layout(pending_bits: int) -> QLayout:
    pending_mask = _q_set_mask(pending_bits, _Q_PENDING_OFFSET)
    idx_offset = _Q_PENDING_OFFSET + pending_bits
    idx_mask = _q_set_mask(_Q_TAIL_IDX_BITS, idx_offset)
    cpu_offset = idx_offset + _Q_TAIL_IDX_BITS
    cpu_bits = 32 - cpu_offset
    cpu_mask = _q_set_mask(cpu_bits, cpu_offset)
    return QLayout(pending_bits, pending_mask, idx_offset, idx_mask, cpu_offset, cpu_bits, cpu_mask,
                   idx_offset, idx_mask | cpu_mask, _Q_LOCKED_MASK | pending_mask)


LAYOUTS = {8: q_layout(8), 1: q_layout(1)}


def word_parts(lay: QLayout) -> dict[int, tuple[str, int]]:
    """The members of struct qspinlock's union that a store may write, by mask: (name, offset).
    ``val`` (the whole word) and ``locked`` always; ``pending``, ``locked_pending`` and ``tail`` only
    ``#if _Q_PENDING_BITS == 8``, where they are whole bytes and halfwords of the word."""
    parts = {U32: ("val", 0), _Q_LOCKED_MASK: ("locked", _Q_LOCKED_OFFSET)}
    if lay.PENDING_BITS == 8:
        parts.update({lay.PENDING_MASK: ("pending", _Q_PENDING_OFFSET),
                      lay.LOCKED_PENDING_MASK: ("locked_pending", _Q_LOCKED_OFFSET),
                      lay.TAIL_MASK: ("tail", lay.TAIL_OFFSET)})
    return parts


def member_masks(lay: QLayout) -> dict[str, int]:
    """The bytes of the word each member of ``word_parts`` covers, by name."""
    return {name: mask for mask, (name, _) in word_parts(lay).items()}
