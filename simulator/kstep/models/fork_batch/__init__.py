"""fork()'s page-table copy of Linux 6.12 with PTE batching over folios, one module per kernel file.

memory.py (mm/memory.c's copy path), internal.py (mm/internal.h's folio_pte_batch), pgtable.py
(the PTE formats and arch helpers: x86-64, arm64 with contpte, generic), fork.py (kernel/fork.c's
dup_mmap) and gup.py (mm/gup.c) are the kernel's code; broken.py the broken twins that
variants.py names; state.py, invariants.py and scenario.py the model's own parts; model.py the
``ForkBatchModel`` that runs them on vma_locks' program.
"""

from .model import ForkBatchModel

__all__ = ["ForkBatchModel"]
