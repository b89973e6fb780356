"""The kernel lab: the C ports on x86_64, arm64 and ppc64le, their logs, and the Promela model.

Every check is written once, in kernel-lab/tests/labcheck.py (``make -C kernel-lab test`` runs
them without pytest); here each one is a test of its own, with the check's own message on failure.
The C checks need the cross compilers and qemu-user (marker ``qemu``); the spin checks need only
spin and gcc.  The last tests compare the Promela model with the Python model once kstep.models
has a qspinlock model.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import labmake

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "kernel-lab"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kernel_lab_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


labcheck = _load(LAB / "tests" / "labcheck.py")
spincheck = labcheck.spincheck

CHECKS = labcheck.checks()
# Pure model checking: no C build, no qemu.
SPIN_ONLY = [c for c in CHECKS if c.name.startswith("spin-") and not c.name.endswith("-log")]
LONG = [c for c in CHECKS if "10e7" in c.name]
PORT = [c for c in CHECKS if c not in SPIN_ONLY and c not in LONG]


@pytest.fixture(scope="session")
def lab_built():
    """Build every architecture once (make skips what is up to date)."""
    p = labmake.make("-j2")
    if p.returncode:
        pytest.fail(f"make -C kernel-lab failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")


def port_run(arch, binary, text, tmp_path):
    """A port's output for a parameter file, run (under qemu-user off x86_64) in an otherwise empty directory."""
    run_dir = tmp_path / f"{arch}-{binary}"
    run_dir.mkdir()
    (run_dir / "params").write_text(text)
    exe = LAB / "build" / arch / binary
    p = subprocess.run(labcheck.QEMU[arch] + [str(exe), "params"], cwd=run_dir, capture_output=True, text=True,
                       timeout=120)
    assert sorted(q.name for q in run_dir.iterdir()) == ["params"], "the port wrote into its directory"
    return p


def run_check(check):
    try:
        return check()
    except labcheck.LabFailure as e:
        pytest.fail(f"{check.name}: {e}", pytrace=False)


def spin_params():
    """Every spin check; make test-fast runs the first clean one and the first caught one, make test all."""
    firsts = {next(c.name for c in SPIN_ONLY if c.name.endswith(end)) for end in ("-clean", "-caught")}
    return [pytest.param(c, id=c.name, marks=[] if c.name in firsts else [pytest.mark.slow]) for c in SPIN_ONLY]


@pytest.mark.parametrize("check", spin_params())
def test_spin(check):
    run_check(check)


@pytest.mark.qemu
@pytest.mark.parametrize("check", PORT, ids=lambda c: c.name)
def test_port(check, lab_built):
    run_check(check)


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.parametrize("check", LONG, ids=lambda c: c.name)
def test_long_run(check, lab_built):
    run_check(check)


def test_every_check_is_collected_once():
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names)), "two lab checks share a name"
    assert sorted(SPIN_ONLY + LONG + PORT, key=lambda c: names.index(c.name)) == CHECKS


# ---- the Promela model against the Python model ---------------------------------------------------

def python_model_triples(cpus: int, variant: str, acquisitions: int = 2) -> tuple[set, int]:
    """Every (tail, pending, locked) triple the Python qspinlock model reaches, one lock.

    The configuration is the one ``kstep check`` builds from a C log's header, so the three
    artefacts -- C port, Promela model, Python model -- are compared on the same runs."""
    from kstep.lab.replay import qspinlock as check
    header = check.parse_header("qspinlock", check.header_line(variant, cpus, acquisitions, 8), "test")
    model = header.model
    s0 = model.initial(header.config)
    seen, todo, triples = {s0}, [s0], set()
    while todo:
        s = todo.pop()
        w = s.words[0]
        triples.add((w >> 16, (w >> 8) & 0xFF, w & 0xFF))
        for a in model.actions(s):
            t = model.step(s, a)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return triples, len(seen)


