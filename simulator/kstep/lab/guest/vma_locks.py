"""Whose faults the per-VMA lock probe saw retried, and on what, read from its trace.

In Linux 6.12, handle_mm_fault() returns VM_FAULT_RETRY for a fault made under the VMA lock
(FAULT_FLAG_VMA_LOCK) from these paths (mm/memory.c unless named), after vma_end_read():

- ``__vmf_anon_prepare()``: the VMA has no anon_vma yet and ``mmap_read_trylock()`` fails (an
  anonymous write fault in do_anonymous_page(), a COW in do_cow_fault() or wp_page_copy(), an
  anonymous THP in do_huge_pmd_anonymous_page(), hugetlb's faults);
- ``vmf_can_call_fault()``: the VMA's vm_ops has no ``map_pages`` (do_read_fault(), do_cow_fault(),
  do_shared_fault(), wp_pfn_shared(), wp_page_shared()): such a ``->fault`` has not been audited to
  run without mmap_lock;
- ``do_swap_page()``: a device-private entry, or ``folio_lock_or_retry()`` on a locked folio
  (also in remove_device_exclusive_entry());
- the ``->fault`` handlers: filemap_fault() (``lock_folio_maybe_drop_mmap()``, readahead that drops
  the lock for I/O), shmem_fault() (waiting out a hole punch), handle_userfault().

The probe (``kernel-lab/guest/init``, ``probe_vma``) traces each such retry (kprobe event
``kstep_vma_retry``: the fault's address and flags, its VMA's start and end), each call of
``special_mapping_fault()`` (``kstep_vma_special``: the ``->fault`` of the [vdso] and [vvar]
mappings, whose special_mapping_vmops has no ``map_pages``) and the markers vmaprobe writes around
its workload; vmaprobe prints its own maps.  ``classify`` names each retry: whose it is (the
workload's, inside its window; vmaprobe's start-up or exit; another process, such as the busybox
tools /init runs to read the counts), which mapping of vmaprobe it hit, and whether
special_mapping_fault() then served the same page under mmap_lock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kstep.errors import UserError

PAGE = 4096  # the three lab kernels (amd64, arm64, the 4K ppc64el flavour) use 4 KiB pages
FAULT_FLAG_INSTRUCTION = 0x100
START, STOP = "kstep-vma window start", "kstep-vma window stop"
# "comm-tid (tgid) [cpu] flags seconds: event: fields", as tracefs prints with options/record-tgid
_LINE = re.compile(r"^(?P<comm>.*)-(?P<tid>\d+)\s+\(\s*(?P<tgid>\d+|-+)\)\s+\[\d+\]\s+\S+\s+"
                   r"(?P<seconds>\d+\.\d+): (?P<event>\w+): (?P<rest>.*)$")
_FIELD = re.compile(r"(\w+)=(0x[0-9a-f]+|\d+)")
_MAPS = re.compile(r"^(?P<pid>\d+) (?P<start>[0-9a-f]+)-(?P<end>[0-9a-f]+) \S+ \S+ \S+ \S+\s*(?P<name>.*)$")


@dataclass(frozen=True)
class Retry:
    comm: str
    tid: int
    tgid: int
    seconds: float
    addr: int
    start: int
    end: int
    flags: int
    whose: str  # "workload" (inside its window), "start-up", "exit" (vmaprobe's), or "other"
    mode: str | None  # the vmaprobe run (faults, writer) whose process it is
    mapping: str | None  # the mapping of vmaprobe's maps it hit ("[vdso]", "anonymous", a path)
    special: bool  # special_mapping_fault() served the same page next, under mmap_lock

    @property
    def what(self) -> str:
        kind = "instruction fetch" if self.flags & FAULT_FLAG_INSTRUCTION else "read" if not self.flags & 1 else "write"
        where = self.mapping or f"VMA {self.start:#x}-{self.end:#x}"
        served = ", then special_mapping_fault()" if self.special else ""
        return f"{self.comm}-{self.tid} {kind} at {self.addr:#x} in {where}{served}"


@dataclass(frozen=True)
class _Event:
    comm: str
    tid: int
    tgid: int
    seconds: float
    event: str
    rest: str

    def fields(self) -> dict[str, int]:
        return {k: int(v, 0) for k, v in _FIELD.findall(self.rest)}


def _events(trace: list[str]) -> list[_Event]:
    out = []
    for n, line in enumerate(trace, 1):
        m = _LINE.match(line)
        if not m:
            raise UserError(f"vma trace line {n}: {line[:60]!r} is not 'comm-tid (tgid) [cpu] ... seconds: event: ...'")
        tid = int(m["tid"])
        out.append(_Event(m["comm"].strip(), tid, int(m["tgid"]) if m["tgid"].isdigit() else tid,
                          float(m["seconds"]), m["event"], m["rest"]))
    return out


def _maps(lines: list[str]) -> dict[int, list[tuple[int, int, str]]]:
    out: dict[int, list[tuple[int, int, str]]] = {}
    for line in lines:
        m = _MAPS.match(line)
        if not m:
            raise UserError(f"vma maps: {line[:60]!r} is not 'PID START-END PERMS OFFSET DEV INODE [NAME]'")
        out.setdefault(int(m["pid"]), []).append((int(m["start"], 16), int(m["end"], 16), m["name"] or "anonymous"))
    return out


def classify(data: list[dict[str, str]], raw: dict[str, list[str]]) -> list[Retry]:
    """Every VMA-lock retry of the vma probe's trace, named; ``data`` are its ``# vma mode=...`` lines."""
    events = _events(raw.get("trace", []))
    maps = _maps(raw.get("maps", []))
    runs = {}
    for d in data:
        if not d.get("pid", "").isdigit():
            raise UserError(f"vma mode={d.get('mode')}: no pid= of the vmaprobe run")
        pid = int(d["pid"])
        marks = {e.rest: e.seconds for e in events if e.event == "tracing_mark_write" and e.tgid == pid}
        if START not in marks or STOP not in marks:
            raise UserError(f"vma mode={d.get('mode')}: the trace has no window markers of vmaprobe {pid}")
        runs[pid] = (d.get("mode"), marks[START], marks[STOP])
    out = []
    for k, e in enumerate(events):
        if e.event != "kstep_vma_retry":
            continue
        f = e.fields()
        if not {"addr", "start", "end", "flags"} <= f.keys():
            raise UserError(f"vma trace: {e.event} of {e.comm}-{e.tid} lacks addr, start, end or flags")
        served = next((s for s in events[k + 1:] if s.event == "kstep_vma_special" and s.tid == e.tid), None)
        special = served is not None and served.fields().get("addr") == f["addr"] & -PAGE
        mode = whose = mapping = None
        if e.tgid in runs:
            mode, start, stop = runs[e.tgid]
            whose = "start-up" if e.seconds < start else "exit" if e.seconds > stop else "workload"
            mapping = next((name for lo, hi, name in maps.get(e.tgid, []) if lo <= f["addr"] < hi), None)
        out.append(Retry(e.comm, e.tid, e.tgid, e.seconds, f["addr"], f["start"], f["end"], f["flags"],
                         whose or "other", mode, mapping, special))
    return out


def summary(retries: list[Retry], mode: str) -> str:
    """One line: the retries of one vmaprobe run by whose they are, and what they hit."""
    mine = [r for r in retries if r.mode == mode]
    parts = []
    for whose in ("workload", "start-up", "exit"):
        rs = [r for r in mine if r.whose == whose]
        if rs or whose == "workload":
            hit = sorted({r.mapping or "?" for r in rs})
            parts.append(f"{len(rs)} {'in its window' if whose == 'workload' else 'at ' + whose}"
                         + (f" ({', '.join(hit)})" if hit else ""))
    return "workload retries: " + ", ".join(parts)
