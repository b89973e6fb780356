"""Build the course: every bundled scenario, and a counterexample for every broken variant, as pages.

    python -m kstep.views.course --out build/course

Each scenario runs under its own scripted schedule when it has one, else the seeded random
scheduler; each broken variant is explored on the bundled scenarios, in order, until one yields a
counterexample.  BokehJS is copied once into ``OUT/static/js`` and every page loads it by a relative
path, so the folder works offline from file:// and can be copied anywhere.  ``index.html`` lists the
pages with each scenario's description and what to look for.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Callable, Optional

from bokeh.resources import Resources
from bokeh.util.paths import bokehjs_path

from ..engine import Random, Scripted, explore, scenario, simulate
from ..files import write_text
from ..errors import UserError
from ..models import MODELS, make_model
from . import style
from .export import page

MAX_STATES = 300_000  # per exploration: every shipped bug is found far below this on its scenario
SCRIPT_SRC = re.compile(r'src="\.\./(static/js/[A-Za-z0-9_.-]+\.js)')


@dataclass
class Entry:
    """One page of the course."""

    mechanism: str
    href: str  # relative to the index
    title: str
    steps: int
    outcome: str
    description: str = ""
    look_for: str = ""
    violation: str = ""


@dataclass
class Mechanism:
    name: str
    title: str
    scenarios: list = field(default_factory=list)
    counterexamples: list = field(default_factory=list)
    not_found: list = field(default_factory=list)  # (variant, what was searched)


def build(out: Path, *, seed: int = 1, max_states: int = MAX_STATES,
          say: Callable[[str], None] = print) -> Path:
    """Render the whole course into ``out`` (its parent must exist); returns the index path."""
    out = Path(out)
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: directory {out.parent} does not exist")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    out.mkdir(exist_ok=True)
    mechanisms = []
    scripts: set[str] = set()
    for name in sorted(MODELS):
        mech = Mechanism(name, MODELS[name].title)
        (out / name).mkdir(exist_ok=True)
        for sc_name in scenario.bundled(name):
            mech.scenarios.append(_scenario_page(out, name, sc_name, seed, scripts, say))
        for variant in (v for v in MODELS[name].variants.values() if v.broken):
            entry = _counterexample_page(out, name, variant.name, max_states, scripts, say)
            if entry is None:
                mech.not_found.append(variant)
            else:
                mech.counterexamples.append(entry)
        mechanisms.append(mech)
    _copy_bokehjs(out, scripts)
    index = out / "index.html"
    write_text(index, index_html(mechanisms))
    return index


def _scenario_page(out, mech, name, seed, scripts, say) -> Entry:
    t0 = time.perf_counter()
    model = make_model(mech)
    sc = scenario.load(mech, model.scenario_schema, name)
    if sc.variant:
        model = make_model(mech, sc.variant)
    sched = Scripted(sc.schedule) if sc.schedule else Random(seed)
    trace = simulate(model, model.initial(sc.config), sched, scenario=sc.name, config=sc.config)
    href = f"{mech}/{name}.html"
    _write_page(out / href, trace, model, scripts)
    how = "scripted schedule" if sc.schedule else f"seed {seed}"
    say(f"course: {mech}/{name} ({how}): {len(trace)} steps, {trace.outcome} -> {out / href} "
        f"({time.perf_counter() - t0:.1f} s)")
    return Entry(mech, href, name, len(trace), trace.outcome, sc.description.strip(), sc.look_for.strip(),
                 _violation_text(trace))


def _counterexample_page(out, mech, variant, max_states, scripts, say) -> Optional[Entry]:
    model = make_model(mech, variant)
    for name in scenario.bundled(mech):
        t0 = time.perf_counter()
        sc = scenario.load(mech, model.scenario_schema, name)

        def progress(states, transitions, depth, _name=name):
            say(f"course: {mech} --variant {variant} on {_name}: {states} states, depth {depth} ...")

        result = explore(model, model.initial(sc.config), max_states=max_states, progress=progress,
                         progress_every=5.0, scenario=sc.name, config=sc.config)
        searched = "all" if result.exhausted else f"the first {result.states}"
        if result.counterexample is None:
            say(f"course: {mech} --variant {variant} on {name}: no counterexample in {searched} states "
                f"({result.seconds:.1f} s)")
            continue
        trace = result.counterexample
        href = f"{mech}/broken-{variant}.html"
        _write_page(out / href, trace, model, scripts)
        say(f"course: {mech} --variant {variant} on {name}: {result.violation.invariant} in {len(trace)} steps "
            f"-> {out / href} ({time.perf_counter() - t0:.1f} s)")
        return Entry(mech, href, f"{variant} (on {name})", len(trace), trace.outcome,
                     model.variant.doc, sc.look_for.strip(), _violation_text(trace))
    say(f"course: {mech} --variant {variant}: no counterexample on any bundled scenario")
    return None


def _write_page(path: Path, trace, model, scripts: set) -> None:
    # Pages sit one folder below the index; BokehJS is in OUT/static/js.
    html = page(trace, model, Resources(mode="server", root_url="../"), back="../index.html")
    scripts.update(SCRIPT_SRC.findall(html))
    write_text(path, html)


def _violation_text(trace) -> str:
    v = trace.violation
    if v is None:
        return ""
    return f"{v.title} at step {v.step}: {v.message}"


def _copy_bokehjs(out: Path, scripts: set) -> None:
    source = Path(bokehjs_path())
    for rel in sorted(scripts):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel.removeprefix("static/"), target)


def index_html(mechanisms: list[Mechanism]) -> str:
    parts = []
    for m in mechanisms:
        parts.append(f'<section><h2>{escape(m.title)} <span class="mech">{escape(m.name)}</span></h2>')
        parts.append("<h3>Scenarios</h3><ul>")
        for e in m.scenarios:
            parts.append(
                f'<li><a href="{escape(e.href)}">{escape(e.title)}</a> <span class="meta">{e.steps} steps, '
                f'{escape(e.outcome)}</span><p>{escape(e.description)}</p>'
                f'<p class="look"><b>Look for:</b> {escape(e.look_for)}</p></li>')
        parts.append("</ul>")
        if m.counterexamples or m.not_found:
            parts.append("<h3>Broken variants: the shortest run that breaks an invariant</h3><ul>")
            for e in m.counterexamples:
                parts.append(
                    f'<li><a href="{escape(e.href)}">{escape(e.title)}</a> <span class="meta">{e.steps} steps</span>'
                    f'<p>{escape(e.description)}</p><p class="violation">{escape(e.violation)}</p></li>')
            for v in m.not_found:
                parts.append(f'<li>{escape(v.name)}: no counterexample found on the bundled scenarios '
                             f'<p>{escape(v.doc)}</p></li>')
            parts.append("</ul>")
        parts.append("</section>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>kstep course: animations</title>
<style>
body {{ font-family: {style.FONT}; color: {style.INK}; max-width: 60em; margin: 2em auto; padding: 0 1em;
        font-size: 13pt; line-height: 1.45; }}
h1 {{ font-size: 22pt; }} h2 {{ font-size: 17pt; margin-top: 1.6em; }} h3 {{ font-size: 14pt; }}
.mech, .meta {{ font-family: {style.MONO}; font-size: 11pt; color: {style.DARK}; }}
li {{ margin-bottom: 0.8em; }} li p {{ margin: 0.2em 0; }}
.look {{ color: {style.DARK}; }}
.violation {{ color: {style.VERMILLION}; font-family: {style.MONO}; font-size: 11pt; }}
</style>
</head>
<body>
<h1>kstep: how Linux 6.12 manages memory concurrently, one step at a time</h1>
<p>Each page animates one run. Press Play or step through it; the line under the controls names the
kernel function each step mirrors and what it does. Everything here works offline.</p>
{"".join(parts)}
</body>
</html>
"""


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kstep.views.course", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder to build into (its parent must exist)")
    parser.add_argument("-s", "--seed", type=int, default=1, help="seed of the random scheduler (default 1)")
    parser.add_argument("--max-states", type=int, default=MAX_STATES,
                        help=f"bound on each exploration for counterexamples (default {MAX_STATES})")
    args = parser.parse_args(argv)
    try:
        if args.max_states < 1:
            raise UserError(f"--max-states {args.max_states}: must be at least 1")
        index = build(Path(args.out), seed=args.seed, max_states=args.max_states)
    except UserError as e:
        print(f"kstep.views.course: {e}", file=sys.stderr)
        return 2
    print(f"course: open {index.resolve().as_uri()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
