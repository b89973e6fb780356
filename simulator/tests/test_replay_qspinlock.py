"""kstep check: observation logs replayed against the qspinlock model.

Logs are generated from the model itself (a seeded random run, each step printed in the log format):
they must pass; tampering with them must fail at the tampered line; malformed logs are bad input.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstep.cli import main
from kstep.engine import Random, simulate
from kstep.engine.model import Checks
from kstep.lab.replay import check_file
from kstep.lab.replay.qspinlock import end_line, header_line, log_lines
from kstep.models import make_model
from kstep.models.qspinlock.variants import VARIANTS

CORRECT = [n for n, v in VARIANTS.items() if not v.broken]


def run_model(variant="v6.12", cpus=3, acquisitions=4, pending_bits=8, irq=0, seed=1, **spins):
    m = make_model("qspinlock", variant)
    config = {"pending_bits": pending_bits, "steal_spins": spins.get("steal_spins", 32),
              "head_spins": spins.get("head_spins", 256),
              "cpus": [{"locks": ["A"], "repeat": acquisitions, "irq": ["B"] * irq} for _ in range(cpus)]}
    return m, simulate(m, m.initial(config), Random(seed), max_steps=1_000_000)


def write_log(path, m, trace, header_variant=None, cpus=3, acquisitions=4, pending_bits=8, **extra):
    """The model's run as a log: header, one line per step, end marker (lines[k] is step k - 1)."""
    lines = [header_line(header_variant or m.variant.name, cpus, acquisitions, pending_bits, **extra)]
    lines += log_lines(m, trace) + [end_line(len(trace))]
    path.write_text("\n".join(lines) + "\n")
    return lines


