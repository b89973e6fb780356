"""Debian's own Linux 6.12 kernels for the real-kernel lab: resolve one version, fetch, cache.

The lab boots the same kernel release V on amd64, arm64 and ppc64el.  V is the newest 6.12.N
for which the archive has, on every architecture, the kernel image, the flavour's headers, the
shared ``-common`` headers, and the host's ``linux-kbuild`` (the probe module is built against
the headers on the host).  Images come from ``bookworm-security`` or ``bookworm-backports``;
which suite carries which architecture changes over time, so nothing here names a version.

Each (suite, architecture) pair gets its own private apt state (see :mod:`kstep.source.debian`):
apt discards a whole suite when one of its indexes fails to download, and Debian's mirrors do
serve a mismatching index while they sync.  A pair whose index failed is left out of the
resolution, so a failure V does not need costs nothing.

What is kept, under ``<cache>/lab/<V>/``: each architecture's kernel file, its config and a
static busybox, and the headers tree (the ``.deb`` files are dropped once extracted).  A
manifest records V, the suites and each package's version and SHA256; ``fetch`` with a complete
manifest does nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kstep.source.debian import RELEASE, DebianFetchError, PrivateApt, cache_dir
from kstep.source.index import pinned_release

KERNEL_SUITES = (f"{RELEASE}-security", f"{RELEASE}-backports")  # preferred first
BASE_SUITES = (RELEASE,)  # busybox-static
HOST = "amd64"  # the headers' kbuild tools (fixdep, modpost) run on the host
SERIES = "6.12"
MANIFEST = "kernels.json"


@dataclass(frozen=True)
class Arch:
    """One lab architecture: kstep's name, Debian's, the kernel flavour and its boot file."""

    name: str
    debian: str
    flavour: str
    image: str  # the image package, {abi} for the ABI name, e.g. 6.12.117+deb12
    kernel_file: str  # its file under boot/

    def packages(self, abi: str) -> tuple[str, str]:
        return self.image.format(abi=abi), f"linux-headers-{abi}-{self.flavour}"


# The 4K-page ppc64el flavour, so 4K pages, 64K mTHP and 2M THP mean the same on every
# architecture; -unsigned on amd64 and arm64 is the same kernel without the Secure Boot signature.
ARCHES: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch("x86_64", "amd64", "amd64", "linux-image-{abi}-amd64-unsigned", "vmlinuz-{abi}-amd64"),
        Arch("arm64", "arm64", "arm64", "linux-image-{abi}-arm64-unsigned", "vmlinuz-{abi}-arm64"),
        Arch(
            "ppc64le",
            "ppc64el",
            "powerpc64le",
            "linux-image-{abi}-powerpc64le",
            "vmlinux-{abi}-powerpc64le",
        ),
    )
}

_ABI = re.compile(r"^linux-image-(6\.12\.(\d+)\+deb\d+)-")
_WANTED = re.compile(r"^(linux-(image|headers|kbuild)-6\.12\.|busybox-static$)")


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    suite: str
    arch: str  # the Debian architecture of the state it was found in
    filename: str
    sha256: str


Index = Mapping[tuple[str, str], Mapping[str, Package]]  # (suite, debian arch) -> name -> package


def parse_packages(text: str, suite: str, arch: str) -> dict[str, Package]:
    """The lab's packages in one ``Packages`` index (the newest version of each name)."""
    found: dict[str, Package] = {}
    for stanza in text.split("\n\n"):
        if not stanza.startswith("Package: ") and "\nPackage: " not in stanza:
            continue
        fields = {}
        for line in stanza.splitlines():
            if line[:1].strip() and ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        name = fields.get("Package", "")
        if not _WANTED.match(name) or "Filename" not in fields:
            continue
        pkg = Package(name, fields["Version"], suite, arch, fields["Filename"], fields.get("SHA256", ""))
        old = found.get(name)
        if old is None or version_newer(pkg.version, old.version):
            found[name] = pkg
    return found


def version_newer(a: str, b: str) -> bool:
    """Debian's version order: is ``a`` newer than ``b``?"""
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


@dataclass(frozen=True)
class Resolution:
    abi: str  # e.g. 6.12.117+deb12
    packages: tuple[tuple[str, Package], ...]  # (what for: an arch name or "headers"), package
    passed_over: tuple[str, ...] = ()  # each newer ABI, with the first packages it lacks

    @property
    def suites(self) -> dict[str, str]:
        """Where each architecture's kernel image comes from."""
        return {
            role: p.suite for role, p in self.packages if p.name.startswith("linux-image-")
        }


def _find(index: Index, name: str, arches: Iterable[str], suites: Iterable[str]) -> Package | None:
    for suite in suites:
        for arch in arches:
            pkg = index.get((suite, arch), {}).get(name)
            if pkg is not None:
                return pkg
    return None


