"""What each real-kernel probe must show, and what the model predicts beside it.

A lab result (:func:`kstep.lab.guest.qemu.run`) holds, per probe, the ``# PROBE key=value`` lines the
guest printed.  ``judge`` turns them into named checks, each with the numbers it looked at;
``model_prediction`` runs the simulator on the same shape of workload, in the variant that
matches the fetched kernel.  Agreement is qualitative (zero against some): the model's
schedules are not the kernel's, so its rates are shown beside the kernel's, not compared.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstep.errors import UserError
from kstep.lab.guest import vma_locks
from kstep.lab.guest.kernels import Kernels

GUEST = Path(__file__).resolve().parents[4] / "kernel-lab" / "guest"
PGFAULT_AGREEMENT = 0.05  # lock_vma_under_rcu calls vs /proc/vmstat pgfault (the shell's faults count too)
MODEL_SEEDS = range(1, 11)


@dataclass(frozen=True)
class Check:
    probe: str
    name: str
    ok: bool
    detail: str
    timing: bool = False  # judged on measured times: shown by kstep lab run, never asserted by tests


def _int(fields: dict[str, str], key: str, where: str) -> int:
    try:
        return int(fields[key])
    except (KeyError, ValueError):
        raise UserError(f"{where}: no whole number {key}= in {fields}") from None


def _by_mode(data: list[dict[str, str]], probe: str) -> dict[str, dict[str, str]]:
    return {d.get("mode", ""): d for d in data if d.get("mode")}


# ---------------------------------------------------------------------------------------
# per-VMA locks


def vma_counts(fields: dict[str, str]) -> dict[str, int]:
    """The workload's own counts (``w_*``) and the whole system's, as whole numbers."""
    keys = ("ok", "null", "retry", "w_ok", "w_null", "w_retry", "pgfault")
    return {k: _int(fields, k, f"vma mode={fields.get('mode')}") for k in keys}


def judge_vma(data: list[dict[str, str]], raw: dict[str, list[str]] | None = None) -> list[Check]:
    modes = _by_mode(data, "vma")
    checks = []
    for mode in ("faults", "writer"):
        if mode not in modes:
            checks.append(Check("vma", f"{mode} ran", False, f"no 'vma mode={mode}' line"))
    if len(checks):
        return checks
    alone, writer = vma_counts(modes["faults"]), vma_counts(modes["writer"])
    # A fallback is lock_vma_under_rcu() returning NULL; retries are counted and shown beside.
    checks.append(Check(
        "vma", "no fallback without a writer", alone["w_null"] == 0,
        f"workload: {alone['w_ok']} per-VMA-locked, {alone['w_null']} NULL, {alone['w_retry']} retried in its life",
    ))
    checks.append(Check(
        "vma", "some fallback with a writer", writer["w_null"] > 0,
        f"workload: {writer['w_ok']} per-VMA-locked, {writer['w_null']} NULL, {writer['w_retry']} retried in its life",
    ))
    if raw and raw.get("trace"):
        checks += judge_vma_retries(data, raw)
    for mode, c in (("faults", alone), ("writer", writer)):
        calls = c["ok"] + c["null"]
        off = abs(calls - c["pgfault"]) / max(c["pgfault"], 1)
        checks.append(Check(
            "vma", f"{mode}: lock_vma_under_rcu calls match pgfault", off <= PGFAULT_AGREEMENT,
            f"{calls} calls, pgfault rose {c['pgfault']} ({off:.1%} apart, at most {PGFAULT_AGREEMENT:.0%})",
        ))
    return checks


def judge_vma_retries(data: list[dict[str, str]], raw: dict[str, list[str]]) -> list[Check]:
    """The traced VMA-lock retries (a result recorded before the probe traced them has none to judge):
    the workload alone retries nothing, and every retry is a fault special_mapping_fault() then served."""
    retries = vma_locks.classify(data, raw)
    in_window = [r for r in retries if r.mode == "faults" and r.whose == "workload"]
    unexplained = [r for r in retries if not r.special]
    whose = ", ".join(f"{n} {w}" for w, n in sorted(Counter(r.whose for r in retries).items()))
    return [
        Check("vma", "faults: the workload's own faults never retry", not in_window,
              f"{len(in_window)} retried inside its window" + (f": {in_window[0].what}" if in_window else "")),
        Check("vma", "every VMA-lock retry is a special mapping's fault", not unexplained,
              f"{len(retries)} retries" + (f": {whose}" if whose else "")
              + (f"; not served by special_mapping_fault(): {unexplained[0].what}" if unexplained else "")),
    ]


def vma_variant(kernels: Kernels) -> str:
    """``v6.12`` (6.12.117's form) when the fetched kernel's mmap_lock.h has the mm_lock_seq seqcount
    (6.12.88 and later), ``v6.12.0`` when it does not."""
    mmap_lock = kernels.root / "headers" / "usr" / "src" / f"linux-headers-{kernels.abi}-common"
    text = (mmap_lock / "include" / "linux" / "mmap_lock.h").read_text()
    return "v6.12" if "mm_lock_seqcount_begin" in text else "v6.12.0"


def vma_model(variant: str) -> dict[str, dict[str, int]]:
    """The model's counters over MODEL_SEEDS random schedules of each workload's shape."""
    from kstep import experiment
    from kstep.engine import Random, simulate

    out = {}
    for mode in ("faults", "writer"):
        ex = experiment.open("vma-locks", str(GUEST / "model" / f"vma-{mode}.toml"), variant)
        total: dict[str, int] = {}
        for seed in MODEL_SEEDS:
            final = simulate(ex.model, ex.start, Random(seed), scenario=ex.scenario.name,
                             config=ex.scenario.config).states[-1]
            for key, value in final.counters._asdict().items():
                total[key] = total.get(key, 0) + value
        out[mode] = total
    return out


def vma_rows(data: list[dict[str, str]], result: dict, raw: dict[str, list[str]] | None = None) -> list[str]:
    variant = result["models"]["vma-locks"]
    model = vma_model(variant)
    retries = vma_locks.classify(data, raw) if raw and raw.get("trace") else None
    rows = [f"per-VMA locks (model variant {variant}, {len(MODEL_SEEDS)} random schedules per shape):"]
    for mode, fields in _by_mode(data, "vma").items():
        c = vma_counts(fields)
        m = model.get(mode, {})
        model_fb = m.get("vma_lock_abort", 0) + m.get("vma_lock_miss", 0)
        model_all = model_fb + m.get("vma_lock_success", 0)
        rows.append(
            f"  {mode:<7} kernel: {c['w_ok'] + c['w_null']} faults, {c['w_null']} fell back "
            f"({_share(c['w_null'], c['w_ok'] + c['w_null'])}), {c['w_retry']} retried in its life   "
            f"model: {model_all} faults, {model_fb} fell back ({_share(model_fb, model_all)}), "
            f"{m.get('vma_lock_retry', 0)} retried"
        )
        if retries is not None:
            rows.append(f"          {vma_locks.summary(retries, mode)}")
    if retries is not None:
        others = Counter(r.comm for r in retries if r.whose == "other")
        rows.append("  other processes' retries: " + (", ".join(f"{c} x{n}" for c, n in sorted(others.items()))
                                                     or "none"))
    return rows


# ---------------------------------------------------------------------------------------
# fork batching

FORK_MODES = ("4k", "64k", "2m", "2m-pte")
FORK_MIN_N = 40
# A 2 MiB THP is one PMD entry for copy_huge_pmd(); a 64K mTHP saves copy_present_ptes()'s
# per-PTE work by batching 16 PTEs of one folio.  Ratios seen under TCG (reference runs, 40
# forks): 4K/64K 1.5-3x (but 64K 1.08x slower than 4K once on ppc64le), 4K/2M 4-19x.  The 64k
# check holds the measured order to the model's, with no margin: an order that contradicts the
# model is a disagreement, shown as one, never passed because it is small.
FORK_2M_MIN_RATIO = 3.0
FORK_LATER_KEYS = ("first_us", "mthp64_alloc", "mthp64_fallback")
# Which of forkbench's times each fork of the model predicts: the first fork copies writable, exclusive
# PTEs and write-protects them; the later ones copy what it left (kstep.measure.fork_batch.after_child_exit).
FORK_TIMES = {"first": ("first fork", "first_us"), "later": ("median fork", "median_us")}


def fork_stats(data: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    out = {}
    for mode, fields in _by_mode(data, "fork").items():
        where = f"fork mode={mode}"
        out[mode] = {k: float(_int(fields, k, where)) for k in
                     ("n", "mean_us", "sd_us", "min_us", "median_us", "anon_huge_kb", "split_pmd", "split_page")}
        # forkbench's later fields; a result recorded before them has none
        out[mode].update({k: float(_int(fields, k, where)) for k in FORK_LATER_KEYS if k in fields})
    return out


def fork_orders(st: dict[str, dict[str, float]], model_64k: dict[str, float | None]) -> dict[str, Check]:
    """One boot's :func:`fork_stats` ``st``: for each fork of FORK_TIMES forkbench printed, 64k's time
    against 4k's held to ``model_64k``, the model's order for that fork (None: no order to hold); none if
    the 64k mode got no 64K folios (its times are then inconclusive)."""
    if st["64k"].get("mthp64_alloc") == 0:
        return {}
    return {fork: _fork_order(what, st["4k"][key], st["64k"][key], model)
            for fork, (what, key) in FORK_TIMES.items()
            if (model := model_64k[fork]) is not None and key in st["4k"] and key in st["64k"]}


def _fork_order(what: str, small: float, large: float, model: float) -> Check:
    """64k's time of one kind of fork against 4k's, held to the model's order for that fork with no margin."""
    measured = large / small
    agrees = (measured < 1) == (model < 1)
    return Check("fork", f"64k's {what} {'faster' if model < 1 else 'no faster'} than 4k's, as the model orders them",
                 agrees, f"4k {small:.0f} us, 64k {large:.0f} us: kernel {measured:.2f}x, model {model:.2f}x"
                 + (": agreement" if agrees else ": a disagreement with the model"), timing=True)


def judge_fork(data: list[dict[str, str]], model_64k: dict[str, float | None] | None) -> list[Check]:
    """``model_64k``: the model's 64k cost relative to 4k for the first fork and for a later one
    (:func:`fork_prediction`'s "64k" of each; None: no order to hold).  The first fork's time is held to
    the first's prediction, the median (of all forks, all but one later ones) to a later fork's; a
    result recorded before forkbench printed first_us has only the median."""
    st = fork_stats(data)
    missing = [m for m in FORK_MODES if m not in st]
    if missing:
        return [Check("fork", "every mode ran", False, f"no 'fork mode=' line for {', '.join(missing)}")]
    checks = [Check("fork", f"at least {FORK_MIN_N} forks per mode", all(st[m]["n"] >= FORK_MIN_N for m in FORK_MODES),
                    ", ".join(f"{m} {st[m]['n']:.0f}" for m in FORK_MODES))]
    two = st["2m"]
    checks.append(Check("fork", "2m: the memory is PMD-mapped THP", two["anon_huge_kb"] > 0,
                        f"AnonHugePages {two['anon_huge_kb']:.0f} kB"))
    pte = st["2m-pte"]
    checks.append(Check(
        "fork", "2m-pte: PMDs split, folios not",
        pte["anon_huge_kb"] == 0 and pte["split_pmd"] > 0 and pte["split_page"] == 0,
        f"AnonHugePages {pte['anon_huge_kb']:.0f} kB, thp_split_pmd +{pte['split_pmd']:.0f}, "
        f"thp_split_page +{pte['split_page']:.0f}",
    ))
    small = st["4k"]["median_us"]
    folios = st["64k"].get("mthp64_alloc")
    if folios is not None:
        checks.append(Check("fork", "64k: 64K folios were allocated (without them its times are inconclusive)",
                            folios > 0, f"hugepages-64kB anon_fault_alloc +{folios:.0f}, "
                            f"anon_fault_fallback +{st['64k']['mthp64_fallback']:.0f} while populating"))
    if model_64k is not None:
        checks += fork_orders(st, model_64k).values()
    checks.append(Check("fork", f"2m at least {FORK_2M_MIN_RATIO:.0f}x faster than 4k",
                        small >= FORK_2M_MIN_RATIO * two["median_us"],
                        f"median 4k {small:.0f} us, 2m {two['median_us']:.0f} us", timing=True))
    return checks


# The fork-cost model's name for each lab mode (None: PMD-mapped, which the model does not copy),
# and each architecture's PTE format in the fork-batch model (ppc64le's hash/radix PTEs: generic).
FORK_MODEL_MODES = {"4k": "4K", "64k": "64K mTHP", "2m-pte": "2M PTE-mapped", "2m": "2M THP"}
PTE_FORMATS = {"x86_64": "x86-64", "arm64": "arm64-4K-contpte", "ppc64le": "generic"}
FORK_MAX_NR_CLAMP = 29  # 6.12.29 clamps folio_pte_batch()'s max_nr to the folio's end first


def fork_variant(abi: str) -> str:
    """The fork-batch variant of a kernel ABI such as ``6.12.95+deb12``: 6.12.117's ``folio-batch`` from
    6.12.29 on, ``v6.12.0-batch`` before."""
    from kstep.models.fork_batch.state import FOLIO_BATCH, V6_12_0_BATCH

    m = re.match(r"6\.12\.(\d+)", abi)
    return V6_12_0_BATCH if m and int(m[1]) < FORK_MAX_NR_CLAMP else FOLIO_BATCH


def fork_prediction(result: dict, fork: str = "first") -> dict[str, float | None]:
    """The model's operations per copied GiB in each lab mode, relative to 4k (None: not modelled), for
    the ``first`` fork or a ``later`` one of forkbench's loop."""
    from kstep.measure import fork_batch

    cost = fork_batch.predicted_relative_cost(PTE_FORMATS[result["arch"]], fork_variant(result["kernel"]["abi"]),
                                             fork=fork)
    return {mode: cost[name] for mode, name in FORK_MODEL_MODES.items()}


def fork_predictions_64k(result: dict) -> dict[str, float | None]:
    """The 64k mode's predicted cost relative to 4k's, for each fork :func:`judge_fork` holds."""
    return {fork: fork_prediction(result, fork)["64k"] for fork in FORK_TIMES}


def fork_measured(data: list[dict[str, str]]) -> dict[str, float]:
    """Each mode's median fork() time relative to 4k's, from one boot."""
    st = fork_stats(data)
    base = st.get("4k", {}).get("median_us")
    return {mode: s["median_us"] / base for mode, s in st.items() if base}


def fork_rows(data: list[dict[str, str]], result: dict) -> list[str]:
    st = fork_stats(data)
    model = {fork: fork_prediction(result, fork) for fork in FORK_TIMES}
    rows = [f"fork of 256 MiB ({result['arch']}, smp {result['smp']}): kernel time mean +- sd, median and first, "
            f"each relative to 4k's; model ({fork_variant(result['kernel']['abi'])}, {PTE_FORMATS[result['arch']]} "
            "PTEs): operations relative to 4k, a later fork's beside the median, the first fork's beside the first"]
    for mode in FORK_MODES:
        if mode in st:
            s = st[mode]
            first = f"  first {s['first_us'] / 1000:7.2f} ms" if "first_us" in s else ""
            rows.append(f"  {mode:<7} {s['mean_us'] / 1000:7.2f} +- {s['sd_us'] / 1000:5.2f} ms  "
                        f"median {s['median_us'] / 1000:7.2f} ms  (n={s['n']:.0f}){first}"
                        + "".join(f"  {what.split()[0]}: kernel {_relative(st, mode, key)}  model "
                                  + ("  -  (copy_huge_pmd: not modelled)" if model[fork][mode] is None
                                     else f"{model[fork][mode]:.2f}")
                                  for fork, (what, key) in reversed(FORK_TIMES.items()) if key in s))
    rows.append("  comparable: the order (64k and 2m-pte below 4k), not the size: the model counts copy_pte_range's "
                "PTE and folio-counter operations only; the kernel's time adds fork's fixed work (dup_mmap, "
                "page-table pages, the child) and emulation")
    return rows


def _relative(st: dict, mode: str, key: str) -> str:
    base = st.get("4k", {}).get(key)
    return f"{st[mode][key] / base:.2f}" if base and key in st[mode] else "n/a"


# ---------------------------------------------------------------------------------------
# DAMON

DAMON_MIN_RATIO = 10.0  # hot/rest size-weighted nr_accesses (reference runs: 37-617x)
DAMON_MIN_REGION = 4096  # PAGE_SIZE on every lab kernel (4K pages)
DAMON_MAX_REGIONS = 1000  # what /init writes to nr_regions/max
_TRACE = re.compile(
    r"\s(\d+\.\d+): damon_aggregated: target_id=\d+ nr_regions=(\d+) (\d+)-(\d+): (\d+) (\d+)")
_MAPS = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) ")


