"""The kernel lab's DAMON port against the simulator, beyond the lab checks (test_kernel_lab.py runs
damoncheck's: every bundled scenario byte for byte on each architecture, the merge-threshold
mutation caught, the KUnit cases): scenarios drawn from a seed at test time on each architecture
(the seeds are printed, and named in a failure), the mutation caught on them too, the parameter
keys on both sides, bad parameters, and the KUnit cases listed by name alike in C and Python."""

import random
import re

import pytest

import labmake

import kstep
from kstep.lab.replay import damon as lab
from kstep.models.damon import kunit
from test_kernel_lab import LAB, labcheck, port_run

pytestmark = pytest.mark.qemu
ARCHES = tuple(labcheck.QEMU)
SEEDS_PER_ARCH = 4
BINARIES = ("damon", "damon-merge-lt", "damon-kunit")


@pytest.fixture(scope="module")
def built():
    targets = [f"build/{arch}/{b}" for arch in ARCHES for b in BINARIES]
    p = labmake.make("-s", "-j2", *targets)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def c_run(arch, text, tmp_path, binary="damon"):
    return port_run(arch, binary, text, tmp_path)


def drawn(seed):
    config, schedule = lab.random_config(seed)
    trace = lab.simulated(config, schedule)
    return lab.params(config, trace), lab.report(trace)


@pytest.mark.parametrize("arch", ARCHES)
def test_random_scenarios_run_identically_in_c(arch, built, tmp_path):
    seed = random.SystemRandom().randrange(1 << 32)
    print(f"seeds {seed}..{seed + SEEDS_PER_ARCH - 1} (replay: kstep.lab.replay.damon.random_config(seed))")
    for k in range(SEEDS_PER_ARCH):
        text, expected = drawn(seed + k)
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run(arch, text, sub)
        assert p.returncode == 0 and p.stderr == "", f"seed {seed + k}: {p.stderr}"
        assert p.stdout == expected, f"seed {seed + k} on {arch}"


def test_the_mutated_build_breaks_the_identity_on_drawn_scenarios(built, tmp_path):
    """damon-merge-lt differs on drawn scenarios too (on the bundled ones: damoncheck)."""
    seed = random.SystemRandom().randrange(1 << 32)
    print(f"seeds {seed}..{seed + 7}")
    differ = 0
    for k in range(8):
        text, expected = drawn(seed + k)
        sub = tmp_path / str(k)
        sub.mkdir()
        differ += c_run("x86_64", text, sub, "damon-merge-lt").stdout != expected
    assert differ, f"seeds {seed}..{seed + 7}: the mutated build printed the simulator's output on all 8"


def test_the_port_counts_a_huge_page_touched_away_from_its_head(built, tmp_path):
    """The C port reads the huge page's one accessed bit as the simulator does (test_damon checks
    the simulator's 20 out of 20)."""
    from test_damon import HUGE_PAGE_TOUCHED_MID

    config = kstep.open("damon", "hot-block", overrides=HUGE_PAGE_TOUCHED_MID).scenario.config
    trace = lab.simulated(config)
    expected = lab.report(trace)
    assert " 20 " in expected
    p = c_run("x86_64", lab.params(config, trace), tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == expected


def written_keys(text):
    return {re.sub(r"\.\d+\.", ".N.", line.split("=")[0]) for line in text.splitlines()}


def test_the_parameter_keys_are_the_ports_keys(built, tmp_path):
    """Together the bundled and drawn scenarios write exactly PARAM_KEYS; the port's parser names
    exactly those keys; it refuses any other key or a bad value with one line naming the place
    and exit status 2."""
    tmp = tmp_path / "cases"
    tmp.mkdir()
    written = set()
    for name in lab.write_cases(tmp):
        written |= written_keys((tmp / name / "params").read_text())
    for seed in range(10):
        written |= written_keys(drawn(seed)[0])
    assert written == set(lab.PARAM_KEYS)
    source = (LAB / "damon" / "harness.c").read_text()
    fields = set(re.findall(r'strcmp\((?:key|field|sub), "(\w+)"\)', source))
    prefixes = set(re.findall(r'strncmp\((?:key|field), "([\w.]+)\."', source))
    assert fields | {a for a in lab.dm.ACTIONS} == {k.split(".")[-1] for k in lab.PARAM_KEYS}
    lists = {part for k in lab.PARAM_KEYS for part, after in zip(k.split("."), k.split(".")[1:]) if after == "N"}
    assert prefixes == lists | {"ns_per_byte"}
    text = (tmp / "quota-goal" / "params").read_text()
    cases = {"vma.0.colour=blue": "unknown key", "scheme.0.action=delete": "not one of",
             "access.0.rate_permil=1001": "not a number", "mmap.3.op=mmap": "no such item",
             "free_mem_rate=5:1,2:3": "time order", "sample_us=200000": "damon_set_attrs() refuses"}
    for k, (bad, says) in enumerate(cases.items()):
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run("x86_64", text + bad + "\n", sub)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
        assert re.match(r"damon: params(:\d+)?: ", p.stderr), p.stderr


@pytest.mark.parametrize("arch", ARCHES)
def test_the_kunit_cases_are_listed_alike_in_c_and_python(arch, built):
    results = labcheck.damoncheck.kunit_results(labcheck, arch)
    assert tuple(results) == kunit.CASES
    assert {name for name, r in results.items() if r == "skip"} == set(kunit.NOT_APPLICABLE)
    assert all(results[name] == "ok" for name in kunit.REPRODUCED)
