"""A litmus test in the player (issue 24, section 2): x86-TSO's store buffers stepped, an execution revealed
under the axiomatic models, the cycle that forbids one named after its axiom, and each primitive's 6.12
definition per architecture, checked against the kernel tree."""
import subprocess
import sys
import tomllib
from importlib import resources

import pytest

from kstep.engine.schedule import Random, simulate
from kstep.source.excerpts import excerpt, load
from kstep.memory import tso
from kstep.memory.generate import generate, render
from kstep.memory.verdict import check
from kstep.memory.litmus import parse
from kstep.memory.primitives import definition
from kstep.memory.stepping import SEEDS, TsoMachine, stepped

SHAPES = {s["name"]: s["litmus"] for s in
          tomllib.loads(resources.files("kstep.memory").joinpath("shapes.toml").read_text())["shape"]}
EXCERPTS = load()["excerpts"]


def shape(name):
    return parse(SHAPES[name], name)


def test_tso_fills_and_drains_the_store_buffers_and_reaches_sbs_weak_outcome():
    model, trace = stepped(shape("SB"), "tso", EXCERPTS)
    assert model.exists_holds(trace.states[-1])
    assert model.outcome(trace.states[-1]) == (("0:r0", 0), ("1:r0", 0))
    labels = [a.label for a in trace.actions]
    # Both loads ran while the other CPU's store still sat in its buffer: they read memory's 0.
    reads = [k for k, a in enumerate(trace.actions) if a.label == "READ_ONCE"]
    for k in reads:
        other = 1 - int(trace.actions[k].actor[1])
        assert trace.states[k].buffers[other], "the other CPU's store had already drained"
    assert labels.count("drain") == 2 and labels[-1] == "drain"
    assert all(not b for b in trace.states[-1].buffers)
    # The same seed, the same run.
    again = simulate(model, model.initial(), Random(trace.seed))
    assert [str(a) for a in again.actions] == [str(a) for a in trace.actions]


def test_smp_mb_waits_for_the_buffer_to_drain_so_no_seed_reaches_sbs_weak_outcome():
    model = TsoMachine(shape("SB+mbs"), EXCERPTS)
    fence_waited = False
    for seed in range(1, SEEDS + 1):
        trace = simulate(model, model.initial(), Random(seed))
        assert trace.outcome == "finished"
        assert not model.exists_holds(trace.states[-1]), f"seed {seed} reached (0, 0) through smp_mb()"
        for s in trace.states:
            for t in range(2):
                path, i = model.next_event(s, t)
                if path is not None and path.events[i][0] == "F" and s.buffers[t]:
                    assert [a.label for a in model.actions(s) if a.actor == f"P{t}"] == ["drain"]
                    fence_waited = True
    assert fence_waited


def final_states(machine) -> set:
    """Every final state of the operational machine: all its interleavings of steps and drains."""
    seen, stack, finals = set(), [machine.initial()], set()
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        actions = machine.actions(s)
        if not actions:
            assert machine.finished(s)
            finals.add(machine.outcome(s))
        stack += [machine.step(s, a) for a in actions]
    return finals


@pytest.mark.parametrize("source", [*SHAPES.values(), *(render(generate(seed, max_events=8)) for seed in range(50))],
                         ids=[*SHAPES, *(f"random-{seed}" for seed in range(50))])
def test_the_store_buffer_machine_reaches_exactly_the_final_states_axiomatic_tso_allows(source):
    """Owens, Sarkar and Sewell prove the two x86-TSO definitions equivalent: so must kstep's two be, on the
    classic shapes and on random tests with every RMW, fenced or not, failing or not."""
    test = parse(source)
    assert final_states(TsoMachine(test, EXCERPTS)) == set(check(test, tso).states)


def test_the_arm64_page_of_mp_without_barriers_reveals_the_weak_execution():
    model, trace = stepped(shape("MP"), "arm64", EXCERPTS)
    x = model.x
    assert x.broken is None and x.exists and x.state == (("1:r0", 1), ("1:r1", 0))
    assert trace.violation is None and trace.outcome == "finished"
    revealed = trace.states[-1].events
    assert sorted(revealed) == sorted(e.id for e in x.events if e.thread >= 0)
    # Revealed in a linear extension of ob: nothing before what ob puts first.
    for k, e in enumerate(revealed):
        assert not any(x.order[later] >> e & 1 for later in revealed[k + 1:])
    assert model.verdict().startswith("allowed: 1:r0=1 1:r1=0")
    # A step shows each event's rf/co/fr edges after the event itself.
    assert [a.label for a in trace.actions].count("edges") >= 3 and trace.actions[-1].label == "check"


def test_mp_with_fences_under_arm64_ends_in_the_cycle_of_the_axiom_it_breaks():
    model, trace = stepped(shape("MP+wmb+rmb"), "arm64", EXCERPTS)
    assert trace.violation is not None and trace.violation.invariant == "external"
    assert trace.violation.step == len(trace.actions)  # found at the last step, the check of the axioms
    from kstep.memory.axioms import cycle

    edges = cycle(model.x.broken)
    assert sorted(part for _, _, part in edges) == ["bob", "bob", "fre", "rfe"]
    assert [b for _, b, _ in edges] == [a for a, _, _ in edges[1:] + edges[:1]]  # a closed cycle
    assert "forbidden by external" in trace.violation.message
    # The bare MP, from the same axioms, breaks none.
    assert stepped(shape("MP"), "arm64", EXCERPTS)[1].violation is None


