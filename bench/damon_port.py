"""The kernel lab's DAMON port, timed: aggregation intervals by DAMON against page-granularity
scanning, at 1 GiB to 1 TiB (issue 9 §4; issue 25 §2 asks whether the monitoring's time stays flat
within 20%; bench/damon.py has the deterministic counts).

``damon-bench GIB damon|pages [TIMED]`` (kernel-lab/damon/bench.c) monitors a process of a 16 MiB
heap, a GIB GiB mapping and a 1 MiB stack with DAMON's default attributes (5 ms sampling, 100 ms
aggregation: 20 samples; 10..1000 regions).  damon: ten aggregations for the regions to adapt, then
TIMED more, each timed and counted on its own.  pages: the same access check on every page of the
three mappings in each of the 20 samples, one aggregation; each result is counted and dropped,
never stored.  Every aggregation is timed on the monitoring thread's CPU clock
(CLOCK_THREAD_CPUTIME_ID), which time spent preempted on a loaded host does not stretch, and on the
wall clock beside it.

DAMON mode is repeated: REPEATS processes per size, TIMED aggregations each, the sizes interleaved
(1, 4, ... 1024 GiB, then again) so that a load that drifts during the run falls on every size
alike; each size's figure is the median CPU time of all its timed aggregations, with the quartiles
and each process's own median beside it.  Page scanning is one run per size (at 1 TiB it takes
minutes of CPU), a column of its own, never part of the flatness.  A DAMON aggregation with more
than max_nr_regions x samples access checks, or any run above 1 GiB resident (VmHWM), fails the
bench.  x86_64 only, natively (the result says emulated: false): under qemu-user the times would
be the emulator's.

    python bench/damon_port.py [--sizes 1,4,...] [--repeats N] [--timed N] [--pages-sizes 1,4,...|none]
                               [--out FILE]
    python bench/run.py damon-port      (bench/results/damon-port.json; `make bench` runs it too)

The seed table quotes the run kept in kernel-lab/damon/recorded/damon-port.json, which this bench
wrote (``--out`` there), with where, when, the host's load and how.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.vma_locks_port import summary  # noqa: E402
from kstep.cli import Parser  # noqa: E402
from kstep.errors import UserError  # noqa: E402

LAB = ROOT / "kernel-lab"
BENCH = LAB / "build" / "x86_64" / "damon-bench"
RECORDED = LAB / "damon" / "recorded" / "damon-port.json"
SIZES_GIB = (1, 4, 16, 64, 256, 1024)
MAX_GIB, MAX_TIMED = 1024, 1000  # damon-bench's own bounds
REPEATS, TIMED = 6, 50
MAX_NR_REGIONS, SAMPLES = 1000, 20
PEAK_LIMIT_KIB = 1 << 20  # 1 GiB, the bound at 1 TiB
COLUMNS = ("wall_ns", "cpu_ns", "access_checks", "random_draws", "below_unlikely")


class BadOutput(RuntimeError):
    """damon-bench printed something other than its one JSON line."""


def parse(line: str, gib: int, mode: str, timed: int) -> dict:
    """damon-bench's JSON line, checked: its size and mode, and one number per timed aggregation in every column."""
    try:
        r = json.loads(line)
    except ValueError as e:
        raise BadOutput(f"damon-bench {gib} {mode}: not one JSON line ({e}): {line[:200]!r}") from None
    if not isinstance(r, dict) or (r.get("gib"), r.get("mode")) != (gib, mode):
        raise BadOutput(f"damon-bench {gib} {mode}: printed the run of another size or mode: {line[:200]!r}")
    for c in COLUMNS:
        if not (isinstance(r.get(c), list) and len(r[c]) == timed
                and all(isinstance(x, int) and x >= 0 for x in r[c])):
            raise BadOutput(f"damon-bench {gib} {mode}: {c} is not {timed} whole numbers: {line[:200]!r}")
    return r


def bench_run(gib: int, mode: str, timed: int = 1) -> dict:
    """One process of damon-bench, its line parsed and held to DAMON's bound and the resident-set bound."""
    argv = [str(BENCH), str(gib), mode] + ([str(timed)] if mode == "damon" else [])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    r = parse(p.stdout, gib, mode, timed if mode == "damon" else 1)
    if mode == "damon" and max(r["access_checks"]) > MAX_NR_REGIONS * SAMPLES:
        raise RuntimeError(f"damon-bench {gib} GiB: {max(r['access_checks'])} access checks in an aggregation, "
                           f"above max_nr_regions x samples = {MAX_NR_REGIONS * SAMPLES}")
    if r["vm_hwm_kib"] > PEAK_LIMIT_KIB:
        raise RuntimeError(f"damon-bench {gib} GiB {mode}: peak resident set {r['vm_hwm_kib']} KiB, above "
                           "1 GiB: the accessed bits must be computed, never stored")
    return r


