"""mm-find-barrier graded as a class meets it: a release's bundles, the README's commands, the
barrier the kernel has, smp_mb() in its place, a wrong line, and malformed answers
(kstep.grading.missing)."""

import re
import subprocess
import sys
from pathlib import Path

import class_release
import pytest

from kstep.cli import main
from kstep.grading import barriers, exercise, harness, missing, variants
from kstep.memory import bundled
from kstep.memory.litmus import parse

ROOT = Path(__file__).resolve().parents[2]
EX = exercise.load(ROOT / "exercises" / "mm-find-barrier")
SECRET = "mm-find-barrier-test-secret"


def kernel_fix(v) -> tuple[int, str]:
    """(line, barrier) that puts back what the mutant lost, found by comparing with the original."""
    name, pick = v["mutant"]
    original = missing._clean(bundled.path(name).read_text())
    mutant = missing.mutant(v).splitlines()
    k = next(k for k, (a, b) in enumerate(zip(original, mutant)) if a != b)
    if original[k + 1] == mutant[k]:  # a fence was dropped
        return k + 1, original[k].strip().removesuffix("();")
    return k + 1, re.search(r"\b(\w+)\(", original[k].split("=")[-1]).group(1)


def answer(folder, line, barrier):
    (folder / "answer.toml").write_text(f"line = {line}\nbarrier = {barrier!r}\n")


@pytest.mark.parametrize("v", list(variants.all_variants(EX.variants)), ids=lambda v: "-".join(map(str, v["mutant"])))
def test_each_mutant_is_broken_on_the_weak_architectures_and_the_kernels_barrier_mends_it(v):
    text = missing.mutant(v)
    assert barriers.forbids(parse(text), "x86") is not None
    assert barriers.allowed_on(parse(text), missing.ARCHS)
    assert not barriers.allowed_on(missing.fixed(text, *kernel_fix(v)), missing.ARCHS)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """A release of mm-find-barrier for three students: their bundles, by student."""
    return class_release.release(tmp_path_factory.mktemp("course"), EX.path, SECRET)[1]


def grade(folder, student):
    return class_release.graded(EX, folder, student, SECRET)


def test_the_kernels_barrier_scores_full_smp_mb_less_a_wrong_line_nothing(bundles, capsys):
    seen = set()
    for student, folder in bundles.items():
        v = variants.for_student(EX, student, SECRET)
        seen.add(tuple(v["mutant"]))
        subprocess.run([sys.executable, "-m", "kstep.grading.missing", str(folder)], check=True, capture_output=True)
        assert main(["litmus", str(folder / "mutant.litmus"), "--model", "all"]) == 0
        capsys.readouterr()
        line, barrier = kernel_fix(v)
        answer(folder, line, barrier)
        g = grade(folder, student)
        assert all(t.passed for t in g.values()), g
        if student != "ada":
            continue  # one student's variant shows the rest: each grading is a sandboxed run

        # a full fence where the lost one was, or on the side of the access its lost ordering guarded
        answer(folder, line + 1 if barrier.endswith("_acquire") else line, "smp_mb")
        g = grade(folder, student)
        assert g["restores"].passed and 0 < g["cheapest"].score < g["cheapest"].max_score, g
        assert "with the one it lost" in g["cheapest"].output

        answer(folder, len(missing.mutant(v).splitlines()) - 2, "smp_wmb")  # after the last thread's accesses
        g = grade(folder, student)
        assert g["answer-well-formed"].passed and g["restores"].score == 0 and g["cheapest"].score == 0, g
    assert len(seen) > 1, "the students' variants differ"


@pytest.mark.parametrize("content, message", [
    (b"", "line must be"),
    (b"line = 11\nbarrier = [", "not TOML"),
    (b"\xff\xfe" * 100, "UTF-8"),
    (b"line = 0\nbarrier = 'smp_mb'\n", "line must be"),
    (b"line = 11\nbarrier = 'frobnicate'\n", "barrier must be"),
    (b"line = 99999\nbarrier = 'smp_mb'\n", "lines, not 99999"),
    (b"line = 4\nbarrier = 'smp_mb'\n", "no longer reads"),  # inside the initial state
    (b"line = 20\nbarrier = 'xchg_release'\n", "no access"),
])
def test_a_malformed_answer_scores_zero_with_one_line(tmp_path, content, message):
    (tmp_path / "answer.toml").write_bytes(content)
    g = grade(tmp_path, variants.EXAMPLE)
    for t in g.values():
        if t.visibility == harness.HIDDEN:
            assert t.score == 0 and message in t.output and "Traceback" not in t.output
            assert len(t.output.strip().splitlines()) == 1


def test_a_fence_that_swallows_an_if_body_changes_the_program():
    v = {"mutant": ["vma-mm-lock-seq", 1]}
    text = missing.mutant(v)
    body = next(k for k, ln in enumerate(text.splitlines(), 1) if ln.startswith("\t\t"))
    with pytest.raises(harness.Fail, match="changes more than ordering"):
        missing.fixed(text, body, "smp_rmb")