@pytest.mark.slow
@pytest.mark.parametrize("cpus", [2, 3])
@pytest.mark.parametrize("variant", labcheck.CORRECT)
def test_python_model_reaches_exactly_the_promela_models_triples(variant, cpus):
    python, states = python_model_triples(cpus, variant)
    promela = spincheck.triples(cpus, variant=variant)
    assert python == promela, (
        f"{variant}, {cpus} CPUs x 2 acquisitions: only the Python model reaches {sorted(python - promela)}; "
        f"only the Promela model reaches {sorted(promela - python)} ({states} Python states)")


# ---- kstep check replays the port's logs ------------------------------------------------------------

def kstep_check():
    """The log replay's dispatcher: ``check_file(mechanism, path)`` (kstep.lab.replay)."""
    from kstep.lab import replay

    return replay


CHECKED_RUNS = {  # name: torture arguments
    "v6.12": ["--variant", "v6.12"],
    "v6.12-pb1": ["--variant", "v6.12", "--pending-bits", "1"],
    "before-set-locked": ["--variant", "before-set-locked"],
    "ticket": ["--lock", "ticket"],
}


@pytest.mark.qemu
@pytest.mark.parametrize("run", CHECKED_RUNS)
@pytest.mark.parametrize("arch", labcheck.ARCHES)
def test_kstep_check_accepts_every_step_of_a_logged_run(arch, run, tmp_path, lab_built):
    check = kstep_check()
    path = tmp_path / "run.log"
    labcheck.expect_clean(labcheck.logged_run(arch, path, CHECKED_RUNS[run] + [
        "--threads", 3, "--acquisitions", 300, "--seed", 5]))
    r = check.check_file("qspinlock", path)
    assert r.ok, f"{arch} {run}: kstep check stops at line {r.line}: {r.text!r}: {r.verdict}: {r.why}"
    assert r.acquisitions == 900, f"{arch} {run}: {r.acquisitions} acquisitions replayed"


@pytest.mark.qemu
@pytest.mark.parametrize("variant", labcheck.BROKEN)
@pytest.mark.parametrize("arch", labcheck.ARCHES)
def test_kstep_check_rejects_a_logged_run_of_a_broken_variant(arch, variant, tmp_path, lab_built):
    """The log ends where the run was caught (a violation or a hang) or runs to its end; either
    way the model must refuse one of its steps."""
    check = kstep_check()
    verdicts = []
    for seed in labcheck.HUNT_SEEDS:
        path = tmp_path / f"{seed}.log"
        run = labcheck.logged_run(arch, path, ["--variant", variant, "--threads", 3, "--acquisitions", 300,
                                               "--seed", seed, "--hang-timeout", labcheck.HUNT_HANG_S])
        r = check.check_file("qspinlock", path)
        if not r.ok:
            return
        verdicts.append(f"seed {seed}: the tool said {run.verdict}, kstep check accepted {r.steps} steps")
    pytest.fail(f"{arch} {variant}: " + "; ".join(verdicts))


TIMED_RUNS = {  # name: (variant, pending bits): the port driven in the timed scheduler's order
    "v6.12": ("v6.12", 8),
    "v6.12-pb1": ("v6.12", 1),
    "before-set-locked": ("before-set-locked", 8),
}


def timed_run(variant, cpus, acquisitions, pending_bits):
    """The model's timed run (the committed cost table) of the port's configuration: the header's model,
    the trace, and the log the port must write when it takes the trace's steps in that order."""
    from kstep.engine import costs, simulate
    from kstep.engine.timed import Timed
    from kstep.lab.replay import qspinlock as q

    header = q.header_line(variant, cpus, acquisitions, pending_bits)
    h = q.parse_header("qspinlock", header, "timed run")
    trace = simulate(h.model, h.model.initial(h.config), Timed(costs.load()))
    assert trace.outcome == "finished"
    return trace, [header] + q.log_lines(h.model, trace) + [q.end_line(len(trace))]


