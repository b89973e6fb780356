"""An index of the function names defined in Debian's Linux 6.12 source.

Every simulator step label names the kernel function it mirrors as ``"path:function"``
(``"mm/memory.c:lock_vma_under_rcu"``). Tests check each label against the committed
index ``linux-6.12-functions.txt.gz``, which this module builds from Debian's
``linux-source-6.12`` package and loads.

``python -m kstep.source.index build [--deb PATH]`` fetches the package through the
private apt configuration of :mod:`kstep.source.debian` (or takes ``--deb``), unpacks the
whole tree into the user cache once (``python -m kstep.source.index tree``, which
``make linux-source`` runs, does only that: the kernel lab and the tests read it there), and
indexes, per ``.c``/``.h`` file of the parts listed in :data:`PARTS`:

* function definitions (including ``static inline`` ones in headers), and
* function-like macros (``#define name(``), because several kernel "functions" that a
  model mirrors are macros (``rcu_dereference``, ``rcu_assign_pointer``).

The index format is one header line (``# key=value ...``) naming the package, its
version and the kernel release, a second ``#`` line listing the indexed parts, then one
line per file, ``path<TAB>name name ...``, sorted, gzip'd with mtime 0.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import importlib.resources
import io
import lzma
import re
import shutil
import sys
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kstep.source.debian import DebianFetchError, PrivateApt, cache_dir, sha256

PACKAGE = "linux-source-6.12"
VERSION = "6.12.117-1~deb12u1"
INDEX_NAME = "linux-6.12-functions.txt.gz"
TARBALL = f"usr/src/{PACKAGE}.tar.xz"

# Parts of the tree that are indexed; a trailing "/" means the whole subtree.
PARTS = (
    "mm/",
    "kernel/rcu/",
    "kernel/locking/",
    "kernel/fork.c",
    "kernel/sched/core.c",
    "lib/maple_tree.c",
    "include/linux/",
    "include/asm-generic/",
    "arch/x86/mm/",
    "arch/x86/include/asm/",
    "arch/arm64/mm/",
    "arch/arm64/include/asm/",
    "arch/powerpc/mm/",
    "arch/powerpc/lib/",
    "arch/powerpc/include/asm/",
)
# Sparse annotations and GCC attributes that may follow a function's parameter list
# before its body ("void f(spinlock_t *l) __acquires(l) {"); the name comes before them.
TRAILING_ATTRIBUTES = frozenset(
    {"__acquires", "__releases", "__must_hold", "__cond_acquires", "__attribute__"}
)
# Macros that define a function named by their first argument, and the prefix the name
# gets: SYSCALL_DEFINE3(mmap, ...) defines sys_mmap (as the kernel's scripts/tags.sh
# says), DEFINE_IDTENTRY_RAW_ERRORCODE(exc_page_fault) and
# DEFINE_INTERRUPT_HANDLER(do_page_fault) define the name as given.
_DEFINERS = (
    (re.compile(r"COMPAT_SYSCALL_DEFINE[0-6]$"), "compat_sys_"),
    (re.compile(r"SYSCALL_DEFINE[0-6]$"), "sys_"),
    (re.compile(r"DEFINE_IDTENTRY\w*$"), ""),
    (re.compile(r"DEFINE_INTERRUPT_HANDLER\w*$"), ""),
)
_C_KEYWORDS = frozenset(
    {"if", "for", "while", "switch", "return", "sizeof", "typeof", "__typeof__", "asm", "__asm__"}
)


class SourceIndexError(RuntimeError):
    """Bad input to the index builder (a file that is not the expected package)."""


# ---------------------------------------------------------------------------------------
# Parsing one C file


_LEXICAL = re.compile(
    r"""
      //[^\n]*                      # line comment
    | /\*.*?\*/                     # block comment
    | "(?:\\.|[^"\\\n])*"           # string literal
    | '(?:\\.|[^'\\\n])*'           # character literal
    """,
    re.VERBOSE | re.DOTALL,
)
_DIRECTIVE = re.compile(r"\s*#\s*(\w+)(.*)", re.DOTALL)
_MACRO = re.compile(r"\s*([A-Za-z_]\w*)\(")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d\w*|[^\s\w]")


def _strip(text: str) -> str:
    """Remove comments and literals, keeping line breaks so that directives stay lines."""

    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s[0] == "/":
            return " " + "\n" * s.count("\n")
        return s[0] * 2

    return _LEXICAL.sub(blank, text.replace("\\\n", ""))


def _matching_open(tokens: list[str], close: int) -> int:
    """Index of the "(" matching the ")" at ``close``, or -1."""
    depth = 0
    for i in range(close, -1, -1):
        if tokens[i] == ")":
            depth += 1
        elif tokens[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _declared_name(tokens: list[str]) -> str | None:
    """The function name of a top-level declaration ``tokens`` followed by "{", if any.

    Walks back from the body over trailing attributes to the parameter list; the
    identifier before it is the name. ``(*name(params))(args)`` (a function returning a
    function pointer) is handled too; anything else (``= {``, ``struct x {``) is no function.
    """
    i = len(tokens) - 1
    while i >= 0 and tokens[i] == ")":
        start = _matching_open(tokens, i)
        if start <= 0:
            return None
        before = tokens[start - 1]
        if before in TRAILING_ATTRIBUTES:
            i = start - 2
            continue
        if before == ")":
            inner = tokens[_matching_open(tokens, start - 1) + 1 : start - 1]
            if len(inner) >= 3 and inner[0] == "*" and inner[2] == "(" and _is_identifier(inner[1]):
                return inner[1]
            return None
        if not _is_identifier(before) or before in _C_KEYWORDS:
            return None
        for definer, prefix in _DEFINERS:
            if definer.match(before):
                return prefix + tokens[start + 1] if _is_identifier(tokens[start + 1]) else None
        return before
    return None


def _is_identifier(token: str) -> bool:
    return token[0].isalpha() or token[0] == "_"


class _Scanner:
    """Brace-depth tracking over the code between directives, collecting definitions."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.depth = 0
        self.decl: list[str] = []  # top-level tokens since the last ";" or "}"
        # per open #if: (depth at #if, depth at end of its first branch or None)
        self.conditionals: list[tuple[int, int | None]] = []

    def code(self, text: str) -> None:
        for tok in _TOKEN.findall(text):
            if tok == "{":
                if self.depth == 0:
                    name = _declared_name(self.decl)
                    if name:
                        self.names.add(name)
                    self.decl = []
                self.depth += 1
            elif tok == "}":
                self.depth = max(self.depth - 1, 0)
                if self.depth == 0:
                    self.decl = []
            elif self.depth == 0:
                if tok == ";":
                    self.decl = []
                else:
                    self.decl.append(tok)

    def directive(self, keyword: str, rest: str) -> None:
        # Branches of one conditional often each open the same function ("#ifdef X
        # void f(int a) { #else void f(long a) { #endif"): every branch starts from the
        # depth at "#if" and the first branch's end depth is kept.
        if keyword in ("if", "ifdef", "ifndef"):
            self.conditionals.append((self.depth, None))
        elif keyword in ("elif", "else", "elifdef", "elifndef") and self.conditionals:
            start, first_end = self.conditionals[-1]
            self.conditionals[-1] = (start, self.depth if first_end is None else first_end)
            self.depth = start
        elif keyword == "endif" and self.conditionals:
            _, first_end = self.conditionals.pop()
            if first_end is not None:
                self.depth = first_end
        elif keyword == "define":
            macro = _MACRO.match(rest)
            if macro:
                self.names.add(macro.group(1))


def definitions(text: str) -> set[str]:
    """Names of the functions and function-like macros defined in C source ``text``."""
    scanner = _Scanner()
    pending: list[str] = []
    for line in _strip(text).split("\n"):
        directive = _DIRECTIVE.match(line)
        if directive:
            scanner.code("\n".join(pending))
            pending = []
            scanner.directive(directive.group(1), directive.group(2))
        else:
            pending.append(line)
    scanner.code("\n".join(pending))
    return scanner.names


def definition_lines(text: str, name: str) -> tuple[int, int] | None:
    """First and last line (1-based) of the top-level definition of function ``name`` in ``text``.

    The span runs from the declaration's first token to the body's closing brace, which is what
    the kernel lab extracts of a function it compiles (``kernel-lab/scripts/kernel-functions``).
    A definition with a conditional directive inside it (``#ifdef`` branches that each open the
    function) has no span of its own (None), as has a function that is only declared; branches
    are tracked as :class:`_Scanner` tracks them, so the definitions after it are still found.
    """
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    lines = _LEXICAL.sub(blank, text).split("\n")
    depth, decl_line, found = 0, None, None
    decl: list[str] = []
    conditionals: list[tuple[int, int | None]] = []  # as in _Scanner.directive
    poisoned, continued = False, False
    for n, line in enumerate(lines, 1):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        if directive:
            keyword = _DIRECTIVE.match(line)
            kind = keyword.group(1) if keyword else ""
            if kind in ("if", "ifdef", "ifndef"):
                conditionals.append((depth, None))
            elif kind in ("elif", "else", "elifdef", "elifndef", "endif") and conditionals:
                start, first_end = conditionals[-1]
                first_end = depth if first_end is None else first_end
                if kind == "endif":
                    conditionals.pop()
                    depth = first_end
                else:
                    conditionals[-1] = (start, first_end)
                    depth = start
            poisoned = poisoned or (depth > 0 and kind in ("if", "ifdef", "ifndef", "elif", "else", "endif"))
            continue
        for tok in _TOKEN.findall(line):
            if tok == "{":
                if depth == 0 and decl_line is not None and _declared_name(decl) == name:
                    found, poisoned = decl_line, False
                depth += 1
            elif tok == "}":
                depth = max(depth - 1, 0)
                if depth == 0:
                    if found is not None and not poisoned:
                        return found, n
                    decl, decl_line, found, poisoned = [], None, None, False
            elif depth == 0:
                if tok == ";":
                    decl, decl_line = [], None
                else:
                    decl.append(tok)
                    decl_line = n if decl_line is None else decl_line
    return None


# ---------------------------------------------------------------------------------------
# Reading the .deb


def _ar_members(f: io.BufferedReader) -> Iterator[tuple[str, int]]:
    """(name, size) of each member of an ar archive, leaving ``f`` at the member's data."""
    if f.read(8) != b"!<arch>\n":
        raise SourceIndexError(f"{f.name} is not a Debian package (no ar header)")
    while True:
        header = f.read(60)
        if len(header) < 60:
            return
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise SourceIndexError(f"{f.name} is damaged (bad ar member header)") from None
        start = f.tell()
        yield name, size
        f.seek(start + size + (size & 1))


class _Slice(io.RawIOBase):
    """A read-only window of ``size`` bytes at the current position of ``f``."""

    def __init__(self, f: io.BufferedReader, size: int) -> None:
        self.f, self.left = f, size

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        n = self.f.readinto(memoryview(buf)[: min(len(buf), self.left)])
        self.left -= n
        return n


@contextmanager
def _deb_tar(deb: Path, prefix: str) -> Iterator[tarfile.TarFile]:
    """The ``control.tar.*`` or ``data.tar.*`` member of ``deb``, as a streaming tar."""
    with deb.open("rb") as f:
        for name, size in _ar_members(f):
            if name.startswith(prefix):
                raw = io.BufferedReader(_Slice(f, size), 1 << 20)
                try:
                    with tarfile.open(fileobj=raw, mode="r|*") as tar:
                        yield tar
                except (tarfile.TarError, EOFError, lzma.LZMAError, zlib.error) as exc:
                    raise SourceIndexError(f"{deb} is damaged: {exc}") from None
                return
    raise SourceIndexError(f"{deb} has no {prefix}* member: not a Debian package")


def deb_control(deb: Path) -> dict[str, str]:
    """The fields of the package's control file."""
    with _deb_tar(deb, "control.tar") as tar:
        for member in tar:
            if member.name.lstrip("./") == "control":
                text = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
                return {
                    k.strip(): v.strip()
                    for k, v in (
                        line.split(":", 1)
                        for line in text.splitlines()
                        if line[:1].strip() and ":" in line
                    )
                }
    raise SourceIndexError(f"{deb} has no control file: not a Debian package")


def _indexed(path: str) -> bool:
    return path.endswith((".c", ".h")) and any(
        path.startswith(part) if part.endswith("/") else path == part for part in PARTS
    )


def extract_tree(deb: Path, tree: Path, log: Callable[[str], None]) -> None:
    """Extract the whole tarball in ``deb`` into ``tree``, saying which top folder it is in."""
    seen: set[str] = set()
    with _deb_tar(deb, "data.tar") as outer:
        for member in outer:
            if member.name.lstrip("./") != TARBALL:
                continue
            with tarfile.open(fileobj=outer.extractfile(member), mode="r|xz") as inner:
                for m in inner:
                    rel = m.name.partition("/")[2]
                    if not rel:
                        continue
                    top, sub, _ = rel.partition("/")
                    if sub and top not in seen:
                        seen.add(top)
                        log(f"extracting {top}")
                    m.name = rel
                    inner.extract(m, tree, filter="data")
            return
    raise SourceIndexError(f"{deb} does not contain {TARBALL}")


def index_tree(tree: Path) -> dict[str, frozenset[str]]:
    """path → names defined there, for every C file of :data:`PARTS` in an unpacked tree."""
    index: dict[str, frozenset[str]] = {}
    for part in PARTS:
        paths = sorted((tree / part).rglob("*")) if part.endswith("/") else [tree / part]
        for path in paths:
            rel = path.relative_to(tree).as_posix()
            if path.is_file() and _indexed(rel):
                index[rel] = frozenset(definitions(path.read_text(errors="replace")))
    return index


def kernel_release(makefile: Path) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL from the tree's top Makefile."""
    fields = dict(
        re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)$", makefile.read_text(), re.M)
    )
    return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}"


