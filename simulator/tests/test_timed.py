"""The timed scheduler and its cost model (engine/timed.py, engine/costs.py): a line two CPUs write
costs transfers and a line one CPU touches does not; a CPU spinning on a line nobody writes costs
none until the line is written; a blocked actor's clock jumps to the end of the step that woke it;
the same scenario and table give the same run, and a saved trace replays with its table; a bad
cost table is one line and exit 2; a table the calibration program writes is one kstep takes."""

import json
import shutil
import subprocess
from collections import defaultdict

import pytest
from test_cli import ROOT, bad_input, kstep

from kstep.engine import costs, scheduler_for, simulate
from kstep.experiment import open as open_scenario
from kstep.engine.costs import Directory
from kstep.engine.schedule import parse_schedule, schedule_text
from kstep.engine.timed import STEP_COSTS, Timed

TABLE = costs.load()


def timed(mech, name, variant=None, overrides=()):
    ex = open_scenario(mech, name, variant, overrides)
    return ex, ex.run(Timed(TABLE))


# -- the directory ---------------------------------------------------------------------------------

def test_a_line_one_cpu_touches_costs_no_transfer_and_a_contended_one_does():
    d = Directory()
    assert [d.write(0, "L"), d.load(0, "L"), d.write(0, "L")] == [0, 0, 0]
    assert d.write(1, "L") == 1  # CPU 1 takes it from CPU 0's cache
    assert d.write(0, "L") == 1  # and back: ping-pong, a transfer each way
    assert d.load(1, "L") == 1 and d.load(0, "L") == 0  # a read shares it; the writer kept a copy


def test_two_cpus_on_one_lock_word_pay_transfers_and_on_two_words_none():
    _, apart = timed("qspinlock", "uncontended", overrides=('cpus.1.locks=["B"]',))
    _, shared = timed("qspinlock", "uncontended")
    assert apart.stats["transfers"] == {}
    assert shared.stats["transfers"]["C0"] >= 2 and shared.stats["transfers"]["C1"] >= 2
    assert shared.stats["makespan_ns"] - apart.stats["makespan_ns"] >= 4 * TABLE.ns["transfer"]


def test_a_local_spin_costs_no_transfer_until_its_line_is_written():
    d = Directory()
    d.write(3, "node")  # mcs_node_init: the waiter's own node
    assert [d.load(3, "node") for _ in range(5)] == [0] * 5  # spinning in its own cache
    assert d.write(2, "node") == 1  # the predecessor's handoff invalidates it
    assert d.load(3, "node") == 1  # one re-read, then local again
    assert d.load(3, "node") == 0
    # the line is Shared by CPUs 2 and 3 now, owned by neither: a store still invalidates the other copy
    assert d.write(2, "node") == 1 and d.load(3, "node") == 1


def test_cpus_that_take_one_line_wait_their_turn_and_readers_of_a_shared_line_do_not():
    d = Directory()
    d.write(0, "L")
    assert d.take(1, "L") is True  # from its owner: the transfer queues on the line
    assert d.take(2, "L") is False  # from the sharers: served beside them
    assert d.take(2, "L") is None  # a hit
    t, per = Timed(TABLE), TABLE.ns["transfer"]
    # three CPUs want line L at time 0: the second waits one transfer, the third two
    queued = defaultdict(float)
    assert [t._queue(0.0, ("L",), queued) for _ in range(3)] == [0.0, per, 2 * per]
    assert t._queue(10 * per, ("L",), queued) == 0.0  # the line is free again by then
    assert t._queue(0.0, ("M",), queued) == 0.0  # another line is another queue
    assert queued == {"L": 3 * per, "M": 0.0}  # each line's waits, for the actor whose table it is


def test_faulters_on_one_mmap_lock_queue_for_its_line():
    # 12 faulting threads under no-per-vma-lock: each fault takes mmap_lock's line twice (down_read,
    # up_read), so with more faulters on it, each one's steps wait longer for the line
    def line_wait(count):
        _, trace = timed("vma-locks", "android-app-launch", "no-per-vma-lock", (f"threads.0.count={count}",))
        waits = trace.stats["line_wait_ns"]
        return sum(w for a, w in waits.items() if a.startswith("F")) / count
    assert 0 < line_wait(2) < line_wait(12)


