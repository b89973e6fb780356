"""Build the course site: ``python -m kstep.views.course --docs docs --out build/course``.

The site is Sphinx with MyST-NB and sphinx-book-theme over ``docs/``.  Its extension,
``kstep.views.site``, adds one page per bundled scenario and per broken variant, built from the
runs this module computes (:func:`scripted_run`, :func:`counterexample`).  A broken variant's
counterexample is the one ``make verdicts`` recorded (``counterexamples.json``), run again through
the model, so a first build searches nothing; a record the model no longer follows to its violation
is searched for again (test_course_counterexamples keeps the records current).  Notebooks are executed
at build time; any warning, and any cell that raises, fails the build.  BokehJS is served from the
site's own ``_static`` folder, so the folder works offline from ``file://`` or any local server.

Caches live beside the site, in ``OUT-cache/``: Sphinx's doctrees (a page is re-read only when its
source changed) and the executed notebooks, kept per digest of the kstep package's sources, so a
change to a model re-executes them and an unchanged tree rebuilds in seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from ..engine.model import Violation
from ..engine.schedule import Replay
from ..engine.trace import Trace
from ..scenario_spec import scenario
from ..scenario_spec.runs import SEED, own_run
from .. import experiment
from ..errors import UserError
from ..models import MODELS

MAX_STATES = 300_000  # per exploration: every shipped bug is found far below this on its scenario
PACKAGE = Path(__file__).resolve().parents[1]
RECORDED = PACKAGE / "counterexamples.json"  # written by make verdicts (scripts/verdicts)
DIGESTED = (".py", ".toml", ".js", ".json", ".gz")  # what a page of the site can depend on
# Bokeh checks a document's integrity each time it serializes one (every player's components(), every
# show() in a notebook): a fifth of that serialization's time, and what it finds only goes to the log,
# which the site build never reads.  test_views checks every bundled scenario's layout the same way, so
# the build, its Sphinx workers and its notebook kernels (which inherit the environment) skip it.
# A notebook's plots come out the same at every build: bokeh.plotting orders a glyph's colour columns
# by a set, so a kernel's hash seed is fixed.
BUILD_ENV = {"BOKEH_VALIDATE_DOC": "false", "PYTHONHASHSEED": "0"}


def scripted_run(mech: str, name: str):
    """(model, scenario, trace): the scenario's own run (its scripted schedule, else seed ``SEED``;
    a scenario whose runs never end, its declared steps or lasso)."""
    ex = experiment.open(mech, name)
    return ex.model, ex.scenario, own_run(ex.model, ex.scenario, SEED)


class Found(NamedTuple):
    model: object
    scenario: str
    states: int  # how many states the search that found it stored
    counterexample: Trace
    violation: Violation  # what its last step breaks


def verdicts(mech: str) -> dict:
    """The committed verdict table's rows of ``mech`` (scenario -> variant -> row)."""
    return json.loads((PACKAGE / "verdicts.json").read_text())["verdicts"].get(mech, {})


def verdict_order(mech: str, variant: str) -> tuple:
    """The bundled scenarios on which the committed verdict table says ``variant`` breaks something."""
    table = verdicts(mech)
    return tuple(name for name in scenario.bundled(mech)
                 if table.get(name, {}).get(variant, {}).get("verdict") == "violation")


def livelock_scenarios(mech: str, variant: str) -> list:
    """The bundled scenarios on which the committed verdict table says ``variant`` livelocks, when it
    breaks no invariant on any of them."""
    table = verdicts(mech)
    rows = [(name, table.get(name, {}).get(variant, {})) for name in scenario.bundled(mech)]
    if any(row.get("verdict") == "violation" for _, row in rows):
        return []
    return [name for name, row in rows if row.get("liveness") == "livelock"]


def counterexample(mech: str, variant: str, *,
                   say: Callable[[str], None] = lambda line: None) -> tuple[Optional[Found], list[str]]:
    """The broken ``variant``'s shortest counterexample on the bundled scenarios: the recorded one
    when it still runs to its violation, else :func:`search`'s, trying first the scenarios the
    verdict table says it breaks."""
    found = recorded(mech, variant)
    return (found, []) if found is not None else search(mech, variant, order=verdict_order(mech, variant), say=say)


def recorded(mech: str, variant: str) -> Optional[Found]:
    """The counterexample ``make verdicts`` recorded for ``variant``, made again by ``simulate``
    through its exact actions (so every step and check is the model's own); None when there is no
    record or the model does not reach the recorded violation in the recorded steps."""
    row = json.loads(RECORDED.read_text())["counterexamples"].get(mech, {}).get(variant)
    if row is None:
        return None
    ex = experiment.open(mech, row["scenario"], variant)
    model, steps = ex.model, len(row["schedule"].split())
    try:
        trace = ex.run(Replay(row["schedule"]), max_steps=steps)
    except UserError:  # an action the model no longer enables there
        return None
    if trace.violation is None or len(trace) != steps or trace.violation.invariant != row["invariant"]:
        return None
    return Found(model, row["scenario"], row["states"], trace, trace.violation)


