"""Hostile input, case by case: each test is one way a user's file, number, name, locale or pipe once
crashed kstep, hung it, or made it say something untrue.  (test_fuzz_hostile.py generates the classes.)"""

import json
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kstep import cli
from kstep.engine import Random, simulate
from kstep.errors import UserError
from kstep.files import SCENARIO_CAP
from kstep.grading import batch, exercise, variants
from kstep.lab.replay.qspinlock import end_line, header_line, log_lines
from kstep.models import make_model
from test_cli import RCU, ROOT, bad_input, kstep

KSTEP = [sys.executable, "-m", "kstep"]
GOOD = ('description = "d"\nlook_for = "l"\n[[threads]]\nname = "R"\nkind = "reader"\n'
        '[[threads]]\nname = "U"\nkind = "updater"\n')


def run(argv, **kw):
    """``python -m kstep ARGV`` in a child process: real exit status, real stdout and stderr."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([*KSTEP, *map(str, argv)], timeout=120, **kw)


def model_log(seed=1, cpus=3, acquisitions=4):
    """The lines of a log the model writes itself, header first, end marker last: every line legal."""
    m = make_model("qspinlock")
    config = {"pending_bits": 8, "steal_spins": 32, "head_spins": 256,
              "cpus": [{"locks": ["A"], "repeat": acquisitions, "irq": []} for _ in range(cpus)]}
    trace = simulate(m, m.initial(config), Random(seed), max_steps=1_000_000)
    return [header_line("v6.12", cpus, acquisitions, 8)] + log_lines(m, trace) + [end_line(len(trace))]


def qspinlock_log(path, seed=1, cpus=3, acquisitions=4):
    lines = model_log(seed, cpus, acquisitions)
    path.write_text("\n".join(lines) + "\n")
    return lines


# --- 4. the exit-status table, written once --------------------------------------------------------------


def table_rows(text, pattern):
    return [(int(code), meaning.strip()) for code, meaning in re.findall(pattern, text, re.M)]


def test_the_exit_status_table_is_the_same_in_help_docstring_and_readme(capsys):
    expected = [(code, meaning) for code, meaning in cli.EXIT_STATUS]
    assert [c for c, _ in expected] == [0, 1, 2, 3, 70, 130, 141]
    rc, out, _ = kstep(capsys, "--help")
    help_text = out[out.index("exit status:"):]
    assert table_rows(help_text, r"^  (\d+) +(\S.*)$") == expected
    doc = cli.__doc__[cli.__doc__.index("Exit status:"):]
    assert table_rows(doc, r"^  (\d+) +(\S.*)$") == expected
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = readme[readme.index("## Exit status"):]
    readme = readme[:readme.index("\n## ")]
    assert table_rows(readme, r"^\| (\d+) \| (.*) \|$") == expected


def test_a_log_replay_that_fails_with_an_os_error_is_a_bug_not_bad_input(capsys, monkeypatch, tmp_path):
    qspinlock_log(tmp_path / "run.log")
    model = type(make_model("qspinlock"))

    def failing_step(self, state, action):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(model, "step", failing_step)
    rc, _, err = kstep(capsys, "check", "qspinlock", tmp_path / "run.log")
    assert rc == 70 and "OSError: [Errno 5] Input/output error" in err and "kstep: " not in err


# --- 5. broken pipes -----------------------------------------------------------------------------------


def closed_pipe():
    """The write end of a pipe nobody reads: every write to it fails with EPIPE."""
    r, w = os.pipe()
    os.close(r)
    return w


def test_a_closed_stdout_exits_141_quietly():
    w = closed_pipe()
    try:
        proc = run(["run", *RCU, "-c"], stdout=w)
    finally:
        os.close(w)
    assert proc.returncode == 141 and proc.stderr == b""


def test_a_closed_stderr_during_check_is_a_broken_pipe_not_an_illegal_step(tmp_path):
    """`kstep check qspinlock LOG 2>&1 | head -1`: progress lines hit the closed pipe first."""
    lines = qspinlock_log(tmp_path / "long.log", cpus=4, acquisitions=300, seed=2)
    assert len(lines) > 4096  # progress is reported every 4096 steps
    program = ("import functools, sys\nimport kstep.lab.replay.qspinlock as check\nfrom kstep.cli import main\n"
               "check.check_lines = functools.partial(check.check_lines, progress_every=0.0)\n"
               f"sys.exit(main(['check', 'qspinlock', {str(tmp_path / 'long.log')!r}]))\n")
    w = closed_pipe()
    try:
        proc = subprocess.run([sys.executable, "-c", program], stdout=w, stderr=w, timeout=300)
    finally:
        os.close(w)
    assert proc.returncode == 141


def test_a_pipe_closed_after_one_line_gives_141_or_success(tmp_path):
    """`kstep run ... | head -1` with a long table: never a traceback, never an error of kstep's."""
    proc = subprocess.Popen([*KSTEP, "run", "vma-locks", "--scenario", "android-app-launch", "-c"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) in (0, 141) and first.startswith(b"vma-locks")


# --- 6 and 14. numbers: bounded before they are converted, decimal on the command line ----------------------

HUGE = "1" + "0" * 5000


@pytest.mark.parametrize("value,says", [
    (f"sections = {HUGE}", "an integer too long to read (more than 4300 digits)"),
    (f"sections = -{HUGE}", "an integer too long to read (more than 4300 digits)"),
    (f"sections = 0x{'f' * 5000}", "threads[0].sections: a 20000-bit number is out of range 1..20"),
])
def test_huge_integers_in_a_scenario_file(capsys, tmp_path, value, says):
    path = tmp_path / "huge.toml"
    path.write_text(GOOD.replace('kind = "reader"\n', f'kind = "reader"\n{value}\n', 1))
    bad_input(capsys, "run", "rcu", "--scenario", path, says=says)


@pytest.mark.parametrize("argv,says", [
    (["run", *RCU, "--set", f"threads.0.sections={HUGE}"], "an integer too long to read"),
    (["run", *RCU, "--set", f"threads.{HUGE}.sections=1"], "no entry 1000"),
    (["run", *RCU, "-P", f"R*{HUGE}"], "count in 'R*1000"),
    (["run", *RCU, "-s", HUGE], "out of range 0..18446744073709551615"),
    (["run", *RCU, "--steps", HUGE], "out of range 1..1000000"),
    (["explore", *RCU, "--max-states", HUGE], "out of range 1..100000000"),
])
def test_huge_integers_on_the_command_line(capsys, argv, says):
    line = bad_input(capsys, *argv, says=says)
    assert len(line) < 300, "the message repeats the number"


def test_huge_integers_in_a_trace(capsys, tmp_path):
    path = tmp_path / "t.json"
    assert kstep(capsys, "run", *RCU, "-s", "2", "--json", path)[0] == 0
    text = path.read_text()
    for old, new in (('"seed": 2', f'"seed": {HUGE}'), ('"version": 2', f'"version": {HUGE}'),
                     ('"tick": 3', f'"tick": {HUGE}')):
        assert old in text
        (tmp_path / "huge.json").write_text(text.replace(old, new, 1))
        bad_input(capsys, "show", tmp_path / "huge.json", says="an integer of more than 4300 digits")


def test_huge_integers_in_a_log(capsys, tmp_path):
    lines = qspinlock_log(tmp_path / "run.log")
    for k, edit in ((1, lambda l: l.replace("acquisitions=4", f"acquisitions={HUGE}")),
                    (2, lambda l: HUGE + l[1:])):
        changed = list(lines)
        changed[k - 1] = edit(changed[k - 1])
        (tmp_path / "huge.log").write_text("\n".join(changed) + "\n")
        line = bad_input(capsys, "check", "qspinlock", tmp_path / "huge.log", says="huge.log")
        assert len(line) < 300 + len(str(tmp_path)), "the message repeats the number"


@pytest.mark.parametrize("text", ["010", "0010"])
def test_a_leading_zero_is_decimal(capsys, text):
    rc, out, _ = kstep(capsys, "run", *RCU, "-s", text)
    assert rc == 0 and f"random, seed {int(text, 10)} " in out


@pytest.mark.parametrize("option", ["-s", "--steps"])
@pytest.mark.parametrize("text", ["١٢", "1_0", " 7", "7 ", "+7", "0x10", "²"])
def test_numbers_on_the_command_line_are_ascii_decimal(capsys, option, text):
    bad_input(capsys, "run", *RCU, option, text, says="is not a whole number (decimal digits 0-9)")


# --- 7. ticks past int32, names that are not UTF-8, digits that are not ASCII ------------------------------


def test_a_tick_past_int32_is_refused_not_drawn(capsys, tmp_path):
    path = tmp_path / "t.json"
    assert kstep(capsys, "run", *RCU, "-s", "2", "--json", path)[0] == 0
    data = json.loads(path.read_text())
    n = len(data["steps"])
    data["steps"][-1]["tick"] = 2**31
    path.write_text(json.dumps(data))
    bad_input(capsys, "show", path, "--html", tmp_path / "t.html",
              says=f"step {n}: tick is 2147483648, the scheduler's run has {n}")
    assert not (tmp_path / "t.html").exists()


def test_a_scenario_file_named_with_bytes_that_are_not_utf8(capsys, tmp_path):
    path = Path(os.fsdecode(bytes(tmp_path) + b"/r\xe9sum\xff.toml"))
    path.write_text(GOOD)
    out_json, out_html = Path(os.fsdecode(bytes(tmp_path) + b"/\xff.json")), tmp_path / "a.html"
    rc, out, err = kstep(capsys, "run", "rcu", "--scenario", path, "-c", "--json", out_json, "--html", out_html)
    assert rc == 0 and err == ""
    assert "scenario r\\xe9sum\\xff:" in out and "wrote trace " in out
    assert "r\\xe9sum\\xff" in out_html.read_text(encoding="utf-8")
    rc, out, err = kstep(capsys, "show", out_json, "--html", out_html)
    assert rc == 0 and err == ""


def test_a_trace_whose_scenario_name_has_a_lone_surrogate_is_refused(capsys, tmp_path):
    path = tmp_path / "t.json"
    assert kstep(capsys, "run", *RCU, "--json", path)[0] == 0
    data = json.loads(path.read_text())
    data["scenario"] = "\udcff"
    path.write_text(json.dumps(data))
    bad_input(capsys, "show", path, "--html", tmp_path / "t.html", says="at scenario")


def test_a_list_index_with_a_digit_that_is_not_ascii(capsys):
    bad_input(capsys, "run", *RCU, "--set", "threads.².sections=1", says="no entry ² in threads")
    bad_input(capsys, "run", *RCU, "--set", "threads.١.sections=1", says="no entry ١ in threads")


# --- 8. special files -----------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["run", "rcu", "--scenario", "{}"], ["show", "{}"], ["check", "qspinlock", "{}"], ["check", "vma-locks", "{}"],
    ["lab", "show", "{}"],
])
@pytest.mark.parametrize("special,says", [("/dev/zero", "is a character device"), ("fifo", "is a FIFO"),
                                          ("dir", "is a directory")])
