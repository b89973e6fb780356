"""Run public tests written in Otter-Grader's OK format: ``python -m kstep.grading.ok tests/``.

An OK-format test file is a Python file that sets ``test`` to a dict::

    OK_FORMAT = True
    test = {"name": "explores-clean", "points": 1, "suites": [{"type": "doctest", "setup": "",
            "teardown": "", "scored": True, "cases": [{"code": ">>> 1 + 1\\n2", "hidden": False,
            "locked": False}]}]}

Each case's ``code`` is a doctest; a suite's cases share one namespace, set up by ``setup``.
Students run their public tests with this module (or ``otter check``, whose format it is); the
grader runs the same module inside the sandbox, since the tests import the student's code.  With
``--json`` each test is one line ``{"name": ..., "passed": ..., "output": ...}``; the exit status
is 0 when every test passed.
"""

from __future__ import annotations

import doctest
import io
import json
import sys
from pathlib import Path


def load_test(path: Path) -> dict:
    scope: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)  # the exercise's own public test file
    return scope["test"]


def run_test(test: dict) -> tuple[bool, str]:
    """(passed, what failed) for one OK-format test."""
    report = io.StringIO()
    passed = True
    for k, suite in enumerate(test["suites"]):
        scope: dict = {"__name__": f"ok_{test['name']}_{k}"}
        parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        if suite.get("setup", "").strip():
            exec(compile(suite["setup"], "<setup>", "exec"), scope)
        for n, case in enumerate(suite["cases"], start=1):
            dt = parser.get_doctest(case["code"], scope, f"{test['name']} case {n}", None, 0)
            result = runner.run(dt, out=report.write, clear_globs=False)
            if result.failed:
                passed = False
                break
        if suite.get("teardown", "").strip():
            exec(compile(suite["teardown"], "<teardown>", "exec"), scope)
    return passed, report.getvalue()


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    paths: list[Path] = []
    for a in (a for a in argv if a != "--json"):
        p = Path(a)
        paths += sorted(p.glob("*.py")) if p.is_dir() else [p]
    if not paths:
        print("usage: python -m kstep.grading.ok [--json] TESTS.py|FOLDER ...", file=sys.stderr)
        return 2
    all_passed = True
    sys.path.insert(0, ".")  # the student's files are in the working folder
    for path in paths:
        test = load_test(path)
        try:
            passed, output = run_test(test)
        except SystemExit as e:  # sys.exit() in the student's code, called from the setup
            passed, output = False, f"your code called sys.exit({e.code!r}) during the test"
        except Exception as e:  # a crash in setup is the test's failure, reported like any other
            passed, output = False, f"{type(e).__name__}: {e}"
        all_passed &= passed
        if as_json:
            print(json.dumps({"name": test["name"], "passed": passed, "output": output[-4000:]}), flush=True)
        else:
            print(f"{test['name']}: {'passed' if passed else 'FAILED'}")
            if not passed:
                print("    " + output.strip().replace("\n", "\n    "))
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
