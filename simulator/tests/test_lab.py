"""The real-kernel lab without booting: version resolution, the console parser, crashes, hangs,
retries, the checks, and the command line's bad inputs."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from kstep.cli import main
from kstep.errors import UserError
from kstep.source import debian, index as source_index
from kstep.lab.guest import qemu as guest, kernels, ktap, probes, vma_locks
from kstep.measure import fork_batch

DATA = Path(__file__).parent / "data" / "lab"
RECORDED = Path(__file__).resolve().parents[2] / "kernel-lab" / "guest" / "recorded"
ABI_NEW, ABI_OLD = "6.12.117+deb12", "6.12.95+deb12"
SEC, BPO, MAIN = "bookworm-security", "bookworm-backports", "bookworm"


def kstep(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_exit_2(capsys, *argv, says):
    rc, out, err = kstep(capsys, *argv)
    assert rc == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------
# Resolving one version across the three architectures


def kernel_packages(abi, arch):
    a = next(a for a in kernels.ARCHES.values() if a.debian == arch)
    names = list(a.packages(abi)) + [f"linux-headers-{abi}-common"]
    if arch == kernels.HOST:
        names.append(f"linux-kbuild-{abi}")
    return names


def stanzas(names, version):
    return "\n".join(
        f"Package: {n}\nVersion: {version}\nArchitecture: any\nFilename: pool/{n}.deb\nSHA256: 00\n"
        for n in names
    )


def index_of(suites):
    """An index with ABI_NEW in security for the given arches and ABI_OLD in backports for all."""
    index = {}
    for suite, abi, version, arches in suites:
        for arch in arches:
            text = stanzas(kernel_packages(abi, arch), version)
            index[(suite, arch)] = kernels.parse_packages(text, suite, arch)
    for arch in ("amd64", "arm64", "ppc64el"):
        index[(MAIN, arch)] = kernels.parse_packages(stanzas(["busybox-static"], "1:1.35.0-4"), MAIN, arch)
    return index


ALL = ("amd64", "arm64", "ppc64el")


def test_resolve_takes_the_newest_version_every_architecture_has():
    index = index_of([(SEC, ABI_NEW, "6.12.117-1", ALL), (BPO, ABI_OLD, "6.12.95-1~bpo12+1", ALL)])
    res = kernels.resolve(index)
    assert res.abi == ABI_NEW
    assert res.suites == {"x86_64": SEC, "arm64": SEC, "ppc64le": SEC}
    assert kernels.resolution_notes(res, {}) == []  # the source release itself, nothing passed over


def test_resolve_passes_over_a_version_whose_index_failed():
    # The security suite's ppc64el index did not download: only amd64 and arm64 are known there.
    index = index_of([(SEC, ABI_NEW, "6.12.117-1", ("amd64", "arm64")), (BPO, ABI_OLD, "6.12.95-1~bpo12+1", ALL)])
    res = kernels.resolve(index)
    assert res.abi == ABI_OLD
    assert set(res.suites.values()) == {BPO}
    names = {p.name for _, p in res.packages}
    assert f"linux-image-{ABI_OLD}-powerpc64le" in names and f"linux-kbuild-{ABI_OLD}" in names
    # fetch logs the newer release it passed over, and why: a session that booted 6.12.95 with the
    # source at 6.12.117 had only a failed index to blame
    assert res.passed_over == (f"{ABI_NEW} (lacks linux-image-{ABI_NEW}-powerpc64le:ppc64el, "
                               f"linux-headers-{ABI_NEW}-powerpc64le:ppc64el)",)
    assert kernels.resolution_notes(res, {f"{SEC}/ppc64el": "File has unexpected size"}) == [
        f"passed over {res.passed_over[0]}, with {SEC}/ppc64el left out",
        f"{ABI_OLD} is not the source release {source_index.pinned_release()} (code pane, step texts, default "
        "variants): kstep lab show names what differs"]


def test_resolve_says_what_the_newest_version_lacks():
    index = index_of([(SEC, ABI_NEW, "6.12.117-1", ("amd64", "arm64"))])
    with pytest.raises(debian.DebianFetchError, match="lacks linux-image-6.12.117.deb12-powerpc64le"):
        kernels.resolve(index)


FAKE_APT = """
# apt-get for the tests: 'update' writes a Packages list from $FAKE_ARCHIVE, or fails the way
# Debian's mirrors do while they sync, for the (suite, arch) pairs named in $FAKE_FAIL.
import os, re, sys
conf = open(os.environ["APT_CONFIG"]).read()
arch = re.search(r'APT::Architecture "([^"]+)"', conf).group(1)
etc = re.search(r'Dir::Etc "([^"]+)"', conf).group(1)
state = re.search(r'Dir::State "([^"]+)"', conf).group(1)
suite = open(etc + "sources.list").read().split()[3]
if sys.argv[1] != "update":
    sys.exit("fake apt-get: only update")
if f"{suite}/{arch}" in os.environ["FAKE_FAIL"].split():
    print(f"E: Failed to fetch http://mirror.invalid/dists/{suite}/main/binary-{arch}/Packages.xz  "
          "File has unexpected size (343384 != 361380). Mirror sync in progress?", file=sys.stderr)
    print("E: Some index files failed to download. They have been ignored, or old ones used instead.",
          file=sys.stderr)
    sys.exit(100)
