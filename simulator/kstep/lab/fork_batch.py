"""The kernel lab's fork-batch port and the simulator, side by side.

``params(config, strategy)`` writes a fork-batch scenario as the flat key=value lines the C
program reads (kernel-lab/fork-batch/harness.c; ``PARAM_KEYS`` are the keys it may use), and
``report(state)`` prints a finished simulation in the C program's output format: every copy, the
counters, the child's rss, both page tables and every folio's counts.  The identity test compares
the two texts.  Only a scenario whose one thread forks has a C run: the port has no faults and no
GUP-fast.
"""

from __future__ import annotations

from ..engine import Random, simulate
from ..errors import UserError
from ..models import make_model
from ..models.fork_batch import SWAP_MAP, TOGGLES, ZERO_MAP

VMA_KEYS = ("start", "end", "kind", "prot", "anon_vma", "soft_dirty", "uffd_wp")
FOLIO_KEYS = ("order", "kind", "pinned")
MAP_KEYS = ("at", "folio", "first", "pages", *TOGGLES, "exclusive", *(f"toggle_{b}" for b in TOGGLES))
PARAM_KEYS = ("format", "strategy", "mmf_has_pinned", "vmas", "folios", "maps",
              *(f"vma.N.{k}" for k in VMA_KEYS), *(f"folio.N.{k}" for k in FOLIO_KEYS),
              *(f"map.N.{k}" for k in MAP_KEYS))


def _value(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)


def params(config: dict, strategy: str) -> str:
    """The scenario's parameters, one key=value a line, for the C port."""
    if [t["kind"] for t in config["threads"]] != ["fork"]:
        raise UserError("the C port copies alone: a scenario with fault or gup threads has no C run")
    names = {f["name"]: k for k, f in enumerate(config["folios"])}
    vmas = sorted(config["vmas"], key=lambda v: v["start"])
    lines = [f"format={config['format']}", f"strategy={strategy}",
             f"mmf_has_pinned={_value(config['mmf_has_pinned'])}", f"vmas={len(vmas)}",
             f"folios={len(config['folios'])}", f"maps={len(config['maps'])}"]
    for k, v in enumerate(vmas):
        lines += [f"vma.{k}.{key}={_value(v[key])}" for key in VMA_KEYS]
    for k, f in enumerate(config["folios"]):
        lines += [f"folio.{k}.{key}={_value(f[key])}" for key in FOLIO_KEYS]
    for k, m in enumerate(config["maps"]):
        folio = m["folio"] if m["folio"] in (ZERO_MAP, SWAP_MAP) else names[m["folio"]]
        lines += [f"map.{k}.{key}={_value(folio if key == 'folio' else m[key])}" for key in MAP_KEYS]
    return "\n".join(lines) + "\n"


def simulated(config: dict, strategy: str):
    """The simulator's final state of the fork (its one run)."""
    model = make_model("fork-batch", strategy)
    trace = simulate(model, model.initial(config), Random(0), max_steps=10_000_000, check=False)
    if trace.outcome != "finished":
        raise RuntimeError(f"fork-batch {strategy}: {trace.outcome}")
    return trace.states[-1]


def report(s) -> str:
    """A finished fork in the C port's output format."""
    out = [f"batch {b.vma} {b.addr} {b.nr} {b.how}" for b in s.ghost_batches]
    out.append("ops " + " ".join(map(str, s.ops)))
    out.append("rss " + " ".join(map(str, s.rss)))
    out += [f"pte {a} {p:#x} {c:#x}" for a, (p, c) in enumerate(zip(s.parent, s.child)) if p or c]
    for f in s.folios:
        pages = " ".join(f"{m}{'x' if f.exclusive >> j & 1 else ''}" for j, m in enumerate(f.mapcount))
        out.append(f"folio {f.pfn} {f.refcount} {f.pincount} {f.large_mapcount} {pages}")
    return "\n".join(out) + "\n"
