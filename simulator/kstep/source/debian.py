"""Fetch Debian packages through a private apt configuration.

kstep needs a few files from Debian's archive (the ``linux-source-6.12`` tarball for the
source index, Debian's own kernel images for the QEMU guests). It fetches them with
``apt-get download`` but never touches the host's apt state: apt runs with ``APT_CONFIG``
pointing at a configuration under the user's cache directory that names its own
sources.list, lists, caches and (empty) parts directories. The host's
``/etc/apt/apt.conf.d`` is not read either, so the host's hooks (some of which clean
``/var/cache/apt``) never run on our behalf.

The mirror URLs are taken from the host's own Debian sources (read only), or from
``KSTEP_DEBIAN_MIRROR`` / ``KSTEP_DEBIAN_SECURITY_MIRROR``, so the project names no mirror.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

RELEASE = "bookworm"
SUITES = (RELEASE, f"{RELEASE}-updates", f"{RELEASE}-security", f"{RELEASE}-backports")
COMPONENTS = ("main",)
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
HOST_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))

# apt's own words for "this package (version) does not exist"; anything else that fails
# is taken to be the network and retried.
_MISSING_PACKAGE = (
    "Unable to locate package",
    "has no installation candidate",
    "Can't select candidate version",
    "Can't select version",
    "No packages found",
)


class DebianFetchError(RuntimeError):
    """The environment cannot provide a Debian package (no apt, no network, no such package)."""


def cache_dir() -> Path:
    """kstep's user cache directory: ``${XDG_CACHE_HOME:-~/.cache}/kstep``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kstep"


def host_arch() -> str:
    """The host's Debian architecture name (amd64, arm64, ppc64el, ...)."""
    try:
        out = subprocess.run(
            ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise DebianFetchError(f"cannot ask dpkg for the host architecture: {exc}") from None
    return out.stdout.strip()


def _source_entries(text: str) -> Iterable[tuple[str, list[str]]]:
    """(URI, suites) for each ``deb`` entry of a one-line sources.list or a deb822 .sources file."""
    if any(line.split(":", 1)[0].strip().lower() == "types" for line in text.splitlines()):
        for stanza in text.split("\n\n"):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
                continue
            for uri in fields.get("uris", "").split():
                yield uri, fields.get("suites", "").split()
        return
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            yield words[0], [words[1]]


def host_mirrors(sources: Iterable[Path] = HOST_SOURCES) -> tuple[str | None, str | None]:
    """The (archive, security) mirror URIs the host's apt already uses for Debian, if any."""
    archive = security = None
    files: list[Path] = []
    for path in sources:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".list", ".sources"))
        elif path.is_file():
            files.append(path)
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for uri, suites in _source_entries(text):
            if not uri.startswith(("http://", "https://")):
                continue
            if any(s.endswith("-security") or s.endswith("/updates") for s in suites):
                security = security or uri
            elif suites:
                archive = archive or uri
    return archive, security


