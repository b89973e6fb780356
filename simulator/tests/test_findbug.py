"""Find-the-bug exercises: keys that point at real lines, budgets that can be met exactly, and a
submitted schedule re-verified from its actors, never from what a trace claims."""

import json
import tomllib
from pathlib import Path

import pytest

from kstep.engine import Scripted, simulate
from kstep.grading import exercise, findbug, variants
from kstep.grading.harness import Fail
from kstep.source import index as source_index
from kstep.models import make_model

ROOT = Path(__file__).resolve().parents[2]
FINDBUG = [e for e in (exercise.load(p.parent) for p in sorted((ROOT / "exercises").glob("*/exercise.toml")))
           if e.kind == "find-bug"]


def keys(ex):
    return tomllib.loads((ex.path / "hidden" / "keys.toml").read_text())


@pytest.mark.parametrize("ex", FINDBUG, ids=lambda e: e.id)
def test_every_case_has_a_key_in_a_real_function(ex):
    k = keys(ex)
    for broken, _, _ in ex.variants["case"]:
        assert make_model(ex.mechanism, broken).variant.broken
        key = k[broken]
        assert source_index.exists(f"{key['path']}:{key['function']}"), key


@pytest.mark.parametrize("ex", FINDBUG, ids=lambda e: e.id)
def test_keys_name_the_lines_of_linux_6_12(ex, linux_tree):
    for broken, key in keys(ex).items():
        lines = (linux_tree / key["path"]).read_text().splitlines()
        assert key["text"] in lines[key["lines"][0][0] - 1], (broken, key)


@pytest.mark.slow
@pytest.mark.parametrize("ex", FINDBUG, ids=lambda e: e.id)
def test_each_budget_is_the_fewest_switches_that_reach_harm(ex):
    """In every layout the budget can be met, and in one it cannot be beaten."""
    fewest = {}
    for v in variants.all_variants(ex.variants):
        broken, scenario_name, budget = v["case"]
        overrides = [f"pending_bits={v['pending_bits']}"] if "pending_bits" in v else []
        path = findbug.fewest_switches(*findbug.start(ex.mechanism, broken, scenario_name, overrides))
        assert path is not None, v
        fewest.setdefault(v["case"], []).append(findbug.switches([a.actor for a in path]))
    assert all(max(n) == budget for (_, _, budget), n in fewest.items()), fewest


class Ctx:
    """What check_harm reads of a grading context: the variant and the submitted files."""

    def __init__(self, variant, files):
        self.variant, self._files = variant, files

    def has(self, name):
        return name in self._files

    def text(self, name):
        return self._files[name]

    def toml(self, name):
        return tomllib.loads(self._files[name])


CASE = {"case": ("no-recheck", "recheck-race", 3)}


def test_a_schedule_over_the_budget_is_refused():
    m, s0 = findbug.start("vma-locks", "no-recheck", "recheck-race")
    best = findbug.schedule_text(findbug.fewest_switches(m, s0))
    findbug.check_harm(Ctx(CASE, {"answer.toml": f'schedule = "{best}"'}), "vma-locks")
    with pytest.raises(Fail, match="the budget is 2"):
        findbug.check_harm(Ctx({"case": ("no-recheck", "recheck-race", 2)}, {"answer.toml": f'schedule = "{best}"'}),
                           "vma-locks")


def test_a_trace_is_replayed_from_its_actors_not_believed():
    """A trace.json of the correct kernel's run, edited to claim the harm, earns nothing: only its
    actors are used, and on the broken variant they reach no harm."""
    m, s0 = findbug.start("vma-locks", "v6.12", "recheck-race")
    trace = simulate(m, s0, Scripted("T2*3"), config={})
    data = json.loads(trace.dumps(m))
    data["steps"] = data["steps"][:3]
    data["outcome"] = "violation"
    data["violation"] = {"invariant": "read-locked-vma-unchanged", "message": "claimed", "kind": "harm", "step": 3}
    with pytest.raises(Fail, match="reaches no harm"):
        findbug.check_harm(Ctx(CASE, {"trace.json": json.dumps(data), "answer.toml": ""}), "vma-locks")
    with pytest.raises(Fail, match="not a kstep trace"):
        findbug.check_harm(Ctx(CASE, {"trace.json": "[1, 2", "answer.toml": ""}), "vma-locks")


def test_a_schedule_naming_a_blocked_actor_says_where():
    with pytest.raises(Fail, match="schedule entry 1 names X, which is not an actor"):
        findbug.check_harm(Ctx(CASE, {"answer.toml": 'schedule = "X T1"'}), "vma-locks")


def test_a_schedule_longer_than_an_answer_may_be_is_refused_before_it_runs():
    longest = findbug.LONGEST_ANSWER
    assert findbug.submitted_schedule(Ctx(CASE, {"answer.toml": f'schedule = "T1*{longest}"'})) == ["T1"] * longest
    with pytest.raises(Fail, match=f"the schedule has {longest + 1} steps; at most {longest}$"):
        findbug.check_harm(Ctx(CASE, {"answer.toml": f'schedule = "T1*{longest} T2"'}), "vma-locks")


def test_switches_count_changes_of_actor():
    assert findbug.switches(["T1", "T1", "W", "T1", "T1"]) == 2 and findbug.switches([]) == 0


def readme_example(ex):
    """The README's example run (its argv after ``kstep``) and its example answer.toml."""
    import shlex
    import re
    text = (ex.path / "README.md").read_text()
    (run,) = [shlex.split(line, comments=True)[1:] for block in re.findall(r"```sh\n(.*?)```", text, re.S)
              for line in block.splitlines() if line.startswith("kstep run")]
    (answer,) = re.findall(r"```toml\n(.*?)```", text, re.S)
    return run, tomllib.loads(answer)


@pytest.mark.parametrize("ex", FINDBUG, ids=lambda e: e.id)
def test_the_readmes_example_runs_and_answers_no_case(ex, capsys):
    """The README's example run works as printed, and its example answer scores for no student: its
    line is in no case's key, and its schedule reaches no case's harm within that case's budget (the
    vma and qspinlock READMEs once handed one case its line and schedule, and their runs had gone
    stale with the 6.12.117 writer's extra step)."""
    from kstep.cli import main
    run, answer = readme_example(ex)
    assert main(run) == 0, capsys.readouterr()
    assert "outcome: finished" in capsys.readouterr().out
    path, line = answer["line"].rsplit(":", 1)
    for broken, key in keys(ex).items():
        assert not (path == key["path"] and any(a <= int(line) <= b for a, b in key["lines"])), broken
    actors = findbug.parse_schedule(answer["schedule"])
    for broken, scenario_name, budget in ex.variants["case"]:
        for bits in ex.variants.get("pending_bits", [None]):
            overrides = [] if bits is None else [f"pending_bits={bits}"]
            r = findbug.replay(*findbug.start(ex.mechanism, broken, scenario_name, overrides), actors)
            reached = r.harm is not None and findbug.switches([a.actor for a in r.actions]) <= budget
            assert not reached, (broken, scenario_name, bits)