src = os.path.join(os.environ["FAKE_ARCHIVE"], f"{suite}_{arch}")
if os.path.exists(src):
    open(f"{state}lists/mirror_dists_{suite}_main_binary-{arch}_Packages", "w").write(open(src).read())
"""


def test_a_failed_index_costs_only_its_suite_and_architecture(tmp_path, monkeypatch):
    archive, bin_ = tmp_path / "archive", tmp_path / "bin"
    archive.mkdir()
    bin_.mkdir()
    for suite, abi, version in ((SEC, ABI_NEW, "6.12.117-1"), (BPO, ABI_OLD, "6.12.95-1~bpo12+1")):
        for arch in ALL:
            (archive / f"{suite}_{arch}").write_text(stanzas(kernel_packages(abi, arch), version))
    for arch in ALL:
        (archive / f"{MAIN}_{arch}").write_text(stanzas(["busybox-static"], "1:1.35.0-4"))
    apt = bin_ / "apt-get"
    apt.write_text(f"#!{sys.executable}" + FAKE_APT)
    apt.chmod(apt.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KSTEP_DEBIAN_MIRROR", "http://mirror.invalid/debian")
    monkeypatch.setenv("FAKE_ARCHIVE", str(archive))
    monkeypatch.setenv("FAKE_FAIL", f"{SEC}/ppc64el")
    monkeypatch.setattr(debian.time, "sleep", lambda s: None)
    lines = []
    index, failed = kernels.read_index(lines.append)
    assert list(failed) == [f"{SEC}/ppc64el"]
    assert "File has unexpected size" in failed[f"{SEC}/ppc64el"]
    assert (SEC, "amd64") in index and (SEC, "ppc64el") not in index
    assert kernels.resolve(index).abi == ABI_OLD
    # Every (suite, arch) pair has its own apt state; none was written outside the cache.
    states = sorted(p.name for p in (tmp_path / "cache" / "kstep" / "apt-lab").iterdir())
    assert states == sorted(f"{s}_{a}" for s in (SEC, BPO, MAIN) for a in ALL)


def test_parse_packages_keeps_only_the_lab_packages():
    text = stanzas(["linux-image-6.12.95+deb12-amd64-unsigned", "hello", "busybox-static"], "1")
    assert set(kernels.parse_packages(text, BPO, "amd64")) == {
        "linux-image-6.12.95+deb12-amd64-unsigned", "busybox-static"}


# ---------------------------------------------------------------------------------------
# The console: KTAP, crashes, hangs


CONSOLE = """\
[    0.000000] Linux version 6.12.95+deb12-amd64 (noise before init)\r
KTAP version 1\r
# kstep-lab nonce=abc123\r
# uname-r: 6.12.95+deb12-amd64\r
# proc-version: Linux version 6.12.95+deb12-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian 6.12.95-1~bpo12+1\r
# nproc: 2\r
1..2\r
# vma mode=faults ok=100 null=0 retry=0 w_ok=90 w_null=0 w_retry=0 pgfault=101 passes=3 pages=2048\r
[   12.5] random kernel line in between\r
# vma mode=writer ok=100 null=7 retry=1 w_ok=90 w_null=7 w_retry=1 pgfault=108 passes=3 pages=2048\r
ok 1 vma\r
not ok 2 fork\r
# kstep-lab end nonce=abc123\r
"""


def test_the_base_kernel_is_the_newest_6_1_image_of_the_suites_whose_index_reads(tmp_path, monkeypatch):
    """bench/launch_ab.py's 6.1: the newest linux-image-6.1.0-N-amd64-unsigned (arm64: -arm64-) over bookworm and
    bookworm-security by Debian's version order, neither 6.12's image nor another flavour, and a suite
    whose index failed left out."""
    from kstep.lab.guest import base_kernel

    stanzas = {
        "bookworm": [("linux-image-6.1.0-40-amd64-unsigned", "6.1.150-1"),
                     ("linux-image-6.1.0-41-cloud-amd64-unsigned", "6.1.160-1")],
        "bookworm-security": [("linux-image-6.1.0-9-amd64-unsigned", "6.1.99-1"),
                              ("linux-image-6.1.0-42-amd64-unsigned", "6.1.155-1"),
                              ("linux-image-6.12.95+deb12-amd64-unsigned", "6.12.95-1~bpo12+1"),
                              ("linux-image-6.1.0-43-arm64-unsigned", "6.1.156-1")],
    }

    class FakeApt:
        def __init__(self, suite, fails):
            self.suite, self.fails = suite, fails

        def try_update(self):
            return "Hash Sum mismatch" if self.fails else None

        def lists(self):
            path = tmp_path / f"{self.suite}_Packages"
            path.write_text("\n\n".join(f"Package: {n}\nVersion: {v}\nFilename: pool/{n}.deb"
                                          for n, v in stanzas[self.suite]))
            return [path]

    failing: set = set()
    monkeypatch.setattr(base_kernel, "apt_for", lambda suite, arch, log: FakeApt(suite, suite in failing))
    got = base_kernel.newest(lambda m: None)
    assert got == ("linux-image-6.1.0-42-amd64-unsigned", "6.1.155-1", "bookworm-security", "6.1.0-42")
    assert base_kernel.newest(lambda m: None, "arm64") == \
        ("linux-image-6.1.0-43-arm64-unsigned", "6.1.156-1", "bookworm-security", "6.1.0-43")
    failing.add("bookworm-security")
    assert base_kernel.newest(lambda m: None)[:3] == ("linux-image-6.1.0-40-amd64-unsigned", "6.1.150-1", "bookworm")
    failing.add("bookworm")
    with pytest.raises(debian.DebianFetchError, match="no linux-image-6.1.0"):
        base_kernel.newest(lambda m: None)


def test_ktap_parser_reads_results_data_and_markers():
    c = ktap.parse(CONSOLE)
    assert (c.version, c.nonce, c.end_nonce, c.plan, c.nproc) == (1, "abc123", "abc123", 2, 2)
    assert c.uname_r == "6.12.95+deb12-amd64" and "6.12.95-1~bpo12+1" in c.proc_version
    assert [(k.number, k.name, k.ok) for k in c.cases] == [(1, "vma", True), (2, "fork", False)]
    assert [d["mode"] for d in c.case("vma").data] == ["faults", "writer"]
    assert c.case("vma").data[1]["w_null"] == "7" and c.case("fork").data == []
    assert c.finished and c.crash is None


def test_ktap_parser_on_a_log_cut_short():
    c = ktap.parse(CONSOLE[: CONSOLE.index("ok 1 vma")])
    assert not c.finished and c.cases == [] and c.nonce == "abc123"


def test_a_recorded_kernel_panic_is_found_with_its_report():
    log = (DATA / "x86_64-panic.log").read_text()
    c = ktap.parse(log)
    assert c.crash is not None and "Kernel panic - not syncing" in c.crash.splitlines()[0]
    assert "Call Trace" in c.crash or "CPU:" in c.crash
    assert not c.finished


def fake_kernels(tmp_path):
    manifest = {"abi": ABI_OLD, "suites": {"x86_64": BPO},
                "packages": [{"for": "x86_64", "name": f"linux-image-{ABI_OLD}-amd64-unsigned",
                              "version": "6.12.95-1~bpo12+1"}]}
    return kernels.Kernels(ABI_OLD, tmp_path, manifest)


def boot_of(log, nonce="abc123", timed_out=False):
    return guest.Boot(ktap.parse(log), log, 1.0, timed_out, nonce, ["qemu"])


def test_check_boot_accepts_the_fetched_kernel_and_refuses_others(tmp_path):
    k = fake_kernels(tmp_path)
    guest.check_boot(boot_of(CONSOLE), "x86_64", k, ["vma", "fork"])
    with pytest.raises(guest.LabError, match="nonce"):
        guest.check_boot(boot_of(CONSOLE, nonce="other"), "x86_64", k, ["vma", "fork"])
    with pytest.raises(guest.LabError, match="not the fetched"):
        guest.check_boot(boot_of(CONSOLE.replace("uname-r: 6.12.95", "uname-r: 6.1.0")), "x86_64", k,
                         ["vma", "fork"])
    with pytest.raises(guest.LabError, match="does not name package"):
        guest.check_boot(boot_of(CONSOLE.replace("Debian 6.12.95-1~bpo12+1", "Debian 6.12.94-1")),
                         "x86_64", k, ["vma", "fork"])
    with pytest.raises(guest.LabError, match="crashed") as e:
        guest.check_boot(boot_of((DATA / "x86_64-panic.log").read_text()), "x86_64", k, ["vma"])
    assert "Kernel panic" in e.value.excerpt


HANGING_GUEST = """\
import sys, time
print("KTAP version 1\\n# kstep-lab nonce=abc123\\n1..1", flush=True)
time.sleep(600)
"""


def test_a_hung_guest_is_killed_at_the_timeout(tmp_path):
    script = tmp_path / "guest.py"
    script.write_text(HANGING_GUEST)
    said = []
    b = guest.boot([sys.executable, str(script)], "abc123", 2, said.append)
    assert b.timed_out and not b.console.finished and b.console.nonce == "abc123"
    with pytest.raises(guest.LabError, match="no end marker .killed after"):
        guest.check_boot(b, "x86_64", fake_kernels(tmp_path), ["vma"])
    assert any("kstep-lab nonce" in line for line in said)


def test_a_missing_end_marker_boots_once_more(tmp_path, monkeypatch):
    k = fake_kernels(tmp_path)
    monkeypatch.setattr(guest, "lab_dir", lambda: tmp_path)
    monkeypatch.setattr(guest, "build_initramfs", lambda arch, kernels, out, probes: out / "initramfs.cpio")
    monkeypatch.setattr(guest.shutil, "which", lambda name: "/usr/bin/" + name)
    boots = []

    def fake_boot(command, nonce, timeout, say):
        boots.append(nonce)
        log = CONSOLE.replace("abc123", nonce).replace("1..2", "1..1").replace("not ok 2 fork\r\n", "")
        return boot_of(log if len(boots) == 2 else log[: log.index("ok 1")], nonce)

    monkeypatch.setattr(guest, "boot", fake_boot)
    (tmp_path / "build" / "x86_64").mkdir(parents=True)
    result = guest.run("x86_64", k, ["vma"], say=lambda line: None)
    assert len(boots) == 2 and boots[0] != boots[1]
    assert result["attempts"] == 2 and result["nonce"] == boots[1]
    boots.clear()
    monkeypatch.setattr(guest, "boot", lambda c, n, t, s: boots.append(n) or boot_of("no marker", n))
    with pytest.raises(guest.LabError, match="no end marker"):
        guest.run("x86_64", k, ["vma"], say=lambda line: None)
    assert len(boots) == 2


def test_the_initramfs_is_a_newc_archive_with_device_nodes():
    data = guest._newc([("dev", 0o040755, b"", (0, 0)), ("dev/console", 0o020600, b"", (5, 1)),
                        ("init", 0o100755, b"#!/bin/sh\n", (0, 0))])
    assert data.startswith(b"070701") and data.endswith(b"\0") and len(data) % 4 == 0
    console = data.index(b"dev/console\0")
    header = data[console - 110 : console]
    assert header[:6] == b"070701"
    fields = [int(header[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
    assert fields[1] == 0o020600 and (fields[9], fields[10]) == (5, 1)
    assert b"TRAILER!!!" in data and b"#!/bin/sh\n" in data


# ---------------------------------------------------------------------------------------
# The checks


def vma_data(faults_null=0, writer_null=7, writer_retry=1, pgfault=108):
    return [
        {"mode": "faults", "ok": "100", "null": "0", "retry": "0", "w_ok": "90", "w_null": str(faults_null),
         "w_retry": "0", "pgfault": "101"},
        {"mode": "writer", "ok": "100", "null": "7", "retry": "1", "w_ok": "90", "w_null": str(writer_null),
         "w_retry": str(writer_retry), "pgfault": str(pgfault)},
    ]


def test_vma_checks_pass_on_the_expected_shape():
    assert all(c.ok for c in probes.judge_vma(vma_data()))


@pytest.mark.parametrize("data, failing", [
    (vma_data(faults_null=3), "no fallback without a writer"),
    (vma_data(writer_null=0, writer_retry=5), "some fallback with a writer"),
    (vma_data(pgfault=500), "writer: lock_vma_under_rcu calls match pgfault"),
    (vma_data()[:1], "writer ran"),
])
def test_vma_checks_catch_what_the_kernel_should_not_do(data, failing):
    assert [c.name for c in probes.judge_vma(data) if not c.ok] == [failing]


def launch_line(**over):
    """One '# launch' line's data as launchbench and the init script print it on 6.12."""
    d = {"mappers": "2", "faulters": "2", "rounds": "20", "pages": "256", "faults": "10240",
         "p50_ns": "9000", "p90_ns": "15000", "p99_ns": "80000", "max_ns": "4000000",
         "makespan_ns": "900000000", "per_vma": "present", "vma_ok": "10300", "vma_null": "0"}
    d.update({k: str(v) for k, v in over.items()})
    return [{k: v for k, v in d.items() if v != "None"}]


