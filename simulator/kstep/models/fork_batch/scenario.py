"""What a fork-batch scenario file may say (``SCHEMA``: the PTE format, the VMAs, folios and the
PTEs that map them, the threads), the rules a valid one follows, and the initial state it gives.
"""

from __future__ import annotations

from ...engine import Frame
from ...scenario_spec.scenario import Bool, Int, Key, List, Name, Str, Table, bad, unique_names
from ..rcu import RCU_ACTOR, rcu_init
from ..vma_locks import rwsem
from ..vma_locks import state as vl
from . import pgtable as pt
from .pgtable import (ARM64, FORMATS, HAS_SOFT_DIRTY, HAS_UFFD_WP, Ops, PTE_DIRTY, PTE_PRESENT, PTE_SOFT_DIRTY,
                      PTE_SPECIAL, PTE_SWP_EXCLUSIVE, PTE_UFFD_WP, PTE_WRITE, PTE_YOUNG, X86_64)
from .state import (ANON, Copy, FILE, FIRST_PFN, Folio, ForkState, GUP_PIN_COUNTING_BIAS, MAX_PAGES,
                    NO_LARGE_MAPCOUNT, ORDERS, PRIVATE_ANON, PRIVATE_FILE, SHARED, SHMEM, Thread, Vm, ZERO_PFN)


VMA_KINDS = (PRIVATE_ANON, PRIVATE_FILE, SHARED)
FOLIO_KINDS = (ANON, FILE, SHMEM)
ZERO_MAP, SWAP_MAP = "zero", "swap"
TOGGLES = ("write", "dirty", "young", "soft_dirty", "uffd_wp")
BIT = {"write": PTE_WRITE, "dirty": PTE_DIRTY, "young": PTE_YOUNG, "soft_dirty": PTE_SOFT_DIRTY,
       "uffd_wp": PTE_UFFD_WP}
A_AND_D = PTE_DIRTY | PTE_YOUNG  # what hardware sets in one sub-PTE of a folded block, without unfolding
MAX_THREADS = 6
MAX_MAPS = 64  # [[folios]] and [[maps]] entries a scenario may have (the C port's MAX_ITEMS)


def _vma_rules(v, path):
    if v["start"] >= v["end"]:
        raise bad(path, f"start {v['start']} must be below end {v['end']}")


def folio_pages(order: int) -> int:
    return 1 << order


def _scenario_rules(sc, path):
    fmt = sc["format"]
    vmas = sorted(sc["vmas"], key=lambda v: v["start"])
    for a, b in zip(vmas, vmas[1:]):
        if b["start"] < a["end"]:
            raise bad("vmas", f"[{a['start']}, {a['end']}) and [{b['start']}, {b['end']}) overlap")
    for k, v in enumerate(sc["vmas"]):
        if v["soft_dirty"] and not HAS_SOFT_DIRTY[fmt]:
            raise bad(f"vmas[{k}].soft_dirty", f"{fmt} has no soft-dirty tracking")
        if v["uffd_wp"] and not HAS_UFFD_WP[fmt]:
            raise bad(f"vmas[{k}].uffd_wp", f"{fmt} has no uffd-wp")
    names = [f["name"] for f in sc["folios"]]
    unique_names(names, (ZERO_MAP, SWAP_MAP), "folios")
    for k, f in enumerate(sc["folios"]):
        if f["order"] not in ORDERS:
            raise bad(f"folios[{k}].order", f"{f['order']} is not one of {', '.join(map(str, ORDERS))}")
        if f["pinned"] and not sc["mmf_has_pinned"]:
            raise bad(f"folios[{k}].pinned", "a pinned folio needs mmf_has_pinned = true (FOLL_PIN sets it)")
        if f["pinned"] and f["kind"] != ANON:
            raise bad(f"folios[{k}].pinned", "only anonymous folios are pinned here")
    folios = {f["name"]: f for f in sc["folios"]}
    used = {}
    for k, m in enumerate(sc["maps"]):
        where = f"maps[{k}]"
        _map_rules(sc, m, where, folios, fmt)
        for a in range(m["at"], m["at"] + map_pages(m, folios)):
            if a in used:
                raise bad(where, f"page {a} is already mapped by maps[{used[a]}]")
            used[a] = k
        if m["folio"] in folios:
            name = m["folio"]
            for p in range(m["first"], m["first"] + map_pages(m, folios)):
                if (name, p) in used:
                    raise bad(where, f"page {p} of folio {name} is already mapped by maps[{used[(name, p)]}]")
                used[(name, p)] = k
    _pinned_rules(sc, folios)
    threads = sc["threads"]
    unique_names([t["name"] for t in threads], (RCU_ACTOR,), "threads")
    if [t["kind"] for t in threads].count("fork") != 1:
        raise bad("threads", "exactly one thread forks")
    for k, t in enumerate(threads):
        _thread_rules(sc, t, f"threads[{k}]", used, folios)


