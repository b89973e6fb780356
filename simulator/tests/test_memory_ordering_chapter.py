"""The Memory ordering chapter: every verdict it shows is the models', and every litmus test, model
and kernel name it mentions exists."""
import re
from pathlib import Path

import pytest

from kstep.memory import bundled
from kstep.views.site.litmus_pages import MODULES, shapes, verdicts

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = (ROOT / "docs" / "chapters" / "memory-ordering.md").read_text()
DIRECTIVE = re.compile(r"```\{kstep-litmus-verdicts\}([^\n]*)\n```")
ANY_DIRECTIVE = re.compile(r"```\{kstep-[a-z-]+\}[^\n]*\n```")
# Where 6.12 defines or uses the kernel names the chapter mentions.
KERNEL_FILES = (
    "kernel/locking/qspinlock.c", "kernel/locking/mcs_spinlock.h", "include/asm-generic/qspinlock.h",
    "include/asm-generic/barrier.h", "include/linux/atomic.h", "include/linux/seqlock.h", "include/linux/mm.h",
    "include/linux/mm_types.h", "include/linux/mmap_lock.h", "include/linux/rcupdate.h", "include/linux/slab.h",
    "include/linux/spinlock.h", "include/linux/sched/coredump.h", "kernel/rcu/tree.c", "kernel/fork.c",
    "mm/memory.c", "mm/gup.c", "include/linux/rmap.h",
)


def named_tests() -> list[str]:
    return [name for m in DIRECTIVE.finditer(CHAPTER) for name in m.group(1).split()]


def prose() -> str:
    """The chapter's own words: without the directives and the {doc} links to other pages."""
    return re.sub(r"\{doc\}`[^`]*`", "", ANY_DIRECTIVE.sub("", CHAPTER))


def quoted() -> set[str]:
    return set(re.findall(r"`([^`]+)`", prose()))


def test_every_litmus_test_the_chapter_names_exists_and_each_bundled_one_has_its_place():
    known = {*shapes(), *bundled.names()}
    assert [n for n in named_tests() if n not in known] == []
    # each mechanism test (and so its generated page) sits in the chapter exactly once
    assert sorted(n for n in named_tests() if n in bundled.names()) == sorted(bundled.names())


def test_the_chapter_states_no_verdict_by_hand():
    words = re.findall(r"\b(allowed|forbidden|never|sometimes|always|n/a)\b", prose(), re.IGNORECASE)
    assert words == [], "verdicts come from the kstep-litmus-verdicts directive, computed at build time"


def test_the_verdicts_shown_are_the_models():
    expected = bundled.expected()
    for name in bundled.names():
        shown = verdicts(name)
        assert list(shown) == [m.NAME for m in MODULES]
        for model, verdict in shown.items():
            row = expected[name][model]
            want = "n/a" if row is None else "forbidden" if row["result"] == "Never" else "allowed"
            assert verdict == want, (name, model)


def test_every_model_and_litmus_name_in_backquotes_is_one_kstep_has():
    models = {m.NAME for m in MODULES}
    names = set(bundled.names())
    parts = [n.split("-") for n in names]
    suffixes = {"-" + "-".join(p[i:]) for p in parts for i in range(1, len(p))}
    lab = (ROOT / "kernel-lab" / "README.md").read_text()
    unknown = []
    for token in quoted():
        if re.fullmatch(r"[a-z0-9]+", token) and token in models:
            continue
        if re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", token):
            exercise = (ROOT / "exercises" / token / "exercise.toml").is_file()
            if token not in names and f"`{token}`" not in lab and not exercise:  # a litmus test, lab build, exercise
                unknown.append(token)
        elif token.startswith("-") and token not in suffixes:
            unknown.append(token)
    assert unknown == []


def test_every_kernel_name_the_chapter_mentions_is_in_6_12(linux_tree):
    text = "\n".join((linux_tree / f).read_text(errors="replace") for f in KERNEL_FILES)
    missing = []
    for token in quoted():
        if token.startswith(("kstep ", "-")) or token in {m.NAME for m in MODULES} or token in bundled.names():
            continue
        if "/" in token:  # a path in the kernel tree or in this repository
            if not (linux_tree / token).exists() and not (ROOT / token).exists():
                missing.append(token)
            continue
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", token):
            if re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", token) or word == "exists":
                break  # a kernel-lab build's name; the litmus format's own keyword
            if not re.search(rf"\b{word}\b", text):
                missing.append(word)
    assert missing == []


@pytest.mark.parametrize("commit", ["Ensure node is initialised before updating prev->next",
                                    "Elide back-to-back RELEASE operations with smp_wmb()"])
def test_the_qspinlock_history_names_both_2018_commits(commit):
    assert commit in CHAPTER.replace("\n", " ")
