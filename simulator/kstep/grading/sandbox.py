"""The sandbox a submission runs in: bubblewrap, a non-root uid, and resource limits that decide.

A submission's code never runs in the grader's process.  ``run(argv, scratch, limits)`` starts it
as a child that sees only

- the read-only runtime: ``/usr``, the Python installation and virtual environment kstep runs from,
  the kstep package, and whatever read-only folders the caller names (the kernel lab's sources);
- the scratch folder, the one writable place, holding the submission's files and its inputs;

and nothing else: no other file of the machine (binding ``/`` would expose every world-readable
file, hidden tests and solutions included), no network (``--unshare-all`` gives it its own empty
network namespace, so even 127.0.0.1 is not the host's), no other process (its own PID namespace:
when the sandbox ends, everything it started ends with it), and a new session (no terminal to push
input into).

When the grader is root, ``setpriv`` first drops to a sandbox uid that this grading holds alone
(``claim()``: one of ``SANDBOX_UIDS`` uids from ``SANDBOX_UID``, taken with a lock file, so graders
running side by side on one machine, in one batch or not, never share a uid, its process limit, or
the sweep that kills what a submission left behind), since uid 0 ignores ``RLIMIT_NPROC`` and a fork
bomb would then run unchecked.  A root grader first binds the read-only folders, in a mount namespace of its own, onto
folders that uid can reach, so the runtime may live where it could not look a path up (a Python
under ``/root``).  CPU time (``RLIMIT_CPU``), memory (``RLIMIT_DATA``: heap and private mappings, which
leaves qemu-user's address-space reservation alone), processes (``RLIMIT_NPROC``) and file size
(``RLIMIT_FSIZE``) decide the outcome; a generous wall-clock guard is only the backstop for a
submission that sleeps.  Output beyond ``limits.output`` bytes stops the run.

``check()`` proves the sandbox works here (it runs ``id -u`` inside and expects a non-root uid); a
grader without one refuses to grade (``SandboxUnavailable``, exit status 2 at the command line).

The weaker ``user`` mode, for containers that give bubblewrap no user namespaces (Gradescope's),
keeps the uid change, the limits and the scratch folder but not the namespaces: the submission can
see every file its uid may read and can reach the network.  It is used only when asked for; the
Gradescope autograder's ``setup.sh`` makes it tolerable (see docs/instructor/gradescope.md).
"""

from __future__ import annotations

import fcntl
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Collection, Iterator, NamedTuple, Optional, Sequence

import kstep

SANDBOX_UID = 61000  # the first sandbox uid when the grader runs as root
SANDBOX_UIDS = 64  # how many gradings may hold a sandbox uid at once on one machine
MODES = ("bwrap", "user")
PATH = "/usr/bin:/bin"


class SandboxUnavailable(Exception):
    """No working sandbox here: grading refuses rather than run a submission unconfined."""


class Limits(NamedTuple):
    cpu: int = 20  # seconds of CPU time (RLIMIT_CPU), all threads together
    memory: int = 512  # MiB (RLIMIT_DATA)
    nproc: int = 32  # processes and threads of the sandbox's uid (RLIMIT_NPROC): a compiler's or
    # qemu-user's handful, and few enough that a fork bomb cannot starve the graders running beside it
    wall: int = 120  # seconds: the backstop for a submission that sleeps or blocks
    output: int = 1 << 20  # bytes of stdout and stderr together
    file_size: int = 64  # MiB: the largest file it may write (RLIMIT_FSIZE)


# The verdicts of a run stopped by a limit: a submission that hits one is not run again (harness.py).
LIMITS = ("cpu-time", "memory", "wall-time", "nproc", "output")
# How often a run's tasks are counted: a fork bomb stays at the process limit once it gets there, so
# a count now and then sees it, however loaded the machine (the count after the run does not: by
# then the kernel is already tearing the sandbox's PID namespace down).
CROWD_EVERY = 0.25


class Result(NamedTuple):
    status: Optional[int]  # exit status, or None when a signal ended it
    signal: Optional[int]
    stdout: bytes
    stderr: bytes
    verdict: str  # "ok" (exited 0), "failed" (exited non-zero), "crashed", "cpu-time", "memory", "wall-time",
    # "nproc" (it reached the process limit, and a limit or a signal ended it), "output"
    seconds: float
    ended: str = ""  # for "nproc": what ended the run ("cpu-time", "wall-time", "crashed")

    @property
    def why(self) -> str:
        """One line saying how the run ended, for a student's feedback."""
        if self.verdict == "nproc":
            return f"kept starting processes up to the limit (a fork bomb?) until {_ENDED[self.ended]} ended it"
        return {
            "ok": "exited normally",
            "failed": f"exited with status {self.status}",
            "crashed": f"was killed by signal {signal_name(self.signal)}",
            "cpu-time": "ran out of CPU time (an endless loop?)",
            "memory": "ran out of memory",
            "wall-time": "ran past the wall-clock limit (sleeping or blocked?)",
            "output": "wrote more output than allowed (an output flood)",
        }[self.verdict]


