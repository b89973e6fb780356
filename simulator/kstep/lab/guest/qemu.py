"""Boot Debian's Linux 6.12 under qemu-system with the probe initramfs, and read what it says.

One boot: build the guest programs for the architecture (static, with Debian's cross
compilers), pack them with busybox and ``kernel-lab/guest/init`` into a newc cpio, boot the
fetched kernel under TCG with the machine flags measured to be fast (and, on x86, to keep the
real qspinlock: ``-cpu max`` sets the hypervisor CPUID bit, and the kernel then swaps the
qspinlock for ``virt_spin_lock()``'s test-and-set lock), read KTAP from the serial console,
kill the guest at a timeout, retry once when the end marker is missing, and keep the crash
report when the kernel dies.  Each boot puts a fresh nonce on the kernel command line; /init
echoes it, so a result always comes from the boot that printed it.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kstep.errors import UserError
from kstep.files import LAB_RESULT_CAP, read_text
from kstep.lab.guest import ktap
from kstep.lab.guest.kernels import Kernels, lab_dir

GUEST = Path(__file__).resolve().parents[4] / "kernel-lab" / "guest"
PROBES = ("vma", "fork", "damon", "qspin", "launch")  # what a run with no probe named runs
# Run only when named: damoncpu monitors three targets for 10 s each (bench/damon_cpu.py repeats it).
OPT_IN = ("damoncpu",)
KNOWN = PROBES + OPT_IN
SMP = 3  # the qspinlock probe runs nproc - 1 lockers and a sampler, each on its own CPU: two lockers here
TIMEOUT_S = 600  # every probe: 40-50 s on an idle 2-core host, 60-220 s measured on a busy one
RESULT_FORMAT = "kstep-lab-result"
RESULT_VERSION = 1


@dataclass(frozen=True)
class Machine:
    qemu: str
    args: tuple[str, ...]
    console: str
    cc: str


MACHINES = {
    "x86_64": Machine("qemu-system-x86_64", ("-M", "q35", "-cpu", "max,-hypervisor"), "ttyS0", "gcc"),
    # QEMU's default pointer authentication (QARMA5) makes boots 2-3 times slower under TCG.
    "arm64": Machine(
        "qemu-system-aarch64", ("-M", "virt", "-cpu", "max,pauth-impdef=on"), "ttyAMA0",
        "aarch64-linux-gnu-gcc",
    ),
    # VOF instead of SLOF firmware boots in a third of the time; the caps TCG cannot provide
    # are declared broken so QEMU does not warn about them.
    "ppc64le": Machine(
        "qemu-system-ppc64",
        ("-M", "pseries,x-vof=on,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off"),
        "hvc0",
        "powerpc64le-linux-gnu-gcc",
    ),
}
COMMON_ARGS = ("-m", "1G", "-nographic", "-no-reboot", "-nic", "none")
# The probe module is built with the headers' kbuild: ARCH and the cross compiler per architecture.
MODULE_MAKE = {
    "x86_64": ("x86", ""),
    "arm64": ("arm64", "aarch64-linux-gnu-"),
    "ppc64le": ("powerpc", "powerpc64le-linux-gnu-"),
}


class LabError(Exception):
    """A boot that did not give a result: the kernel crashed, hung, or is not the one fetched."""

    def __init__(self, message: str, excerpt: str = "") -> None:
        super().__init__(message)
        self.excerpt = excerpt


def check_request(arch: str, probes: Sequence[str]) -> None:
    if arch not in MACHINES:
        raise UserError(f"unknown architecture {arch!r} (choose from {', '.join(MACHINES)}, all)")
    for p in probes:
        if p not in KNOWN:
            raise UserError(f"unknown probe {p!r} (choose from {', '.join(KNOWN)})")


# ---------------------------------------------------------------------------------------
# The initramfs


def _newc(entries: Sequence[tuple[str, int, bytes, tuple[int, int]]]) -> bytes:
    """A newc cpio archive of (name, mode, data, (rdev major, minor)) entries.

    Written here rather than by cpio(1) so the device nodes need no mknod (and no root).
    """
    out = bytearray()
    for ino, (name, mode, data, (major, minor)) in enumerate(
        list(entries) + [("TRAILER!!!", 0, b"", (0, 0))], start=1
    ):
        encoded = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, major, minor, len(encoded), 0)
        out += b"070701" + b"".join(b"%08x" % f for f in fields) + encoded
        out += b"\0" * (-len(out) % 4) + data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def _compile(arch: str, source: str, out: Path, extra: Sequence[str] = ()) -> Path:
    cc = MACHINES[arch].cc
    if shutil.which(cc) is None:
        raise UserError(f"{cc} not found: run 'make setup' (kstep lab doctor lists what is missing)")
    target = out / Path(source).stem
    cmd = [cc, "-O2", "-static", "-pthread", "-Wall", "-o", str(target), str(GUEST / source), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"building {source} for {arch} failed", proc.stderr[-2000:])
    return target


def build_module(arch: str, kernels: Kernels, out: Path) -> Path:
    """qspin_lab.ko against the fetched kernel's own headers (a module fits one flavour only)."""
    src = out / "qspin"
    ko = src / "qspin_lab.ko"
    sources = sorted((GUEST / "qspin").iterdir())
    if ko.is_file() and all(ko.stat().st_mtime > p.stat().st_mtime for p in sources) and \
            ko.stat().st_mtime > kernels.headers(arch).stat().st_mtime:
        return ko
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for p in sources:
        shutil.copy(p, src / p.name)
    karch, cross = MODULE_MAKE[arch]
    cmd = ["make", "-s", "-C", str(kernels.headers(arch)), f"M={src}", f"ARCH={karch}",
           f"CROSS_COMPILE={cross}", "modules"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not ko.is_file():
        raise LabError(f"building qspin_lab.ko for {arch} failed", (proc.stdout + proc.stderr)[-2000:])
    return ko


def build_initramfs(arch: str, kernels: Kernels, out: Path, probes: Sequence[str] = PROBES) -> Path:
    """Compile the guest programs for ``arch`` and pack the initramfs; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    programs = [_compile(arch, "vmaprobe.c", out), _compile(arch, "forkbench.c", out, ["-lm"]),
                _compile(arch, "launchbench.c", out)]
    if "qspin" in probes:
        programs.append(build_module(arch, kernels, out))
    S_IFDIR, S_IFREG, S_IFCHR = 0o040000, 0o100000, 0o020000
    entries = [(d, S_IFDIR | 0o755, b"", (0, 0)) for d in ("bin", "dev", "proc", "sys", "tmp")]
    entries += [
        ("dev/console", S_IFCHR | 0o600, b"", (5, 1)),  # Debian's kernels do not mount devtmpfs
        ("dev/null", S_IFCHR | 0o666, b"", (1, 3)),
        ("init", S_IFREG | 0o755, (GUEST / "init").read_bytes(), (0, 0)),
        ("bin/busybox", S_IFREG | 0o755, kernels.busybox(arch).read_bytes(), (0, 0)),
    ]
    entries += [(f"bin/{p.name}", S_IFREG | 0o755, p.read_bytes(), (0, 0)) for p in programs]
    cpio = out / "initramfs.cpio"
    cpio.write_bytes(_newc(entries))
    return cpio


# ---------------------------------------------------------------------------------------
# One boot


@dataclass
class Boot:
    console: ktap.Console
    log: str
    seconds: float
    timed_out: bool
    nonce: str
    command: list[str]


def qemu_command(
    arch: str, kernels: Kernels, initrd: Path, smp: int, append: str, cpu: str | None = None
) -> list[str]:
    """The QEMU command line; ``cpu`` replaces the machine's ``-cpu`` model for this boot."""
    m = MACHINES[arch]
    args = list(m.args)
    if cpu is not None:
        args[args.index("-cpu") + 1] = cpu
    return [
        m.qemu, *args, "-smp", str(smp), *COMMON_ARGS,
        "-kernel", str(kernels.kernel(arch)), "-initrd", str(initrd),
        "-append", f"console={m.console} panic=-1 quiet {append}",
    ]


def boot(
    command: list[str],
    nonce: str,
    timeout: float,
    say: Callable[[str], None],
) -> Boot:
    """Run one guest to its end (or kill it at ``timeout``), reporting each result as it comes."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\r\n")
            lines.append(line)
            if line.startswith(("ok ", "not ok ")) or line.startswith("# kstep-lab "):
                say(f"{time.monotonic() - started:5.1f} s  {line}")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    log = "\n".join(lines) + "\n"
    return Boot(ktap.parse(log), log, time.monotonic() - started, timed_out, nonce, command)


def qemu_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    return out.splitlines()[0] if out else "unknown"


def check_boot(b: Boot, arch: str, kernels: Kernels, probes: Sequence[str]) -> None:
    """Raise LabError unless the boot ran every probe on the fetched kernel and ended cleanly."""
    c = b.console
    if c.crash is not None:
        raise LabError(f"{arch}: the kernel crashed", c.crash)
    if not c.finished:
        why = f"killed after {b.seconds:.0f} s" if b.timed_out else "QEMU exited"
        raise LabError(f"{arch}: no end marker ({why})", "\n".join(b.log.splitlines()[-20:]))
    if c.nonce != b.nonce or c.end_nonce != b.nonce:
        raise LabError(f"{arch}: the console's nonce {c.nonce!r} is not this boot's {b.nonce!r}")
    if c.uname_r != kernels.release(arch):
        raise LabError(f"{arch}: the guest runs {c.uname_r!r}, not the fetched {kernels.release(arch)}")
    version = kernels.package_version(arch)
    if not c.proc_version or version not in c.proc_version:
        raise LabError(f"{arch}: /proc/version {c.proc_version!r} does not name package {version}")
    names = [case.name for case in c.cases]
    if names != list(probes):
        raise LabError(f"{arch}: the guest reported {names}, not the probes {list(probes)}")


def run(
    arch: str,
    kernels: Kernels,
    probes: Sequence[str],
    smp: int = SMP,
    timeout: float = TIMEOUT_S,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    attempts: int = 2,
    cpu: str | None = None,
) -> dict:
    """Build, boot (retrying once when the end marker is missing) and return the result record."""
    check_request(arch, probes)
    if shutil.which(MACHINES[arch].qemu) is None:
        raise UserError(f"{MACHINES[arch].qemu} not found: run 'make setup' (see kstep lab doctor)")
    work = lab_dir() / "build" / arch
    say(f"{arch}: building the initramfs")
    initrd = build_initramfs(arch, kernels, work, probes)
    seed = secrets.randbits(32)
    for attempt in range(1, attempts + 1):
        nonce = secrets.token_hex(8)
        append = f"kstep_nonce={nonce} kstep_probes={','.join(probes)} kstep_seed={seed}"
        command = qemu_command(arch, kernels, initrd, smp, append, cpu)
        say(f"{arch}: booting {kernels.release(arch)} (smp {smp}, attempt {attempt} of {attempts}, "
            f"probes {', '.join(probes)})")
        b = boot(command, nonce, timeout, say)
        (work / f"console-{attempt}.log").write_text(b.log)
        try:
            check_boot(b, arch, kernels, probes)
            break
        except LabError as exc:
            if b.console.finished or attempt == attempts:
                raise
            say(f"{arch}: {exc}; booting once more")
    say(f"{arch}: done in {b.seconds:.1f} s")
    return {
        "format": RESULT_FORMAT,
        "version": RESULT_VERSION,
        "arch": arch,
        "smp": smp,
        "probes": list(probes),
        "seed": seed,
        "kernel": {
            "abi": kernels.abi,
            "release": kernels.release(arch),
            "package_version": kernels.package_version(arch),
            "suite": kernels.manifest["suites"].get(arch),
        },
        "qemu": {"version": qemu_version(MACHINES[arch].qemu), "command": b.command},
        "nonce": b.nonce,
        "uname_r": b.console.uname_r,
        "proc_version": b.console.proc_version,
        "nproc": b.console.nproc,
        "boot_seconds": round(b.seconds, 1),
        "attempts": attempt,
        "host": {"machine": platform.machine(), "cpus": os.cpu_count()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cases": [{"name": c.name, "ok": c.ok, "data": c.data, "raw": c.raw} for c in b.console.cases],
    }


def lab_machine(result: dict) -> bool:
    """Whether a result's boot used the lab's own machine flags (not, say, a --cpu override)."""
    args = list(MACHINES[result["arch"]].args)
    return result["qemu"]["command"][1 : 1 + len(args)] == args


def save(result: dict, folder: Path | None = None) -> Path:
    folder = folder or lab_dir() / "results"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = result["date"].replace(":", "").replace("-", "")
    path = folder / f"{result['arch']}-{stamp}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def load_result(path: Path) -> dict:
    """A result file written by ``save``; UserError if it is not one."""
    text = read_text(path, LAB_RESULT_CAP, "lab result")  # a FIFO or /dev/zero: one line, not a hang
    return parse_result(text, path)


def parse_result(text: str, path: Path | str) -> dict:
    """A result's JSON text, checked as ``load_result`` checks a file (``path`` names it in messages)."""
    try:
        result = json.loads(text)
    except (ValueError, RecursionError):
        raise UserError(f"{path}: not JSON") from None
    if not isinstance(result, dict) or result.get("format") != RESULT_FORMAT:
        raise UserError(f"{path}: not a kstep lab result (no \"format\": \"{RESULT_FORMAT}\")")
    if result.get("version") != RESULT_VERSION:
        raise UserError(f"{path}: lab result version {result.get('version')!r}, this kstep reads {RESULT_VERSION}")
    missing = [k for k in ("arch", "smp", "date", "boot_seconds", "kernel", "qemu", "models") if k not in result]
    if missing:
        raise UserError(f"{path}: a lab result without {', '.join(missing)}")
    if not isinstance(result["arch"], str) or result["arch"] not in MACHINES:
        raise UserError(f"{path}: unknown architecture {result['arch']!r}")
    if not isinstance(result["kernel"], dict) or not isinstance(result["qemu"], dict) or \
            not isinstance(result["qemu"].get("command"), list) or not isinstance(result["models"], dict):
        raise UserError(f"{path}: its kernel, qemu and models are not tables as kstep lab run writes them")
    if not all(isinstance(result["kernel"].get(k), str) for k in ("abi", "release", "package_version")):
        raise UserError(f"{path}: its kernel does not name abi, release and package_version as text")
    cases = result.get("cases")
    if not isinstance(cases, list) or not all(
        isinstance(c, dict) and c.get("name") in KNOWN and isinstance(c.get("data"), list)
        and all(isinstance(d, dict) and all(isinstance(v, str) for v in d.values()) for d in c["data"])
        and isinstance(c.get("raw", {}), dict)
        and all(isinstance(lines, list) and all(isinstance(x, str) for x in lines) for lines in c.get("raw", {}).values())
        for c in cases
    ):
        raise UserError(f"{path}: its cases are not a list of {{name, ok, data, raw}} of known probes, "
                        f"with text as the console gave it")
    return result