def test_special_files_are_refused_before_reading(tmp_path, argv, special, says):
    if special == "fifo":
        special = tmp_path / "fifo"
        os.mkfifo(special)  # nobody ever writes to it: opening it to read must not wait for a writer
    elif special == "dir":
        special = tmp_path
    argv = [a.replace("{}", str(special)) for a in argv]
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # noqa: E731  /dev/zero
    proc = run(argv, preexec_fn=limit)
    assert proc.returncode == 2, proc
    assert proc.stderr.decode().count("\n") == 1 and says in proc.stderr.decode()


@pytest.mark.parametrize("argv,says", [
    (["run", "rcu", "--scenario", "-"], "standard input: larger than 1 MiB"),
    (["show", "-"], "standard input: not a kstep trace"),
    (["check", "qspinlock", "-"], "standard input:1: line 1 is longer than 64 KiB"),
    (["check", "vma-locks", "-"], "standard input:1: line 1 is longer than 64 KiB"),
])
def test_standard_input_from_dev_zero_stops_at_a_cap(argv, says):
    """'-' may be any file: /dev/zero never ends, and a log line without an end is not held whole."""
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # noqa: E731
    with open("/dev/zero", "rb") as zero:
        proc = run(argv, stdin=zero, preexec_fn=limit)
    assert proc.returncode == 2, proc
    assert proc.stderr.decode().count("\n") == 1 and says in proc.stderr.decode()