def map_pages(m, folios) -> int:
    if m["folio"] in folios:
        return m["pages"] or folio_pages(folios[m["folio"]]["order"]) - m["first"]
    return m["pages"] or 1


def _map_rules(sc, m, where, folios, fmt):
    vma = next((v for v in sc["vmas"] if v["start"] <= m["at"] < v["end"]), None)
    if vma is None:
        raise bad(where, f"page {m['at']} is in no VMA")
    n = map_pages(m, folios)
    end = vma["end"]
    while m["at"] + n > end:  # a VMA split after set_ptes (mprotect, madvise, uffd) leaves the PTEs as they were
        nxt = next((v for v in sc["vmas"] if v["start"] == end), None)
        if nxt is None or (nxt["kind"], nxt["prot"]) != (vma["kind"], vma["prot"]):
            raise bad(where, f"pages {m['at']}..{m['at'] + n - 1} run past the end of their VMA ({end}) into "
                             "no VMA split from it (one next to it of the same kind and protection)")
        end = nxt["end"]
    name = m["folio"]
    if name not in folios and name not in (ZERO_MAP, SWAP_MAP):
        raise bad(where + ".folio", f"{name!r} is not a folio's name, 'zero' or 'swap'")
    if name in folios:
        f = folios[name]
        if m["first"] + n > folio_pages(f["order"]):
            raise bad(where, f"folio {name} has {folio_pages(f['order'])} pages; this maps up to page "
                             f"{m['first'] + n - 1}")
        if f["kind"] == ANON and vma["kind"] == SHARED:
            raise bad(where, "an anonymous folio in a shared mapping")
        if f["kind"] != ANON and vma["kind"] == PRIVATE_ANON:
            raise bad(where, f"a {f['kind']} folio in a private anonymous mapping")
        if f["kind"] == SHMEM and vma["kind"] != SHARED:
            raise bad(where, "a shmem folio outside a shared mapping")
    elif m["first"]:
        raise bad(where + ".first", f"the {name} entries have no folio pages to start at")
    if name in (ZERO_MAP, SWAP_MAP) and vma["kind"] != PRIVATE_ANON:
        raise bad(where, f"{name} entries belong to private anonymous mappings")
    for bit in TOGGLES:
        for off in m["toggle_" + bit]:
            if off >= n:
                raise bad(f"{where}.toggle_{bit}", f"{off} is not one of this entry's {n} pages")
    for k in range(n):
        bits = map_bits(m, k)
        page = f"{where} page {m['at'] + k}"
        if bits & PTE_SOFT_DIRTY and not HAS_SOFT_DIRTY[fmt]:
            raise bad(page, f"{fmt} has no soft-dirty bit")
        if bits & PTE_UFFD_WP and not HAS_UFFD_WP[fmt]:
            raise bad(page, f"{fmt} has no uffd-wp bit")
        if bits & PTE_WRITE and ("w" not in vma["prot"] or name in (ZERO_MAP, SWAP_MAP)):
            raise bad(page, "is writable, but " + ("its VMA is read-only" if "w" not in vma["prot"]
                                                   else f"a {name} entry never is"))
        anon = name == SWAP_MAP or name in folios and folios[name]["kind"] == ANON
        if bits & PTE_WRITE and anon and not m["exclusive"]:
            raise bad(page, "is a writable PTE to an anonymous page that is not exclusive")
        if bits & PTE_WRITE and bits & PTE_UFFD_WP:
            raise bad(page, "is writable and uffd-wp, but pte_mkuffd_wp write-protects the PTE it marks")
        if bits & PTE_WRITE and vma["kind"] == PRIVATE_FILE and name in folios and folios[name]["kind"] == FILE:
            raise bad(page, "is a writable page-cache PTE in a private file mapping, where a write fault "
                            "copies the page (do_cow_fault, wp_page_copy) and the page cache stays read-only")