def summarise(result: dict) -> dict:
    """Each size's figures from the raw runs alone: DAMON's CPU and wall time per aggregation (median and
    quartiles of every timed aggregation; each process's own median), its access checks and the share of
    get_random_u32() draws that took __get_random_u32_below()'s unlikely branch; page scanning's one run;
    and the largest median CPU time over the smallest (the flatness the seed table judges)."""
    sizes = {}
    for gib, runs in result["damon"].items():
        every = {c: [x for r in runs for x in r[c]] for c in COLUMNS}
        sizes[gib] = {"aggregations": len(every["cpu_ns"]),
                      **{c: {k: v for k, v in summary(every[c]).items() if k != "runs"} for c in ("cpu_ns", "wall_ns")},
                      "run_median_cpu_ns": [round(statistics.median(r["cpu_ns"])) for r in runs],
                      "access_checks_median": statistics.median(every["access_checks"]),
                      "unlikely_per_draw": round(sum(every["below_unlikely"]) / sum(every["random_draws"]), 4)}
    medians = [s["cpu_ns"]["median"] for s in sizes.values()]
    pages = {gib: {c: r[c][0] for c in ("cpu_ns", "wall_ns", "access_checks")} for gib, r in result["pages"].items()}
    return {"damon": sizes, "pages": pages, "cpu_spread": round(max(medians) / min(medians), 3)}


def measure(sizes, repeats: int, timed: int, pages_sizes, out: Path, say=print) -> dict:
    """Every run on the built port, the result (raw runs, their summary, where, when and at what load)
    written to ``out`` and its plot beside it."""
    if platform.machine() != "x86_64":
        raise RuntimeError("damon-port: the timings are native x86_64 runs; this machine is " + platform.machine())
    load_before = os.getloadavg()
    result = {"bench": "damon-port", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host": os.uname().nodename, "host_cpus": os.cpu_count(), "arch": "x86_64", "emulated": False,
              "compiler": subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
              "binary": "kernel-lab/build/x86_64/damon-bench, kernel-lab/Makefile's CFLAGS (-O2)",
              "attrs": {"sample_us": 5000, "aggr_us": 100000, "samples_per_aggregation": SAMPLES,
                        "min_nr_regions": 10, "max_nr_regions": MAX_NR_REGIONS},
              "process": "16 MiB heap, GIB GiB mapping, 1 MiB stack; a 1% block touched every sample, a 4% block "
                         "at 10% per page per sample",
              "how": f"damon: {repeats} processes per size, the sizes interleaved, each timing {timed} aggregations "
                     "one by one after 10 to adapt, on CLOCK_THREAD_CPUTIME_ID (the monitoring thread's CPU time) "
                     "and CLOCK_MONOTONIC; pages: one process per size, one aggregation",
              "repeats": repeats, "timed_per_run": timed, "damon": {str(g): [] for g in sizes}, "pages": {}}
    for i in range(repeats):
        for gib in sizes:
            result["damon"][str(gib)].append(bench_run(gib, "damon", timed))
        say(f"damon port: damon, round {i + 1}/{repeats} of {', '.join(map(str, sizes))} GiB "
            f"(load {os.getloadavg()[0]:.1f})")
    for gib in pages_sizes:
        say(f"damon port: pages, {gib} GiB ...")
        result["pages"][str(gib)] = bench_run(gib, "pages")
    result["host_load"] = {"before": list(load_before), "after": list(os.getloadavg())}
    result["summary"] = summarise(result)
    # one line per list of numbers: the raw runs stay readable and small
    text = re.sub(r"\[\s+([-0-9.,\s]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]",
                  json.dumps(result, indent=1))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    draw(result, out.with_suffix(".png"))
    say(f"damon port: wrote {out}; DAMON's median CPU time per aggregation, largest / smallest size "
        f"{result['summary']['cpu_spread']}")
    return result