def kstep(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def contended_log(tmp_path, seed=3):
    """A v6.12 log with every kind of step: pending, queueing, set_locked and an interrupt."""
    m, tr = run_model(cpus=4, acquisitions=6, irq=2, seed=seed)
    labels = {a.label for a in tr.actions}
    assert {"clear_pending_set_locked", "set_locked", "mcs_handoff"} <= labels
    path = tmp_path / "run.log"
    lines = write_log(path, m, tr, cpus=4, acquisitions=6, irq=2)
    return path, lines, m, tr


# --- logs from the model pass ------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", CORRECT)
@pytest.mark.parametrize("pending_bits, irq, seed", [(8, 0, 1), (8, 2, 2), (1, 1, 3), (1, 0, 4)])
def test_logs_generated_from_the_model_pass(tmp_path, variant, pending_bits, irq, seed):
    spins = {"steal_spins": 3, "head_spins": 5} if variant == "powerpc" else {}
    m, tr = run_model(variant, cpus=4, acquisitions=5, pending_bits=pending_bits, irq=irq, seed=seed, **spins)
    assert tr.outcome == "finished"
    path = tmp_path / "ok.log"
    write_log(path, m, tr, cpus=4, acquisitions=5, pending_bits=pending_bits, irq=irq, **spins)
    r = check_file("qspinlock", path)
    assert r.ok, (r.line, r.text, r.why)
    assert r.steps == len(tr) and r.acquisitions == 4 * (5 + irq)


def test_cli_reports_steps_and_acquisitions(capsys, tmp_path):
    path, lines, m, tr = contended_log(tmp_path)
    rc, out, err = kstep(capsys, "check", "qspinlock", path)
    assert rc == 0 and err == ""
    assert f"steps: {len(tr)}" in out and "acquisitions: 32" in out
    assert "verdict: every logged step is one the model allows, and the run finished" in out


# --- a log must show a finished run ---------------------------------------------------------------------------


def test_a_log_that_stops_early_fails(capsys, tmp_path):
    """A port that hangs after N steps writes no end marker: its log must not pass."""
    path, lines, m, tr = contended_log(tmp_path)
    for keep in (40, 1):  # 39 steps; the header alone
        path.write_text("\n".join(lines[:keep]) + "\n")
        n, line, why = fail_line(capsys, path)
        assert n == keep + 1 and "(the end of the log)" in line
        assert f"verdict: NOT a finished run: the log stops after {keep - 1} step" in why and "end marker" in why


def test_an_end_marker_must_count_the_steps(capsys, tmp_path):
    path, lines, m, tr = contended_log(tmp_path)
    path.write_text("\n".join(lines[:40] + [end_line(len(tr))]) + "\n")  # steps cut out before the end
    n, _, why = fail_line(capsys, path)
    assert n == 41 and f"the end marker counts {len(tr)} steps, the log has 39" in why


def test_a_log_ending_before_its_interrupts_ran_fails(capsys, tmp_path):
    """The header gives every CPU an interrupt; a log whose interrupts never ran is no finished run."""
    m, tr = run_model(cpus=2, acquisitions=2, seed=5)
    path = tmp_path / "noirq.log"
    lines = write_log(path, m, tr, cpus=2, acquisitions=2, irq=1)
    n, _, why = fail_line(capsys, path)
    assert n == len(lines) and "C0.irq, C1.irq not finished" in why


def test_a_changed_mcs_field_fails_at_its_line(capsys, tmp_path):
    path, lines, m, tr = contended_log(tmp_path)
    k = next(k for k in range(1, len(lines) - 1) if lines[k].split()[2] == "mcs_handoff")
    k = next(j for j in range(k + 1, len(lines) - 1) if lines[j].split()[2] == "mcs_spin")
    parts = lines[k].split()
    assert parts[8] == "1"  # mcs_spin runs once its node->locked is 1
    parts[8] = "0"
    lines[k] = " ".join(parts)
    path.write_text("\n".join(lines) + "\n")
    n, _, why = fail_line(capsys, path)
    assert n == k + 1 and "the MCS fields cannot be that way" in why and "locked 1" in why


# --- tampered logs fail at the tampered line -----------------------------------------------------------------


def fail_line(capsys, path):
    rc, out, err = kstep(capsys, "check", "qspinlock", path)
    assert rc == 1 and err == "", (rc, out, err)
    line = next(x for x in out.splitlines() if x.startswith("line "))
    why = next(x for x in out.splitlines() if x.startswith("verdict: "))
    return int(line.split(":")[0].split()[1]), line, why


@pytest.mark.parametrize("k", [5, 17, 42, 77])
@pytest.mark.parametrize("field", [3, 4])
def test_a_changed_word_fails_at_its_line(capsys, tmp_path, k, field):
    path, lines, m, tr = contended_log(tmp_path)
    parts = lines[k].split()
    parts[field] = f"{int(parts[field], 16) ^ 0x100:#010x}"  # flip the pending bit
    lines[k] = " ".join(parts)
    path.write_text("\n".join(lines) + "\n")
    n, line, why = fail_line(capsys, path)
    assert n == k + 1 and line.endswith(lines[k])  # file lines count from 1, the header is line 1
    assert "cannot change that way" in why or "next step" in why or "waiting" in why


def test_swapped_steps_fail_at_the_first_of_them(capsys, tmp_path):
    path, lines, m, tr = contended_log(tmp_path)
    swapped = 0
    for k in range(1, len(lines) - 2):  # the last line is the end marker
        a, b = lines[k].split(), lines[k + 1].split()
        same_lock = a[1].endswith(".irq") == b[1].endswith(".irq")  # tasks take A, interrupts B
        if a[3] != a[4] and a[1] != b[1] and same_lock:  # k changes the word k + 1 then reads
            bad = list(lines)
            bad[k] = " ".join([a[0]] + b[1:])  # the tickets stay in order, the steps trade places
            bad[k + 1] = " ".join([b[0]] + a[1:])
            path.write_text("\n".join(bad) + "\n")
            n, _, _ = fail_line(capsys, path)
            assert n == k + 1, (k, lines[k], lines[k + 1])
            swapped += 1
            if swapped == 5:
                break
    assert swapped == 5


def test_swapped_lines_break_the_ticket_order(capsys, tmp_path):
    path, lines, m, tr = contended_log(tmp_path)
    lines[10], lines[11] = lines[11], lines[10]
    path.write_text("\n".join(lines) + "\n")
    n, _, why = fail_line(capsys, path)
    assert n == 11 and "ticket 10 where 9 comes next" in why


def test_a_label_the_cpu_cannot_take_fails_at_its_line(capsys, tmp_path):
    path, lines, m, tr = contended_log(tmp_path)
    k = next(k for k in range(1, len(lines)) if lines[k].split()[2] == "xchg_tail")
    parts = lines[k].split()
    parts[2] = "set_locked"
    lines[k] = " ".join(parts)
    path.write_text("\n".join(lines) + "\n")
    n, _, why = fail_line(capsys, path)
    assert n == k + 1 and "next step is xchg_tail, not set_locked" in why


def test_a_waiting_step_logged_too_early_fails(capsys, tmp_path):
    """Move a queue head's wait_head up to just after its xchg_tail, while the lock is still held."""
    m = make_model("qspinlock")
    for seed in range(500):
        _, tr = run_model(cpus=3, acquisitions=1, seed=seed)
        steps = [x.split() for x in log_lines(m, tr)]
        k = next((k for k, p in enumerate(steps) if p[2] == "xchg_tail" and int(p[4], 16) & 0xff), None)
        if k is None:
            continue
        w = next(j for j in range(k + 1, len(steps)) if steps[j][1] == steps[k][1])
        if steps[w][2] == "wait_head" and w > k + 1:
            break
    else:
        pytest.fail("no seed queues a CPU behind a held lock")
    moved = steps[:k + 1] + [steps[w][:3] + [steps[k][4], steps[k][4]] + steps[w][5:]] + steps[k + 1:w] + steps[w + 1:]
    header = header_line("v6.12", 3, 1, 8)
    path = tmp_path / "w.log"
    path.write_text("\n".join([header] + [" ".join([str(i)] + p[1:]) for i, p in enumerate(moved)]) + "\n")
    n, _, why = fail_line(capsys, path)
    assert n == k + 3 and "waiting at wait_head" in why


def test_a_broken_variants_run_is_caught_both_ways(capsys, tmp_path):
    """A head-ignores-pending run cut at its first broken invariant (the checker stops at the first,
    of any kind): against v6.12 its first step that 6.12 does not allow fails; against its own
    variant the transitions are legal and the invariant fails."""
    m = make_model("qspinlock", "head-ignores-pending")
    checks = Checks(m.invariants)
    for seed in range(200):
        _, tr = run_model("head-ignores-pending", cpus=3, acquisitions=3, seed=seed)
        if tr.violation is not None:
            break
    assert tr.violation is not None
    k, tr.violation = next((k, v) for k, (s, a, t) in enumerate(zip(tr.states, tr.actions, tr.states[1:]), 1)
                           if (v := checks.after(s, a, t, k)))
    del tr.actions[k:], tr.ticks[k:], tr.states[k + 1:]
    path = tmp_path / "b.log"
    lines = write_log(path, m, tr, cpus=3, acquisitions=3)
    n, _, why = fail_line(capsys, path)
    assert n == len(lines) - 1 and f"breaks {tr.violation.invariant}" in why
    write_log(path, m, tr, header_variant="v6.12", cpus=3, acquisitions=3)
    early = next(k for k, (a, s) in enumerate(zip(tr.actions, tr.states))
                 if a.label == "wait_head" and s.words[0] & 0xff00)
    n, _, why = fail_line(capsys, path)
    assert n == early + 2 and "waiting at wait_head" in why


# --- bad input: one line, exit 2 ------------------------------------------------------------------------------

GOOD_HEADER = "# kstep-log 2 qspinlock variant=v6.12 cpus=2 acquisitions=1 pending_bits=8\n"
STEP0 = "0 0 queued_spin_lock 0x00000000 0x00000001 0 - - -\n"


@pytest.mark.parametrize("text, says", [
    (GOOD_HEADER.replace("kstep-log 2 ", "kstep-log "), "a log of format 1, which kstep no longer reads"),
    (GOOD_HEADER.replace("kstep-log 2 ", "kstep-log 3 "), "a log of format 3; this kstep reads format 2 only"),
    (GOOD_HEADER + STEP0 + "# kstep-log end steps=1\n" + STEP0, "a line after the end marker of line 3"),
    (GOOD_HEADER + "# kstep-log end steps=-1\n", "expected '# kstep-log end steps=<N>'"),
    (GOOD_HEADER + STEP0.replace(" 0 - - -", " 0 - 1/0 -"), "no node (idx -), yet next '1/0'"),
    (GOOD_HEADER + STEP0.replace(" 0 - - -", " 1 4 - 0"), "idx '4' is neither - nor a node index 0..3"),
    (GOOD_HEADER + STEP0.replace(" 0 - - -", " 1 0 2/0 0"), "next '2/0' is neither - nor <cpu>/<idx>"),
    (GOOD_HEADER + STEP0.replace(" 0 - - -", " 1 0 - 2"), "locked '2' is neither 0 nor 1"),
    (GOOD_HEADER + STEP0.replace(" 0 - - -", " x - - -"), "count 'x' is not a nesting count"),
    ("", "empty"),
    (STEP0, "is not a '# kstep-log 2 qspinlock ...' header"),
    (GOOD_HEADER.replace("qspinlock", "vma-locks"), "the header is for 'vma-locks'"),
    (GOOD_HEADER.replace("variant=v6.12", "variant=v9"), "unknown variant 'v9'"),
    (GOOD_HEADER.replace("cpus=2", "cpus=0"), "cpus=0: expected a whole number 1..1024"),
    (GOOD_HEADER.replace("cpus=2", "cpu=2"), "unknown header field 'cpu'"),
    (GOOD_HEADER.replace(" pending_bits=8", ""), "no pending_bits= field"),
    (GOOD_HEADER.replace("pending_bits=8", "pending_bits=4"), "neither 8 nor 1"),
    (GOOD_HEADER + STEP0[:-10], "truncated line"),
    (GOOD_HEADER + "0 0 queued_spin_lock 0x00000000 0x00000001\n", "got 5 fields"),
    (GOOD_HEADER + "\x7fELF garbage here and more 1 2 3 4\n", "is not a whole number"),
    (GOOD_HEADER + STEP0.replace("0 0 ", "zero 0 ", 1), "ticket 'zero' is not a whole number"),
    (GOOD_HEADER + STEP0.replace("0 0 ", "0 7 ", 1), "a CPU 7 that this log's header does not have"),
    (GOOD_HEADER + STEP0.replace("0 0 ", "0 0.irq ", 1), "an interrupt context 0.irq"),
    (GOOD_HEADER + STEP0.replace("0 0 ", "0 -1 ", 1), "cpu '-1' is neither"),
    (GOOD_HEADER + STEP0.replace("queued_spin_lock", "spin_lock"), "unknown label 'spin_lock'"),
    (GOOD_HEADER + STEP0.replace("queued_spin_lock", "arch_spin_lock"),
     "unknown label 'arch_spin_lock' for qspinlock v6.12"),
    (GOOD_HEADER + STEP0.replace("0x00000000 0x00000001", "0 1"), "word '0' is not 0x followed by 8 hex digits"),
])
def test_bad_logs_are_one_line_and_exit_2(capsys, tmp_path, text, says):
    path = tmp_path / "bad.log"
    path.write_text(text)
    rc, out, err = kstep(capsys, "check", "qspinlock", path)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("kstep: "), (rc, out, err)
    assert says in lines[0], lines[0]
    assert "Traceback" not in out + err


def test_bad_files_and_mechanisms_exit_2(capsys, tmp_path):
    for argv, says in [
        (["check", "qspinlock", tmp_path / "missing.log"], "cannot read"),
        (["check", "qspinlock", tmp_path], "cannot read"),
        (["check", "rcu", tmp_path / "x.log"], "no observation-log format for rcu"),
        (["check", "vma-locks", tmp_path / "missing.log"], "cannot read"),
        (["check", "nope", tmp_path / "x.log"], "unknown mechanism 'nope'"),
        (["check", "qspinlock"], "the following arguments are required: LOG"),
    ]:
        rc, out, err = kstep(capsys, *argv)
        assert rc == 2 and err.count("\n") == 1 and says in err, (argv, err)
    (tmp_path / "bin.log").write_bytes(GOOD_HEADER.encode() + b"\xff\xfe\n")
    rc, _, err = kstep(capsys, "check", "qspinlock", tmp_path / "bin.log")
    assert rc == 2 and "not a text file" in err


FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_mutated_logs_pass_fail_or_are_refused_in_one_line(capsys, tmp_path_factory, data):
    m, tr = run_model(cpus=2, acquisitions=2, irq=1, seed=data.draw(st.integers(0, 50), label="seed"))
    text = "\n".join([header_line("v6.12", 2, 2, 8, irq=1)] + log_lines(m, tr) + [end_line(len(tr))]) + "\n"
    pos = data.draw(st.integers(0, len(text)), label="pos")
    how = data.draw(st.sampled_from(["insert", "delete", "replace", "cut"]), label="how")
    junk = data.draw(st.text(max_size=6), label="junk")
    if how == "insert":
        text = text[:pos] + junk + text[pos:]
    elif how == "delete":
        text = text[:pos] + text[pos + len(junk) + 1:]
    elif how == "replace":
        text = text[:pos] + junk + text[pos + len(junk):]
    else:
        text = text[:pos]
    path = tmp_path_factory.getbasetemp() / "fuzz.log"
    path.write_text(text, errors="surrogatepass")
    rc, out, err = kstep(capsys, "check", "qspinlock", path)
    assert "Traceback" not in out + err
    assert rc in (0, 1, 2), rc
    if rc == 2:
        assert err.count("\n") == 1 and err.startswith("kstep: "), err
    else:
        assert err == "" and "verdict: " in out
