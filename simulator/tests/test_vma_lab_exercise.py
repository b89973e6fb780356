"""The vma-lab exercise beyond what every exercise is held to (test_exercises.py): its data are the
lab's own, a student's own boot is graded against itself, and broken submissions lose the points
of what they break: counts of another result or seed, a result that does not hold together, a
conclusion their own numbers do not support."""

import json
import re
from pathlib import Path

import pytest

from kstep.cli import main
from kstep.grading import exercise, harness, variants
from kstep.lab.guest import probes

ROOT = Path(__file__).resolve().parents[2]
EX = exercise.load(ROOT / "exercises" / "vma-lab")
RECORDED = ROOT / "kernel-lab" / "guest" / "recorded"
SECRET = "test-secret-of-the-vma-lab-tests"
ARCHES = ("x86_64", "arm64", "ppc64le")
MODES = ("faults", "writer")


def student(arch, seed):
    """A student id whose variant is (arch, seed)."""
    return next(s for s in (f"student{k}" for k in range(500))
                if variants.for_student(EX, s, SECRET) == {"arch": arch, "seed": seed})


def recorded(arch):
    [path] = RECORDED.glob(f"{arch}-2*.json")  # the boot with every probe
    return json.loads(path.read_text())


def test_the_exercise_data_are_the_labs_own():
    for arch in ARCHES:
        full = recorded(arch)
        want = {**full, "probes": ["vma"], "cases": [c for c in full["cases"] if c["name"] == "vma"]}
        assert json.loads((EX.path / "data" / f"recorded-{arch}.json").read_text()) == want, arch
    for mode in MODES:
        assert (EX.path / "data" / f"{mode}.toml").read_text() == \
            (ROOT / "kernel-lab" / "guest" / "model" / f"vma-{mode}.toml").read_text()


def model_run(capsys, variant, mode, seed):
    """The counts the README's kstep run command prints, as a student reads them."""
    assert main(["run", "vma-locks", "--scenario", str(EX.path / "data" / f"{mode}.toml"), "--variant", variant,
                 "-s", str(seed), "-c"]) == 0
    answers = dict(re.findall(r"^  (vma_lock_\w+): (\d+)$", capsys.readouterr().out, re.M))
    a = {k: int(v) for k, v in answers.items()}
    fell_back = a["vma_lock_abort"] + a["vma_lock_miss"]
    return {"faults": a["vma_lock_success"] + fell_back, "fell_back": fell_back, "retried": a["vma_lock_retry"]}


def report(capsys, result, seed, change=None):
    """report.toml as a careful student writes it from ``result`` and the model's run of ``seed``;
    ``change`` replaces fields: {"conclusion.agree": "false"}."""
    case = next(c for c in result["cases"] if c["name"] == "vma")
    modes = probes._by_mode(case["data"], "vma")
    tables = {}
    for mode in MODES:
        c = probes.vma_counts(modes[mode])
        tables[f"kernel.{mode}"] = {"faults": c["w_ok"] + c["w_null"], "fell_back": c["w_null"],
                                    "retried": c["w_retry"], "calls": c["ok"] + c["null"], "pgfault": c["pgfault"]}
        tables[f"model.{mode}"] = model_run(capsys, result["models"]["vma-locks"], mode, seed)
    share = {who: tables[f"{who}.writer"]["fell_back"] / tables[f"{who}.writer"]["faults"] for who in ("kernel", "model")}
    tables["conclusion"] = {"agree": "true", "kernel_share": f"{share['kernel']:.4f}",
                            "model_share": f"{share['model']:.4f}", "explanation": '"what the numbers show"'}
    for key, value in (change or {}).items():
        table, field = key.rsplit(".", 1)
        tables[table][field] = value
    return "".join(f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in t.items()) + "\n" for name, t in tables.items())


def grade(tmp_path, who, report_text, result=None):
    sub = tmp_path / "sub"
    sub.mkdir(exist_ok=True)
    (sub / "report.toml").write_text(report_text)
    if result is not None:
        (sub / "result.json").write_text(json.dumps(result))
    g = harness.grade(EX, sub, student=who, secret=SECRET)
    return {t.name: (t.score, t.max_score) for t in g.tests}, {t.name: t.output for t in g.tests}


def lost(scores):
    return sorted(name for name, (got, most) in scores.items() if got < most)


def test_a_students_own_boot_is_graded_against_itself(capsys, tmp_path):
    # The arm64 boot with every probe stands in for a fresh one: the grader reads the counts from it.
    own = recorded("arm64")
    scores, _ = grade(tmp_path, student("arm64", 2), report(capsys, own, 2), own)
    assert lost(scores) == []


@pytest.mark.parametrize("broken, loses", [
    ("the model run with another seed", ["model-counts"]),
    ("a boot whose counts were edited", ["result-holds-together"]),
    ("a boot of another architecture", ["result-holds-together"]),
    ("disagree where the numbers agree", ["conclusion-follows"]),
    ("a share its counts do not give", ["conclusion-follows"]),
    ("a result.json that is no lab result", ["kernel-counts", "model-counts", "result-holds-together"]),
])
def test_a_broken_submission_loses_what_it_breaks(capsys, tmp_path, broken, loses):
    who = student("arm64", 2)
    own = recorded("arm64")
    if broken == "the model run with another seed":
        scores, _ = grade(tmp_path, who, report(capsys, own, 1))
    elif broken == "a boot whose counts were edited":
        edited = json.loads(json.dumps(own))
        writer = next(d for c in edited["cases"] if c["name"] == "vma" for d in c["data"] if d["mode"] == "writer")
        writer["pgfault"] = str(int(writer["pgfault"]) // 2)  # half the faults the probe counted
        scores, outputs = grade(tmp_path, who, report(capsys, edited, 2), edited)
        assert "writer:" in outputs["result-holds-together"] and "pgfault rose" in outputs["result-holds-together"]
    elif broken == "a boot of another architecture":
        scores, outputs = grade(tmp_path, student("ppc64le", 2), report(capsys, own, 2), own)
        assert "your variant's architecture is ppc64le" in outputs["result-holds-together"]
    elif broken == "disagree where the numbers agree":
        scores, _ = grade(tmp_path, who, report(capsys, own, 2, {"conclusion.agree": "false"}))
    elif broken == "a share its counts do not give":
        scores, outputs = grade(tmp_path, who, report(capsys, own, 2, {"conclusion.kernel_share": "0.0300"}))
        assert "kernel_share = 0.03" in outputs["conclusion-follows"]
    else:
        hostile = dict(own, cases=[{"name": "vma", "ok": True, "data": [{"mode": ["writer"], "ok": [1]}]}])
        scores, outputs = grade(tmp_path, who, report(capsys, own, 2), hostile)
        assert outputs["kernel-counts"] == ("result.json: its cases are not a list of {name, ok, data, raw} of known "
                                            "probes, with text as the console gave it")
        scores_too, outputs = grade(tmp_path, who, report(capsys, own, 2), dict(own, models={"vma-locks": ["v6.12"]}))
        assert lost(scores_too) == ["model-counts"] and "names no vma-locks model variant" in outputs["model-counts"]
    assert lost(scores) == loses, scores


def test_counts_copied_from_another_boot_lose_the_kernel_counts(capsys, tmp_path):
    # x86's counts reported by an arm64 student who hands in no boot: graded against arm64's recorded one
    scores, outputs = grade(tmp_path, student("arm64", 2), report(capsys, recorded("x86_64"), 2))
    assert lost(scores) == ["kernel-counts"]
    assert "not data/recorded-arm64.json's" in outputs["kernel-counts"]
