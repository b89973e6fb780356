"""Where the memory models find the kernel's own files: the linux-source-6.12 tree that
``make linux-source`` unpacks into the user cache (:func:`kstep.lab.source.index.linux_tree`).

The LKMM's specification (``tools/memory-model/linux-kernel.{bell,cat,def}``, ``lock.cat``) and
the kernel's litmus tests with their expected ``Result:`` lines are read there at run time;
nothing of them is copied into the repository. In the browser there is no tree: the caller passes
the files' folder to :func:`kstep.memory.lkmm.statements` itself.
"""

from __future__ import annotations

from pathlib import Path

from kstep.errors import UserError
from kstep.lab.source import index as source_index

# The two folders of litmus tests with a Result: line in their header.
LITMUS_DIRS = ("tools/memory-model/litmus-tests", "Documentation/litmus-tests")


def kernel_root() -> Path:
    """The unpacked tree, or one line saying how to get it."""
    tree = source_index.linux_tree()
    if tree is None:
        raise UserError("the LKMM reads the kernel's tools/memory-model/, and there is no linux-source-6.12 "
                        "tree in the user cache: run make linux-source")
    return tree


def kernel_litmus_tests(root: Path) -> list[Path]:
    """Every litmus test of the two folders, sorted."""
    return sorted(p for part in LITMUS_DIRS for p in (root / part).rglob("*.litmus"))
