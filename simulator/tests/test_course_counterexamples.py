"""The counterexamples the course site shows without searching (counterexamples.json, written by
``make verdicts``) are what a search of the current models finds, and a record the model no longer
follows is searched for again rather than shown."""

import json

import pytest

from kstep.views import course


@pytest.mark.slow  # a search of every broken variant: about ten seconds of CPU
def test_the_recorded_counterexamples_are_what_a_search_finds_now():
    """Stale records would show a run the models no longer take first: rerun scripts/verdicts
    --counterexamples (make verdicts) after a model change."""
    assert course.searched_records() == json.loads(course.RECORDED.read_text())


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
