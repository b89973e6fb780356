"""Per-VMA locks of Linux 6.12 (with mmap_lock, its rw_semaphore and RCU), one module per kernel file.

memory.py, mm.py, mmap_lock.py (with rwsem.py's rules), fault.py and rmap.py are the fault path and
the locks it takes; mmap.py, vma.py, mprotect.py and fork.py the writers' operations; broken.py the
broken twins that variants.py names; state.py, invariants.py and scenario.py the model's own parts;
model.py the ``VmaLocksModel`` that joins them.
"""

from .model import VmaLocksModel

__all__ = ["VmaLocksModel"]
