"""Predict mode: the player asks a scenario's ``[[questions]]`` before the step they are about.

A question anchored ``after X`` (or ``before X``) is answered by the state at index k of the run
(kstep.scenario_spec.questions); the player stops at frame k - 1, where that state is still to come, asks,
and reveals the state only once the student has answered or given up, keeping score.  Answers are
computed here from the run shown, never written down; player.js compares what the student typed
the way ``questions.matches`` compares an answers.toml.
"""

from __future__ import annotations

from ..engine import Model, Trace
from ..scenario_spec import questions, scenario


def scenario_questions(trace: Trace, model: Model) -> tuple:
    """The questions of the bundled scenario the trace runs, when it runs it as the scenario says: a
    question's text may describe that run (who holds what when it is asked), so a counterexample the
    explorer found, or a run under another variant, gets none; so does a scenario file of one's own."""
    if not trace.scenario or trace.scenario not in scenario.bundled(trace.mechanism) or trace.scheduler == "explore":
        return ()
    sc = scenario.load(trace.mechanism, model.scenario_schema, trace.scenario)
    return sc.questions if model.variant.name == (sc.variant or model.default_variant) else ()


def predictions(trace: Trace, model: Model) -> list[dict]:
    """What player.js needs per question reached in this run, in the order of their steps: the state
    index, the question, what kind of answer and the answer itself (its text and its typed value)."""
    out = [prediction(a) for a in questions.answers(model, scenario_questions(trace, model), trace)
           if a.step]  # not None: never reached; not 0: about the initial state (nothing to predict)
    return sorted(out, key=lambda p: p["step"])


def prediction(a: questions.Answer) -> dict:
    """One answered question as predict.js compares it: ``want`` typed, ``text`` as shown."""
    q, value = a.question, a.value
    want = ({"type": "threads", "value": list(value)} if q.kind == "thread" else
            {"type": "bool", "value": "true" if value else "false"} if isinstance(value, bool) else
            {"type": "int", "value": str(value)} if isinstance(value, int) else
            {"type": "str", "value": value})
    hint = {"thread": "thread names, e.g. T1, T2 (or none)", "choose": "one of: " + ", ".join(q.choices),
            "value": "a number (hex is fine: 0x101), a word, or true/false"}[q.kind]
    return {"id": q.id, "step": a.step, "ask": q.ask, "hint": hint, "want": want, "text": questions.text(value)}
