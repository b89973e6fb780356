"""The Linux 6.12 source of every function a step label mirrors, committed for the player's code pane.

A course page shows the kernel code behind each step without the kernel tree: the excerpts are
taken once from Debian's ``linux-source-6.12`` (the version :mod:`kstep.source.index` names)
and committed as ``linux-6.12-excerpts.json.gz``, with the package, its version and the kernel
release in the file, and each excerpt's first line number in its file.

``python -m kstep.source.excerpts build [--tree DIR]`` reads the tree that ``python -m
kstep.source.index build`` extracts into the user cache (or any unpacked linux-source-6.12
tree given as ``--tree``) and rewrites the committed file.  A function defined more than once
(``#ifdef`` branches, a stub for a disabled option) is excerpted from the definition that the
configuration the models mirror compiles: Debian's x86-64 kernel (``CONFIG_PER_VMA_LOCK=y``, so
``vma_mark_detached`` is the body that asserts the write lock, not the empty stub; 8,192 CPUs, so
qspinlock's pending byte).  A function that configuration does not build is an error, not a guess.

A model whose state or variant names another kernel build (``kernel_build(state)``: the fork model's
PTE formats name an architecture; vma-locks' ``no-per-vma-lock`` names ``CONFIG_PER_VMA_LOCK=n``; a
qspinlock scenario with ``pending_bits = 1`` names 16K CPUs) is shown the code that build compiles:
``builds`` holds, per build (``BUILDS``), the excerpts that differ from those, taken under its Kconfig
symbols (:mod:`kstep.source.conditions`) from the architecture's own headers where it overrides a
generic function (arm64's contpte ``ptep_get``, ``set_ptes``, ``wrprotect_ptes``, ``pte_batch_hint``
and ``ptep_get_lockless``; each one's ``flush_tlb_mm``), from the headers where a disabled option's
stubs are (``CONFIG_PER_VMA_LOCK=n``: ``lock_vma_under_rcu`` returns NULL, ``vma_start_read`` false),
else from the cited file under that configuration.  A function an architecture's build does not
compile is an error; one a configuration's build does not compile is ``None`` (no code to show).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import importlib.resources
import json
import re
import sys
from pathlib import Path
from typing import Iterable, Mapping, Optional

from kstep.engine.display import Display
from kstep.source.conditions import Undecidable, built_lines, parse_config
from kstep.source.index import PACKAGE, VERSION, kernel_release, tree_dir

EXCERPTS_NAME = "linux-6.12-excerpts.json.gz"

_COMMON = ("CONFIG_MMU", "CONFIG_64BIT", "CONFIG_SMP", "CONFIG_PER_VMA_LOCK", "CONFIG_RWSEM_SPIN_ON_OWNER",
           "CONFIG_TRANSPARENT_HUGEPAGE", "CONFIG_USERFAULTFD", "CONFIG_HAVE_GUP_FAST", "CONFIG_ARCH_HAS_PTE_SPECIAL",
           "CONFIG_ARCH_HAS_PTE_DEVMAP", "CONFIG_PARAVIRT", "CONFIG_LOCK_MM_AND_FIND_VMA", "CONFIG_TREE_RCU")
# Per architecture: the Kconfig symbols of Debian's kernel that decide among a function's definitions,
# and the architecture's files that override generic PTE and TLB functions, searched in this order.
ARCHES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "x86-64": (_COMMON + ("CONFIG_X86_64", "CONFIG_NR_CPUS=8192", "CONFIG_PARAVIRT_SPINLOCKS", "CONFIG_PREEMPT_RCU",
                          "CONFIG_PGTABLE_LEVELS=5", "CONFIG_HAVE_ARCH_SOFT_DIRTY", "CONFIG_MEM_SOFT_DIRTY",
                          "CONFIG_HAVE_ARCH_USERFAULTFD_WP"),
               ("arch/x86/include/asm/pgtable.h", "arch/x86/include/asm/tlbflush.h")),
    "arm64": (_COMMON + ("CONFIG_ARM64", "CONFIG_NR_CPUS=512", "CONFIG_PGTABLE_LEVELS=4", "CONFIG_ARM64_4K_PAGES",
                         "CONFIG_ARM64_CONTPTE", "CONFIG_HAVE_ARCH_USERFAULTFD_WP"),
              ("arch/arm64/include/asm/pgtable.h", "arch/arm64/include/asm/tlbflush.h")),
    "arm64-no-contpte": (_COMMON + ("CONFIG_ARM64", "CONFIG_NR_CPUS=512", "CONFIG_PGTABLE_LEVELS=4",
                                    "CONFIG_ARM64_4K_PAGES", "CONFIG_HAVE_ARCH_USERFAULTFD_WP"),
                         ("arch/arm64/include/asm/pgtable.h", "arch/arm64/include/asm/tlbflush.h")),
    "ppc64le": (_COMMON + ("CONFIG_PPC64", "CONFIG_NR_CPUS=2048", "CONFIG_PARAVIRT_SPINLOCKS", "CONFIG_PPC_BOOK3S_64",
                           "CONFIG_PPC_RADIX_MMU", "CONFIG_PGTABLE_LEVELS=4", "CONFIG_HAVE_ARCH_SOFT_DIRTY",
                           "CONFIG_MEM_SOFT_DIRTY"),
                ("arch/powerpc/include/asm/book3s/64/pgtable.h", "arch/powerpc/include/asm/book3s/64/tlbflush.h",
                 "arch/powerpc/mm/pgtable.c")),
}

MIRRORED = "x86-64"  # the build every model follows unless its state names another architecture
# The builds a model may name (``kernel_build(state)``): each architecture's Debian build, and
# configurations on top of one: the Kconfig symbols set (=N) or unset (=n), and the headers that hold
# what the build compiles instead of the cited function (a disabled option's stubs).
BUILDS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    **{arch: (arch, (), ()) for arch in ARCHES},
    # before 6.4, and 6.12 built without it: every fault takes mmap_lock
    "x86-64 CONFIG_PER_VMA_LOCK=n": ("x86-64", ("CONFIG_PER_VMA_LOCK=n",),
                                     ("include/linux/mm.h", "include/linux/mmap_lock.h")),
    # _Q_PENDING_BITS == 1: qspinlock.c's branch for 16K CPUs or more (x86-64's Kconfig stops at 8,192,
    # NR_CPUS_RANGE_END; no 6.12 architecture with queued spinlocks allows more, but the file has it)
    "x86-64 CONFIG_NR_CPUS=16384": ("x86-64", ("CONFIG_NR_CPUS=16384",), ()),
}
_OWN_FILES = {"arch/x86/": "x86-64", "arch/arm64/": "arm64", "arch/powerpc/": "ppc64le"}  # built by that one only


def config_of(build: str) -> dict[str, int]:
    """The symbols an ``#if`` sees when ``build`` (an architecture's Debian kernel, or a configuration on
    top of it) compiles: its Kconfig symbols, ``__KERNEL__`` (the kernel's build defines it, uapi users do
    not), and the one macro the excerpted files test that is derived from them
    (include/asm-generic/qspinlock_types.h: a pending byte below 16K CPUs, one pending bit from there on)."""
    arch, changes, _ = BUILDS[build]
    config = parse_config(",".join(ARCHES[arch][0]))
    for change in changes:
        name, _, value = change.partition("=")
        config.pop(name, None)
        if value != "n":
            config.update(parse_config(change))
    config["__KERNEL__"] = 1
    config["_Q_PENDING_BITS"] = 8 if config["CONFIG_NR_CPUS"] < 1 << 14 else 1
    return config


def _definition_end(lines: list[str], start: int) -> Optional[int]:
    """The line after the definition starting at ``start``: a macro's last continued line, or a
    function's closing brace in column 0 (kernel style); None for a declaration."""
    if lines[start].lstrip().startswith("#define"):
        end = start
        while lines[end].rstrip().endswith("\\") and end + 1 < len(lines):
            end += 1
        return end + 1
    for k in range(start, min(start + 12, len(lines))):  # the parameter list may wrap
        text = lines[k].split("//")[0].rstrip()
        if text.endswith(";") and "{" not in text:
            return None
        if text.endswith("}") and "{" in text:  # a stub, "{ return false; }" or "bool detached) {}" after a wrap
            return k + 1
        if text == "{" or text.endswith("{"):
            for end in range(k + 1, len(lines)):
                if lines[end].startswith("}"):
                    return end + 1
            return None
    return None


