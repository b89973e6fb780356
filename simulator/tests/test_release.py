"""kstep release: bundles that hold one student's variant and nothing secret, autograder zips that
hold the secret, a manifest that grading holds the exercise to, and the zip run as Gradescope runs
it, in an emulated /autograder."""

import csv
import json
import os
import shutil
import stat
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from kstep.cli import gradescope_student, main
from kstep.errors import UserError
from kstep.grading import exercise, harness, variants
from kstep.grading.course import check_manifest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SECRET = "release-test-secret-0123456789"
STUDENTS = ["alice@uni.example", "bob@uni.example", "s1234567"]


@pytest.fixture
def course(tmp_path):
    exercises = tmp_path / "exercises"
    shutil.copytree(HERE / "data" / "grading" / "answer-ex", exercises / "answer-ex")
    shutil.copytree(ROOT / "exercises" / "vma-predict", exercises / "vma-predict",
                    ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "course.toml"
    config.write_text(f'name = "Test course"\nsecret = "{SECRET}"\nexercises = "exercises"\n')
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "name"])
        for s in STUDENTS:
            w.writerow([s, "A Student"])
    return tmp_path, config, roster


def release(tmp_path, config, roster, capsys):
    out = tmp_path / "release"
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_bundles_hold_one_variant_and_nothing_secret(course, capsys):
    tmp_path, config, roster = course
    out = release(tmp_path, config, roster, capsys)
    assert sorted(p.name for p in (out / "students").iterdir()) == sorted(STUDENTS)
    for student in STUDENTS:
        for ex_id in ("answer-ex", "vma-predict"):
            b = out / "students" / student / ex_id
            ex = exercise.load(tmp_path / "exercises" / ex_id)
            names = {p.relative_to(b).parts[0] for p in files_under(b)}
            assert not names & {"solution", "hidden", "exercise.toml"}
            assert (b / "variant.toml").read_text() == harness.variant_toml(ex, variants.for_student(ex, student, SECRET))
            for f in ex.submission:
                assert (b / f).read_text() == ex.starter(f)
            pinned = json.loads((b / "manifest.json").read_text())
            assert pinned["exercises"][ex_id]["fingerprint"] == ex.fingerprint()
    for p in files_under(out / "students"):
        text = p.read_bytes()
        assert SECRET.encode() not in text and b"CANARY-KSTEP-" not in text, p
    assert SECRET not in (out / "manifest.json").read_text()


def test_the_same_inputs_give_the_same_variants_and_enough_of_them(course, capsys):
    tmp_path, config, roster = course
    ex = exercise.load(tmp_path / "exercises" / "vma-predict")
    first = [variants.for_student(ex, s, SECRET) for s in STUDENTS]
    assert first == [variants.for_student(ex, s, SECRET) for s in STUDENTS]
    assert [variants.for_student(ex, s, SECRET + "x") for s in STUDENTS] != first
    picked = {variants.index(ex.id, f"student{k}", SECRET, variants.size(ex.variants)) for k in range(2000)}
    assert len(picked) == variants.size(ex.variants)  # every variant is reachable, none favoured away


def test_the_autograder_zip_holds_the_secret_and_the_hidden_tests(course, capsys):
    tmp_path, config, roster = course
    out = release(tmp_path, config, roster, capsys)
    path = out / "gradescope" / "answer-ex.zip"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder", "course.toml", "manifest.json"} <= set(names)
        assert SECRET in z.read("course.toml").decode()
        assert "exercises/answer-ex/hidden/tests.py" in names and "kstep/pyproject.toml" in names
        assert all(stat.S_IMODE(z.getinfo(n).external_attr >> 16) == 0o755 for n in ("setup.sh", "run_autograder"))


