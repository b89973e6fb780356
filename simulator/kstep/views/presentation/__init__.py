"""How each mechanism's states and runs read in the step table, the player and ``-c``.

``present(model)`` is the one way in: the presentation registered under the model's mechanism
name, wrapped for a memory model's store buffers when the model runs under one.
"""

from __future__ import annotations

from ...engine.memory_model import StoreBuffered
from ...engine.model import Model
from .base import Presentation
from .damon import DamonPresentation
from .fork_batch import ForkBatchPresentation
from .qspinlock import QspinlockPresentation
from .rcu import RcuPresentation
from .store_buffers import StoreBuffersPresentation
from .vma_locks import VmaLocksPresentation

BY_MECHANISM: dict[str, type[Presentation]] = {
    "vma-locks": VmaLocksPresentation, "rcu": RcuPresentation, "qspinlock": QspinlockPresentation,
    "fork-batch": ForkBatchPresentation, "damon": DamonPresentation,
}


def present(model: Model) -> Presentation:
    if isinstance(model, StoreBuffered):
        return StoreBuffersPresentation(model, present(model.inner))
    return BY_MECHANISM.get(model.name, Presentation)(model)