def definitions(lines: list[str], function: str) -> list[tuple[int, int]]:
    """(first, end) line indexes of every definition of ``function`` (a C function or a macro)."""
    name = re.compile(rf"(^|[\s*]){re.escape(function)}\s*\(")
    macro = re.compile(rf"^\s*#\s*define\s+{re.escape(function)}\(")
    found = []
    for i, line in enumerate(lines):
        if macro.match(line) or (line[:1] not in ("", " ", "\t", "#", "}", "/") and name.search(line)
                                 and not line.rstrip().endswith(";")):
            end = _definition_end(lines, i)
            if end is None:
                continue
            first = i
            # "static inline bool\nvma_start_read(...)": the return type may sit on the line above.
            while first > 0 and lines[first - 1][:1] not in ("", " ", "\t", "#", "}", "/", "*") \
                    and not lines[first - 1].rstrip().endswith((";", "*/", "}", ")")):
                first -= 1
            found.append((first, end))
    return found


def built_definition(lines: list[str], path: str, function: str, arch: str) -> Optional[tuple[int, int]]:
    """(first, end) of the one definition of ``function`` in ``lines`` (the file ``path``) that the build
    ``arch`` compiles; None if it compiles none there."""
    try:
        built = built_lines(lines, config_of(arch))
    except Undecidable as e:
        raise LookupError(f"{path}: {e}") from None
    found = [d for d in definitions(lines, function) if built[d[0]]]
    if len(found) > 1:
        raise LookupError(f"{path}: {arch} builds {function} {len(found)} times (lines "
                          f"{', '.join(str(d[0] + 1) for d in found)}): a conditional the evaluator takes both ways")
    return found[0] if found else None