@pytest.mark.qemu
@pytest.mark.parametrize("run", TIMED_RUNS)
@pytest.mark.parametrize("arch", labcheck.ARCHES)
def test_the_port_takes_the_timed_schedulers_steps_and_writes_the_models_log(arch, run, tmp_path, lab_built):
    """qspinlock-torture --schedule takes a timed run's steps in the simulator's order: its log is the
    model's own log of that run, line for line (words, MCS fields), and kstep check replays it.  The
    seeded order of the same configuration is another log, so following the schedule is what matches."""
    from kstep.engine.schedule import schedule_text

    variant, pending_bits = TIMED_RUNS[run]
    trace, want = timed_run(variant, 3, 5, pending_bits)
    args = ["--variant", variant, "--pending-bits", pending_bits, "--threads", 3, "--acquisitions", 5]
    path = tmp_path / "timed.log"
    r = labcheck.logged_run(arch, path, args + ["--schedule", schedule_text(a.actor for a in trace.actions)])
    if any(a.label == "clear_pending_set_locked" for a in trace.actions):
        labcheck.expect_clean(r)
    else:  # before-set-locked: in the timed order the waiters queue for the lock word's line, their
        # cmpxchg finds the word changed (released, or taken again by the CPU that had it) and retries,
        # so pending is never set, and the port, following that order, says the run proves nothing
        assert r.rc == labcheck.INCONCLUSIVE and "clear_pending_set_locked (the pending path) never ran" in r.stderr
    assert path.read_text().splitlines() == want
    r = kstep_check().check_file("qspinlock", path)
    assert r.ok and r.steps == len(trace), f"{arch} {run}: kstep check stops at line {r.line}: {r.why}"
    seeded = tmp_path / "seeded.log"
    r = labcheck.logged_run(arch, seeded, args + ["--seed", 5])  # it may miss a racing path: inconclusive
    assert r.rc in (labcheck.CLEAN, labcheck.INCONCLUSIVE) and seeded.read_text().splitlines() != want


@pytest.mark.qemu  # the lab build: cross compilers, as every port test
def test_the_port_stops_where_it_cannot_follow_a_schedule(tmp_path, lab_built):
    """C1's third step waits for C0, which still holds the lock: a schedule the model could not have
    made, and the port says so (exit 1) instead of waiting; so it does for a schedule that ends early or
    runs on (C1, uncontended once C0 is done, takes three steps, not the four a contended run takes)."""
    args = ["--variant", "v6.12", "--threads", 2, "--acquisitions", 1]
    for schedule, says in (("C0 C1 C1 C1 C0*2 C1*3", "step 4 is C1's wait_locked_clear, whose condition is false here"),
                           ("C0*3", "the schedule has no step left for C1"),
                           ("C0*3 C1*3 C1", "step 7 is C1's, which has done all its acquisitions"),
                           ("C0*3 C1*4", "step 7 is C1's, which has done all its acquisitions")):
        r = labcheck.logged_run("x86_64", tmp_path / "run.log", args + ["--schedule", schedule])
        assert r.rc == labcheck.VIOLATION and says in r.stderr and "disagree" in r.stderr, (schedule, r.stderr)
    for schedule, says in (("C2", "'2' is not a decimal integer in 0..1"), ("C0:lock", "is not a CPU"),
                           ("", "no step")):
        r = labcheck.logged_run("x86_64", tmp_path / "run.log", args + ["--schedule", schedule])
        assert r.rc == labcheck.USAGE and says in r.stderr, (schedule, r.stderr)


# ---- the checks have teeth ---------------------------------------------------------------------------

# The first broken variant shows the check's teeth in make test-fast; the others run in make test.
@pytest.mark.parametrize("variant", [pytest.param(v, marks=[pytest.mark.slow] if i else [])
                                     for i, v in enumerate(labcheck.BROKEN)])
def test_spin_clean_check_fails_on_a_broken_variant(variant):
    with pytest.raises(labcheck.LabFailure, match="spin: "):
        labcheck.check_spin_clean(variant, 3)


