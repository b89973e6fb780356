"""Build the course site: ``python -m kstep.views.course --docs docs --out build/course``.

The site is Sphinx with MyST-NB and sphinx-book-theme over ``docs/``.  Its extension,
``kstep.views.site``, adds one page per bundled scenario and per broken variant, built from the
runs this module computes (:func:`scripted_run`, :func:`counterexample`).  Notebooks are executed
at build time; any warning, and any cell that raises, fails the build.  BokehJS is served from the
site's own ``_static`` folder, so the folder works offline from ``file://`` or any local server.

Caches live beside the site, in ``OUT-cache/``: Sphinx's doctrees (a page is re-read only when its
source changed) and the executed notebooks, kept per digest of the kstep package's sources, so a
change to a model re-executes them and an unchanged tree rebuilds in seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from ..engine import explore
from ..scenario_spec import scenario
from ..scenario_spec.runs import SEED, own_run
from ..engine.explore import ExploreResult
from ..errors import UserError
from ..models import make_model

MAX_STATES = 300_000  # per exploration: every shipped bug is found far below this on its scenario
PACKAGE = Path(__file__).resolve().parents[1]
DIGESTED = (".py", ".toml", ".js", ".json", ".gz")  # what a page of the site can depend on


def scripted_run(mech: str, name: str):
    """(model, scenario, trace): the scenario's own run (its scripted schedule, else seed ``SEED``;
    a scenario whose runs never end, its declared steps or lasso)."""
    model = make_model(mech)
    sc = scenario.load(mech, model.scenario_schema, name)
    if sc.variant:
        model = make_model(mech, sc.variant)
    return model, sc, own_run(model, sc, SEED)


class Found(NamedTuple):
    model: object
    scenario: str
    result: ExploreResult


def counterexample(mech: str, variant: str, *, order: tuple = (), max_states: int = MAX_STATES,
                   say: Callable[[str], None] = lambda line: None) -> tuple[Optional[Found], list[str]]:
    """Explore the broken ``variant`` on the bundled scenarios until one breaks an invariant.

    ``order`` names scenarios to try first (the committed verdict table's); the rest follow in
    bundled order.  Returns what was found (or None) and what was searched without a result.
    """
    model = make_model(mech, variant)
    names = scenario.bundled(mech)
    searched = []
    for name in [n for n in order if n in names] + [n for n in names if n not in order]:
        sc = scenario.load(mech, model.scenario_schema, name)
        result = explore(model, model.initial(sc.config), max_states=max_states, scenario=sc.name,
                         config=sc.config)
        if result.counterexample is not None:
            say(f"course: {mech} --variant {variant} on {name}: {result.violation.title} "
                f"in {len(result.counterexample)} steps ({result.seconds:.1f} s)")
            return Found(model, name, result), searched
        searched.append(f"{name} ({'all' if result.exhausted else f'the first {result.states}'} states)")
    say(f"course: {mech} --variant {variant}: no counterexample on any bundled scenario")
    return None, searched


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
    if build_main(args) != 0:
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