def test_every_kernel_litmus_test_steps_under_the_lkmm_and_a_never_ends_on_the_check_that_forbids_it(linux_tree):
    from kstep.memory.kernel_tree import kernel_litmus_tests

    named = set()
    for path in kernel_litmus_tests(linux_tree):
        test = parse(path.read_text(), path.name)
        model, trace = stepped(test, "lkmm", EXCERPTS, lkmm_root=linux_tree)
        assert trace.states[-1].judged, path.name
        if test.expected == "Never" and model.x.exists is False and model.x.broken is None:
            assert "no candidate execution reaches the exists clause" in model.verdict(), path.name
        elif test.expected == "Never":
            assert trace.violation is not None and trace.violation.step == len(trace.actions), path.name
            named.add(trace.violation.invariant)
        elif test.expected in ("Sometimes", "Always"):
            assert trace.violation is None, path.name
    assert {"happens-before", "propagation", "rcu"} <= named


def test_the_board_draws_the_cycle_only_once_the_axioms_are_checked():
    from kstep.views.export import layout
    from kstep.views.player import Frames
    from kstep.views.style import HARM

    model, trace = stepped(shape("MP+wmb+rmb"), "power", EXCERPTS)
    frames = Frames(layout(trace, model))
    n = len(trace.actions)
    harm = [[t for t, c in zip(frames.rows("litmus-edges", k)["text"], frames.rows("litmus-edges", k)["color"])
             if c == HARM] for k in (n - 1, n)]
    assert harm[0] == [] and harm[1] and all(t.startswith("observation: ") for t in harm[1])


@pytest.mark.parametrize("model, primitive, words", [
    ("arm64", "smp_wmb", "dmb(ishst)"), ("arm64", "smp_mb", "dmb(ish)"), ("arm64", "smp_rmb", "dmb(ishld)"),
    ("tso", "smp_wmb", "barrier()"), ("tso", "smp_mb", "lock addl"), ("power", "smp_wmb", "SMPWMB"),
    ("power", "smp_mb", "__mb()"), ("power", "smp_rmb", "__lwsync()"),
])
def test_the_code_pane_shows_each_architectures_own_definition(model, primitive, words):
    path, name = definition(model, primitive, EXCERPTS)
    assert words in EXCERPTS[f"{path}:{name}"]["text"]


def test_every_primitive_definition_shown_is_the_trees(linux_tree):
    from kstep.memory.litmus import PRIMITIVES

    shown = {definition(m, p, EXCERPTS) for m in ("sc", "tso", "arm64", "power", "lkmm") for p in PRIMITIVES}
    shown.discard(None)
    assert len(shown) > 40
    for path, name in shown:
        assert EXCERPTS[f"{path}:{name}"] == excerpt(linux_tree, path, name), f"{path}:{name}"
    # POWER's smp_wmb is lwsync on 64-bit: SMPWMB's first definition in the same header (the ppc64 one) says so.
    barrier = (linux_tree / "arch/powerpc/include/asm/barrier.h").read_text().splitlines()
    assert next(line.split() for line in barrier if "define SMPWMB" in line) == ["#", "define", "SMPWMB", "LWSYNC"]


def kstep(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "kstep", "litmus", *args], input=stdin,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args, says", [
    (["--model", "all", "--html", "{out}"], "--html draws one model's execution"),
    (["--model", "tso", "-s", "3"], "--seed chooses the run --html draws"),
    (["--model", "tso", "--html", "{out}", "-s", "-1"], "a seed is between"),
    (["--model", "tso", "--html", "{missing}"], "does not exist"),
])
def test_bad_html_options_are_one_line_and_exit_2(tmp_path, capsys, args, says):
    from kstep.cli import main

    (tmp_path / "SB.litmus").write_text(SHAPES["SB"])
    args = [a.format(out=tmp_path / "a.html", missing=tmp_path / "no" / "a.html") for a in args]
    assert main(["litmus", str(tmp_path / "SB.litmus"), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and says in err, err
    assert not (tmp_path / "a.html").exists()


@pytest.mark.browser
def test_the_litmus_page_plays_offline_in_chromium(browser, tmp_path):
    from browser import Opened

    (tmp_path / "MP.litmus").write_text(SHAPES["MP+wmb+rmb"])
    out = kstep(str(tmp_path / "MP.litmus"), "--model", "arm64", "--html", str(tmp_path / "mp.html"))
    assert out.returncode == 0, out.stderr
    p = Opened(browser, tmp_path / "mp.html")
    try:
        p.click("Step")
        p.wait("m('kstep-slider').value === 1")
        assert "smp_" in p.status() or "ONCE" in p.status()
        p.speed("1000 steps/s")
        p.click("Play")
        p.wait("m('kstep-banner').visible")
        assert "external" in p.js("m('kstep-banner').text")
        assert any(t.startswith("external: ") for t in p.shown("litmus-edges")["text"])
        p.check_clean()
    finally:
        p.close()