# What ended a run that reached the process limit: a fork bomb ends at whichever comes first.
_ENDED = {"cpu-time": "the CPU-time limit", "wall-time": "the wall-clock limit", "crashed": "a signal"}


def signal_name(sig: Optional[int]) -> str:
    try:
        return signal.Signals(sig).name
    except (ValueError, TypeError):
        return str(sig)


def runtime_dirs() -> list[Path]:
    """What a submission may read: the interpreter kstep runs under, its environment, kstep itself."""
    dirs = [Path("/usr"), Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
            Path(kstep.__file__).resolve().parent]
    out: list[Path] = []
    for d in dirs:
        if not any(d == o or o in d.parents for o in out):
            out = [o for o in out if d not in o.parents] + [d]
    return out


def _lock_dir() -> Path:
    run_lock = Path("/run/lock")
    return (run_lock if run_lock.is_dir() else Path(tempfile.gettempdir())) / "kstep-sandbox"


@contextmanager
def claim() -> Iterator[Optional[int]]:
    """A sandbox uid that no other grading on this machine holds while the block runs; None when
    the grader is not root (its submissions then run as the grader's own uid, limits and all).

    The lock is ``flock`` on a file per uid, so it ends with the holder, even one killed outright;
    a uid is handed out only when it has no task at all, found in one pass over /proc.  Whatever
    such a holder's submission left running is swept, and the uid passed over: its killed tasks,
    like a killed sandbox's, are reaped by the machine's init in its own time (1.3 to 1.9 s at load
    23), and until then they count against RLIMIT_NPROC, so a submission run under that uid would
    get fewer processes than its limit, and a fork bomb would stop short of the limit the grader
    knows it by.
    """
    if os.geteuid() != 0:
        yield None
        return
    locks = _lock_dir()
    locks.mkdir(mode=0o700, exist_ok=True)
    for uid in range(SANDBOX_UID, SANDBOX_UID + SANDBOX_UIDS):
        fd = os.open(locks / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            if any(True for _ in _processes((uid,))):  # left running, or dead and not reaped yet
                _sweep(uid)
                continue
            yield uid
        finally:
            os.close(fd)
        return
    raise SandboxUnavailable(f"all {SANDBOX_UIDS} sandbox uids are held by other gradings on this machine "
                             f"(or their last processes are not reaped yet)")


def unclaimed_processes() -> list[str]:
    """Processes of sandbox uids that no grading holds: what a finished grading left running
    (there must never be any).  Gradings running meanwhile, in this process or another, hold theirs."""
    held = set()
    for uid in range(SANDBOX_UID, SANDBOX_UID + SANDBOX_UIDS):
        try:
            fd = os.open(_lock_dir() / f"{uid}.lock", os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.add(uid)
        finally:
            os.close(fd)
    unheld = set(range(SANDBOX_UID, SANDBOX_UID + SANDBOX_UIDS)) - held
    return [f"{pid} uid {uid}" for pid, uid in _live(unheld)]


def prepare_scratch(scratch: Path, uid: Optional[int]) -> None:
    """Give the scratch folder to the sandbox's uid (only it and the grader may touch it)."""
    if uid is None:
        return
    for root, dirs, files in os.walk(scratch):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)
    os.chown(scratch, uid, uid)
    os.chmod(scratch, 0o700)


def command(argv: Sequence[str], scratch: Path, binds: Sequence[tuple], mode: str, uid: Optional[int],
            env: dict) -> list[str]:
    """The full command line: setpriv (as root), then bwrap with its binds, then argv.

    ``binds`` are (source, destination, writable): bubblewrap mounts each source at its destination.
    """
    cmd: list[str] = []
    if uid is not None:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--"]
    # PYTHONPATH: the child imports the kstep the grader runs (bound read-only below), whatever
    # package the interpreter's own site-packages would name.
    env = {"PATH": PATH, "HOME": str(scratch), "TMPDIR": str(scratch), "LC_ALL": "C.UTF-8",
           "PYTHONPATH": str(Path(kstep.__file__).resolve().parent.parent), **env}
    if mode == "user":
        return cmd + ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
    cmd += ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--proc", "/proc", "--dev", "/dev",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/sbin", "/sbin"]
    for source, dest, writable in binds:
        cmd += ["--bind" if writable else "--ro-bind", str(source), str(dest)]
    # The root is bubblewrap's tmpfs: read-only, or a submission could fill the host's memory with files.
    cmd += ["--remount-ro", "/", "--chdir", str(scratch), "--clearenv"]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    return cmd + ["--", *argv]