def tree_dir(version: str = VERSION) -> Path:
    """Where the extracted parts of a version's tree are kept (the user cache, never the repo)."""
    return cache_dir() / "src" / f"{PACKAGE}_{version}"


def write_index(path: Path, header: dict[str, str], index: dict[str, frozenset[str]]) -> None:
    """Write the index deterministically: sorted, gzip'd without a name or timestamp."""
    lines = [
        "# " + " ".join(f"{k}={v}" for k, v in header.items()),
        "# parts: " + " ".join(PARTS),
    ]
    lines += [f"{p}\t{' '.join(sorted(index[p]))}" for p in sorted(index)]
    tmp = path.with_name(path.name + ".tmp")
    with (
        tmp.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(("\n".join(lines) + "\n").encode())
    tmp.replace(path)


def default_index_path() -> Path:
    """The committed index, beside this module."""
    return Path(__file__).with_name(INDEX_NAME)


# A finished extraction carries this file, so an interrupted one is never taken for a tree.
COMPLETE = ".kstep-complete"


def unpack(deb: Path, log: Callable[[str], None]) -> Path:
    """The whole tree of the linux-source ``deb``, extracted into the user cache once."""
    control = deb_control(deb)
    if control.get("Package") != PACKAGE:
        raise SourceIndexError(f"{deb} is {control.get('Package')}, not {PACKAGE}")
    tree = tree_dir(control["Version"])
    if (tree / COMPLETE).is_file():
        return tree
    work = tree.with_name(tree.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    log(f"reading {deb.name}; extracting the whole tree into {tree} (about a minute)")
    try:
        extract_tree(deb, work, log)
        (work / COMPLETE).write_text(f"{PACKAGE} {control['Version']}\n")
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(tree, ignore_errors=True)
    work.rename(tree)
    return tree


def pinned_release() -> str:
    """The kernel release of the pinned package version (``6.12.117`` of ``6.12.117-1~deb12u1``)."""
    return VERSION.split("-", 1)[0]


def fetch_tree(log: Callable[[str], None]) -> Path:
    """The pinned tree, fetched and unpacked if it is not in the cache yet.

    Debian keeps only the newest version in each suite: when the pinned one is gone, the
    newest 6.12.y there is unpacked instead and the log says so; :func:`stale_pin` then
    names the difference for the checks that need the pinned release exactly.
    """
    if (tree_dir() / COMPLETE).is_file():
        return tree_dir()
    apt = PrivateApt(log=log)
    try:
        deb = apt.download(PACKAGE, VERSION)
    except DebianFetchError as exc:
        newest = apt.record(PACKAGE)["Version"]
        if not newest.startswith(pinned_release().rsplit(".", 1)[0] + "."):
            raise
        log(f"{PACKAGE} {VERSION} is no longer in Debian's archive ({exc}); using {newest}")
        deb = apt.download(PACKAGE, newest)
    return unpack(deb, log)


def linux_tree() -> Path | None:
    """The unpacked tree in the user cache: the pinned one, else the newest 6.12.y there."""
    if (tree_dir() / COMPLETE).is_file():
        return tree_dir()
    trees = sorted(
        (t for t in tree_dir().parent.glob(f"{PACKAGE}_*") if (t / COMPLETE).is_file()),
        key=lambda t: [int(n) for n in re.findall(r"\d+", kernel_release(t / "Makefile"))],
    )
    return trees[-1] if trees else None


def stale_pin(tree: Path) -> str | None:
    """``stale pin: 6.12.117 -> 6.12.N`` when ``tree`` is not the pinned release, else None."""
    release = kernel_release(tree / "Makefile")
    return None if release == pinned_release() else f"stale pin: {pinned_release()} -> {release}"


def build(deb: Path | None, out: Path, log: Callable[[str], None]) -> dict[str, str]:
    """Build the index into ``out`` from the tree of ``deb`` (default: the pinned package)."""
    started = time.monotonic()
    if deb is None:
        deb = PrivateApt(log=log).download(PACKAGE, VERSION)
    tree = unpack(deb, log)
    index = index_tree(tree)
    header = {
        "package": PACKAGE,
        "version": deb_control(deb)["Version"],
        "kernel": kernel_release(tree / "Makefile"),
        "sha256": sha256(deb),
    }
    write_index(out, header, index)
    names = sum(len(v) for v in index.values())
    log(
        f"wrote {out} ({out.stat().st_size // 1024} KiB): {len(index)} files, {names} names, "
        f"in {time.monotonic() - started:.0f} s"
    )
    return header


# ---------------------------------------------------------------------------------------
# Loading the committed index


@functools.cache
def _load() -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    data = importlib.resources.files(__package__).joinpath(INDEX_NAME).read_bytes()
    lines = gzip.decompress(data).decode().splitlines()
    header = dict(field.split("=", 1) for field in lines[0].lstrip("# ").split())
    index = {}
    for line in lines:
        if not line.startswith("#"):
            path, _, names = line.partition("\t")
            index[path] = frozenset(names.split())
    return header, index


def load_index() -> dict[str, frozenset[str]]:
    """The committed index: source path → names defined there."""
    return dict(_load()[1])


def header() -> dict[str, str]:
    """The committed index's header: package, version, kernel, sha256 of the .deb."""
    return dict(_load()[0])


def version() -> str:
    """The Debian version of the linux-source package the committed index was built from."""
    return _load()[0]["version"]


def exists(location: str) -> bool:
    """Whether ``"path:function"`` names a function or function-like macro defined in that file."""
    path, sep, name = location.rpartition(":")
    return bool(sep) and name in _load()[1].get(path, ())


# ---------------------------------------------------------------------------------------
# Command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m kstep.source.index", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="{tree,build,check}")
    sub.add_parser(
        "tree", help=f"fetch and unpack Debian's {PACKAGE} {VERSION} into the user cache (once); print its path"
    )
    b = sub.add_parser("build", help=f"build {INDEX_NAME} from Debian's {PACKAGE} {VERSION}")
    b.add_argument("--deb", type=Path, help=f"use this {PACKAGE} .deb instead of downloading it")
    b.add_argument("--out", type=Path, default=default_index_path(), help="index file to write")
    c = sub.add_parser(
        "check", help="exit 0 iff every path:function LOCATION is in the committed index"
    )
    c.add_argument("locations", nargs="+", metavar="LOCATION")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(f"kstep: {line}", file=sys.stderr, flush=True)

    if args.command == "check":
        missing = [loc for loc in args.locations if not exists(loc)]
        for loc in missing:
            print(f"not in Linux {header()['kernel']}: {loc}")
        return 1 if missing else 0
    if args.command == "tree":
        try:
            tree = fetch_tree(log)
        except SourceIndexError as exc:
            parser.error(str(exc))
        except (DebianFetchError, OSError) as exc:
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 1
        stale = stale_pin(tree)
        if stale:
            log(f"{stale}: release-exact checks will fail until the pin moves")
        print(tree)
        return 0
    if args.deb is not None and not args.deb.is_file():
        parser.error(f"--deb {args.deb}: no such file")
    if not args.out.parent.is_dir():
        parser.error(f"--out {args.out}: directory {args.out.parent} does not exist")
    try:
        build(args.deb, args.out, log)
    except SourceIndexError as exc:
        parser.error(str(exc))
    except (DebianFetchError, OSError) as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
