"""`make bench`: every benchmark, its JSON in bench/results/ and one PNG plot of them all.

The engine and litmus benchmarks pin themselves to one CPU (their targets are per core); the player benchmark
drives Debian's chromium with every CPU.
"""

import argparse
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Every benchmark by name, in the order `make bench` runs them, and its module in bench/; each writes its
# JSON (some a PNG too).  A module is imported when its benchmark runs: together they import matplotlib,
# Bokeh and the lab, 3 s of CPU before --help or a misspelt name could be answered.
BENCHES = {
    "engine": "engine",
    "vma-locks": "vma_locks",
    "player": "player",
    "interactive": "interactive",
    "qspinlock": "qspinlock",
    "qspinlock-ab": "qspinlock_ab",
    "explore": "explore",
    "explore-tso": "explore_tso",
    "fork-batch": "fork_batch",
    "traces": "traces",
    "damon": "damon",
    "litmus": "litmus",
    "damon-port": "damon_port",
    "klitmus": "klitmus",
    "vma-locks-port": "vma_locks_port",
    "seeds": "seeds",
    "launch-ab": "launch_ab",
    "damon-cpu": "damon_cpu",
    "damon-gap": "damon_gap",
    "fork-ab": "fork_ab",
    "course": "course",
}


def run_one(name: str, out: Path, say, only: list) -> dict:
    bench = importlib.import_module(f"bench.{BENCHES[name]}")
    if name == "seeds":
        return bench.run(out, say, only)
    if name == "player":  # it drives chromium with every CPU and says nothing as it goes
        return bench.run(out)
    result = bench.run(out, say)
    if name == "vma-locks-port":
        bench.draw(result, out / "vma-locks-port.png")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"run only these ({', '.join(BENCHES)}); with none, all of them and bench.png")
    parser.add_argument("--only", action="append", default=[], metavar="MECH",
                        help="with seeds alone: remake only this mechanism's seed table (vma-locks, fork-batch, ...), "
                             "keeping the others as committed; may be repeated")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        print(f"bench: no benchmark is named {unknown[0]!r}; the names are {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    refused = args.only and importlib.import_module("bench.seeds").refuse_only(args.names, args.only)
    if refused:
        print(f"bench: {refused}", file=sys.stderr)
        return 2
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    start, began = time.perf_counter(), time.time()
    results = {}
    failed = False
    say = lambda m: print(m, flush=True)  # noqa: E731
    from bench.litmus import Disagreement

    for name in args.names or BENCHES:
        try:
            results[name] = run_one(name, out, say, args.only)
        except Disagreement as exc:  # the other results still get their plot; the bench fails at the end
            print(f"bench: {exc}", file=sys.stderr)
            failed = True
    if not args.names:
        from bench import plot

        plot.draw(results, out / "bench.png")
    written = sorted(p.name for p in out.iterdir() if p.is_file() and p.stat().st_mtime >= began)
    print(f"bench: wrote {', '.join(written)} to {out} in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
