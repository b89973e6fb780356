"""What grading writes: Gradescope's results.json, JUnit XML and a readable summary.

``results.json`` follows Gradescope's autograder specification (and gradescope-utils' habits:
one entry per test with ``name``, ``score``, ``max_score``, ``status``, ``output`` and
``visibility``; hidden tests are ``after_published``).  ``junit.xml`` is one ``testsuite`` per
exercise, one ``testcase`` per test, for LMS tools and CI that read JUnit.  ``summary.txt`` is what
a person reads: the score, each test, and the failing interleaving or trace where a test has one.

Every file is written to a temporary name and renamed over the old one, so a reader never sees
half a result; ``write_batch_entry`` does the same for a whole student's folder in a batch.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from .harness import Grade


def results_json(g: Grade) -> str:
    return json.dumps({
        "score": g.score,
        "execution_time": round(g.seconds, 2),
        "output": _headline(g) + "".join(f"\n{p}" for p in g.problems),
        "visibility": "visible",
        "tests": [{"name": t.name, "score": t.score, "max_score": t.max_score,
                   "status": "passed" if t.passed else "failed", "output": t.output,
                   "visibility": t.visibility} for t in g.tests],
    }, indent=1) + "\n"


def junit_xml(g: Grade) -> str:
    failures = sum(not t.passed for t in g.tests)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites tests="{len(g.tests)}" failures="{failures}" time="{g.seconds:.2f}">',
             f'  <testsuite name={quoteattr(g.exercise)} tests="{len(g.tests)}" failures="{failures}" '
             f'time="{g.seconds:.2f}">',
             "    <properties>",
             f'      <property name="student" value={quoteattr(g.student)}/>',
             f'      <property name="score" value="{g.score:g}"/>',
             f'      <property name="max_score" value="{g.max_score:g}"/>',
             "    </properties>"]
    for t in g.tests:
        head = f'    <testcase classname={quoteattr(f"{g.exercise}.{t.visibility}")} name={quoteattr(t.name)}'
        if t.passed:
            lines.append(head + "/>")
        else:
            first = t.output.splitlines()[0] if t.output else "failed"
            lines += [head + ">",
                      f"      <failure message={quoteattr(first)}>{escape(_xml_text(t.output))}</failure>",
                      "    </testcase>"]
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines) + "\n"


def _xml_text(text: str) -> str:
    """XML 1.0 allows no control characters but tab and newline: show them escaped."""
    return "".join(c if c in "\t\n" or ord(c) >= 32 else f"\\x{ord(c):02x}" for c in text)


def summary(g: Grade) -> str:
    lines = [_headline(g), f"student: {g.student}",
             "variant: " + ", ".join(f"{k}={v}" for k, v in g.variant.items()), ""]
    lines += [f"submission: {p}" for p in g.problems]
    for t in g.tests:
        mark = "ok  " if t.passed else "FAIL"
        lines.append(f"[{mark}] {t.name} ({'public' if t.visibility == 'visible' else 'hidden'}): "
                     f"{t.score:g}/{t.max_score:g}")
        if not t.passed:
            lines += ["       " + line for line in t.output.splitlines()]
    return "\n".join(lines) + "\n"


def _headline(g: Grade) -> str:
    return f"{g.exercise} (version {g.version}): {g.score:g}/{g.max_score:g}"


def write(g: Grade, out: Path) -> None:
    """results.json, junit.xml and summary.txt in an existing folder, each replaced atomically."""
    for name, text in (("results.json", results_json(g)), ("junit.xml", junit_xml(g)), ("summary.txt", summary(g))):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, out / name)


def write_batch_entry(g: Grade, out: Path) -> None:
    """The student's folder in a batch's output, appearing whole or not at all."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{g.student}.", dir=out))
    try:
        write(g, tmp)
        tmp.chmod(0o755)
        os.rename(tmp, out / g.student)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
