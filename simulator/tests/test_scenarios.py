"""Scenario files: every bundled one validates; every kind of mistake is one line naming it."""

import pytest

from kstep.scenario_spec import scenario
from kstep.errors import UserError
from kstep.models import MODELS

GOOD = """
description = "d"
look_for = "l"
[[vmas]]
start = 0
end = 4
[[threads]]
name = "T"
kind = "fault"
faults = [1]
"""


def parse(text, mech="vma-locks", overrides=()):
    return scenario.parse(mech, MODELS[mech].scenario_schema, "x", text, "x.toml", list(overrides))


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_bundled_scenarios_load_and_describe_themselves(mech):
    names = scenario.bundled(mech)
    assert len(names) >= 3
    for name in names:
        sc = scenario.load(mech, MODELS[mech].scenario_schema, name)
        assert len(sc.description) > 80 and len(sc.look_for) > 40
        MODELS[mech]().initial(sc.config)


def test_the_schema_documents_legal_ranges():
    text = "\n".join(MODELS["vma-locks"].scenario_schema.describe())
    assert "integer 0..63" in text and "one of fault, writer" in text


@pytest.mark.parametrize("text, message", [
    ("not toml [", "not valid TOML"),
    (GOOD.replace('description = "d"', ""), "description: missing"),
    (GOOD + "\nbogus = 1", "bogus: unknown key"),
    (GOOD.replace("end = 4", "end = 99"), "vmas[0].end: 99 is out of range 1..64"),
    (GOOD.replace("end = 4", 'end = "4"'), "vmas[0].end: expected an integer, got a string"),
    (GOOD.replace("start = 0\nend = 4", "start = 4\nend = 4"), "vmas[0]: start 4 must be below end 4"),
    (GOOD.replace('kind = "fault"', 'kind = "reader"'), "threads[0].kind: 'reader' is not one of fault, writer"),
    (GOOD.replace("faults = [1]", "faults = []"), "threads[0].faults: a fault thread needs at least one address"),
    (GOOD + '\n[[vmas]]\nstart = 2\nend = 6\n', "overlap"),
    (GOOD + '\n[[threads]]\nname = "T"\nkind = "fault"\nfaults = [2]\n', "two threads are named 'T'"),
    (GOOD + '\n[[threads]]\nname = "rcu"\nkind = "fault"\nfaults = [2]\n', "the name of the mechanism's own actor"),
    (GOOD + '\n[[threads]]\nname = "W"\nkind = "writer"\nops = [{op = "munmap", start = 4, end = 2}]\n',
     "threads[1].ops[0]: munmap needs start below end"),
])
def test_mistakes_are_one_line_naming_the_place(text, message):
    with pytest.raises(UserError) as e:
        parse(text)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("x.toml: ")


@pytest.mark.parametrize("item, message", [
    ("threads.0.count", "expected KEY=VALUE"),
    ("threads.5.count=2", "no entry 5"),
    ("threads.0.count=abc", "not a TOML value"),
    ("nothing.here=1", "no key nothing"),
    ("threads.0.count=129", "threads[0].count: 129 is out of range 1..128"),
])
def test_overrides_are_validated_like_the_file(item, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        parse(GOOD, overrides=[item])


def test_overrides_change_the_config():
    sc = parse(GOOD, overrides=["threads.0.count=3", "threads.0.faults=[1, 2]"])
    assert sc.config["threads"][0]["count"] == 3 and sc.config["threads"][0]["faults"] == [1, 2]


def test_unknown_bundled_scenario_lists_the_choices():
    with pytest.raises(UserError, match="choose from: .*munmap-vs-fault"):
        scenario.load("vma-locks", MODELS["vma-locks"].scenario_schema, "nope")


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_the_lecture_order_names_every_bundled_scenario_once(mech):
    """The course lists a chapter's scenarios in lecture order, simplest first: the order must name
    each bundled scenario exactly once, so that a new scenario file gets a place in the lecture."""
    from kstep.scenarios import LECTURE

    assert sorted(LECTURE.get(mech, [])) == scenario.bundled(mech)
    assert scenario.lecture_order(mech) == LECTURE.get(mech, [])