class PrivateApt:
    """apt-get for Debian ``bookworm`` with a configuration of its own under ``root``."""

    def __init__(
        self,
        root: Path | None = None,
        architectures: Iterable[str] | None = None,
        mirror: str | None = None,
        security_mirror: str | None = None,
        attempts: int = 3,
        log: Callable[[str], None] | None = None,
        suites: Iterable[str] = SUITES,
    ) -> None:
        self.root = root or cache_dir() / "apt"
        self.architectures = tuple(architectures or (host_arch(),))
        self.suites = tuple(suites)
        # A mirror pair is taken from one place: the arguments, the environment, or the host.
        if not mirror:
            mirror = os.environ.get("KSTEP_DEBIAN_MIRROR")
            security_mirror = security_mirror or os.environ.get("KSTEP_DEBIAN_SECURITY_MIRROR")
        if not mirror:
            mirror, host_security = host_mirrors()
            security_mirror = security_mirror or host_security
        self.mirror, self.security_mirror = mirror, security_mirror
        self.attempts = attempts
        self.log = log or (lambda line: print(f"kstep: {line}", file=sys.stderr, flush=True))

    @property
    def config_file(self) -> Path:
        return self.root / "etc" / "apt.conf"

    def sources_list(self) -> str:
        """The private sources.list: its bookworm suites, signed by Debian's archive keyring."""
        if not self.mirror:
            raise DebianFetchError(
                "no Debian mirror known: the host's apt sources name none; set KSTEP_DEBIAN_MIRROR"
            )
        # Debian publishes security updates beside the archive, as ".../debian-security".
        security = self.security_mirror or self.mirror.rstrip("/") + "-security"
        opts = f"[signed-by={KEYRING}]"
        comps = " ".join(COMPONENTS)
        lines = [
            f"deb {opts} {security if suite.endswith('-security') else self.mirror} {suite} {comps}"
            for suite in self.suites
        ]
        return "\n".join(lines) + "\n"

    def apt_conf(self) -> str:
        """The private apt.conf; read through APT_CONFIG, it also keeps apt off the host's files."""
        etc, state, cache = self.root / "etc", self.root / "state", self.root / "cache"
        settings = [
            ("Dir::Etc", f"{etc}/"),
            ("Dir::Etc::main", "apt.conf"),
            ("Dir::Etc::Parts", "apt.conf.d"),
            ("Dir::Etc::SourceList", "sources.list"),
            ("Dir::Etc::SourceParts", "sources.list.d"),
            ("Dir::Etc::Preferences", "preferences"),
            ("Dir::Etc::PreferencesParts", "preferences.d"),
            ("Dir::Etc::Trusted", "trusted.gpg"),
            ("Dir::Etc::TrustedParts", "trusted.gpg.d"),
            ("Dir::State", f"{state}/"),
            ("Dir::State::Lists", "lists/"),
            ("Dir::State::status", f"{state}/status"),
            ("Dir::Cache", f"{cache}/"),
            ("Dir::Cache::archives", "archives/"),
            ("APT::Architecture", self.architectures[0]),
            ("Acquire::Languages", "none"),
            ("Acquire::Retries", "3"),
        ]
        if os.geteuid() == 0:
            # apt drops root to _apt for downloads, and _apt cannot write into root's cache.
            settings.append(("APT::Sandbox::User", "root"))
        lines = [f'{key} "{value}";' for key, value in settings]
        archs = " ".join(f'"{a}";' for a in self.architectures)
        lines.append(f"APT::Architectures {{ {archs} }};")
        return "\n".join(lines) + "\n"

    def write_config(self) -> Path:
        """Create the private directories and configuration; returns the apt.conf path."""
        if not KEYRING.is_file():
            raise DebianFetchError(
                f"{KEYRING} is missing: install the debian-archive-keyring package"
            )
        etc = self.root / "etc"
        for sub in ("apt.conf.d", "sources.list.d", "preferences.d", "trusted.gpg.d"):
            (etc / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "state" / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "state" / "status").touch()
        (etc / "sources.list").write_text(self.sources_list())
        self.config_file.write_text(self.apt_conf())
        return self.config_file

    def _run(self, args: list[str], what: str, cwd: Path | None = None) -> str:
        """Run an apt command with the private configuration, retrying network failures."""
        if shutil.which(args[0]) is None:
            raise DebianFetchError(f"{args[0]} not found: kstep fetches Debian packages with apt")
        env = dict(os.environ, APT_CONFIG=str(self.write_config()), LC_ALL="C")
        for attempt in range(1, self.attempts + 1):
            proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
            # apt-get update only warns when an index cannot be fetched, and exits 0.
            errors = [
                line
                for line in proc.stderr.splitlines()
                if line.startswith(("E:", "W: Failed to fetch"))
            ]
            if proc.returncode == 0 and not errors:
                return proc.stdout
            # The first error names the cause ("W: Failed to fetch URL  File has unexpected size");
            # apt's closing "E: Some index files failed to download" does not.
            reason = (
                errors or proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
            )[0]
            if any(marker in proc.stderr for marker in _MISSING_PACKAGE):
                raise DebianFetchError(f"{what}: not in the archive ({reason})")
            if attempt < self.attempts:
                self.log(f"{what}: failed ({reason}); retry {attempt + 1} of {self.attempts}")
                time.sleep(2 * attempt)
        raise DebianFetchError(f"{what}: {reason} (after {self.attempts} attempts)")

    def update(self) -> None:
        """Download the package lists of its suites into the private state directory."""
        self.log(
            f"apt update: {', '.join(self.suites)} ({', '.join(self.architectures)}) into {self.root}"
        )
        self._run(["apt-get", "update"], "apt update")

    def try_update(self) -> str | None:
        """Like update(), but a failed index is returned as its reason instead of raised.

        apt's update is transactional per suite: one index that fails (Debian's mirrors
        sometimes serve a Packages file that does not match the signed Release while they
        sync) discards the whole suite's new lists.  A caller that keeps one state per
        (suite, architecture) loses only that pair and can decide whether it needs it.
        """
        try:
            self.update()
        except DebianFetchError as exc:
            return str(exc)
        return None

    def lists(self) -> list[Path]:
        """The Packages files the last successful update left in the private state."""
        return sorted((self.root / "state" / "lists").glob("*_Packages"))

    def _have_lists(self) -> bool:
        return any((self.root / "state" / "lists").glob("*_Packages*"))

    def record(self, package: str, version: str | None = None) -> dict[str, str]:
        """The archive's record of ``package`` (its candidate, or ``version``)."""
        if not self._have_lists():
            self.update()
        spec = f"{package}={version}" if version else package
        text = self._run(["apt-cache", "show", "--no-all-versions", spec], f"look up {spec}")
        fields: dict[str, str] = {}
        for line in text.split("\n\n", 1)[0].splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Filename" not in fields:
            raise DebianFetchError(f"look up {spec}: not in the archive")
        return fields

    def download(self, package: str, version: str | None = None, dest: Path | None = None) -> Path:
        """Fetch one .deb (the candidate, or ``version``) into ``dest``; returns its path.

        A file already there with the archive's SHA256 is reused.
        """
        rec = self.record(package, version)
        dest = dest or cache_dir() / "debs"
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / Path(rec["Filename"]).name
        if target.is_file() and sha256(target) == rec.get("SHA256"):
            self.log(f"using cached {target}")
            return target
        self.log(f"downloading {package} {rec['Version']} into {dest}")
        with tempfile.TemporaryDirectory(dir=dest) as tmp:
            self._run(
                ["apt-get", "download", f"{package}={rec['Version']}"],
                f"download {package}",
                cwd=Path(tmp),
            )
            debs = list(Path(tmp).glob("*.deb"))
            if len(debs) != 1:
                raise DebianFetchError(f"download {package}: apt-get left {len(debs)} .deb files")
            if rec.get("SHA256") and sha256(debs[0]) != rec["SHA256"]:
                raise DebianFetchError(
                    f"download {package}: SHA256 does not match the archive's record"
                )
            debs[0].replace(target)
        return target


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