def test_launch_checks_pass_on_both_kernels_shapes():
    assert all(c.ok for c in probes.judge_launch(launch_line()))
    assert all(c.ok for c in probes.judge_launch(launch_line(per_vma="absent", vma_ok=None, vma_null=None)))


@pytest.mark.parametrize("data, failing", [
    (launch_line(faults=10000), "every fault timed"),
    (launch_line(p90_ns=100000), "percentiles ordered"),
    (launch_line(vma_ok=5000, vma_null=5240), "the faults took the per-VMA lock"),
])
def test_launch_checks_catch_a_short_count_unordered_percentiles_and_a_mmap_lock_path(data, failing):
    assert [c.name for c in probes.judge_launch(data) if not c.ok] == [failing]


@pytest.mark.parametrize("data", [launch_line(p50_ns="x"), launch_line(per_vma="maybe"),
                                  launch_line(vma_ok=None), launch_line() * 2])
def test_a_malformed_launch_line_is_a_user_error(data):
    with pytest.raises(UserError):
        probes.judge_launch(data)


def recorded_vma(arch):
    """The recorded vma-only boot of ``arch``: its result, and its vma case's data and raw lines."""
    [path] = RECORDED.glob(f"{arch}-vma-*.json")
    result = guest.load_result(path)
    case = next(c for c in result["cases"] if c["name"] == "vma")
    return result, case["data"], case["raw"]