def _pinned_rules(sc, folios):
    """sanity_check_pinned_pages: a pinned small anonymous folio's page is PageAnonExclusive; of a
    large one, the pinned page or the head page is.  The scenario does not say which page was pinned,
    so a large folio needs one mapped page exclusive, and its other pages may be shared."""
    for k, f in enumerate(sc["folios"]):
        mapped = [m for m in sc["maps"] if m["folio"] == f["name"]]
        if f["pinned"] and mapped and not any(m["exclusive"] for m in mapped):
            raise bad(f"folios[{k}].pinned", "a pinned anonymous folio maps its pinned page exclusive "
                                             "(sanity_check_pinned_pages); here no page of it is")


def map_bits(m, k: int) -> int:
    """The PTE bits of page k of a [[maps]] entry, toggles applied."""
    bits = 0
    for bit in TOGGLES:
        if m[bit] != (k in m["toggle_" + bit]):
            bits |= BIT[bit]
    return bits


def _thread_rules(sc, t, where, used, folios):
    if t["kind"] == "fault":
        if not t["faults"]:
            raise bad(where + ".faults", "a fault thread needs at least one address")
        for a in t["faults"]:
            vma = next((v for v in sc["vmas"] if v["start"] <= a < v["end"]), None)
            if vma is None or vma["kind"] != PRIVATE_ANON or a in used:
                raise bad(where + ".faults", f"{a} is not a hole in a private anonymous mapping")
    elif t["faults"]:
        raise bad(where + ".faults", "only a fault thread takes faults")
    if t["kind"] == "gup":
        m = sc["maps"][used[t["addr"]]] if t["addr"] in used else None
        if m is None or m["folio"] not in folios or folios[m["folio"]]["kind"] != ANON:
            raise bad(where + ".addr", f"page {t['addr']} does not map an anonymous folio")


