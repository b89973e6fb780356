"""The site's generated pages and the directives that fill them from the library.

Every bundled scenario and every broken variant gets a page under ``animations/MECH/`` (written
into the source folder at each build, never committed, only rewritten when its text changes).
A page is a title and one directive; the directive runs the library when Sphinx reads the page:

- ``kstep-scenario MECH NAME``: the description, what to look for, the animation of its scripted
  run, the claims of its text checked against that run, and the command that prints it; when the
  player asks the scenario's questions, the text (which answers them) comes after it, folded;
- ``kstep-counterexample MECH VARIANT``: what the variant breaks and the shortest run in which the
  explorer catches it;
- ``kstep-tso-counterexample MECH VARIANT NAME``: a broken variant's shortest run under x86-TSO, its
  store buffers drawn, with the chapter's claim of what one buffer holds checked against it;
- ``kstep-tso-player MECH VARIANT NAME`` with ``:schedule:``: the run of that schedule under x86-TSO, drawn
  and checked the same way (a run the chapter tells the student to schedule by hand);
- ``kstep-player MECH NAME`` (at the top of a chapter): the player of its main scenario's run, with a
  link to the scenario's page; with ``:timed:`` (and ``:variant: V``), where a chapter tells a seed
  table's story: the scenario's timed run under the committed cost table, time on the x-axis, its
  caption saying when the run ends and who waited, as ``kstep run --timed -c`` prints them;
- ``kstep-animations MECH`` (on a chapter): the list of those pages in lecture order, with each
  description; its hidden toctree makes the theme's previous/next links follow that order;
- ``kstep-exercises MECH`` (on a chapter): the graded exercises found under ``exercises/`` (MECH ``memory``: the
  memory-ordering ones);
- ``kstep-variants MECH`` (instructor guide): every variant against every bundled scenario, from the
  committed verdict table, with the search under x86-TSO beneath sc's where the table has one.
"""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Optional

from bokeh.embed import components
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ... import experiment
from ...engine import parse_schedule
from ...scenario_spec import expect, scenario
from ...memory import bundled
from ...engine.liveness import describe, liveness
from ...engine.model import by_kind
from ...errors import UserError
from ...measure.timed import timed_run
from ...models import MODELS, make_model
from .. import course, predict, seeds, timed
from ..export import layout
from ..live import enable

logger = logging.getLogger(__name__)
GENERATED = "animations"  # the folder of generated pages, inside the site's sources
BOKEH = "kstep_bokeh"  # a doctree attribute: this page embeds a Bokeh document
LIVE = "kstep_live"  # a doctree attribute: a player on this page can be scheduled by hand (interactive.js)
EXERCISES = "exercises"  # beside docs/: exercises/ID/exercise.toml


def page_docname(mech: str, name: str) -> str:
    return f"{GENERATED}/{mech}/{name}"


def broken_name(variant: str) -> str:
    return f"broken-{variant}"


def broken_variants(mech: str) -> list:
    return [v for v in MODELS[mech].variants.values() if v.broken]


def write_pages(app) -> None:
    """Write every generated page that changed and delete those whose scenario or variant is gone."""
    root = Path(app.srcdir) / GENERATED
    wanted = {}
    for mech in MODELS:
        for name in scenario.bundled(mech):
            wanted[Path(mech, f"{name}.md")] = f"# {name}\n\n```{{kstep-scenario}} {mech} {name}\n```\n"
        for v in broken_variants(mech):
            wanted[Path(mech, f"{broken_name(v.name)}.md")] = (
                f"# Broken: {v.name}\n\n```{{kstep-counterexample}} {mech} {v.name}\n```\n")
    write_if_changed(root, wanted)


def write_if_changed(root: Path, wanted: dict) -> None:
    """Make ``root`` hold exactly the pages ``wanted`` (relative path -> text), rewriting only those
    whose text changed."""
    for rel, text in wanted.items():
        path = root / rel
        if not path.is_file() or path.read_text() != text:  # an unchanged page keeps its mtime: no re-read
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if root.is_dir():
        for path in sorted(root.rglob("*"), reverse=True):
            if path.is_file() and path.relative_to(root) not in wanted:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()


def paragraphs(text: str, classes=()) -> list[nodes.paragraph]:
    return [nodes.paragraph(p, " ".join(p.split()), classes=list(classes))
            for p in text.strip().split("\n\n") if p.strip()]