def excerpt(tree: Path, path: str, function: str) -> dict:
    """{"line": first line number, "text": the definition} of ``function`` in ``tree/path`` that the
    mirrored configuration builds (an architecture's own file: that architecture's)."""
    lines = (tree / path).read_text(errors="replace").splitlines()
    arch = next((a for prefix, a in _OWN_FILES.items() if path.startswith(prefix)), MIRRORED)
    found = built_definition(lines, path, function, arch)
    if found is None:
        raise LookupError(f"{path}: no definition of {function} that {arch}'s configuration builds")
    first, end = found
    return {"line": first + 1, "text": "\n".join(lines[first:end])}


def arch_excerpt(tree: Path, path: str, function: str, arch: str) -> Optional[dict]:
    """{"where", "line", "text"}: the definition of ``function`` that the build ``arch`` compiles, from its
    architecture's own files when it overrides a generic header's (or another architecture's) function,
    from the build's own headers (a disabled option's stubs), else from ``path``; None if a configuration
    (not an architecture's own build) compiles none."""
    base, _, own = BUILDS[arch]
    files = ARCHES[base][1] if path.startswith(("include/", "arch/")) else ()
    for candidate in files + own + (path,):
        if candidate.startswith("arch/") and candidate != path and not (tree / candidate).is_file():
            raise LookupError(f"{candidate}: not in the tree")
        lines = (tree / candidate).read_text(errors="replace").splitlines()
        found = built_definition(lines, candidate, function, arch)
        if found:
            first, end = found
            return {"where": f"{candidate}:{function}", "line": first + 1, "text": "\n".join(lines[first:end])}
        if candidate == path:
            continue
        # An architecture's file may send the function to another name it builds (arm64 without contpte:
        # "#define ptep_get __ptep_get"): excerpt that one.
        alias = re.compile(rf"^\s*#\s*define\s+{re.escape(function)}\s+(\w+)\s*$")
        built = built_lines(lines, config_of(arch))
        for k, line in enumerate(lines):
            m = alias.match(line)
            if m and built[k] and m.group(1) != function:
                return arch_excerpt(tree, candidate, m.group(1), arch)
    if BUILDS[arch][1]:
        return None
    raise LookupError(f"{path}: no definition of {function} that {arch}'s configuration builds")