def test_a_scenario_larger_than_the_cap_is_refused_unread(capsys, tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(GOOD + "#" * SCENARIO_CAP)
    bad_input(capsys, "run", "rcu", "--scenario", path, says="1 MiB, larger than 1 MiB")


def test_standard_input_is_read_when_named_dash_and_capped(tmp_path):
    proc = run(["run", "rcu", "--scenario", "-", "-c"], input=GOOD.encode())
    assert proc.returncode == 0 and b"scenario stdin:" in proc.stdout
    proc = run(["run", "rcu", "--scenario", "-"], input=(GOOD + "#" * SCENARIO_CAP).encode())
    assert proc.returncode == 2 and b"standard input: larger than 1 MiB" in proc.stderr
    qspinlock_log(tmp_path / "run.log")
    proc = run(["check", "qspinlock", "-"], stdin=(tmp_path / "run.log").open("rb"))
    assert proc.returncode == 0 and b"every logged step is one the model allows" in proc.stdout
    run(["run", *RCU, "-s", "3", "--json", tmp_path / "t.json"], check=True)
    proc = run(["show", "-"], stdin=(tmp_path / "t.json").open("rb"))
    assert proc.returncode == 0 and b"random, seed 3" in proc.stdout


# --- 9. names are whole strings -------------------------------------------------------------------------


@pytest.mark.parametrize("setting,says", [
    ('threads.0.name="R\\n"', r"'R\n' is not a name"),
    ('threads.1.name="rcu\\n"', r"'rcu\n' is not a name"),
    ("threads.0.sections=1\nx = 5", "is not one TOML value"),
])
def test_a_value_is_matched_whole(capsys, setting, says):
    bad_input(capsys, "run", *RCU, "--set", setting, says=says)


def test_a_question_id_is_matched_whole(capsys):
    scenario = ROOT / "exercises" / "rcu-predict" / "data" / "two-readers.toml"
    bad_input(capsys, "run", "rcu", "--scenario", scenario, "--set", 'questions.0.id="gp\\n"',
              says=r"id 'gp\n' is not lower-case letters")


def test_student_ids_and_exercise_names_are_matched_whole(tmp_path):
    with pytest.raises(UserError, match="is not letters, digits"):
        variants.check_student("alice\n")
    (tmp_path / "alice\n").mkdir()  # a batch entry: one folder per student, named by id
    with pytest.raises(UserError, match="is not a student id"):
        batch.entries(tmp_path)
    ex = tmp_path / "rcu-predict"
    shutil.copytree(ROOT / "exercises" / "rcu-predict", ex)
    toml = (ex / "exercise.toml").read_text()
    for before, after, says in [('["answers.toml"]', '["answers.toml\\n"]', "is not a plain file name"),
                                ("decided = 9", '"decided\\n" = 9', "not a test name")]:
        (ex / "exercise.toml").write_text(toml.replace(before, after))
        with pytest.raises(UserError, match=says):
            exercise.load(ex)


# --- 10. an ASCII locale ---------------------------------------------------------------------------------


ASCII = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}


