"""The site's litmus pages: a classic shape per page, stepped in the player under every memory model.

``litmus/SHAPE.md`` is generated at each build (never committed) for each of :data:`SHAPES`, from the
committed table of shapes (``kstep/memory/shapes.toml``); ``docs/litmus.md`` lists them:

- ``kstep-litmus SHAPE``: the test, each model's verdict on its ``exists`` clause (computed, never
  written down), and per model the player of one execution with the command that writes it; served
  over HTTP, the student steps it by hand (litmus_live.py; every model but the LKMM, whose .cat files
  the browser lacks);
- ``kstep-litmus-index``: the list of those pages, with a hidden toctree for the site's navigation.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from bokeh.embed import components
from docutils import nodes

from ...lab.source.excerpts import load
from ...memory import arm64, lkmm, power, sc, tso
from ...memory.litmus import parse
from ...memory.stepping import MODEL_TITLES, stepped
from ...memory.verdict import check
from ..export import layout
from ..litmus_live import MODELS as LIVE_MODELS
from ..live import enable_litmus
from .pages import BOKEH, LIVE, KstepDirective, command, doc_link, hidden_toctree, paragraphs, write_if_changed

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
                     {Path(f"{name}.md"): f"# {name}\n\n```{{kstep-litmus}} {name}\n```\n" for name in SHAPES})


class LitmusDirective(KstepDirective):
    required_arguments = 1

    def run(self):
        table = shapes()
        name = self.arguments[0]
        if name not in table:
            raise self.error(f"unknown litmus shape {name!r} (choose from: {', '.join(table)})")
        test = parse(table[name]["litmus"], name)
        out = [nodes.literal_block(table[name]["litmus"].strip(), table[name]["litmus"].strip(), language="text")]
        verdicts = nodes.bullet_list()
        for module in MODULES:
            v = check(test, module)
            verdicts += nodes.list_item("", nodes.paragraph(
                "", f"{MODEL_TITLES[module.NAME]}: the exists clause is {v.result.lower()} reached "
                    f"({'allowed' if v.exists_reachable else 'forbidden'})"))
        out += [nodes.paragraph("", "Each model's verdict on the exists clause, computed when this page was built:"),
                verdicts]
        excerpts = load()["excerpts"]
        for module in MODULES:
            model, trace = stepped(test, module.NAME, excerpts)
            section = nodes.rubric("", f"Under {MODEL_TITLES[module.NAME]}")
            lay = layout(trace, model)
            if module.NAME in LIVE_MODELS:
                enable_litmus(lay, model, table[name]["litmus"])
                self.state.document[LIVE] = True
            script, div = components(lay)
            self.state.document[BOKEH] = True
            out += [section, *paragraphs(HOW["tso" if module.NAME == "tso" else "other"]),
                    nodes.raw("", f'<div class="kstep-animation">{div}</div>\n{script}', format="html"),
                    command(f"kstep litmus {name}.litmus --model {module.NAME} --html {name}-{module.NAME}.html "
                            f"-s {trace.seed}")]
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


DIRECTIVES = {"kstep-litmus": LitmusDirective, "kstep-litmus-index": LitmusIndexDirective}