def resolve(index: Index) -> Resolution:
    """The newest 6.12 ABI whose every needed package is in ``index``; DebianFetchError if none.

    ``index`` holds only the (suite, architecture) pairs whose lists could be read: a failed
    index is simply absent, and a version that needs it is passed over.
    """
    abis: dict[str, int] = {}
    for (suite, _arch), packages in index.items():
        if suite in KERNEL_SUITES:
            for name in packages:
                m = _ABI.match(name)
                if m:
                    abis[m.group(1)] = int(m.group(2))
    missing_for: dict[str, list[str]] = {}
    for abi in sorted(abis, key=abis.__getitem__, reverse=True):
        chosen: list[tuple[str, Package]] = []
        missing: list[str] = []
        for arch in ARCHES.values():
            for name in arch.packages(abi):
                pkg = _find(index, name, [arch.debian], KERNEL_SUITES)
                (chosen.append((arch.name, pkg)) if pkg else missing.append(f"{name}:{arch.debian}"))
            box = _find(index, "busybox-static", [arch.debian], BASE_SUITES + KERNEL_SUITES)
            (chosen.append((arch.name, box)) if box else missing.append(f"busybox-static:{arch.debian}"))
        all_arches = [a.debian for a in ARCHES.values()]
        for name, arches in ((f"linux-headers-{abi}-common", all_arches), (f"linux-kbuild-{abi}", [HOST])):
            pkg = _find(index, name, arches, KERNEL_SUITES)
            (chosen.append(("headers", pkg)) if pkg else missing.append(name))
        if not missing:
            return Resolution(abi, tuple(chosen),
                              tuple(f"{newer} (lacks {', '.join(m[:2])})" for newer, m in missing_for.items()))
        missing_for[abi] = missing
    if not abis:
        raise DebianFetchError(f"no Linux {SERIES} kernel image in {', '.join(KERNEL_SUITES)}")
    newest = max(abis, key=abis.__getitem__)
    raise DebianFetchError(
        f"no Linux {SERIES} version has every package the lab needs (newest, {newest}, "
        f"lacks {', '.join(missing_for[newest][:4])})"
    )


# ---------------------------------------------------------------------------------------
# The private apt states and the cache


def apt_for(suite: str, arch: str, log: Callable[[str], None]) -> PrivateApt:
    """The private apt state of one (suite, Debian architecture) pair."""
    return PrivateApt(
        root=cache_dir() / "apt-lab" / f"{suite}_{arch}", architectures=[arch], suites=[suite], log=log
    )


def resolution_notes(res: Resolution, failed: Mapping[str, str]) -> list[str]:
    """What fetch says of a resolution besides its ABI: each newer release it passed over and what that
    lacked (with the indexes that failed to download), and that the kernels are not the source release
    the code pane, the step texts and the default variants follow, when they are not."""
    notes = []
    if res.passed_over:
        notes.append(f"passed over {'; '.join(res.passed_over)}"
                     + (f", with {', '.join(failed)} left out" if failed else ""))
    if res.abi.split("+", 1)[0] != pinned_release():
        notes.append(f"{res.abi} is not the source release {pinned_release()} (code pane, step texts, default "
                     "variants): kstep lab show names what differs")
    return notes


def read_index(log: Callable[[str], None]) -> tuple[dict[tuple[str, str], dict[str, Package]], dict]:
    """Update every (suite, architecture) state; the index of those that worked, and the failures."""
    index: dict[tuple[str, str], dict[str, Package]] = {}
    failed: dict[str, str] = {}
    for suite in KERNEL_SUITES + BASE_SUITES:
        for arch in ARCHES.values():
            apt = apt_for(suite, arch.debian, log)
            reason = apt.try_update()
            if reason is not None:
                log(f"{suite} {arch.debian}: index unavailable, left out ({reason})")
                failed[f"{suite}/{arch.debian}"] = reason
                continue
            packages: dict[str, Package] = {}
            for path in apt.lists():
                packages.update(parse_packages(path.read_text(errors="replace"), suite, arch.debian))
            index[(suite, arch.debian)] = packages
    return index, failed


def lab_dir() -> Path:
    return cache_dir() / "lab"


@dataclass(frozen=True)
class Kernels:
    """A fetched kernel set: V, where each file is, and the manifest it was read from."""

    abi: str
    root: Path
    manifest: dict

    def kernel(self, arch: str) -> Path:
        return self.root / arch / "kernel"

    def config(self, arch: str) -> Path:
        return self.root / arch / "config"

    def busybox(self, arch: str) -> Path:
        return self.root / arch / "busybox"

    def headers(self, arch: str) -> Path:
        """The flavour's kbuild directory (make -C here M=... modules)."""
        return self.root / "headers" / "usr" / "src" / f"linux-headers-{self.abi}-{ARCHES[arch].flavour}"

    def release(self, arch: str) -> str:
        """The ``uname -r`` the kernel reports."""
        return f"{self.abi}-{ARCHES[arch].flavour}"

    def package_version(self, arch: str) -> str:
        return next(p["version"] for p in self.manifest["packages"] if p["for"] == arch and p["name"].startswith("linux-image-"))

    def missing(self) -> list[Path]:
        wanted = [f(a) for a in ARCHES for f in (self.kernel, self.config, self.busybox, self.headers)]
        return [p for p in wanted if not p.exists()]


