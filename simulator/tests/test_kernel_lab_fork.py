"""The kernel lab's fork-batch port against the simulator: the same steps, copies, counters, page
tables and folio counts, on x86_64 and under qemu-user on arm64 and ppc64le, for every bundled
scenario in which fork copies alone, every correct strategy, random layouts drawn from a seed at
test time (in both languages), and the two scenarios with a fault or a GUP-fast pin beside the
fork, on their own schedule and on random interleavings.  The C program runs in an empty directory
and reads nothing but the parameter file."""

import random
import re

import pytest

import labmake

from kstep.engine import Random, simulate
from kstep.engine.schedule import schedule_text
from kstep.scenario_spec import scenario
from kstep.lab.replay import fork_batch as lab
from kstep.models import MODELS, make_model
from kstep.models.fork_batch.pgtable import FORMATS
from test_kernel_lab import labcheck, port_run

pytestmark = pytest.mark.qemu
MECH = "fork-batch"
ARCHES = tuple(labcheck.QEMU)
STRATEGIES = ("folio-batch", "v6.12.0-batch", "no-batch-hint", "per-pte", "arch-hint")
ALONE = [n for n in scenario.bundled(MECH)
         if [t["kind"] for t in scenario.load(MECH, MODELS[MECH].scenario_schema, n).config["threads"]] == ["fork"]]
BESIDE = ("fault-vs-fork", "gup-fast-vs-fork")  # a fault, a GUP-fast pin beside the fork


@pytest.fixture(scope="module")
def built():
    p = labmake.make("-s", "-j2")
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def c_run(arch, text, tmp_path, binary="fork-batch"):
    return port_run(arch, binary, text, tmp_path)


def config_of(name):
    return scenario.load(MECH, MODELS[MECH].scenario_schema, name).config


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", ALONE)
def test_every_bundled_scenario_copies_identically_in_c(arch, name, built, tmp_path):
    config = config_of(name)
    for strategy in STRATEGIES:
        sub = tmp_path / strategy
        sub.mkdir()
        p = c_run(arch, lab.params(config, strategy), sub)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        assert p.stdout == lab.report(lab.simulated(config, strategy)), f"{name} {strategy} on {arch}"


@pytest.mark.parametrize("arch", ARCHES)
def test_the_rmap_without_large_mapcount_copies_identically_in_c(arch, built, tmp_path):
    """large_mapcount = false (the thread's rmap): the same mapcounts, a large folio's large_mapcount
    left at -1 and one rmap atomic per PTE on both sides."""
    config = {**config_of("mthp-batches"), "large_mapcount": False}
    for strategy in ("folio-batch", "per-pte"):
        sub = tmp_path / strategy
        sub.mkdir()
        p = c_run(arch, lab.params(config, strategy), sub)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        assert p.stdout == lab.report(lab.simulated(config, strategy)), f"{strategy} on {arch}"


def drawn_seed() -> int:
    """A seed drawn at test time, printed so that a failing run can be had again."""
    seed = random.SystemRandom().randrange(1 << 32)
    print(f"random layouts from seed {seed}")
    return seed


@pytest.mark.parametrize("arch", ARCHES)
def test_random_layouts_copy_identically_in_c(arch, built, tmp_path):
    """The port draws each layout itself from the seed (seed_params is two lines): the same page
    tables, copies, counters and folio counts as the simulator's random_layout of that seed."""
    seed = drawn_seed()
    for k in range(6):
        strategy = STRATEGIES[(seed + k) % len(STRATEGIES)]
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run(arch, lab.seed_params(seed + k, strategy), sub)
        assert p.returncode == 0, p.stderr
        assert p.stdout == lab.report(lab.simulated(lab.random_layout(seed + k), strategy)), \
            f"seed {seed + k}, {strategy}, {arch}"


def test_random_layouts_are_valid_scenarios():
    """random_layout passes what it draws through the scenario schema and its rules (an invalid layout
    raises), and it varies: every format, two VMAs, zero, swap and pinned entries all turn up within
    a few dozen seeds."""
    seed = drawn_seed()
    seen = set()
    for k in range(60):
        config = lab.random_layout(seed + k)
        seen |= {config["format"], len(config["vmas"])} | {m["folio"] for m in config["maps"] if m["folio"] in
                                                           ("zero", "swap")}
        seen |= {"pinned"} if any(f["pinned"] for f in config["folios"]) else set()
    assert seen == {*FORMATS, 1, 2, "zero", "swap", "pinned"}


