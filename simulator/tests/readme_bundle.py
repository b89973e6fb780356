"""A predict exercise as a student meets it: released to one student by ``kstep release``, its
README's commands run in the bundle for that student's variant, with and without ``-c``, and
answers.toml written from what ``-c`` printed (shared by test_predict_decided and
test_predict_practice)."""

import csv
import re
import shlex
import tomllib
from pathlib import Path
from typing import NamedTuple

from kstep.cli import main

SECRET = "predict-readme-test-secret"
STUDENT = "carol@uni.example"


class Released(NamedTuple):
    config: Path  # course.toml
    out: Path  # the release folder
    bundle: Path  # the student's bundle of the exercise
    variant: dict  # its variant.toml
    said: str  # what kstep release printed


def release(tmp_path: Path, exercise: Path, capsys) -> Released:
    """Release ``exercise`` (a folder) to STUDENT, as an instructor would."""
    exercises = tmp_path / "exercises"
    exercises.mkdir()
    (exercises / exercise.name).symlink_to(exercise)
    config = tmp_path / "course.toml"
    config.write_text(f'name = "Predict course"\nsecret = "{SECRET}"\nexercises = "exercises"\n')
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([["student"], [STUDENT]])
    out = tmp_path / "out"
    assert main(["release", "--config", str(config), "--roster", str(roster), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    bundle = out / "students" / STUDENT / exercise.name
    return Released(config, out, bundle, tomllib.loads((bundle / "variant.toml").read_text()), said)


def readme_commands(readme: str) -> list[list[str]]:
    """The shell commands of a README's ``sh`` blocks, comments dropped."""
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    return [shlex.split(line, comments=True) for b in blocks for line in b.splitlines() if line.strip()]


def run_readme(r: Released, capsys, monkeypatch) -> tuple[str, str]:
    """(what the README's one command prints for the student's variant, what it prints with -c),
    run where the student runs it: in the bundle."""
    (command,) = readme_commands((r.bundle / "README.md").read_text())
    assert command[:2] == ["kstep", "run"] and "-c" not in command
    argv = command[1:]
    argv[argv.index("--scenario") + 1] = r.variant["scenario"]
    if "-s" in argv:
        argv[argv.index("-s") + 1] = str(r.variant["seed"])
    with monkeypatch.context() as m:
        m.chdir(r.bundle)
        main(argv)
        asked = capsys.readouterr().out
        main(argv + ["-c"])
        revealed = capsys.readouterr().out
    return asked, revealed


def printed_answers(out: str) -> dict[str, tuple[str, list[int]]]:
    """What ``kstep run -c`` prints per question: its answer's text and every step number it names."""
    got = {}
    for qid, body in re.findall(r"\[([a-z0-9-]+)\](.*?)(?=\n  \[|\n\n)", out, re.S):
        m = re.search(r"answer: (.*?)  \(state after step (\d+)\)", body)
        got[qid] = (m.group(1), [int(m.group(2))])
    return got


def toml_value(q, text: str) -> str:
    """A printed answer as answers.toml holds it."""
    if q.kind == "thread":
        names = [] if text == "none" else text.split(", ")
        return "[" + ", ".join(f'"{n}"' for n in names) + "]"
    return text if re.fullmatch(r"-?[0-9]+|true|false", text) else f'"{text}"'


def grade(r: Released, exercise_id: str, capsys, *more: str) -> tuple[int, str]:
    """``kstep grade`` of the bundle's answers.toml as STUDENT: (exit status, what it printed)."""
    status = main(["grade", exercise_id, str(r.bundle / "answers.toml"), "--config", str(r.config),
                   "--student", STUDENT, *more])
    out = capsys.readouterr()
    return status, out.out + out.err


def score(printed: str, exercise_id: str) -> tuple[float, float]:
    got, most = re.search(rf"{exercise_id} \(version \d+\): ([0-9.]+)/([0-9.]+)", printed).groups()
    return float(got), float(most)
