"""mm-barriers graded as a class meets it: a release's bundles, the README's own commands, the
cheapest fix, smp_mb() everywhere, and malformed litmus files (kstep.grading.barriers)."""

import re
import subprocess
import sys
from pathlib import Path

import class_release
import pytest

from kstep.cli import main
from kstep.grading import barriers, exercise, harness, variants
from kstep.memory import bundled
from kstep.memory.litmus import parse

ROOT = Path(__file__).resolve().parents[2]
EX = exercise.load(ROOT / "exercises" / "mm-barriers")
TABLE = barriers.load_costs(EX.path / "data" / "costs.toml")
SECRET = "mm-barriers-test-secret"
TWIN = bundled.path("qspinlock-init-before-tail-no-wmb").read_text()  # the example variant's test


def accesses(body):
    """The statements of a block that are a call (an access or a fence, with its line)."""
    return [k for k, s in enumerate(body) if s[0] in ("do", "assign") and s[-1][0] == "call"]


def blocks(body, path=()):
    """Every block of a thread's body (its top level, each if's branches), by path."""
    yield path, body
    for k, s in enumerate(body):
        if s[0] == "if":
            yield from blocks(s[2], path + (k, 2))
            yield from blocks(s[3], path + (k, 3))


def everywhere(test):
    """smp_mb() between every two accesses of every block of every thread."""
    return {t.index: {("fence", path + (k,)): "smp_mb" for path, block in blocks(t.body) for k in accesses(block)[1:]}
            for t in test.threads}


@pytest.mark.parametrize("v", list(variants.all_variants(EX.variants)),
                         ids=lambda v: f"{v['test']}-{'+'.join(v['architectures'])}")
def test_each_variant_is_broken_and_its_cheapest_fix_beats_smp_mb_everywhere(v):
    test, archs = bundled.load(v["test"]), tuple(v["architectures"])
    assert barriers.forbids(test, "x86") and not any(barriers.forbids(test, a) for a in archs)
    best, changes = barriers.least_cost(test, archs, TABLE)
    fixed = barriers.with_changes(test, changes)
    assert all(barriers.forbids(fixed, a) for a in ("x86", *archs))
    assert barriers.same_program(fixed, test) is None and barriers.cost(fixed, archs, TABLE) == best
    heavy = barriers.with_changes(test, everywhere(test))
    assert all(barriers.forbids(heavy, a) for a in ("x86", *archs))
    assert barriers.cost(heavy, archs, TABLE) > best


def test_the_committed_cost_table_ranks_the_barriers_as_each_architecture_orders_their_cost():
    """The ranking the grade rests on (issue 24, section 5): on x86 only a full barrier costs
    (smp_mb, and smp_store_mb, whose xchg is the same locked instruction); on arm64 dmb ishst/ishld
    < stlr/ldar < dmb ish; on POWER lwsync < sync."""
    def cost(prim, arch):
        return TABLE[prim][arch][0]

    def insn(prim, arch):
        return TABLE[prim][arch][1].split(" (")[0]

    assert {p for p in TABLE if cost(p, "x86") > 0} == {"smp_mb", "smp_store_mb"}
    assert [insn(p, "arm64") for p in ("smp_wmb", "smp_rmb", "smp_store_release", "smp_load_acquire", "smp_mb")] == [
        "dmb ishst", "dmb ishld", "stlr", "ldar", "dmb ish"]
    assert cost("smp_wmb", "arm64") == cost("smp_rmb", "arm64") < cost("smp_store_release", "arm64") \
        == cost("smp_load_acquire", "arm64") < cost("smp_mb", "arm64")
    lwsync = [p for p in TABLE
              if "lwsync" in TABLE[p]["power"][1] and not re.search(r"(?<!lw)sync", TABLE[p]["power"][1])]
    assert {"smp_wmb", "smp_rmb", "smp_store_release", "smp_load_acquire"} <= set(lwsync)
    assert insn("smp_mb", "power") == "sync"
    assert max(cost(p, "power") for p in lwsync) < cost("smp_mb", "power")


def render(text: str, test, changes) -> str:
    """The test's text with the fences of ``changes`` written in, each on a line of its own before
    the statement it precedes (or after its block's last one); every cheapest fix of the bundled
    twins is fences."""
    lines = text.splitlines()
    inserts = []
    for tid, places in changes.items():
        block_of = dict(blocks(test.threads[tid].body))
        for (kind, path), name in places.items():
            assert kind == "fence", "render writes fences only"
            block, k = block_of[path[:-1]], path[-1]
            assert k in accesses(block) or k - 1 in accesses(block), "render writes fences next to accesses only"
            inserts.append((block[k][-1][3] - 1 if k in accesses(block) else block[k - 1][-1][3], name))
    for at, name in sorted(inserts, reverse=True):
        lines.insert(at, f"\t{name}();")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """A release of mm-barriers for three students: their bundles, by student."""
    return class_release.release(tmp_path_factory.mktemp("course"), EX.path, SECRET)[1]


