"""What each real-kernel probe must show, and what the model predicts beside it.

A lab result (:func:`kstep.lab.guest.run`) holds, per probe, the ``# PROBE key=value`` lines the
guest printed.  ``judge`` turns them into named checks, each with the numbers it looked at;
``model_prediction`` runs the simulator on the same shape of workload, in the variant that
matches the fetched kernel.  Agreement is qualitative (zero against some): the model's
schedules are not the kernel's, so its rates are shown beside the kernel's, not compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kstep.errors import UserError
from kstep.lab.kernels import Kernels

GUEST = Path(__file__).resolve().parents[3] / "kernel-lab" / "guest"
PGFAULT_AGREEMENT = 0.05  # lock_vma_under_rcu calls vs /proc/vmstat pgfault (the shell's faults count too)
MODEL_SEEDS = range(1, 11)


@dataclass(frozen=True)
class Check:
    probe: str
    name: str
    ok: bool
    detail: str


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


def judge_vma(data: list[dict[str, str]]) -> list[Check]:
    modes = _by_mode(data, "vma")
    checks = []
    for mode in ("faults", "writer"):
        if mode not in modes:
            checks.append(Check("vma", f"{mode} ran", False, f"no 'vma mode={mode}' line"))
    if len(checks):
        return checks
    alone, writer = vma_counts(modes["faults"]), vma_counts(modes["writer"])
    checks.append(Check(
        "vma", "no fallback without a writer", alone["w_null"] == 0 and alone["w_retry"] == 0,
        f"workload: {alone['w_ok']} per-VMA-locked, {alone['w_null']} NULL, {alone['w_retry']} retried",
    ))
    fallbacks = writer["w_null"] + writer["w_retry"]
    checks.append(Check(
        "vma", "some fallback with a writer", fallbacks > 0,
        f"workload: {writer['w_ok']} per-VMA-locked, {writer['w_null']} NULL, {writer['w_retry']} retried",
    ))
    for mode, c in (("faults", alone), ("writer", writer)):
        calls = c["ok"] + c["null"]
        off = abs(calls - c["pgfault"]) / max(c["pgfault"], 1)
        checks.append(Check(
            "vma", f"{mode}: lock_vma_under_rcu calls match pgfault", off <= PGFAULT_AGREEMENT,
            f"{calls} calls, pgfault rose {c['pgfault']} ({off:.1%} apart, at most {PGFAULT_AGREEMENT:.0%})",
        ))
    return checks


def vma_variant(kernels: Kernels) -> str:
    """``seqcount`` when the fetched kernel's mmap_lock.h has the mm_lock_seq seqcount."""
    mmap_lock = kernels.root / "headers" / "usr" / "src" / f"linux-headers-{kernels.abi}-common"
    text = (mmap_lock / "include" / "linux" / "mmap_lock.h").read_text()
    return "seqcount" if "mm_lock_seqcount_begin" in text else "v6.12"


def vma_model(variant: str) -> dict[str, dict[str, int]]:
    """The model's counters over MODEL_SEEDS random schedules of each workload's shape."""
    from kstep.engine import Random, simulate
    from kstep.engine import scenario as scenarios
    from kstep.models import make_model

    out = {}
    for mode in ("faults", "writer"):
        model = make_model("vma-locks", variant)
        sc = scenarios.load(model.name, model.scenario_schema, str(GUEST / "model" / f"vma-{mode}.toml"))
        total: dict[str, int] = {}
        for seed in MODEL_SEEDS:
            final = simulate(model, model.initial(sc.config), Random(seed), scenario=sc.name,
                             config=sc.config, seed=seed).states[-1]
            for key, value in final.counters._asdict().items():
                total[key] = total.get(key, 0) + value
        out[mode] = total
    return out


def vma_rows(data: list[dict[str, str]], result: dict) -> list[str]:
    variant = result["models"]["vma-locks"]
    model = vma_model(variant)
    rows = [f"per-VMA locks (model variant {variant}, {len(MODEL_SEEDS)} random schedules per shape):"]
    for mode, fields in _by_mode(data, "vma").items():
        c = vma_counts(fields)
        m = model.get(mode, {})
        kernel_fb = c["w_null"] + c["w_retry"]
        model_fb = m.get("vma_lock_abort", 0) + m.get("vma_lock_miss", 0) + m.get("vma_lock_retry", 0)
        model_all = m.get("vma_lock_success", 0) + m.get("vma_lock_abort", 0) + m.get("vma_lock_miss", 0)
        rows.append(
            f"  {mode:<7} kernel: {c['w_ok'] + c['w_null']} faults, {kernel_fb} fell back "
            f"({_share(kernel_fb, c['w_ok'] + c['w_null'])})   model: {model_all} faults, "
            f"{model_fb} fell back ({_share(model_fb, model_all)})"
        )
    return rows


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2%}" if whole else "n/a"


# ---------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Probe:
    name: str
    judge: Callable[[list[dict[str, str]]], list[Check]]
    rows: Callable[[list[dict[str, str]], dict], list[str]]


PROBES: dict[str, Probe] = {p.name: p for p in (Probe("vma", judge_vma, vma_rows),)}


def model_variants(kernels: Kernels) -> dict[str, str]:
    """The model variant each comparison uses, chosen from the fetched kernel's own headers."""
    return {"vma-locks": vma_variant(kernels)}


def judge(result: dict) -> list[Check]:
    checks = []
    for case in result["cases"]:
        if not case["ok"]:
            checks.append(Check(case["name"], "the guest's probe ran", False, "the guest reported 'not ok'"))
            continue
        checks += PROBES[case["name"]].judge(case["data"])
    return checks
