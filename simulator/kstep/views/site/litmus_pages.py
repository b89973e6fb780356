"""The site's litmus pages: a classic shape per page, stepped in the player under every memory model.

``litmus/SHAPE.md`` is generated at each build (never committed) for each of :data:`SHAPES`, from the
committed table of shapes (``kstep/memory/shapes.toml``), and ``litmus/NAME.md`` for each bundled
mechanism test (``kstep/scenarios/litmus/``); ``docs/litmus.md`` lists the shapes:

- ``kstep-litmus NAME``: the test, each model's verdict on its ``exists`` clause (computed, never
  written down), and the player of one execution with the command that writes it: per model for a
  shape, under arm64 for a mechanism test (under the LKMM when it takes a lock or RCU, which the
  hardware models do not); served over HTTP, the student steps it by hand under every model
  (litmus_live.py; the LKMM from the copy of the tree's .bell and .cat files the site's zip ships);
- ``kstep-litmus-index``: the list of the shape pages, with a hidden toctree for the site's navigation;
- ``kstep-litmus-verdicts NAME...`` (on a chapter): a table of the named tests' verdicts per model,
  computed at build time, with a link to each test's page.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from bokeh.embed import components
from docutils import nodes

from ...source.excerpts import load
from ...memory import arm64, bundled, lkmm, power, sc, tso
from ...memory.hardware import lkmm_only_use
from ...memory.litmus import parse
from ...memory.stepping import MODEL_TITLES, stepped
from ...memory.verdict import check
from ..export import layout
from ..litmus_live import MODELS as LIVE_MODELS
from ..live import enable_litmus
from .pages import BOKEH, LIVE, KstepDirective, command, doc_link, grid, hidden_toctree, paragraphs, write_if_changed

FOLDER = "litmus"  # the generated pages, inside the site's sources
SHAPES = ("SB", "MP", "MP+wmb+rmb", "LB", "IRIW")
MODULES = (sc, tso, arm64, power, lkmm)
HOW = {
    "tso": "x86-TSO runs operationally: each store goes into its CPU's store buffer, the buffer drains to memory "
           "in order, a load reads its own buffer first, and smp_mb() waits for the buffer to empty. The run "
           "shown is the first seed whose run reaches the exists clause, when one does.",
    "other": "The model fixes one execution (one reaching the exists clause when the model allows it, else one "
             "that it forbids) and reveals its events one by one, in an order the model allows, each followed "
             "by its rf, co and fr edges; the last step checks the axioms, and a forbidden execution ends with "
             "its cycle named after the axiom it breaks.",
}


def shapes() -> dict[str, dict]:
    table = tomllib.loads(resources.files("kstep.memory").joinpath("shapes.toml").read_text())["shape"]
    return {s["name"]: s for s in table}


def write_pages(app) -> None:
    write_if_changed(Path(app.srcdir) / FOLDER,
                     {Path(f"{name}.md"): f"# {name}\n\n```{{kstep-litmus}} {name}\n```\n"
                      for name in (*SHAPES, *bundled.names())})


def source(name: str) -> str | None:
    """The text of a classic shape or a bundled mechanism test, or None for neither."""
    table = shapes()
    if name in table:
        return table[name]["litmus"]
    return bundled.path(name).read_text() if name in bundled.names() else None


def verdicts(name: str) -> dict[str, str]:
    """Each model's verdict on the test's exists clause: allowed, forbidden or n/a (a hardware model
    on a test that takes a lock or RCU)."""
    text = source(name)
    if text is None:
        raise ValueError(f"unknown litmus test {name!r}")
    test = parse(text, name)
    lkmm_only = lkmm_only_use(test) is not None
    return {m.NAME: "n/a" if lkmm_only and m is not lkmm else
            "allowed" if check(test, m).exists_reachable else "forbidden" for m in MODULES}


class LitmusDirective(KstepDirective):
    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        text = source(name)
        if text is None:
            raise self.error(f"unknown litmus test {name!r} (choose from: {', '.join([*shapes(), *bundled.names()])})")
        test = parse(text, name)
        out = [nodes.literal_block(text.strip(), text.strip(), language="text")]
        items = nodes.bullet_list()
        for model, verdict in verdicts(name).items():
            items += nodes.list_item("", nodes.paragraph("", f"{MODEL_TITLES[model]}: {verdict}"))
        out += [nodes.paragraph("", "Each model's verdict on the exists clause, computed when this page was built "
                                    "(n/a: the test takes a lock or RCU, which only the LKMM defines):"), items]
        excerpts = load()["excerpts"]
        played = MODULES if name in SHAPES else ((lkmm,) if lkmm_only_use(test) else (arm64,))
        for module in played:
            model, trace = stepped(test, module.NAME, excerpts)
            section = nodes.rubric("", f"Under {MODEL_TITLES[module.NAME]}")
            lay = layout(trace, model)
            if module.NAME in LIVE_MODELS:
                enable_litmus(lay, model, text)
                self.state.document[LIVE] = True
            script, div = components(lay)
            self.state.document[BOKEH] = True
            out += [section, *paragraphs(HOW["tso" if module.NAME == "tso" else "other"]),
                    nodes.raw("", f'<div class="kstep-animation">{div}</div>\n{script}', format="html"),
                    command(f"kstep litmus {name if name in bundled.names() else name + '.litmus'} "
                            f"--model {module.NAME} --html {name}-{module.NAME}.html -s {trace.seed}")]
        return out


class LitmusIndexDirective(KstepDirective):
    has_content = False

    def run(self):
        table = shapes()
        items = nodes.bullet_list(classes=["kstep-animations"])
        for name in SHAPES:
            head = nodes.paragraph()
            head += doc_link(f"{FOLDER}/{name}", name)
            items += nodes.list_item("", head, nodes.paragraph("", table[name]["source"]))
        return [items, hidden_toctree(self, [f"{FOLDER}/{name}" for name in SHAPES])]


class LitmusVerdictsDirective(KstepDirective):
    required_arguments = 1
    optional_arguments = 40

    def run(self):
        unknown = [name for name in self.arguments if source(name) is None]
        if unknown:
            raise self.error(f"unknown litmus test(s): {', '.join(unknown)}")
        rows = [["test", *(MODEL_TITLES[m.NAME] for m in MODULES)]]
        rows += [[name, *verdicts(name).values()] for name in self.arguments]
        links = nodes.paragraph("", "Stepped in the player: ")
        for i, name in enumerate(self.arguments):
            links += [nodes.Text(", " if i else ""), doc_link(f"{FOLDER}/{name}", name)]
        pages = [f"{FOLDER}/{name}" for name in self.arguments if name not in SHAPES]
        return [grid(rows, classes=["kstep-litmus-verdicts"]), links,
                *([hidden_toctree(self, pages)] if pages else [])]


DIRECTIVES = {"kstep-litmus": LitmusDirective, "kstep-litmus-index": LitmusIndexDirective,
              "kstep-litmus-verdicts": LitmusVerdictsDirective}