def labelled(label: str, text: str, classes=()) -> nodes.paragraph:
    para = nodes.paragraph(classes=list(classes))
    para += nodes.strong(label, label)
    para += nodes.Text(" " + " ".join(text.split()))
    return para


def command(text: str) -> nodes.literal_block:
    return nodes.literal_block(text, text, language="sh")


def doc_link(docname: str, text: str) -> addnodes.pending_xref:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=True,
                                refwarn=True)
    ref += nodes.inline(text, text)
    return ref


def hidden_toctree(directive: SphinxDirective, docnames: list[str]) -> addnodes.toctree:
    """A toctree that puts the pages in the site's navigation under the page holding it."""
    tree = addnodes.toctree()
    tree["parent"] = directive.env.docname
    tree["entries"] = [(None, d) for d in docnames]
    tree["includefiles"] = list(docnames)
    tree["maxdepth"] = -1
    tree["glob"] = False
    tree["hidden"] = True
    tree["caption"] = None
    tree["titlesonly"] = True
    tree["numbered"] = 0
    return tree


class KstepDirective(SphinxDirective):
    has_content = False

    def mechanism(self) -> str:
        mech = self.arguments[0]
        if mech not in MODELS:
            raise self.error(f"unknown mechanism {mech!r} (choose from: {', '.join(MODELS)})")
        return mech

    def animation(self, trace, model, live: bool = True) -> nodes.raw:
        """The trace's player, embedded; BokehJS itself comes from the site's _static folder.  Its
        bundled scenario can also be scheduled by hand (interactive mode, over HTTP), under the trace's
        memory model (x86-TSO: each CPU's drains are choices too); ``live`` False: it only plays (a timed
        run, whose time panel is the recorded run's)."""
        lay = layout(trace, model)
        if live:
            enable(lay, trace, model)
            self.state.document[LIVE] = True
        script, div = components(lay)
        self.state.document[BOKEH] = True
        return nodes.raw("", f'<div class="kstep-animation">{div}</div>\n{script}', format="html")


class ScenarioDirective(KstepDirective):
    required_arguments = 2

    def run(self):
        mech, name = self.mechanism(), self.arguments[1]
        model, sc, trace = course.scripted_run(mech, name)
        intro = paragraphs(sc.description) + [labelled("What to look for:", sc.look_for, classes=["kstep-look-for"])]
        checked = []
        facts = nodes.paragraph("", f"{len(trace)} steps under ")
        if sc.schedule:
            facts += [nodes.Text("its scripted schedule "), nodes.literal(sc.schedule, sc.schedule),
                      nodes.Text(" (then round-robin)" if len(parse_schedule(sc.schedule)) < len(trace) else "")]
        else:
            facts += nodes.Text(f"the random scheduler, seed {course.SEED}")
        if trace.cycle_start is not None:
            facts += nodes.Text(f"; steps {trace.cycle_start + 1} to {len(trace)} repeat forever")
        elif sc.forever:
            facts += nodes.Text("; its runs never end, and this one stops there")
        # How the run ends is for the student to predict: the banner at its last step says it.
        facts += nodes.Text("; the banner at its last step says how it ends.")
        if sc.expect:
            failed = {e.claim: why for e, why in expect.check(model, trace, sc.expect)}
            for claim, why in failed.items():
                logger.warning(f"{mech}/{name}: claim {claim!r} does not hold on its run: {why}",
                               location=(self.env.docname, self.lineno))
            checked.append(nodes.paragraph("", "Each of these sentences is checked against the run above:"))
            claims = nodes.bullet_list()
            for e in sc.expect:
                claims += nodes.list_item("", nodes.paragraph("", f"{'✗' if e.claim in failed else '✓'} {e.claim}"))
            checked.append(claims)
        if not predict.scenario_questions(trace, model):
            out = intro + [facts, self.animation(trace, model)] + checked
        else:  # the scenario's text tells the answers: it waits, folded, below the player that asks
            out = [facts, self.animation(trace, model),
                   nodes.raw("", '<details class="kstep-told"><summary>How this run goes (it answers the '
                                 'questions the player asks: open it once you have answered)</summary>', format="html"),
                   *intro, *checked, nodes.raw("", "</details>", format="html")]
        out.append(nodes.paragraph("", "The same run as a step table, with ? for you to work out (-c shows "
                                       "the answers: practice, it prints them):"))
        out.append(command(f"kstep run {mech} --scenario {name}" + ("" if sc.schedule else f" -s {course.SEED}")))
        return out


