"""The kernel lab compiles the kernel's own files, changed only by its marked hooks.

kernel-lab/Makefile takes each file a port compiles from the fetched linux-source-6.12 tree
(scripts/kernel-file), applying the port's patch where it has one. A patch may only add the lab's
marks: a STEP()/STEP_TEST() hook around a kernel statement that stays as it was (re-indented), a
block under a LAB_ preprocessor condition (a variant or an exercise's hook), a comment, or one of
the changes listed in ALLOWED with the reason. It may drop no kernel line. And it must apply to the
pinned tree exactly, or the build stops and names the drift.
"""

import difflib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "kernel-lab"
PATCHES = sorted(LAB.rglob("*.patch"))
KERNEL_FILE = LAB / "scripts" / "kernel-file"
HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
HOOK = re.compile(r"\bSTEP(?:_TEST)?\(")
LAB_CONDITION = re.compile(r"^#\s*(?:if|ifdef|ifndef|elif)\b.*\bLAB_")
TOKEN = re.compile(r"->|\w+|\S")
# Changes that are neither a hook nor a LAB_ block: the kernel's line, the lab's, and why.
ALLOWED = {
    # kernel/locking/qspinlock.c: tests/labcheck.py disassembles xchg_tail() on every architecture to
    # show the 16-bit exchange; the kernel's __always_inline leaves no function to find.
    "static __always_inline u32 xchg_tail(struct qspinlock *lock, u32 tail)":
        "static noinline u32 xchg_tail(struct qspinlock *lock, u32 tail)",
}


def hunks(patch_text):
    """(first line in the tree's file, first line in the patched file, [(kind, text)]) per hunk."""
    out = []
    for line in patch_text.split("\n"):
        m = HUNK.match(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), []))
        elif out and line[:1] in (" ", "-", "+"):
            out[-1][2].append((line[:1], line[1:]))
    return out


def lab_only(lines):
    """For each line of a C file: whether only a lab build compiles it. The lab's preprocessor
    conditions name LAB_ macros, none of which the plain build defines: a line in a branch that
    needs one (a variant, an exercise's hook), or a directive of such a condition, is the lab's."""
    stack, out = [], []  # per open conditional: (names LAB_, this branch taken, some branch taken)
    for line in lines:
        s = line.strip()
        m = re.match(r"^#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", s)
        if m and m.group(1) in ("if", "ifdef", "ifndef"):
            lab = "LAB_" in m.group(2)
            taken = not lab or _holds(m.group(1), m.group(2))
            stack.append((lab, taken, taken))
            out.append(lab or not all(t for _, t, _ in stack[:-1]))
            continue
        if m and m.group(1) in ("elif", "else") and stack:
            lab, _, any_taken = stack[-1]
            lab = lab or "LAB_" in m.group(2)
            taken = not lab or (not any_taken and (m.group(1) == "else" or _holds("if", m.group(2))))
            stack[-1] = (lab, taken, any_taken or taken)
            out.append(lab or not all(t for _, t, _ in stack[:-1]))
            continue
        if m and m.group(1) == "endif" and stack:
            lab, _, _ = stack.pop()
            out.append(lab or not all(t for _, t, _ in stack))
            continue
        out.append(not all(t for _, t, _ in stack))
    return out


def _holds(directive, condition):
    """A LAB_ condition, with no LAB_ macro defined."""
    if directive == "ifdef":
        return False
    if directive == "ifndef":
        return True
    expr = re.sub(r"defined\s*\(?\s*LAB_\w+\s*\)?", "0", condition.split("/*")[0])
    return bool(eval(expr.replace("!", " not ").replace("&&", " and ").replace("||", " or ")))


def comment_lines(lines):
    """Which lines are wholly comment (block comments included)."""
    out, open_ = [], False
    for line in lines:
        s = line.strip()
        whole = open_ or s.startswith(("/*", "//"))
        if s.startswith("/*") or open_:
            open_ = "*/" not in s
        out.append(whole)
    return out


def tokens(lines):
    return TOKEN.findall(" ".join(lines))


def unhooked(toks):
    """The tokens with the lab's hooks taken off: STEP(lock, label) [{ ... }] keeps what it wraps,
    STEP_TEST(lock, label, expr) becomes expr."""
    out, closing, depth = [], [], 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in ("STEP", "STEP_TEST") and toks[i + 1:i + 2] == ["("]:
            j, d = i + 1, 0  # find the matching ")"
            while True:
                d += {"(": 1, ")": -1}.get(toks[j], 0)
                if d == 0:
                    break
                j += 1
            args = toks[i + 2:j]
            commas = [k for k, a in enumerate(args) if a == ","]
            if t == "STEP_TEST":
                out += args[commas[1] + 1:]
            i = j + 1
            if t == "STEP" and toks[i:i + 1] == ["{"]:
                closing.append(depth)
                depth += 1
                i += 1
            continue
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if closing and closing[-1] == depth:
                closing.pop()
                i += 1
                continue
        out.append(t)
        i += 1
    return out