def build() -> None:
    subprocess.run(["make", "-s", "-C", str(LAB), "build/x86_64/damon-bench"], check=True)


def run(out_dir, say=print) -> dict:
    """``make bench``'s entry: every size, REPEATS x TIMED aggregations each, page scanning at every size."""
    say("damon port: building kernel-lab/build/x86_64/damon-bench ...")
    build()
    return measure(SIZES_GIB, REPEATS, TIMED, SIZES_GIB, Path(out_dir) / "damon-port.json", say)


def draw(result: dict, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result["summary"]
    fig, (ax_t, ax_c) = plt.subplots(1, 2, figsize=(11, 4))
    gib = [int(g) for g in s["damon"]]
    med = [x["cpu_ns"]["median"] / 1e6 for x in s["damon"].values()]
    ax_t.errorbar(gib, med, yerr=[[m - x["cpu_ns"]["q1"] / 1e6 for m, x in zip(med, s["damon"].values())],
                                  [x["cpu_ns"]["q3"] / 1e6 - m for m, x in zip(med, s["damon"].values())]],
                  fmt="o-", color="#C44E52", capsize=3, label="DAMON, CPU time: median and quartiles")
    ax_t.plot(gib, [x["wall_ns"]["median"] / 1e6 for x in s["damon"].values()], "x:", color="#C44E52",
              label="DAMON, wall time median")
    if s["pages"]:
        pgib = [int(g) for g in s["pages"]]
        ax_t.plot(pgib, [x["cpu_ns"] / 1e6 for x in s["pages"].values()], "s-", color="#4C72B0",
                  label="page scanning, CPU time (one run)")
        ax_c.plot(pgib, [x["access_checks"] for x in s["pages"].values()], "s-", color="#4C72B0",
                  label="page scanning")
    ax_c.plot(gib, [x["access_checks_median"] for x in s["damon"].values()], "o-", color="#C44E52",
              label="DAMON (median)")
    ax_c.axhline(MAX_NR_REGIONS * SAMPLES, color="grey", ls=":", label="max_nr_regions x samples")
    for ax, what in ((ax_t, "ms per aggregation"), (ax_c, "access checks per aggregation")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("monitored memory (GiB)")
        ax.set_ylabel(what)
        ax.legend(fontsize=7)
    load = result["host_load"]
    fig.suptitle(f"kernel-lab damon port, x86_64 native, {result['date'][:10]}, {result['host_cpus']} CPUs at load "
                 f"{load['before'][0]:.1f}→{load['after'][0]:.1f}: largest / smallest median CPU time "
                 f"{s['cpu_spread']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _sizes(text: str, what: str) -> tuple[int, ...]:
    if what == "--pages-sizes" and text == "none":
        return ()
    try:
        sizes = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise UserError(f"{what} {text}: not comma-separated whole numbers of GiB") from None
    if not all(1 <= g <= MAX_GIB for g in sizes) or len(set(sizes)) != len(sizes):
        raise UserError(f"{what} {text}: each size must be 1..{MAX_GIB} GiB, each once")
    return sizes


def main(argv=None) -> int:
    ap = Parser(prog="damon-port", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES_GIB)), help="GiB, comma-separated (default all six)")
    ap.add_argument("--repeats", type=int, default=REPEATS,
                    help=f"DAMON processes per size, 2..100 (default {REPEATS})")
    ap.add_argument("--timed", type=int, default=TIMED,
                    help=f"aggregations timed in each, 1..{MAX_TIMED} (default {TIMED})")
    ap.add_argument("--pages-sizes", default=",".join(map(str, SIZES_GIB)),
                    help="GiB to scan page by page once each, or none (default all six)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "damon-port.json")
    try:
        a = ap.parse_args(argv)
        sizes, pages_sizes = _sizes(a.sizes, "--sizes"), _sizes(a.pages_sizes, "--pages-sizes")
        if not 2 <= a.repeats <= 100:
            raise UserError(f"--repeats must be 2..100, not {a.repeats}")
        if not 1 <= a.timed <= MAX_TIMED:
            raise UserError(f"--timed must be 1..{MAX_TIMED}, not {a.timed}")
        if not a.out.parent.is_dir():
            raise UserError(f"--out {a.out}: no directory {a.out.parent}")
    except UserError as e:
        print(f"damon-port: {e}", file=sys.stderr)
        return 2
    build()
    measure(sizes, a.repeats, a.timed, pages_sizes, a.out, lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
