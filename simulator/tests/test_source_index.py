"""The committed Linux 6.12 function index, its loader, and the parser that builds it."""

import gzip
import io
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kstep.source import index as source_index
from kstep.source.debian import PrivateApt, host_mirrors

from conftest import STALE_PIN_CHECK

# Each was read in Debian's linux-source-6.12 6.12.117-1~deb12u1 before being listed here.
KNOWN_GOOD = [
    "mm/memory.c:lock_vma_under_rcu",
    "include/linux/mm.h:vma_start_read",
    "include/linux/mm.h:vma_end_read",
    "include/linux/mm.h:vma_start_write",
    "include/linux/mm.h:__is_vma_write_locked",
    "include/linux/mmap_lock.h:vma_end_write_all",
    "include/linux/mmap_lock.h:mmap_write_unlock",
    "include/linux/mmap_lock.h:mm_lock_seqcount_begin",
    "lib/maple_tree.c:mas_walk",
    "mm/vma.h:vma_iter_store",
    "mm/vma.c:vms_gather_munmap_vmas",
    "kernel/locking/rwsem.c:down_read_trylock",
    "include/linux/rcupdate.h:rcu_read_lock",
    "kernel/rcu/tree.c:call_rcu",
    "kernel/rcu/tree_plugin.h:rcu_qs",
    "kernel/fork.c:vm_area_free",
    "kernel/fork.c:vm_area_free_rcu_cb",
    "kernel/locking/qspinlock.c:queued_spin_lock_slowpath",
    "kernel/locking/qspinlock.c:xchg_tail",
    "include/asm-generic/qspinlock.h:queued_spin_unlock",
    "arch/powerpc/lib/qspinlock.c:try_to_steal_lock",
    "mm/damon/core.c:damon_merge_two_regions",
    "mm/memory.c:copy_pte_range",
    "arch/arm64/mm/contpte.c:contpte_ptep_get",
    "arch/x86/mm/fault.c:do_user_addr_fault",
    "arch/arm64/mm/fault.c:do_page_fault",
    "arch/powerpc/mm/fault.c:___do_page_fault",
    # function-like macros
    "include/linux/rcupdate.h:rcu_dereference",
    "include/linux/rcupdate.h:rcu_assign_pointer",
    "include/linux/vmstat.h:count_vm_vma_lock_event",
    "kernel/locking/mcs_spinlock.h:arch_mcs_spin_lock_contended",
    # defined through a macro that names them
    "arch/x86/mm/fault.c:exc_page_fault",
    "arch/powerpc/mm/fault.c:do_page_fault",
    "mm/mmap.c:sys_munmap",
]

KNOWN_BAD = [
    "mm/memory.c:no_such_function",
    "mm/no_such_file.c:lock_vma_under_rcu",
    "mm/memory.c:vma_start_read",  # real, but defined in include/linux/mm.h
    "kernel/rcu/tree.c:rcu_qs",  # real, but in tree_plugin.h (which tree.c #includes)
    "kernel/locking/qspinlock.c:queued_spin_lock",  # real, but in the asm-generic header
    "mm/memory.c:VMA_LOCK_ABORT",  # an enum constant, not a function
    "mm/memory.c",
    "lock_vma_under_rcu",
]


@pytest.mark.parametrize("location", KNOWN_GOOD)
def test_known_locations_exist(location):
    assert source_index.exists(location), location


@pytest.mark.parametrize("location", KNOWN_BAD)
def test_wrong_locations_do_not_exist(location):
    assert not source_index.exists(location), location


def test_header_names_the_debian_6_12_package():
    header = source_index.header()
    assert header["package"] == "linux-source-6.12"
    assert source_index.version() == header["version"] == source_index.VERSION
    assert header["version"].startswith(header["kernel"] + "-")
    assert header["kernel"].split(".")[:2] == ["6", "12"]
    assert len(header["sha256"]) == 64


def test_index_covers_every_part_and_is_sorted():
    index = source_index.load_index()
    for part in source_index.PARTS:
        assert any(p == part or (part.endswith("/") and p.startswith(part)) for p in index), part
    assert all(path.endswith((".c", ".h")) for path in index)
    assert len(index) > 3000 and sum(map(len, index.values())) > 30000
    data = source_index.default_index_path().read_bytes()
    assert data[4:8] == b"\0\0\0\0", "gzip mtime must be 0 for a reproducible index"
    lines = gzip.decompress(data).decode().splitlines()
    body = [line for line in lines if not line.startswith("#")]
    assert body == sorted(body)
    assert all(line.split("\t")[1].split() == sorted(line.split("\t")[1].split()) for line in body)


