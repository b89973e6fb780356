"""scripts/verdicts on bad input: a table it cannot read is one line naming the file and why, and exit
status 2, never a traceback (the diff across a change is read by people, often of a file just moved)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "verdicts"
COMMITTED = ROOT / "simulator" / "kstep" / "verdicts.json"


@pytest.fixture(scope="module")
def verdicts():
    loader = importlib.machinery.SourceFileLoader("verdicts_script", str(SCRIPT))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("verdicts_script", loader))
    loader.exec_module(module)
    return module


def test_a_table_that_is_none_is_named_with_why(verdicts, tmp_path, capsys):
    (tmp_path / "prose.json").write_text("a verdict table, honestly\n")
    (tmp_path / "list.json").write_text("[]\n")
    (tmp_path / "flat.json").write_text('{"verdicts": {"rcu": "clean"}}\n')
    cases = {tmp_path / "missing.json": "No such file or directory", tmp_path: "Is a directory",
             tmp_path / "prose.json": "not JSON", tmp_path / "list.json": 'no "verdicts" in it',
             tmp_path / "flat.json": "its verdicts are no table of mechanisms"}
    for path, why in cases.items():
        with pytest.raises(SystemExit) as end:
            verdicts.table(path)
        assert (end.value.code, capsys.readouterr().err) == (2, f"verdicts: {path}: {why}\n")
    assert verdicts.table(COMMITTED)  # the committed table is one


def test_the_command_ends_on_it_with_status_2_and_no_traceback(tmp_path):
    missing = tmp_path / "old.json"
    out = subprocess.run([sys.executable, str(SCRIPT), "--diff", str(missing), str(COMMITTED)],
                         capture_output=True, text=True)
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"verdicts: {missing}: No such file or directory\n")
