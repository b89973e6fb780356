"""What a page's interactive mode needs besides the page: Pyodide's runtime, kstep's standard-library
modules as one zip, and interactive.js, all in the site's own static folder (never a CDN).

The runtime is the npm ``pyodide`` package's core (the version package-lock.json pins), which
``make setup`` installs into node_modules/; ``KSTEP_PYODIDE`` names another copy of it.  The zip
holds exactly the kstep modules that ``kstep.views.interactive`` and ``litmus_live`` import with nothing but the
standard library importable (found by importing it so, in a child process), the bundled
scenarios they load, and the LKMM's files from the unpacked linux-source tree (kernel_tree.lkmm_copy, with
their origin), where kernel_tree.kernel_root finds them in the browser.  Without a tree the zip has no LKMM
files, which only an LKMM page needs (and building one needs the tree).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

from ..engine import display, memory_model as memory_models
from ..engine.memory_model import StoreBuffered, memory_model as wrap_memory
from ..engine.trace import recorded
from ..errors import UserError
from ..memory import kernel_tree

RUNTIME = ("pyodide.js", "pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
           "pyodide-lock.json")
PYODIDE = "pyodide"  # the runtime's folder under the static folder
KSTEP = "kstep"  # kstep.zip and interactive.js, under the static folder
ENTRIES = ("kstep.views.interactive", "kstep.views.litmus_live")  # what interactive.js imports

# Code run in a child process after this imports only the standard library (and kstep), as in Pyodide.
ONLY_STDLIB = """
import sys

class OnlyTheStandardLibrary:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top != "kstep" and top not in sys.stdlib_module_names:
            raise ImportError(f"{name} is not in the standard library")

sys.meta_path.insert(0, OnlyTheStandardLibrary())
"""
# Import the entries so, then print the files of the kstep modules that came in.
STDLIB_MODULES = ONLY_STDLIB + """
import importlib, json
for entry in sys.argv[1:]:
    importlib.import_module(entry)
print(json.dumps(sorted(m.__file__ for n, m in sys.modules.items() if n.partition(".")[0] == "kstep")))
"""


def runtime_dir() -> Path:
    """The folder holding Pyodide's core runtime; a UserError says how to get it when it is missing."""
    where = os.environ.get("KSTEP_PYODIDE")
    root = Path(where) if where else Path(__file__).resolve().parents[3] / "node_modules" / "pyodide"
    missing = [name for name in RUNTIME if not (root / name).is_file()]
    if missing:
        raise UserError(f"Pyodide's runtime is not in {root} (no {missing[0]}): run 'make setup', which installs "
                        f"the pinned npm package pyodide")
    return root


def stdlib_modules(entries: tuple[str, ...] = ENTRIES) -> list[Path]:
    """The files of the kstep modules ``entries`` import when only the standard library is there."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", STDLIB_MODULES, *entries], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' or '.join(entries)} needs more than the standard library:\n{out.stderr[-2000:]}")
    return [Path(f) for f in json.loads(out.stdout)]


def package_zip() -> bytes:
    """kstep's interactive modules, bundled scenarios and the LKMM's kernel files, as the zip the page
    unpacks into Pyodide."""
    root = Path(__file__).resolve().parents[2]  # the folder holding the kstep package
    scenarios = resources.files("kstep.scenarios")
    files = set(stdlib_modules()) | {Path(str(p)) for p in Path(str(scenarios)).rglob("*.toml")}
    contents = {path.relative_to(root).as_posix(): path.read_bytes() for path in files}
    shipped = kernel_tree.SHIPPED.relative_to(root).as_posix()
    contents.update({f"{shipped}/{name}": data for name, data in lkmm_files().items()})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(contents):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, contents[name])  # fixed dates: the same sources give the same zip
    return buf.getvalue()


def lkmm_files() -> dict[str, bytes]:
    """The LKMM's files of the unpacked tree with their origin (kernel_tree.lkmm_copy), or none without a tree."""
    try:
        tree = kernel_tree.kernel_root()
    except UserError:
        return {}
    return kernel_tree.lkmm_copy(tree)


