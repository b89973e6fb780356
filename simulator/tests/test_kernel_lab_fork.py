"""The kernel lab's fork-batch port against the simulator: the same copies, counters, page tables
and folio counts, on x86_64 and under qemu-user on arm64 and ppc64le, for every bundled scenario in
which fork copies alone, every correct strategy, and random layouts drawn from a seed at test time.
The C program runs in an empty directory and reads nothing but the parameter file."""

import random
import re
import subprocess

import pytest

from kstep.engine import scenario
from kstep.lab import fork_batch as lab
from kstep.models import MODELS
from kstep.models.fork_batch import TOGGLES
from kstep.models.pgtable import FORMATS
from test_kernel_lab import LAB, labcheck

pytestmark = pytest.mark.qemu
MECH = "fork-batch"
ARCHES = tuple(labcheck.QEMU)
STRATEGIES = ("folio-batch", "v6.12.0-batch", "no-batch-hint", "per-pte", "arch-hint")
ALONE = [n for n in scenario.bundled(MECH)
         if [t["kind"] for t in scenario.load(MECH, MODELS[MECH].scenario_schema, n).config["threads"]] == ["fork"]]


@pytest.fixture(scope="module")
def built():
    p = subprocess.run(["make", "-s", "-C", str(LAB), "-j2"], capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def c_run(arch, text, tmp_path, binary="fork-batch"):
    """The port's output for a parameter file, run in an otherwise empty directory."""
    run_dir = tmp_path / f"{arch}-{binary}"
    run_dir.mkdir()
    (run_dir / "params").write_text(text)
    exe = LAB / "build" / arch / binary
    p = subprocess.run(labcheck.QEMU[arch] + [str(exe), "params"], cwd=run_dir, capture_output=True, text=True,
                       timeout=120)
    assert sorted(q.name for q in run_dir.iterdir()) == ["params"], "the port wrote into its directory"
    return p


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


def random_layout(seed: int) -> dict:
    """A scenario drawn from a seed: folios of order 0, 4 and 9 mapped whole or in part, side by side
    or with holes, some toggled, in a private anonymous VMA and maybe a shared file one."""
    rnd = random.Random(seed)
    fmt = rnd.choice(FORMATS)
    folios, maps, at = [], [], rnd.randrange(0, 24)
    end = rnd.choice((96, 200, 600))
    while at < end - 1:
        order = rnd.choice((0, 0, 4, 4, 9))
        n = 1 << order
        first = rnd.randrange(n) if n > 1 and rnd.random() < 0.4 else 0
        pages = min(n - first, end - at, rnd.choice((n, n, rnd.randrange(1, n + 1))))
        name = f"F{len(folios)}"
        folios.append({"name": name, "order": order, "kind": "anon", "pinned": False})
        bits = {b: rnd.random() < 0.8 for b in ("write", "dirty", "young")}
        toggles = {f"toggle_{b}": sorted(rnd.sample(range(pages), min(pages, rnd.choice((0, 0, 1, 3)))))
                   for b in ("write", "dirty", "young")}
        toggles.update({"toggle_soft_dirty": [], "toggle_uffd_wp": []})
        maps.append({"at": at, "folio": name, "first": first, "pages": pages, **bits, "soft_dirty": False,
                     "uffd_wp": False, "exclusive": True, **toggles})
        at += pages + rnd.choice((0, 0, 0, 1, 5))
    return {"format": fmt, "mmf_has_pinned": False,
            "vmas": [{"start": 0, "end": end, "kind": "private-anon", "prot": "rw", "anon_vma": True,
                      "soft_dirty": False, "uffd_wp": False}],
            "folios": folios, "maps": maps, "threads": [{"name": "P", "kind": "fork", "faults": [], "addr": 0}]}


@pytest.mark.parametrize("arch", ARCHES)
def test_random_layouts_copy_identically_in_c(arch, built, tmp_path):
    seed = random.SystemRandom().randrange(1 << 32)
    for k in range(6):
        config = random_layout(seed + k)
        strategy = STRATEGIES[(seed + k) % len(STRATEGIES)]
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run(arch, lab.params(config, strategy), sub)
        assert p.returncode == 0, p.stderr
        assert p.stdout == lab.report(lab.simulated(config, strategy)), f"seed {seed + k}, {strategy}, {arch}"


@pytest.mark.parametrize("binary, name", [("fork-batch-cont8", "contpte-arm64"),
                                          ("fork-batch-drop-any-writable", "mthp-batches")])
def test_a_mutated_port_breaks_the_identity(binary, name, built, tmp_path):
    config = config_of(name)
    p = c_run("x86_64", lab.params(config, "folio-batch"), tmp_path, binary)
    assert p.returncode == 0 and p.stdout != lab.report(lab.simulated(config, "folio-batch"))


def test_the_parameter_keys_are_the_ports_keys(built, tmp_path):
    """params() writes exactly PARAM_KEYS (indices aside), the port takes them all, and refuses any
    other key or a bad value with one line naming the place and exit status 2."""
    text = lab.params(config_of("batch-ends"), "folio-batch")
    written = {re.sub(r"\.\d+\.", ".N.", line.split("=")[0]) for line in text.splitlines()}
    assert written == set(lab.PARAM_KEYS)
    assert c_run("x86_64", text, tmp_path).returncode == 0
    for k, (bad, says) in enumerate({"vma.0.colour=blue": "unknown key", "format=sparc": "not one of",
                                     "map.0.at=-3": "not a number", "map.99.at=1": "no such item"}.items()):
        sub = tmp_path / str(k)
        sub.mkdir()
        p = c_run("x86_64", text + bad + "\n", sub)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
        assert re.match(r"fork-batch: params:\d+: ", p.stderr), p.stderr


def test_a_scenario_with_other_threads_has_no_c_run():
    from kstep.errors import UserError

    with pytest.raises(UserError, match="copies alone"):
        lab.params(config_of("gup-fast-vs-fork"), "folio-batch")