def grade(folder, student):
    return harness.grade(EX, folder, student=student, secret=SECRET)


def by_name(g):
    return {t.name: t for t in g.tests}


@pytest.mark.slow  # 3.6 s in session 16's quiet clean clone: make test runs it, make test-fast does not
def test_the_readme_commands_give_the_broken_twin_the_fix_full_marks_smp_mb_less(bundles, capsys):
    seen = set()
    for student, folder in bundles.items():
        v = variants.for_student(EX, student, SECRET)
        seen.add(v["test"])
        # the README: copy the test, look at it under every model
        copy = f"from kstep.memory import bundled; print(bundled.path({v['test']!r}).read_text(), end='')"
        with open(folder / "answer.litmus", "w") as out:
            subprocess.run([sys.executable, "-c", copy], check=True, stdout=out)
        assert main(["litmus", str(folder / "answer.litmus"), "--model", "all"]) == 0
        capsys.readouterr()
        g = by_name(grade(folder, student))
        assert g["same-program"].passed and g["forbidden"].score == 0 and g["least-cost"].score == 0

        text = (folder / "answer.litmus").read_text()
        test = parse(text)
        _, changes = barriers.least_cost(test, tuple(v["architectures"]), TABLE)
        (folder / "answer.litmus").write_text(render(text, test, changes))
        g = grade(folder, student)
        assert g.score == g.max_score, g.tests

        (folder / "answer.litmus").write_text(render(text, test, everywhere(test)))
        g = by_name(grade(folder, student))
        assert g["forbidden"].passed and 0 < g["least-cost"].score < g["least-cost"].max_score
        assert "a cheaper one costs" in g["least-cost"].output
    assert len(seen) > 1, "the students' variants differ"


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"C answer\n(* your test here *)\n", "no initial-state block"),
    (b"C x\n{ }\nP0(int *x) { frobnicate(*x); }\nexists (x=1)\n", "frobnicate"),
    (b"\xff\xfe" * 100, "not UTF-8"),
    (b"C x\n{ }\nP0(int *x) {" + b"(" * 5000 + b"\n", "deep"),
    (TWIN.replace("WRITE_ONCE(*next0, 0);", "WRITE_ONCE(*next0, 0);" + "\n\tsmp_mb();" * 3000).encode(), "refuses"),
])
def test_a_malformed_answer_scores_zero_with_one_line(tmp_path, content, message):
    (tmp_path / "answer.litmus").write_bytes(content)
    g = grade(tmp_path, variants.EXAMPLE)  # the example's test: TWIN
    assert sum(t.score for t in g.tests if t.visibility == harness.HIDDEN) == 0
    for t in g.tests:
        if t.visibility == harness.HIDDEN:
            assert message in t.output and "Traceback" not in t.output and len(t.output.strip().splitlines()) == 1


@pytest.mark.parametrize("old, new, why", [
    ("exists (1:r1=next0 /\\ next0=0)", "exists (1:r1=none /\\ next0=5)", "exists"),
    ("WRITE_ONCE(*next0, 0);", "WRITE_ONCE(*next0, 0);\n\tWRITE_ONCE(*next0, 0);", "P0"),
    ("WRITE_ONCE(*next0, 0);", "WRITE_ONCE(*next0, 2);", "P0"),
    ("int none = 0;", "int none = 1;", "initial values"),
    ("r1 = xchg_relaxed(tail, next1);", "r1 = cmpxchg_relaxed(tail, next1, next1);", "P1"),
])
def test_only_ordering_may_change(old, new, why):
    assert old in TWIN
    assert why in barriers.same_program(parse(TWIN.replace(old, new)), parse(TWIN))


def test_ordering_changes_are_the_same_program():
    fixed = TWIN.replace("WRITE_ONCE(*next0, 0);", "smp_store_release(next0, 0);\n\tsmp_mb();\n\tbarrier();")
    fixed = fixed.replace("r1 = xchg_relaxed(tail, next1);", "r1 = xchg_acquire(tail, next1);")
    assert barriers.same_program(parse(fixed), parse(TWIN)) is None
