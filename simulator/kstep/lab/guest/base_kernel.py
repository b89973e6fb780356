"""Debian bookworm's own Linux 6.1 for x86_64 and arm64: the kernel before per-VMA locks and fork batching.

bookworm ships 6.1 (``linux-image-6.1.0-N-{amd64,arm64}-unsigned``, in ``bookworm`` and, newer, in
``bookworm-security``); its config has no ``CONFIG_PER_VMA_LOCK`` (the option came in 6.4), so every
fault takes ``mmap_lock``; and copy_present_ptes() copies PTE by PTE (folio_pte_batch() came in
6.9).  ``fetch`` takes the newest image either suite has, keeps its ``vmlinuz`` under
``<cache>/lab/base-6.1/`` with a manifest per architecture (package, version, suite, SHA256), and
does nothing when that file is already there.  Only the image: the probes are static user programs in the 6.12
lab's initramfs, which boots on 6.1 as it is (bench/launch_ab.py, bench/fork_ab.py).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from kstep.lab.guest.kernels import apt_for, deb_members, lab_dir, version_newer
from kstep.source.debian import RELEASE, DebianFetchError, sha256

SUITES = (f"{RELEASE}-security", RELEASE)
DEB_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
MANIFEST = {"amd64": "base.json", "arm64": "base-arm64.json"}  # amd64's name predates arm64


def _image(deb: str) -> re.Pattern:
    return re.compile(rf"^Package: (linux-image-(6\.1\.0-\d+)-{deb}-unsigned)$", re.M)


def base_dir() -> Path:
    return lab_dir() / "base-6.1"


def cached(arch: str = "x86_64") -> Path | None:
    """The fetched 6.1 vmlinuz for ``arch``, or None."""
    try:
        manifest = json.loads((base_dir() / MANIFEST[DEB_ARCH[arch]]).read_text())
        kernel = base_dir() / manifest["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return kernel if kernel.is_file() and sha256(kernel) == manifest["sha256"] else None


def newest(log: Callable[[str], None], arch: str = "x86_64") -> tuple[str, str, str, str]:
    """(package, version, suite, abi) of the newest 6.1 image for ``arch`` in the suites whose index reads."""
    deb, image = DEB_ARCH[arch], _image(DEB_ARCH[arch])
    best: tuple[str, str, str, str] | None = None
    for suite in SUITES:
        apt = apt_for(suite, deb, log)
        reason = apt.try_update()
        if reason is not None:
            log(f"{suite} {deb}: index unavailable, left out ({reason})")
            continue
        for path in apt.lists():
            for stanza in path.read_text(errors="replace").split("\n\n"):
                m = image.search(stanza)
                version = re.search(r"^Version: (\S+)$", stanza, re.M)
                if m and version and (best is None or version_newer(version.group(1), best[1])):
                    best = (m.group(1), version.group(1), suite, m.group(2))
    if best is None:
        raise DebianFetchError(f"no linux-image-6.1.0-*-{deb}-unsigned in {', '.join(SUITES)}")
    return best


def fetch(log: Callable[[str], None] = print, arch: str = "x86_64") -> Path:
    """The path of bookworm's newest 6.1 vmlinuz for ``arch``, downloaded the first time."""
    deb = DEB_ARCH[arch]
    have = cached(arch)
    if have is not None:
        log(f"base kernel {have.name} already in {have.parent}")
        return have
    package, version, suite, abi = newest(log, arch)
    out = base_dir()
    out.mkdir(parents=True, exist_ok=True)
    pkg = apt_for(suite, deb, log).download(package, version, dest=lab_dir() / "debs")
    name = f"vmlinuz-{abi}-{deb}"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        if deb_members(pkg, lambda n: n == f"boot/{name}", Path(tmp)) != [f"boot/{name}"]:
            raise DebianFetchError(f"{package} {version} has no boot/{name}")
        shutil.move(Path(tmp) / "boot" / name, out / name)
    pkg.unlink()
    manifest = {"package": package, "version": version, "suite": suite, "file": name, "sha256": sha256(out / name)}
    (out / MANIFEST[deb]).write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"base kernel {name} ({package} {version}, {suite}) in {out}")
    return out / name
