"""The import graph of ``kstep``: no cycle, and every "never" of the design holds.

Every module's imports are read from its syntax tree, imports inside functions included (a cycle
hidden in a function body is still a cycle: it only works by the order modules happen to load in).
``from package import name`` counts as importing ``package.name`` when that is a module.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kstep"


def read_graph(root: Path) -> dict[str, set[str]]:
    """module -> every name it imports: modules of the package at ``root`` by module (a name
    imported from a module counts as the module), anything else by its top-level package."""
    top = root.name

    def module_name(path: Path) -> str:
        parts = path.relative_to(root.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    files = {module_name(p): p for p in root.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] != top:
                    found.add(target.split(".")[0])
                    continue
                while target not in files:  # `from kstep.engine import Trace`: the package
                    target = target.rpartition(".")[0]
                found.add(target)
                # importing kstep.lab.guest.qemu from outside kstep.lab runs kstep/lab/__init__.py first
                package = target.rpartition(".")[0]
                while package and not within(name, package):
                    found.add(package)
                    package = package.rpartition(".")[0]
        edges[name] = found - {name}
    return edges


@cache
def graph() -> dict[str, set[str]]:
    return read_graph(PACKAGE)


def kstep_edges() -> dict[str, set[str]]:
    return {m: {t for t in targets if t.startswith("kstep")} for m, targets in graph().items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """A shortest cycle through the first module of each strongly connected component of more than
    one module (Tarjan), followed by the rest of the component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [cycle_in(min(c), c, edges) for c in components]


