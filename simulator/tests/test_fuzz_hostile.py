"""kstep fuzzed the way a hostile user would attack it, one class of input at a time: huge
integers, odd Unicode, special files, tampered verdicts, truncated logs and broken pipes.

Every generated input runs ``kstep.cli.main`` in a forked child (``run_kstep``) whose address
space and CPU time are capped (RLIMIT_AS, RLIMIT_CPU: a runaway read or loop becomes a failure,
without any assertion about time), and ``assert_oracle`` checks what the issue asks of all of them:

- the exit status is one of the CLI's table, and never 70 (an internal error);
- no traceback on stdout or stderr;
- exit 2 comes with exactly one line on stderr, ``kstep: ...``;
- no file in the working directory changed except the outputs the command names.

Each class adds what must happen on top (a huge number is never accepted, a tampered verdict is
always refused, ...).  A fork costs about 50 ms; the whole module takes about a minute.
"""

import json
import os
import re
import resource
import shutil
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kstep import cli, views  # noqa: F401  (views: Bokeh, imported once here, not in every child, for --html)
from kstep.engine import scheduler_for, simulate
from kstep.engine.replay import jsonschema
from kstep.scenario_spec import scenario as scenarios
from kstep.models import MODELS, make_model
from test_cli_inputs import model_log
from test_fuzz_cli import to_toml

pytestmark = pytest.mark.slow