@dataclass(frozen=True)
class Aggregation:
    time: float  # seconds, the trace clock of its first region
    regions: tuple[tuple[int, int, int, int], ...]  # (start, end, nr_accesses, age)
    nr_regions: int  # what each line says the target has


def damon_aggregations(trace: list[str]) -> list[Aggregation]:
    """Group raw damon_aggregated lines into aggregation intervals (nr_regions lines each)."""
    out: list[Aggregation] = []
    current: list[tuple[int, int, int, int]] = []
    start, expected = 0.0, 0
    for line in trace:
        m = _TRACE.search(line)
        if m is None:
            continue
        if not current:
            start, expected = float(m.group(1)), int(m.group(2))
        current.append(tuple(int(m.group(k)) for k in (3, 4, 5, 6)))
        if len(current) == expected:
            out.append(Aggregation(start, tuple(current), expected))
            current = []
    return out


def _align(x: int) -> int:
    return -(-x // DAMON_MIN_REGION) * DAMON_MIN_REGION


def maps_vmas(maps: list[str]) -> list[tuple[int, int]]:
    """The VMAs of the mm in /proc/PID/maps lines, sorted; [vsyscall] is not one of them."""
    vmas = []
    for line in maps:
        m = _MAPS.match(line)
        if m and not line.rstrip().endswith("[vsyscall]"):
            vmas.append((int(m.group(1), 16), int(m.group(2), 16)))
    return sorted(vmas)


def three_regions(maps: list[str]) -> list[tuple[int, int]]:
    """mm/damon/vaddr.c:__damon_va_three_regions over the VMAs of /proc/PID/maps: the mappings less
    the two biggest gaps between them."""
    vmas = maps_vmas(maps)
    if len(vmas) < 3:
        raise UserError(f"damon: {len(vmas)} mappings in the target's maps, DAMON needs three gaps' worth")
    first = second = (0, 0)
    for (_, prev_end), (start, _) in zip(vmas, vmas[1:]):
        gap = start - prev_end
        if gap > first[1] - first[0]:
            second, first = first, (prev_end, start)
        elif gap > second[1] - second[0]:
            second = (prev_end, start)
    if first[0] > second[0]:
        first, second = second, first
    bounds = [(vmas[0][0], first[0]), (first[1], second[0]), (second[1], vmas[-1][1])]
    return [(_align(a), _align(b)) for a, b in bounds]


def _union(regions) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for start, end, *_ in sorted(regions):
        if out and start == out[-1][1]:
            out[-1][1] = end
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def damon_ratio(aggs: list[Aggregation], hot: tuple[int, int]) -> tuple[float, float]:
    """Size-weighted mean nr_accesses of the hot range and of everything else, over every interval."""
    hot_sum = hot_size = rest_sum = rest_size = 0
    for agg in aggs:
        for start, end, nr, _age in agg.regions:
            inside = max(0, min(end, hot[1]) - max(start, hot[0]))
            hot_sum += inside * nr
            hot_size += inside
            rest_sum += (end - start - inside) * nr
            rest_size += end - start - inside
    return hot_sum / max(hot_size, 1), rest_sum / max(rest_size, 1)


def damon_hot_rest(hot_mean: float, rest_mean: float) -> float:
    """hot/rest; infinite when only the hot range was ever accessed, 0 when nothing was."""
    if rest_mean:
        return hot_mean / rest_mean
    return float("inf") if hot_mean else 0.0


def damon_facts(case: dict) -> tuple[dict[str, str], list[Aggregation], tuple[int, int]]:
    fields = next(iter(case["data"]), {})
    try:
        hot = tuple(int(x, 16) for x in fields["hot"].split("-"))
    except (KeyError, ValueError):
        raise UserError(f"damon: no hot=START-END in {fields}") from None
    return fields, damon_aggregations(case["raw"].get("trace", [])), hot


def judge_damon_case(case: dict) -> list[Check]:
    fields, aggs, hot = damon_facts(case)
    if not aggs:
        return [Check("damon", "damon_aggregated traced", False, "no damon_aggregated lines")]
    checks = []
    expected = three_regions(case["raw"].get("maps", []))
    update_s = int(fields.get("update_us", "1000000")) / 1e6
    max_nr = int(fields.get("aggr_us", "100000")) // int(fields.get("sample_us", "5000"))
    settled = [a for a in aggs if a.time >= aggs[0].time + update_s]
    wrong = [a for a in settled if _union(a.regions) != expected]
    checks.append(Check(
        "damon", "after the first update the regions cover exactly the three regions of the maps",
        bool(settled) and not wrong,
        f"{len(settled)} intervals checked, {len(wrong)} differ; three regions "
        + ", ".join(f"{a:#x}-{b:#x}" for a, b in expected),
    ))
    bad = []
    for a in aggs:
        rs = sorted(a.regions)
        if (len(rs) != a.nr_regions or a.nr_regions > DAMON_MAX_REGIONS
                or any(s >= e or s % DAMON_MIN_REGION or e % DAMON_MIN_REGION for s, e, *_ in rs)
                or any(rs[k][1] > rs[k + 1][0] for k in range(len(rs) - 1))
                or any(nr > max_nr for _, _, nr, _ in rs)):
            bad.append(a.time)
    checks.append(Check(
        "damon", "region invariants (sorted, disjoint, page-aligned, nr_accesses <= aggr/sample)",
        not bad, f"{len(aggs)} intervals, {len(bad)} break one" + (f" (first at {bad[0]:.3f} s)" if bad else ""),
    ))
    trace = damon_observed(case)
    checks.append(Check(
        "damon", "the regions replay as an observation trace (kstep check damon's region invariants)",
        trace.violation is None,
        f"{len(trace.states) - 1} aggregations" + (f"; {trace.violation.title} broken at aggregation "
                                                   f"{trace.violation.step}: {trace.violation.message}"
                                                   if trace.violation else ""),
    ))
    hot_mean, rest_mean = damon_ratio(aggs, hot)
    ratio = damon_hot_rest(hot_mean, rest_mean)
    checks.append(Check(
        "damon", f"hot range at least {DAMON_MIN_RATIO:.0f}x the rest", ratio >= DAMON_MIN_RATIO,
        f"size-weighted nr_accesses hot {hot_mean:.2f}, rest {rest_mean:.4f}, ratio {ratio:.0f}",
    ))
    return checks


def damon_observed(case: dict):
    """The probe's damon_aggregated lines as ``kstep check damon`` replays them (an observation trace,
    held to the region invariants), with the intervals the probe set, so nr_accesses is bounded too."""
    from kstep.lab.replay import damon_observed as observed
    from kstep.models.damon.core import Attrs

    fields = next(iter(case["data"]), {})
    obs = observed.parse_tracepoint_text("\n".join(case["raw"].get("trace", [])), "damon trace")
    attrs = Attrs(int(fields.get("sample_us", "5000")), int(fields.get("aggr_us", "100000")),
                  int(fields.get("update_us", "1000000")))
    return observed.observed_trace(obs._replace(attrs=attrs), "lab damon trace")[0]


def damon_variant(abi: str) -> str:
    """The DAMON model's ``as-of-6.12.N`` composite for a kernel ABI such as ``6.12.95+deb12``, or its
    default (6.12.117) for a release it has no composite of."""
    from kstep.models.damon.model import DamonModel

    m = re.match(r"6\.12\.(\d+)", abi)
    name = f"as-of-6.12.{m[1]}" if m else ""
    return name if name in DamonModel.variants else DamonModel.default_variant


def release_gap(result: dict) -> str:
    """How the booted release differs from the source release the code pane, the step texts and the
    default variants follow (the pinned linux-source), in the models' terms: the per-VMA lock variant
    the result names, the fork variant, and the DAMON fixes the booted release lacks."""
    from kstep.source.index import pinned_release
    from kstep.models.damon.variants import FIXES

    source, booted = pinned_release(), result["kernel"]["abi"].split("+", 1)[0]
    m, pinned = re.match(r"6\.12\.(\d+)$", booted), int(source.rsplit(".", 1)[1])
    if booted == source:
        return f"booted the source release {source}"
    if not m or int(m[1]) > pinned:
        return f"booted {booted}, not a 6.12.y up to the source release {source}: the models may not match it"
    missing = [f"{f.name} (6.12.{f.version})" for f in FIXES if int(m[1]) < f.version <= pinned]
    vma = result["models"].get("vma-locks")
    return (f"booted {booted}, the source (code pane, step texts, default variants) is {source}: "
            + (f"per-VMA locks as {vma}, " if vma else "") + f"fork as {fork_variant(booted)}, DAMON as "
            f"{damon_variant(booted)}" + (f", without {', '.join(missing)}" if missing else ", no DAMON fix apart"))


def damon_scenario(case: dict, result: dict) -> str:
    """The probe's workload as a DAMON scenario (TOML): the target's VMAs from its maps, the planted hot
    range touched in every sample, the probe's intervals and region bounds, as many aggregations as
    the kernel traced, and the boot's seed."""
    from kstep.models.damon.model import size_text

    fields, aggs, hot = damon_facts(case)
    vmas = "".join(f"[[vmas]]\nstart = {a:#x}\nend = {b:#x}\n\n" for a, b in maps_vmas(case["raw"].get("maps", [])))
    return (f'description = "The {result["arch"]} lab boot\'s DAMON probe: vmaprobe\'s threads write its '
            f'{size_text(hot[1] - hot[0])} hot range in every sample and touch nothing else."\n'
            f'look_for = "The regions gathering around the hot range, as the kernel\'s did."\n'
            f"aggregations = {max(len(aggs), 1)}\nseed = {result['seed']}\n\n[attrs]\n"
            f"sample_us = {fields.get('sample_us', 5000)}\naggr_us = {fields.get('aggr_us', 100000)}\n"
            f"update_us = {fields.get('update_us', 1000000)}\nmin_nr_regions = 10\n"
            f"max_nr_regions = {DAMON_MAX_REGIONS}\n\n{vmas}[[access]]\nstart = {hot[0]:#x}\nend = {hot[1]:#x}\n")


def damon_model(case: dict, result: dict) -> list[Aggregation]:
    """The DAMON model's run of :func:`damon_scenario`: each aggregation's regions as
    kdamond_reset_aggregated() reports them (the tracepoint's fields)."""
    from kstep import experiment
    from kstep.engine import Random
    from kstep.engine.schedule import COUNTED_RUN
    from kstep.models.damon.model import RESET

    ex = experiment.from_text("damon", damon_scenario(case, result), damon_variant(result["kernel"]["abi"]), "lab")
    trace = ex.run(Random(0), max_steps=COUNTED_RUN)
    return [Aggregation(s.k.now_us / 1e6, tuple((r.start, r.end, r.last_nr_accesses, r.age) for r in s.regions),
                        len(s.regions))
            for a, s in zip(trace.actions, trace.states[1:]) if a.label == RESET]


def damon_rows(case: dict, result: dict) -> list[str]:
    fields, aggs, hot = damon_facts(case)
    trace = damon_observed(case)
    model = damon_model(case, result)
    sample_ms = int(fields.get("sample_us", "5000")) / 1000
    aggr_ms = int(fields.get("aggr_us", "100000")) / 1000
    rows = [f"DAMON (vaddr; sample {sample_ms:g} ms, aggregate {aggr_ms:g} ms), hot {hot[0]:#x}-{hot[1]:#x}: "
            f"size-weighted mean nr_accesses of the hot range and of the rest"]
    for who, got in (("kernel", aggs), (f"model ({damon_variant(result['kernel']['abi'])}, same maps, hot range "
                                        f"and seed)", model)):
        hot_mean, rest_mean = damon_ratio(got, hot)
        regions = [len(a.regions) for a in got] or [0]
        rows.append(f"  {who}: {len(got)} aggregations, {min(regions)}-{max(regions)} regions, hot {hot_mean:.2f} "
                    f"vs rest {rest_mean:.4f} ({damon_hot_rest(hot_mean, rest_mean):.0f}x)")
    rows.append("  the kernel's regions replayed as an observation trace: "
                + ("every aggregation keeps the region invariants" if trace.violation is None
                   else f"aggregation {trace.violation.step} breaks {trace.violation.title}"))
    rows.append(f"  comparable: the hot range standing out, and how many regions DAMON keeps; the hot mean only where "
                f"QEMU's TLB does not hold the hot range (this boot: tlb={fields.get('tlb', 'yield')}): "
                "damon_ptep_mkold() clears a PTE's accessed bit with ptep_test_and_clear_young() and flushes no TLB, "
                "so a vCPU that keeps the page's translation writes it without setting the bit, while the model's "
                "process sets it on every touch (bench/damon_gap.py measures each TLB mode, "
                "kernel-lab/guest/README.md); "
                "the rest is above 0 in both where a region straddles the hot range's edge, and in the kernel "
                "also from the program's own code and stack")
    return rows


# ---------------------------------------------------------------------------------------
# DAMON's CPU time against its target's size (the damoncpu probe)

DAMONCPU_SPAN = 64  # the largest target over the smallest, at least (issue 25: three sizes spanning 64x)
DAMONCPU_KEYS = ("map_mib", "clk_tck", "window_cs", "kdamond_ticks", "kdamond_ns", "workload_ticks")
FLAT = 1.2  # "bounded whatever the size": the largest target's kdamond share over the smallest's, at most
TICK_SLACK = 2  # ticks: utime + stime and schedstat's run time are each read once at either end of a window


def damoncpu_sizes(data: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One entry per monitored target, smallest first: kdamond's utime + stime and the workload's (its
    threads together) over the window, each as a share of one CPU, kdamond's over the workload's, and
    kdamond's share again from its schedstat run time."""
    out = []
    for fields in data:
        n = {k: _int(fields, k, f"damoncpu map_mib={fields.get('map_mib')}") for k in DAMONCPU_KEYS}
        if n["window_cs"] <= 0 or n["clk_tck"] <= 0 or min(n.values()) < 0:
            raise UserError(f"damoncpu: a window, clk_tck or CPU time that cannot be: {fields}")
        seconds = n["window_cs"] / 100
        out.append({**n, "tlb": fields.get("tlb", "yield"), "hot_kib": fields.get("hot_kib"), "seconds": seconds,
                    "kdamond_cpu": n["kdamond_ticks"] / n["clk_tck"] / seconds,
                    "workload_cpu": n["workload_ticks"] / n["clk_tck"] / seconds,
                    "kdamond_per_workload": n["kdamond_ticks"] / n["workload_ticks"] if n["workload_ticks"] else None,
                    "kdamond_run_cpu": n["kdamond_ns"] / 1e9 / seconds})
    return sorted(out, key=lambda s: s["map_mib"])


def damoncpu_spread(sizes: list[dict[str, Any]]) -> float | None:
    """kdamond's CPU share at the largest target over the smallest's (None if it used none at the smallest)."""
    first, last = sizes[0]["kdamond_cpu"], sizes[-1]["kdamond_cpu"]
    return last / first if first else None


def judge_damoncpu(data: list[dict[str, str]]) -> list[Check]:
    sizes = damoncpu_sizes(data)
    mib = [s["map_mib"] for s in sizes]
    span = mib[-1] / mib[0] if mib else 0
    checks = [
        Check("damoncpu", f"at least three targets spanning {DAMONCPU_SPAN}x", len(mib) >= 3 and span >= DAMONCPU_SPAN,
              f"targets {', '.join(f'{m} MiB' for m in mib)}"),
        Check("damoncpu", "kdamond and the workload both ran in every window",
              bool(sizes) and all(s["kdamond_ticks"] > 0 and s["workload_ticks"] > 0 for s in sizes),
              "; ".join(f"{s['map_mib']} MiB: kdamond {s['kdamond_ticks']}, workload {s['workload_ticks']} ticks"
                        for s in sizes)),
    ]
    # Both read sum_exec_runtime, utime + stime scaled by cputime_adjust(): they should agree to a tick or
    # two at either end, but under TCG they have differed by up to 2x (a timing, never asserted).
    checks.append(Check("damoncpu", f"kdamond's ticks and its schedstat run time agree within {TICK_SLACK} ticks",
                        all(abs(s["kdamond_ns"] * s["clk_tck"] / 1e9 - s["kdamond_ticks"]) <= TICK_SLACK
                            for s in sizes),
                        "; ".join(f"{s['map_mib']} MiB: {s['kdamond_ticks']} ticks, {s['kdamond_ns'] / 1e6:.1f} ms"
                                  for s in sizes), timing=True))
    if len(sizes) >= 2:
        spread = damoncpu_spread(sizes)
        checks.append(Check("damoncpu", f"kdamond's CPU share at the largest target at most {FLAT:g}x the "
                            "smallest's (bounded whatever the size)", spread is not None and spread <= FLAT,
                            f"largest / smallest {spread:.2f}" if spread is not None else "no time at the smallest",
                            timing=True))
    return checks


def damoncpu_rows(case: dict, result: dict) -> list[str]:
    sizes = damoncpu_sizes(case["data"])
    hot = f"{int(sizes[0]['hot_kib']) // 1024} MiB" if sizes[0]["hot_kib"] else "a hot range"
    rows = [f"DAMON's CPU time (vaddr, sample 5 ms, aggregate 100 ms, 10..1000 regions; the workload writes {hot} "
            f"of the target), over {sizes[0]['seconds']:g} s each, under TCG"]
    for s in sizes:
        ratio = s["kdamond_per_workload"]
        rows.append(f"  {s['map_mib']:>4} MiB: kdamond {100 * s['kdamond_cpu']:.2f}% of a CPU ({s['kdamond_ticks']} "
                    f"ticks; schedstat {100 * s['kdamond_run_cpu']:.2f}%), workload {100 * s['workload_cpu']:.0f}%; "
                    "kdamond / workload " + (f"{100 * ratio:.2f}%" if ratio is not None else "-"))
    spread = damoncpu_spread(sizes)
    rows.append("  largest / smallest target's kdamond share: " + (f"{spread:.2f}" if spread is not None else "-")
                + f" for {sizes[-1]['map_mib'] // sizes[0]['map_mib']}x the size; TCG inflates every guest "
                "instruction, so the shares are an emulated CPU's, not a machine's (the thread's 0.76% is a "
                "slowdown on KVM)")
    return rows


# ---------------------------------------------------------------------------------------
# qspinlock

QSPIN_REPEAT = 2  # acquisitions per CPU at most: with two CPUs, a holder queues behind pending only on its second
QSPIN_MAX_STATES = 2_000_000


def word_universe(cpus: int) -> frozenset[int]:
    """Every (tail, pending, locked) word of ``cpus`` CPUs taking one lock in task context: the tail
    names a CPU with node index 0 (a CPU nests a node only when an interrupt takes another lock)."""
    from kstep.models.qspinlock.qspinlock import encode_tail
    from kstep.models.qspinlock.qspinlock_types import _Q_LOCKED_VAL, _Q_PENDING_VAL, LAYOUTS

    tails = [0] + [encode_tail(LAYOUTS[8], cpu, 0) for cpu in range(cpus)]
    return frozenset(t | p | lk for t in tails for p in (0, _Q_PENDING_VAL) for lk in (0, _Q_LOCKED_VAL))


def _explored_words(cpus: int, repeat: int, variant: str) -> frozenset[int]:
    """The lock words of a breadth-first walk of the model's states, every CPU taking lock A ``repeat``
    times; words only, since the sampler sees only the word."""
    from kstep import experiment

    cpu_tables = "".join(f'[[cpus]]\nlocks = ["A"]\nrepeat = {repeat}\n\n' for _ in range(cpus))
    text = f'description = "lab"\nlook_for = "lab"\n\n{cpu_tables}'
    ex = experiment.from_text("qspinlock", text, variant, f"lab-{cpus}")
    model, start = ex.model, ex.start
    seen, frontier, words = {start}, [start], {start.words[0]}
    while frontier:
        nxt = []
        for state in frontier:
            for action in model.actions(state):
                after = model.step(state, action)
                if after not in seen:
                    seen.add(after)
                    words.add(after.words[0])
                    nxt.append(after)
        if len(seen) > QSPIN_MAX_STATES:
            raise RuntimeError(f"qspinlock with {cpus} CPUs: more than {QSPIN_MAX_STATES} states")
        frontier = nxt
    return frozenset(words)


@functools.cache
def reachable_words(cpus: int, variant: str = "v6.12") -> frozenset[int]:
    """Every lock word the model reaches with ``cpus`` CPUs each taking lock A once, then (unless
    that already reached every word of :func:`word_universe`, so no longer run can add one) each
    taking it QSPIN_REPEAT times.  Three CPUs reach all 16 words with one acquisition each (0.2 s);
    two reach 10 of their 12 only with two (a pending waiter and a queued CPU need a third for
    tail + pending + locked)."""
    universe = word_universe(cpus)
    for repeat in range(1, QSPIN_REPEAT + 1):
        words = _explored_words(cpus, repeat, variant)
        if words == universe:
            break
    return words


def decode_generic(word: int) -> str:
    """asm-generic's (tail, pending, locked) with _Q_PENDING_BITS 8 (NR_CPUS < 16K)."""
    tail = word >> 16
    parts = []
    if tail:
        parts.append(f"tail cpu{(tail >> 2) - 1}/idx{tail & 3}")
    if word & 0xFF00:
        parts.append("pending")
    if word & 0xFF:
        parts.append("locked")
    return " + ".join(parts) or "free"


def decode_powerpc(word: int) -> str:
    """arch/powerpc/include/asm/qspinlock_types.h: tail cpu+1 (17-31), must-queue (16),
    sleepy (15, set only by the paravirt path), owner cpu (1-14), locked (0)."""
    parts = []
    if word >> 17:
        parts.append(f"tail cpu{(word >> 17) - 1}")
    if word & (1 << 16):
        parts.append("must-queue")
    if word & (1 << 15):
        parts.append("sleepy (paravirt)")
    if word & 1:
        parts.append(f"locked by cpu{(word >> 1) & 0x3FFF}")
    return " + ".join(parts) or "free"


def qspin_words(data: list[dict[str, str]]) -> tuple[dict[int, int], dict[str, str]]:
    words, summary = {}, {}
    for d in data:
        if "word" in d:
            words[int(d["word"], 16)] = _int(d, "count", "qspin")
        else:
            summary = d
    return words, summary


def judge_qspin_case(case: dict, arch: str) -> list[Check]:
    words, summary = qspin_words(case["data"])
    if not words:
        return [Check("qspin", "the sampler saw the lock word", False, "no 'qspin word=' lines")]
    k = _int(summary, "nthreads", "qspin")
    if arch == "ppc64le":
        # pseries under QEMU is a shared-processor LPAR, so 6.12 takes the paravirt path: the
        # sleepy bit may be set, which the non-paravirt powerpc model never does.  Classify.
        kinds = {w: decode_powerpc(w) for w in words}
        queued = [w for w in words if w >> 17]
        return [
            Check("qspin", "powerpc: every word decodes within the CPUs that ran",
                  all((w >> 17) - 1 < k and (not w & 1 or ((w >> 1) & 0x3FFF) < k) for w in words),
                  f"{len(words)} distinct words: " + ", ".join(f"{w:#x} {kinds[w]}" for w in sorted(words)[:8])),
            Check("qspin", "powerpc: someone queued (a tail)", bool(queued), f"{len(queued)} words with a tail"),
        ]
    reachable = reachable_words(k)
    outside = sorted(w for w in words if w not in reachable)
    checks = [Check(
        "qspin", f"every sampled word is in the model's reachable set for {k} CPUs", not outside,
        f"{len(words)} distinct sampled, {len(reachable)} reachable"
        + (f"; outside: {', '.join(f'{w:#x} ({decode_generic(w)})' for w in outside[:6])}" if outside else ""),
    )]
    for name, pred in (("pending", lambda w: w & 0xFF00),
                       ("tail", lambda w: w >> 16),
                       ("tail + locked", lambda w: w >> 16 and w & 0xFF)):
        seen = [w for w in words if pred(w)]
        checks.append(Check("qspin", f"a {name} word was seen", bool(seen),
                            ", ".join(f"{w:#x}" for w in sorted(seen)[:6]) or "none"))
    return checks


def qspin_rows(case: dict, result: dict) -> list[str]:
    words, summary = qspin_words(case["data"])
    decode = decode_powerpc if result["arch"] == "ppc64le" else decode_generic
    total = sum(words.values()) or 1
    rows = [f"qspinlock word ({summary.get('nthreads', '?')} kthreads, {summary.get('acquisitions', '?')} "
            f"acquisitions, {summary.get('samples', '?')} samples):"]
    for w, n in sorted(words.items(), key=lambda item: -item[1])[:12]:
        rows.append(f"  {w:#010x} {n / total:7.2%}  {decode(w)}")
    return rows


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2%}" if whole else "n/a"


# ---------------------------------------------------------------------------------------
# launch: launchbench's stacks beside faulters (kernel-lab/guest/launchbench.c)

LAUNCH_KEYS = ("mappers", "faulters", "rounds", "pages", "faults", "p50_ns", "p90_ns", "p99_ns", "max_ns",
               "makespan_ns")


def launch_fields(data: list[dict[str, str]]) -> dict[str, Any]:
    """The one ``# launch`` line as whole numbers, with ``per_vma`` (present or absent) and, where
    present, lock_vma_under_rcu()'s successes and NULLs in launchbench's threads."""
    if len(data) != 1:
        raise UserError(f"launch: {len(data)} '# launch' lines, expected one")
    d = data[0]
    out: dict[str, Any] = {k: _int(d, k, "launch") for k in LAUNCH_KEYS}  # whole numbers, and per_vma
    out["per_vma"] = d.get("per_vma", "")
    if out["per_vma"] == "present":
        out.update({k: _int(d, k, "launch") for k in ("vma_ok", "vma_null")})
    elif out["per_vma"] != "absent":
        raise UserError(f"launch: per_vma= is {out['per_vma']!r}, not present or absent")
    return out


def judge_launch(data: list[dict[str, str]]) -> list[Check]:
    f = launch_fields(data)
    want = f["faulters"] * f["rounds"] * f["pages"]
    checks = [
        Check("launch", "every fault timed", f["faults"] == want, f"{f['faults']} of {want}"),
        Check("launch", "percentiles ordered",
              0 < f["p50_ns"] <= f["p90_ns"] <= f["p99_ns"] <= f["max_ns"] <= f["makespan_ns"],
              f"p50 {f['p50_ns']} p90 {f['p90_ns']} p99 {f['p99_ns']} max {f['max_ns']} "
              f"makespan {f['makespan_ns']} ns"),
    ]
    if f["per_vma"] == "present":
        # every timed fault is a first touch of an anonymous page: each one calls lock_vma_under_rcu()
        checks.append(Check("launch", "the faults took the per-VMA lock", f["vma_ok"] >= f["faults"],
                            f"lock_vma_under_rcu: {f['vma_ok']} VMAs, {f['vma_null']} NULL, "
                            f"{f['faults']} timed faults"))
    return checks


def launch_rows(case: dict, result: dict) -> list[str]:
    f = launch_fields(case["data"])
    path = (f"lock_vma_under_rcu: {f['vma_ok']} VMAs, {f['vma_null']} fell back to mmap_lock"
            if f["per_vma"] == "present" else "no lock_vma_under_rcu(): every fault takes mmap_lock")
    return [f"launch: {f['mappers']} stack mappers, {f['faulters']} faulters x {f['rounds']} passes of "
            f"{f['pages']} pages",
            f"  fault latency p50 {f['p50_ns'] / 1000:.1f} us, p90 {f['p90_ns'] / 1000:.1f} us, "
            f"p99 {f['p99_ns'] / 1000:.1f} us; makespan {f['makespan_ns'] / 1e6:.1f} ms (TCG time)",
            f"  {path}"]


# ---------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Probe:
    """A probe's checks and its rows beside the model, both read from one result case."""

    name: str
    judge: Callable[[dict, dict], list[Check]]
    rows: Callable[[dict, dict], list[str]]


PROBES: dict[str, Probe] = {
    p.name: p
    for p in (
        Probe("vma", lambda case, r: judge_vma(case["data"], case.get("raw")),
              lambda case, r: vma_rows(case["data"], r, case.get("raw"))),
        Probe("fork", lambda case, r: judge_fork(case["data"], fork_predictions_64k(r)),
              lambda case, r: fork_rows(case["data"], r)),
        Probe("damon", lambda case, r: judge_damon_case(case), damon_rows),
        Probe("damoncpu", lambda case, r: judge_damoncpu(case["data"]), damoncpu_rows),
        Probe("qspin", lambda case, r: judge_qspin_case(case, r["arch"]), qspin_rows),
        Probe("launch", lambda case, r: judge_launch(case["data"]), launch_rows),
    )
}


def model_variants(kernels: Kernels) -> dict[str, str]:
    """The model variant each comparison uses, chosen from the fetched kernel's own headers."""
    return {"vma-locks": vma_variant(kernels)}


def judge(result: dict) -> list[Check]:
    checks = []
    for case in result["cases"]:
        if not case["ok"]:
            checks.append(Check(case["name"], "the guest's probe ran", False, "the guest reported 'not ok'"))
            continue
        checks += PROBES[case["name"]].judge(case, result)
    return checks


def report(result: dict) -> tuple[list[str], bool]:
    """The kernel's numbers beside the model's, then each check; and whether every check that
    is not about measured times holds."""
    lines = []
    for case in result["cases"]:
        if case["ok"] and case["name"] in PROBES:
            lines += PROBES[case["name"]].rows(case, result)
    checks = judge(result)
    for c in checks:
        tag = "ok" if c.ok else "not seen: a timing, noisy under TCG" if c.timing else "FAIL"
        lines.append(f"  [{tag}] {c.probe}: {c.name} ({c.detail})")
    return lines, all(c.ok for c in checks if not c.timing)
