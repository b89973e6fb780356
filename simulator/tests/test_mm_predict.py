"""mm-predict graded as a class meets it: a release's bundles, the README's commands, answers worked out
from what the models print scoring full, wrong verdicts, executions and axioms scoring less, malformed
answers scoring nothing in one line, and two mutants of the grader that these checks catch
(kstep.grading.outcomes)."""

import subprocess
import sys
from pathlib import Path

import class_release
import pytest

from kstep.cli import main
from kstep.grading import exercise, harness, outcomes, variants
from kstep.memory import relations as rel
from kstep.memory.litmus import parse
from kstep.memory.stepping import choose_execution

ROOT = Path(__file__).resolve().parents[2]
EX = exercise.load(ROOT / "exercises" / "mm-predict")
SECRET = "mm-predict-test-secret"


def reference(test: outcomes.Test) -> dict:
    """Per model, the answer a student writes from what `kstep litmus` shows: the verdict, and the
    execution --html steps through (an allowed one reaching the exists clause, else the forbidden
    candidate with the axiom it breaks)."""
    litmus = parse(test.text, outcomes.TEST)
    out = {}
    for model, module in outcomes.MODELS.items():
        ex = choose_execution(litmus, module)
        named = outcomes.names(ex.events, test.registers)
        entry = {"allowed": ex.broken is None,
                 "rf": {named[r]: named[w] for w, r in rel.pairs(ex.rf)},
                 "co": {loc: [named[w] for w in sorted((e.id for e in ex.events if e.kind == "W" and e.loc == loc),
                                                       key=lambda w: -bin(ex.co[w]).count("1"))]
                        for loc in litmus.shared()}}
        if ex.broken is not None:
            entry["axiom"] = ex.broken.name
        out[model] = entry
    return out


def toml(answer: dict) -> str:
    lines = []
    for model, entry in answer.items():
        lines.append(f"[{model}]")
        for key, value in entry.items():
            if isinstance(value, bool):
                lines.append(f"{key} = {'true' if value else 'false'}")
            elif isinstance(value, str):
                lines.append(f'{key} = "{value}"')
            else:
                inner = ", ".join(f'"{k}" = {list(v) if isinstance(v, list) else repr(v)}'.replace("'", '"')
                                  for k, v in value.items())
                lines.append(f"{key} = {{ {inner} }}")
    return "\n".join(lines) + "\n"


class Ctx:
    """What a hidden test reads, without the sandbox: the variant and answer.toml."""

    def __init__(self, variant, answer):
        self.variant, self._text = variant, toml(answer)

    def text(self, name):
        assert name == outcomes.ANSWER
        return self._text


def score(check, variant, answer) -> float:
    try:
        check(Ctx(variant, answer))
    except harness.Fail as f:
        return f.credit
    return 1.0


def wrong_answers_lose() -> list[str]:
    """What the grader gets wrong on answers with one thing wrong (empty: nothing): each must score less
    than the reference answer. The variants' tests each have an allowed and a forbidden model."""
    problems = []
    for v in ({"shape": "MP", "seed": 0}, {"shape": "SB", "seed": 0}, {"shape": "2+2W", "seed": 0}):
        test = outcomes.generate(v["shape"], v["seed"])
        right = reference(test)
        full = score(outcomes.check_executions, v, right)
        if full != 1.0:
            problems.append(f"{v}: the reference answer loses points")
        allowed = next(m for m, e in right.items() if e["allowed"])
        forbidden = next(m for m, e in right.items() if not e["allowed"])
        # an execution the model forbids, handed in as allowed (the verdict is wrong too)
        inconsistent = {**right, forbidden: {k: x for k, x in right[forbidden].items() if k != "axiom"} | {
            "allowed": True}}
        if score(outcomes.check_executions, v, inconsistent) >= full:
            problems.append(f"{v}: an execution {forbidden} forbids is accepted as allowed")
        # a forbidden candidate with an axiom of the model that it does not break
        other = next(a for a in ("atomic", "sc-per-location") if a != right[forbidden]["axiom"])
        wrong_axiom = {**right, forbidden: {**right[forbidden], "axiom": other}}
        if score(outcomes.check_executions, v, wrong_axiom) >= full:
            problems.append(f"{v}: {other} is accepted as the axiom that forbids it on {forbidden}")
        # an allowed model's execution whose reads read other writes (the initial one for another, another
        # for the initial one): some other outcome
        flip = {r: w.split("=")[0] + ("=1" if w.endswith("=0") else "=0") for r, w in right[allowed]["rf"].items()}
        elsewhere = {**right, allowed: {**right[allowed], "rf": flip}}
        if score(outcomes.check_executions, v, elsewhere) >= full and flip:
            problems.append(f"{v}: an execution that does not reach the exists clause is accepted")
        flipped = {**right, allowed: {**right[allowed], "allowed": False, "axiom": "atomic"}}
        if score(outcomes.check_verdicts, v, flipped) != 0.75:
            problems.append(f"{v}: one wrong verdict does not cost a quarter")
    return problems


def test_wrong_executions_verdicts_and_axioms_lose_their_share():
    assert wrong_answers_lose() == []


def test_two_grader_mutants_are_caught(monkeypatch):
    # mutant 1: every execution consistent (the models' axioms never consulted)
    monkeypatch.setattr(outcomes, "broken", lambda model, built: [])
    assert any("accepted as allowed" in p for p in wrong_answers_lose())
    # mutant 2: any axiom of the model accepted, whether the candidate breaks it or not
    monkeypatch.setattr(outcomes, "broken", lambda model, built: outcomes.axiom_names(model, built))
    assert any("accepted as the axiom" in p for p in wrong_answers_lose())