# As root, the folders are first bound, in a mount namespace of the grader's own, onto empty folders
# the sandbox's uid can reach: bubblewrap looks its sources up as that uid, and the runtime may live
# where it cannot (a Python under /root).  The script mounts pairs up to "--", then runs the rest.
_STAGE = 'while [ "$1" != -- ]; do mount --rbind "$1" "$2" || exit 125; shift 2; done; shift; exec "$@"'


def _staged(dirs: Sequence[Path], stage: Path) -> tuple[list[str], list[Path]]:
    """(the command prefix that mounts each dir on a folder under ``stage``, those folders)."""
    prefix = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", _STAGE, "sh"]
    points = []
    for k, d in enumerate(dirs):
        point = stage / str(k)
        point.mkdir(mode=0o755)
        prefix += [str(d), str(point)]
        points.append(point)
    return prefix + ["--"], points


def _limit(limits: Limits, confine: bool):
    """The rlimits, set in the child before setpriv and bwrap run (their children inherit them);
    without ``confine``, only the process group that lets the whole run be killed at once."""

    def apply():
        os.setpgrp()
        if not confine:
            return
        mib = 1 << 20
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu, limits.cpu + 1))
        resource.setrlimit(resource.RLIMIT_DATA, (limits.memory * mib, limits.memory * mib))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc, limits.nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size * mib, limits.file_size * mib))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run(argv: Sequence[str], scratch: Path, limits: Limits = Limits(), *, stdin: bytes = b"",
        read_only: Sequence[Path] = (), mode: str = "bwrap", uid: Optional[int] = None,
        env: Optional[dict] = None) -> Result:
    """Run argv in the sandbox with ``scratch`` as its working and only writable folder, as ``uid``
    (one ``claim()`` gave; None for a grader that is not root).

    The environment is empty but for PATH, HOME and TMPDIR (the scratch folder), LC_ALL and ``env``.
    """
    env = env or {}
    if mode not in MODES:
        raise ValueError(f"sandbox mode {mode!r}")
    if mode == "bwrap" and shutil.which("bwrap") is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: run scripts/setup-system")
    if (uid is None) != (os.geteuid() != 0):
        raise ValueError("a root grader runs submissions as a claimed sandbox uid, any other as itself")
    if uid is not None and shutil.which("setpriv") is None:
        raise SandboxUnavailable("setpriv (util-linux) is not installed: run scripts/setup-system")
    scratch = Path(scratch).resolve()
    if mode == "user":
        return _supervise(command(argv, scratch, (), mode, uid, env), scratch, limits, stdin, uid)
    dirs = [*runtime_dirs(), *(Path(d).resolve() for d in read_only)]
    if uid is None:
        binds = [(d, d, False) for d in dirs] + [(scratch, scratch, True)]
        return _supervise(command(argv, scratch, binds, mode, uid, env), None, limits, stdin, None)
    stage = Path(tempfile.mkdtemp(prefix="kstep-stage-"))
    try:
        stage.chmod(0o755)
        prefix, points = _staged(dirs, stage)
        binds = [(p, d, False) for p, d in zip(points, dirs)] + [(scratch, scratch, True)]
        return _supervise(prefix + command(argv, scratch, binds, mode, uid, env), None, limits, stdin, uid)
    finally:
        for point in stage.iterdir():
            point.rmdir()
        stage.rmdir()


def capture(argv: Sequence[str], limits: Limits, stdin: bytes = b"") -> Result:
    """Run argv here, as it is, reading at most ``limits.output`` bytes of its output and waiting
    at most ``limits.wall`` seconds; no rlimit is set.  An exercise's driver, already inside the
    sandbox, runs the student's program with this: an output flood then stops the program and is
    named one (it does not fill the driver's memory), and a crash names its signal (SIGSEGV)."""
    return _supervise(list(argv), None, limits, stdin, None, confine=False)