class CounterexampleDirective(KstepDirective):
    required_arguments = 2

    def run(self):
        mech, variant = self.mechanism(), self.arguments[1]
        if variant not in MODELS[mech].variants:
            raise self.error(f"unknown variant {variant!r} of {mech}")
        model = make_model(mech, variant)
        livelocks = course.livelock_scenarios(mech, variant)
        if livelocks:  # no invariant breaks (the table says so): the harm is a lasso
            return self.livelock(mech, variant, model, livelocks[0])
        litmus = model.variant.params.get("litmus")
        found, searched = (None, []) if litmus else course.counterexample(mech, variant)
        sources = model.sources()
        out = paragraphs(model.variant.doc)
        steps = nodes.bullet_list()
        for label in model.variant.replaces:
            item = nodes.paragraph()
            item += nodes.literal(label, label)
            if label in sources:
                item += nodes.Text(" (")
                item += nodes.literal(str(sources[label]), str(sources[label]))
                item += nodes.Text(")")
            steps += nodes.list_item("", item)
        if len(steps):
            out += [nodes.paragraph("", "The steps it replaces:"), steps]
        if litmus:  # only a weaker memory model than sc and tso breaks it: the mechanism model never does
            allowed = [m for m, r in bundled.verdicts(litmus).items() if r != "Never"]
            out.append(nodes.paragraph("", "Under sc and under x86's tso (kstep explore --memory-model tso) every "
                                           "bundled scenario stays clean: x86 keeps stores in order. The ordering "
                                           f"it loses is the bundled litmus test {litmus}, whose bad outcome "
                                           f"{', '.join(allowed) or 'no model'} allow:"))
            out.append(command(f"kstep litmus {litmus} --model all"))
            return out
        if found is None:
            out.append(nodes.paragraph("", "The explorer finds no counterexample on the bundled scenarios: "
                                           + "; ".join(searched) + "."))
            return out
        v = found.violation
        out.append(labelled("What the explorer finds:",
                            f"on scenario {found.scenario}, {v.title} after {len(found.counterexample)} steps "
                            f"({found.states} states searched): {v.message}", classes=["kstep-violation"]))
        out.append(paragraphs("The animation is the shortest run that does it; its last step breaks the check, "
                              "and the banner at the end names it.")[0])
        out.append(self.animation(found.counterexample, model))
        out.append(command(f"kstep explore {mech} --scenario {found.scenario} --variant {variant} --html cex.html"))
        return out

    def livelock(self, mech, variant, model, name):
        """A variant that breaks no invariant but livelocks: explore --liveness's lasso on the scenario."""
        sc = scenario.load(mech, model.scenario_schema, name)
        result = liveness(model, model.initial(sc.config), scenario=name, config=sc.config)
        lasso = result.livelock
        out = paragraphs(model.variant.doc)
        out.append(labelled("What the explorer finds:",
                            f"on scenario {name}, explore --liveness finds {describe(lasso.lasso)} "
                            f"({result.states} states searched); no invariant breaks on any bundled scenario",
                            classes=["kstep-violation"]))
        out.append(paragraphs("The animation is the lasso: its last steps repeat forever, and nobody "
                              "progresses in them.")[0])
        out.append(self.animation(lasso, model))
        out.append(command(f"kstep explore {mech} --scenario {name} --variant {variant} --liveness --html lasso.html"))
        return out


