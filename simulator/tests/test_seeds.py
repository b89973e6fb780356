"""The committed seed tables (simulator/kstep/seeds.json, written by `python bench/run.py seeds`)
are what the model computes now: the bundled slice is run again and must match number for number,
so no table quotes a number the model no longer gives."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import seeds  # noqa: E402
from kstep.measure import fork_batch  # noqa: E402

COMMITTED = json.loads(seeds.COMMITTED.read_text())


def test_the_committed_vma_and_qspinlock_rows_are_what_the_model_gives():
    now = seeds.model_tables(("vma-locks", "qspinlock"), vma_sizes=seeds.BUNDLED)
    bundled = [r for r in COMMITTED["vma-locks"]["rows"] if r["size"] == "bundled"]
    assert now["vma-locks"]["rows"] == bundled
    assert now["qspinlock"] == COMMITTED["qspinlock"]


def test_every_committed_vma_row_follows_from_its_own_model_numbers():
    """The rows above the bundled size (12 to 100 threads) are too slow to time again here: each is held
    to its own model numbers instead, so its change, its why and its real cell cannot drift from them."""
    rows = COMMITTED["vma-locks"]["rows"]
    assert [(r["scenario"], r["size"]) for r in rows] == [(s, size) for s in seeds.VMA_SCENARIOS
                                                          for size in seeds.VMA_SIZES[s]]
    for r in rows:
        assert seeds.vma_row(r["scenario"], r["size"], r["model"]) == r, (r["scenario"], r["size"])


def test_the_vma_rows_why_shows_the_mmap_lock_line_apart_from_the_others():
    """Issue 25's second cause: per-VMA locks take faults off mmap_lock's one line.  In every launch row
    the mmap_lock line moves less per fault with them and the faults' waiting behind writers falls; the
    other lines (VMAs, mm_lock_seq, the tree) are what they take instead, so they move more."""
    launch = [r for r in COMMITTED["vma-locks"]["rows"] if r["scenario"] == "android-app-launch"]
    for r in launch:
        was, now = r["per_fault"]["no-per-vma-lock"], r["per_fault"]["v6.12"]
        assert was["mmap_lock_transfers"] > now["mmap_lock_transfers"], r["size"]
        assert was["mmap_lock_queue_ns"] > now["mmap_lock_queue_ns"], r["size"]
        assert was["other_transfers"] < now["other_transfers"], r["size"]
        assert f"the mmap_lock line moved to them {was['mmap_lock_transfers']:g} against " in r["why"]


def test_a_vma_rows_per_fault_numbers_are_the_faulting_threads_own_and_the_writers_come_apart():
    """Per fault is what the fault threads paid over the faults: with per-VMA locks no fault takes
    mmap_lock's line at all (only writers may), and without them the faults' share of that line is
    smaller than every thread's over the faults (writers take it too), the writers' part standing in its
    own cell (and the rcu daemon's, which frees detached VMAs at the larger sizes, in neither)."""
    for r in COMMITTED["vma-locks"]["rows"]:
        for v, m in r["model"].items():
            paid, n = m["paid_by"], m["faults"]
            fault, writer = r["per_fault"][v], r["writers"][v]
            assert sum(p["transfers"] for p in paid.values()) == m["transfers"], (r["size"], v)
            assert fault["mmap_lock_transfers"] == round(paid["fault"]["mmap_lock"]["transfers"] / n, 2)
            assert writer["mmap_lock_transfers"] == paid["writer"]["mmap_lock"]["transfers"]
            assert fault["mmap_lock_transfers"] * n + writer["mmap_lock_transfers"] == \
                pytest.approx(m["mmap_lock"]["transfers"], abs=0.01 * n)
        assert r["per_fault"]["v6.12"]["mmap_lock_transfers"] == 0, r["size"]
        old = r["model"]["no-per-vma-lock"]
        assert r["writers"]["no-per-vma-lock"]["mmap_lock_transfers"] > 0, r["size"]
        assert r["per_fault"]["no-per-vma-lock"]["mmap_lock_transfers"] < old["mmap_lock"]["transfers"] / old["faults"]


def test_the_vma_comparable_text_says_what_the_rows_show():
    """COMPARABLE["vma-locks"]'s claims, each held to the committed rows: every run ends sooner with
    per-VMA locks; above the bundled size the launch's p90 fault is at least twice as fast; at the
    bundled size and in every tcp-zerocopy row the faults are done later, and those runs end with a
    writer; tcp's writer M ends at one time with per-VMA locks and later with more receivers without
    them; the writer's IPI is the table's largest cost."""
    from kstep.engine import costs
    text = seeds.COMPARABLE["vma-locks"]
    rows = {(r["scenario"], r["size"]): r for r in COMMITTED["vma-locks"]["rows"]}
    assert all(r["makespan_change"] < 0 for r in rows.values()) and "every launch row ends sooner" in text
    later = [k for k in rows if k[0] == "tcp-zerocopy-vs-madvise" or k == ("android-app-launch", "bundled")]
    assert "At the bundled size, and in every tcp-zerocopy row, the faults are done later" in text
    for k, r in rows.items():
        old, new = r["model"]["no-per-vma-lock"], r["model"]["v6.12"]
        if k in later:
            assert new["faults_done_ns"] > old["faults_done_ns"] and new["last"].startswith("writer"), k
        else:
            assert 2 * new["fault_latency_ns"]["p90"] <= old["fault_latency_ns"]["p90"], k
    assert "the launch's p90 fault is at least twice as fast" in text
    tcp = [rows[("tcp-zerocopy-vs-madvise", size)]["model"] for size in seeds.VMA_SIZES["tcp-zerocopy-vs-madvise"]]
    assert len({m["v6.12"]["makespan_ns"] for m in tcp}) == 1 and {m["v6.12"]["last"] for m in tcp} == {"writer M"}
    without = [m["no-per-vma-lock"]["makespan_ns"] for m in tcp]
    assert without == sorted(without) and len(set(without)) == len(without)
    assert "M ends at the same time whatever the number of receivers" in text
    ns = costs.load().ns
    assert max(ns, key=ns.get) == "ipi" and "shootdown IPI, the table's largest cost" in text
    assert rows[("android-app-launch", "100 threads: 75 faulting, 25 mappers")]["model"]["v6.12"]["last"].startswith(
        "writer") and "With 25 of 100 threads mapping stacks the run ends with a writer" in text


FORK = COMMITTED["fork-batch"]
THREADS = [r for r in FORK["rows"] if r["rmap"] == seeds.THREAD_RMAP]  # the thread's own configurations


@pytest.mark.slow  # 8.6 s in session 16's quiet clean clone: make test runs it, make test-fast does not
def test_the_committed_fork_rows_are_what_the_model_times():
    """Every fork row's changes follow from its own numbers per GiB, every configuration has its rows,
    and the rows of the thread's arm64 kernels (no contpte, no _large_mapcount) are timed again and must
    match number for number."""
    assert [(r["format"], r["rmap"] == seeds.RMAP_6_12, r["strategy"], r["order"]) for r in FORK["rows"]] == \
        [(*config, order) for config in seeds.FORK_CONFIGS for order in (0, 9)]
    for r in FORK["rows"]:
        for fork in (r, r["later"]):
            for change, per_gib in (("counted_change", "counted_per_gib"), ("timed_change", "timed_ns_per_gib")):
                numbers = fork[per_gib]
                assert fork[change] == seeds._change(numbers[r["strategy"]], numbers["per-pte"]), (r, change)
    assert FORK["comparable"] == seeds.COMPARABLE["fork-batch"]
    again = [r for r in THREADS if r["format"] == "arm64-4K" and r["strategy"] in ("folio-batch", "per-pte")]
    assert seeds.fork((("arm64-4K", False, "folio-batch"), ("arm64-4K", False, "per-pte"))) == again


def test_a_later_fork_is_timed_from_the_read_only_ptes_the_first_left():
    """A later fork write-protects nothing: with per-pte's copy as with the batch, it costs less than the first;
    and at order 9 the batch still saves on it (one folio reference per batch, not per PTE)."""
    for r in FORK["rows"]:
        first, later = r["timed_ns_per_gib"], r["later"]["timed_ns_per_gib"]
        assert all(later[s] < first[s] for s in first), r
        if r["order"] == 9 and r["strategy"] == "folio-batch":
            assert r["later"]["timed_change"] < 0 and r["later"]["counted_change"] < 0, r


def test_patch_15_of_16_is_a_row_timed_beside_the_prototype_it_answered():
    """arm64's hook on contiguous PTEs (v4 patch 15/16) and David's batching without it, both with the thread's
    rmap on arm64-4K-contpte: the hook's first fork at order 9, counted and timed again, is the committed row's
    (the rest of each row follows from its own numbers, held above); the thread gives no number for either,
    and the row says so; at order 9 the hook reads 16 PTEs per folded block where the prototype reads 256, so it
    counts and times less, at order 0 (nothing folded) the two are the same copy."""
    rows = {(r["strategy"], r["order"]): r for r in FORK["rows"] if r["format"] == "arm64-4K-contpte"
            and r["rmap"] == seeds.THREAD_RMAP}
    assert set(rows) == {(s, o) for s in ("arch-hint", "no-batch-hint") for o in (0, 9)}
    again = fork_batch.per_gib("arm64-4K-contpte", "arch-hint", 9, large_mapcount=False, timed=True)
    assert fork_batch.weighted(again["gib"]) == rows[("arch-hint", 9)]["counted_per_gib"]["arch-hint"]
    assert again["makespan_ns"]["gib"] == rows[("arch-hint", 9)]["timed_ns_per_gib"]["arch-hint"]
    for o in (0, 9):
        assert rows[("arch-hint", o)]["thread"].startswith("no number: the thread lists v4 patch 15/16")
        assert rows[("arch-hint", o)]["where"] == "001_d9d6ae4fc76baf55.txt:383,227-240"
        assert rows[("no-batch-hint", o)]["thread"].startswith("no number")
    hint, none = rows[("arch-hint", 9)], rows[("no-batch-hint", 9)]
    for fork in ("counted_per_gib", "timed_ns_per_gib"):
        assert hint[fork]["arch-hint"] < none[fork]["no-batch-hint"]
        assert rows[("arch-hint", 0)][fork]["arch-hint"] == rows[("no-batch-hint", 0)][fork]["no-batch-hint"]


def test_the_fork_ab_cells_hold_each_fork_to_the_models_order_by_sign_alone():
    """The model's 6.1 → 6.12 change, first fork and later ones, timed again for arm64 at order 9 (6.1: per-pte
    on arm64-4K with one _mapcount atomic; 6.12: folio-batch on contpte with _large_mapcount); a measured change
    of the other sign, or none, is a disagreement however small."""
    [row] = [r for r in FORK["rows"] if r["format"] == "arm64-4K-contpte" and r["rmap"] == seeds.RMAP_6_12
             and r["order"] == 9]
    assert row["ab_model"] == seeds.ab_model("arm64", 9)
    assert seeds._order(-0.4, -0.001) == "agreement with the model's order"
    assert seeds._order(-0.4, 0.001) == seeds._order(0.2, -0.3) == seeds._order(0.2, 0.0) == \
        "a disagreement with the model's order"
    assert seeds._order(0.0, 0.5) == "the model times both kernels the same: no order to hold"


def test_the_fork_chapter_says_what_the_thread_rows_show():
    """docs/chapters/fork-batch.md: at order 0 the thread's configurations take the same steps and
    operations either way; at order 9 batching is faster, and atomics, then steps, decide; v4's patch 02
    alone counts what per-pte does and is slower by steps alone; the prototype's base against mm-unstable
    is one configuration in the model, and the prototype's own change is also given against that base."""
    assert {(r["format"], r["strategy"]) for r in THREADS} == \
        {("x86-64", "folio-batch"), ("arm64-4K", "folio-batch"), ("arm64-4K", "arch-hint"), ("arm64-4K", "per-pte"),
         ("arm64-4K-contpte", "arch-hint"), ("arm64-4K-contpte", "no-batch-hint")}
    said = {(r["strategy"], r["order"]): r["thread"] for r in THREADS if r["format"] == "arm64-4K"}
    assert said[("per-pte", 0)].startswith("+1.3% M2 / +3.2% Altra (hugetlb-rmap-cleanups")
    assert "+2.2% / +2.2% against its base" in said[("folio-batch", 0)]  # 1.035 / 1.013, 1.055 / 1.032
    assert "-36.2% / -10.7% against its base" in said[("folio-batch", 9)]  # 0.644 / 1.009, 0.897 / 1.005
    for r in (r for r in THREADS if r["format"] != "arm64-4K-contpte"):  # patch 15/16 has its own test
        if r["strategy"] == "per-pte":
            assert r["counted_change"] == r["timed_change"] == 0 and r["why"] == seeds.RMAP_SERIES
        elif r["order"] == 0:
            assert r["counted_change"] == r["timed_change"] == 0 and r["why"] == seeds.SAME_WORK
        elif r["strategy"] == "folio-batch":
            assert r["timed_change"] < 0 and r["why"].endswith("; atomics decide") and "steps -" in r["why"]
        else:
            assert r["counted_change"] == 0 < r["timed_change"]
            assert r["why"].endswith("; steps decide") and "," not in r["why"]

# DAMON's cheap slice: hot/cold's overhead at every size (the busy workload's reruns take minutes), the C
# port's recorded run, and prcl on the process that comes back to its paged-out heap, the row whose
# refaults the table costs
DAMON_SLICE = {"overhead_workloads": ("hot/cold",), "prcl": ("phase-change, back at 7 s",), "ethp": ()}


@pytest.mark.slow  # 4.0 s in session 16's quiet clean clone: make test runs it, make test-fast does not
def test_the_committed_damon_rows_are_what_the_model_gives():
    now = seeds.damon(**DAMON_SLICE)
    slice_ = {(r["kind"], r["workload"]) for r in now}
    assert [r["kind"] for r in now] == ["overhead", "port", "prcl"] and len(slice_) == 3
    assert now == [r for r in COMMITTED["damon"]["rows"] if (r["kind"], r["workload"]) in slice_]
    assert COMMITTED["damon"]["comparable"] == seeds.COMPARABLE["damon"]



def test_each_seed_chapter_opens_its_story_with_the_bench_table():
    from kstep.views import seeds as view
    for mech in view.HEADERS:
        text = (ROOT / "docs" / "chapters" / f"{mech}.md").read_text()
        story = text.index("\n## The story")
        assert text.index(f"```{{kstep-seeds}} {mech}\n", story) < text.index("\n## ", story + 1)
        rows, comparable = view.table(mech)
        assert len(rows) == 1 + len(COMMITTED[mech]["rows"]) and comparable == COMMITTED[mech]["comparable"]


AB = sorted(seeds.RECORDED_AB.glob("*.json"))


def test_the_recorded_ab_files_hold_what_their_bench_wrote():
    """Each recorded A/B (bench/launch_ab.py, bench/fork_ab.py) names its kernels, host and load, has at
    least 3 boots of each kernel, and its summary is the interval of its own boots: an edited number in
    either shows."""
    from bench.ab import interval

    assert {p.name for p in AB} >= {"fork-ab-x86_64.json", "fork-ab-arm64.json"}
    for path in AB:
        r = json.loads(path.read_text())
        assert path.name == f"{r['bench']}-{r['arch']}.json", path
        assert r["kernels"]["6.1"].startswith("6.1.") and r["kernels"]["6.12"].startswith("6.12."), path
        assert {"before", "after"} <= set(r["host_load_1min"]) and r["host"] and r["date"], path
        for name, boots in r["boots"].items():
            assert len(boots) >= 3, (path, name)
            assert all(b["uname_r"] == r["kernels"][name] for b in boots), (path, name)
            if r["bench"] == "fork-ab":
                got = {m: {k: interval([b["modes"][m][k] for b in boots]) for k in ("first_us", "median_us")}
                       for m in seeds.FORK_MODES.values()}
            else:
                got = {k: interval([b[k] for b in boots]) for k in r["summary"][name]}
            assert got == r["summary"][name], (path, name)


def test_an_ab_boot_that_crashes_before_its_probe_is_booted_once_more_and_recorded(monkeypatch, tmp_path):
    """A TCG boot can crash before the probe ends (an oops in the idle loop, seen on 6.12 x86_64): the
    A/B boots that kernel once more and names the crash in the result, which the real-kernel cell then
    quotes; a second crash, or a probe that fails, still stops the bench."""
    from types import SimpleNamespace as NS

    from bench import ab

    case = NS(name="fork", ok=True, data={"x": 1})
    crashed = NS(console=NS(finished=False, crash="BUG: kernel NULL pointer dereference\nRIP: x", cases=[],
                            uname_r="6.12.95+deb12-amd64"), timed_out=False, seconds=3.0, log="oops")
    good = NS(console=NS(finished=True, crash=None, cases=[case], uname_r="6.12.95+deb12-amd64"),
              timed_out=False, seconds=9.0, log="ok")
    boots = iter([crashed, good, crashed, crashed])
    monkeypatch.setattr(ab.guest, "qemu_command", lambda *a, **k: ["qemu", "-kernel", "k"])
    monkeypatch.setattr(ab.guest, "boot", lambda *a, **k: next(boots))
    failed: list = []
    assert ab.boot_probe("fork-ab", "fork", "x86_64", None, tmp_path / "vmlinuz", tmp_path, 2, failed) == \
        ("6.12.95+deb12-amd64", {"x": 1})
    assert failed == [{"kernel": "vmlinuz", "uname_r": "6.12.95+deb12-amd64",
                       "why": "BUG: kernel NULL pointer dereference"}]
    with pytest.raises(SystemExit, match="did not run the fork probe"):
        ab.boot_probe("fork-ab", "fork", "x86_64", None, tmp_path / "vmlinuz", tmp_path, 2, failed)
    r = json.loads(AB[0].read_text())
    said = seeds._provenance({**r, "failed_boots": failed[:1]})
    assert "a 6.12.95+deb12-amd64 boot stopped before its probe (BUG: kernel NULL pointer dereference)" in said


def test_the_real_cells_are_the_recorded_ab_files():
    """Every vma-locks and fork row's real-kernel cell is what seeds builds from the recorded files now,
    and the rows a real kernel stands beside quote them rather than 'not measured'."""
    for r in COMMITTED["vma-locks"]["rows"]:
        assert r["real"] == seeds.real_vma(r["scenario"], r["size"]), r["scenario"]
    for r in FORK["rows"]:
        assert r["real"] == seeds.real_fork(r["format"], r["rmap"] == seeds.RMAP_6_12, r["strategy"], r["order"],
                                            r.get("ab_model"))
    measured = [r for r in FORK["rows"] if not r["real"].startswith(seeds.NOT_MEASURED)]
    assert {(r["format"], r["order"]) for r in measured} == \
        {("x86-64", 0), ("x86-64", 9), ("arm64-4K-contpte", 0), ("arm64-4K-contpte", 9)}


def test_each_6_12_boots_64k_order_is_on_the_page_with_its_disagreements_named():
    """The lab's 64k-against-4k check run on every recorded 6.12 boot of the fork A/B: the committed real
    cells count the agreements and name each disagreement with its numbers, and a recorded boot edited to
    the other order flips the count."""
    x86, arm = (seeds._recorded_ab("fork-ab", arch) for arch in ("x86_64", "arm64"))
    said = {"x86_64": ("8 of 10 agree; 2 disagree: boot 1's first fork (4k 28891 us, 64k 67796 us: kernel 2.35x, "
                       "model 0.85x); boot 5's median fork (4k 24260 us, 64k 24796 us: kernel 1.02x, model 0.78x)."),
            "arm64": ("9 of 10 agree; 1 disagrees: boot 1's first fork (4k 35107 us, 64k 45294 us: kernel 1.29x, "
                      "model 0.74x).")}
    for arch, r in (("x86_64", x86), ("arm64", arm)):
        assert seeds.boot_orders(r).endswith(said[arch]), arch
        cells = [row["real"] for row in FORK["rows"] if row["real"].startswith("fork() of 256 MiB") and
                 f"{r['arch']}, {r['kernels']['6.1']}" in row["real"]]
        assert len(cells) == 2 and all(seeds.boot_orders(r) in c for c in cells), arch
    x86["boots"]["6.12"][4]["modes"]["64k"]["median_us"] = 24000.0  # boot 5's median now below its 4k's
    boot_1 = "boot 1's first fork (4k 28891 us, 64k 67796 us: kernel 2.35x, model 0.85x)"
    assert seeds.boot_orders(x86).endswith(f"9 of 10 agree; 1 disagrees: {boot_1}.")
    x86["boots"]["6.12"][1]["modes"]["64k"]["mthp64_alloc"] = 0.0  # boot 2 got no 64K folios
    assert seeds.boot_orders(x86).endswith(f"7 of 8 agree; 1 disagrees: {boot_1}; boot 2 got no 64K folios "
                                           "(inconclusive).")


def test_the_recorded_port_run_holds_what_its_bench_wrote_and_the_row_quotes_it():
    """kernel-lab/qspinlock/recorded/qspinlock-ab.json (bench/qspinlock_ab.py's run): every run did all
    its acquisitions, each thread count's summary is the one its own pairs give, the load is there, and
    the qspinlock table's last row quotes the file: an edited number in either shows."""
    from bench import qspinlock_ab

    r = json.loads(seeds.RECORDED_PORT.read_text())
    assert {"before", "after"} <= set(r["host_load"]) and r["host"] and r["date"]
    for n, t in r["x86_64"].items():
        assert len(t["pairs"]) >= 2, n
        assert all(p[v]["acquisitions"] == int(n) * r["loops_per_thread"] for p in t["pairs"]
                   for v in qspinlock_ab.VARIANTS), n
        assert t["summary"] == qspinlock_ab.summarise(t["pairs"]), n
    for arch, by_threads in r["emulated"]["counts"].items():
        for n, runs in by_threads.items():
            assert all("seconds" not in x and x["acquisitions"] == int(n) * r["emulated"]["loops_per_thread"]
                       for rs in runs.values() for x in rs), (arch, n)
    row = COMMITTED["qspinlock"]["rows"][-1]
    assert row["scenario"] == seeds.PORT_SCENARIO and row["port"] == seeds.port_cell(r)


def test_only_remakes_one_table_and_keeps_the_others_as_committed(tmp_path, monkeypatch):
    """`bench/run.py seeds --only qspinlock`: the coordinator reruns one mechanism after a merge."""
    committed = tmp_path / "seeds.json"
    committed.write_text(seeds.COMMITTED.read_text())
    monkeypatch.setattr(seeds, "COMMITTED", committed)
    made = []  # which tables run() has made: the model's own numbers are test_the_committed_*'s business
    monkeypatch.setattr(seeds, "model_tables", lambda names: made.extend(names) or {n: COMMITTED[n] for n in names})
    monkeypatch.setattr(seeds, "draw", lambda result, path: None)
    monkeypatch.setattr(seeds, "draw_damon", lambda result, path: None)
    result = seeds.run(tmp_path, say=lambda m: None, only=("qspinlock",))
    assert made == ["qspinlock"] and list(result) == list(seeds.MECHANISMS) and result == COMMITTED
    assert json.loads(committed.read_text()) == json.loads((tmp_path / "seeds.json").read_text()) == COMMITTED


def test_a_bad_only_is_refused_with_a_reason():
    """bench/run.py prints the reason on one line and exits 2 (importing it costs seconds: its own
    argument handling is the three lines around refuse_only)."""
    names = ", ".join(seeds.MECHANISMS)
    assert seeds.refuse_only(["seeds"], ["vma"]) == f"no seed table is named 'vma'; they are {names}"
    assert seeds.refuse_only(["qspinlock"], ["qspinlock"]).startswith("--only remakes seed tables")
    assert seeds.refuse_only([], ["damon"]).startswith("--only remakes seed tables")
    assert seeds.refuse_only(["seeds"], ["damon", "vma-locks"]) is None and seeds.refuse_only(["engine"], []) is None
