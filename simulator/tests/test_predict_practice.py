"""damon-predict and fork-predict are practice: their one-thread runs leave no deciding step to ask
for, so following the README and copying ``-c`` answers everything, and a release must not turn that
into a grade.  Each is released as an instructor would; the bundle is worked as its README says;
the copy earns full marks from ``kstep grade`` (which is why they are practice), and the release has
no autograder for them and refuses to grade them against its manifest."""

import json
from pathlib import Path

import pytest
import readme_bundle

from kstep.grading import exercise, predict

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("exercise_id", ["damon-predict", "fork-predict"])
def test_a_practice_predict_exercise_is_released_without_a_grade(exercise_id, tmp_path, capsys, monkeypatch):
    folder = ROOT / "exercises" / exercise_id
    ex = exercise.load(folder)
    r = readme_bundle.release(tmp_path, folder, capsys)
    assert f"{exercise_id}: practice only, no autograder" in r.said
    assert (r.bundle / "README.md").is_file() and (r.bundle / "variant.toml").is_file()
    assert not (r.out / "gradescope" / f"{exercise_id}.zip").exists()
    assert json.loads((r.out / "manifest.json").read_text())["exercises"][exercise_id]["graded"] is False

    # Copying what the README's command prints with -c answers every question: nothing to grade.
    asked, revealed = readme_bundle.run_readme(r, capsys, monkeypatch)
    printed = readme_bundle.printed_answers(revealed)
    _, sc, _ = predict.run(ex.mechanism, folder, r.variant["scenario"], r.variant["seed"])
    assert set(printed) == {q.id for q in sc.questions} and all(f"[{q.id}]" in asked for q in sc.questions)
    (r.bundle / "answers.toml").write_text(
        "[answers]\n" + "".join(f"{q.id} = {readme_bundle.toml_value(q, printed[q.id][0])}\n" for q in sc.questions))
    status, said = readme_bundle.grade(r, exercise_id, capsys)
    got, most = readme_bundle.score(said, exercise_id)
    assert status == 0 and got == most and f"{exercise_id} is practice, not for a grade" in said

    # Against the release, the same answers get no grade at all: one line, exit status 2.
    status, said = readme_bundle.grade(r, exercise_id, capsys, "--manifest", str(r.out / "manifest.json"))
    assert status == 2 and said.count("\n") == 1
    assert f"exercise {exercise_id} was released for practice, not for a grade" in said
