"""kstep.memory.compared: a litmus test judged by each memory model in turn, and the notebook questions
asked about that run (notebooks/06-memory-ordering.ipynb): the answer is the models verdict.check
lets reach the exists clause, and a why that names other models than the run's answer is refused."""

import pytest

from kstep.errors import UserError
from kstep.memory import bundled
from kstep.memory.compared import Compared, compared
from kstep.memory.verdict import check
from kstep.scenario_spec import questions
from kstep.views import notebook

NOTEBOOK = "06-memory-ordering"


def test_one_check_per_model_records_what_verdict_check_says():
    test = bundled.load("qspinlock-init-before-tail-no-wmb")
    model, trace = compared(test)
    assert [str(a) for a in trace.actions] == ["sc:check", "tso:check", "arm64:check", "power:check"]
    assert [j.result for j in trace.states[0].threads] == ["", "", "", ""]
    for j in trace.states[-1].threads:
        v = check(test, model.modules[j.name])
        assert (j.result, j.allowed) == (v.result, v.exists_reachable)
    # Another set of models is another run: a question about it is not answered by this run's table.
    assert model.title == test.name and Compared(test, ("power", "lkmm")).title == f"{test.name} (power, lkmm)"


@pytest.mark.parametrize("name, allowed", [("qspinlock-init-before-tail-no-wmb", ("arm64", "power")),
                                           ("qspinlock-init-before-tail", ())])
def test_the_twin_and_the_fixed_test_answer_the_notebook_question(name, allowed):
    """The notebook's question, asked of the broken twin and of the correct test: the same question,
    two runs, two answers; only the twin's agrees with the question's why."""
    model, trace = compared(bundled.load(name))
    q, _ = notebook.notebook_questions(NOTEBOOK)["init-before-tail"]
    (a,) = questions.answers(model, (q,), trace)
    assert a.value == allowed
    if allowed:
        assert f'data-about="{name}"' in notebook.block(NOTEBOOK, trace, model, "init-before-tail")
    else:
        with pytest.raises(UserError, match="does not say this run's answer, none"):
            notebook.block(NOTEBOOK, trace, model, "init-before-tail")


def test_a_why_that_opens_with_more_models_than_the_answer_does_not_say_it():
    names = ("sc", "tso", "arm64", "power")
    why = "tso, arm64, power: everywhere but sc. On arm64 and power ..."
    assert notebook.says(why, "arm64, power")  # which is why says() alone is not enough
    assert notebook.opens_with(why, names, ("tso", "arm64", "power"))
    assert not notebook.opens_with(why, names, ("arm64", "power"))
    assert notebook.opens_with("power only. Not tso, not arm64", names, ("power",))