def test_each_lines_transfers_and_queueing_are_the_actors_and_the_mmap_lock_line_has_its_own():
    # every transfer and every ns queued is some line's: the per-line stats add up to the per-actor
    # ones, and the faulters' one shared line without per-VMA locks, mmap_lock's, moves and is queued for
    runs = {v: timed("vma-locks", "android-app-launch", v, ("threads.0.count=6",))[1]
            for v in ("no-per-vma-lock", "v6.12")}
    for trace in runs.values():
        s = trace.stats
        assert sum(s["line_transfers"].values()) == sum(s["transfers"].values())
        assert sum(s["line_queue_ns"].values()) == pytest.approx(sum(s["line_wait_ns"].values()), abs=1)  # each rounded
    old, new = (runs[v].stats for v in ("no-per-vma-lock", "v6.12"))
    assert old["line_transfers"].get("mm.mmap_lock", 0) > new["line_transfers"].get("mm.mmap_lock", 0)
    assert old["line_queue_ns"].get("mm.mmap_lock", 0) > new["line_queue_ns"].get("mm.mmap_lock", 0)


def test_each_actors_lines_are_its_own_transfers_and_queueing_and_a_fault_pays_only_its_own():
    # the per-actor, per-line stats add up, actor by actor, to the per-actor counters the scheduler keeps
    # apart from them (transfers, line_wait_ns), and line by line to the per-line totals; measure's paid_by
    # gives the fault threads' and the writers' sums of them, which differ (a writer's transfers are its own)
    from kstep.measure.timed import MMAP_LOCK, paid_by
    from kstep.engine.timed import ACTOR_LINE_QUEUE, ACTOR_LINE_TRANSFERS
    for v in ("no-per-vma-lock", "v6.12"):
        _, trace = timed("vma-locks", "android-app-launch", v, ("threads.0.count=4",))
        s = trace.stats
        assert {a: sum(lines.values()) for a, lines in s[ACTOR_LINE_TRANSFERS].items()} == s["transfers"]
        queued = {a: sum(lines.values()) for a, lines in s[ACTOR_LINE_QUEUE].items()}
        assert queued == pytest.approx(s["line_wait_ns"], abs=0.1 * len(s["line_queue_ns"]))
        for line, n in s["line_transfers"].items():
            assert sum(lines.get(line, 0) for lines in s[ACTOR_LINE_TRANSFERS].values()) == n
        kinds = {t.name: t.kind for t in trace.states[0].threads}
        paid = paid_by(s, kinds)
        for kind in ("fault", "writer"):
            mine = [a for a in s["transfers"] if kinds[a] == kind]
            assert mine and paid[kind]["transfers"] == sum(s["transfers"][a] for a in mine), (v, kind)
            assert paid[kind]["mmap_lock"]["transfers"] == sum(s[ACTOR_LINE_TRANSFERS][a].get(MMAP_LOCK, 0)
                                                               for a in mine), (v, kind)
        assert paid["writer"]["transfers"] > 0
        assert paid["fault"]["transfers"] + paid["writer"]["transfers"] == sum(s["line_transfers"].values())
    # a spinning waiter's transfers are its own too (C3 spins on its MCS node until C2 writes it)
    s = timed("qspinlock", "three-waiters")[1].stats
    assert s["spin_transfers"] and {a: sum(lines.values()) for a, lines in s[ACTOR_LINE_TRANSFERS].items()} == \
        s["transfers"]


def test_mcs_waiter_spins_on_its_own_node_without_a_transfer():
    # three-waiters: C3 spins in mcs_spin on its own node (last written by itself), which costs
    # nothing until C2's handoff writes it; its one re-read is its mcs_spin step's transfer.  Then,
    # queue head, it spins on the lock word, which C2 owns: one fetch while it waits.
    _, trace = timed("qspinlock", "three-waiters")
    assert trace.stats["spin_transfers"] == {"C3": 1}
    labels = [str(a) for a in trace.actions]
    assert trace.stats[STEP_COSTS][labels.index("C3:mcs_spin")][2] == TABLE.ns["transfer"]