def arch_excerpts(tree: Path, functions: Mapping[str, Iterable[tuple[str, str]]], excerpts: dict) -> dict:
    """Per build, the excerpts of its ``functions`` that differ from ``excerpts`` (the mirrored build's)."""
    out: dict[str, dict] = {}
    for arch, wanted_there in functions.items():
        out[arch] = {}
        for path, function in wanted_there:
            ex = arch_excerpt(tree, path, function, arch)
            default = excerpts[f"{path}:{function}"]
            if ex is None or ex["where"] != f"{path}:{function}" or ex["text"] != default["text"]:
                out[arch][f"{path}:{function}"] = ex
    return out


def _functions(mech: str) -> set[tuple[str, str]]:
    """Every (path, function) of kernel code a label or call of a variant of ``mech`` mirrors (a step
    outside the kernel has no path)."""
    from kstep.models import MODELS, make_model

    return {(s.path, s.function) for variant in MODELS[mech].variants
            for s in make_model(mech, variant).locations().values() if s is not None and s.path}


def wanted() -> list[tuple[str, str]]:
    """Every (path, function) of kernel code a label or call of any model variant mirrors."""
    from kstep.models import MODELS

    return sorted(set().union(*map(_functions, MODELS)))


def wanted_by_build() -> dict[str, list[tuple[str, str]]]:
    """Per build a model may name (its ``kernel_builds``), the functions of the models that may name it."""
    from kstep.models import MODELS

    out: dict[str, set] = {}
    for mech, cls in MODELS.items():
        for build in cls.kernel_builds if issubclass(cls, Display) else ():
            out.setdefault(build, set()).update(_functions(mech))
    return {build: sorted(functions) for build, functions in out.items()}


def build(tree: Path, functions: Iterable[tuple[str, str]], optional: Iterable[tuple[str, str]] = ()) -> dict:
    """The excerpts of ``functions`` (each must be in the tree) and of those ``optional`` ones the tree has:
    the litmus primitives' candidate definitions (kstep.memory.primitives), of which an architecture
    defines some and leaves the others to asm-generic."""
    excerpts = {f"{path}:{function}": excerpt(tree, path, function) for path, function in functions}
    for path, function in optional:
        try:
            excerpts[f"{path}:{function}"] = excerpt(tree, path, function)
        except (LookupError, OSError):
            continue
    return {"package": PACKAGE, "version": VERSION, "release": kernel_release(tree / "Makefile"), "excerpts": excerpts}


def build_all(tree: Path) -> dict:
    """What the committed file holds: every model's functions and the litmus primitives' definitions."""
    from kstep.memory.primitives import every_candidate

    data = build(tree, wanted(), every_candidate())
    data["builds"] = arch_excerpts(tree, wanted_by_build(), data["excerpts"])
    return data


def write(data: dict, path: Path) -> None:
    raw = json.dumps(data, indent=0, sort_keys=True).encode() + b"\n"
    path.write_bytes(gzip.compress(raw, mtime=0))


def default_path() -> Path:
    return Path(str(importlib.resources.files(__package__).joinpath(EXCERPTS_NAME)))


@functools.cache
def load() -> dict:
    """The committed excerpts: {"release": ..., "excerpts": {"path:function": {"line", "text"}}}.

    Read once per process and shared, so read it, never change it: a player's code pane asks for it
    once per step label (code.built), and unpacking it each time was half the CPU of laying out a
    bundled scenario's player."""
    return json.loads(gzip.decompress(importlib.resources.files(__package__).joinpath(EXCERPTS_NAME).read_bytes()))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kstep.source.excerpts", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help=f"rewrite the committed {EXCERPTS_NAME}")
    b.add_argument("--tree", type=Path, default=None,
                   help=f"an unpacked {PACKAGE} tree (default: the one make linux-source unpacks, {tree_dir()})")
    args = parser.parse_args(argv)
    tree = args.tree or tree_dir()
    if not (tree / "Makefile").is_file():
        print(f"kstep.source.excerpts: {tree}: no kernel tree there (run python -m kstep.source.index build, "
              f"or give --tree)", file=sys.stderr)
        return 2
    try:
        data = build_all(tree)
    except (LookupError, OSError) as e:
        print(f"kstep.source.excerpts: {e}", file=sys.stderr)
        return 2
    write(data, default_path())
    print(f"kstep.source.excerpts: {len(data['excerpts'])} functions of {data['release']} in {default_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