class TsoRunDirective(KstepDirective):
    """A run under x86-TSO, played with its store buffers drawn and schedulable by hand under tso, with the
    chapter's claim of what one buffer holds checked against it: ``:step: K``, ``:cpu: B`` and ``:holds:
    ENTRY; ENTRY`` say that after step K CPU B's buffer holds exactly those stores, oldest first, as the
    step table writes them (a build warning when not)."""
    required_arguments = 3
    option_spec = {"step": directives.nonnegative_int, "cpu": directives.nonnegative_int,
                   "holds": directives.unchanged_required}

    def claim(self, mech: str, variant: str, model, trace) -> nodes.paragraph:
        step, cpu, holds = (self.options.get(k) for k in ("step", "cpu", "holds"))
        if step is None or cpu is None or not holds:
            raise self.error("give :step:, :cpu: and :holds:, the claim checked against the run")
        claimed = [e.strip() for e in holds.split(";")]
        held = buffer_after(model, trace, step, cpu)
        if held != claimed:
            logger.warning(f"{mech} {variant} under tso: after step {step} CPU {cpu}'s store buffer holds "
                           f"{held or 'nothing'}, not {claimed}", location=(self.env.docname, self.lineno))
        action = trace.actions[step - 1] if 0 < step <= len(trace) else None
        after = f"step {step} ({action.actor}: {action.label})" if action else f"step {step}"
        return nodes.paragraph("", f"{'✓' if held == claimed else '✗'} After {after}, CPU {cpu}'s store buffer "
                                   f"holds {'; '.join(claimed)}{', oldest first' if len(claimed) > 1 else ''} "
                                   f"(checked against the run when this page was built).")


def buffer_after(model, trace, step: int, cpu: int) -> Optional[list[str]]:
    """What CPU ``cpu``'s store buffer holds after step ``step`` of the tso ``trace``, oldest first, as the
    step table writes each store; None when the run has no such step or CPU."""
    if step > len(trace) or cpu >= len(trace.states[step][-1]):
        return None
    state = trace.states[step]
    return [model.entry_text(state, e) for e in state[-1][cpu]]


class TsoCounterexampleDirective(TsoRunDirective):
    """``kstep-tso-counterexample MECH VARIANT SCENARIO``: the broken variant's shortest counterexample on the
    scenario under x86-TSO, found when the site is built, and the buffer claim (TsoRunDirective)."""

    def run(self):
        mech, variant, name = self.mechanism(), self.arguments[1], self.arguments[2]
        ex = experiment.open(mech, name, variant).under("tso")
        model, result = ex.model, ex.explore()
        trace, v = result.counterexample, result.violation
        if trace is None or v is None:
            raise self.error(f"{mech} variant {variant} breaks nothing on {name} under tso")
        claim = self.claim(mech, variant, model, trace)
        return [labelled("What the explorer finds under x86-TSO:",
                         f"variant {variant} on scenario {name}, store buffers of {model.depth}: {v.title} after "
                         f"{len(trace)} steps ({result.states} states searched): {v.message}",
                         classes=["kstep-violation"]),
                claim, self.animation(trace, model),
                command(f"kstep explore {mech} --scenario {name} --variant {variant} --memory-model tso "
                        f"--json cex.json && kstep show cex.json --html cex.html")]


class TsoPlayerDirective(TsoRunDirective):
    """``kstep-tso-player MECH VARIANT SCENARIO`` with ``:schedule: S``: the run of that scripted schedule
    under x86-TSO (drains are ``SB<cpu>`` entries; round-robin after its end), and the buffer claim
    (TsoRunDirective): a chapter's what-to-look-for in a run it schedules by hand."""
    option_spec = {**TsoRunDirective.option_spec, "schedule": directives.unchanged_required}

    def run(self):
        mech, variant, name = self.mechanism(), self.arguments[1], self.arguments[2]
        schedule = self.options.get("schedule")
        if not schedule:
            raise self.error("give :schedule:, the run the claim is about")
        ex = experiment.open(mech, name, variant).under("tso")
        try:
            trace = ex.run(schedule=schedule)
        except UserError as e:
            raise self.error(f"{mech} {variant} {name} under tso: {e}") from None
        return [self.claim(mech, variant, ex.model, trace), self.animation(trace, ex.model),
                command(f"kstep run {mech} --scenario {name} --variant {variant} --memory-model tso "
                        f"-P '{schedule}' -c")]