def test_a_timed_tso_run_charges_the_inner_lines_and_a_buffered_store_takes_its_line_when_it_drains():
    # three-waiters under tso: the CPUs still move the lock word between them; C0's unlock, a plain
    # store, waits in its buffer and costs no transfer at its own step, and SB0's drain, on CPU 0's
    # cache, fetches the word that C1..C3 took meanwhile
    ex = open_scenario("qspinlock", "three-waiters").under("tso")
    trace = ex.run(Timed(TABLE))
    s, labels = trace.stats, [str(a) for a in trace.actions]
    assert s["line_transfers"]["words.0"] >= 6 and s["transfers"]["SB0"] == 1
    unlock, drain = labels.index("C0:queued_spin_unlock"), labels.index("SB0:drain_store_buffer")
    assert s[STEP_COSTS][unlock][2] == 0 and s[STEP_COSTS][drain][2] >= TABLE.ns["transfer"]
    model, state = ex.model, trace.states[unlock + 1]
    assert model.cache_of(state, "SB0") == model.cache_of(state, "C0") == 0


def test_a_timed_tso_run_keeps_the_inner_models_work():
    # every handled fault's exception entry and return is the fault's work under tso as under sc
    works = {}
    for memory in ("sc", "tso"):
        ex = open_scenario("vma-locks", "android-app-launch").under(memory)
        trace = ex.run(Timed(TABLE))
        works[memory] = [c[0] for a, c in zip(trace.actions, trace.stats[STEP_COSTS]) if a.label == "handle_mm_fault"]
    assert works["sc"] and min(works["tso"]) >= TABLE.ns["page_fault"] and len(works["tso"]) == len(works["sc"])


# -- the clocks --------------------------------------------------------------------------------------

def test_a_woken_actor_starts_when_the_step_that_woke_it_ends():
    ex, trace = timed("qspinlock", "three-waiters")
    labels = [str(a) for a in trace.actions]
    handoff, spin = labels.index("C2:mcs_handoff"), labels.index("C3:mcs_spin")
    work, wait, transfer = trace.stats[STEP_COSTS][handoff]
    # ticks are whole ns (rounded down) and the stats round each cost to 0.1 ns
    assert trace.ticks[spin] == pytest.approx(trace.ticks[handoff] + work + transfer, abs=1)
    assert trace.stats[STEP_COSTS][spin][1] > 0 and trace.stats["waiting_ns"]["C3"] > 0


def test_the_earliest_clock_moves_first_and_ties_go_to_the_first_actor():
    _, trace = timed("qspinlock", "three-waiters")
    assert [str(a) for a in trace.actions[:4]] == [f"C{k}:queued_spin_lock" for k in range(4)]
    assert trace.ticks[:4] == [0, 0, 0, 0]


def test_timed_runs_are_deterministic_and_a_saved_one_replays_with_its_table(tmp_path):
    ex, first = timed("vma-locks", "android-app-launch")
    _, again = timed("vma-locks", "android-app-launch")
    assert (first.actions, first.ticks, first.stats) == (again.actions, again.ticks, again.stats)
    params = Timed(TABLE).params()
    rerun = simulate(ex.model, ex.start, scheduler_for(params), max_steps=ex.scenario.max_steps)
    assert (rerun.actions, rerun.ticks, rerun.stats) == (first.actions, first.ticks, first.stats)
    cheap = costs.CostTable({**TABLE.ns, "transfer": 0.0}, TABLE.measured, "test")
    other = ex.run(Timed(cheap))
    assert other.stats["makespan_ns"] < first.stats["makespan_ns"]  # the table is what the run costs


# -- the cost table ----------------------------------------------------------------------------------

def good():
    return json.loads((costs.DEFAULT).read_text())


def test_the_api_page_quotes_the_committed_tables_ipi():
    """docs/reference/api.md tells a reader what the committed table charges for an IPI and how it
    compares with a TLB flush; a recalibrated table must change that sentence."""
    page = " ".join((ROOT / "docs" / "reference" / "api.md").read_text().split())
    ipi, flush = TABLE.ns["ipi"], TABLE.ns["tlb_flush"]
    assert f"is {ipi:.0f} ns, about {round(ipi / flush)} times its `tlb_flush`" in page