SCHEMA = Table({
    "format": Key(Str(FORMATS, doc="the PTE format: x86-64, arm64 with 4 KiB pages and contiguous PTEs, "
                                   "generic (the generic hint and ptep_get, as on ppc64le radix), or arm64 with "
                                   "4 KiB pages without contiguous PTEs (arm64-4K)"), X86_64),
    "mmf_has_pinned": Key(Bool(doc="MMF_HAS_PINNED: the process has pinned pages with FOLL_PIN before"), False),
    "large_mapcount": Key(Bool(doc="large folios keep folio->_large_mapcount, as 6.12's do: dup'ing a batch's rmap "
                                   "is one atomic per page and one more; false: the rmap of the thread's December "
                                   "2023 kernels, one page->_mapcount atomic per PTE and no more"), True),
    "vmas": Key(List(Table({
        "start": Key(Int(0, MAX_PAGES - 1, "vm_start, a page number (a PTE table maps 512 pages)")),
        "end": Key(Int(1, MAX_PAGES, "vm_end (exclusive)")),
        "kind": Key(Str(VMA_KINDS, doc="private anonymous memory, a private file mapping, or a shared mapping"),
                    PRIVATE_ANON),
        "prot": Key(Str(("r", "rw"), doc="protection"), "rw"),
        "anon_vma": Key(Bool(doc="has an anon_vma (without one, and without uffd-wp, fork copies nothing)"),
                        True),
        "soft_dirty": Key(Bool(doc="soft-dirty tracking is on (VM_SOFTDIRTY clear): the bit then ends batches"),
                          False),
        "uffd_wp": Key(Bool(doc="the child's VMA keeps VM_UFFD_WP (a uffd with the fork event)"), False),
    }, rules=_vma_rules), 1, 8, "the parent's VMAs, non-overlapping")),
    "folios": Key(List(Table({
        "name": Key(Name(doc="what [[maps]] entries call it")),
        "order": Key(Int(0, 9, "0 (4 KiB), 4 (64 KiB) or 9 (2 MiB)")),
        "kind": Key(Str(FOLIO_KINDS, doc="anonymous, page cache (file), or shmem"), ANON),
        "pinned": Key(Bool(doc="pinned for DMA (FOLL_PIN) before the fork"), False),
    }), 0, MAX_MAPS, "the folios the parent maps; each gets PFNs aligned to its size, in this order")),
    "maps": Key(List(Table({
        "at": Key(Int(0, MAX_PAGES - 1, "the first page it maps")),
        "folio": Key(Str(doc="a folio's name, 'zero' (the shared zero page, read-only) or 'swap' (swapped-out "
                             "anonymous pages)", max_len=12)),
        "first": Key(Int(0, 511, "which page of the folio it maps first"), 0),
        "pages": Key(Int(0, 512, "how many PTEs (0: to the end of the folio; one for zero or swap)"), 0),
        "write": Key(Bool(doc="writable"), True),
        "dirty": Key(Bool(doc="dirty"), True),
        "young": Key(Bool(doc="accessed"), True),
        "soft_dirty": Key(Bool(doc="soft-dirty (x86-64 and generic)"), False),
        "uffd_wp": Key(Bool(doc="uffd write-protected (x86-64 and arm64)"), False),
        "exclusive": Key(Bool(doc="PageAnonExclusive (anonymous pages; for swap: the swp-exclusive bit)"), True),
        **{f"toggle_{b}": Key(List(Int(0, 511), 0, 512, f"pages of this entry whose {b} bit is the opposite"), [])
           for b in TOGGLES},
    }), 0, MAX_MAPS, "the parent's PTEs: each entry as one set_ptes() at fault time (arm64 folds whole aligned "
               "blocks), then its toggles (a write, soft-dirty or uffd-wp toggle unfolds its block); an entry may run "
               "on into the next VMA when that one was split from its own after the set_ptes (same kind and "
               "protection)")),
    "threads": Key(List(Table({
        "name": Key(Name(doc="actor name")),
        "kind": Key(Str(("fork", "fault", "gup"), doc="fork: forks once; fault: page faults (vma-locks' "
                                                     "fault path); gup: pin_user_pages_fast(addr, FOLL_WRITE)")),
        "faults": Key(List(Int(0, MAX_PAGES - 1), 0, 8, "fault: the holes it faults on, in order"), []),
        "addr": Key(Int(0, MAX_PAGES - 1, "gup: the page it pins"), 0),
    }), 1, MAX_THREADS, "the threads, each on its own CPU; exactly one forks")),
}, rules=_scenario_rules)