def install(static: Path) -> None:
    """Copy the runtime, kstep.zip and interactive.js into ``static`` (a site's _static folder)."""
    runtime = runtime_dir()
    (static / PYODIDE).mkdir(parents=True, exist_ok=True)
    for name in RUNTIME:
        shutil.copyfile(runtime / name, static / PYODIDE / name)
    (static / KSTEP).mkdir(parents=True, exist_ok=True)
    (static / KSTEP / "kstep.zip").write_bytes(package_zip())
    (static / KSTEP / "interactive.js").write_text(interactive_js())


def interactive_js() -> str:
    return resources.files(__package__).joinpath("interactive.js").read_text()


def enable(lay, trace, model) -> None:
    """Mark the player of layout ``lay`` as one a student can schedule by hand (interactive.js looks
    for the mark), and ship the code pane of every step the model has, not only the recorded run's.

    The mark lists the variants the student may run the scenario under: those with the same steps
    as the page's model (the player's label tables, code pane included, hold for them all), and which
    of the model's functions call which in the 6.12 code (each step's call stack needs it).  A model
    run under a memory model (x86-TSO's store buffers) is scheduled under it, drains included: the
    mark names it, and the variants are those that have a model under it."""
    from . import code, context  # the calls: Bokeh-free, but they read the excerpts

    # under tso: None, x86-64's build (as the player's)
    spec = _every_step(lay, model, display.of(model).kernel_build(trace.states[0]) if trace.states else None)
    memory = recorded(model).memory_model  # None: sc
    kernel = model.inner if isinstance(model, StoreBuffered) else model
    under = (lambda m: m) if memory is None else (lambda m: wrap_memory(memory["name"], m, memory["store_buffer"]))
    variants = [v for v in type(kernel).variants.values()
                if not (memory and memory_models.of(type(kernel)(v.name)).refuses_memory_model(memory["name"]))
                and sorted(under(type(kernel)(v.name)).sources()) == spec["labels"]]
    spec["live"] = {"mechanism": trace.mechanism, "scenario": trace.scenario, "variant": trace.variant,
                    "title": model.title or model.name, "calls": context.call_pairs(kernel, code.calls),
                    "memory_model": memory,
                    "variants": [{"name": v.name, "doc": v.doc, "broken": v.broken} for v in variants]}


def enable_litmus(lay, model, text: str) -> None:
    """Mark the player of a litmus page (``model``: stepping.py's, of the test ``text``) as one a student
    steps by hand: interactive.js then runs a litmus_live.LitmusSession of the test under the page's
    memory model, with the code pane of every primitive (the excerpt keys it has go with the test); under
    an axiomatic model the student may pick another candidate execution to reveal (the variants)."""
    from .litmus_live import candidates

    spec = _every_step(lay, model)
    kernel = sorted({str(src) for src in model.sources().values() if src.in_kernel})
    runs = [{"name": model.model_name, "doc": f"the execution this page shows, under {model.title}",
             "broken": False}]
    runs += [{"name": run, "doc": f"reads: {run.partition(' ')[2]}", "broken": False}
             for run in candidates(text, model.litmus.name, model.model_name, spec["labels"])]
    spec["live"] = {"mechanism": "litmus", "scenario": model.litmus.name, "variant": model.model_name,
                    "title": model.title, "calls": [], "litmus": text, "kernel": kernel, "variants": runs,
                    "pick": "Execution"}


def _every_step(lay, model, build=None) -> dict:
    """The player spec of layout ``lay``, with the code pane of every step ``model`` has, as the kernel
    build ``build`` compiles it (code.built)."""
    from . import code  # the code pane's tables: Bokeh-free, but they read the excerpts

    spec = lay.select_one({"name": "kstep-player"}).args["kstep"]
    labels = spec["labels"]
    spec.update(code.tables(labels, model.sources(), set(labels), build))
    return spec

