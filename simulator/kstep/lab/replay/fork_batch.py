"""The kernel lab's fork-batch port and the simulator, side by side.

``params(config, strategy, schedule)`` writes a fork-batch scenario as the flat key=value lines
the C program reads (kernel-lab/fork-batch/harness.c; ``PARAM_KEYS`` are the keys it may use), and
``report(trace)`` prints a simulation in the C program's output format: every step, every copy,
the counters, the child's rss, both page tables, every folio's counts and each GUP thread's pin,
and the invariant the run broke, if one did.  The identity test compares the two texts.  With
fault or GUP threads the schedule is the simulation's own, every step named
(``engine.schedule.schedule_text``), so both sides take the same interleaving.

``random_layout(seed)`` draws a fork-alone scenario from a seed with kstep's SplitMix64; the C
program's ``random_layout`` (harness.c) makes the same draws in the same order, so the parameter
file ``seed_params(seed, strategy)`` alone gives both sides the same page tables.
"""

from __future__ import annotations

from ...engine import Random, simulate
from ...engine.schedule import COUNTED_RUN, Scripted
from ...engine.prng import SplitMix64
from ...errors import UserError
from ...models import make_model
from ...models.fork_batch.pgtable import FORMATS, HAS_SOFT_DIRTY
from ...models.fork_batch.scenario import MAX_MAPS, SCHEMA, SWAP_MAP, TOGGLES, ZERO_MAP

VMA_KEYS = ("start", "end", "kind", "prot", "anon_vma", "soft_dirty", "uffd_wp")
FOLIO_KEYS = ("order", "kind", "pinned")
THREAD_KEYS = ("name", "kind", "faults", "addr")
MAP_KEYS = ("at", "folio", "first", "pages", *TOGGLES, "exclusive", *(f"toggle_{b}" for b in TOGGLES))
SEED_KEYS = ("seed", "strategy")  # a random layout's parameter file: harness.c draws the layout itself
PARAM_KEYS = ("format", "strategy", "mmf_has_pinned", "large_mapcount", "vmas", "folios", "maps", "threads", "schedule",
              *(f"vma.N.{k}" for k in VMA_KEYS), *(f"folio.N.{k}" for k in FOLIO_KEYS),
              *(f"map.N.{k}" for k in MAP_KEYS), *(f"thread.N.{k}" for k in THREAD_KEYS))


