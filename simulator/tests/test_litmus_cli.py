"""`kstep litmus`: SB's weak outcome per model, and one line with exit 2 for bad input."""
import subprocess
import sys

SB = """C SB
{}
P0(int *x, int *y) { int r0; WRITE_ONCE(*x, 1); r0 = READ_ONCE(*y); }
P1(int *x, int *y) { int r0; WRITE_ONCE(*y, 1); r0 = READ_ONCE(*x); }
exists (0:r0=0 /\\ 1:r0=0)
"""


def kstep(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "kstep", "litmus", *args], input=stdin,
                          capture_output=True, text=True, timeout=300)


def test_sb_weak_outcome_allowed_everywhere_but_sc():
    for model, verdict in (("sc", "Never"), ("tso", "Sometimes"), ("arm64", "Sometimes"),
                           ("power", "Sometimes"), ("lkmm", "Sometimes")):
        out = kstep("-", "--model", model, stdin=SB)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[0] == f"{model}: {verdict}"
        assert ("\n  0:r0=0 1:r0=0\n" in out.stdout) == (model != "sc")


def test_bad_input_is_one_line_and_exit_2():
    out = kstep("-", stdin="P0(")
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr


def test_all_prints_one_row_per_outcome_one_column_per_model():
    out = kstep("-", "--model", "all", stdin=SB)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["outcome", "sc", "tso", "arm64", "power", "lkmm"]
    assert lines[1].split() == ["0:r0=0", "1:r0=0", "forbidden", "allowed", "allowed", "allowed", "allowed"]
    assert len([line for line in lines[1:5] if line.split()[-1] == "allowed"]) == 4


def test_kernel_test_shows_its_result_beside_the_lkmm_verdict(linux_tree):
    from kstep.memory import kernel_tree

    path = next(p for p in kernel_tree.kernel_litmus_tests(linux_tree) if p.name == "SB+fencembonceonces.litmus")
    out = kstep(str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "lkmm: Never (header Result: Never)"


def test_printed_witnesses_are_the_ones_check_found_for_each_state():
    from kstep.memory import tso
    from kstep.memory.litmus import parse
    from kstep.memory.verdict import check

    verdict = check(parse(SB, "SB"), tso)
    lines = kstep("-", "--model", "tso", stdin=SB).stdout.splitlines()[1:]
    printed = {lines[k].strip(): lines[k + 1:k + 4] for k in range(0, len(lines), 4)}  # state, P0, P1, edges
    assert len(printed) == len(verdict.states) == 4
    for state, w in verdict.states.items():
        p0, p1, edges = printed[" ".join(f"{k}={v}" for k, v in state)]
        # the events, named in order (initial writes by their location), read back from the text
        names = {}
        for line in (p0, p1):
            for event in line.strip().split(": ", 1)[1].split("; "):
                names[event.split(" ", 1)[0]] = event.split(" ", 1)[1]
        ids = {e.id: (f"init {e.loc}" if e.thread < 0 else None) for e in w.events}
        own = [e for e in w.events if e.thread >= 0]
        ids.update({e.id: name for e, name in zip(own, names)})
        assert [names[ids[e.id]] for e in own] == [e.label() for e in own]
        rels = dict(part.split(": ") for part in edges.strip().split("   "))
        for rel, pairs in (("rf", w.rf), ("co", w.co), ("fr", w.fr)):
            shown = set(rels[rel].split(", ")) - {"-"}
            assert shown == {f"{ids[a]}->{ids[b]}" for a, b in pairs}, rel


def test_a_test_too_large_to_run_is_one_line_saying_so_and_exit_2():
    # nine threads writing x: 9! orders of the writes (the parser's refusals are checked in
    # test_memory_models.py; this one comes from the enumeration, when the model is about to run)
    writers = "".join(f"P{t}(int *x) {{ WRITE_ONCE(*x, {t + 1}); }}\n" for t in range(9))
    out = kstep("-", "--model", "sc", stdin=f"C writers\n{{}}\n{writers}exists (x=1)\n")
    assert out.returncode == 2 and out.stdout == "", out.stderr[-2000:]
    assert out.stderr == "kstep: writers: more than 200000 candidate executions (what its reads read, times the " \
                         "orders of its writes to each location); kstep refuses tests that large\n"


def test_all_on_an_rcu_test_shows_lkmm_and_hardware_models_as_not_applicable():
    out = kstep("vma-detach-rcu", "--model", "all")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = lines[1:lines.index("")]
    assert rows and all(row.split()[-5:-1] == ["n/a"] * 4 and row.split()[-1] == "allowed" for row in rows)
    assert len([line for line in lines if "is LKMM-only" in line]) == 1
    assert "\nlkmm: Never" in out.stdout and "\nsc:" not in out.stdout
    # a hardware model named on its own still refuses the test with the primitive's line
    alone = kstep("vma-detach-rcu", "--model", "arm64")
    assert alone.returncode == 2 and "synchronize_rcu() is LKMM-only" in alone.stderr
