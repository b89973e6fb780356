"""The counterexamples the course site shows without searching (counterexamples.json, written by
``make verdicts``) are what a search of the current models finds, and a record the model no longer
follows is searched for again rather than shown."""

import json

import pytest

from kstep.models import MODELS
from kstep.views import course


def runs_as_the_kernel_under_sc(mech: str, variant: str) -> bool:
    """The variant's steps and calls are the kernel variant's but for their text, and so are its
    constants but for the litmus test it names: a bug only a weaker memory model shows, whose
    sequentially consistent runs are the kernel's own."""
    cls = MODELS[mech]

    def runs(model):
        return ({label: st._replace(what="") for label, st in model.table.steps.items()}, model.table.calls,
                {k: v for k, v in model.variant.params.items() if k != "litmus"})

    return runs(cls(variant)) == runs(cls(cls.default_variant))


@pytest.mark.slow  # a search of every broken variant: about five seconds of CPU
def test_the_recorded_counterexamples_are_what_a_search_finds_now(monkeypatch):
    """Stale records would show a run the models no longer take first: rerun scripts/verdicts
    --counterexamples (make verdicts) after a model change.

    A variant that runs as the kernel under sc is not searched again: its search is the kernel's
    explored on every bundled scenario, which test_cli's clean check of the kernel's variant does
    (vma-locks' relaxed-mm-lock-seq took 24 of this test's 29 s), so it finds nothing."""
    search = course.search

    def searched(mech, variant, **kwargs):
        return (None, []) if runs_as_the_kernel_under_sc(mech, variant) else search(mech, variant, **kwargs)

    monkeypatch.setattr(course, "search", searched)
    assert course.searched_records() == json.loads(course.RECORDED.read_text())


def test_only_a_bug_that_weaker_memory_models_show_runs_as_the_kernel_under_sc():
    alike = {(mech, name) for mech, cls in MODELS.items() for name, variant in cls.variants.items()
             if variant.broken and runs_as_the_kernel_under_sc(mech, name)}
    assert alike == {(mech, name) for mech, cls in MODELS.items() for name, variant in cls.variants.items()
                     if variant.broken and "litmus" in variant.params}
    assert ("vma-locks", "relaxed-mm-lock-seq") in alike


def test_each_record_runs_again_to_its_violation_and_a_broken_one_is_searched_again(tmp_path, monkeypatch):
    doc = json.loads(course.RECORDED.read_text())
    for mech, rows in doc["counterexamples"].items():
        for variant, row in rows.items():
            found = course.recorded(mech, variant)
            assert found is not None, (mech, variant)
            assert found.violation == found.counterexample.violation and found.violation.invariant == row["invariant"]
            assert " ".join(map(str, found.counterexample.actions)) == row["schedule"]
    mech, variant = "fork-batch", "fork-without-vma-locks"
    row = doc["counterexamples"][mech][variant]
    searched, _ = course.search(mech, variant, order=course.verdict_order(mech, variant))
    for schedule in (row["schedule"].rsplit(" ", 1)[0], row["schedule"] + " " + row["schedule"].split()[0]):
        doc["counterexamples"][mech][variant] = {**row, "schedule": schedule}  # a step short, a step too many
        tampered = tmp_path / "counterexamples.json"
        tampered.write_text(json.dumps(doc))
        monkeypatch.setattr(course, "RECORDED", tampered)
        assert course.recorded(mech, variant) is None
        found, _ = course.counterexample(mech, variant)
        assert found.counterexample.actions == searched.counterexample.actions