def initial_state(config) -> ForkState:
    fmt = config["format"]
    folios: dict[str, tuple] = {}
    pfn = FIRST_PFN
    for f in config["folios"]:
        n = folio_pages(f["order"])
        pfn = (pfn + n - 1) // n * n
        folios[f["name"]] = (len(folios), pfn, f)
        pfn += n
    npages = max(v["end"] for v in config["vmas"])
    parent = [0] * npages
    refs = {name: [0] * folio_pages(f["order"]) for name, (_, _, f) in folios.items()}
    excl = {name: 0 for name in folios}
    swap = 0
    for m in config["maps"]:
        name = m["folio"]
        n = map_pages(m, {k: f for k, (_, _, f) in folios.items()})
        if name == SWAP_MAP:
            swap += 1
            prot = map_bits(m, 0) & (PTE_SOFT_DIRTY | PTE_UFFD_WP) | (PTE_SWP_EXCLUSIVE if m["exclusive"] else 0)
            parent[m["at"]] = pt.swp_entry_pte(swap, prot)
            continue
        first_pfn = ZERO_PFN if name == ZERO_MAP else folios[name][1] + m["first"]
        base = PTE_PRESENT | (PTE_SPECIAL if name == ZERO_MAP else 0)
        pte = pt.pfn_pte(first_pfn, base | sum(BIT[b] for b in TOGGLES if m[b]))
        if fmt == ARM64 and name != ZERO_MAP:  # contpte_set_ptes folds the whole aligned blocks
            pt.set_ptes(fmt, parent, m["at"], pte, n, [0] * len(Ops._fields), lambda pfn: None)
        else:
            for k in range(n):
                parent[m["at"] + k] = pt.pte_advance_pfn(pte, k)
        _toggle(fmt, parent, m)
        if name in folios:
            for k in range(n):
                refs[name][m["first"] + k] += 1
                if m["exclusive"] and folios[name][2]["kind"] == ANON:
                    excl[name] |= 1 << (m["first"] + k)
    folio_table = []
    for name, (_, start, f) in folios.items():
        n = folio_pages(f["order"])
        mapped = tuple(refs[name])
        held = (n if f["kind"] != ANON else 0) + (1 if f["order"] else GUP_PIN_COUNTING_BIAS) * f["pinned"]
        large = (sum(mapped) if config["large_mapcount"] else NO_LARGE_MAPCOUNT) if f["order"] else 0
        folio_table.append(Folio(start, f["order"], f["kind"], sum(mapped) + held, int(f["pinned"]) * (f["order"] > 0),
                                 mapped, large, excl[name], held))
    vmas, vms = [], []
    for k, v in enumerate(sorted(config["vmas"], key=lambda v: v["start"])):
        vmas.append(vl.Vma(v["start"], v["end"], vl.VM_LOCK_SEQ_INIT, False, rwsem.FREE, v["prot"],
                           k if v["anon_vma"] else vl.NO_ANON_VMA, vl.LIVE, vl.accountable(v["prot"])))
        vms.append(Vm(v["kind"], v["soft_dirty"], v["uffd_wp"]))
    threads = tuple(Thread(t["name"], _program(t), t["kind"]) for t in config["threads"])
    mm = vl.Mm(rwsem.FREE, 0, tuple(range(len(vmas))))
    return ForkState(threads, mm, tuple(vmas), rcu_init(len(threads)), vl.Counters(), fmt, tuple(vms),
                     tuple(parent), (0,) * npages, tuple(folio_table), Copy(), Ops(), (0, 0, 0, 0), 0,
                     config["mmf_has_pinned"], pfn, (), ())


def _toggle(fmt, parent, m):
    """Apply a [[maps]] entry's toggles after its set_ptes: hardware sets access and dirty bits in one
    sub-PTE of a folded block; any other change goes through one PTE, which unfolds its block first."""
    for bit in TOGGLES:
        for k in m["toggle_" + bit]:
            a = m["at"] + k
            if fmt == ARM64 and BIT[bit] & ~A_AND_D:
                pt.contpte_try_unfold(parent, a, parent[a], [0] * len(Ops._fields))
            parent[a] ^= BIT[bit]


def _program(t):
    if t["kind"] == "fork":
        return (Frame("sys_fork"),)
    if t["kind"] == "fault":
        return tuple(Frame("do_user_addr_fault", a) for a in t["faults"])
    return (Frame("pin_user_pages_fast", t["addr"]),)
