"""The fork model: ``ForkBatchModel`` runs vma-locks' program with the copy filled in, one program
per copying strategy, with this package's invariants, variants and scenarios.

fork() copying page tables as Linux 6.12 does it: PTE batching over folios.

Read memory.py beside ``mm/memory.c:copy_pte_range`` and ``copy_present_ptes``, internal.py
beside ``mm/internal.h:folio_pte_batch``, pgtable.py beside the arch helpers it names, fork.py beside
``kernel/fork.c:dup_mmap`` and gup.py beside ``mm/gup.c``.  ``dup_mmap`` holds the parent's
``mmap_lock`` for write and write-locks each VMA before ``copy_page_range`` copies its page tables
into the child.  For each present PTE,
``copy_present_ptes`` takes the page's folio and, if the folio is large and more than one PTE is
left in this table, asks ``folio_pte_batch`` how many of the following PTEs map the following
pages of the same folio with the same bits (ignoring the access and write bits, the dirty bit in a
shared mapping, and the soft-dirty bit unless the VMA tracks it).  The whole batch is then copied
at once: one ``folio_ref_add``, one rmap duplication, one ``wrprotect_ptes`` in the parent (a
private mapping is copy-on-write: parent and child both lose write access) and one ``set_ptes``
in the child.  If any later PTE of the batch was writable (``any_writable``), the template is made
writable first so the write-protect covers them all.  A page that may be pinned for DMA and is
still exclusive to the parent cannot be shared: the rmap duplication fails, the batch is undone
(``-EAGAIN``), a page is preallocated outside the page-table locks, and ``copy_present_page``
gives the child its own copy.

This is the batching that landed in Linux 6.9 (David Hildenbrand's "mm/memory: optimize fork()
with PTE-mapped THP"), after the December 2023 review of Ryan Roberts' "mm: Batch-copy PTE
ranges during fork()" (v4 02/16), whose arch hook ``pte_batch_remaining`` sized a batch by what
arm64's contiguous-PTE blocks allowed.  The variants are the strategies of that argument:

- ``folio-batch``: Linux 6.12.117 (the default);
- ``v6.12.0-batch``: Linux 6.12.0's ``folio_pte_batch``, which loops up to ``max_nr`` and stops
  at the folio's end only after reading the PTE past it (6.12.29 clamps ``max_nr`` first).
  Checked against the 6.12-stable review posting of that fix, "[PATCH 6.12 073/184] mm: fix
  folio_pte_batch() on XEN PV" (12 May 2025; upstream 7b08b74f3d99, Fixes: f8d937761d65): its
  removed lines are the 6.12.y loop before it (``end_ptep = start_ptep + max_nr``, ``while (ptep <
  end_ptep)``, ``pte_same``, then ``if (pte_pfn(pte) >= folio_end_pfn) break``, ``return
  min(ptep - start_ptep, max_nr)``; ``ptep - start_ptep`` is this model's ``nr``), its added lines
  are 6.12.117's function (Debian's linux-source-6.12).  Debian's changelog (in every binary
  package of linux 6.12.117-1~deb12u1, e.g. linux-kbuild's ``changelog.Debian.gz``) lists the fix
  under upstream ChangeLog-6.12.29, merged in Debian's 6.12.29-1, and names no other
  ``folio_pte_batch`` change in 6.12.y.  Not checked: a v6.12.0 tree itself (none was at hand);
- ``no-batch-hint``: 6.12's batching with the generic ``pte_batch_hint`` (always 1), the shape of
  David Hildenbrand's December 2023 prototype: every PTE of a batch is read with ``ptep_get``,
  which on arm64 gathers a folded entry's whole block each time (the thread's "16 x 16 reads");
- ``per-pte``: 6.12's single-PTE path for every PTE, the copy before 6.9;
- ``arch-hint``: v4's ``pte_batch_remaining`` in place of ``folio_pte_batch``: a batch is the
  rest of a folded arm64 block, else one PTE.

The PTE format (x86-64, arm64 with or without contiguous PTEs, or generic) is a scenario parameter;
pgtable.py implements the arch helpers and counts what each does.  On arm64 the
``per-pte`` strategy is the thread's thought experiment (contiguous PTEs and fork batching
landed together in 6.9): every folded block is unfolded in the parent and folded again in the
child.

The concurrency around the copy is vma-locks' (``models/vma_locks/``): this model runs that
model's program, fork's ``sys_fork`` -> ``dup_mmap`` and its page faults, with ``copy_page_range``
filled in, so a scenario can show that a fault in the parent cannot race with the copy.  The one
real race is GUP-fast pinning a page while fork shares it: ``write_protect_seq`` makes GUP-fast
give up, and ``folio_maybe_dma_pinned`` makes fork copy a page pinned before it looked.

Simplifications, each deliberate: one fork at a time, copying into an empty child; addresses are
page numbers and the page tables are two arrays over them (``PTRS_PER_PTE`` entries per table,
so a table boundary is a multiple of 512); no preemption or lock contention breaks
``copy_pte_range``'s loop (``need_resched()`` is false); swap entries are the only non-present
PTEs (no migration or device entries, no ``-EIO`` swap-count continuation, no hwpoison);
``vma_needs_copy`` knows the anon_vma, the child's uffd-wp and nothing else (no
``VM_PFNMAP``/``VM_MIXEDMAP``, ``VM_WIPEONFORK`` or ``VM_DONTCOPY``); the special PTEs are the
shared zero page's; a fault maps a fresh order-0 page at a hole; GUP's slow path is one step
under ``mmap_lock`` that breaks COW with a copy if the page is shared.  Memory is sequentially
consistent, and arm64's ``contpte_convert`` is one step.
"""