@pytest.mark.parametrize("arch", list(guest.MACHINES))
def test_the_recorded_boots_retries_are_each_processs_first_vdso_faults(arch):
    result, data, raw = recorded_vma(arch)
    retries = vma_locks.classify(data, raw)
    assert not [r.what for r in retries if r.whose == "workload"]
    startup = [r for r in retries if r.whose == "start-up"]
    assert {r.mode for r in startup} == {"faults", "writer"} and {r.mapping for r in startup} == {"[vdso]"}
    assert [r.what for r in retries if not r.special] == []
    assert {r.whose for r in retries} == {"start-up", "other"}  # other: busybox tools, the shell's children
    # the hist's w_retry is the process's whole life: exactly its start-up retries
    assert [int(d["w_retry"]) for d in data] == [sum(r.mode == d["mode"] for r in startup) for d in data]
    assert all(c.ok for c in probes.judge(result)), [c for c in probes.judge(result) if not c.ok]


def test_the_retry_checks_catch_a_workload_retry_and_an_unexplained_one():
    _, data, raw = recorded_vma("x86_64")
    pid = int(data[0]["pid"])
    trace = list(raw["trace"])
    start = next(k for k, line in enumerate(trace) if f"({pid:>7}) " in line and "window start" in line)
    seconds = float(trace[start].split(": tracing_mark_write")[0].split()[-1])
    anon = next(line for line in raw["maps"] if line.startswith(f"{pid} ") and line.rstrip().endswith("0"))
    lo = int(anon.split()[1].split("-")[0], 16)
    trace.insert(start + 1, f"vmaprobe-{pid + 1}     ({pid:>7}) [001] .....    {seconds + 0.001:.6f}: kstep_vma_retry: "
                            f"(do_user_addr_fault+0x20c/0x670 <- handle_mm_fault) ret=1024 flags=4693 "
                            f"addr={lo + 0x10:#x} start={lo:#x} end={lo + 0x1000:#x}")
    checks = probes.judge_vma(data, dict(raw, trace=trace))
    assert [c.name for c in checks if not c.ok] == [
        "faults: the workload's own faults never retry", "every VMA-lock retry is a special mapping's fault"]
    [retry] = [r for r in vma_locks.classify(data, dict(raw, trace=trace)) if r.whose == "workload"]
    assert retry.mapping == "anonymous" and retry.what == f"vmaprobe-{pid + 1} write at {lo + 0x10:#x} in anonymous"


