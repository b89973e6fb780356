"""The memory models (simulator/kstep/memory/): the kernel's own litmus tests under the LKMM,
the classic shapes under sc and x86-TSO, and the parser's and enumerator's refusals.

The oracle of the LKMM is the kernel's: every litmus test of tools/memory-model/litmus-tests/
and Documentation/litmus-tests/ of the pinned linux-source-6.12 must give its header's
``Result:``; the tree is the one make linux-source unpacks into the user cache, never copied into
the repository.
"""

import dataclasses
import importlib.resources
import subprocess
import sys
import textwrap
import tomllib

import pytest
from kstep.engine.prng import SplitMix64
from kstep.errors import UserError
from kstep.memory import arm64, bundled, executions, lkmm, power, relations, sc, tso
from kstep.memory import generate as generator
from kstep.memory.crosscheck import cross_check
from kstep.memory.generate import AFTER_ATOMIC, BEFORE_ATOMIC, VALUELESS_RMW, generate, render
from kstep.source import index as source_index
from kstep.memory.kernel_tree import kernel_litmus_tests
from kstep.memory.litmus import MAX_DEPTH, parse
from kstep.memory.verdict import check
from kstep.views import live

SHAPES = tomllib.loads(
    importlib.resources.files("kstep.memory").joinpath("shapes.toml").read_text()
)["shape"]


@pytest.fixture(scope="module")
def tree(linux_tree):
    return linux_tree


def kernel_tests():
    """The tests, found when pytest collects them; without a tree, one entry whose test fails on
    the tree fixture's message (run make linux-source), so nothing passes for want of a test."""
    tree = source_index.linux_tree()
    return kernel_litmus_tests(tree) if tree else [None]


def test_the_tree_holds_the_47_kernel_tests_with_their_results(tree):
    results = [parse(p.read_text(), p.name).expected for p in kernel_litmus_tests(tree)]
    assert len(results) == 47
    assert (results.count("Never"), results.count("Sometimes"), results.count("DEADLOCK")) == (31, 15, 1)


@pytest.mark.parametrize("path", kernel_tests(), ids=lambda p: p.name if p else "no-tree")
def test_lkmm_gives_every_kernel_litmus_tests_result(path, tree):
    test = parse(path.read_text(), path.name)
    verdict = check(test, lkmm)
    assert verdict.result == test.expected, (verdict.result, verdict.positive, verdict.negative)
    # none of the 47 is marked DATARACE, and judgelitmus.sh fails a test that flags one
    assert "data-race" not in verdict.flags


def test_lkmm_flags_a_data_race_on_plain_accesses_and_none_once_they_are_ordered():
    racy = parse(textwrap.dedent("""\
        C SB+plain
        {}
        P0(int *x, int *y) { int r0; *x = 1; r0 = *y; }
        P1(int *x, int *y) { int r0; *y = 1; r0 = *x; }
        exists (0:r0=0 /\\ 1:r0=0)
        """))
    assert "data-race" in check(racy, lkmm).flags
    ordered = parse(textwrap.dedent("""\
        C MP+plain+release+acquire
        {}
        P0(int *x, int *y) { *x = 1; smp_store_release(y, 1); }
        P1(int *x, int *y) { int r0; int r1; r0 = smp_load_acquire(y); if (r0) r1 = *x; }
        exists (1:r0=1 /\\ 1:r1=0)
        """))
    verdict = check(ordered, lkmm)
    assert verdict.result == "Never" and not verdict.flags


def test_every_final_state_has_one_witness_execution_to_draw():
    test = parse(SHAPES[0]["litmus"], "SB")
    verdict = check(test, tso)
    states = {tuple(v for _, v in s) for s in verdict.states}
    assert states == {(0, 0), (0, 1), (1, 0), (1, 1)}
    weak = verdict.states[(("0:r0", 0), ("1:r0", 0))]
    reads = [e for e in weak.events if e.kind == "R"]
    # both reads read the initial writes, and each of those is co-before the thread's write
    assert all(any(b == r.id and weak.events[a].thread < 0 for a, b in weak.rf) for r in reads)
    assert {(weak.events[a].kind, weak.events[b].kind) for a, b in weak.fr} == {("R", "W")}
    assert verdict.exists_reachable and verdict.result == "Sometimes"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s["name"])