class PlayerDirective(KstepDirective):
    """A chapter opens with its mechanism at work: the main scenario's player, before any text.  With
    ``:timed:`` (``:variant: V``, else the kernel's own) it is the scenario's timed run instead."""
    required_arguments = 2
    option_spec = {"timed": directives.flag, "variant": directives.unchanged_required}

    def run(self):
        mech, name = self.mechanism(), self.arguments[1]
        if name not in scenario.bundled(mech):
            raise self.error(f"unknown scenario {name!r} of {mech} (choose from: {', '.join(scenario.bundled(mech))})")
        if "timed" in self.options:
            return self.timed(mech, name, self.options.get("variant"))
        if "variant" in self.options:
            raise self.error(":variant: goes with :timed: (the chapter's opening player runs the scenario's own)")
        model, _, trace = course.scripted_run(mech, name)
        caption = nodes.paragraph(classes=["kstep-chapter-player"])
        caption += nodes.Text("The chapter's main scenario, ")
        caption += doc_link(page_docname(mech, name), name)
        caption += nodes.Text(", step by step: press Play, or step through it; served over HTTP, the panel above the "
                              "player lets you schedule the threads yourself.  Its page says what to look for.")
        return [caption, self.animation(trace, model)]

    def timed(self, mech: str, name: str, variant: Optional[str]) -> list:
        """The timed run's player (it only plays: hand scheduling would leave its time panel behind), its
        caption from the run's stats, and the command that prints them."""
        try:
            ex, trace = timed_run(mech, name, variant)
        except (UserError, RuntimeError) as e:
            raise self.error(f"{mech} {name} timed: {e}") from None
        stats = trace.stats
        waited = ", ".join(f"{a} {w} ns" for a, w in stats["waiting_ns"].items())
        queued = ", ".join(f"{line} {w} ns" for line, w in stats["line_queue_ns"].items())
        said = (f"{name} under {ex.model.variant.name}, timed under the committed cost table (the earliest "
                f"clock moves next): the run ends at {timed.makespan(trace)} ns. "
                + (f"Blocked, waiting: {waited}." if waited else "No thread is ever blocked.")
                + (f" Steps queued for cache lines: {queued}." if queued else ""))
        caption = nodes.paragraph(said, said, classes=["kstep-timed-player"])
        return [caption, self.animation(trace, ex.model, live=False),
                command(f"kstep run {mech} --scenario {name} --variant {ex.model.variant.name} --timed -c")]


class AnimationsDirective(KstepDirective):
    required_arguments = 1

    def run(self):
        mech = self.mechanism()
        model = make_model(mech)
        docnames = []
        scenarios = nodes.bullet_list(classes=["kstep-animations"])
        for name in scenario.lecture_order(mech):
            sc = scenario.load(mech, model.scenario_schema, name)
            docnames.append(page_docname(mech, name))
            head = nodes.paragraph()
            head += doc_link(docnames[-1], name)
            scenarios += nodes.list_item("", head, *paragraphs(sc.description),
                                         labelled("What to look for:", sc.look_for, classes=["kstep-look-for"]))
        broken = nodes.bullet_list(classes=["kstep-animations"])
        for v in broken_variants(mech):
            docnames.append(page_docname(mech, broken_name(v.name)))
            head = nodes.paragraph()
            head += doc_link(docnames[-1], v.name)
            broken += nodes.list_item("", head, *paragraphs(v.doc))
        out = [nodes.rubric("", "Scenarios"), scenarios]
        if len(broken):
            out += [nodes.rubric("", "Broken variants: the shortest run that breaks a check"), broken]
        return out + [hidden_toctree(self, docnames)]


def exercises(root: Path, mech: str) -> list[tuple[Path, dict]]:
    """(folder, exercise.toml) of every exercise for ``mech``, in folder order."""
    found = []
    for path in sorted(root.glob("*/exercise.toml")):
        meta = tomllib.loads(path.read_text())
        if mech == meta.get("mechanism") or mech in meta.get("mechanisms", ()):
            found.append((path.parent, meta))
    return found


# exercise.toml's mechanism for the memory-ordering exercises: they span the mechanisms' litmus tests,
# and the memory-ordering chapter, which is no mechanism's, lists them
MEMORY_ORDERING = "memory"


class ExercisesDirective(KstepDirective):
    required_arguments = 1

    def run(self):
        mech = self.arguments[0] if self.arguments[0] == MEMORY_ORDERING else self.mechanism()
        root = Path(self.env.srcdir).parent / EXERCISES
        if root.is_dir():
            self.env.note_dependency(str(root))  # a new exercise folder changes the folder's mtime
        found = exercises(root, mech)
        for folder, _ in found:
            self.env.note_dependency(str(folder / "exercise.toml"))
        if not found:
            return [nodes.paragraph("", f"No graded exercise in exercises/ covers {mech}.")]
        items = nodes.bullet_list(classes=["kstep-exercises"])
        for folder, meta in found:
            para = nodes.paragraph()
            para += nodes.strong("", meta.get("title", folder.name))
            details = [f"exercises/{folder.name}/"]
            if meta.get("practice"):  # released without an autograder (kstep.grading.release)
                details.insert(0, "practice, not graded")
            elif isinstance(meta.get("points"), dict):
                details.insert(0, f"{sum(meta['points'].values())} points")
            if meta.get("kind"):
                details.insert(0, meta["kind"])
            para += nodes.Text(f" ({', '.join(details)})")
            items += nodes.list_item("", para)
        return [items]


