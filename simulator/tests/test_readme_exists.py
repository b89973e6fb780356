"""The README's "What exists" table, its exercise count and its chapter order, held to the tree: each
cell is computed here from what the repository holds (models, scenarios, chapters, notebooks, ports,
probes, exercises), so a README that promises or forgets something fails; and the tour's counterexample
length, held to what explore finds."""

import re
import tomllib

import kstep
from kstep.scenario_spec import scenario as scenarios
from kstep.lab.guest.probes import PROBES
from kstep.models import MODELS
from test_cli import ROOT

README = (ROOT / "README.md").read_text()


def readme_table() -> list[list[str]]:
    section = README.split("## What exists", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip().strip("`") for cell in row] for row in rows[2:]]  # no header, no rule


def chapter_order() -> list[str]:
    return re.findall(r"^chapters/([\w-]+)$", (ROOT / "docs" / "index.md").read_text(), re.M)


def exercises() -> dict[str, str]:
    return {p.parent.name: tomllib.loads(p.read_text())["mechanism"]
            for p in (ROOT / "exercises").glob("*/exercise.toml")}


def practice() -> list[str]:
    """The exercises a release gives out for practice only, never for a grade."""
    return sorted(p.parent.name for p in (ROOT / "exercises").glob("*/exercise.toml")
                  if tomllib.loads(p.read_text()).get("practice"))


def row_from_tree(mech: str) -> list[str]:
    chapter = ROOT / "docs" / "chapters" / f"{mech}.md"
    notebooks = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if f'\\"{mech}\\"' in p.read_text()]
    port = ROOT / "kernel-lab" / mech
    probes = [p for p in PROBES if mech.startswith(p)]  # a probe is named by its mechanism's first word
    return [mech, str(chapter.relative_to(ROOT)) if chapter.exists() else "none",
            str(len(scenarios.bundled(mech))), str(sum(v.broken for v in MODELS[mech].variants.values())),
            ", ".join(str(p.relative_to(ROOT)) for p in notebooks) or "none",
            f"{port.relative_to(ROOT)}/" if port.is_dir() else "none", ", ".join(probes) or "none",
            str(sum(m == mech for m in exercises().values()))]


def test_the_what_exists_table_is_the_tree_in_chapter_order():
    table = readme_table()
    mechanisms = [c for c in chapter_order() if c in MODELS]
    assert [row[0] for row in table] == mechanisms, "rows: one per mechanism's chapter, in the site's order"
    assert sorted(mechanisms) == sorted(MODELS), "a chapter per mechanism"
    assert table == [row_from_tree(row[0]) for row in table]
    # a chapter that is no mechanism's (memory ordering) is named under the table, with its notebook
    section = README.split("## What exists", 1)[1].split("\n## ", 1)[0]
    for chapter in (c for c in chapter_order() if c not in MODELS):
        assert f"`docs/chapters/{chapter}.md`" in section, chapter
        for notebook in (ROOT / "notebooks").glob(f"*-{chapter}.ipynb"):
            assert f"`notebooks/{notebook.name}`" in section, notebook.name


def test_the_readme_counts_the_exercises_there_are():
    counts = re.findall(r"`exercises/` holds (\d+) exercises, (\d+) of them graded", README)
    assert counts == [(str(len(exercises())), str(len(exercises()) - len(practice())))]
    # the practice ones (released without an autograder: exercise.toml's practice) are named as such
    named = re.findall(r"(\d+) are practice only \(([^)]*)\)", README)
    assert named == [(str(len(practice())), ", ".join(f"`{e}`" for e in practice()))]
    # memory-ordering exercises span the mechanisms' litmus tests: no row of the table holds them
    memory = re.findall(r"(\d+) of them on memory ordering", README)
    assert memory == [str(sum(m == "memory" for m in exercises().values()))]
    assert sum(int(row[-1]) for row in readme_table()) + int(memory[0]) == len(exercises())


def test_the_readme_says_nothing_is_planned():
    assert "planned" not in README.lower()


def test_the_layout_says_what_each_entry_of_the_package_holds():
    """Every folder and file of simulator/kstep/ has its line in the README's layout section."""
    section = README.split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    block = section.split("\nsimulator/kstep/", 1)[1].split("\nsimulator/tests/", 1)[0]
    named = set(re.findall(r"[\w.-]+/?", block))
    package = ROOT / "simulator" / "kstep"
    entries = {p.name + "/" * p.is_dir() for p in package.iterdir() if p.name not in ("__init__.py", "__pycache__")}
    assert entries - named == set(), "simulator/kstep/ entries the README's layout does not mention"
    # and each folder inside one, but a mechanism's own (models/: "one package per mechanism",
    # scenarios/: "one folder per mechanism")
    folders = {f"{p.parent.name}/{p.name}/" for p in package.glob("*/*") if p.is_dir() and p.name != "__pycache__"
               and p.parent.name not in ("models", "scenarios")}
    assert {f for f in folders if f.split("/")[1] + "/" not in named} == set(), (
        "folders of simulator/kstep/ the README's layout does not mention")


def test_the_table_of_names_holds_to_the_tree():
    """The layout's one table of names: a row per mechanism; its exercises are exactly those whose ids
    carry its prefix; its modules exist; its probe is one ``kstep lab`` knows."""
    section = README.split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| `")]
    assert sorted(row[0].strip("`") for row in rows) == sorted(MODELS)
    for mech, prefix, *where, probe, _measure in rows:
        mech, prefix = mech.strip("`"), prefix.strip("`").rstrip("*")
        assert {e for e, m in exercises().items() if m == mech} == {e for e in exercises() if e.startswith(prefix)}
        paths = [p for cell in where + [probe, _measure] for p in re.findall(r"`([\w/.]+)`", cell) if "/" in p]
        assert paths and all((ROOT / "simulator" / "kstep" / p).exists() for p in paths), (mech, paths)
        assert probe == "none" or probe.split()[0].strip("`") in PROBES, probe


def test_the_tours_counterexample_is_as_long_as_explore_finds():
    """The five-minute tour names the shortest harmful interleaving of its broken variant by its length;
    a model that gains or loses a step (6.12.117's mm_lock_seqcount_begin did) changes it."""
    tour = README.split("## Five-minute tour", 1)[1].split("\n## ", 1)[0]
    (said,) = re.findall(r"reads the freed VMA, (\d+) steps\)", tour)
    assert "kstep explore vma-locks --scenario munmap-vs-fault --variant free-immediately" in tour
    found = kstep.open("vma-locks", "munmap-vs-fault", variant="free-immediately").explore()
    assert found.violation.invariant == "no-use-after-free" and int(said) == len(found.counterexample)