STATUSES = {code for code, _ in cli.EXIT_STATUS}
AS_HEADROOM = 1 << 30  # address space a child may use beyond what it inherits from pytest
CPU_SECONDS = 60
HUNG = 300  # a child alive this long (blocked, not spinning: RLIMIT_CPU ends those) is killed
FUZZ = settings(deadline=None, derandomize=True, database=None, max_examples=40,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# --- the runner and the oracle ---------------------------------------------------------------------------


@dataclass
class Result:
    argv: list
    rc: int
    out: bytes
    err: bytes
    changed: set


def snapshot(folder: Path) -> dict:
    out = {}
    for p in folder.rglob("*"):
        try:
            st_ = p.lstat()
        except FileNotFoundError:
            continue
        out[str(p.relative_to(folder))] = (st_.st_mode, st_.st_size, st_.st_mtime_ns, st_.st_ino)
    return out


def run_kstep(argv, cwd: Path, *, stdin=None, stdout_fd=None, stderr_fd=None) -> Result:
    """``kstep ARGV`` in a forked child with ``cwd`` as its working directory.

    ``stdin``: bytes to feed, a device to read (a Path), or None for /dev/null.  ``stdout_fd``/
    ``stderr_fd``: a file descriptor to write to instead of a captured file (a pipe nobody reads,
    for broken pipes).
    """
    logs = cwd.parent / "child-output"
    logs.mkdir(exist_ok=True)
    paths = {name: logs / name for name in ("in", "out", "err")}
    if isinstance(stdin, Path):
        paths["in"] = stdin
    else:
        paths["in"].write_bytes(stdin or b"")
    before = snapshot(cwd)
    jsonschema()  # imported once in pytest, not in every child (show validates with it), and not at collection
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        rc = 99
        try:
            os.chdir(cwd)
            vm = int(re.search(r"VmSize:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) << 10
            resource.setrlimit(resource.RLIMIT_AS, (vm + AS_HEADROOM,) * 2)
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS,) * 2)
            fds = [os.open(paths["in"] if stdin is not None else os.devnull, os.O_RDONLY),
                   stdout_fd if stdout_fd is not None else os.open(paths["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                   stderr_fd if stderr_fd is not None else os.open(paths["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)]
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            sys.stdin = open(0, "r", closefd=False)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
            rc = cli.main(argv)
        except BaseException:  # escaped main: the oracle sees status 99 and this traceback
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(rc)
    deadline = time.monotonic() + HUNG
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"kstep {argv!r} still running after {HUNG} s: blocked")
        time.sleep(0.005)
    rc = os.waitstatus_to_exitcode(status)
    rc = 128 - rc if rc < 0 else rc  # killed by a signal: the shell's 128 + N
    after = snapshot(cwd)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    read = lambda name, fd: b"" if fd is not None else paths[name].read_bytes()  # noqa: E731
    return Result(argv, rc, read("out", stdout_fd), read("err", stderr_fd), changed)


def assert_oracle(res: Result, outputs=()) -> None:
    where = f"kstep {res.argv!r}: exit {res.rc}\n{res.err.decode(errors='replace')[-3000:]}"
    assert res.rc in STATUSES and res.rc != 70, where
    assert b"Traceback" not in res.out + res.err, where
    if res.rc == 2:
        lines = res.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(b"kstep: "), where
    allowed = {str(o) for o in outputs}
    assert res.changed <= allowed, f"{where}\nchanged: {sorted(res.changed - allowed)}"


# --- what the attacks start from -------------------------------------------------------------------------


def bundled_text(mech, name):
    return resources.files("kstep.scenarios").joinpath(mech, f"{name}.toml").read_text(encoding="utf-8")


def int_paths(value, path=()):
    """Every (path, int) in a scenario document: where a number can be made huge."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [(path, value)]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in int_paths(v, path + (k,))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in int_paths(v, path + (i,))]
    return []


SCENARIOS = [(m, n) for m in sorted(MODELS) for n in scenarios.bundled(m)]
DOCS = {(m, n): scenarios.read_toml(bundled_text(m, n), n) for m, n in SCENARIOS}
SCENARIO_INTS = [(m, n, p) for (m, n), doc in DOCS.items() for p, _ in int_paths(doc)]


def qspinlock_log(seed=1):
    return "\n".join(model_log(seed, cpus=3, acquisitions=3)) + "\n"


TRACES = ["random.json", "scripted.json", "round-robin.json", "harm.json", "assertion.json"]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The good inputs every example starts from: a trace of every scheduler, a log, a scenario file."""
    folder = tmp_path_factory.mktemp("hostile") / "template"
    folder.mkdir()
    for name, argv in zip(TRACES, [
        ["run", "rcu", "--scenario", "grace-period-basics", "-s", "4"],
        ["run", "vma-locks", "--scenario", "recheck-race"],
        ["run", "qspinlock", "--scenario", "two-waiters", "--round-robin"],
        ["explore", "vma-locks", "--scenario", "recheck-race", "--variant", "no-recheck"],
        ["run", "rcu", "--scenario", "grace-period-basics", "--variant", "gp-ends-early", "-P", "R U U rcu rcu rcu"],
    ]):
        res = run_kstep(argv + ["--json", name], folder)
        assert res.rc in (0, 1), res
    (folder / "run.log").write_text(qspinlock_log())
    (folder / "mine.toml").write_text(bundled_text("rcu", "grace-period-basics"))
    return folder


def fresh(template: Path) -> Path:
    """A new working directory for one example: the template's files, and special files besides."""
    runs = template.parent / "runs"
    runs.mkdir(exist_ok=True)
    cwd = runs / str(len(list(runs.iterdir())))
    cwd.mkdir()
    for p in template.iterdir():
        shutil.copyfile(p, cwd / p.name)
    os.mkfifo(cwd / "fifo")  # nobody ever writes to it
    (cwd / "dir").mkdir()
    (cwd / "zero").symlink_to("/dev/zero")
    with socket.socket(socket.AF_UNIX) as sock:  # the socket file stays after the socket is closed
        sock.bind(str(cwd / "sock"))
    return cwd


# --- 1. huge integers ------------------------------------------------------------------------------------

NINES = st.sampled_from([20, 40, 4300, 4301, 5000, 20000]).map(lambda n: "9" * n)


@st.composite
def huge_integer_attacks(draw, template):
    """(argv, input files to write, outputs): one huge number somewhere a user can put one."""
    n = draw(NINES)
    where = draw(st.sampled_from(["toml", "toml-based", "set-value", "set-index", "schedule", "option",
                                  "trace", "log"]))
    if where in ("toml", "toml-based", "set-value"):
        mech, name, path = draw(st.sampled_from(SCENARIO_INTS))
        if where == "set-value":
            return ["run", mech, "--scenario", name, "--set", f"{'.'.join(map(str, path))}={n}"], {}
        literal = draw(st.sampled_from([n, "-" + n, "+" + n, "0x" + n.replace("9", "f"), "0o" + n.replace("9", "7"),
                                        "0b" + n.replace("9", "1"), n[:3] + "_" + n[3:]])) if where == "toml-based" else n
        doc = json.loads(json.dumps(DOCS[(mech, name)]))
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = "@HUGE@"
        text = to_toml(doc).replace('"@HUGE@"', literal)
        return ["run", mech, "--scenario", "huge.toml"], {"huge.toml": text.encode()}
    if where == "set-index":
        return ["run", "rcu", "--scenario", "grace-period-basics", "--set", f"threads.{n}.sections=1"], {}
    if where == "schedule":
        return ["run", "rcu", "--scenario", "grace-period-basics", "-P", f"R*{n}"], {}
    if where == "option":
        option = draw(st.sampled_from(["-s", "--steps", "--max-states"]))
        command = "explore" if option == "--max-states" else "run"
        return [command, "rcu", "--scenario", "grace-period-basics", option, n], {}
    if where == "trace":
        text = (template / draw(st.sampled_from(TRACES))).read_text()
        spots = [m.start(1) for m in re.finditer(r'": (-?\d+)', text)]
        k = draw(st.sampled_from(spots))
        number = re.match(r"-?\d+", text[k:]).group()
        return ["show", "huge.json"], {"huge.json": (text[:k] + n + text[k + len(number):]).encode()}
    lines = qspinlock_log().splitlines(keepends=True)
    k = draw(st.integers(0, len(lines) - 1))
    if k == 0:
        field = draw(st.sampled_from(["cpus", "acquisitions", "pending_bits"]))
        lines[0] = re.sub(rf"{field}=\d+", f"{field}={n}", lines[0])
    else:
        lines[k] = n + lines[k][lines[k].index(" "):]
    return ["check", "qspinlock", "huge.log"], {"huge.log": "".join(lines).encode()}


@FUZZ
@given(data=st.data())
def test_huge_integers_are_refused_in_one_line(template, data):
    argv, files = data.draw(huge_integer_attacks(template), label="attack")
    cwd = fresh(template)
    for name, content in files.items():
        (cwd / name).write_bytes(content)
    res = run_kstep(argv, cwd)
    event(f"{argv[0]}: exit {res.rc}")
    assert_oracle(res)
    # no field of any kind takes a number of 20 nines; a log line with a 20-digit ticket is out of order
    assert res.rc == 2 or (argv[0] == "check" and res.rc == 1), (argv, res.rc, res.err)


# --- 2. odd Unicode --------------------------------------------------------------------------------------

ODD = st.lists(st.characters(categories=["Cs", "Cc", "Cf", "Zl", "Zp", "Mn", "Nd", "Lo", "So"])
               | st.sampled_from(list("\x00\r\n\t\u2028\u202e\ufeff²١٢ =.*:") + ["T1", "R", "rcu"]),
               min_size=1, max_size=8).map("".join)


@st.composite
def unicode_attacks(draw, template):
    """(argv, files, outputs) with odd text in one place a user controls."""
    odd = draw(ODD)
    where = draw(st.sampled_from(["argv", "set", "schedule", "toml-string", "toml-key", "filename", "output",
                                  "trace", "log"]))
    rcu = ["rcu", "--scenario", "grace-period-basics"]
    if where == "argv":
        argv = draw(st.sampled_from([["run", odd, "--scenario", "x"], ["run", *rcu, "--variant", odd],
                                     ["run", "rcu", "--scenario", odd], ["list", odd], [odd], ["show", odd],
                                     ["check", "qspinlock", odd], ["run", *rcu, "-s", odd]]))
        return argv, {}, ()
    if where == "set":
        key = draw(st.sampled_from(["threads.0.name", "threads.1.wait", "description", "threads." + odd + ".name",
                                    odd]))
        value = draw(st.sampled_from([json.dumps(odd), odd, f'"{odd}"']))
        return ["run", *rcu, "--set", f"{key}={value}"], {}, ()
    if where == "schedule":
        return ["run", *rcu, "-P", draw(st.sampled_from([odd, f"R*{odd}", f"{odd}*2 U"]))], {}, ()
    if where in ("toml-string", "toml-key"):
        text = bundled_text("rcu", "grace-period-basics")
        if where == "toml-string":
            text = text.replace('name = "R"', f"name = {json.dumps(odd)}").replace('One reader', odd)
        else:
            text = f"{json.dumps(odd)} = 1\n" + text
        return ["run", "rcu", "--scenario", "odd.toml", "-c"], {"odd.toml": text.encode("utf-8", "surrogatepass")}, ()
    if where == "filename":
        raw = draw(st.binary(min_size=1, max_size=6).filter(lambda b: b"/" not in b and b"\x00" not in b))
        name = os.fsdecode(raw + b".toml")
        return ["run", "rcu", "--scenario", "./" + name, "-c", "--json", "o.json"], \
            {name: bundled_text("rcu", "grace-period-basics").encode()}, ("o.json",)
    if where == "output":
        name = "".join(c for c in odd if c not in "/\x00") or "x"
        flag = draw(st.sampled_from(["--json", "--html"]))
        return ["run", *rcu, flag, name], {}, (name,)
    if where == "trace":
        data = json.loads((template / "random.json").read_text())
        field = draw(st.sampled_from(["scenario", "actor", "label", "message"]))
        if field == "scenario":
            data["scenario"] = odd
        elif field == "message":
            data["violation"] = {"invariant": odd, "message": odd, "kind": "harm", "step": 1}
        else:
            data["steps"][0][field] = odd
        return ["show", "odd.json"], {"odd.json": json.dumps(data).encode("utf-8", "surrogatepass")}, ()
    lines = qspinlock_log().splitlines(keepends=True)
    k = draw(st.integers(0, len(lines) - 1))
    words = lines[k].split(" ")
    words[draw(st.integers(0, len(words) - 1))] = odd
    lines[k] = " ".join(words)
    return ["check", "qspinlock", "odd.log"], {"odd.log": "".join(lines).encode("utf-8", "surrogatepass")}, ()


@FUZZ
@given(data=st.data())
def test_odd_unicode_anywhere_is_handled(template, data):
    argv, files, outputs = data.draw(unicode_attacks(template), label="attack")
    cwd = fresh(template)
    for name, content in files.items():
        (cwd / name).write_bytes(content)
    res = run_kstep(argv, cwd)
    event(f"{argv[0]}: exit {res.rc}")
    assert_oracle(res, outputs)
    for name in outputs:
        if res.rc == 0 and name.endswith(".json"):  # what kstep wrote, it reads back
            assert_oracle(run_kstep(["show", name], cwd))


# --- 3. special files ------------------------------------------------------------------------------------

SPECIAL = ["fifo", "dir", "zero", "sock", "/dev/zero", "/dev/null", "/dev/urandom", "/proc/self/status",
           "/proc/self/mem", "/dev/stdin", "missing", "dir/"]


@FUZZ
@given(special=st.sampled_from(SPECIAL),
       use=st.sampled_from(["scenario", "trace", "log", "json-out", "html-out", "stdin-scenario", "stdin-log"]))
def test_special_files_never_block_or_fill_memory(template, special, use):
    cwd = fresh(template)
    stdin = None
    if use == "scenario":
        argv = ["run", "rcu", "--scenario", special if special.startswith("/") else f"./{special}"]
    elif use == "trace":
        argv = ["show", special]
    elif use == "log":
        argv = ["check", "qspinlock", special]
    elif use.endswith("-out"):
        argv = ["run", "rcu", "--scenario", "grace-period-basics", f"--{use[:-4]}", special]
    else:
        # '-' reads standard input, the one non-regular input, capped: here as much as the file gives
        source = Path(special if special.startswith("/") else cwd / special)
        stdin = b"\x00" * (2 << 20)  # what is not a regular file (a FIFO would block us) gives this
        if special in ("zero", "/dev/zero", "/dev/urandom"):  # devices that never end: the device itself
            stdin = source
        elif source.is_file():
            try:
                with source.open("rb") as f:
                    stdin = f.read(4 << 20)
            except OSError:  # /proc/self/mem cannot be read from its start
                pass
        argv = ["run", "rcu", "--scenario", "-"] if use == "stdin-scenario" else ["check", "qspinlock", "-"]
    new_output = use.endswith("-out") and special == "missing"
    res = run_kstep(argv, cwd, stdin=stdin)
    event(f"{use} {special}: exit {res.rc}")
    assert_oracle(res, ["missing"] if new_output else [])
    if not new_output:  # none of these is a regular file kstep can read or replace; nor is '-' given them
        assert res.rc == 2, (argv, res.rc, res.err)


# --- 4. tampered verdicts --------------------------------------------------------------------------------


def mutations(data):
    """Ways to make a trace file claim something its run does not do: (name, change)."""
    n = len(data["steps"])
    out = [
        ("outcome", lambda d, v: d.update(outcome=v), st.sampled_from(["finished", "deadlock", "violation",
                                                                         "max-steps", "schedule-end"])),
        ("violation", lambda d, v: d.update(violation=v),
         st.none() | st.fixed_dictionaries({"invariant": st.sampled_from(["mutual-exclusion", "deadlock",
                                                                           "no-use-after-free", "x"]),
                                            "message": st.text(max_size=5),
                                            "kind": st.sampled_from(["harm", "assertion"]),
                                            "step": st.integers(0, n + 1)})),
        ("stats", lambda d, v: d.update(stats=v), st.dictionaries(st.sampled_from(["rounds", "sigsegv",
                                                                                   "blocked_rounds"]),
                                                                  st.integers(0, 50), max_size=2)),
        ("seed", lambda d, v: d["scheduler"].update(seed=v), st.none() | st.integers(0, 2**64 - 1)),
        ("max_steps", lambda d, v: d["scheduler"].update(max_steps=v), st.integers(0, n + 2)),
        ("initial", lambda d, v: d["initial"].update(v), st.fixed_dictionaries({"threads": st.just([])})),
        ("kind", lambda d, v: d["scheduler"].update(kind=v), st.sampled_from(["random", "scripted", "round-robin",
                                                                              "explore"])),
        ("script", lambda d, v: d["scheduler"].update(script=v), st.none() | st.sampled_from(
            ["R", "T1*3", "C0 C1", "R:rcu_read_lock", "T1:lock_vma_under_rcu"])),
    ]
    if n:
        step = st.integers(0, n - 1)
        out += [
            ("tick", lambda d, v: d["steps"][v[0]].update(tick=v[1]), st.tuples(step, st.integers(0, 10**6))),
            ("actor", lambda d, v: d["steps"][v[0]].update(actor=v[1]), st.tuples(step, st.sampled_from(
                ["R", "U", "rcu", "T1", "T2", "W", "C0", "C1"]))),
            ("drop", lambda d, v: d["steps"].pop(v), step),
            ("cut", lambda d, v: d.update(steps=d["steps"][:v]), step),
            ("repeat", lambda d, v: d["steps"].insert(v, d["steps"][v]), step),
            ("swap", lambda d, v: d["steps"].insert(v, d["steps"].pop(v - 1)) if v else None, step),
        ]
    return out


@FUZZ
@given(data=st.data())
def test_a_tampered_verdict_is_always_refused(template, data):
    name = data.draw(st.sampled_from(TRACES), label="trace")
    original = json.loads((template / name).read_text())
    tampered = json.loads(json.dumps(original))
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        what, change, values = data.draw(st.sampled_from(mutations(tampered)), label="mutation")
        change(tampered, data.draw(values, label=what))
        event(what)
    cwd = fresh(template)
    (cwd / "tampered.json").write_text(json.dumps(tampered))
    res = run_kstep(["show", "tampered.json"], cwd)
    assert_oracle(res)
    if is_true(tampered):  # changed, yet what the scheduler it names does (max_steps past the end, say)
        assert res.rc in (0, 1), res.err
    else:
        assert res.rc == 2, f"a trace saying what its run does not was shown (exit {res.rc}):\n" \
                            f"{res.out.decode()[-1500:]}"


def is_true(data) -> bool:
    """Whether ``data`` is, byte for byte, the trace its scheduler writes: the oracle runs the scheduler
    and the writer, never the reader that is under test."""
    try:
        model = make_model(data["mechanism"], data["variant"])
        params = data["scheduler"]
        trace = simulate(model, model.initial(data["config"]), scheduler_for(params), max_steps=params["max_steps"],
                         scenario=data["scenario"], config=data["config"])
    except Exception:  # parameters no scheduler takes
        return False
    return json.loads(trace.dumps(model)) == data


# --- 5. truncated logs -----------------------------------------------------------------------------------


@FUZZ
@given(seed=st.integers(1, 50), data=st.data())
def test_a_truncated_log_is_never_a_crash(template, seed, data):
    text = qspinlock_log(seed).encode()
    line_ends = [k + 1 for k, byte in enumerate(text[:-1]) if byte == ord("\n")]
    cut = data.draw(st.sampled_from(line_ends) | st.integers(0, len(text) - 1), label="cut")
    cwd = fresh(template)
    (cwd / "cut.log").write_bytes(text[:cut])
    res = run_kstep(["check", "qspinlock", "cut.log"], cwd)
    at_line_end = cut == 0 or text[cut - 1:cut] == b"\n"
    event(f"{'line end' if at_line_end else 'mid-line'}: exit {res.rc}")
    assert_oracle(res)
    if not at_line_end:  # a line without its newline is a log its writer did not finish
        assert res.rc == 2, res.err
        assert cut < text.index(b"\n") or b"truncated line" in res.err, res.err
    elif text.index(b"\n") < cut < len(text):  # whole lines, but the end marker is gone: a run that did not finish
        assert res.rc == 1 and b"without its end marker" in res.out, (res.rc, res.out[-500:])


# --- 6. broken pipes -------------------------------------------------------------------------------------

COMMANDS = [["list"], ["--help"], ["list", "qspinlock", "--schema"],
            ["run", "vma-locks", "--scenario", "android-app-launch", "-c"],
            ["run", "rcu", "--scenario", "grace-period-basics", "--variant", "gp-ends-early", "-c"],
            ["explore", "rcu", "--scenario", "grace-period-basics", "--variant", "gp-ends-early"],
            ["explore", "qspinlock", "--scenario", "three-waiters", "--max-states", "2000"],
            ["show", "scripted.json"], ["check", "qspinlock", "run.log"], ["run", "rcu", "--scenario", "nope"]]


@FUZZ
@given(argv=st.sampled_from(COMMANDS), closed=st.sampled_from(["stdout", "stderr", "both"]))
def test_a_broken_pipe_is_141_never_a_crash(template, argv, closed):
    r, w = os.pipe()
    os.close(r)  # nobody will ever read: the first write that reaches the pipe fails with EPIPE
    try:
        res = run_kstep(argv, fresh(template), stdout_fd=w if closed != "stderr" else None,
                        stderr_fd=w if closed != "stdout" else None)
    finally:
        os.close(w)
    event(f"{argv[0]} {closed}: exit {res.rc}")
    assert_oracle(res)
    # what the command had to say went nowhere: it stops as a Unix tool does, with 141
    bad = argv[-1] == "nope"  # says one line on stderr, nothing on stdout
    said = closed == "both" or (closed == "stdout") != bad
    assert res.rc == 141 if said else res.rc in (0, 1, 2, 3, 141), (argv, closed, res.rc, res.err)