from __future__ import annotations

from typing import NamedTuple

from ...engine import Program
from ...scenario_spec.expect import ExpectError
from ..rcu import rcu_expect_functions
from ..vma_locks import model as vl_model
from . import pgtable as pt
from .pgtable import PTE_SOFT_DIRTY
from .invariants import INVARIANTS
from .fork import add_dup_mmap
from .gup import add_gup
from .memory import add_copy, add_faults
from .scenario import SCHEMA, initial_state
from .state import FOLIO_BATCH, STRATEGIES, folio_index
from .variants import VARIANTS


def build(strategy: str) -> Program:
    """The program of one copying strategy, on vma-locks' program."""
    program = Program()
    program.include(vl_model.program, without=("copy_page_range", "dup_mmap", "handle_mm_fault", "do_anonymous_page"))
    add_dup_mmap(program)
    add_faults(program)
    add_copy(program, strategy)
    add_gup(program)
    return program


PROGRAMS = {name: build(name) for name in STRATEGIES}


class ForkBatchModel(vl_model.VmaLocksModel):
    """vma-locks' model with fork's page-table copy filled in, and vma-locks' checks among its own."""

    name = "fork-batch"
    title = "fork(): copying page tables in batches of PTEs"
    default_variant = FOLIO_BATCH
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA

    def __init__(self, variant=None):
        self.program = PROGRAMS[self.variants[variant or self.default_variant].params["program"]]
        super().__init__(variant)

    def unstarted(self, config):
        return initial_state(config)

    def refuses_memory_model(self, name):
        # memory_fields, inherited, name vma-locks' mm and VMAs: store buffers would hold those stores
        # but not the page tables, the folios or write_protect_seq, which is where fork meets GUP-fast
        if name != "sc":
            return ("store buffers would hold only the mm's and VMAs' stores, not the page tables or "
                    "write_protect_seq; fork against GUP-fast is a litmus test "
                    "(kstep litmus simulator/kstep/scenarios/litmus/fork-gup-fast.litmus)")
        return ""

    def expect_functions(self):
        return {**rcu_expect_functions(), **expect_functions()}

    kernel_builds = tuple(pt.ARCH.values())

    def kernel_build(self, state) -> str:
        """The kernel build whose code the code pane shows: the architecture each PTE format's helpers are
        from."""
        return pt.ARCH[state.fmt]

    def work(self, state, action, after):
        """The page tables and folios are no shared lines here: a step's loads, stores and atomics on
        them, and its TLB flushes, are the operations it counted (``Ops``), priced by pgtable.OPS_COST."""
        out = super().work(state, action, after)
        for field, a, b in zip(pt.Ops._fields, state.ops, after.ops):
            if b != a and field in pt.OPS_COST:
                out[pt.OPS_COST[field]] += b - a
        return out


def expect_functions() -> dict:
    """What a scenario's [[expect]] may ask about the copy."""

    def batch(s, k):
        if not -len(s.ghost_batches) <= k < len(s.ghost_batches):
            raise ExpectError(f"batch({k}): only {len(s.ghost_batches)} copies so far")
        return s.ghost_batches[k]

    return {
        "batches": lambda s: len(s.ghost_batches),
        "batch": batch,  # batch(k).nr, .addr, .how
        "pte": lambda s, side, addr: pte_fields(s.parent if side == "parent" else s.child, addr),
        "bits": lambda s, value: pte_fields((value,), 0),  # a PTE value's fields: bits(copy.pte).write
        "folded": lambda s, side, addr: pt.pte_cont((s.parent if side == "parent" else s.child)[addr]),
        "folio": lambda s, addr: folio_fields(s, s.parent[addr]),
    }


class PteFields(NamedTuple):
    pfn: int
    present: bool
    write: bool
    dirty: bool
    young: bool
    soft_dirty: bool
    uffd_wp: bool
    cont: bool


def pte_fields(ptes: tuple, addr: int) -> PteFields:
    if not 0 <= addr < len(ptes):
        raise ExpectError(f"pte: page {addr} is outside the page tables")
    p = ptes[addr]
    return PteFields(pt.pte_pfn(p), pt.pte_present(p), pt.pte_write(p), pt.pte_dirty(p), pt.pte_young(p),
                     bool(p & PTE_SOFT_DIRTY), pt.pte_uffd_wp(p), pt.pte_cont(p))


def folio_fields(s, pte: int):
    k = folio_index(s, pt.pte_pfn(pte))
    if k < 0:
        raise ExpectError("folio: that PTE maps no folio")
    return s.folios[k]