def test_load_index_returns_a_copy():
    source_index.load_index().clear()
    assert source_index.exists("mm/memory.c:lock_vma_under_rcu")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bogus"], "invalid choice: 'bogus'"),
        (["build", "--deb", "/no/such/file.deb"], "--deb /no/such/file.deb: no such file"),
        (["build", "--out", "/no/such/dir/index.txt.gz"], "directory /no/such/dir does not exist"),
    ],
)
def test_bad_command_lines_get_one_line_and_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        source_index.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_not_a_deb_is_bad_input(tmp_path, capsys):
    fake = tmp_path / "linux-source.deb"
    fake.write_text("not an ar archive")
    with pytest.raises(SystemExit) as exit_:
        source_index.main(["build", "--deb", str(fake), "--out", str(tmp_path / "i.gz")])
    assert exit_.value.code == 2
    assert "is not a Debian package" in capsys.readouterr().err
    assert not (tmp_path / "i.gz").exists()


def test_check_command(capsys):
    assert source_index.main(["check", "mm/memory.c:lock_vma_under_rcu"]) == 0
    assert source_index.main(["check", "mm/memory.c:vma_start_read"]) == 1
    assert "mm/memory.c:vma_start_read" in capsys.readouterr().out


# The parser, on small pieces of kernel-style C.

C_SAMPLE = r"""
#define rcu_dereference(p) rcu_dereference_check(p, 0)
#define NOT_A_FUNCTION (1 << 2)
#define multi_line(a, b) \
	do { if (a) { b; } } while (0)
static const char *msg = "{ not a body }";
static struct ops ops = { .open = my_open, };
struct vma_lock { struct rw_semaphore lock; };
/* void commented_out(void) { } */
static inline void do_raw_spin_lock(raw_spinlock_t *lock) __acquires(lock)
{
	if (x) { y(); }
}
#ifdef CONFIG_PER_VMA_LOCK
static inline bool vma_start_read(struct vm_area_struct *vma)
{
#else
static inline bool vma_start_read(struct vm_area_struct *vma, int unused)
{
#endif
	return '{';
}
static void (*get_ctor(int shift))(void *)
{
	return NULL;
}
SYSCALL_DEFINE2(munmap, unsigned long, addr, size_t, len)
{
	return 0;
}
DEFINE_IDTENTRY_RAW_ERRORCODE(exc_page_fault)
{
}
int after_all_that(void) { return 0; }
"""


def test_parser_finds_definitions_and_function_like_macros():
    assert source_index.definitions(C_SAMPLE) == {
        "rcu_dereference",
        "multi_line",
        "do_raw_spin_lock",
        "vma_start_read",
        "get_ctor",
        "sys_munmap",
        "exc_page_fault",
        "after_all_that",
    }


def test_definition_lines_span_a_function_from_its_declaration_to_its_closing_brace():
    lines = C_SAMPLE.split("\n")

    def line_of(prefix):
        return next(n for n, text in enumerate(lines, 1) if text.startswith(prefix))

    spin = line_of("static inline void do_raw_spin_lock")
    assert source_index.definition_lines(C_SAMPLE, "do_raw_spin_lock") == (spin, spin + 3)
    ctor = line_of("static void (*get_ctor")
    assert source_index.definition_lines(C_SAMPLE, "get_ctor") == (ctor, ctor + 3)
    last = line_of("int after_all_that")
    assert source_index.definition_lines(C_SAMPLE, "after_all_that") == (last, last)
    # macros, a commented-out body, a struct, and a definition split over #ifdef branches have no span
    for name in ("rcu_dereference", "multi_line", "commented_out", "vma_lock", "vma_start_read", "nowhere"):
        assert source_index.definition_lines(C_SAMPLE, name) is None, name


def test_private_apt_configuration_stays_off_the_host(tmp_path):
    apt = PrivateApt(
        root=tmp_path, architectures=["amd64", "arm64"], mirror="http://mirror.invalid/debian"
    )
    sources = apt.sources_list()
    for suite in ("bookworm", "bookworm-updates", "bookworm-security", "bookworm-backports"):
        assert f" {suite} main" in sources
    assert "http://mirror.invalid/debian-security bookworm-security" in sources
    conf = apt.apt_conf()
    assert f'Dir::Etc "{tmp_path}/etc/";' in conf
    assert f'Dir::State "{tmp_path}/state/";' in conf
    assert f'Dir::Cache "{tmp_path}/cache/";' in conf
    assert 'Dir::Etc::Parts "apt.conf.d";' in conf  # so the host's apt.conf.d hooks never run
    assert 'APT::Architectures { "amd64"; "arm64"; };' in conf
    assert "/etc/apt" not in conf and "/var/lib/apt" not in conf and "/var/cache/apt" not in conf


