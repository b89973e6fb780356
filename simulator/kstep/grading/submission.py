"""Taking a submission in: its files read as data, never unpacked where it says.

A submission is a folder, a zip archive or one file.  Only the files the exercise asks for are
taken, by base name, from anywhere up to ``MAX_DEPTH`` folders down (students zip folders); each is
read with a size cap and later written by the grader into the scratch folder under its plain name,
so no path the submission chose is ever used.  Refused, each with a line saying why: archive entries
with absolute paths or ``..`` (zip-slip), symbolic links (in a folder or an archive: they are not
followed), files over the size cap, archives of too many entries, two files of one name.  A refusal
costs the tests that need that file, with that line as their message; it does not stop grading.
"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import NamedTuple

MAX_DEPTH = 4
MAX_ENTRIES = 2000


class Taken(NamedTuple):
    files: dict  # name -> bytes
    problems: list  # one line per refused entry


def take(path: Path, wanted: tuple, max_bytes: int) -> Taken:
    path = Path(path)
    if path.is_symlink():
        return Taken({}, [f"{path.name}: a symbolic link, not followed"])
    if path.is_dir():
        return _from_folder(path, wanted, max_bytes)
    if zipfile.is_zipfile(path):
        return _from_zip(path, wanted, max_bytes)
    if path.is_file():
        if path.name not in wanted:
            return Taken({}, [f"{path.name}: not one of the files this exercise takes ({', '.join(wanted)})"])
        data = _read_capped(path, max_bytes)
        return Taken({path.name: data}, []) if data is not None else Taken({}, [_too_big(path.name, max_bytes)])
    return Taken({}, [f"{path.name}: not a file, folder or zip archive"])


def _too_big(name: str, max_bytes: int) -> str:
    return f"{name}: larger than {max_bytes} bytes, refused"


def _read_capped(path: Path, max_bytes: int):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    return None if len(data) > max_bytes else data


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
            elif e.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH:
                    stack.append((Path(e.path), depth + 1))
            elif e.is_file(follow_symlinks=False) and e.name in wanted:
                _keep(found, problems, e.name, _read_capped(Path(e.path), max_bytes), rel, max_bytes)
    return Taken(found, problems)


def _from_zip(path: Path, wanted: tuple, max_bytes: int) -> Taken:
    found: dict = {}
    problems: list = []
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > MAX_ENTRIES:
                return Taken({}, [f"{path.name}: an archive of {len(infos)} entries (at most {MAX_ENTRIES})"])
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
                else:
                    with z.open(info) as f:
                        data = f.read(max_bytes + 1)
                    _keep(found, problems, parts[-1], data if len(data) <= max_bytes else None, name, max_bytes)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as e:
        problems.append(f"{path.name}: a damaged zip archive ({e})")
    return Taken(found, problems)
