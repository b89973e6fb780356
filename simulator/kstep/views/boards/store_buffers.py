"""The store buffers of a mechanism run under x86-TSO, in the standard library only (boxes.py says why).

One row per CPU, under the mechanism's own board: the entries of its buffer as ``StoreBuffered`` holds
them, oldest on the left (the next ``drain_store_buffer`` writes it to memory and it is gone), each the
location the store writes and its value as the model names them (its ``store_parts``: the 6.12 expression
stored to, ``A->locked``, ``prev->next (cpu0/idx0)``, ``vma->vm_lock_seq (VMA 0)``; else the state's field, a
byte store with its bytes' mask), then the slots still free up to the scenario's ``store_buffer`` depth.
The mechanism's board draws memory, without these stores.
"""

from __future__ import annotations

from .. import style
from ..boxes import BoardSource, Box, columns, in_a_row

ROW = 1.0  # between two CPUs' rows
ENTRY = ("a store waiting in the CPU's store buffer (the leftmost drains next)", style.WAITS)
FREE_SLOT = ("a free slot", style.EMPTY)


def cpu_rows(model, s0) -> list[tuple[float, str]]:
    """(y, title) of each CPU's row: the CPU and the threads whose stores its buffer holds."""
    mem = model.memory(s0)
    out = []
    for b in range(len(s0[-1])):
        who = [t[0] for i, t in enumerate(mem[0]) if model.cpu(mem, i) == b]
        out.append((-b * ROW, f"CPU {b}\n({', '.join(who)})"))
    return out


def buffer_boxes(model, state) -> list[Box]:
    """Every CPU's entries, oldest first, then its free slots."""
    out = []
    for b, buf in enumerate(state[-1]):
        slots = in_a_row(model.depth, y=-b * ROW, h=0.8, max_w=3.2)
        for j, (x, y, w, h) in enumerate(slots):
            if j < len(buf):  # the CPU in words too: the player's text table for a screen reader reads boxes alone
                where, value = model.entry_parts(state, buf[j])
                out.append(Box(x, y, w, h, ENTRY[1], where, f"= {value}\nCPU {b}, {j + 1} of {len(buf)}"
                                                            + (": drains next" if j == 0 else "")))
            else:
                out.append(Box(x, y, w, h, FREE_SLOT[1], "", f"CPU {b}: free slot"))
    return out


def board_source(model) -> BoardSource:
    """The per-frame boxes of ``model``'s (a StoreBuffered's) buffers."""
    return BoardSource("store-buffers", lambda s: columns(buffer_boxes(model, s)), lambda s: s)