def test_host_mirrors_reads_both_source_formats(tmp_path):
    (tmp_path / "a.sources").write_text(
        "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.invalid/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n"
    )
    assert host_mirrors([tmp_path]) == (
        "http://mirror.invalid/debian",
        "http://mirror.invalid/debian-security",
    )
    one_line = tmp_path / "b.list"
    one_line.write_text("# comment\ndeb [arch=amd64] http://other.invalid/debian bookworm main\n")
    assert host_mirrors([one_line]) == ("http://other.invalid/debian", None)
    assert host_mirrors([Path(tmp_path / "missing")]) == (None, None)


def _tar_xz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _fake_source_deb(path, version, sublevel):
    """A linux-source .deb as Debian builds it (ar: control.tar.xz, data.tar.xz holding the tarball),
    with a two-file tree of release 6.12.<sublevel>."""
    tree = _tar_xz({
        "linux-source-6.12/Makefile": f"VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = {sublevel}\n".encode(),
        "linux-source-6.12/mm/memory.c": b"int do_fault(int x)\n{\n\treturn x;\n}\n",
    })
    members = {
        "control.tar.xz": _tar_xz({"./control": f"Package: linux-source-6.12\nVersion: {version}\n".encode()}),
        "data.tar.xz": _tar_xz({"./usr/src/linux-source-6.12.tar.xz": tree}),
    }
    with open(path, "wb") as f:
        f.write(b"!<arch>\n")
        for name, data in members.items():
            f.write(f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode())
            f.write(data + b"\n" * (len(data) & 1))
    return path


def test_a_newer_release_is_unpacked_and_named_a_stale_pin(tmp_path, monkeypatch):
    """Debian keeps only the newest 6.12.y: the tree falls back to it, and the checks that need the
    pinned release exactly then fail on one named reason."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    newer = _fake_source_deb(tmp_path / "new.deb", "6.12.120-1~deb12u1", 120)
    asked = []

    class Apt:
        def __init__(self, log):
            pass

        def download(self, package, version):
            asked.append(version)
            if version == source_index.VERSION:
                raise source_index.DebianFetchError(f"look up {package}={version}: not in the archive")
            return newer

        def record(self, package):
            return {"Version": "6.12.120-1~deb12u1"}

    monkeypatch.setattr(source_index, "PrivateApt", Apt)
    log = []
    tree = source_index.fetch_tree(log.append)
    assert asked == [source_index.VERSION, "6.12.120-1~deb12u1"]
    assert any("no longer in Debian's archive" in line for line in log)
    assert source_index.linux_tree() == tree
    assert source_index.stale_pin(tree) == "stale pin: 6.12.117 -> 6.12.120"
    assert source_index.index_tree(tree) == {"mm/memory.c": frozenset({"do_fault"})}


def test_an_interrupted_unpack_is_never_taken_for_a_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    deb = _fake_source_deb(tmp_path / "pinned.deb", source_index.VERSION, 117)

    def interrupted(deb, tree, log):
        (tree / "mm").mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(source_index, "extract_tree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        source_index.unpack(deb, lambda line: None)
    assert source_index.linux_tree() is None
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tree = source_index.unpack(deb, lambda line: None)
    assert source_index.linux_tree() == tree and source_index.stale_pin(tree) is None


def test_the_unpacked_tree_is_the_pinned_release():
    """The one release-exact check that fails when make linux-source had to take a newer 6.12.y
    (the others, through the linux_tree fixture, are skipped naming it)."""
    tree = source_index.linux_tree()
    assert tree is not None, "no linux-source-6.12 tree in the user cache: run make linux-source"
    assert source_index.stale_pin(tree) is None, source_index.stale_pin(tree)


def test_every_default_variant_is_the_pinned_release():
    """Issue 23: the package names one source release, and the default variants follow it (older releases
    stay as dated variants)."""
    from kstep.models import MODELS

    assert {name: cls.variants[cls.default_variant].when for name, cls in MODELS.items()} == {
        name: source_index.pinned_release() for name in MODELS}


def test_a_stale_tree_fails_one_named_check_not_a_cascade(tmp_path):
    """With only a 6.12.120 tree in the cache, the pinned-release check fails naming the stale pin,
    and a release-exact check (the find-bug keys' kernel lines) is skipped with that reason."""
    tree = tmp_path / "cache" / "kstep" / "src" / f"{source_index.PACKAGE}_6.12.120-1~deb12u1"
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 120\n")
    (tree / source_index.COMPLETE).write_text("linux-source-6.12 6.12.120-1~deb12u1\n")
    tests = Path(__file__).parent
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", str(tests / STALE_PIN_CHECK),
         str(tests / "test_findbug.py::test_keys_name_the_lines_of_linux_6_12")],
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}, capture_output=True, text=True, cwd=tests)
    out = run.stdout
    assert run.returncode == 1 and re.search(r"\b1 failed, [2-9]\d* skipped\b", out), out[-2000:]
    assert "AssertionError: stale pin: 6.12.117 -> 6.12.120" in out
    assert "stale pin: 6.12.117 -> 6.12.120: release-exact" in out