def test_a_malformed_retry_trace_is_a_user_error():
    _, data, raw = recorded_vma("arm64")
    with pytest.raises(UserError, match="vma trace line 1"):
        vma_locks.classify(data, dict(raw, trace=["garbage"]))
    with pytest.raises(UserError, match="no window markers"):
        vma_locks.classify(data, dict(raw, trace=[line for line in raw["trace"] if "window" not in line]))


def test_the_model_shapes_agree_with_the_kernel_qualitatively():
    model = probes.vma_model("v6.12")
    assert model["faults"]["vma_lock_abort"] + model["faults"]["vma_lock_miss"] == 0
    assert model["faults"]["vma_lock_success"] > 0
    assert model["writer"]["vma_lock_abort"] + model["writer"]["vma_lock_miss"] > 0


# ---------------------------------------------------------------------------------------
# The command line


def test_bad_lab_input_is_one_line_and_exit_2(capsys, tmp_path):
    one_line_exit_2(capsys, "lab", "run", "--arch", "sparc", says="unknown architecture 'sparc'")
    one_line_exit_2(capsys, "lab", "run", "--arch", "x86_64", "nosuch", says="unknown probe 'nosuch'")
    one_line_exit_2(capsys, "lab", "run", "--arch", "all", "--smp", "0", says="--smp")
    one_line_exit_2(capsys, "lab", "run", "--arch", "x86_64", "--out", tmp_path / "none", says="not an existing")
    one_line_exit_2(capsys, "lab", "show", tmp_path / "missing.json", says="cannot read")
    (tmp_path / "junk.json").write_text("{not json")
    one_line_exit_2(capsys, "lab", "show", tmp_path / "junk.json", says="not JSON")
    (tmp_path / "other.json").write_text(json.dumps({"format": "kstep-trace"}))
    one_line_exit_2(capsys, "lab", "show", tmp_path / "other.json", says="not a kstep lab result")
    recorded = json.loads(next((Path(__file__).parents[2] / "kernel-lab/guest/recorded").glob("arm64-*.json")).read_text())
    for broken, says in ((dict(recorded, models=None), "not tables"), (dict(recorded, arch="sparc"), "unknown architecture"),
                         ({k: v for k, v in recorded.items() if k != "kernel"}, "without kernel"),
                         (dict(recorded, cases=[{"name": "nosuch", "data": []}]), "known probes"),
                         (dict(recorded, cases=[{"name": "vma", "ok": True, "data": [{"mode": "faults", "ok": "x"}]}]),
                          "no whole number"),
                         (dict(recorded, arch=["x86_64"]), "unknown architecture"),
                         (dict(recorded, kernel=dict(recorded["kernel"], abi=6)), "as text"),
                         (dict(recorded, cases=[{"name": "vma", "ok": True, "data": [{"mode": ["faults"]}]}]),
                          "known probes, with text"),
                         (dict(recorded, cases=[{"name": "damon", "ok": True, "data": [], "raw": {"trace": [1]}}]),
                          "known probes, with text")):
        (tmp_path / "broken.json").write_text(json.dumps(broken))
        one_line_exit_2(capsys, "lab", "show", tmp_path / "broken.json", says=says)
    one_line_exit_2(capsys, "lab", says="choose a lab command")


@pytest.mark.slow  # 4.9 s in session 16's quiet clean clone: make test runs it, make test-fast does not
def test_lab_show_prints_a_recorded_result_beside_the_model(capsys, tmp_path):
    [path] = RECORDED.glob("arm64-2*.json")  # the full probe set's boot
    rc, out, err = kstep(capsys, "lab", "show", path, "--plot", tmp_path / "arm64.png")
    assert rc == 0, (out, err)
    assert "per-VMA locks (model variant v6.12" in out and "[FAIL]" not in out
    assert "model (folio-batch, arm64-4K-contpte PTEs)" in out and "  model (as-of-6.12.95, same maps" in out
    assert (tmp_path / "arm64.png").stat().st_size > 0