@pytest.mark.parametrize("change, says", [
    (lambda d: "{", "not JSON"),
    (lambda d: [], "not a JSON object"),
    (lambda d: {**d, "format": "other"}, "not a cost table"),
    (lambda d: {**d, "measured": "today"}, "'measured'"),
    (lambda d: {**d, "ns": {k: v for k, v in d["ns"].items() if k != "transfer"}}, "lacks transfer"),
    (lambda d: {**d, "ns": {**d["ns"], "cache_miss": 1}}, "unknown kinds cache_miss"),
    (lambda d: {**d, "ns": {**d["ns"], "atomic": -1}}, "ns.atomic"),
    (lambda d: {**d, "ns": {**d["ns"], "ipi": "fast"}}, "ns.ipi"),
    (lambda d: {**d, "ns": {**d["ns"], "step": True}}, "ns.step"),
    (lambda d: {**d, "ns": {**d["ns"], "transfer": 1e300}}, "ns.transfer"),
])
def test_a_bad_cost_table_is_one_line_and_exit_2(capsys, tmp_path, change, says):
    path = tmp_path / "costs.json"
    out = change(good())
    path.write_text(out if isinstance(out, str) else json.dumps(out))
    bad_input(capsys, "run", "qspinlock", "--scenario", "two-waiters", "--timed", "--costs", path, says=says)


def test_nan_in_a_cost_table_is_refused(capsys, tmp_path):
    path = tmp_path / "costs.json"
    data = good()
    text = json.dumps({**data, "ns": {**data["ns"], "transfer": "NaN"}}).replace('"NaN"', "NaN")
    path.write_text(text)
    assert "NaN" in text
    bad_input(capsys, "run", "qspinlock", "--scenario", "two-waiters", "--timed", "--costs", path,
              says="ns.transfer")


def test_costs_without_timed_and_a_missing_table_are_refused(capsys, tmp_path):
    bad_input(capsys, "run", "qspinlock", "--scenario", "two-waiters", "--costs", tmp_path / "c.json",
              says="only a --timed run")
    bad_input(capsys, "run", "qspinlock", "--scenario", "two-waiters", "--timed", "--costs", tmp_path / "c.json",
              says="cannot read it")


def test_a_timed_run_prints_its_makespan_and_waiting(capsys):
    rc, out, err = kstep(capsys, "run", "qspinlock", "--scenario", "three-waiters", "--timed", "-c")
    assert rc == 0, err
    assert "scheduler: timed, the earliest clock first, costs from the committed cost table" in out
    assert "makespan_ns: " in out and "waiting_ns: C3=" in out and STEP_COSTS not in out


def test_a_timed_run_prints_its_schedule_and_p_replays_it(capsys, tmp_path):
    """The printed schedule is the run's, entry for entry: -P takes the same steps (the C port's
    --schedule takes it too: test_kernel_lab)."""
    rc, out, err = kstep(capsys, "run", "qspinlock", "--scenario", "three-waiters", "--timed", "--json",
                         tmp_path / "timed.json")
    assert rc == 0, err
    said = out.split("its schedule, for -P or a C port (qspinlock-torture --schedule): ")[1].split("\n\n")[0]
    rc, out, err = kstep(capsys, "run", "qspinlock", "--scenario", "three-waiters", "-P", said, "--json",
                         tmp_path / "scripted.json")
    assert rc == 0, err
    steps = [[(s["actor"], s["label"]) for s in json.loads((tmp_path / f).read_text())["steps"]]
             for f in ("timed.json", "scripted.json")]
    assert steps[0] == steps[1] and len(steps[0]) > 20
    assert schedule_text(["C0", "C1", "C1", "C0"]) == "C0 C1*2 C0"
    assert parse_schedule(schedule_text(a for a, _ in steps[0])) == [a for a, _ in steps[0]]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="make calibrate needs gcc (scripts/setup-system)")
def test_the_calibration_program_writes_a_table_kstep_takes(tmp_path, capsys):
    exe = tmp_path / "costs"
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-pthread", "-o", exe, ROOT / "kernel-lab/calibrate/costs.c"],
                   check=True, timeout=120)
    assert subprocess.run([exe, "0", "0", "x"], capture_output=True, timeout=60).returncode == 2
    made = subprocess.run([exe, "0", "1", "pytest", "3"], capture_output=True, text=True, timeout=300, check=True)
    path = tmp_path / "costs.json"
    path.write_text(made.stdout)
    table = costs.load(path)
    assert table.ns["transfer"] > 0 and table.ns["page_fault"] > 0 and table.measured["where"] == "pytest"
    assert table.ns["ipi"] > 0  # it refuses to write a table whose sibling never took a shootdown
    rc, out, err = kstep(capsys, "run", "qspinlock", "--scenario", "two-waiters", "--timed", "--costs", path, "-c")
    assert rc == 0 and f"costs from {path}" in out, err


# -- what the timed runs measure (measure/timed.py) ------------------------------------------------

