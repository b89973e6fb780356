"""What fork's page-table copy costs, counted by running the fork-batch model.

The December 2023 thread measured ``fork()`` of a process with 1 GiB of populated memory, made of
order-0 folios or of PTE-mapped order-9 folios.  kstep cannot time a kernel, but it can count what
each strategy does to page-table memory and to folio counters, which is the part of the argument
that is about operation counts (16 against 256 loads per folded block, unfolding and refolding,
order-0 work).  Every number here comes from running the model: ``copy_pte_range`` works on one
PTE table at a time and its counts add up table by table, so the model copies one table and two,
and the difference is the cost of one more table; what is left is the fork's own fixed cost
(``dup_mmap``'s one ``flush_tlb_mm``).  1 GiB is then that fixed cost plus 512 tables.  A timed run
(engine/timed.py, the committed cost table) adds up the same way: the fork runs alone, so its
makespan is its steps' own costs plus the operations they counted, priced (the model's ``work``).

Each count is of one fork from the state it copies (``FORKS``): the ``first`` fork of freshly written
memory (writable, dirty, exclusive PTEs, which it write-protects) or a ``later`` one, which copies what
the first left in the parent once its child exited (:func:`after_child_exit`): the real-kernel lab's
forkbench forks 40 times, each child exiting at once, and the parent never writes in between.

``predicted_relative_cost`` is what the real-kernel lab puts beside its measured fork latencies:
the model's operations per copied GiB in each of the lab's memory modes, relative to 4 KiB pages.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Optional

from ..engine import Random, costs, simulate
from ..engine.schedule import COUNTED_RUN
from ..engine.timed import Timed
from ..models import make_model
from ..models.fork_batch import pgtable as pt
from ..models.fork_batch.pgtable import FORMATS, OPS_COST, PTRS_PER_PTE, Ops
from ..models.fork_batch.state import (ARCH_HINT, Copy, FOLIO_BATCH, NO_HINT, NO_LARGE_MAPCOUNT, PER_PTE,
                                       folio_index)

GIB_TABLES = (1 << 30) // (PTRS_PER_PTE * 4096)  # PTE tables that map 1 GiB with 4 KiB pages: 512
STRATEGIES = (PER_PTE, ARCH_HINT, NO_HINT, FOLIO_BATCH)  # the thread's baseline first
ORDERS = (0, 4, 9)
# The lab's memory modes and the folio order each copies at PTE level.  A PMD-mapped THP is copied
# by copy_huge_pmd, one PMD entry: the model has no PMD level, so it predicts nothing for it.
LAB_MODES = {"4K": 0, "64K mTHP": 4, "2M PTE-mapped": 9, "2M THP": None}
# An operation's weight in a relative cost: every counted access to a PTE or to a folio's counters
# is one, every operation the timed scheduler charges (OPS_COST); batches are calls, not memory operations.
UNIT_WEIGHTS = {name: int(name in OPS_COST) for name in Ops._fields}
FIRST, LATER = "first", "later"
FORKS = (FIRST, LATER)  # which fork of forkbench's loop: the state it copies differs
SPLIT_MODE = "2M PTE-mapped"  # the lab mode whose PMDs forkbench splits by mprotect (:func:`split_by_mprotect`)


def populated(fmt: str, order: int, tables: int, large_mapcount: bool = True) -> dict:
    """A private anonymous VMA of ``tables`` PTE tables, every page written before the fork (writable,
    dirty, young, exclusive), in folios of one order, each mapped whole: the thread's benchmark.
    ``large_mapcount``: the folios keep folio->_large_mapcount (6.12), else the thread's rmap."""
    pages = tables * PTRS_PER_PTE
    n = 1 << order
    folios = [{"name": f"F{k}", "order": order, "kind": "anon", "pinned": False} for k in range(pages // n)]
    maps = [{"at": k * n, "folio": f"F{k}", "first": 0, "pages": 0, "write": True, "dirty": True, "young": True,
             "soft_dirty": False, "uffd_wp": False, "exclusive": True,
             **{f"toggle_{b}": [] for b in ("write", "dirty", "young", "soft_dirty", "uffd_wp")}}
            for k in range(pages // n)]
    return {"format": fmt, "mmf_has_pinned": False, "large_mapcount": large_mapcount,
            "vmas": [{"start": 0, "end": pages, "kind": "private-anon", "prot": "rw", "anon_vma": True,
                      "soft_dirty": False, "uffd_wp": False}],
            "folios": folios, "maps": maps, "threads": [{"name": "P", "kind": "fork", "faults": [], "addr": 0}]}


def split_by_mprotect(s):
    """The parent as forkbench's 2m-pte mode leaves it before its first fork, from ``s``, the populated
    state: an mprotect() of each 2 MiB's first page to read-only and back to read-write.  The first splits
    the PMD (6.12.117 __split_huge_pmd_locked maps the 512 PTEs with one set_ptes: on arm64
    contpte_set_ptes folds all 32 blocks, as :func:`populated` starts); each change_pte_range then takes
    the page through ptep_modify_prot_start (arm64's ptep_get_and_clear: contpte_try_unfold, so its block
    is unfolded) and ptep_modify_prot_commit (set_pte_at, whose contpte_try_fold folds only on a block's
    last entry): the first block of every 2 MiB stays unfolded, its PTEs as they were.  Elsewhere (no
    contiguous bit) nothing changes."""
    parent = list(s.parent)
    for a in range(0, len(parent), PTRS_PER_PTE):
        pt.contpte_try_unfold(parent, a, parent[a], [0] * len(Ops._fields))
    return s._replace(parent=tuple(parent))


def after_child_exit(s, fresh):
    """The parent as forkbench's next fork finds it, from ``s``, the state the model's fork ended in, and
    ``fresh``, the scenario's initial state.  The child ``_exit()``s at once and the parent ``waitpid()``s
    for it, so the child's exit_mmap has torn its page table down (zap_pte_range: folio_remove_rmap_ptes
    gives back each page's mapcount and a large folio's _large_mapcount, the TLB gather the references)
    before the next fork; the parent does not touch its memory in between, so its PTEs stay as the fork
    left them: write-protected (a page of a COW mapping is read-only from now on), PageAnonExclusive clear,
    and on arm64 folded or unfolded as the copy left each block.  The mm and its VMAs keep their lock
    sequences and write_protect_seq; the fork thread starts again, with nothing counted yet."""
    if len(s.folios) != len(fresh.folios):
        raise ValueError("the fork copied pages (a pinned folio): no later fork of this benchmark does")
    folios = list(s.folios)
    for pte in s.child:
        if not pt.pte_present(pte) or pt.pte_special(pte):
            continue
        k = folio_index(s, pt.pte_pfn(pte))
        f = folios[k]
        off = pt.pte_pfn(pte) - f.pfn
        kept = f.order > 0 and f.large_mapcount != NO_LARGE_MAPCOUNT
        folios[k] = f._replace(refcount=f.refcount - 1, large_mapcount=f.large_mapcount - kept,
                               mapcount=f.mapcount[:off] + (f.mapcount[off] - 1,) + f.mapcount[off + 1:])
    return s._replace(threads=fresh.threads, rcu=fresh.rcu, counters=fresh.counters, child=fresh.child,
                      folios=tuple(folios), copy=Copy(), ops=Ops(), rss=fresh.rss, ghost_snap=(), ghost_batches=())


def _finished(model, state, scheduler, what: str):
    trace = simulate(model, state, scheduler, max_steps=COUNTED_RUN, check=False)
    if trace.outcome != "finished":
        raise RuntimeError(f"fork-batch {what}: {trace.outcome}")
    return trace


@lru_cache(maxsize=None)
def fork_run(fmt: str, strategy: str, order: int, tables: int, large_mapcount: bool = True,
             timed: bool = False, fork: str = FIRST, split: bool = False) -> tuple[Ops, int, Optional[float]]:
    """The model's counts and steps for one fork of ``tables`` populated PTE tables, and with ``timed``
    the makespan in ns of a timed run under the committed cost table (None without: a timed run takes
    three times as long).  ``fork``: the first fork of the populated memory, or a later one, of the
    state the first left behind (:func:`after_child_exit`).  ``split``: the PMDs split as forkbench's
    2m-pte mode splits them (:func:`split_by_mprotect`).  A run is deterministic, so each is run once
    per process."""
    if fork not in FORKS:
        raise ValueError(f"unknown fork {fork!r}: one of {', '.join(FORKS)}")
    model = make_model("fork-batch", strategy)
    state = _initial(model, fmt, order, tables, large_mapcount, split)
    if fork == LATER:
        state = after_child_exit(_first_end(fmt, strategy, order, tables, large_mapcount, split), state)
    scheduler = Timed(costs.load()) if timed else Random(0)
    trace = _finished(model, state, scheduler, f"{strategy} {fmt} order {order}, {fork} fork")
    return trace.states[-1].ops, len(trace.actions), trace.stats["makespan_ns"] if timed else None


def _initial(model, fmt: str, order: int, tables: int, large_mapcount: bool, split: bool):
    state = model.initial(populated(fmt, order, tables, large_mapcount))
    return split_by_mprotect(state) if split else state


@lru_cache(maxsize=None)
def _first_end(fmt: str, strategy: str, order: int, tables: int, large_mapcount: bool, split: bool):
    """The state the first fork ends in (untimed: the schedule does not change what one fork leaves)."""
    model = make_model("fork-batch", strategy)
    state = _initial(model, fmt, order, tables, large_mapcount, split)
    return _finished(model, state, Random(0), f"{strategy} {fmt} order {order}, first fork").states[-1]


def per_gib(fmt: str, strategy: str, order: int, large_mapcount: bool = True, timed: bool = False,
            fork: str = FIRST, split: bool = False) -> dict:
    """Counts for copying 1 GiB: ``table`` (one more PTE table), ``fixed`` (once per fork) and ``gib``;
    ``steps`` likewise, and with ``timed`` ``makespan_ns`` (one fork runs alone: its time adds up table
    by table as its counts do)."""
    (one, s1, t1), (two, s2, t2) = (fork_run(fmt, strategy, order, n, large_mapcount, timed, fork, split)
                                    for n in (1, 2))
    table = [b - a for a, b in zip(one, two)]
    fixed = [a - t for a, t in zip(one, table)]
    return {"table": dict(zip(Ops._fields, table)), "fixed": dict(zip(Ops._fields, fixed)),
            "gib": {k: f + GIB_TABLES * t for k, f, t in zip(Ops._fields, fixed, table)},
            "steps": _gib(s1, s2), **({"makespan_ns": _gib(t1, t2)} if timed else {})}


def _gib(one, two) -> dict:
    """What one table and two cost, as one more table, the fixed rest and a GiB's worth."""
    table = two - one
    return {"table": round(table, 1), "fixed": round(one - table, 1), "gib": round(one - table + GIB_TABLES * table, 1)}


def weighted(counts: Mapping[str, int], weights: Optional[Mapping[str, float]] = None) -> float:
    w = UNIT_WEIGHTS if weights is None else weights
    return sum(w.get(k, 0) * v for k, v in counts.items())


def strategy_table(fmt: str, orders=ORDERS, strategies=STRATEGIES, large_mapcount: bool = True,
                   timed: bool = False, fork: str = FIRST) -> dict:
    """For each order and strategy: the counts per GiB (and with ``timed`` the makespan) and the weighted
    operations' change relative to per-pte, in the shape of the thread's tables (negative: fewer operations)."""
    out = {}
    for order in orders:
        rows = {s: per_gib(fmt, s, order, large_mapcount, timed, fork) for s in strategies}
        base = weighted(rows[PER_PTE]["gib"])
        out[f"order-{order}"] = {s: {**row, "operations": weighted(row["gib"]),
                                     "change_vs_per_pte": round(weighted(row["gib"]) / base - 1, 4)}
                                 for s, row in rows.items()}
    return out


def predicted_relative_cost(fmt: str = "x86-64", strategy: str = FOLIO_BATCH,
                            weights: Optional[Mapping[str, float]] = None,
                            fork: str = FIRST) -> dict[str, Optional[float]]:
    """The model's predicted cost of copying one GiB in each of the lab's memory modes, relative to 4K
    pages (1.0); None for a mode the model does not copy at PTE level (a PMD-mapped THP).

    ``fmt`` is the guest's PTE format (``x86-64``, ``arm64-4K-contpte`` or ``generic`` for ppc64le),
    ``strategy`` a fork-batch variant, ``weights`` a cost per counted operation (default: one each),
    ``fork`` which fork of the lab's loop (``first`` or ``later``), each copying its own state.  The
    2M PTE-mapped mode starts as forkbench leaves it (:func:`split_by_mprotect`: on arm64 the first
    16-PTE block of every 2 MiB unfolded).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown PTE format {fmt!r}: one of {', '.join(FORMATS)}")
    base = weighted(per_gib(fmt, strategy, 0, fork=fork)["gib"], weights)
    return {mode: None if order is None
            else round(weighted(per_gib(fmt, strategy, order, fork=fork, split=mode == SPLIT_MODE)["gib"], weights)
                       / base, 4)
            for mode, order in LAB_MODES.items()}
