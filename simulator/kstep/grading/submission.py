"""Taking a submission in: its files read as data, never unpacked where it says.

A submission is a folder, a zip archive or one file.  Only the files the exercise asks for are
taken, by base name, from anywhere up to ``MAX_DEPTH`` folders down (students zip folders); each is
read with a size cap and later written by the grader into the scratch folder under its plain name,
so no path the submission chose is ever used.  Every file is opened the way kstep opens any input
(files.open_input): without blocking, and refused unless ``fstat`` says it is a regular file, so a
FIFO, a device (``/dev/zero``), a socket or a folder where a file belongs costs one line, never a
hang or a memory flood.  Refused as well, each with a line saying why: archive entries with absolute
paths or ``..`` (zip-slip), symbolic links (in a folder or an archive: they are not followed), files
over the size cap, archives over ``ARCHIVE_CAP`` or of too many entries, two files of one name, and
archive members whose compressed data is damaged or compressed in a way whose expansion cannot be
capped (bzip2).  A refusal costs the tests that need that file, with that line as their message; it
does not stop grading.

A member is decompressed a little at a time and no further than the size cap: zipfile inflates a
deflate member to at most the length asked, and an LZMA member from at most ``zipfile``'s 4 KiB of
compressed input per read (LZMA expands that to a few tens of MiB at worst).  A bzip2 member can
expand a few hundred bytes into gigabytes in one step, so it is refused rather than read.
"""

from __future__ import annotations

import io
import lzma
import os
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import NamedTuple, Optional

from ..errors import UserError, shorten
from ..files import MiB, open_input

MAX_DEPTH = 4
MAX_ENTRIES = 2000
ARCHIVE_CAP = 32 * MiB  # the largest submission archive (or single file) read at all
READ = 4096  # bytes of a member asked for at a time (zipfile's own smallest read)
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_LZMA: "LZMA"}
# What a damaged member raises while it is read: a bad stream, a wrong CRC, a cut-off archive.
DAMAGED = (zlib.error, lzma.LZMAError, zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError)


class Taken(NamedTuple):
    files: dict  # name -> bytes
    problems: list  # one line per refused entry


def take(path: Path, wanted: tuple, max_bytes: int, as_name: Optional[str] = None) -> Taken:
    """The wanted files of the submission at ``path``; ``as_name``: a single file (a batch's
    ``<id>.py``) is taken as this file of the exercise whatever its own name."""
    path = Path(path)
    try:
        st = path.lstat()
    except OSError as e:
        return Taken({}, [f"{path.name}: cannot read: {e.strerror}"])
    if stat.S_ISLNK(st.st_mode):
        return Taken({}, [f"{path.name}: a symbolic link, not followed"])
    if stat.S_ISDIR(st.st_mode):
        if as_name is not None:
            return Taken({}, [f"{path.name}: is a directory (a file was expected)"])
        return _from_folder(path, wanted, max_bytes)
    try:
        data = _read(path, ARCHIVE_CAP, "submission")
    except UserError as e:
        return Taken({}, [str(e)])
    if zipfile.is_zipfile(io.BytesIO(data)):
        return _from_zip(io.BytesIO(data), path.name, wanted, max_bytes)
    name = as_name or path.name
    if name not in wanted:
        return Taken({}, [f"{path.name}: not one of the files this exercise takes ({', '.join(wanted)})"])
    return Taken({name: data}, []) if len(data) <= max_bytes else Taken({}, [_too_big(path.name, max_bytes)])


def _too_big(name: str, max_bytes: int) -> str:
    return f"{name}: larger than {max_bytes} bytes, refused"


def _read(path: Path, cap: int, what: str) -> bytes:
    with open_input(path, cap, what, stdin=False) as f:
        return f.read()


def _keep(found: dict, problems: list, name: str, data, where: str, max_bytes: int) -> None:
    if data is None:
        problems.append(_too_big(where, max_bytes))
    elif name in found:
        problems.append(f"{where}: a second {name}, refused (hand in one)")
    else:
        found[name] = data


def _from_folder(root: Path, wanted: tuple, max_bytes: int) -> Taken:
    found: dict = {}
    problems: list = []
    seen = 0
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        for e in sorted(os.scandir(folder), key=lambda e: e.name):
            seen += 1
            if seen > MAX_ENTRIES:
                return Taken(found, problems + [f"more than {MAX_ENTRIES} entries: the rest ignored"])
            rel = os.path.relpath(e.path, root)
            if e.is_symlink():
                problems.append(f"{rel}: a symbolic link, not followed")
            elif e.name in wanted:
                if e.is_dir(follow_symlinks=False):
                    problems.append(f"{rel}: is a directory (a file was expected)")
                    continue
                try:
                    _keep(found, problems, e.name, _read(Path(e.path), max_bytes, "submitted file"), rel, max_bytes)
                except UserError as err:
                    problems.append(str(err).replace(e.path, rel, 1))
            elif e.is_dir(follow_symlinks=False) and depth < MAX_DEPTH:
                stack.append((Path(e.path), depth + 1))
    return Taken(found, problems)


def _member(z: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> Optional[bytes]:
    """The member's bytes, or None once it passes ``max_bytes``: never decompressed further."""
    data = bytearray()
    with z.open(info) as f:
        while len(data) <= max_bytes:
            chunk = f.read(READ)
            if not chunk:
                return bytes(data)
            data += chunk
    return None


def _from_zip(stream: io.BytesIO, archive: str, wanted: tuple, max_bytes: int) -> Taken:
    found: dict = {}
    problems: list = []
    try:
        with zipfile.ZipFile(stream) as z:
            infos = z.infolist()
            if len(infos) > MAX_ENTRIES:
                return Taken({}, [f"{archive}: an archive of {len(infos)} entries (at most {MAX_ENTRIES})"])
            for info in infos:
                name = info.filename
                parts = PurePosixPath(name.replace("\\", "/")).parts
                if name.startswith(("/", "\\")) or (parts and parts[0].endswith(":")):
                    problems.append(f"{name}: an absolute path in the archive, refused")
                elif ".." in parts:
                    problems.append(f"{name}: leaves the submission folder (zip-slip), refused")
                elif stat.S_ISLNK(info.external_attr >> 16):
                    problems.append(f"{name}: a symbolic link in the archive, refused")
                elif info.is_dir() or not parts or parts[-1] not in wanted:
                    continue
                elif len(parts) > MAX_DEPTH + 1:
                    problems.append(f"{name}: more than {MAX_DEPTH} folders deep, ignored")
                elif info.compress_type not in METHODS:
                    problems.append(f"{name}: compressed with zip method {info.compress_type}, refused (kstep "
                                    f"takes {', '.join(METHODS.values())}: zip it again with your system's zip)")
                else:
                    try:
                        data = _member(z, info, max_bytes)
                    except DAMAGED as e:
                        why = shorten(str(e) or type(e).__name__, 120)
                        problems.append(f"{name}: damaged in the archive ({why}), refused")
                        continue
                    _keep(found, problems, parts[-1], data, name, max_bytes)
    except DAMAGED + (NotImplementedError,) as e:
        problems.append(f"{archive}: a damaged zip archive ({shorten(str(e), 120)})")
    return Taken(found, problems)
