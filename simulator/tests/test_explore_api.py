"""What explore()'s docstring tells API users who instrument model.step: the reductions are on by
default, so a wrapped step sees fewer calls than with all three off, and the verdict is the same."""

import kstep
from kstep.engine import explore


def test_the_default_reductions_take_fewer_steps_and_keep_the_verdict():
    ex = kstep.open("qspinlock", "two-waiters")
    calls = []
    step = ex.model.step
    ex.model.step = lambda s, a: (calls.append(a), step(s, a))[1]
    reduced = explore(ex.model, ex.start)
    n_reduced = len(calls)
    calls.clear()
    full = explore(ex.model, ex.start, por=False, symmetry=False, dead_vars=False)
    assert reduced.clean == full.clean and reduced.exhausted and full.exhausted
    assert n_reduced < len(calls)
    assert "reductions are on by default" in " ".join(explore.__doc__.split())