def test_lab_run_without_fetched_kernels_says_how_to_get_them(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    one_line_exit_2(capsys, "lab", "run", "--arch", "x86_64", "vma", says="kstep lab fetch")


# ---------------------------------------------------------------------------------------
# DAMON and the qspinlock word


MAPS = """\
00400000-00401000 r--p 00000000 00:02 12                                 /bin/vmaprobe
004bd000-004c2000 rw-p 00000000 00:00 0
1dc6b000-1dc8d000 rw-p 00000000 00:00 0                                  [heap]
7f8b6e7fe000-7f8b6e7ff000 ---p 00000000 00:00 0
7f8b6f000000-7f8b73800000 rw-p 00000000 00:00 0
7f8b7385f000-7f8b73863000 r--p 00000000 00:00 0                          [vvar]
7f8b73863000-7f8b73865000 r-xp 00000000 00:00 0                          [vdso]
7ffeb7647000-7ffeb7668000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
""".splitlines()


def test_three_regions_drop_the_two_biggest_gaps_as_damon_does():
    # heap..mmap and vdso..stack are the biggest gaps; [vsyscall] is no VMA of the mm.
    assert probes.three_regions(MAPS) == [
        (0x400000, 0x1DC8D000), (0x7F8B6E7FE000, 0x7F8B73865000), (0x7FFEB7647000, 0x7FFEB7668000)]


def trace_line(t, n, start, end, nr, age=1):
    return (f"       kdamond.0-187     [001] .....    {t:.6f}: damon_aggregated: target_id=0 "
            f"nr_regions={n} {start}-{end}: {nr} {age}")


def damon_case(hot_nr, rest_nr, regions):
    lines = []
    for k in range(3):
        lines += [trace_line(10 + k, len(regions), a, b, hot_nr if a == HOT[0] else rest_nr) for a, b in regions]
    return {"name": "damon", "ok": True, "raw": {"trace": lines, "maps": MAPS},
            "data": [{"mode": "hot", "hot": f"{HOT[0]:x}-{HOT[1]:x}", "sample_us": "5000",
                      "aggr_us": "100000", "update_us": "1000000"}]}


HOT = (0x7F8B70000000, 0x7F8B70800000)
REGIONS = [(0x400000, 0x1DC8D000), (0x7F8B6E7FE000, HOT[0]), HOT, (HOT[1], 0x7F8B73865000),
           (0x7FFEB7647000, 0x7FFEB7668000)]


def test_damon_checks_on_regions_that_cover_the_three_regions():
    case = damon_case(15, 0, REGIONS)
    assert [len(a.regions) for a in probes.damon_aggregations(case["raw"]["trace"])] == [5, 5, 5]
    assert all(c.ok for c in probes.judge_damon_case(case)), probes.judge_damon_case(case)


def test_damon_checks_catch_a_cold_hot_range_and_a_region_outside_the_maps():
    failed = {c.name for c in probes.judge_damon_case(damon_case(0, 0, REGIONS)) if not c.ok}
    assert failed == {"hot range at least 10x the rest"}
    shifted = [REGIONS[0]] + [(a, b) for a, b in REGIONS[1:-1]] + [(0x7FFEB7646000, 0x7FFEB7668000)]
    failed = {c.name for c in probes.judge_damon_case(damon_case(15, 0, shifted)) if not c.ok}
    assert failed == {"after the first update the regions cover exactly the three regions of the maps"}


def test_damon_replays_the_regions_as_an_observation_and_catches_an_age_that_jumps():
    case = damon_case(15, 0, REGIONS)
    case["raw"]["trace"] = [trace_line(10 + k, len(REGIONS), a, b, 15 if a == HOT[0] else 0, age)
                            for k, age in enumerate((1, 2, 4)) for a, b in REGIONS]
    failed = {c.name for c in probes.judge_damon_case(case) if not c.ok}
    assert failed == {"the regions replay as an observation trace (kstep check damon's region invariants)"}
    assert probes.damon_observed(case).violation.invariant == "age-grows-at-most-one"


LAB_RESULT = {"arch": "x86_64", "smp": 3, "seed": 5, "kernel": {"abi": "6.12.95+deb12"}}


def test_damon_rows_run_the_model_on_the_same_maps_hot_range_and_intervals():
    case = damon_case(15, 0, REGIONS)
    model = probes.damon_model(case, LAB_RESULT)
    assert len(model) == 3  # as many aggregations as the kernel traced
    assert probes._union(model[-1].regions) == probes.three_regions(MAPS)
    hot_mean, rest_mean = probes.damon_ratio(model, HOT)
    rows = probes.damon_rows(case, LAB_RESULT)
    assert rows[2].startswith("  model (as-of-6.12.95, same maps, hot range and seed): 3 aggregations")
    assert f"hot {hot_mean:.2f} vs rest {rest_mean:.4f}" in rows[2]
    assert "every aggregation keeps the region invariants" in rows[3]


def test_damon_rows_head_with_the_intervals_the_guest_recorded():
    case = damon_case(15, 0, REGIONS)
    case["data"][0].update(sample_us="2500", aggr_us="50000")
    assert probes.damon_rows(case, LAB_RESULT)[0].startswith("DAMON (vaddr; sample 2.5 ms, aggregate 50 ms)")


def fork_data(medians):
    return [{"mode": m, "n": "40", "mean_us": str(us), "sd_us": "100", "min_us": str(us), "median_us": str(us),
             "anon_huge_kb": "262144" if m == "2m" else "0", "split_pmd": "128" if m == "2m-pte" else "0",
             "split_page": "0"} for m, us in medians.items()]


@pytest.mark.parametrize("slow_64k, agrees", [(21600, False), (19900, True)])
def test_a_64k_fork_slower_than_4k_is_a_disagreement_on_any_margin(slow_64k, agrees):
    """ppc64le once measured 64K 1.08x slower than 4K, and a 1.2x margin passed it; the model orders 64k first."""
    model_64k = probes.fork_predictions_64k({**LAB_RESULT, "arch": "ppc64le"})
    assert model_64k["later"] < 1
    [order] = [c for c in probes.judge_fork(fork_data({"4k": 20000, "64k": slow_64k, "2m": 4000, "2m-pte": 8000}),
                                            model_64k) if "as the model orders them" in c.name]
    assert order.ok is agrees and order.timing and "median fork" in order.name
    assert ("a disagreement with the model" in order.detail) is not agrees


def test_the_first_fork_is_held_to_the_first_forks_prediction_and_the_median_to_a_later_ones():
    """forkbench's first fork copies writable, exclusive PTEs, the later ones the read-only PTEs it left: each
    time stands beside its own fork's prediction.  This boot's first 64k fork was slower than its first 4k
    fork (as a recorded x86_64 6.12 boot's was, 2.35x), its median faster: one disagreement, one agreement."""
    data = fork_data({"4k": 20000, "64k": 12000, "2m": 4000, "2m-pte": 8000})
    for d in data:
        d.update(first_us={"4k": "30000", "64k": "70000"}.get(d["mode"], "9000"), mthp64_alloc="4096",
                 mthp64_fallback="0")
    model = {"first": 0.85, "later": 0.78}
    orders = {c.name.split("'s ")[1].split(" faster")[0]: c for c in probes.judge_fork(data, model)
              if "as the model orders them" in c.name}
    assert set(orders) == {"first fork", "median fork"}
    assert not orders["first fork"].ok and orders["first fork"].detail.endswith(
        "4k 30000 us, 64k 70000 us: kernel 2.33x, model 0.85x: a disagreement with the model")
    assert orders["median fork"].ok and orders["median fork"].detail.endswith("kernel 0.60x, model 0.78x: agreement")
    model = probes.fork_predictions_64k({**LAB_RESULT, "arch": "x86_64"})
    assert model == {fork: fork_batch.predicted_relative_cost("x86-64", "folio-batch", fork=fork)["64K mTHP"]
                     for fork in ("first", "later")}
    rows = probes.fork_rows(data, {**LAB_RESULT, "arch": "x86_64"})
    assert rows[2].endswith(f"median: kernel 0.60  model {model['later']:.2f}  "
                            f"first: kernel 2.33  model {model['first']:.2f}")


@pytest.mark.parametrize("alloc, inconclusive", [(4096, False), (0, True)])
def test_a_64k_mode_without_64k_folios_is_inconclusive(alloc, inconclusive):
    data = fork_data({"4k": 20000, "64k": 10000, "2m": 4000, "2m-pte": 8000})
    for d in data:
        d.update(first_us="30000", mthp64_alloc=str(alloc if d["mode"] == "64k" else 0), mthp64_fallback="0")
    checks = probes.judge_fork(data, {"first": 0.5, "later": 0.5})
    [folios] = [c for c in checks if c.name.startswith("64k: 64K folios")]
    assert folios.ok is not inconclusive and not folios.timing
    # without the folios the 64k time is not held to the model's order at all
    assert any("as the model orders them" in c.name for c in checks) is not inconclusive
    assert any(c.name.startswith("2m at least") for c in checks)  # the other modes are judged all the same
    assert "first   30.00 ms" in probes.fork_rows(data, {**LAB_RESULT, "arch": "x86_64"})[2]


def test_fork_rows_put_the_models_operations_beside_the_kernels_times():
    rows = probes.fork_rows(fork_data({"4k": 20000, "64k": 10000, "2m": 4000, "2m-pte": 8000}),
                            {**LAB_RESULT, "arch": "arm64"})
    model = fork_batch.predicted_relative_cost("arm64-4K-contpte", "folio-batch", fork="later")
    by_mode = {r.split()[0]: r for r in rows[1:5]}
    assert by_mode["64k"].endswith(f"median: kernel 0.50  model {model['64K mTHP']:.2f}")
    assert by_mode["2m-pte"].endswith(f"median: kernel 0.40  model {model['2M PTE-mapped']:.2f}")
    assert "median: kernel 0.20  model   -  (copy_huge_pmd: not modelled)" in by_mode["2m"]
    assert "(folio-batch, arm64-4K-contpte PTEs)" in rows[0]


def test_the_models_variants_follow_the_booted_kernel():
    assert probes.fork_variant("6.12.95+deb12") == "folio-batch"
    assert probes.fork_variant("6.12.20+deb12") == "v6.12.0-batch"  # before 6.12.29's max_nr clamp
    assert probes.damon_variant("6.12.95+deb12") == "as-of-6.12.95"
    assert probes.damon_variant("6.12.96+deb12") == "v6.12.117"  # no composite of it: the default


def qspin_case(words):
    data = [{"word": f"{w:#x}", "count": "10"} for w in words]
    data.append({"samples": "100", "acquisitions": "50", "distinct": str(len(words)), "overflow": "0",
                 "nthreads": "2"})
    return {"name": "qspin", "ok": True, "data": data, "raw": {}}


def test_the_qspinlock_decoder_accepts_reachable_words():
    reachable = probes.reachable_words(2)
    assert {0x0, 0x1, 0x100, 0x101, 0x40000, 0x80100} <= reachable
    checks = probes.judge_qspin_case(qspin_case([0x0, 0x1, 0x100, 0x101, 0x40000, 0x80001]), "x86_64")
    assert all(c.ok for c in checks), checks


def test_the_qspinlock_decoder_rejects_an_unreachable_word():
    # Two lockers on CPUs 0 and 1: a tail naming CPU 2 (0xc0000), or a pending byte of 2, cannot occur.
    for bad in (0xC0001, 0x201):
        checks = probes.judge_qspin_case(qspin_case([0x1, 0x101, 0x40001, bad]), "arm64")
        failed = [c for c in checks if not c.ok]
        assert [c.name for c in failed] == ["every sampled word is in the model's reachable set for 2 CPUs"]
        assert f"{bad:#x}" in failed[0].detail


def test_three_cpus_reach_every_word_of_the_layout_two_do_not():
    # With three lockers every (tail cpu 0-2, pending, locked) word is reachable; two never show
    # tail + pending + locked, which needs a holder, a pending waiter and a queued CPU.
    assert probes.reachable_words(3) == probes.word_universe(3) and len(probes.word_universe(3)) == 16
    assert probes.word_universe(2) - probes.reachable_words(2) == {0x40101, 0x80101}


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_the_recorded_three_locker_boots_stay_in_the_three_cpu_set(arch):
    [path] = RECORDED.glob(f"{arch}-smp4-qspin-*.json")
    result = guest.load_result(path)
    case = next(c for c in result["cases"] if c["name"] == "qspin")
    words, summary = probes.qspin_words(case["data"])
    assert result["smp"] == 4 and summary["nthreads"] == "3"
    assert all(c.ok for c in probes.judge(result)), probes.judge(result)
    # the third locker shows: words the two-CPU set cannot hold (a tail naming CPU 2)
    assert set(words) - probes.reachable_words(2)


def test_powerpc_words_are_classified_by_powerpc_layout():
    assert probes.decode_powerpc(0x8001) == "sleepy (paravirt) + locked by cpu0"
    assert probes.decode_powerpc(0x50000) == "tail cpu1 + must-queue"
    checks = probes.judge_qspin_case(qspin_case([0x3, 0x8001, 0x50000]), "ppc64le")
    assert all(c.ok for c in checks), checks
    checks = probes.judge_qspin_case(qspin_case([0x3, 0x7]), "ppc64le")  # cpu 3 holds it: not a locker
    assert [c.ok for c in checks] == [False, False]


def test_the_flavour_makefile_is_pointed_at_the_cached_common_headers(tmp_path):
    src = tmp_path / "headers" / "usr" / "src"
    flavour = src / f"linux-headers-{ABI_OLD}-amd64"
    flavour.mkdir(parents=True)
    # Debian's own line, and one left by an extraction under another directory name.
    for old in ("/usr/src", f"/cache/lab/{ABI_OLD}.partial/headers/usr/src"):
        (flavour / "Makefile").write_text(f"include {old}/linux-headers-{ABI_OLD}-common/Makefile\n")
        kernels._fix_headers(tmp_path / "headers")
        assert (flavour / "Makefile").read_text() == f"include {src}/linux-headers-{ABI_OLD}-common/Makefile\n"


def test_lab_show_says_how_the_booted_release_differs_from_the_source():
    """The lab boots Debian's 6.12.95 while the source, code pane and default variants are 6.12.117:
    lab show names the gap in the models' terms (the DAMON fixes the booted kernel lacks)."""
    result = {"kernel": {"abi": "6.12.95+deb12-amd64"}, "models": {"vma-locks": "v6.12"}}
    gap = probes.release_gap(result)
    assert gap.startswith("booted 6.12.95, the source (code pane, step texts, default variants) is 6.12.117")
    assert "DAMON as as-of-6.12.95, without charge-addr-from (6.12.97)," in gap and "merge-loop (6.12.111)" in gap
    assert "evenly-split" not in gap and "per-VMA locks as v6.12" in gap
    same = {"kernel": {"abi": f"{source_index.pinned_release()}+deb12-amd64"}, "models": {}}
    assert probes.release_gap(same) == f"booted the source release {source_index.pinned_release()}"
