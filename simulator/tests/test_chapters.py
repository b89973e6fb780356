"""The chapters name only what exists: every variant, scenario, litmus test, exercise and kernel-lab build they
quote in backticks is one kstep has, every file of this repository they quote is there, every ``function()``
is defined in the 6.12 source (a system call as its ``sys_`` entry), and the DAMON chapter lists every
6.12.y DAMON fix the model leaves out."""

import re
from pathlib import Path

import pytest

from kstep.source.index import load_index
from kstep.memory import bundled as litmus
from kstep.models import MODELS
from kstep.models.damon import variants as damon_fixes
from kstep.scenario_spec import scenario

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "docs" / "chapters").glob("*.md"))
QUOTED = re.compile(r"`([^`\n]+)`")
NAME = re.compile(r"[a-z0-9][a-z0-9.]*(?:-[a-z0-9.]+)+|v6\.12[\w.-]*")  # how variants and scenarios are spelt
CALL = re.compile(r"([A-Za-z_]\w*)\(\)")
# functions a chapter names that no 6.12 kernel has, and why it may
NOT_IN_6_12 = {"pte_batch_remaining": "the v4 fork-batching series' arch hook, which was never merged"}


def quoted(chapter):
    return set(QUOTED.findall(chapter.read_text()))


def names():
    out = set(MODELS) | set(litmus.names())
    out |= set(re.findall(r"build/\$\(1\)/([\w-]+)", (ROOT / "kernel-lab" / "Makefile").read_text()))
    out |= {p.parent.name for p in (ROOT / "exercises").glob("*/exercise.toml")}
    for mech, model in MODELS.items():
        out |= set(model.variants) | set(scenario.bundled(mech))
    return out


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_variant_scenario_litmus_test_exercise_and_lab_build_a_chapter_names_exists(chapter):
    assert sorted(t for t in quoted(chapter) if NAME.fullmatch(t) and t not in names()) == []


# the repository's own top-level folders (a kernel path such as mm/memory.c starts otherwise); what
# make bench writes under bench/results/ is not in a checkout
REPOSITORY = ("bench/", "docs/", "exercises/", "kernel-lab/", "scripts/", "simulator/")
GENERATED = "bench/results/"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_repository_file_a_chapter_names_exists(chapter):
    paths = {w.rstrip(".,;:)") for t in quoted(chapter) for w in t.split() if w.startswith(REPOSITORY)}
    assert sorted(p for p in paths if not p.startswith(GENERATED) and not (ROOT / p).exists()) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_function_a_chapter_calls_is_in_the_6_12_source(chapter):
    defined = set().union(*load_index().values())
    calls = {m.group(1) for t in quoted(chapter) if (m := CALL.fullmatch(t))}
    assert sorted(f for f in calls if not {f, f"sys_{f}"} & defined and f not in NOT_IN_6_12) == []


def test_the_damon_chapter_lists_every_fix_the_model_leaves_out():
    text = " ".join((ROOT / "docs" / "chapters" / "damon.md").read_text().split())
    missing = [f"6.12.{v} {title}" for v, title, why in damon_fixes.NOT_MODELLED
               if f"- 6.12.{v}, *{title}*: {' '.join(why.split())}." not in text]
    assert missing == []