def search(mech: str, variant: str, *, order: tuple = (), max_states: int = MAX_STATES,
           say: Callable[[str], None] = lambda line: None) -> tuple[Optional[Found], list[str]]:
    """Explore the broken ``variant`` on the bundled scenarios until one breaks an invariant.

    ``order`` names scenarios to try first (the committed verdict table's); the rest follow in
    bundled order.  A scenario written for its scripted run only (``explorable = false``) is left out, as
    the verdict table leaves it out: its search would stop at the bound having shown nothing (qspinlock's
    trylock-fallback took 38 s of CPU to reach 300,000 states).  Returns what was found (or None) and what
    was searched without a result.
    """
    names = scenario.bundled(mech)
    searched: list[str] = []
    for name in [n for n in order if n in names] + [n for n in names if n not in order]:
        ex = experiment.open(mech, name, variant)
        if not ex.scenario.explorable:
            continue
        model, result = ex.model, ex.explore(max_states=max_states)
        if result.counterexample is not None and result.violation is not None:
            say(f"course: {mech} --variant {variant} on {name}: {result.violation.title} "
                f"in {len(result.counterexample)} steps ({result.seconds:.1f} s)")
            return Found(model, name, result.states, result.counterexample, result.violation), searched
        searched.append(f"{name} ({'all' if result.exhausted else f'the first {result.states}'} states)")
    say(f"course: {mech} --variant {variant}: no counterexample on any bundled scenario")
    return None, searched


def searched_records(say: Callable[[str], None] = lambda line: None) -> dict:
    """counterexamples.json as a search of every broken variant writes it now (a variant the table
    says livelocks has a lasso, not a counterexample, and no record)."""
    out: dict = {}
    for mech in sorted(MODELS):
        for variant in (n for n, v in MODELS[mech].variants.items() if v.broken):
            if livelock_scenarios(mech, variant):
                continue
            found, _ = search(mech, variant, order=verdict_order(mech, variant), say=say)
            if found is not None:
                out.setdefault(mech, {})[variant] = {
                    "scenario": found.scenario, "states": found.states,
                    "invariant": found.violation.invariant,
                    "schedule": Replay.of(found.counterexample.actions).text}
    return {"counterexamples": out}


def source_digest() -> str:
    """A digest of every file of the kstep package a page can depend on (models, views, scenarios)."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix in DIGESTED and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build(docs: Path, out: Path, *, jobs: int = 1) -> Path:
    """Build the site from ``docs`` into ``out`` (its parent must exist); returns the index page.

    Warnings are errors; on failure the doctree cache is dropped so the next build reads every page
    again and reports every warning, not only those of the pages that changed.
    """
    from sphinx.cmd.build import build_main

    docs, out = Path(docs).resolve(), Path(out).resolve()  # Sphinx starts afresh when its srcdir moves
    if not (docs / "conf.py").is_file():
        raise UserError(f"--docs {docs}: no conf.py there")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: directory {out.parent} does not exist")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    cache = out.parent / f"{out.name}-cache"
    notebooks = cache / "notebooks"
    digest = source_digest()
    if notebooks.is_dir():  # executed notebooks of older sources can never be used again
        for old in notebooks.iterdir():
            if old.name != digest:
                shutil.rmtree(old)
    if not (out / "searchindex.js").is_file():  # the site is gone or was never whole: its doctrees describe
        shutil.rmtree(cache / "doctrees", ignore_errors=True)  # pages no longer there, so read every page again
    args = ["-b", "html", "-W", "--keep-going", "-j", str(jobs), "-d", str(cache / "doctrees"),
            "-D", f"nb_execution_cache_path={notebooks / digest}", str(docs), str(out)]
    before = {name: os.environ.get(name) for name in BUILD_ENV}
    os.environ.update(BUILD_ENV)
    try:
        status = build_main(args)
    finally:  # the caller's environment as it was (the tests build in-process)
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    if status != 0:
        shutil.rmtree(cache / "doctrees", ignore_errors=True)
        raise UserError(f"the site did not build cleanly (the warnings above); nothing in {out} is current")
    return out / "index.html"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kstep.views.course", description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="docs", help="the site's sources, with conf.py (default: docs)")
    parser.add_argument("--out", required=True, help="folder to build into (its parent must exist)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="Sphinx reads this many pages in parallel")
    args = parser.parse_args(argv)
    try:
        if args.jobs < 1:
            raise UserError(f"--jobs {args.jobs}: must be at least 1")
        index = build(Path(args.docs), Path(args.out), jobs=args.jobs)
    except UserError as e:
        print(f"kstep.views.course: {e}", file=sys.stderr)
        return 2
    print(f"course: open {index.resolve().as_uri()}")
    print(f"course: or serve it (the pages then let students schedule the threads by hand): kstep serve {Path(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