def unmarked_changes(patch_text, original, patched):
    """Each hunk whose kernel code the patch changes: with comments and the lab-only lines set aside
    and the hooks taken off, the lines it adds must be the lines it removes, token for token (up to
    the changes listed in ALLOWED). So the plain build compiles the kernel's code, and nothing else."""
    in_lab, is_comment, was_comment = lab_only(patched), comment_lines(patched), comment_lines(original)
    problems = []
    for old, new, body in hunks(patch_text):
        removed, added = [], []
        for kind, text in body:
            if kind in (" ", "-"):
                if kind == "-" and not was_comment[old - 1]:
                    removed.append(ALLOWED.get(text.strip(), text))
                old += 1
            if kind in (" ", "+"):
                if kind == "+" and not (in_lab[new - 1] or is_comment[new - 1]):
                    added.append(text)
                new += 1
        kernel, lab = " ".join(tokens(removed)), " ".join(unhooked(tokens(added)))
        if kernel != lab:
            problems.append(f"the hunk ending at line {new - 1} changes the kernel's code: {kernel!r} becomes {lab!r}")
    return problems


def kernel_file(tree, path, out, patch):
    return subprocess.run([sys.executable, str(KERNEL_FILE), str(tree), path, str(out), str(patch)],
                          capture_output=True, text=True)


def target_of(patch):
    return patch.read_text().split("\n", 2)[1].removeprefix("+++ b/").strip()


def test_the_lab_patches_its_kernel_files_rather_than_copying_them():
    assert [p.relative_to(LAB).as_posix() for p in PATCHES] == ["qspinlock/qspinlock.c.patch"]
    assert not (LAB / "qspinlock" / "qspinlock.c").exists() and not (LAB / "qspinlock" / "mcs_spinlock.h").exists()


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_each_patch_applies_exactly_and_adds_only_marked_hooks(patch, linux_tree, tmp_path):
    out = tmp_path / "patched.c"
    run = kernel_file(linux_tree, target_of(patch), out, patch)
    assert run.returncode == 0, run.stderr
    original = (linux_tree / target_of(patch)).read_text().split("\n")
    assert unmarked_changes(patch.read_text(), original, out.read_text().split("\n")) == []


def mutated(linux_tree, patch, tmp_path, old, new):
    """The port's patched file with one more change, and the patch that makes it from the tree."""
    out = tmp_path / "patched.c"
    assert kernel_file(linux_tree, target_of(patch), out, patch).returncode == 0
    text = out.read_text()
    assert text.count(old) == 1, old
    changed = text.replace(old, new).split("\n")
    diff = difflib.unified_diff((linux_tree / target_of(patch)).read_text().split("\n"), changed, lineterm="")
    return "\n".join(diff), (linux_tree / target_of(patch)).read_text().split("\n"), changed


@pytest.mark.parametrize(("old", "new", "problem"), [
    # a port that quietly strengthens the kernel's ordering
    ("\n\tnext = NULL;\n", "\n\tnext = NULL;\n\tsmp_mb();\n", "smp_mb ( ) ;'"),
    # ... or weakens it: the barrier that publishes an initialised node
    ("\n\tsmp_wmb();\n", "\n", "'smp_wmb ( ) ;' becomes ''"),
    # ... or keeps the hook but changes the statement it wraps
    ("\t\tval = queued_fetch_set_pending_acquire(lock);",
     "\t\tval = atomic_fetch_or_relaxed(_Q_PENDING_VAL, &lock->val);",
     "becomes 'val = atomic_fetch_or_relaxed ( _Q_PENDING_VAL , & lock -> val ) ;'"),
])
def test_a_patch_that_changes_the_kernels_code_is_refused(linux_tree, tmp_path, old, new, problem):
    patch = LAB / "qspinlock" / "qspinlock.c.patch"
    text, original, lines = mutated(linux_tree, patch, tmp_path, old, new)
    found = unmarked_changes(text, original, lines)
    assert len(found) == 1 and problem in found[0], found


def test_a_tree_that_moved_on_is_named_drift(linux_tree, tmp_path):
    patch = LAB / "qspinlock" / "qspinlock.c.patch"
    path = target_of(patch)
    moved = tmp_path / "tree" / path
    moved.parent.mkdir(parents=True)
    moved.write_text((linux_tree / path).read_text().replace("\told = xchg_tail(lock, tail);",
                                                             "\told = xchg_tail(lock, tail); /* moved */"))
    run = kernel_file(tmp_path / "tree", path, tmp_path / "out.c", patch)
    assert run.returncode == 1
    assert "drift:" in run.stderr and "old = xchg_tail(lock, tail); /* moved */" in run.stderr
    assert not (tmp_path / "out.c").exists()
