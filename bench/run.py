"""`make bench`: every benchmark, its JSON in bench/results/ and one PNG plot of them all.

The engine and litmus benchmarks pin themselves to one CPU (their targets are per core); the player benchmark
drives Debian's chromium with every CPU.
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import (  # noqa: E402
    course, damon, damon_cpu, damon_gap, damon_port, engine, explore, explore_tso, fork_ab, fork_batch,
    interactive, klitmus, launch_ab, litmus, player, plot, qspinlock, qspinlock_ab, seeds, traces, vma_locks,
    vma_locks_port,
)


def _vma_locks_port(out: Path, say) -> dict:
    result = vma_locks_port.run(out, say)
    vma_locks_port.draw(result, out / "vma-locks-port.png")
    return result


# Every benchmark by name, in the order `make bench` runs them; each writes its JSON (some a PNG too).
BENCHES = {
    "engine": engine.run,
    "vma-locks": vma_locks.run,
    "player": lambda out, say: player.run(out),
    "interactive": interactive.run,
    "qspinlock": qspinlock.run,
    "qspinlock-ab": qspinlock_ab.run,
    "explore": explore.run,
    "explore-tso": explore_tso.run,
    "fork-batch": fork_batch.run,
    "traces": traces.run,
    "damon": damon.run,
    "litmus": litmus.run,
    "damon-port": damon_port.run,
    "klitmus": klitmus.run,
    "vma-locks-port": _vma_locks_port,
    "seeds": seeds.run,
    "launch-ab": launch_ab.run,
    "damon-cpu": damon_cpu.run,
    "damon-gap": damon_gap.run,
    "fork-ab": fork_ab.run,
    "course": course.run,
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"run only these ({', '.join(BENCHES)}); with none, all of them and bench.png")
    parser.add_argument("--only", action="append", default=[], metavar="MECH",
                        help="with seeds alone: remake only this mechanism's seed table "
                             f"({', '.join(seeds.MECHANISMS)}), keeping the others as committed; may be repeated")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        print(f"bench: no benchmark is named {unknown[0]!r}; the names are {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    refused = seeds.refuse_only(args.names, args.only)
    if refused:
        print(f"bench: {refused}", file=sys.stderr)
        return 2
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    start, began = time.perf_counter(), time.time()
    results = {}
    failed = False
    say = lambda m: print(m, flush=True)  # noqa: E731
    for name in args.names or BENCHES:
        try:
            results[name] = BENCHES[name](out, say, args.only) if args.only else BENCHES[name](out, say)
        except litmus.Disagreement as exc:  # the other results still get their plot; the bench fails at the end
            print(f"bench: {exc}", file=sys.stderr)
            failed = True
    if not args.names:
        plot.draw(results, out / "bench.png")
    written = sorted(p.name for p in out.iterdir() if p.is_file() and p.stat().st_mtime >= began)
    print(f"bench: wrote {', '.join(written)} to {out} in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
