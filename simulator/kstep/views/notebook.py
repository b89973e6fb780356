"""Notebook predictions: the question is asked in the cell's output, the answer shown only once answered.

A notebook's questions are in the course's ``[[questions]]`` format (kstep.scenario_spec.questions), in
``kstep/notebook_questions/<notebook>.toml`` rather than in the notebook, each with ``why``: the
explanation shown with the answer.  ``ask = asker("<notebook>")`` in the notebook's first cell, then
``ask(trace, model, "id")`` computes the answer from that run and displays one block: the question, a
field for the prediction, and "Show me".  The answer and its why are revealed by the block's script
(predict.js compares as the player does) once the student has answered or given up, so neither the
notebook's source nor the output of Run All gives an answer away.  Every why must say the answer the
run gives, so a model change that changes an answer stops the notebook instead of leaving its text wrong.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from html import escape
from importlib import resources
from typing import Callable

from ..engine import Model, Trace
from ..scenario_spec import questions, scenario
from ..scenario_spec.scenario import QUESTION, Key, List, Str, Table
from ..errors import UserError
from .predict import prediction

BLOCK = "kstep-predict-block"  # the class of a question block: the only place an answer may be written
# The class of an output that shows a run's answers outright (verdict_table); its data-about names the
# run as a question block's does, and no such output may come before a question about the same run.
ANSWERS = "kstep-answers"
NOTEBOOK_QUESTION = Table({**QUESTION.keys, "why": Key(Str(doc="the explanation shown with the answer"))},
                          rules=QUESTION.rules)
FILE = Table({"questions": Key(List(NOTEBOOK_QUESTION, 1, 32, "the notebook's questions"))})


@lru_cache(maxsize=None)
def notebook_questions(notebook: str) -> dict[str, tuple[questions.Question, str]]:
    """The questions of ``notebook`` by id: (the parsed question, its why)."""
    path = resources.files("kstep").joinpath("notebook_questions", f"{notebook}.toml")
    where = f"notebook_questions/{notebook}.toml"
    if not path.is_file():
        raise UserError(f"{where}: no such file")
    try:
        table = FILE.check(scenario.read_toml(path.read_text(), where), "")
        questions.check_ids(table["questions"], where)
    except (scenario.Invalid, questions.ExpectError) as e:
        raise UserError(f"{where}: {e}") from None
    return {q["id"]: (q["parsed"], " ".join(q["why"].split())) for q in table["questions"]}


def says(why: str, answer: str) -> bool:
    """Does the explanation state the answer (as a whole word or number, any case)?"""
    return re.search(rf"(?<![\w-]){re.escape(answer)}(?![\w-])", why, re.IGNORECASE) is not None


def opens_with(why: str, names: tuple, answer: tuple) -> bool:
    """Does a thread answer's explanation open (before its first '.' or ':') with exactly the answer's
    names of the run's names?  "tso, arm64, power" also says "arm64, power", so says() is not enough."""
    opening = re.split(r"[.:]", why, maxsplit=1)[0]
    return {n for n in names if says(opening, n)} == set(answer)


def block(notebook: str, trace: Trace, model: Model, qid: str) -> str:
    """The question block of question ``qid`` asked about ``trace``."""
    if qid not in notebook_questions(notebook):
        raise UserError(f"notebook_questions/{notebook}.toml has no question {qid!r}")
    q, why = notebook_questions(notebook)[qid]
    questions.validate(model, (q,))
    (a,) = questions.answers(model, (q,), trace)
    if a.step is None:
        raise UserError(f"question {qid}: the run never gets to {q.at}")
    p = prediction(a)
    names = tuple(t.name for t in trace.states[0].threads) if q.kind == "thread" else ()
    if not says(why, p["text"]) or (names and not opens_with(why, names, a.value)):
        raise UserError(f"question {qid}: its why does not say this run's answer, {p['text']}")
    if names:  # the run's own names: a comparison of memory models has no T1, T2
        p["hint"] = "names, some of: " + ", ".join(names) + "; or none"
    data = json.dumps({"want": p["want"], "text": p["text"], "why": why}).replace("<", "\\u003c")
    return (f'<div class="{BLOCK}" id="kstep-ask-{escape(notebook)}-{escape(qid)}" data-about="{escape(model.title)}" '
            f'style="border-left: 6px solid #555555; padding: 4px 10px; margin: 6px 0">'
            f'<p><b>Predict:</b> {escape(" ".join(q.ask.split()))} <i>({escape(p["hint"])})</i></p>'
            '<input type="text" size="30" aria-label="your prediction"> <button class="kstep-check">Check</button> '
            '<button class="kstep-show">Show me</button><div class="kstep-reveal" aria-live="polite"></div>'
            f'<script type="application/json">{data}</script>'
            f'<script>{script()}</script></div>')


def verdict_table(trace: Trace, model: Model) -> str:
    """The last state of a kstep.memory.compared run: each model's verdict on the test's exists clause.
    An answer shown outright, so it carries ANSWERS and goes below the questions about the same run."""
    last = trace.states[-1].threads
    head = "".join(f"<th>{escape(j.name)}</th>" for j in last)
    cells = "".join(f"<td>{escape(j.result)}</td>" for j in last)
    return (f'<div class="{ANSWERS}" data-about="{escape(model.title)}"><p><b>{escape(model.title)}</b>: '
            f'is the exists clause reachable?</p><table><tr>{head}</tr><tr>{cells}</tr></table></div>')


@lru_cache(maxsize=1)
def script() -> str:
    """The block's script: the block it sits in reveals the answer once a prediction is checked."""
    compare = resources.files(__package__).joinpath("predict.js").read_text()
    return compare + """
(function (root) {
  const data = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  const input = root.querySelector("input"), out = root.querySelector(".kstep-reveal");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]);
  function reveal(given) {
    const right = given !== null && matches(data.want, given);
    out.innerHTML = "<p>" + (right ? "&#10003; right: " : given === null ? "The answer: " : "&#10007; not quite; the answer: ") +
      "<b>" + esc(data.text) + "</b></p><p>" + esc(data.why) + "</p>";
    input.disabled = true;
    root.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  }
  root.querySelector(".kstep-check").onclick = () => { if (input.value.trim() !== "") reveal(input.value); };
  root.querySelector(".kstep-show").onclick = () => reveal(null);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && input.value.trim() !== "") reveal(input.value); });
})(document.currentScript.parentElement);
"""


def asker(notebook: str) -> Callable[[Trace, Model, str], None]:
    """``ask(trace, model, id)``: display the block of one of ``notebook``'s questions."""
    notebook_questions(notebook)  # a missing or broken file stops the notebook at its first cell

    def ask(trace: Trace, model: Model, qid: str) -> None:
        from IPython.display import HTML, display

        display(HTML(block(notebook, trace, model, qid)))

    return ask