def test_grading_refuses_an_exercise_changed_since_the_release(course, capsys):
    tmp_path, config, roster = course
    out = release(tmp_path, config, roster, capsys)
    sub = tmp_path / "sub.py"
    sub.write_text("def answer():\n    return 42\n")
    argv = ["grade", "answer-ex", str(sub), "--config", str(config), "--student", STUDENTS[0],
            "--manifest", str(out / "manifest.json")]
    assert main(argv) == 0
    assert "answer-ex (version 1): 4/4" in capsys.readouterr().out
    hidden = tmp_path / "exercises" / "answer-ex" / "hidden" / "tests.py"
    hidden.write_text(hidden.read_text() + "\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "exercise answer-ex has changed since the release" in err and err.count("\n") == 1


def test_gradescope_metadata_names_the_student(course, capsys):
    tmp_path, config, roster = course
    sub = tmp_path / "sub.py"
    sub.write_text("def answer():\n    return 42\n")
    meta = tmp_path / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"email": STUDENTS[2], "sid": "x"}]}))
    assert main(["grade", "answer-ex", str(sub), "--config", str(config), "--metadata", str(meta)]) == 0
    ex = exercise.load(tmp_path / "exercises" / "answer-ex")
    out = capsys.readouterr().out
    assert f"student: {STUDENTS[2]}" in out and f"offset={variants.for_student(ex, STUDENTS[2], SECRET)['offset']}" in out
    meta.write_text('{"users": []}')
    assert main(["grade", "answer-ex", str(sub), "--config", str(config), "--metadata", str(meta)]) == 2
    assert "no users[0].email in this submission metadata" in capsys.readouterr().err


def test_options_may_come_between_the_exercise_and_the_submission(course, capsys):
    """``kstep grade EX --config C --student ID SUB`` grades as the documented order does (argparse
    alone gave both positionals to EX and refused SUB)."""
    tmp_path, config, roster = course
    sub = tmp_path / "sub.py"
    sub.write_text("def answer():\n    return 42\n")
    options = ["--config", str(config), "--student", STUDENTS[1]]
    said = []
    for argv in (["answer-ex", str(sub), *options], ["answer-ex", *options, str(sub)]):
        assert main(["grade", *argv]) == 0, capsys.readouterr().err
        said.append(capsys.readouterr().out)
    assert said[0] == said[1] and f"student: {STUDENTS[1]}" in said[1] and "4/4" in said[1], said


@pytest.mark.parametrize("rows, message", [
    ([["name"], ["x"]], "needs a header row with a 'student' column"),
    ([["student"], ["bob"], ["bob"]], "line 3: student 'bob' is listed twice"),
    ([["student"], ["bad id!"]], "line 2: student id 'bad id!' is not"),
    ([["student"], ["example"]], "line 2: student 'example' is reserved"),
])
def test_a_bad_roster_is_one_line(course, capsys, rows, message):
    tmp_path, config, roster = course
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir"])
def test_a_config_roster_manifest_or_metadata_that_is_no_regular_file_is_refused_unread(course, capsys, special):
    """Read whole, /dev/zero fills memory and a FIFO with no writer waits forever: one line instead."""
    tmp_path, config, roster = course
    if special == "fifo":
        special = tmp_path / "fifo"
        os.mkfifo(special)
    elif special == "dir":
        special = tmp_path
    for argv in (["release", "--config", special, "--roster", roster, "--out", tmp_path / "r1"],
                 ["release", "--config", config, "--roster", special, "--out", tmp_path / "r2"]):
        assert main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert f"{special}: cannot read: is a" in err and err.count("\n") == 1
    ex = exercise.load(tmp_path / "exercises" / "answer-ex")
    for read in (lambda: gradescope_student(Path(special), "email"), lambda: check_manifest(special, ex)):
        with pytest.raises(UserError, match="cannot read: is a"):
            read()


def test_a_release_is_written_once(course, capsys):
    tmp_path, config, roster = course
    release(tmp_path, config, roster, capsys)
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(tmp_path / "release")]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.batch
def test_the_zip_grades_in_an_emulated_autograder(course, capsys):
    """Gradescope's layout: the zip unpacked in /autograder/source, setup.sh run once (it installs
    kstep into a virtual environment of its own), then run_autograder per submission, reading
    submission_metadata.json and writing results/results.json."""
    tmp_path, config, roster = course
    out = release(tmp_path, config, roster, capsys)
    # /autograder is open to everyone but for source/, as on Gradescope (pytest's folders are not)
    root = Path(tempfile.mkdtemp(prefix="kstep-autograder-"))
    root.chmod(0o755)
    try:
        autograder(root, out, tmp_path)
    finally:
        shutil.rmtree(root)