def test_every_variant_has_one_candidate_reaching_the_outcome_and_the_first_seeds_differ_and_score_full():
    """What the instructor guide says: one candidate per variant reaches the outcome (so the grader
    cannot ask for another execution than kstep prints; LB-23 draws its orderings again, since its first
    draw asks for thin-air values). Per shape, the first five seeds differ in their verdicts and their
    reference answers score full (all 512: 17 s of CPU, more than this file's share of make test)."""
    seen = set()
    for v in variants.all_variants(EX.variants):
        test = outcomes.generate(v["shape"], v["seed"])
        assert outcomes.reaching(parse(test.text)) == 1, v
        if v["seed"] >= 5 and (v["shape"], v["seed"]) != ("LB", 23):
            continue
        right = reference(test)
        assert score(outcomes.check_verdicts, v, right) == score(outcomes.check_executions, v, right) == 1.0, v
        seen.add((v["shape"], tuple(e["allowed"] for e in right.values())))
    for shape in outcomes.SHAPES:
        assert len({s for s in seen if s[0] == shape}) > 1, shape
    assert any(s[1] == (False, True, True, True) for s in seen)  # SB: x86's store buffer


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """A release of mm-predict for three students: their bundles, by student."""
    return class_release.release(tmp_path_factory.mktemp("course"), EX.path, SECRET)[1]


def grade(folder, student):
    return class_release.graded(EX, folder, student, SECRET)


def test_a_release_followed_by_its_readme_scores_full_and_a_wrong_verdict_less(bundles, capsys):
    seen = set()
    for student, folder in bundles.items():
        v = variants.for_student(EX, student, SECRET)
        seen.add((v["shape"], v["seed"]))
        starter = grade(folder, student)  # the bundle's answer.toml as released
        assert sum(t.score for t in starter.values()) == 0, starter
        subprocess.run([sys.executable, "-m", "kstep.grading.outcomes", str(folder)], check=True, capture_output=True)
        assert main(["litmus", str(folder / "test.litmus"), "--model", "all"]) == 0
        capsys.readouterr()
        test = outcomes.Test((folder / "test.litmus").read_text(), outcomes.variant_test(v).registers)
        right = reference(test)
        (folder / "answer.toml").write_text(toml(right))
        g = grade(folder, student)
        assert all(t.passed for t in g.values()), g
        if student != "ada":
            continue  # one student's variant shows the rest: each grading runs the public test sandboxed
        sc = right["sc"]  # every shape's outcome is forbidden under sc
        (folder / "answer.toml").write_text(toml({**right, "sc": {k: x for k, x in sc.items() if k != "axiom"} | {
            "allowed": True}}))
        g = grade(folder, student)
        assert g["answer-well-formed"].passed, g
        assert g["verdicts"].score == 3 and g["executions"].score == 3, g
        assert "sc: the model forbids your execution" in g["executions"].output
    assert len(seen) > 1, "the students' variants differ"


READS = b"rf = { '1:v70' = 'tail=1', '1:v01' = 'data=0' }\n"


@pytest.mark.parametrize("content, message", [
    (b"", "[sc] is missing"),
    (b"[sc\nallowed = 1", "not TOML"),
    (b"\xff\xfe" * 100, "UTF-8"),
])
def test_a_malformed_answer_scores_zero_with_one_line(tmp_path, content, message):
    (tmp_path / "answer.toml").write_bytes(content)
    g = grade(tmp_path, variants.EXAMPLE)
    for t in g.values():
        assert t.score == 0
        if t.visibility == harness.HIDDEN:
            assert message in t.output and "Traceback" not in t.output, t.output
            assert len(t.output.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    (b"[sc]\nallowed = 'no'\n", "allowed must be true or false"),
    (b"[sc]\nallowed = false\naxoim = 'sc'\n", "'axoim' is not a key"),
    (b"[x86]\nallowed = true\n", "[x86] is not a model"),
    (b"[sc]\nallowed = false\nrf = 3\n", "rf must be a table"),
    (b"[sc]\nallowed = false\nrf = { '1:v70' = 'tail=1' }\n", "rf must name each read"),
    (b"[sc]\nallowed = false\nrf = { '1:v70' = 'tail=7', '1:v01' = 'data=0' }\n", "no execution of test.litmus"),
    (b"[sc]\nallowed = false\n" + READS + b"co = { data = ['data=1'] }\n", "co.data must list"),
    (b"[sc]\nallowed = false\n" + READS + b"co = { data = ['data=1', 'data=0'] }\n", "data=0 comes first"),
    (b"[sc]\nallowed = false\n" + READS + b"co = { nope = [] }\n", "not a location"),
    (b"[sc]\nallowed = false\n" + READS + b"axiom = 'external'\n", "axiom must be one of the sc model's"),
    (b"[sc]\nallowed = true\n" + READS + b"axiom = 'sc'\n", "leave axiom out"),
    (b"a = " + b"[" * 5000 + b"]" * 5000, "nested too deeply"),
])
def test_each_malformed_form_is_named_in_one_line(tmp_path, content, message):
    """The public check and both hidden tests read answer.toml through outcomes.answer (graded above)."""
    test = outcomes.generate("MP", 0)
    with pytest.raises(harness.Fail) as f:
        outcomes.answer(content.decode(), test)
    assert message in f.value.message and "\n" not in f.value.message and f.value.credit == 0


def test_the_test_generator_refuses_a_bad_variant_in_one_line(tmp_path, capsys):
    (tmp_path / "variant.toml").write_text('shape = "XYZ"\nseed = 1\n')
    assert outcomes.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    (tmp_path / "variant.toml").write_text('test = "mcs-handoff"\n')
    assert outcomes.main([str(tmp_path)]) == 2
    assert "not a predict-the-outcome variant" in capsys.readouterr().err