def load(root: Path | None = None) -> Kernels | None:
    """The kernels ``fetch`` left in the cache, or None if there are none (or they are incomplete)."""
    path = (root or lab_dir()) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        kernels = Kernels(manifest["abi"], path.parent / manifest["abi"], manifest)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None if kernels.missing() else kernels


# Python versions with extraction filters warn without one; "tar" keeps Debian's relative symlinks.
_TAR_FILTER = {"filter": "tar"} if hasattr(tarfile, "data_filter") else {}


def deb_members(deb: Path, wanted: Callable[[str], bool], dest: Path) -> list[str]:
    """Extract the members of a .deb's data that ``wanted`` accepts into ``dest``."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    names = []
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if wanted(name):
                tar.extract(member, dest, **_TAR_FILTER)
                names.append(name)
    if proc.wait() != 0:
        raise DebianFetchError(f"dpkg-deb could not read {deb}")
    return names


def _install(role: str, pkg: Package, deb: Path, work: Path, abi: str) -> None:
    """Keep what the lab uses of one downloaded package."""
    if role == "headers" or pkg.name.startswith("linux-headers-"):
        deb_members(deb, lambda n: n.startswith(("usr/src/", "usr/lib/linux-kbuild")), work / "headers")
        return
    arch = ARCHES[role]
    out = work / role
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        if pkg.name == "busybox-static":
            deb_members(deb, lambda n: n == "bin/busybox", Path(tmp))
            shutil.move(Path(tmp) / "bin" / "busybox", out / "busybox")
            return
        kernel = f"boot/{arch.kernel_file.format(abi=abi)}"
        config = f"boot/config-{abi}-{arch.flavour}"
        got = deb_members(deb, lambda n: n in (kernel, config), Path(tmp))
        if len(got) != 2:
            raise DebianFetchError(f"{pkg.name} has no {kernel} and {config}")
        shutil.move(Path(tmp) / kernel, out / "kernel")
        shutil.move(Path(tmp) / config, out / "config")


def _fix_headers(headers: Path) -> None:
    """The flavour Makefile includes ``-common`` by absolute path: point it into the cache."""
    src = headers / "usr" / "src"
    for makefile in src.glob("linux-headers-*/Makefile"):
        text = makefile.read_text()
        fixed = re.sub(r"^include /\S*/(linux-headers-\S+/Makefile)$", rf"include {src}/\1", text, flags=re.M)
        if fixed != text:
            makefile.write_text(fixed)


def fetch(refresh: bool = False, log: Callable[[str], None] = print) -> Kernels:
    """Resolve V, download and keep what the lab needs; a complete cache is reused as it is."""
    cached = load()
    if cached is not None and not refresh:
        log(f"kernels {cached.abi} already in {cached.root}")
        return cached
    started = time.monotonic()
    index, failed = read_index(log)
    res = resolve(index)
    log(f"resolved {res.abi}: " + ", ".join(f"{a} from {s}" for a, s in res.suites.items()))
    for note in resolution_notes(res, failed):
        log(note)
    root = lab_dir()
    final = root / res.abi
    if cached is not None and cached.abi == res.abi:
        log(f"kernels {res.abi} already in {final}")
        return cached
    work = root / f"{res.abi}.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    debs = root / "debs"
    try:
        for role, pkg in res.packages:
            deb = apt_for(pkg.suite, pkg.arch, log).download(pkg.name, pkg.version, dest=debs)
            _install(role, pkg, deb, work, res.abi)
            deb.unlink()
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(final, ignore_errors=True)
    work.rename(final)
    _fix_headers(final / "headers")  # after the rename: the path it writes is absolute
    manifest = {
        "abi": res.abi,
        "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "suites": res.suites,
        "unavailable_indexes": failed,
        "packages": [
            {"for": role, "name": p.name, "version": p.version, "suite": p.suite, "sha256": p.sha256}
            for role, p in res.packages
        ],
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    for old in root.iterdir():
        if old.is_dir() and old.name.startswith(SERIES) and old != final:
            shutil.rmtree(old)
    # The package lists (about 400 MB, most of it bookworm's main index for busybox) are only
    # needed to resolve and download; a --refresh fetches them again.
    shutil.rmtree(cache_dir() / "apt-lab", ignore_errors=True)
    log(f"kernels {res.abi} in {final} ({time.monotonic() - started:.0f} s)")
    return Kernels(res.abi, final, manifest)