def test_an_ascii_locale_still_reads_and_writes_utf8(tmp_path):
    listing = run(["list"], env=ASCII)
    assert listing.returncode == 0 and "rcu — ".encode() in listing.stdout
    path = tmp_path / "utf8.toml"
    path.write_text(GOOD.replace('description = "d"', 'description = "Zoë’s reader — ∀ sections"'),
                    encoding="utf-8")
    proc = run(["run", "rcu", "--scenario", path, "--html", tmp_path / "a.html"], env=ASCII)
    assert proc.returncode == 0, proc.stderr
    assert "Zoë’s reader — ∀ sections".encode() in proc.stdout
    assert "<html" in (tmp_path / "a.html").read_text(encoding="utf-8").lower()
    bad = run(["run", "rcu", "--scenario", "no\u2028such"], env=ASCII)
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1


# --- 11. an output never replaces an input ---------------------------------------------------------------


def test_an_output_that_is_the_input_is_refused(capsys, tmp_path, monkeypatch):
    trace = tmp_path / "T.json"
    assert kstep(capsys, "run", *RCU, "--json", trace)[0] == 0
    before = trace.read_bytes()
    (tmp_path / "link.json").symlink_to(trace)
    os.link(trace, tmp_path / "hard.json")
    monkeypatch.chdir(tmp_path)
    for name in ("T.json", "./T.json", str(trace), "link.json", "hard.json"):
        bad_input(capsys, "show", "T.json", "--html", name, says="is the input T.json")
    scenario = tmp_path / "mine.toml"
    scenario.write_text(GOOD)
    bad_input(capsys, "run", "rcu", "--scenario", scenario, "--json", "./mine.toml", says="is the input")
    bad_input(capsys, "explore", "rcu", "--scenario", scenario, "--html", scenario, says="is the input")
    bad_input(capsys, "run", *RCU, "--json", "a.json", "--html", "./a.json", says="both name")
    assert trace.read_bytes() == before and scenario.read_text() == GOOD


# --- 12. sizes bounded early ---------------------------------------------------------------------------


def test_a_schedule_longer_than_any_run_is_refused_before_it_is_built(capsys):
    # 15,000 entries of 10,000 steps each would be a list of 150 million names
    bad_input(capsys, "run", *RCU, "-P", " ".join(["R*10000"] * 15_000), says="more than 1,000,000 steps")


