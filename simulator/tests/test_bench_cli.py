"""Every benchmark script that runs alone (``python bench/NAME.py``: run.py, which runs any benchmark by
name, and those with options of their own) answers --help and refuses an unknown option or name at
once, with exit 2, instead of starting minutes of measuring."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
STANDALONE = sorted(p.name for p in BENCH.glob("*.py") if 'if __name__ == "__main__":' in p.read_text())


def test_the_benchmarks_that_run_alone_are_found():
    assert {"run.py", "player.py", "interactive.py"} <= set(STANDALONE)


def test_every_benchmark_run_py_names_is_a_module_of_bench_with_a_run():
    """run.py imports a benchmark's module only to run it: a misspelt one would show only in make bench."""
    names = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, '.'); from bench.run import BENCHES; "
                            "print(*BENCHES.values())"], capture_output=True, text=True, check=True, cwd=BENCH.parent)
    modules = names.stdout.split()
    assert len(modules) > 20 and not [m for m in modules if "\ndef run(" not in (BENCH / f"{m}.py").read_text()]


def test_run_names_an_unknown_benchmark_in_one_line_without_measuring():
    refused = subprocess.run([sys.executable, str(BENCH / "run.py"), "explore", "no-such"], capture_output=True,
                             text=True, timeout=120, cwd=BENCH.parent)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "'no-such'" in refused.stderr, refused.stderr


@pytest.mark.parametrize("name", STANDALONE)
def test_help_and_an_unknown_option_are_answered_without_measuring(name):
    def run(*args):
        return subprocess.run([sys.executable, str(BENCH / name), *args], capture_output=True, text=True,
                              timeout=120, cwd=BENCH.parent)  # a measuring run takes minutes: past this, it started one

    shown = run("--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage:"), shown.stderr
    refused = run("--no-such-option")
    assert refused.returncode == 2 and "--no-such-option" in refused.stderr.splitlines()[-1]