def cycle_in(start: str, component: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component`` (breadth first)."""
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(edges[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [start, *reversed(path[:-1]), start] if v != start else [start, start]
                if w not in parent:
                    parent[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is in a component without a cycle through it")


def component(module: str) -> set[str]:
    """The modules that ``module`` imports, directly or not, and that import it back."""
    edges = kstep_edges()
    forward, backward = reach(module, edges), reach(module, {m: {n for n in edges if m in edges[n]} for m in edges})
    return forward & backward


def reach(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for w in edges.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def on_the_way(module: str, allowed: str) -> bool:
    """``module`` is in package ``allowed`` or one of the packages importing it runs first."""
    return within(module, allowed) or within(allowed, module)


def stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names or name == "__future__"


# The design's "nevers": (the modules the rule is about, what they may never import, why).
NEVERS = [
    ("kstep.engine", ("kstep.models", "kstep.views", "kstep.lab", "kstep.grading", "kstep.scenario_spec",
                      "kstep.scenarios", "kstep.measure", "kstep.memory", "kstep.cli"),
     "the engine knows no mechanism, no scenario file and no consumer"),
    ("kstep.models", ("kstep.views", "kstep.lab", "kstep.grading", "kstep.measure", "kstep.cli"),
     "models draw nothing and read no logs"),
    ("kstep.views", ("kstep.lab", "kstep.grading", "kstep.cli"),
     "views read no lab, guest or QEMU code (the Linux source's excerpts they show are kstep.source)"),
    ("kstep.source", ("kstep.lab", "kstep.views", "kstep.grading", "kstep.cli"),
     "the Linux source reads nothing of the guests, the log replay or its readers"),
]
# The memory models stand on the standard library, themselves and the engine; kernel_tree alone
# asks kstep.source where the unpacked Linux tree is (its LKMM files are read there).
MEMORY_ALLOWED = ("kstep.memory", "kstep.engine", "kstep.errors")
MEMORY_BRIDGE = ("kstep.memory.kernel_tree", "kstep.source")
# Code that runs in the browser (Pyodide) imports only the standard library and kstep.  Reading a
# trace file validates it with jsonschema; the browser never reads one.
STDLIB_ONLY = ("kstep.engine", "kstep.models", "kstep.memory", "kstep.scenario_spec")
STDLIB_EXCEPTIONS = {("kstep.engine.replay", "jsonschema")}


def test_reader_resolves_every_form_of_import(tmp_path):
    """A cycle hidden in a function body and relative imports of modules, of packages and of names
    inside them are all edges; third-party imports count by their top level."""
    pkg = tmp_path / "kstep"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("from .trace import Trace\n")
    (pkg / "engine" / "trace.py").write_text("import numpy.linalg\ndef reload():\n    from .replay import run\n")
    (pkg / "engine" / "replay.py").write_text("from . import trace\nfrom ..engine.trace import reload\n")
    (pkg / "cli.py").write_text("from kstep.engine import Trace\nimport kstep.engine.replay as r\n")
    assert read_graph(pkg) == {
        "kstep": set(), "kstep.engine": {"kstep.engine.trace"},
        "kstep.engine.trace": {"numpy", "kstep.engine.replay"}, "kstep.engine.replay": {"kstep.engine.trace"},
        "kstep.cli": {"kstep.engine", "kstep.engine.replay"}}
    assert cycles(read_graph(pkg)) == [["kstep.engine.replay", "kstep.engine.trace", "kstep.engine.replay"]]


def test_no_import_cycle():
    found = cycles(kstep_edges())
    assert not found, "import cycles:\n" + "\n".join(
        f"  {' -> '.join(c)}  (with {', '.join(sorted(component(c[0]) - set(c))) or 'no other module'})"
        for c in found)


@pytest.mark.parametrize("layer, forbidden, why", NEVERS, ids=[n[0] for n in NEVERS])
def test_never(layer, forbidden, why):
    bad = sorted(f"{m} imports {t}" for m, targets in kstep_edges().items() if within(m, layer)
                 for t in targets if any(within(t, f) for f in forbidden))
    assert not bad, f"{why}:\n  " + "\n  ".join(sorted(set(bad)))


def test_memory_stands_alone():
    bridge, reads = MEMORY_BRIDGE
    bad = sorted(f"{m} imports {t}" for m, targets in kstep_edges().items() if within(m, "kstep.memory")
                 for t in targets if not any(within(t, a) for a in MEMORY_ALLOWED)
                 and not (m == bridge and on_the_way(t, reads)))
    assert not bad, "memory models import only the standard library, themselves and the engine:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("layer", STDLIB_ONLY)
def test_standard_library_only(layer):
    bad = sorted(f"{m} imports {t}" for m, targets in graph().items() if within(m, layer)
                 for t in targets if not t.startswith("kstep") and not stdlib(t) and (m, t) not in STDLIB_EXCEPTIONS)
    assert not bad, f"{layer} runs in Pyodide and may import only the standard library:\n  " + "\n  ".join(bad)


def test_cycle_finder_finds_a_cycle():
    """The checks above pass only if the finder can fail: a three-module ring and a module importing
    itself through a package are both reported."""
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(ring) == [["a", "b", "c", "a"]]
    assert cycles({"p": {"p.x"}, "p.x": {"p"}}) == [["p", "p.x", "p"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# What only a reader sees (the step table's columns, what a blocked actor waits for, what -c
# reveals) is the views' presentation of a model, never the model's or the engine's code.
PRESENTATION = ("summary", "blocked_on", "answers")


def presentation_defined_in(paths) -> list[str]:
    return sorted(f"kstep/{path.as_posix().rpartition('kstep/')[2]}:{node.lineno} defines {node.name}"
                  for path in paths for node in ast.walk(ast.parse(path.read_text(), str(path)))
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in PRESENTATION)


def test_models_and_the_engine_hold_no_presentation():
    found = presentation_defined_in([*(PACKAGE / "models").rglob("*.py"), *(PACKAGE / "engine").rglob("*.py")])
    assert not found, "presentation belongs to kstep.views.presentation:\n  " + "\n  ".join(found)


def test_presentation_finder_finds_a_method(tmp_path):
    model = tmp_path / "kstep" / "models" / "toy.py"
    model.parent.mkdir(parents=True)
    model.write_text("class Toy:\n    def step(self, s, a):\n        return s\n\n"
                     "    def summary(self, s):\n        return {}\n")
    assert [line.split(" ", 1)[1] for line in presentation_defined_in([model])] == ["defines summary"]


def test_every_mechanism_has_its_presentation():
    from kstep.models import MODELS
    from kstep.views.presentation import BY_MECHANISM

    assert set(BY_MECHANISM) == set(MODELS)


# A run of a mechanism's scenario under a variant starts from kstep.open (kstep/experiment.py).
# These build a model with no scenario (a log's header, a config made in code, a step file, every
# variant's source locations), or a scenario from text, and so call make_model themselves.
MAKE_MODEL_ALLOWED = {
    "kstep.experiment": "kstep.open itself",
    "kstep.cli": "kstep check's step files name a variant, no scenario",
    "kstep.lab.replay.damon": "a config the lab log's workload gives, no scenario",
    "kstep.lab.replay.fork_batch": "a config the lab log's header gives, no scenario",
    "kstep.lab.replay.qspinlock": "a config the lab log's header gives, no scenario",
    "kstep.lab.replay.vma_locks": "a config the lab log's header gives, no scenario",
    "kstep.source.excerpts": "every variant's source locations, no scenario",
    "kstep.measure.fork_batch": "populated page tables built in code, no scenario",
    "kstep.measure.rounds": "configs the caller builds; one scenario schema",
    "kstep.views.site.pages": "a broken variant's page, before any scenario is chosen; one scenario schema",
}


def calls_make_model(source: str, where: str) -> bool:
    """Does ``source`` call ``make_model`` (``make_model(...)`` or ``x.make_model(...)``)?"""
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "make_model"
               for node in ast.walk(ast.parse(source, where)))


def make_model_callers(paths) -> set[str]:
    """Modules (by file) whose code calls ``make_model``."""
    return {path for path in paths if calls_make_model(path.read_text(), str(path))}


def test_runs_start_from_kstep_open():
    files = {m: PACKAGE.parent / (m.replace(".", "/") + ".py") for m in graph()}
    files = {m: p if p.exists() else p.with_suffix("") / "__init__.py" for m, p in files.items()}
    callers = {m for m, p in files.items() if p in make_model_callers([p])}
    assert not callers - set(MAKE_MODEL_ALLOWED), (
        "build a run from a mechanism, scenario and variant with kstep.open, not make_model:\n  "
        + "\n  ".join(sorted(callers - set(MAKE_MODEL_ALLOWED))))
    gone = sorted(set(MAKE_MODEL_ALLOWED) - callers)
    assert not gone, f"no longer calls make_model: {gone}"


# The benchmarks and scripts beside the package, by path from the repository's root.
OUTSIDE_ALLOWED = {"bench/player.py": "configs scaled up in code, no scenario"}


def test_benchmarks_and_scripts_start_from_kstep_open():
    root = PACKAGE.parents[1]
    scripts = [p for p in root.joinpath("scripts").iterdir()
               if p.is_file() and p.read_bytes().startswith(b"#!/usr/bin/env python")]
    files = [*root.joinpath("bench").glob("*.py"), *scripts]
    callers = {p.relative_to(root).as_posix() for p in make_model_callers(files)}
    assert callers == set(OUTSIDE_ALLOWED), f"make_model outside kstep.open: {sorted(callers ^ set(OUTSIDE_ALLOWED))}"


def test_make_model_finder_finds_a_call(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("import kstep.models as m\n\ndef f():\n    return m.make_model('rcu', None)\n")
    assert make_model_callers([path]) == {path}
    path.write_text("from kstep.models import make_model  # imported, never called\n")
    assert make_model_callers([path]) == set()


# The tests and notebooks that call make_model, by path from the repository's root: each checks a
# model itself (its variants, labels, sources or declarations) or runs a config made in code; a
# run of a scenario they build with kstep.open, kstep.experiment.from_text or support.load.
USERS_ALLOWED = {
    "simulator/tests/test_cli_inputs.py": "a config made in code for a log; the model's class patched",
    "simulator/tests/test_code_pane.py": "every variant's source locations",
    "simulator/tests/test_dead_vars.py": "a model's step table",
    "simulator/tests/test_experiment.py": "kstep.open checked against make_model and the engine",
    "simulator/tests/test_findbug.py": "each case's broken variant, in the registry",
    "simulator/tests/test_footprints.py": "what a model declares",
    "simulator/tests/test_fuzz_cli.py": "a model's expect functions",
    "simulator/tests/test_fuzz_hostile.py": "a mechanism, variant and config drawn at random",
    "simulator/tests/test_kernel_lab_fork.py": "a crowd of threads made in code",
    "simulator/tests/test_liveness.py": "endless configs made in code",
    "simulator/tests/test_measure_fork_batch.py": "populated page tables made in code",
    "simulator/tests/test_memory_model.py": "which variants refuse tso",
    "simulator/tests/test_replay_qspinlock.py": "qspinlock configs made in code, for logs the checker reads",
    "simulator/tests/test_replay_vma_locks.py": "a vma-locks config made in code, for logs the checker reads",
    "simulator/tests/test_views_columns.py": "a config raised past its schema's bound",
    "simulator/tests/test_views_qspinlock.py": "every variant's step labels",
    "notebooks/01-per-vma-locks-and-rcu.ipynb": "the table of variants and the variant menu",
    "notebooks/02-qspinlock.ipynb": "labels and variants' texts",
    "notebooks/04-fork-pte-batching.ipynb": "labels",
}


def notebook_code(path: Path) -> str:
    """A notebook's code cells as one module (IPython's % and ! lines left out)."""
    import json

    cells = json.loads(path.read_text())["cells"]
    return "\n".join(line for cell in cells if cell["cell_type"] == "code"
                     for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("%", "!")))


def test_tests_and_notebooks_start_from_kstep_open():
    root = PACKAGE.parents[1]
    sources = {p.relative_to(root).as_posix(): p.read_text() for p in root.joinpath("simulator", "tests").rglob("*.py")}
    sources |= {p.relative_to(root).as_posix(): notebook_code(p) for p in root.joinpath("notebooks").glob("*.ipynb")}
    callers = {where for where, source in sources.items() if "make_model" in source and calls_make_model(source, where)}
    assert not callers - set(USERS_ALLOWED), (
        "run a scenario with kstep.open (or from_text, or support.load), not make_model:\n  "
        + "\n  ".join(sorted(callers - set(USERS_ALLOWED))))
    assert not set(USERS_ALLOWED) - callers, f"no longer calls make_model: {sorted(set(USERS_ALLOWED) - callers)}"


# The tests that find the unpacked Linux tree themselves, by path from the repository's root; every
# other test takes conftest.py's linux_tree fixture, which names the missing tree (run make linux-source)
# and skips the release-exact checks on a stale pin, leaving that to one named check.
TREE_FINDERS_ALLOWED = {
    "simulator/tests/conftest.py": "the linux_tree fixture itself",
    "simulator/tests/test_source_index.py": "the finder and the stale-pin check themselves",
    "simulator/tests/test_memory_models.py": "the kernel's litmus tests as parameters, at collection",
}


def tree_finders(sources: dict[str, str]) -> set[str]:
    """The files whose code calls ``linux_tree()`` or ``kernel_root()``."""
    return {where for where, source in sources.items() for node in ast.walk(ast.parse(source, where))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("linux_tree", "kernel_root")}


def test_tests_take_the_linux_tree_from_its_fixture():
    root = PACKAGE.parents[1]
    sources = {p.relative_to(root).as_posix(): p.read_text() for p in root.joinpath("simulator", "tests").glob("*.py")}
    found = tree_finders(sources)
    assert found == set(TREE_FINDERS_ALLOWED), (
        "take the linux_tree fixture instead of finding the tree: "
        f"{sorted(found - set(TREE_FINDERS_ALLOWED))}; no longer finds it: {sorted(set(TREE_FINDERS_ALLOWED) - found)}")


def test_tree_finder_finds_a_call():
    assert tree_finders({"a.py": "from kstep.memory import kernel_tree\nroot = kernel_tree.kernel_root()\n",
                         "b.py": "def test_x(linux_tree):\n    return linux_tree / 'mm'\n",
                         "c.py": "tree = index.linux_tree()\n"}) == {"a.py", "c.py"}


# One spelling per mechanism: the modules issue 22 renamed (old path in kstep/ -> new) never come back,
# nor does a test file named after one (``test_`` + its old name), nor a vma-locks spelling as a name
# in code (a module imported ``as`` one).
RETIRED_MODULES = {
    "lab/check.py": "lab/replay/qspinlock.py", "lab/check_vma.py": "lab/replay/vma_locks.py",
    "lab/vma_retries.py": "lab/guest/vma_locks.py", "damon_cost.py": "measure/damon.py",
    "fork_cost.py": "measure/fork_batch.py", "measure.py": "measure/rounds.py",
    "views/vma_board.py": "views/boards/vma_locks.py", "views/vma_lock.py": "views/vma_locks.py",
    "models/vma_lock.py": "models/vma_locks/", "models/fork_invariants.py": "models/fork_batch/invariants.py",
}
RETIRED_NAMES = {"vma_lock", "vma_board", "check_vma", "vma_retries",  # vma_locks' other spellings
                 "fork_cost", "damon_cost"}  # the measure modules' old names


def retired_names(sources: dict[str, str]) -> list[str]:
    """``where: name`` for each retired name a source's code uses (its comments and strings aside)."""
    import io
    import tokenize

    return sorted(f"{where}: {token.string}" for where, source in sources.items()
                  for token in tokenize.generate_tokens(io.StringIO(source).readline)
                  if token.type == tokenize.NAME and token.string in RETIRED_NAMES)