@pytest.mark.slow
def test_writing_and_showing_a_long_trace_streams_under_a_memory_limit(tmp_path):
    """A trace of about 10,000 steps (20 MB) written and shown by children whose address space is
    capped at 512 MiB: the document is never built whole (building it took 400 MB more)."""
    scenario = tmp_path / "long.toml"
    scenario.write_text("description = 'long'\nlook_for = 'memory'\n" +
                        "[[cpus]]\nlocks = ['A', 'A', 'A', 'A', 'A', 'A', 'A', 'A']\nrepeat = 25\n" * 4)
    out = tmp_path / "long.json"
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))  # noqa: E731
    proc = run(["run", "qspinlock", "--scenario", scenario, "-s", "1", "--json", out], preexec_fn=limit,
               stdout=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert out.stat().st_size > 20 << 20
    shown = run(["show", out], preexec_fn=limit, stdout=subprocess.DEVNULL)
    assert shown.returncode == 0, shown.stderr.decode()[-2000:]


# --- 15 neighbours: interrupts leave nothing behind -----------------------------------------------------


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(capsys, tmp_path, monkeypatch):
    target = tmp_path / "t.json"
    target.write_text("mine")
    from kstep.engine import Trace

    def interrupted(self, model):
        yield "{"
        raise KeyboardInterrupt

    monkeypatch.setattr(Trace, "chunks", interrupted)
    rc, _, err = kstep(capsys, "run", *RCU, "--json", target)
    assert rc == 130 and err == "kstep: interrupted\n"
    assert target.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a small tmpfs of its own, holding the user's old outputs, then filled to the last byte."""
    folder = tmp_path / "full"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "kstep-full", str(folder)],
                      stderr=subprocess.DEVNULL).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        for name in ("t.json", "states.jsonl"):
            (folder / name).write_text("mine")
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # ENOSPC: the disk is full
            pass
        finally:
            os.close(fd)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("argv", [["run", *RCU, "--json", "{}/t.json"],
                                  ["explore", *RCU, "--max-states", "500", "--states", "{}/states.jsonl"]])
def test_a_full_disk_is_one_line_and_keeps_the_old_file(capsys, full_disk, argv):
    line = bad_input(capsys, *[a.format(full_disk) for a in argv])
    assert "No space left on device" in line
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler", "states.jsonl", "t.json"]
    assert (full_disk / "t.json").read_text() == (full_disk / "states.jsonl").read_text() == "mine"


def test_an_error_line_is_capped_whatever_the_input(capsys, tmp_path):
    long_path = "/".join(["x" * 200] * 20)  # 4 KB of path the user typed: the reason must not drown in it
    line = bad_input(capsys, "show", long_path)
    assert len(line) <= len("kstep: ") + cli.MAX_MESSAGE and line.endswith("...")


def test_lab_show_plot_is_a_png_or_one_line(capsys, tmp_path):
    [result] = (ROOT / "kernel-lab" / "guest" / "recorded").glob("arm64-2*.json")
    (tmp_path / "f.svg").write_text("mine")
    bad_input(capsys, "lab", "show", result, "--plot", tmp_path / "f.svg", says="name a FILE.png")
    assert (tmp_path / "f.svg").read_text() == "mine"


def test_json_true_is_not_a_recorded_one(capsys, tmp_path):
    """bool is an int in Python, so ``True == 1``; a trace that says ``true`` where the run has 1 is tampered."""
    good = tmp_path / "good.json"
    assert kstep(capsys, "run", *RCU, "--json", good)[0] == 0
    doc = json.loads(good.read_text())
    ones = [p for p in json_paths(doc) if type(value_at(doc, p)) is int and value_at(doc, p) in (0, 1)]
    assert len(ones) > 20
    for path in ones[:: len(ones) // 20]:  # twenty places spread over the header and the steps
        tampered = json.loads(good.read_text())
        value_at(tampered, path[:-1])[path[-1]] = bool(value_at(tampered, path))
        (tmp_path / "t.json").write_text(json.dumps(tampered))
        bad_input(capsys, "show", tmp_path / "t.json")


def json_paths(value, path=()):
    if isinstance(value, dict):
        value = value.items()
    elif isinstance(value, list):
        value = enumerate(value)
    else:
        yield path
        return
    for k, v in value:
        yield from json_paths(v, path + (k,))


def value_at(doc, path):
    for k in path:
        doc = doc[k]
    return doc
