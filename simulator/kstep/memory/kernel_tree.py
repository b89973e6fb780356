"""Where the memory models find the kernel's own files: the linux-source-6.12 tree that
``make linux-source`` unpacks into the user cache (:func:`kstep.source.index.linux_tree`).

The LKMM's specification (``tools/memory-model/linux-kernel.bell``, ``linux-kernel.cat``, ``lock.cat``)
and the kernel's litmus tests with their expected ``Result:`` lines are read there at run time;
nothing of them is copied into the repository.  The browser has no user cache: the site build copies the
LKMM's files from the tree into the zip Pyodide unpacks (views/live.py), at their paths in the tree under
:data:`SHIPPED` beside this module, with :data:`ORIGIN` saying which tree they came from.  Either way
:func:`kernel_root` is the one lookup, and the models read ``root / "tools/memory-model"`` the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kstep.errors import UserError

# The two folders of litmus tests with a Result: line in their header.
LITMUS_DIRS = ("tools/memory-model/litmus-tests", "Documentation/litmus-tests")
MEMORY_MODEL = "tools/memory-model"
# The files of MEMORY_MODEL the LKMM reads (lkmm.statements: the bell, the cat and what the cat includes of
# the kernel's own; linux-kernel.def maps the macros for herd's C front end, which kstep's litmus.py does
# itself, so it is not read).
LKMM_FILES = ("linux-kernel.bell", "linux-kernel.cat", "lock.cat")
# A tree of those files alone, where the zip of the browser's pages puts them; never in the repository.
SHIPPED = Path(__file__).with_name("kernel-tree")
ORIGIN = "ORIGIN.json"  # in SHIPPED: the package, version and kernel release of the tree, each file's path and sha256


def kernel_root() -> Path:
    """The kernel tree: the LKMM's files shipped beside this module (the browser), else the unpacked tree
    in the user cache, else one line saying how to get it."""
    if (SHIPPED / ORIGIN).is_file():
        return SHIPPED
    try:
        from kstep.source import index as source_index  # the user cache, which the browser has not
    except ImportError:  # the browser, and the page's zip has no copy: its site was built without the tree
        raise UserError("this page's kstep.zip has no copy of the LKMM's files: build the site again after "
                        "make linux-source") from None

    tree = source_index.linux_tree()
    if tree is None:
        raise UserError("the LKMM reads the kernel's tools/memory-model/, and there is no linux-source-6.12 "
                        "tree in the user cache: run make linux-source")
    return tree


def kernel_litmus_tests(root: Path) -> list[Path]:
    """Every litmus test of the two folders, sorted."""
    return sorted(p for part in LITMUS_DIRS for p in (root / part).rglob("*.litmus"))


def lkmm_copy(root: Path) -> dict[str, bytes]:
    """What the browser gets of the tree at ``root``: each of LKMM_FILES at its path in the tree, and ORIGIN
    (paths relative to SHIPPED).  ORIGIN names the tree by its package version (its unpacking marker) and
    kernel release, not by where it lies on this machine, so that the same tree gives the same zip."""
    from kstep.source import index as source_index

    files = {f"{MEMORY_MODEL}/{name}": (root / MEMORY_MODEL / name).read_bytes() for name in LKMM_FILES}
    marker = root / source_index.COMPLETE
    origin = {
        "tree": marker.read_text().strip() if marker.is_file() else root.name,
        "kernel": source_index.kernel_release(root / "Makefile"),
        "files": {path: {"sha256": hashlib.sha256(data).hexdigest()} for path, data in files.items()},
    }
    return {**files, ORIGIN: (json.dumps(origin, indent=1, sort_keys=True) + "\n").encode()}