def test_each_hardware_model_gives_the_published_outcome_of_each_classic_shape(shape):
    test = parse(shape["litmus"], shape["name"])
    for model in (sc, tso, arm64, power):
        verdict = check(test, model)
        got = "forbidden" if verdict.result == "Never" else "allowed"
        assert got == shape[model.NAME], (model.NAME, verdict.result)


def _ignoring_address_dependencies(model):
    """A broken variant of a hardware model: every candidate's addr edges dropped before it judges."""
    class Broken:
        NAME = model.NAME

        @staticmethod
        def executions(c, rf):
            return model.executions(dataclasses.replace(c, addr=relations.empty(c.n)), rf)

    return Broken


@pytest.mark.parametrize("model", (arm64, power), ids=lambda m: m.NAME)
def test_a_model_ignoring_address_dependencies_breaks_every_address_shape_it_forbids(model):
    """The table's address-dependency rows can catch a model that drops them: each row the table
    forbids on ``model`` (arm64: MP+wmb+addr, MP+release+addr, WRC+addrs, WRC+mb+addr, IRIW+addrs;
    POWER: the first two and WRC+mb+addr) comes out allowed without the addr edges."""
    rows = [s for s in SHAPES if "+addr" in s["name"] and s[model.NAME] == "forbidden"]
    assert len(rows) >= 3
    broken = _ignoring_address_dependencies(model)
    for shape in rows:
        test = parse(shape["litmus"], shape["name"])
        assert check(test, model).result == "Never"
        assert check(test, broken).result != "Never", shape["name"]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s["name"])
def test_sc_allows_no_final_state_that_tso_forbids(shape):
    test = parse(shape["litmus"], shape["name"])
    assert set(check(test, sc).states) <= set(check(test, tso).states)


def test_the_hardware_models_refuse_locks_and_rcu_naming_the_primitive(tree):
    path = tree / "tools/memory-model/litmus-tests/MP+polocks.litmus"
    for model in (sc, tso, arm64, power):
        with pytest.raises(UserError, match=r"line 19: spin_lock\(\) is LKMM-only"):
            check(parse(path.read_text(), path.name), model)


BAD = [
    ("P0(int *x) { while (1) ; }", "line 3: unsupported construct 'while'"),
    ("P0(int *x) { smp_mb(); }\nP1(int *x) { atomic_long_inc(x); }", "line 4: unsupported construct atomic_long_inc()"),
    ("P0(int *x) {\n r0 = 1; }\nexists (x=1)", "line 4: assignment to r0, which is not a declared register"),
    ("P0(int *x) { WRITE_ONCE(x, 1); }", "line 3: WRITE_ONCE() needs an object such as *x"),
    ("P0(int *x) { smp_mb(1); }", "line 3: smp_mb() takes 0 arguments, not 1"),
    ("P0(int *x) { WRITE_ONCE(*x, 1); }\nexists (x>1)", "line 4: unsupported comparison '>'"),
    ("P0(int *x) { WRITE_ONCE(*x, 1); }\nscope (x=1)", "line 4: unsupported clause 'scope'"),
    ("P0(int *x) { WRITE_ONCE(*x, 1); }", "no final condition"),
    ("P1(int *x) { WRITE_ONCE(*x, 1); }\nexists (x=1)", "line 3: thread P1 where P0 was expected"),
]


@pytest.mark.parametrize("body, message", BAD)
def test_a_construct_outside_the_supported_set_is_one_line_naming_it_and_its_line(body, message):
    with pytest.raises(UserError) as caught:
        parse(f"C bad\n{{}}\n{body}\n", "bad.litmus")
    text = str(caught.value)
    assert message in text and "\n" not in text and text.startswith("bad.litmus: ")


def test_a_file_that_is_not_a_c_litmus_test_is_refused():
    with pytest.raises(UserError, match="expected 'C NAME'"):
        parse("X86 SB\n{}\n P0 | P1 ;\n", "sb.litmus")


def test_an_execution_with_too_many_events_is_refused_before_it_is_enumerated():
    writes = "WRITE_ONCE(*x, 1); " * (executions.MAX_EVENTS + 1)
    test = parse(f"C big\n{{}}\nP0(int *x) {{ {writes} }}\nexists (x=1)\n")
    with pytest.raises(UserError, match=f"refuses more than {executions.MAX_EVENTS}"):
        check(test, lkmm)


