"""The parts of Debian's Linux 6.12 tree that the memory models read, in the user cache.

The LKMM's specification (``tools/memory-model/linux-kernel.{bell,cat,def}``, ``lock.cat``)
and the kernel's litmus tests with their expected ``Result:`` lines are read from the pinned
``linux-source-6.12`` package at run time; nothing of them is copied into the repository.
:func:`memory_model_tree` extracts exactly :data:`MEMORY_PARTS` of it (fetching the .deb
through :class:`kstep.lab.debian.PrivateApt` if it is not cached yet) and returns the
directory; a second call finds it there.
"""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from kstep.lab.debian import PrivateApt, cache_dir
from kstep.lab.source_index import PACKAGE, TARBALL, VERSION, SourceIndexError, _deb_tar

# What the memory models need: the LKMM's files and both directories of litmus tests.
MEMORY_PARTS = ("tools/memory-model/", "Documentation/litmus-tests/")
LKMM_DIR = "tools/memory-model"


def tree_dir(version: str = VERSION) -> Path:
    """Where the memory-model parts of a version's tree are kept (beside the indexed parts)."""
    return cache_dir() / "src" / f"{PACKAGE}_{version}-memory-model"


def _extract(deb: Path, tree: Path) -> None:
    with _deb_tar(deb, "data.tar") as outer:
        for member in outer:
            if member.name.lstrip("./") != TARBALL:
                continue
            with tarfile.open(fileobj=outer.extractfile(member), mode="r|xz") as inner:
                for m in inner:
                    rel = m.name.partition("/")[2]
                    if rel.startswith(MEMORY_PARTS):
                        m.name = rel
                        inner.extract(m, tree, filter="data")
            return
    raise SourceIndexError(f"{deb} does not contain {TARBALL}")


def memory_model_tree(log: Callable[[str], None] = lambda line: None) -> Path:
    """The root of the extracted parts (``<root>/tools/memory-model/linux-kernel.cat``, ...)."""
    tree = tree_dir()
    if (tree / LKMM_DIR / "linux-kernel.cat").is_file():
        return tree
    deb = PrivateApt(log=log).download(PACKAGE, VERSION)
    work = tree.with_name(tree.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    log(f"extracting {' '.join(MEMORY_PARTS)} of {deb.name} into {tree}")
    try:
        _extract(deb, work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(tree, ignore_errors=True)
    work.rename(tree)
    return tree


def kernel_litmus_tests(root: Path) -> list[Path]:
    """Every litmus test of the two directories, sorted."""
    return sorted(
        p for part in MEMORY_PARTS for p in (root / part).rglob("*.litmus")
    )
