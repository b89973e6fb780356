"""The mechanisms kstep models, by the name the CLI uses."""

from ..errors import UserError
from .damon import DamonModel
from .fork_batch import ForkBatchModel
from .qspinlock import QspinlockModel
from .rcu import RcuModel
from .vma_locks import VmaLocksModel

MODELS = {m.name: m for m in (VmaLocksModel, RcuModel, QspinlockModel, ForkBatchModel, DamonModel)}


def model_class(name: str):
    if name not in MODELS:
        raise UserError(f"unknown mechanism {name!r} (choose from: {', '.join(MODELS)})")
    return MODELS[name]


def make_model(name: str, variant: str | None = None):
    cls = model_class(name)
    if variant is not None and variant not in cls.variants:
        raise UserError(f"unknown variant {variant!r} for {name} (choose from: {', '.join(cls.variants)})")
    return cls(variant)
