"""Scenario questions: anchored to steps by what happens, answered from the run, checked at load."""

import pytest

from kstep.cli import main
from kstep.scenario_spec import questions, scenario
from kstep.errors import UserError
from kstep.experiment import from_text
from kstep.models import MODELS

VMA_TEXT = """
description = "T1 faults in B while W unmaps it."
look_for = "the miss"
schedule = "T1*2 W*11 T1*9"
[[vmas]]
start = 0
end = 4
[[vmas]]
start = 4
end = 8
[[threads]]
name = "T1"
kind = "fault"
faults = [5]
[[threads]]
name = "T2"
kind = "fault"
faults = [1]
[[threads]]
name = "W"
kind = "writer"
ops = [{ op = "munmap", start = 4, end = 8 }]
"""

QUESTIONS = """
[[questions]]
id = "seq"
at = "after the first W:vma_end_write_all"
kind = "value"
ask = "What is mm_lock_seq once the write epoch has ended?"
field = "mm.mm_lock_seq"
[[questions]]
id = "holders"
at = "after T1:vma_start_read_recheck"
kind = "thread"
ask = "Which threads hold a pointer to a VMA they found?"
field = "vma >= 0"
[[questions]]
id = "next"
at = "after the first T1:mas_walk"
kind = "choose"
ask = "What is T1's next step?"
field = "thread('T1').frames[0].label"
choices = ["vma_start_read", "rcu_read_unlock"]
[[questions]]
id = "detached"
at = "before the last T1:mas_walk"
kind = "value"
ask = "Is VMA 1 detached when T1 walks the tree again?"
field = "vmas[1].detached"
[[questions]]
id = "misses"
at = "end"
kind = "value"
ask = "How many misses?"
field = "counters.vma_lock_miss"
"""


def load(qs=QUESTIONS, text=VMA_TEXT):
    return scenario.parse("vma-locks", MODELS["vma-locks"].scenario_schema, "x", text + qs, "x.toml", [])


def run(schedule, qs=QUESTIONS):
    ex = from_text("vma-locks", VMA_TEXT + qs, where="x.toml")
    trace = ex.run(schedule=schedule)
    return ex.model, ex.scenario, trace, questions.answers(ex.model, ex.scenario.questions, trace)


def test_each_kind_is_answered_from_the_anchored_state():
    m, sc, trace, answers = run("T1*2 W*11 T1*9")
    got = {a.question.id: a.value for a in answers}
    assert got == {"seq": 2, "holders": ("T1",), "next": "vma_start_read", "detached": True, "misses": 1}
    seq = next(a for a in answers if a.question.id == "seq")
    assert trace.actions[seq.step - 1] == ("W", "vma_end_write_all")
    assert trace.states[seq.step].mm.mm_lock_seq == 2


def test_anchors_follow_the_step_not_its_number():
    """T2 running its whole fault first shifts every step number; the anchored answers do not move."""
    ex, n = from_text("vma-locks", VMA_TEXT + QUESTIONS, where="x.toml"), 0
    m, s = ex.model, ex.start
    while not m.done(s, "T2"):
        s, n = m.step(s, next(a for a in m.actions(s) if a.actor == "T2")), n + 1
    _, _, _, first = run("T1*2 W*11 T1*9")
    _, _, _, later = run(f"T2*{n} T1*2 W*11 T1*9")
    assert [a.value for a in first] == [a.value for a in later]
    assert all(a.step + n == b.step for a, b in zip(first[:4], later[:4]))  # "end" is the end of both


def test_a_different_run_gives_a_different_answer():
    """W unmaps before T1 walks: T1 never sees VMA 1, so it never locks it and never misses."""
    _, _, _, answers = run("W*11 T1*6")
    got = {a.question.id: a for a in answers}
    assert got["misses"].value == 0
    assert got["holders"].step is None and got["holders"].value is None  # never reached in this run


def test_the_last_and_nth_occurrence():
    _, sc, trace, _ = run("T1*2 W*11 T1*9")
    walks = [k for k, a in enumerate(trace.actions) if a == ("T1", "mas_walk")]
    assert len(walks) == 2
    assert questions.anchored(questions.parse_anchor("after the 2nd T1:mas_walk"), trace) == walks[1] + 1
    anyone = [k for k, a in enumerate(trace.actions) if a.label == "mas_walk"]
    assert anyone[-1] > walks[1]  # T2 walks last: without an actor, any actor's step counts
    assert questions.anchored(questions.parse_anchor("before the last mas_walk"), trace) == anyone[-1]
    assert questions.anchored(questions.parse_anchor("before the last T1:mas_walk"), trace) == walks[1]
    assert questions.anchored(questions.parse_anchor("after the 3rd T1:mas_walk"), trace) is None
    assert questions.anchored(questions.parse_anchor("start"), trace) == 0


@pytest.mark.parametrize("given, ok", [(2, True), (1, False), ("2", False), (True, False)])
def test_value_answers_keep_their_type(given, ok):
    _, _, _, answers = run("T1*2 W*11 T1*9")
    assert questions.matches(answers[0], given) is ok