def test_one_spelling_per_mechanism():
    root = PACKAGE.parents[1]
    back = sorted(f"kstep/{old} (now {new})" for old, new in RETIRED_MODULES.items() if (PACKAGE / old).exists())
    tests = root.joinpath("simulator", "tests")
    back += sorted(f"tests/test_{Path(old).name} (now {new})" for old, new in RETIRED_MODULES.items()
                   if (tests / f"test_{Path(old).name}").exists())
    assert not back, f"named as a retired module: {back}"
    files = [*PACKAGE.rglob("*.py"), *tests.glob("*.py"), *root.joinpath("bench").glob("*.py")]
    sources = {p.relative_to(root).as_posix(): p.read_text() for p in files}
    sources |= {p.relative_to(root).as_posix(): notebook_code(p) for p in root.joinpath("notebooks").glob("*.ipynb")}
    found = retired_names(sources)
    assert not found, "a retired spelling in code (vma_locks; measure's fork_batch, damon):\n  " + "\n  ".join(found)


def test_retired_name_finder_finds_a_name():
    assert retired_names({"a.py": "from kstep.lab.guest import vma_locks as vma_retries\n",
                          "b.py": "# the old vma_retries module\nname = 'check_vma'\nvma_lock_success = 1\n"}) == [
        "a.py: vma_retries"]


