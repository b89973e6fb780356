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
    damon, damon_port, engine, explore, explore_tso, fork_batch, interactive, klitmus, litmus, player, plot, qspinlock,
    traces, vma_locks, vma_locks_port,
)


def main() -> int:
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    results = {}
    failed = False
    say = lambda m: print(m, flush=True)  # noqa: E731
    results["engine"] = engine.run(out, say)
    results["vma-locks"] = vma_locks.run(out, say)
    results["player"] = player.run(out)
    results["interactive"] = interactive.run(out, say)
    results["qspinlock"] = qspinlock.run(out, say)
    results["explore"] = explore.run(out, say)
    results["explore-tso"] = explore_tso.run(out, say)
    results["fork-batch"] = fork_batch.run(out, say)
    results["traces"] = traces.run(out, say)
    results["damon"] = damon.run(out, say)
    try:
        results["litmus"] = litmus.run(out, say)
    except litmus.Disagreement as exc:  # the other results still get their plot; the bench fails at the end
        print(f"bench: {exc}", file=sys.stderr)
        failed = True
    damon_port.run(out, say)
    klitmus.run(out, say)
    port_png = vma_locks_port.draw(vma_locks_port.run(out, say), out / "vma-locks-port.png")
    png = plot.draw(results, out / "bench.png")
    print(f"bench: wrote {', '.join(sorted(p.name for p in out.glob('*.json')))}, {png.name} and {port_png.name} "
          f"to {out} in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    # No options: --help says what it measures, and anything else is refused before the measuring starts.
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    sys.exit(main())
