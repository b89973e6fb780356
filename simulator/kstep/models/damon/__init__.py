"""DAMON (mm/damon/) of Linux 6.12.117: the region operations as plain functions, and the model.

core.py, vaddr.py and damos.py are the kernel's functions over immutable values; model.py runs
them as kdamond does, one phase a step; variants.py lists the 6.12.y fixes the variants leave out.
"""

from .model import DamonModel

__all__ = ["DamonModel"]