def _supervise(cmd: list[str], cwd: Optional[Path], limits: Limits, stdin: bytes, uid: Optional[int],
               confine: bool = True) -> Result:
    """Run cmd to its end under the limits; as root (``uid`` given), then make sure nothing of the
    sandbox's uid is left running, whatever the submission started."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=cwd, preexec_fn=_limit(limits, confine))
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    out = {out_fd: bytearray(), err_fd: bytearray()}
    try:
        if stdin:
            proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    verdict = None
    open_fds = list(out)
    crowd, counted = 0, 0.0  # the most tasks the sandbox's uid had at once, and when it was last counted
    while open_fds:
        if uid is not None and time.monotonic() - counted >= CROWD_EVERY:
            crowd, counted = max(crowd, _tasks(uid)), time.monotonic()
        left = limits.wall - (time.monotonic() - start)
        if left <= 0:
            verdict = "wall-time"
            break
        ready, _, _ = select.select(open_fds, [], [], min(left, CROWD_EVERY))  # count on time
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                open_fds.remove(fd)
                continue
            out[fd] += chunk
        if sum(len(b) for b in out.values()) > limits.output:
            verdict = "output"
            break
    if verdict is not None:
        _kill(proc)
    returncode, cpu = _reap(proc, start + limits.wall)
    if returncode is None:
        verdict = verdict or "wall-time"
        _kill(proc)
        returncode, cpu = _reap(proc, None)
    if uid is not None:
        crowd = max(crowd, _sweep(uid))
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    stdout, stderr = bytes(out[out_fd]), bytes(out[err_fd])
    stdout, stderr = stdout[:limits.output], stderr[:limits.output]
    status, sig = _status(returncode)
    if verdict is None:
        verdict = _verdict(status, sig, stderr, cpu >= limits.cpu)
    if crowd >= limits.nproc and verdict in _ENDED:  # the process limit is the story, whatever ended it
        return Result(status, sig, stdout, stderr, "nproc", time.monotonic() - start, ended=verdict)
    return Result(status, sig, stdout, stderr, verdict, time.monotonic() - start)


def _reap(proc: subprocess.Popen, deadline: Optional[float]) -> tuple[Optional[int], float]:
    """Wait for the child until the deadline (None: for ever); its exit code and the CPU seconds
    it and every descendant used, or (None, 0) if it is still running at the deadline."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG if deadline is not None else 0)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() >= deadline:
            return None, 0.0
        time.sleep(0.02)


def _processes(uids: Collection[int]) -> Iterator[tuple[int, int, dict]]:
    """(pid, uid, the fields of /proc/PID/status) of every process of one of ``uids``, zombies
    included: one pass over /proc, however many uids are asked about."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue  # it ended while we looked
        uid = int(fields["Uid"].split()[0])
        if uid in uids:
            yield int(status.parent.name), uid, fields


def _live(uids: Collection[int]) -> list[tuple[int, int]]:
    """(pid, uid) of the processes of ``uids`` that are not zombies."""
    return [(pid, uid) for pid, uid, fields in _processes(uids) if not fields["State"].strip().startswith("Z")]


def _tasks(uid: int) -> int:
    """How many tasks ``uid`` has, as RLIMIT_NPROC counts them: every thread, zombies until reaped."""
    return sum(int(fields.get("Threads", "1")) for _, _, fields in _processes((uid,)))


def _sweep(uid: int) -> int:
    """Kill every process of the sandbox's uid until none is left; how many there were at first.

    bubblewrap's death ends its PID namespace, but the kernel kills a large one (a fork bomb)
    asynchronously: the grader must not go on while any of it still runs.
    """
    first = None
    for _ in range(600):
        pids = [pid for pid, _ in _live((uid,))]
        first = len(pids) if first is None else first
        if not pids:
            return first
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"processes of sandbox uid {uid} survive SIGKILL: {pids[:10]}")


def _kill(proc: subprocess.Popen) -> None:
    """End the sandbox: bubblewrap's death takes its PID namespace, and so every process in it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _status(returncode: int) -> tuple[Optional[int], Optional[int]]:
    """bwrap exits 128 + N when its child died of signal N; setpriv and env pass statuses through."""
    if returncode < 0:
        return None, -returncode
    if returncode > 128 and returncode - 128 < signal.NSIG:
        return None, returncode - 128
    return returncode, None


_OUT_OF_MEMORY = (b"MemoryError", b"Cannot allocate memory", b"out of memory")


def _verdict(status: Optional[int], sig: Optional[int], stderr: bytes, cpu_spent: bool) -> str:
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_spent):
        return "cpu-time"
    if any(m in stderr[-4096:] for m in _OUT_OF_MEMORY):
        return "memory"
    if sig is not None:
        return "crashed"
    return "ok" if status == 0 else "failed"


def check(mode: str = "bwrap") -> None:
    """Raise SandboxUnavailable unless a sandboxed child really runs here, as a non-root uid, with
    the Python and kstep that submissions run under."""
    with tempfile.TemporaryDirectory(prefix="kstep-sandbox-check-") as d, claim() as uid:
        prepare_scratch(Path(d), uid)
        probe = "import os, kstep; print(os.getuid())"
        try:
            r = run([sys.executable, "-c", probe], Path(d), Limits(cpu=10, wall=60), mode=mode, uid=uid)
        except OSError as e:
            raise SandboxUnavailable(f"cannot start the sandbox: {e.strerror}") from None
        if r.verdict != "ok":
            why = r.stderr.decode(errors="replace").strip().splitlines()
            raise SandboxUnavailable(f"{mode} does not work here: {why[-1] if why else r.why}")
        if r.stdout.strip() == b"0":
            raise SandboxUnavailable("the sandboxed child runs as root")
