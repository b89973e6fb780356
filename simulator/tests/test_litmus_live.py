"""A litmus test stepped by hand (litmus_live.py): the choices a litmus page offers over ``kstep serve``.

Under x86-TSO every sequence of choices (a CPU's next instruction or its buffer's drain) ends in a final
state the model allows, and every state the model allows is the end of some sequence; under the axiomatic
models every sequence of reveals ends on the verdict of the execution the page shows, naming the axiom a
forbidden one breaks.  Going back and choosing again branches the run."""
import io
import tomllib
import zipfile
from importlib import resources

import pytest

from kstep.errors import UserError
from kstep.memory import arm64, power, sc, tso
from kstep.memory.litmus import parse
from kstep.memory.stepping import TsoMachine
from kstep.memory.verdict import check
from kstep.views import live
from kstep.views.litmus_live import LitmusSession, candidates

SHAPES = {s["name"]: s["litmus"] for s in
          tomllib.loads(resources.files("kstep.memory").joinpath("shapes.toml").read_text())["shape"]}
TSO_SHAPES = ("SB", "SB+mbs", "MP", "LB", "IRIW")


def ends(session):
    """Every final state a sequence of the session's choices reaches from step 0, each choice taken
    through the session (a choice at an earlier step branches the run there)."""
    out, seen = set(), set()

    def walk(k):
        state = session.states[k]
        if state in seen:  # another order reached this state: its ends are counted
            return
        seen.add(state)
        choices = session.view(k)["choices"]
        if not choices:
            out.add(session.model.outcome(state))
        for c in choices:
            session.step(c["action"], at=k)
            walk(k + 1)

    walk(0)
    return out


@pytest.mark.parametrize("name", TSO_SHAPES)
def test_every_tso_choice_sequence_ends_in_a_state_tso_allows_and_reaches_them_all(name):
    session = LitmusSession(SHAPES[name], name, "tso")
    allowed = set(check(parse(SHAPES[name], name), tso).states)
    assert ends(session) == allowed


def test_sbs_weak_outcome_by_hand_then_a_branch_that_drains_first():
    session = LitmusSession(SHAPES["SB"], "SB", "tso")
    assert [c["action"] for c in session.view()["choices"]] == ["P0:WRITE_ONCE", "P1:WRITE_ONCE"]
    for action in ("P0:WRITE_ONCE", "P1:WRITE_ONCE", "P0:READ_ONCE", "P1:READ_ONCE", "P0:drain", "P1:drain"):
        view = session.step(action)
    assert view["outcome"] == "finished" and view["choices"] == []
    assert session.model.outcome(session.states[-1]) == (("0:r0", 0), ("1:r0", 0))
    assert "the exists clause holds" in view["board"]["litmus-boxes"]["body"][-1]
    # Back at step 2 (both stores buffered), P0's store drains before P1 reads: P1 reads x=1.
    view = session.step("P0:drain", at=2)
    assert view["steps"] == 3 and view["schedule"] == "P0:WRITE_ONCE P1:WRITE_ONCE P0:drain"
    for action in ("P1:READ_ONCE", "P0:READ_ONCE", "P1:drain"):
        view = session.step(action)
    assert session.model.outcome(session.states[-1]) == (("0:r0", 0), ("1:r0", 1))


def test_a_full_fence_waits_for_its_buffer_and_a_refused_choice_leaves_the_run_as_it_was():
    session = LitmusSession(SHAPES["SB+mbs"], "SB+mbs", "tso")
    session.step("P0:WRITE_ONCE")
    assert "P0:smp_mb" not in [c["action"] for c in session.view()["choices"]]  # x=1 still buffered
    with pytest.raises(UserError, match="P0:smp_mb is not an enabled action here"):
        session.step("P0:smp_mb")
    assert session.view()["steps"] == 1
    session.step("P0:drain")
    assert "P0:smp_mb" in [c["action"] for c in session.view()["choices"]]


@pytest.mark.parametrize("model", [sc, arm64, power], ids=lambda m: m.NAME)
@pytest.mark.parametrize("name", ("SB", "MP+wmb+rmb", "LB"))
def test_every_reveal_order_ends_on_the_models_verdict_naming_the_broken_axiom(name, model):
    session = LitmusSession(SHAPES[name], name, model.NAME)
    reachable = check(parse(SHAPES[name], name), model).exists_reachable
    finals = set()

    def walk(k):
        view = session.view(k)
        if not view["choices"]:
            v = view["violation"]
            finals.add(None if v is None else v["invariant"])
            assert view["outcome"] == "finished" and (v is None or v["invariant"] in v["message"])
            return
        for c in view["choices"]:
            session.step(c["action"], at=k)
            walk(k + 1)

    walk(0)
    broken = session.model.x.broken
    assert finals == {None if broken is None else broken.name}
    assert (broken is None) == reachable  # allowed exactly when the model reaches the exists clause


def test_bad_input_is_one_line():
    with pytest.raises(UserError, match="not 'x86'"):
        LitmusSession(SHAPES["SB"], "SB", "x86")
    with pytest.raises(UserError, match="line"):
        LitmusSession("C bad\n{}\nP0(int *x) { frobnicate(x); }\nexists (x=1)\n", "bad", "tso")
    assert isinstance(LitmusSession(SHAPES["SB"], "SB", "tso").model, TsoMachine)


def test_the_package_zip_holds_what_a_litmus_session_imports():
    names = set(zipfile.ZipFile(io.BytesIO(live.package_zip())).namelist())
    assert {"kstep/views/litmus_live.py", "kstep/views/boards/litmus.py", "kstep/memory/stepping.py",
            "kstep/memory/arm64.py", "kstep/memory/power.py", "kstep/memory/sc.py"} <= names
    assert "kstep/views/litmus.py" not in names  # the Bokeh view stays out


@pytest.mark.parametrize("model", [sc, arm64, power], ids=lambda m: m.NAME)
@pytest.mark.parametrize("name", ("SB", "MP+wmb+rmb", "LB"))
def test_every_candidate_picked_then_revealed_ends_allowed_exactly_when_the_model_allows_its_final_state(name, model):
    """A student may pick any candidate (which write each read reads from); its reveal ends on the model's
    verdict: allowed when the model allows its final state, else naming the axiom it breaks."""
    test = parse(SHAPES[name], name)
    allowed = check(test, model).states
    runs = candidates(SHAPES[name], name, model.NAME, sorted(LitmusSession(SHAPES[name], name, model.NAME).sources))
    assert len(runs) == 4  # two reads, each from the initial write or the other thread's
    for run in runs:
        session = LitmusSession(SHAPES[name], name, run)
        while session.view()["choices"]:
            session.step(session.view()["choices"][-1]["action"])
        v = session.view()["violation"]
        x = session.model.x
        assert (v is None) == (x.state in allowed), run
        assert v is None or v["invariant"] == x.broken.name and x.broken.name in v["message"]


def test_a_candidate_that_is_not_there_is_one_line():
    with pytest.raises(UserError, match="no candidate execution where b<-z"):
        LitmusSession(SHAPES["SB"], "SB", "arm64 b<-z")
    with pytest.raises(UserError, match="pick no candidate"):
        LitmusSession(SHAPES["SB"], "SB", "tso b<-c")