class VariantsDirective(KstepDirective):
    required_arguments = 1

    def run(self):
        mech = self.mechanism()
        table = json.loads(resources.files("kstep").joinpath("verdicts.json").read_text())["verdicts"].get(mech, {})
        names = scenario.bundled(mech)
        rows = [["variant", "kind", "what it is"] + names]
        variants = MODELS[mech].variants
        for v in (variants[n] for names in by_kind(variants).values() for n in names):
            cells = [f"{v.name}{' (broken)' if v.broken else ''}", v.dated, " ".join(v.doc.split())]
            for name in names:
                row = table.get(name, {}).get(v.name)
                if row is None:
                    cells.append("not in the table")
                elif "tso" in row:  # the same search under x86-TSO, beneath sc's
                    cells.append((verdict_text(row), tso_text(row["tso"])))
                else:
                    cells.append(verdict_text(row))
            rows.append(cells)
        out = [grid(rows, classes=["kstep-variants"])]
        whys = sorted({r["tso"]["why"] for by_variant in table.values() for r in by_variant.values()
                       if r.get("tso", {}).get("verdict") == "refused"})
        if any("tso" in r for by_variant in table.values() for r in by_variant.values()):
            said = (f"Beneath each verdict, tso: the same search with {mech}'s shared memory behind per-CPU FIFO "
                    "store buffers (x86-TSO, kstep explore --memory-model tso), with the scenario's buffer "
                    "depth and the same state bound; a scenario that is not explored has no tso verdict either."
                    + (" Refused where: " + "; ".join(whys) + "." if whys else ""))
            out.append(nodes.paragraph(said, said))
        return out


def verdict_text(row: dict) -> str:
    """One search's verdict as the table shows it."""
    if row["verdict"] == "violation":
        return f"{row['kind']}: {row['invariant']} in {row['steps']} steps"
    return row["verdict"]


def tso_text(row: dict) -> str:
    """The tso search's verdict: refused, or the verdict with the store-buffer depth it was found at."""
    if row["verdict"] == "refused":
        return "tso: refused"
    return f"tso (buffers of {row['store_buffer']}): {verdict_text(row)}"


class SeedsDirective(KstepDirective):
    """The thread's numbers beside the model's, from the committed bench output (views/seeds.py)."""

    required_arguments = 1

    def run(self):
        mech = self.mechanism()
        if mech not in seeds.HEADERS:
            raise self.error(f"no seed table for {mech!r} (one of: {', '.join(seeds.HEADERS)})")
        rows, comparable = seeds.table(mech)
        return [grid(rows, classes=["kstep-seeds"]), nodes.paragraph(comparable, comparable)]


def grid(rows: list[list], classes=()) -> nodes.table:
    """A plain docutils table, the first row its header."""
    width = len(rows[0])
    table = nodes.table(classes=list(classes))
    group = nodes.tgroup(cols=width)
    table += group
    group += [nodes.colspec(colwidth=1) for _ in range(width)]
    for part, chunk in ((nodes.thead(), rows[:1]), (nodes.tbody(), rows[1:])):
        for cells in chunk:
            row = nodes.row()
            for cell in cells:  # a cell of text, or of lines, each its own paragraph
                row += nodes.entry("", *(nodes.paragraph(t, t) for t in ((cell,) if isinstance(cell, str) else cell)))
            part += row
        group += part
    return table


DIRECTIVES = {
    "kstep-scenario": ScenarioDirective,
    "kstep-counterexample": CounterexampleDirective,
    "kstep-player": PlayerDirective,
    "kstep-tso-counterexample": TsoCounterexampleDirective,
    "kstep-tso-player": TsoPlayerDirective,
    "kstep-animations": AnimationsDirective,
    "kstep-exercises": ExercisesDirective,
    "kstep-variants": VariantsDirective,
    "kstep-seeds": SeedsDirective,
}