# One meaning per step limit: a run's cap is a named constant (engine.schedule's LONGEST_RUN for what a
# person asks for or a file holds, COUNTED_RUN for runs kept only for their counts, a scenario's
# max_steps), never a number written at the call.
def literal_step_limits(sources: dict[str, str]) -> list[str]:
    """``where:line`` of each ``max_steps=<number>`` argument or ``max_steps: int = <number>`` default."""
    found = []
    for where, source in sources.items():
        for node in ast.walk(ast.parse(source, where)):
            values = []
            if isinstance(node, ast.keyword) and node.arg == "max_steps":
                values = [node.value]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                named = [*zip(a.args[len(a.args) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
                values = [d for arg, d in named if arg.arg == "max_steps" and d is not None]
            found += [f"{where}:{v.lineno}" for v in values if isinstance(v, ast.Constant) and isinstance(v.value, int)]
    return found


def test_step_limits_are_named():
    found = literal_step_limits({f"kstep/{p.relative_to(PACKAGE).as_posix()}": p.read_text()
                                 for p in PACKAGE.rglob("*.py")})
    assert not found, "name the step limit (engine.schedule's LONGEST_RUN or COUNTED_RUN):\n  " + "\n  ".join(found)


def test_step_limit_finder_finds_a_number():
    assert literal_step_limits({"a.py": "simulate(m, s, r, max_steps=10_000)\n",
                                "b.py": "def run(c, max_steps: int = 2_000_000):\n    pass\n",
                                "c.py": "simulate(m, s, r, max_steps=LONGEST_RUN)\ndef f(max_steps=None): pass\n"}) == [
        "a.py:1", "b.py:1"]
