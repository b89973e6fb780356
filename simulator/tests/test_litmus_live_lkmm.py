"""A litmus test stepped by hand under the LKMM (litmus_live.py), as a page does over ``kstep serve``.

The oracle is the kernel's: each of the 47 litmus tests of the pinned tree, stepped from its page's own
execution to the end, ends where its header's ``Result:`` says (Sometimes: allowed, the exists clause
holding; Never: the outcome forbidden, the last step naming the axiom of linux-kernel.cat it breaks, or no
candidate reaching it at all; DEADLOCK: no execution the model allows).  Any candidate the student picks
ends allowed exactly when the LKMM allows its final state.  In the browser the model runs from the copy of
the tree's files that kstep.zip ships: unpacked with the standard library alone and no user cache, the zip
steps a test to its axiom, and to another end once that axiom is dropped from its copy; without the copy it
says in one line what to do.
"""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from importlib import resources

import pytest

from kstep.source import index as source_index
from kstep.memory import kernel_tree, lkmm
from kstep.memory.litmus import parse
from kstep.memory.verdict import check
from kstep.views import live
from kstep.views.litmus_live import LitmusSession, candidates

SHAPES = {s["name"]: s["litmus"] for s in
          tomllib.loads(resources.files("kstep.memory").joinpath("shapes.toml").read_text())["shape"]}


def to_the_end(session):
    """Take the first choice offered until none is: the view of the last step."""
    while session.view()["choices"]:
        session.step(session.view()["choices"][0]["action"])
    return session.view()


def test_every_kernel_litmus_test_steps_by_hand_to_its_result(linux_tree):
    ends = {}
    for path in kernel_tree.kernel_litmus_tests(linux_tree):
        text = path.read_text()
        expected = parse(text, path.name).expected
        session = LitmusSession(text, path.stem, "lkmm")
        view, x = to_the_end(session), session.model.x
        v = view["violation"]
        assert view["outcome"] == "finished", path.name
        if expected == "Sometimes":
            assert v is None and x.exists, (path.name, v)
        elif expected == "Never" and v is None:  # no candidate reaches the outcome: nothing to forbid
            assert not x.exists and "no candidate execution reaches the exists clause" in \
                view["board"]["litmus-boxes"]["body"][-1], path.name
        else:  # Never or DEADLOCK: the page's execution reaches the outcome and the model forbids it
            assert v is not None and x.exists and v["invariant"] == x.broken.name, (path.name, v)
            assert f"forbidden by {x.broken.name}" in v["message"]
        ends[path.stem] = "allowed" if v is None else v["invariant"]
    assert len(ends) == 47
    # Each axiom of linux-kernel.cat a kernel test is written to show ends one of them.
    assert {ends[name] for name in ("CoRR+poonceonce+Once", "Atomic-RMW-ops-are-atomic-WRT-atomic_set",
                                    "MP+pooncerelease+poacquireonce", "SB+fencembonceonces",
                                    "RCU+sync+read")} == {"coherence", "atomic", "happens-before", "propagation",
                                                          "rcu"}


def test_the_last_step_names_the_lkmm_file_it_checks_and_the_hardware_models_none(linux_tree):
    """The LKMM's axioms are the kernel tree's linux-kernel.cat; the hardware models' are no file of it."""
    said = {m: str(LitmusSession(SHAPES["SB"], "SB", m).model.sources()["check"]) for m in ("lkmm", "arm64")}
    assert "tools/memory-model/linux-kernel.cat" in said["lkmm"]
    assert "linux-kernel.cat" not in said["arm64"]


@pytest.mark.parametrize("name", ("SB", "MP+wmb+rmb", "LB"))
def test_every_candidate_picked_then_revealed_ends_allowed_exactly_when_the_lkmm_allows_its_state(name, linux_tree):
    test = parse(SHAPES[name], name)
    allowed = check(test, lkmm).states
    runs = candidates(SHAPES[name], name, "lkmm", sorted(LitmusSession(SHAPES[name], name, "lkmm").sources))
    assert len(runs) == 4  # two reads, each from the initial write or the other thread's
    forbidden = 0
    for run in runs:
        session = LitmusSession(SHAPES[name], name, run)
        v, x = to_the_end(session)["violation"], session.model.x
        assert (v is None) == (x.state in allowed), run
        assert v is None or v["invariant"] == x.broken.name and x.broken.name in v["message"]
        forbidden += v is not None
    assert forbidden == (name == "MP+wmb+rmb")  # the LKMM forbids only MP's weak outcome of the three


# Run in a child with only the unpacked zip and the standard library importable and an empty user cache, as
# in Pyodide: where the LKMM's files came from, and how MP+wmb+rmb's page execution ends.
IN_THE_BROWSER = live.ONLY_STDLIB + textwrap.dedent("""
    sys.path.insert(0, sys.argv[1])
    from kstep.memory import kernel_tree
    from kstep.views.litmus_live import LitmusSession
    session = LitmusSession(sys.argv[2], "MP+wmb+rmb", "lkmm")
    while session.view()["choices"]:
        session.step(session.view()["choices"][0]["action"])
    print(kernel_tree.kernel_root().relative_to(sys.argv[1]))
    violation = session.view()["violation"]
    print("allowed" if violation is None else violation["message"])
""")


def in_the_browser(unpacked, tmp_path, fails: bool = False):
    """What IN_THE_BROWSER prints (its stderr's last line if it ``fails``, as it must then)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "empty-cache"), HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-c", IN_THE_BROWSER, str(unpacked), SHAPES["MP+wmb+rmb"]],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert (out.returncode != 0) == fails, out.stderr[-3000:]
    return out.stderr.strip().splitlines()[-1] if fails else out.stdout.splitlines()


def test_the_zip_steps_the_lkmm_from_its_own_copy_of_the_trees_files(linux_tree, tmp_path):
    unpacked = tmp_path / "kstep"
    with zipfile.ZipFile(io.BytesIO(live.package_zip())) as z:
        z.extractall(unpacked)
    shipped = unpacked / kernel_tree.SHIPPED.relative_to(kernel_tree.SHIPPED.parents[2])
    origin = json.loads((shipped / kernel_tree.ORIGIN).read_text())
    assert origin["kernel"] == source_index.kernel_release(linux_tree / "Makefile")
    assert origin["tree"] == (linux_tree / source_index.COMPLETE).read_text().strip()
    assert sorted(origin["files"]) == [f"tools/memory-model/{name}" for name in sorted(kernel_tree.LKMM_FILES)]
    for path, about in origin["files"].items():
        assert about["sha256"] == hashlib.sha256((linux_tree / path).read_bytes()).hexdigest() == \
            hashlib.sha256((shipped / path).read_bytes()).hexdigest(), path

    where, verdict = in_the_browser(unpacked, tmp_path)
    assert where == "kstep/memory/kernel-tree"
    assert verdict.startswith("forbidden by happens-before (acyclic)"), verdict
    # Without its happens-before axiom, the copy the zip ships lets the weak outcome through: the page ran it.
    cat = shipped / "tools/memory-model/linux-kernel.cat"
    axiom = "acyclic hb as happens-before\n"
    assert cat.read_text().count(axiom) == 1
    cat.write_text(cat.read_text().replace(axiom, ""))
    assert in_the_browser(unpacked, tmp_path) == ["kstep/memory/kernel-tree", "allowed"]
    # A zip without the copy (a site built without the tree) says so in one line.
    shutil.rmtree(shipped)
    assert in_the_browser(unpacked, tmp_path, fails=True) == \
        "kstep.errors.UserError: this page's kstep.zip has no copy of the LKMM's files: build the site again " \
        "after make linux-source"