def autograder(root: Path, out: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(out / "gradescope" / "answer-ex.zip") as z:
        z.extractall(root / "source")
        for info in z.infolist():
            os.chmod(root / "source" / info.filename, info.external_attr >> 16 & 0o777)
    # Gradescope's Python is the system's, under /usr: find it first, as there
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PATH": "/usr/bin:/bin:" + os.environ["PATH"]}
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700
    (root / "submission").mkdir()
    (root / "submission" / "sub.py").write_text("def answer():\n    return 42\n")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": STUDENTS[1], "name": "B"}]}))
    r = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 4 and len(results["tests"]) == 3, results
    ex = exercise.load(tmp_path / "exercises" / "answer-ex")
    assert f"offset={variants.for_student(ex, STUDENTS[1], SECRET)['offset']}" in r.stdout
    # A submission folder holding a FIFO where sub.py belongs (Gradescope grades a folder): a zero
    # with the reason, at once, and results.json written
    (root / "submission" / "sub.py").unlink()
    os.mkfifo(root / "submission" / "sub.py")
    r = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                       timeout=600)
    results = json.loads((root / "results" / "results.json").read_text())
    assert r.returncode == 0 and results["score"] == 0, results
    assert "sub.py: cannot read: is a FIFO" in results["output"], results
    (root / "submission" / "sub.py").unlink()
    # The weaker mode, for a container without user namespaces: the submission, as uid 61000,
    # cannot read /autograder/source, closed by setup.sh.
    (root / "submission" / "sub.py").write_text(
        f"def answer():\n    try:\n        open({str(root / 'source' / 'course.toml')!r}).read()\n"
        f"        return 'read the secret'\n    except OSError:\n        return 42\n")
    weak = subprocess.run([str(root / "kstep-venv" / "bin" / "kstep"), "grade", "answer-ex", str(root / "submission"),
                           "--config", str(root / "source" / "course.toml"), "--student", STUDENTS[1],
                           "--sandbox", "user"], env=env, capture_output=True, text=True)
    assert weak.returncode == 0 and "answer-ex (version 1): 4/4" in weak.stdout, weak.stdout + weak.stderr


@pytest.mark.slow
def test_a_c_exercise_zip_builds_the_lab_without_the_kernel_tree(tmp_path, capsys):
    """A Gradescope image has no Debian archive to fetch linux-source from: the zip carries the
    kernel files the lab compiles, and its kernel lab builds from them alone."""
    exercises = tmp_path / "exercises"
    shutil.copytree(ROOT / "exercises" / "qspin-head-claim", exercises / "qspin-head-claim",
                    ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "course.toml"
    config.write_text(f'name = "Test course"\nsecret = "{SECRET}"\nexercises = "exercises"\n')
    roster = tmp_path / "roster.csv"
    roster.write_text("student\ns1234567\n")
    out = release(tmp_path, config, roster, capsys)
    unpacked = tmp_path / "autograder"
    with zipfile.ZipFile(out / "gradescope" / "qspin-head-claim.zip") as z:
        z.extractall(unpacked)
        sources = {n for n in z.namelist() if n.startswith("kernel-lab/build/")}
    assert "kernel-lab/build/src/kernel/locking/qspinlock.c" in sources
    assert all(n.startswith("kernel-lab/build/src/") for n in sources)
    patched = (unpacked / "kernel-lab/build/src/kernel/locking/qspinlock.c").read_text()
    assert patched == (ROOT / "kernel-lab/build/src/kernel/locking/qspinlock.c").read_text()
    built = subprocess.run(["make", "-s", "-C", str(unpacked / "kernel-lab"), "LINUX=", "ARCH=x86_64",
                            "build/x86_64/qspinlock-torture"], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    # and without them, the build says what is missing rather than compiling something else
    shutil.rmtree(unpacked / "kernel-lab" / "build")
    built = subprocess.run(["make", "-s", "-C", str(unpacked / "kernel-lab"), "LINUX=", "ARCH=x86_64",
                            "build/x86_64/qspinlock-torture"], capture_output=True, text=True)
    assert built.returncode != 0 and "run make linux-source" in built.stderr