def test_values_that_could_grow_for_ever_stop_at_the_longest_chain_of_writes():
    # each increment reads the one before: no read can see more than init + 3 increments
    test = parse(textwrap.dedent("""\
        C inc3
        {}
        P0(atomic_t *v) { atomic_inc(v); }
        P1(atomic_t *v) { atomic_inc(v); }
        P2(atomic_t *v) { int r0; r0 = atomic_inc_return(v); }
        exists (v=3 /\\ 2:r0=3)
        """))
    assert executions.value_domains(test)["v"] == {0, 1, 2, 3}
    verdict = check(test, lkmm)
    assert verdict.result == "Sometimes" and {s[0][1] for s in verdict.states} == {3}


def test_the_models_import_only_the_standard_library(tree):
    code = live.ONLY_STDLIB + textwrap.dedent(f"""
        from pathlib import Path
        from kstep.memory import lkmm, sc, tso
        from kstep.memory.litmus import parse
        from kstep.memory.verdict import check
        root = Path({str(tree)!r})
        lkmm.statements(root)
        test = parse((root / "tools/memory-model/litmus-tests/SB+poonceonces.litmus").read_text())
        print(check(test, lkmm).result, check(test, tso).result, check(test, sc).result)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout == "Sometimes Sometimes Never\n", out.stderr[-3000:]


def test_a_value_written_only_under_a_branch_is_still_read(tree):
    # P0 writes y only when it read x=1, which P1 writes: y's 1 is two rounds away. The weak
    # candidate must exist for the LKMM's Never to mean that the model forbids it.
    path = tree / "tools/memory-model/litmus-tests/LB+fencembonceonce+ctrlonceonce.litmus"
    test = parse(path.read_text(), path.name)
    assert executions.value_domains(test) == {"x": {0, 1}, "y": {0, 1}}
    reads = {
        tuple(e.value for e in c.events if e.kind == "R") for c in executions.candidates(test)
    }
    assert (1, 1) in reads


@pytest.mark.parametrize("name", ["fork-gup-fast-ptl", "qspinlock-init-before-tail",
                                  *(f"random-{k}" for k in range(0, 100, 7))])
def test_the_candidates_an_rf_is_sought_for_are_exactly_those_whose_every_read_has_a_write(name):
    """with_reads_from skips, before building them, the combinations of thread runs where some read
    has no write of its value to read (fork-gup-fast-ptl: 1,260 combinations, 6 with an rf): the
    candidates it keeps, in order, must be those of every combination that have an rf."""
    text = render(generate(int(name[7:]), 8)) if name.startswith("random-") else bundled.path(name).read_text()
    test = parse(text, name)
    every = list(executions.candidates(test))
    kept = [c.paths for c in executions.candidates(test, readable=True)]
    assert kept == [c.paths for c in every if next(executions.reads_from(c), None) is not None]
    assert len(kept) < len(every) or name.startswith("random-")


@pytest.mark.parametrize("seed", range(100))
def test_on_random_tests_the_models_nest_and_renaming_changes_nothing(seed, tree):
    """kstep.memory.crosscheck on 100 seeded tests of at most 8 memory events: sc allows no final
    state x86-TSO forbids, TSO none arm64 forbids (unless a release precedes an acquire), no hardware
    model one the LKMM forbids; each verdict and its final states stay the same, renamed, once the
    threads are shuffled and the locations renamed. make bench runs 1,000 larger ones."""
    assert cross_check(generate(seed, max_events=8)) == []


def test_the_cross_check_names_each_state_a_stronger_model_allows_and_a_weaker_forbids():
    """A broken variant: "sc" answering as arm64 does. On a generated test where arm64 allows a state
    x86-TSO forbids (seed 11, the first of make test's seeds with one: P0's stores to z and then
    x, which x86 keeps in order and arm64 does not, read by P1 the other way round, x with an
    acquire and z after it), the inclusion sc <= tso must break, naming each such state."""
    def states(g, model):
        return set(check(parse(render(g)), model).states)

    g = generate(11, 8)
    assert states(g, arm64) - states(g, tso)
    extra = {" ".join(f"{k}={v}" for k, v in sorted(s)) for s in states(g, arm64) - states(g, tso)}
    problems = cross_check(g, lambda test, model: check(test, arm64 if model is sc else model))
    assert {p for p in problems if "which tso forbids" in p} == {
        f"random-{g.seed}: sc allows {s}, which tso forbids" for s in extra
    }


def misplaced_atomic_fences(tests) -> list[str]:
    """Each smp_mb__before_atomic() of ``tests`` not immediately before a value-less atomic RMW, and
    each smp_mb__after_atomic() not immediately after one, as "random-SEED P<thread>"."""
    out = []
    for g in tests:
        for t, ops in enumerate(g.threads):
            rmw = [op[:2] == ("atomic", VALUELESS_RMW) for op in ops] + [False]
            out += [f"random-{g.seed} P{t}" for i, op in enumerate(ops)
                    if op == BEFORE_ATOMIC and not rmw[i + 1] or op == AFTER_ATOMIC and not rmw[i - 1]]
    return out


def test_the_generator_writes_the_atomic_fences_only_beside_a_valueless_atomic(monkeypatch):
    """Documentation/atomic_t.txt: smp_mb__{before,after}_atomic() "only apply to the RMW atomic ops";
    the generated tests (make test's 100 and the bench's first 300) have both, and each right before or
    right after an atomic_inc(). A generator that writes them alone is caught."""
    tests = [generate(seed, 8) for seed in range(100)] + [generate(100_000 + k, 10) for k in range(300)]
    fences = {op for g in tests for ops in g.threads for op in ops if op in (BEFORE_ATOMIC, AFTER_ATOMIC)}
    assert fences == {BEFORE_ATOMIC, AFTER_ATOMIC} and misplaced_atomic_fences(tests) == []
    monkeypatch.setattr(generator._Drawer, "ops", lambda self, reg: (self.op(reg),))  # the fence alone
    assert misplaced_atomic_fences(generate(100_000 + k, 10) for k in range(300))


def test_an_atomic_fence_with_no_atomic_beside_it_is_ordered_on_arm64_and_not_on_x86():
    """Why the generator puts them beside an atomic: SB with smp_mb__before_atomic() alone between each
    store and load. x86 defines it empty, arm64 as dmb ish, so x86-TSO allows the store-buffering state
    arm64 forbids; the cross-check, which exempts no such test, says so.  Beside the atomic_inc() it
    belongs to, the fence orders on both (x86's lock-prefixed inc is a full barrier)."""
    def sb(between):
        threads = tuple((("store", "WRITE_ONCE", me, 1), *between, ("load", "READ_ONCE", 1 - me, "r0"))
                        for me in (0, 1))
        return generator.Test(1, 3, threads, ((0, "r0", 0), (1, "r0", 0)), (None, None, None))

    alone = sb((BEFORE_ATOMIC,))
    assert [check(parse(render(alone)), m).result for m in (tso, arm64)] == ["Sometimes", "Never"]
    assert any("tso allows" in p and "which arm64 forbids" in p for p in cross_check(alone))
    beside = sb((BEFORE_ATOMIC, ("atomic", VALUELESS_RMW, 2, "r1")))
    assert cross_check(beside) == [] and check(parse(render(beside)), tso).result == "Never"


def test_the_cross_check_notices_final_states_that_renaming_changes():
    """A broken variant: a TSO whose answer loses a final state once the locations are renamed."""
    def by_name(test, model):
        verdict = check(test, model)
        if model is tso and "x" not in test.shared():
            verdict.states.popitem()
        return verdict

    problems = cross_check(generate(7, 8), by_name)
    assert [p for p in problems if "renamed" in p] == [p for p in problems if p.startswith("random-7: tso says ")]
    assert problems


RMW_RESULTS = [  # (call, initial value, value returned, final value): the kernel's atomic_t API
    ("atomic_add_return(2, v)", 1, 3, 3),
    ("atomic_fetch_add(3, v)", 1, 1, 4),
    ("atomic_fetch_sub_release(1, v)", 3, 3, 2),
    ("atomic_inc_return_acquire(v)", 3, 4, 4),
    ("atomic_dec_and_test(v)", 1, 1, 0),
    ("atomic_sub_and_test(3, v)", 4, 0, 1),
    ("atomic_add_negative(-2, v)", 1, 1, -1),
    ("xchg(v, 7)", 5, 5, 7),
    ("cmpxchg(v, 0, 9)", 5, 5, 5),
    ("cmpxchg_acquire(v, 5, 9)", 5, 5, 9),
    ("atomic_add_unless(v, 1, 6)", 6, 0, 6),
    ("atomic_add_unless(v, 1, 6)", 1, 1, 2),
]


@pytest.mark.parametrize("call, initial, returned, final", RMW_RESULTS)
def test_each_rmw_returns_and_leaves_what_the_kernel_api_says(call, initial, returned, final):
    test = parse(
        f"C rmw\n{{ atomic_t v = ATOMIC_INIT({initial}); }}\n"
        f"P0(atomic_t *v) {{ int a; a = {call}; }}\nexists (0:a={returned} /\\ v={final})\n"
    )
    assert check(test, sc).result == "Always"


def test_a_thread_with_too_many_runs_is_refused():
    reads = " ".join(f"r{i} = READ_ONCE(*x);" for i in range(13))
    decls = " ".join(f"int r{i};" for i in range(13))
    test = parse(
        f"C runs\n{{}}\nP0(int *x) {{ {decls} {reads} }}\nP1(int *x) {{ WRITE_ONCE(*x, 1); }}\nexists (x=1)\n"
    )
    with pytest.raises(UserError, match=f"more than {executions.MAX_PATHS} runs"):
        check(test, sc)


DEPENDENCIES = {
    # explanation.txt, "dependency relations" and ppo's rwdep: a data dependency orders a
    # read before a write, so S with smp_wmb() and a data dependency is forbidden
    "S+wmb+data": """\
        C S+wmb+data
        {}
        P0(int *x, int *y) { WRITE_ONCE(*x, 2); smp_wmb(); WRITE_ONCE(*y, 1); }
        P1(int *x, int *y) { int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, r0); }
        exists (x=2 /\\ 1:r0=1)
        """,
    # linux-kernel.bell's carry-dep: data ; rfi through the plain *z, then the plain read's
    # control dependency, order READ_ONCE(*x) before WRITE_ONCE(*y) (as in dep+plain.litmus)
    "LB+data-plain-ctrl+mb": """\
        C LB+data-plain-ctrl+mb
        {}
        P0(int *x, int *y, int *z) { int r0; r0 = READ_ONCE(*x); *z = r0; if (*z) WRITE_ONCE(*y, 1); }
        P1(int *x, int *y) { int r1; r1 = READ_ONCE(*y); smp_mb(); WRITE_ONCE(*x, 1); }
        exists (0:r0=1 /\\ 1:r1=1)
        """,
}


@pytest.mark.parametrize("name", DEPENDENCIES)
def test_dependencies_order_under_the_lkmm_also_through_plain_accesses(name):
    assert check(parse(textwrap.dedent(DEPENDENCIES[name])), lkmm).result == "Never"


def test_too_many_combinations_of_thread_runs_are_refused_before_any_is_built():
    # four threads of eight two-valued reads: 256 runs each, 256**4 combinations
    decls = " ".join(f"int r{i};" for i in range(8))
    reads = " ".join(f"r{i} = READ_ONCE(*x);" for i in range(8))
    threads = "\n".join(f"P{t}(int *x) {{ {decls} {reads} }}" for t in range(4))
    test = parse(f"C wide\n{{ int x = 0; }}\n{threads}\nP4(int *x) {{ WRITE_ONCE(*x, 1); }}\nexists (x=1)\n")
    refusal = f"combinations of the threads' runs; kstep refuses more than {executions.MAX_CANDIDATES}"
    with pytest.raises(UserError, match=refusal):
        check(test, lkmm)


def test_too_many_coherence_orders_are_refused_before_any_model_runs():
    # nine threads writing x: 9! = 362,880 orders of the writes, over MAX_EXECUTIONS; eight (40,320)
    # are still run
    def writers(n):
        threads = "\n".join(f"P{t}(int *x) {{ WRITE_ONCE(*x, {t + 1}); }}" for t in range(n))
        return parse(f"C writers\n{{}}\n{threads}\nexists (x=1)\n")

    assert executions.coherence_bound(next(executions.candidates(writers(8)))) == 40_320
    with pytest.raises(UserError, match=f"more than {executions.MAX_EXECUTIONS} candidate executions"):
        check(writers(9), sc)


def test_each_threads_writes_to_a_location_count_once_in_the_coherence_bound():
    # po keeps a thread's writes to x in order: 4 writes, 2 per thread, interleave in 4!/(2!2!) ways
    test = parse("C ww\n{}\nP0(int *x) { WRITE_ONCE(*x, 1); WRITE_ONCE(*x, 2); }\n"
                 "P1(int *x) { WRITE_ONCE(*x, 3); WRITE_ONCE(*x, 4); }\nexists (x=1)\n")
    c = next(executions.candidates(test))
    assert executions.coherence_bound(c) == 6 == len(list(sc.coherence(c, next(executions.reads_from(c)))))


HOSTILE = ("(", ")", "{", "}", ";", "*", "&", "P7", "while", "0x1", "@", "exists", "\\/", "-1", "99999999999",
           "spin_lock(x)", "r9", "=", ":", "(*", "*)", "\n")


def _mutants(texts: list[str], count: int, seed: int = 24):
    """Seeded mutants of the texts: cut short, a span dropped, or a hostile token put in."""
    rng = SplitMix64(seed)
    for _ in range(count):
        text = texts[rng.below(len(texts))]
        at = rng.below(len(text) + 1)
        how = rng.below(3)
        if how == 0:
            yield text[:at]
        elif how == 1:
            yield text[:at] + text[at + 1 + rng.below(12):]
        else:
            yield text[:at] + HOSTILE[rng.below(len(HOSTILE))] + text[at:]


def test_malformed_litmus_files_get_one_line_or_a_verdict_never_a_crash(tree):
    """Mutants of the classic shapes and of the kernel's tests: each parses and gets its verdicts, or
    is refused with one UserError line; any other exception is a bug (the CLI would show a traceback)."""
    texts = [s["litmus"] for s in SHAPES] + [p.read_text() for p in kernel_litmus_tests(tree)]
    refused = judged = 0
    for text in _mutants(texts, 150):
        try:
            test = parse(text, "mutant.litmus")
            check(test, lkmm)
            judged += 1
            check(test, sc)  # refuses locks and RCU
        except UserError as e:
            refused += 1
            assert "\n" not in str(e) and ": " in str(e), str(e)
    assert judged > 20 and refused > 20  # the mutants reach both the refusals and the models


DEEP = {
    "parentheses": "P0(int *x) {{ int r0; r0 = {}1{}; }}\nexists (0:r0=1)".format("(" * 500, ")" * 500),
    "operators": "P0(int *x) {{ int r0; r0 = {}; }}\nexists (0:r0=1)".format("+".join(["1"] * 500)),
    "negations": "P0(int *x) {{ int r0; r0 = {}1; }}\nexists (0:r0=1)".format("!" * 500),
    "blocks": "P0(int *x) {{ {}{} }}\nexists (x=0)".format("{" * 500, "}" * 500),
    "ifs": "P0(int *x) {{ int r0; {}r0 = 1; }}\nexists (0:r0=1)".format("if (1) " * 500),
    "a condition": "P0(int *x) {{ int r0; r0 = 1; }}\nexists ({})".format(" /\\ ".join(["0:r0=1"] * 500)),
}


@pytest.mark.parametrize("what", DEEP)
def test_a_file_nested_deeper_than_the_parser_takes_is_one_line_not_a_recursion_error(what):
    with pytest.raises(UserError, match=rf"^deep.litmus: line [34]: nested more than {MAX_DEPTH} levels deep"):
        parse(f"C deep\n{{}}\n{DEEP[what]}\n", "deep.litmus")


def test_nesting_up_to_the_limit_is_parsed_and_run():
    depth = MAX_DEPTH - 2  # the assignment's own expression and the if around it
    test = parse(f"C deep\n{{}}\nP0(int *x) {{ int r0; if (1) r0 = {'(' * depth}1{')' * depth}; }}\n"
                 "exists (0:r0=1)\n")
    assert check(test, sc).result == "Always"