@pytest.mark.parametrize("binary, name", [("fork-batch-cont8", "contpte-arm64"),
                                          ("fork-batch-drop-any-writable", "mthp-batches")])
def test_a_mutated_port_breaks_the_identity(binary, name, built, tmp_path):
    config = config_of(name)
    p = c_run("x86_64", lab.params(config, "folio-batch"), tmp_path, binary)
    assert p.returncode == 0 and p.stdout != lab.report(lab.simulated(config, "folio-batch"))


@pytest.mark.parametrize("binary", ["fork-batch-cont8", "fork-batch-drop-any-writable"])
def test_a_mutated_port_breaks_the_identity_on_random_layouts(binary, built, tmp_path):
    """Some seed from a drawn one on (about one in four breaks each mutation) gives a layout on which
    the mutated port's output differs from the simulator's."""
    seed = drawn_seed()
    for k in range(200):
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run("x86_64", lab.seed_params(seed + k, "folio-batch"), sub, binary)
        assert p.returncode == 0, p.stderr
        if p.stdout != lab.report(lab.simulated(lab.random_layout(seed + k), "folio-batch")):
            return
    pytest.fail(f"{binary} copied 200 random layouts from seed {seed} as the simulator does")


def test_the_parameter_keys_are_the_ports_keys(built, tmp_path):
    """params() writes exactly PARAM_KEYS (indices aside), the port takes them all, and refuses any
    other key or a bad value with one line naming the place and exit status 2."""
    text, _ = beside("gup-fast-vs-fork")
    written = {re.sub(r"\.\d+\.", ".N.", line.split("=")[0]) for line in text.splitlines()}
    assert written == set(lab.PARAM_KEYS)
    assert c_run("x86_64", text, tmp_path).returncode == 0
    seeded = lab.seed_params(7, "per-pte")
    assert {line.split("=")[0] for line in seeded.splitlines()} == set(lab.SEED_KEYS)
    for k, (bad, says) in enumerate({"vma.0.colour=blue": "unknown key", "format=sparc": "not one of",
                                     "map.0.at=-3": "not a number", "map.99.at=1": "no such item",
                                     "seed=7": "a seed and a layout", "seed=-1": "not an unsigned"}.items()):
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run("x86_64", text + bad + "\n", sub)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
        assert re.match(r"fork-batch: params:\d+: ", p.stderr), p.stderr


def test_a_scenario_with_other_threads_needs_a_schedule():
    from kstep.errors import UserError

    with pytest.raises(UserError, match="needs a schedule"):
        lab.params(config_of("gup-fast-vs-fork"), "folio-batch")


def beside(name, variant="folio-batch", schedule=None):
    """(parameter file, expected output) of a scenario with threads beside the fork: the simulation on
    the scenario's schedule (or the one given), and that run's every step as the port's schedule."""
    sc = scenario.load(MECH, MODELS[MECH].scenario_schema, name)
    trace = lab.simulated(sc.config, variant, schedule or sc.schedule)
    return lab.params(sc.config, "folio-batch", schedule_text(a.actor for a in trace.actions)), lab.report(trace)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", BESIDE)