def test_fault_latency_is_each_faults_own_steps_and_waits():
    from kstep.measure.timed import actor_ends, fault_latencies, vma_faults
    rows = vma_faults()
    # android-app-launch: F1 and F2 fault twice each, under either variant; only without per-VMA
    # locks do they wait for the writer's mmap_lock
    assert rows["v6.12"]["faults"] == rows["no-per-vma-lock"]["faults"] == 4
    assert rows["v6.12"]["fault_waiting_ns"] == 0 < rows["no-per-vma-lock"]["fault_waiting_ns"]
    _, trace = timed("vma-locks", "android-app-launch", "no-per-vma-lock")
    # the same latencies from the scheduler's own step start times (whole ns)
    from_ticks, first = [], {}
    for k, (action, before, after) in enumerate(zip(trace.actions, trace.states, trace.states[1:])):
        first.setdefault(action.actor, trace.ticks[k])
        if sum(after.counters) > sum(before.counters):
            work, _, transfer = trace.stats[STEP_COSTS][k]
            from_ticks.append(trace.ticks[k] + work + transfer - first.pop(action.actor))
    assert fault_latencies(trace) == pytest.approx(from_ticks, abs=1.0)
    assert max(fault_latencies(trace)) > min(fault_latencies(trace))  # one fault waited for the writer

    # each actor's end from the scheduler's ticks too: the last of them is the makespan, and the
    # faults are done when the last fault thread's last step ends (the writer S ends the run here)
    ends = {}
    for k, action in enumerate(trace.actions):
        work, _, transfer = trace.stats[STEP_COSTS][k]
        ends[action.actor] = trace.ticks[k] + work + transfer
    assert actor_ends(trace) == pytest.approx(ends, abs=1.0)
    assert max(ends.values()) == pytest.approx(trace.stats["makespan_ns"], abs=1.0)
    row = rows["no-per-vma-lock"]
    assert row["last"] == "writer S" and row["faults_done_ns"] == pytest.approx(max(ends["F1"], ends["F2"]), abs=1.0)
    assert row["faults_done_ns"] < row["makespan_ns"]


# -- the player ----------------------------------------------------------------------------------

def test_the_time_panel_draws_each_steps_wait_work_and_transfers():
    from kstep.views.timed import PARTS, cost_bars, frame_spans
    _, trace = timed("qspinlock", "three-waiters")
    actors = ["C0", "C1", "C2", "C3"]
    bars, spans = cost_bars(trace, actors)
    total = sum(r - left for r, left in zip(bars["right"], bars["left"]))
    assert total == pytest.approx(sum(map(sum, trace.stats[STEP_COSTS])))
    # the stats round each cost to 0.1 ns
    assert max(bars["right"]) == pytest.approx(trace.stats["makespan_ns"], abs=0.15 * len(trace))
    colours = dict((c, name) for name, c in PARTS)
    waits = [k for k, c in zip(bars["step"], bars["color"]) if colours[c] == "waiting"]
    assert waits and all(str(trace.actions[k - 1]).startswith("C3") for k in waits)
    assert [start for start, _ in spans] == pytest.approx(trace.ticks, abs=2)  # a step starts at its tick
    left, right, curtain = frame_spans(spans)
    # the curtain at frame k starts where step k + 1 starts, and no later step starts before it (but
    # for the stats' rounding: two steps that start at once may be drawn a fraction of a ns apart)
    slack = 0.15 * len(trace)
    assert all(curtain[k] <= min(start for start, _ in spans[k:]) + slack for k in range(len(trace)))
    assert all(left[k] <= right[k] and left[k] <= curtain[k] + slack for k in range(len(trace) + 1))


@pytest.mark.browser
def test_a_timed_run_plays_with_time_on_the_x_axis(browser, tmp_path, capsys):
    from browser import Opened
    page = tmp_path / "timed.html"
    rc, _, err = kstep(capsys, "run", "qspinlock", "--scenario", "three-waiters", "--timed", "--html", page)
    assert rc == 0, err
    p = Opened(browser, page)
    try:
        cursor = "[m('kstep-plot-timed-cursor').left, m('kstep-plot-timed-cursor').right]"
        assert p.js(cursor) == [0, 0]
        p.click("Step")
        p.wait("m('kstep-slider').value === 1")
        _, trace = timed("qspinlock", "three-waiters")
        work, wait, transfer = trace.stats[STEP_COSTS][0]
        assert p.js(cursor) == pytest.approx([0, work + transfer])
        p.check_clean()
    finally:
        p.close()
