"""What the real-kernel lab needs from the host, and how to get what is missing."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kstep.lab.guest import qemu as guest, kernels
from kstep.source.debian import KEYRING

SETUP = "run 'make setup' (scripts/setup-system installs it as root)"


@dataclass(frozen=True)
class Item:
    what: str
    ok: bool
    fix: str


def _static_libc(cc: str) -> bool:
    try:
        out = subprocess.run([cc, "-print-file-name=libc.a"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return False
    return out not in ("", "libc.a") and Path(out).is_file()


def diagnose() -> list[Item]:
    items = []
    for arch, m in guest.MACHINES.items():
        items.append(Item(f"{m.qemu} ({arch} guests)", shutil.which(m.qemu) is not None, SETUP))
        items.append(Item(f"{m.cc} with a static C library ({arch} probes)", _static_libc(m.cc), SETUP))
    for tool, why in (("apt-get", "kstep lab fetch"), ("dpkg-deb", "unpacking kernels"),
                      ("pahole", "BTF for the probe module (package dwarves)")):
        items.append(Item(f"{tool} ({why})", shutil.which(tool) is not None, SETUP))
    items.append(Item(f"{KEYRING} (apt's trust in Debian's archive)", KEYRING.is_file(),
                      "install the debian-archive-keyring package"))
    fetched = kernels.load()
    what = f"Debian's 6.12 kernels in {kernels.lab_dir()}"
    items.append(Item(what if fetched is None else f"{what} ({fetched.abi})", fetched is not None,
                      "run 'kstep lab fetch' (about 300 MB of downloads, once)"))
    return items
