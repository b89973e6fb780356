"""The user's files: every file kstep reads or writes for a user goes through here.

Inputs (scenario files, traces, observation logs) are opened with ``O_NONBLOCK`` and checked with
``fstat`` before a byte is read: a regular file is read up to a size cap for its kind, ``-`` means
standard input (the only input that may be something else, capped the same way), and anything else
-- a directory, a FIFO with no writer, ``/dev/zero``, a socket -- is refused in one line instead of
blocking or filling memory.  Text is UTF-8 whatever the locale says.  Only the reads themselves turn
``OSError`` and ``UnicodeDecodeError`` into a ``UserError``: an error anywhere else is a bug.

Outputs are written to a temporary file next to the target and renamed over it when complete, so an
interrupted or failed write leaves the user's old file as it was and no partial file behind.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from .errors import UserError

STDIN = "-"
MiB = 1 << 20
# The largest input of each kind.  A bundled scenario is a few KB; a trace of the longest run kstep
# allows (run --steps 1,000,000) of the largest model state is a few GB; a kernel-lab log of a
# long torture run is one short line per step.
SCENARIO_CAP = 1 * MiB
SMALL_CAP = 1 * MiB  # a course's config, a release manifest, a roster, Gradescope's submission metadata
TRACE_CAP = 8192 * MiB
LOG_CAP = 8192 * MiB
RECORD_CAP = 256 * MiB  # a DAMON recording (damo's record file, unpacked, or tracepoint text)
LAB_RESULT_CAP = 64 * MiB  # kstep lab show: one guest run's probe results, kilobytes to a few MB
# The longest line of a line-by-line input: a log line is under a hundred bytes, and a line is held
# whole, so one without an end (``-`` fed from /dev/zero) must stop here and not at LOG_CAP.
LINE_CAP = 64 << 10
CHUNK = 1 * MiB


def size_text(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n} bytes"


class _Capped(io.RawIOBase):
    """A file descriptor read up to ``cap`` bytes; read errors and excess are the user's problem."""

    def __init__(self, fd: int, where: str, cap: int, owned: bool) -> None:
        self.fd, self.where, self.cap, self.owned = fd, where, cap, owned
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = os.read(self.fd, min(len(buffer), self.cap + 1 - self.total))
        except OSError as e:
            raise UserError(f"{self.where}: cannot read: {e.strerror}") from None
        self.total += len(data)
        if self.total > self.cap:
            raise UserError(f"{self.where}: larger than {size_text(self.cap)}, the most kstep reads from one")
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self.owned and not self.closed:
            os.close(self.fd)
        super().close()


@contextmanager
def open_input(path: str | Path, cap: int, what: str = "file", stdin: bool = True) -> Iterator[BinaryIO]:
    """A binary stream of the user's input ``path`` (``-``: standard input, unless ``stdin`` is
    False), refused unless it is a regular file (or stdin) of at most ``cap`` bytes."""
    from_stdin = stdin and str(path) == STDIN
    where = "standard input" if from_stdin else str(path)
    if from_stdin:
        raw = _Capped(sys.stdin.fileno(), where, cap, owned=False)
    else:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as e:
            raise UserError(f"{where}: cannot read: {e.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UserError(f"{where}: cannot read: {kind_of(st.st_mode)} (a {what} must be a regular "
                                f"file{', or - for standard input' if stdin else ''})")
            if st.st_size > cap:
                raise UserError(f"{where}: {size_text(st.st_size)}, larger than {size_text(cap)}, the most "
                                f"kstep reads from one {what}")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        raw = _Capped(fd, where, cap, owned=True)
    with io.BufferedReader(raw, CHUNK) as stream:
        yield stream


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return f"is {name}"
    return "is not a regular file"


def read_text(path: str | Path, cap: int, what: str = "file") -> str:
    """The whole of a small input, decoded as UTF-8."""
    with open_input(path, cap, what) as stream:
        data = stream.read()
    return decode(data, "standard input" if str(path) == STDIN else str(path))


def decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{where}: not a text file (not UTF-8 at byte {e.start})") from None


def text_lines(stream: BinaryIO, where: str) -> Iterator[str]:
    """The stream's lines, each decoded as UTF-8 with its line ending kept, none over ``LINE_CAP``."""
    number = 0
    while line := stream.readline(LINE_CAP + 1):
        number += 1
        if len(line) > LINE_CAP:
            raise UserError(f"{where}:{number}: line {number} is longer than {LINE_CAP >> 10} KiB, the longest "
                            f"line kstep reads")
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{where}:{number}: not a text file (line {number} is not UTF-8)") from None


def text_chunks(stream: BinaryIO, where: str) -> Iterator[str]:
    """The stream decoded as UTF-8 in pieces of about ``CHUNK`` bytes (for a streaming parser)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    while True:
        data = stream.read(CHUNK)
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise UserError(f"{where}: not a text file (not UTF-8 at byte {offset + e.start})") from None
        offset += len(data)
        if text:
            yield text
        if not data:
            return


# --- outputs --------------------------------------------------------------------------------------------


def check_output(path: str | Path, flag: str, inputs: Iterable[str | Path] = ()) -> None:
    """Refuse an output the writer could not replace, or one that is one of the inputs."""
    p = Path(path)
    for given in inputs:
        if same_file(p, given):
            raise UserError(f"{flag} {path}: is the input {given}; choose another file")
    try:
        if p.is_dir():
            raise UserError(f"{flag} {path}: is a directory")
        if p.exists() and not p.is_file():
            raise UserError(f"{flag} {path}: cannot write: {kind_of(p.stat().st_mode)} (an output must be "
                            f"a regular file)")
        if not p.parent.is_dir():
            raise UserError(f"{flag} {path}: directory {p.parent} does not exist")
    except OSError as e:
        raise UserError(f"{flag} {path}: {e.strerror}") from None


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when both name one file (symlinks, ``./`` and hard links included) or one path to be."""
    if str(b) == STDIN:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they would be
        return os.path.realpath(a) == os.path.realpath(b)


def write_text(path: str | Path, text: str) -> None:
    write_chunks(path, [text])


def write_chunks(path: str | Path, chunks: Iterable[str]) -> None:
    with replacing(path) as write:
        for chunk in chunks:
            write(chunk)


@contextmanager
def replacing(path: str | Path) -> Iterator[Callable[[str | bytes], None]]:
    """Write a user-named output: replace it if present, never create missing directories.

    What the body passes to the function it is given (text goes as UTF-8) goes to a temporary file in the
    target's directory that replaces the target only once the body has finished; on any failure
    (a full disk included) or interrupt the temporary file goes and the old target stays.
    """
    target = Path(os.path.realpath(path))  # a symlink's target is replaced, not the link
    if not target.parent.is_dir():
        raise UserError(f"{path}: directory {Path(path).parent} does not exist")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror}") from None
    f = open(fd, "wb")
    try:
        yield lambda data: _write(f, data if isinstance(data, bytes) else data.encode("utf-8"), path)
        _write(f, b"", path, flush=True)
        try:
            f.close()
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except OSError as e:
            raise UserError(f"{path}: cannot write: {e.strerror}") from None
    except BaseException:
        try:
            f.close()
        except OSError:  # the bytes it still buffers cannot be written either (a full disk): they go
            pass
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _write(f, data: bytes, path, flush: bool = False) -> None:
    try:
        f.write(data)
        if flush:
            f.flush()
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror}") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