def _value(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


def params(config: dict, strategy: str, schedule: str = "") -> str:
    """The scenario's parameters, one key=value a line, for the C port; a schedule (who takes each
    step) is needed when threads beside the fork fault or pin."""
    if len(config["threads"]) > 1 and not schedule:
        raise UserError("a scenario with fault or gup threads needs a schedule for its C run")
    names = {f["name"]: k for k, f in enumerate(config["folios"])}
    vmas = sorted(config["vmas"], key=lambda v: v["start"])
    lines = [f"format={config['format']}", f"strategy={strategy}",
             f"mmf_has_pinned={_value(config['mmf_has_pinned'])}",
             f"large_mapcount={_value(config['large_mapcount'])}", f"vmas={len(vmas)}",
             f"folios={len(config['folios'])}", f"maps={len(config['maps'])}"]
    for k, v in enumerate(vmas):
        lines += [f"vma.{k}.{key}={_value(v[key])}" for key in VMA_KEYS]
    for k, f in enumerate(config["folios"]):
        lines += [f"folio.{k}.{key}={_value(f[key])}" for key in FOLIO_KEYS]
    for k, m in enumerate(config["maps"]):
        folio = m["folio"] if m["folio"] in (ZERO_MAP, SWAP_MAP) else names[m["folio"]]
        lines += [f"map.{k}.{key}={_value(folio if key == 'folio' else m[key])}" for key in MAP_KEYS]
    lines.append(f"threads={len(config['threads'])}")
    for k, t in enumerate(config["threads"]):
        lines += [f"thread.{k}.{key}={_value(t[key])}" for key in THREAD_KEYS]
    if schedule:
        lines.append(f"schedule={schedule}")
    return "\n".join(lines) + "\n"


def seed_params(seed: int, strategy: str) -> str:
    """The parameter file of the random layout ``random_layout(seed)``, for the C port."""
    return f"seed={seed}\nstrategy={strategy}\n"


# What random_layout draws from (harness.c has the same tables).
LAYOUT_ENDS = (96, 200, 600)  # the address space: within one PTE table, or across the boundary at 512
LAYOUT_ORDERS = (0, 0, 4, 4, 9)  # a folio's order; a sixth choice maps a zero-page or swap entry
TOGGLE_COUNTS = (0, 0, 1, 3)  # how many draws pick pages whose bit is flipped
GAPS = (0, 0, 0, 1, 5)  # holes after an entry


def random_layout(seed: int) -> dict:
    """A fork-alone scenario drawn from a seed: one or two private anonymous VMAs (soft-dirty tracked
    or not), folios of order 0, 4 and 9 mapped whole or in part, side by side or with holes, bits
    flipped on some pages, zero-page and swap entries, and maybe pinned folios (MMF_HAS_PINNED)."""
    r = SplitMix64(seed)
    fmt = FORMATS[r.below(len(FORMATS))]
    soft_dirty = HAS_SOFT_DIRTY[fmt]
    end = LAYOUT_ENDS[r.below(len(LAYOUT_ENDS))]
    split = r.below(end - 1) + 1 if r.below(2) else end
    vmas = [{"start": 0, "end": split, "soft_dirty": soft_dirty and r.below(2) == 1}]
    if split < end:
        vmas.append({"start": split, "end": end, "soft_dirty": soft_dirty and r.below(2) == 1})
    pinning = r.below(4) == 0
    bits = ("write", "dirty", "young") + (("soft_dirty",) if soft_dirty else ())
    folios, maps = [], []
    at = r.below(24)
    while at < end - 1 and len(maps) < MAX_MAPS:
        limit = split if at < split else end
        kind = r.below(len(LAYOUT_ORDERS) + 1)
        if kind == len(LAYOUT_ORDERS):
            name = (ZERO_MAP, SWAP_MAP)[r.below(2)]
            maps.append({"at": at, "folio": name, "write": False, "dirty": False, "young": name == ZERO_MAP})
            at += 1 + GAPS[r.below(len(GAPS))]
            continue
        n = 1 << LAYOUT_ORDERS[kind]
        first = r.below(n) if n > 1 and r.below(5) < 2 else 0
        pages = n - first if r.below(3) < 2 else r.below(n - first) + 1
        pages = min(pages, limit - at)
        name = f"F{len(folios)}"
        folios.append({"name": name, "order": LAYOUT_ORDERS[kind], "pinned": pinning and r.below(4) == 0})
        m = {"at": at, "folio": name, "first": first, "pages": pages}
        for b in bits:
            m[b] = r.below(5) < 4 if b != "soft_dirty" else r.below(2) == 1
            m["toggle_" + b] = sorted({r.below(pages) for _ in range(TOGGLE_COUNTS[r.below(len(TOGGLE_COUNTS))])})
        maps.append(m)
        at += pages + GAPS[r.below(len(GAPS))]
    return SCHEMA.check({"format": fmt, "mmf_has_pinned": pinning, "vmas": vmas, "folios": folios, "maps": maps,
                         "threads": [{"name": "P", "kind": "fork"}]}, "random layout")


def simulated(config: dict, strategy: str, schedule: str = ""):
    """The simulator's run: the fork alone (its one run), or the scenario's schedule with every
    invariant checked; a run that breaks a harm invariant stops there, as the C program does."""
    model = make_model("fork-batch", strategy)
    if not schedule:
        trace = simulate(model, model.initial(config), Random(0), max_steps=COUNTED_RUN, check=False)
    else:
        trace = simulate(model, model.initial(config), Scripted(schedule), max_steps=COUNTED_RUN)
    if trace.outcome not in ("finished", "violation"):
        raise RuntimeError(f"fork-batch {strategy}: {trace.outcome}")
    return trace


def report(trace) -> str:
    """A run in the C port's output format."""
    s = trace.states[-1]
    out = [f"step {a.actor} {a.label}" for a in trace.actions]
    if trace.violation is not None:
        out.append(f"violation {trace.violation.invariant} {trace.violation.step}")
    out += [f"batch {b.vma} {b.addr} {b.nr} {b.how}" for b in s.ghost_batches]
    out.append("ops " + " ".join(map(str, s.ops)))
    out.append("rss " + " ".join(map(str, s.rss)))
    out.append("counters " + " ".join(map(str, s.counters)))
    out.append(f"mm {s.write_protect_seq} {int(s.mmf_has_pinned)} {s.mm.mm_lock_seq}")
    out += [f"gup {t.name} {int(t.pinned)} {t.folio} {t.pte:#x}" for t in s.threads if t.kind == "gup"]
    out += [f"pte {a} {p:#x} {c:#x}" for a, (p, c) in enumerate(zip(s.parent, s.child)) if p or c]
    for f in s.folios:
        pages = " ".join(f"{m}{'x' if f.exclusive >> j & 1 else ''}" for j, m in enumerate(f.mapcount))
        out.append(f"folio {f.pfn} {f.refcount} {f.pincount} {f.large_mapcount} {pages}")
    return "\n".join(out) + "\n"
