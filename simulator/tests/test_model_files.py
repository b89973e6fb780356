"""A model's modules are shaped like the kernel's files: each one that mirrors kernel code names the
file it reads beside in its docstring, and the rest are one of a model's own parts."""

import ast
import re
from pathlib import Path

import kstep.models

MODELS = Path(kstep.models.__file__).parent
# A kernel source path: mm/memory.c, include/linux/mm.h, arch/powerpc/lib/qspinlock.c, ...
KERNEL_FILE = re.compile(r"\b(?:mm|kernel|include|arch|lib|drivers)/[\w/.{},-]+\.[ch]\b")
# The parts of a model that are no kernel code: the package itself, its state, the checks, the
# variants and the broken twins they name, the scenario schema, the search reductions, the model
# class that ties them, and what a model drives the kernel's code with (a workload, the lock's caller).
OWN_PARTS = {"__init__", "state", "invariants", "variants", "broken", "scenario", "footprints", "symmetry",
             "model", "workload", "caller"}


def modules():
    return sorted(MODELS.rglob("*.py"))


def kernel_files(path: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return KERNEL_FILE.findall(doc)


def test_every_module_that_is_no_model_part_names_its_kernel_file():
    unnamed = [str(p.relative_to(MODELS)) for p in modules() if p.stem not in OWN_PARTS and not kernel_files(p)]
    assert not unnamed, f"these modules name no kernel file in their docstring: {unnamed}"


def test_every_module_says_what_it_holds():
    bare = [str(p.relative_to(MODELS)) for p in modules() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not bare, bare


def test_the_big_models_are_packages():
    """qspinlock, vma_locks and fork_batch are split by kernel file, as damon is."""
    for name in ("qspinlock", "vma_locks", "fork_batch", "damon"):
        assert (MODELS / name / "__init__.py").is_file(), name
    assert not [p.name for p in MODELS.glob("*.py") if p.stem not in ("__init__", "rcu")]
