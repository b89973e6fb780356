"""The mechanisms' barriers as litmus tests: verdicts computed by the models, kept in a committed
table, and the orderings the course teaches (issue 24, section 3)."""
import re
import subprocess
import sys

import pytest

from kstep.memory import bundled

# Each broken twin and the 6.12 test it breaks.
TWINS = {
    "qspinlock-init-before-link-no-wmb": "qspinlock-init-before-link",
    "qspinlock-init-before-tail-no-wmb": "qspinlock-init-before-tail",
    "mcs-handoff-relaxed-wait": "mcs-handoff",
    "qspinlock-set-locked-relaxed-wait": "qspinlock-set-locked",
    "vma-mm-lock-seq-no-wmb": "vma-mm-lock-seq",
    "vma-detach-rcu-no-grace-period": "vma-detach-rcu",
    "rcu-publish-once": "rcu-publish",
    "rcu-grace-period-free-no-sync": "rcu-grace-period-free",
    "fork-gup-fast-ptl-ignores-seq": "fork-gup-fast-ptl",
}
# 6.12 tests whose bad outcome some model allows: scenarios/litmus/README.md says what else in the
# kernel forbids it, or that it is open. Listed here so that a new such verdict is a failure to explain.
OPEN = {"fork-gup-fast": {"tso", "arm64", "power", "lkmm"}, "fork-gup-fast-ptl": {"arm64", "power", "lkmm"}}


@pytest.fixture(scope="module")
def table():
    return bundled.table()


def test_committed_table_is_what_the_models_compute(table):
    assert table == bundled.expected(), "stale: run scripts/mechanism-litmus-table and review the diff"


def test_every_test_has_a_twin_or_is_one():
    names = set(bundled.names())
    correct = set(TWINS.values()) | {"qspinlock-init-before-link-feb2018", "qspinlock-init-before-tail-feb2018",
                                     "fork-gup-fast"}
    assert names == correct | set(TWINS)


def allows_bad(row, model) -> bool:
    return row[model] is not None and row[model]["result"] != "Never"


def test_each_6_12_ordering_forbids_its_bad_outcome_where_not_stated_open(table):
    for name in set(TWINS.values()) | {"fork-gup-fast", "qspinlock-init-before-link-feb2018",
                                       "qspinlock-init-before-tail-feb2018"}:
        allowed = {m for m in table[name] if allows_bad(table[name], m)}
        assert allowed == OPEN.get(name, set()), name


def test_each_broken_twin_allows_the_bad_outcome_somewhere_its_correct_form_forbids(table):
    for twin, correct in TWINS.items():
        broken = {m for m in table[twin] if allows_bad(table[twin], m) and not allows_bad(table[correct], m)}
        assert broken, f"{twin} breaks nothing {correct} protects"


def test_node_initialisation_without_smp_wmb_is_allowed_on_arm64_and_power_but_not_x86(table):
    for name in ("qspinlock-init-before-link-no-wmb", "qspinlock-init-before-tail-no-wmb"):
        verdicts = {m: table[name][m]["result"] for m in ("tso", "arm64", "power", "lkmm")}
        assert verdicts == {"tso": "Never", "arm64": "Sometimes", "power": "Sometimes", "lkmm": "Sometimes"}


def test_headers_cite_6_12_source_lines_that_exist(linux_tree):
    root = linux_tree
    cite = re.compile(r"((?:kernel|include|mm|lib)/[\w/.-]+\.[ch])\s*:(\d+)")
    for name in bundled.names():
        header = bundled.path(name).read_text().split("*)", 1)[0]
        cites = cite.findall(re.sub(r"\s*\n\s*\*\s*", " ", header))
        assert cites, f"{name}: no file:line of the 6.12 source in its header"
        for file, line in cites:
            lines = (root / file).read_text(errors="replace").count("\n")
            assert int(line) <= lines, f"{name}: {file} has {lines} lines, not {line}"


def test_cli_runs_a_bundled_test_by_name():
    out = subprocess.run([sys.executable, "-m", "kstep", "litmus", "qspinlock-init-before-link-no-wmb",
                          "--model", "arm64"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "arm64: Sometimes"
    assert "\n  1:r1=locked1 locked1=0\n" in out.stdout


def test_cli_lists_the_bundled_tests():
    out = subprocess.run([sys.executable, "-m", "kstep", "litmus", "--list"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.split() == bundled.names()
