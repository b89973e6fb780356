"""Debian bookworm's own Linux 6.1 for x86_64: the kernel before per-VMA locks, for the launch A/B.

bookworm ships 6.1 (``linux-image-6.1.0-N-amd64-unsigned``, in ``bookworm`` and, newer, in
``bookworm-security``); its config has no ``CONFIG_PER_VMA_LOCK`` (the option came in 6.4), so every
fault takes ``mmap_lock``.  ``fetch`` takes the newest image either suite has, keeps its ``vmlinuz``
under ``<cache>/lab/base-6.1/`` with a manifest (package, version, suite, SHA256), and does nothing
when that file is already there.  Only the image: the launch probe is a static user program in the
6.12 lab's initramfs, which boots on 6.1 as it is (bench/launch_ab.py).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from kstep.lab.guest.kernels import apt_for, deb_members, lab_dir, version_newer
from kstep.lab.source.debian import RELEASE, DebianFetchError, sha256

SUITES = (f"{RELEASE}-security", RELEASE)
IMAGE = re.compile(r"^Package: (linux-image-(6\.1\.0-\d+)-amd64-unsigned)$", re.M)
MANIFEST = "base.json"


def base_dir() -> Path:
    return lab_dir() / "base-6.1"


def cached() -> Path | None:
    """The fetched 6.1 vmlinuz, or None."""
    try:
        manifest = json.loads((base_dir() / MANIFEST).read_text())
        kernel = base_dir() / manifest["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return kernel if kernel.is_file() and sha256(kernel) == manifest["sha256"] else None


def newest(log: Callable[[str], None]) -> tuple[str, str, str, str]:
    """(package, version, suite, abi) of the newest 6.1 amd64 image in the suites whose index reads."""
    best: tuple[str, str, str, str] | None = None
    for suite in SUITES:
        apt = apt_for(suite, "amd64", log)
        reason = apt.try_update()
        if reason is not None:
            log(f"{suite} amd64: index unavailable, left out ({reason})")
            continue
        for path in apt.lists():
            for stanza in path.read_text(errors="replace").split("\n\n"):
                m = IMAGE.search(stanza)
                version = re.search(r"^Version: (\S+)$", stanza, re.M)
                if m and version and (best is None or version_newer(version.group(1), best[1])):
                    best = (m.group(1), version.group(1), suite, m.group(2))
    if best is None:
        raise DebianFetchError(f"no linux-image-6.1.0-*-amd64-unsigned in {', '.join(SUITES)}")
    return best


def fetch(log: Callable[[str], None] = print) -> Path:
    """The path of bookworm's newest 6.1 amd64 vmlinuz, downloaded the first time."""
    have = cached()
    if have is not None:
        log(f"base kernel {have.name} already in {have.parent}")
        return have
    package, version, suite, abi = newest(log)
    out = base_dir()
    out.mkdir(parents=True, exist_ok=True)
    deb = apt_for(suite, "amd64", log).download(package, version, dest=lab_dir() / "debs")
    name = f"vmlinuz-{abi}-amd64"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        if deb_members(deb, lambda n: n == f"boot/{name}", Path(tmp)) != [f"boot/{name}"]:
            raise DebianFetchError(f"{package} {version} has no boot/{name}")
        shutil.move(Path(tmp) / "boot" / name, out / name)
    deb.unlink()
    manifest = {"package": package, "version": version, "suite": suite, "file": name, "sha256": sha256(out / name)}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"base kernel {name} ({package} {version}, {suite}) in {out}")
    return out / name