GOOD_LOG = """\
# kstep-log 2 qspinlock variant=v6.12 cpus=2 acquisitions=1 pending_bits=8
0 0 queued_spin_lock 0x00000000 0x00000001 0 - - -
1 1 queued_spin_lock 0x00000001 0x00000001 0 - - -
2 0 critical_section 0x00000001 0x00000001 0 - - -
3 1 queued_fetch_set_pending_acquire 0x00000001 0x00000101 0 - - -
4 0 queued_spin_unlock 0x00000101 0x00000100 0 - - -
5 1 wait_locked_clear 0x00000100 0x00000100 0 - - -
6 1 clear_pending_set_locked 0x00000100 0x00000001 0 - - -
7 1 critical_section 0x00000001 0x00000001 0 - - -
8 1 queued_spin_unlock 0x00000001 0x00000000 0 - - -
# kstep-log end steps=9
"""

BAD_LOGS = {
    "not one linear order": GOOD_LOG.replace("5 1 wait_locked_clear 0x00000100", "5 1 wait_locked_clear 0x00000101"),
    "ticket 5, expected 4": GOOD_LOG.replace("4 0 queued", "5 0 queued"),
    "not a label": GOOD_LOG.replace("xchg", "x").replace("wait_locked_clear", "wait_locked"),
    "is not one of the 2 CPUs": GOOD_LOG.replace("7 1 critical", "7 2 critical"),
    "changed the word": GOOD_LOG.replace("2 0 critical_section 0x00000001 0x00000001",
                                         "2 0 critical_section 0x00000001 0x00000003"),
    "not a kstep-log header": GOOD_LOG.replace("# kstep-log 2 qspinlock", "# kstep-log qspinlock"),
    "the log has C0: 0": GOOD_LOG.replace("acquisitions=1", "acquisitions=1").replace(
        "2 0 critical_section", "2 0 wait_head"),
    "no end marker after 9 steps": GOOD_LOG.replace("# kstep-log end steps=9\n", ""),
    "the end marker counts 10 steps, the log has 9": GOOD_LOG.replace("steps=9", "steps=10"),
    "a CPU that never nests": GOOD_LOG.replace("5 1 wait_locked_clear 0x00000100 0x00000100 0 - - -",
                                               "5 1 wait_locked_clear 0x00000100 0x00000100 1 - - -"),
}


def test_log_check_accepts_a_good_log(tmp_path):
    path = tmp_path / "good.log"
    path.write_text(GOOD_LOG)
    log = labcheck.read_log(path)
    assert log.mutex_violation is None and log.count("critical_section") == 2


@pytest.mark.parametrize("says", BAD_LOGS)
def test_log_check_rejects_a_bad_log(tmp_path, says):
    path = tmp_path / "bad.log"
    path.write_text(BAD_LOGS[says])
    with pytest.raises(labcheck.LabFailure, match=says):
        labcheck.read_log(path)


def test_log_check_reports_overlapping_critical_sections(tmp_path):
    path = tmp_path / "overlap.log"
    path.write_text(GOOD_LOG.replace(
        "4 0 queued_spin_unlock 0x00000101 0x00000100 0 - - -\n5 1 wait_locked_clear 0x00000100 0x00000100 0 - - -\n"
        "6 1 clear_pending_set_locked 0x00000100 0x00000001 0 - - -\n"
        "7 1 critical_section 0x00000001 0x00000001 0 - - -\n"
        "8 1 queued_spin_unlock 0x00000001 0x00000000 0 - - -\n# kstep-log end steps=9\n",
        "4 1 critical_section 0x00000101 0x00000101 0 - - -\n5 0 queued_spin_unlock 0x00000101 0x00000100 0 - - -\n"
        "6 1 queued_spin_unlock 0x00000100 0x00000100 0 - - -\n# kstep-log end steps=7\n"))
    assert "C1 enters the critical section held by C0" in labcheck.read_log(path).mutex_violation