def test_an_unsigned_long_answer_may_be_given_signed():
    """RCU's gp_seq starts 300 grace periods before the wrap; the step table shows it signed."""
    q = questions.Question("gp", questions.Anchor("end"), "value", "?", None, "rcu.gp_seq")
    a = questions.Answer(q, 3, (1 << 64) - 1196)
    assert questions.matches(a, -1196) and questions.matches(a, (1 << 64) - 1196)
    assert not questions.matches(a, -1192) and not questions.matches(a, 1196)
    assert questions.text(a.value) == "-1196 (unsigned: 18446744073709550420)"


def test_thread_answers_are_a_set_of_names():
    _, _, _, answers = run("T1*2 W*11 T1*9")
    holders = answers[1]
    assert questions.matches(holders, ["T1"]) and questions.matches(holders, "T1")
    assert questions.matches(holders, "t1")  # notebook 06's names are models: POWER is power
    assert not questions.matches(holders, ["T1", "T2"]) and not questions.matches(holders, [1])
    assert questions.text(holders.value) == "T1" and questions.text(()) == "none"


@pytest.mark.parametrize("entry, message", [
    ('id = "q"\nat = "after T1:"\nkind = "value"\nask = "?"\nfield = "mm"', "is not 'start', 'end'"),
    ('id = "q"\nat = "after step 5"\nkind = "value"\nask = "?"\nfield = "mm"', "is not 'start', 'end'"),
    ('id = "q"\nat = "end"\nkind = "guess"\nask = "?"\nfield = "mm"', "'guess' is not one of value, choose"),
    ('id = "q"\nat = "end"\nkind = "value"\nask = "?"\nfield = "mm.("', "field: not an expression"),
    ('id = "q"\nat = "end"\nkind = "value"\nask = "?"\nfield = "__import__(1)"', "is not a state field"),
    ('id = "q"\nat = "end"\nkind = "choose"\nask = "?"\nfield = "1"\nchoices = ["1"]', "at least two"),
    ('id = "q"\nat = "end"\nkind = "choose"\nask = "?"\nfield = "1"\nchoices = ["1", "1"]', "are the same"),
    ('id = "q"\nat = "end"\nkind = "value"\nask = "?"\nfield = "1"\nchoices = ["1", "2"]', "only a 'choose'"),
    ('id = "Q 1"\nat = "end"\nkind = "value"\nask = "?"\nfield = "1"', "is not lower-case"),
])
def test_malformed_questions_are_one_line_at_load(entry, message):
    with pytest.raises(UserError) as e:
        load("[[questions]]\n" + entry + "\n")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_two_questions_with_one_id_are_refused():
    q = '[[questions]]\nid = "q"\nat = "end"\nkind = "value"\nask = "?"\nfield = "1"\n'
    with pytest.raises(UserError, match="two questions have the id 'q'"):
        load(q + q)


@pytest.mark.parametrize("qs, message", [
    ('at = "after T1:no_such_step"\nkind = "value"\nfield = "1"', "question q: vma-locks has no step 'no_such_step'"),
    ('at = "end"\nkind = "value"\nfield = "mm"', "question q: field mm: a Mm is not an answer"),
    ('at = "end"\nkind = "value"\nfield = "mm.no_field"', "question q: mm has no field 'no_field'"),
    ('at = "end"\nkind = "choose"\nfield = "counters.vma_lock_miss"\nchoices = ["5", "6"]',
     "question q: field counters.vma_lock_miss is '1' here, which is not one of its choices"),
])
def test_questions_that_cannot_be_answered_exit_2(tmp_path, capsys, qs, message):
    path = tmp_path / "q.toml"
    path.write_text(VMA_TEXT + f'[[questions]]\nid = "q"\nask = "?"\n{qs}\n')
    assert main(["run", "vma-locks", "--scenario", str(path), "-c"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_run_prints_questions_with_question_marks_and_c_the_answers(tmp_path, capsys):
    path = tmp_path / "q.toml"
    path.write_text(VMA_TEXT + QUESTIONS)
    assert main(["run", "vma-locks", "--scenario", str(path)]) == 0
    out = capsys.readouterr().out
    block = out[out.index("Questions:"):]
    assert "[seq] after the first W:vma_end_write_all: What is mm_lock_seq" in block
    assert "      choose from: vma_start_read, rcu_read_unlock\n" in block
    assert block.count("      ?") == 5 and "answer:" not in out
    assert main(["run", "vma-locks", "--scenario", str(path), "-c"]) == 0
    out = capsys.readouterr().out
    assert "answer: 2  (state after step 10)" in out and "answer: T1  (state after step" in out
    assert "answer: true" in out and "answer: vma_start_read" in out
    assert main(["run", "vma-locks", "--scenario", str(path), "-P", "W*11 T1*6", "-c"]) == 0
    assert "(this run never gets there: no answer)" in capsys.readouterr().out