def test_a_fault_or_a_pin_beside_the_fork_runs_identically_in_c(arch, name, built, tmp_path):
    """The fault that falls back to mmap_lock and sleeps behind the fork; the pin GUP-fast drops
    because write_protect_seq moved, and takes again on the slow path: the same steps, the same
    page tables and counts, the same pin."""
    text, want = beside(name)
    p = c_run(arch, text, tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == want, f"{name} on {arch}"


CROWD = MODELS[MECH].scenario_schema.check({  # two faulters and two pinners around one fork
    "vmas": [{"start": 0, "end": 16}, {"start": 16, "end": 32}],
    "folios": [{"name": "A", "order": 4}, {"name": "B", "order": 0}],
    "maps": [{"at": 0, "folio": "A", "pages": 8}, {"at": 16, "folio": "B"}],
    "threads": [{"name": "P", "kind": "fork"}, {"name": "T1", "kind": "fault", "faults": [10, 20]},
                {"name": "T2", "kind": "fault", "faults": [21, 11]}, {"name": "G", "kind": "gup", "addr": 16},
                {"name": "H", "kind": "gup", "addr": 3}]}, "crowd")
FOLDED = MODELS[MECH].scenario_schema.check({  # write faults on a folded arm64 block, before or after the fork
    "format": "arm64-4K-contpte", "vmas": [{"start": 0, "end": 16}, {"start": 16, "end": 32}],
    "folios": [{"name": "A", "order": 4}], "maps": [{"at": 0, "folio": "A", "pages": 16, "write": False}],
    "threads": [{"name": "P", "kind": "fork"}, {"name": "G", "kind": "gup", "addr": 3},
                {"name": "T1", "kind": "fault", "faults": [20]}]}, "folded")
DRAWN = {"crowd": CROWD, "folded": FOLDED}


@pytest.mark.parametrize("name", BESIDE + tuple(DRAWN))
def test_random_interleavings_run_identically_in_c(name, built, tmp_path):
    """Interleavings drawn by the model's seeded random scheduler, including faults that hold a VMA's
    lock while fork waits for it, readers that steal or queue on mmap_lock, HANDOFF, and a write fault
    on a folded arm64 block that must unfold it: the port takes the same steps to the same state, and
    no check fails on the way."""
    seed = drawn_seed()
    config = DRAWN[name] if name in DRAWN else config_of(name)
    model = make_model(MECH)
    for k in range(8):
        trace = simulate(model, model.initial(config), Random(seed + k), max_steps=100_000)
        assert trace.outcome == "finished", f"seed {seed + k}: {trace.violation}"
        schedule = schedule_text(a.actor for a in trace.actions)
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run("x86_64", lab.params(config, "folio-batch", schedule), sub)
        assert p.returncode == 0, p.stderr
        assert p.stdout == lab.report(lab.simulated(config, "folio-batch", schedule)), f"seed {seed + k}"


def test_gup_fast_ignoring_write_protect_seq_breaks_the_pin_in_c_too(built, tmp_path):
    """The port built without GUP-fast's write_protect_seq checks runs as the model's
    gup-fast-ignores-seq does, and its own check catches the child mapping the pinned page at the
    same step; the correct port runs that scenario without the violation."""
    text, want = beside("gup-fast-vs-fork", "gup-fast-ignores-seq", "G*3 P*11 G*3")
    assert "violation pinned-page-not-shared" in want
    p = c_run("x86_64", text, tmp_path, "fork-batch-gup-ignores-seq")
    assert p.returncode == 0 and p.stdout == want
    text, want = beside("gup-fast-vs-fork")
    sub = tmp_path / "correct"
    sub.mkdir()
    p = c_run("x86_64", text, sub)
    assert p.returncode == 0 and p.stdout == want and "violation" not in p.stdout


def test_fork_without_vma_locks_lets_a_fault_change_the_copy_in_c_too(built, tmp_path):
    """The port built without dup_mmap's VMA write locks runs as the model's fork-without-vma-locks
    does: the fault finds the VMA unlocked and maps its page while fork copies that VMA, and the
    port's own check names copy-sees-stable-page-tables at the same step."""
    text, want = beside("fault-vs-fork", "fork-without-vma-locks")
    assert "violation copy-sees-stable-page-tables" in want
    p = c_run("x86_64", text, tmp_path, "fork-batch-without-vma-locks")
    assert p.returncode == 0 and p.stdout == want


def test_a_schedule_the_threads_cannot_take_is_refused(built, tmp_path):
    """One line naming the step, exit status 2: a thread that is blocked or done, or a schedule that
    ends before the fork does."""
    text, _ = beside("gup-fast-vs-fork")
    base, full = text.rsplit("schedule=", 1)
    for k, (schedule, says) in enumerate({full.strip() + " G": "names G, which has finished",
                                          "G*3 P*10 G*5": "names G, which is blocked",
                                          "P*3": "it ends while P still forks",
                                          "Q*2": "not a thread's name"}.items()):
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run("x86_64", base + f"schedule={schedule}\n", sub)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, (schedule, p.stderr)
