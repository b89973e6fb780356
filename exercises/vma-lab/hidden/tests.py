"""Hidden tests of vma-lab: the kernel's counts against the lab result the student used (their own
boot's result.json, or the recorded one of their architecture), whether that result holds together,
the model's counts against kstep's run of the variant's seed, and the conclusion against the
student's own numbers.  Nothing is measured again.

CANARY-KSTEP-HIDDEN-vma-lab: this line must never reach a student's output.
"""

from pathlib import Path

import kstep
from kstep.errors import UserError
from kstep.grading.harness import Fail
from kstep.lab.guest import qemu as guest, probes
from kstep.models import model_class

DATA = Path(__file__).resolve().parent.parent / "data"
MODES = ("faults", "writer")
KERNEL_KEYS = ("faults", "fell_back", "retried", "calls", "pgfault")
MODEL_KEYS = ("faults", "fell_back", "retried")
SHARE_TOLERANCE = 0.00005  # four decimals, rounded either way


def used_result(ctx):
    """The lab result the report is about, and how to name it to the student."""
    if ctx.has("result.json"):
        try:
            return guest.parse_result(ctx.text("result.json"), "result.json"), "your result.json"
        except UserError as e:
            raise Fail(str(e)) from None
    arch = ctx.variant["arch"]
    return guest.load_result(DATA / f"recorded-{arch}.json"), f"data/recorded-{arch}.json"


def vma_counts(result, where):
    """Each mode's counts of the result's vma probe, as kstep.lab.guest.probes reads them."""
    case = next((c for c in result["cases"] if c["name"] == "vma"), None)
    if case is None or not case["ok"]:
        raise Fail(f"{where} has no vma probe that ran")
    modes = probes._by_mode(case["data"], "vma")
    missing = [m for m in MODES if m not in modes]
    if missing:
        raise Fail(f"{where}: its vma probe has no {' or '.join(missing)} mode")
    try:
        return {m: probes.vma_counts(modes[m]) for m in MODES}
    except UserError as e:
        raise Fail(f"{where}: {e}") from None


def report(ctx, who, keys):
    """report.toml's [who.faults] and [who.writer], every key a whole number, faults above 0."""
    data = ctx.toml("report.toml")
    got = data.get(who)
    if not isinstance(got, dict) or any(not isinstance(got.get(m), dict) for m in MODES):
        raise Fail(f"report.toml needs [{who}.faults] and [{who}.writer]")
    for m in MODES:
        for k in keys:
            v = got[m].get(k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (k == "faults" and v == 0):
                raise Fail(f"report.toml: {who}.{m}.{k} must be a whole number" + (" above 0" if k == "faults" else ""))
    return got


def test_kernel_counts(ctx):
    result, where = used_result(ctx)
    counts = vma_counts(result, where)
    got = report(ctx, "kernel", KERNEL_KEYS)
    wrong = []
    for m in MODES:
        c = counts[m]
        want = {"faults": c["w_ok"] + c["w_null"], "fell_back": c["w_null"], "retried": c["w_retry"],
                "calls": c["ok"] + c["null"], "pgfault": c["pgfault"]}
        wrong += [f"kernel.{m}.{k}" for k in KERNEL_KEYS if got[m][k] != want[k]]
    if wrong:
        raise Fail(f"these counts are not {where}'s: {', '.join(wrong)}",
                   credit=1 - len(wrong) / (len(MODES) * len(KERNEL_KEYS)))


def test_result_holds_together(ctx):
    result, where = used_result(ctx)
    arch, problems = ctx.variant["arch"], []
    if result["arch"] != arch:
        problems.append(f"it is a boot of {result['arch']}, and your variant's architecture is {arch}")
    if not guest.lab_machine(result):
        problems.append("QEMU did not boot it with the lab's machine flags")
    kernel = result["kernel"]
    if result.get("uname_r") != kernel.get("release") or \
            str(kernel.get("package_version")) not in str(result.get("proc_version")):
        problems.append("its uname -r and /proc/version do not name the kernel it says it booted")
    for m, c in vma_counts(result, where).items():
        if c["w_ok"] > c["ok"] or c["w_null"] > c["null"] or c["w_retry"] > c["retry"]:
            problems.append(f"{m}: the workload's own counts exceed every process's")
        calls = c["ok"] + c["null"]
        if abs(calls - c["pgfault"]) > probes.PGFAULT_AGREEMENT * max(c["pgfault"], 1):
            problems.append(f"{m}: {calls} lock_vma_under_rcu() calls, yet pgfault rose {c['pgfault']}")
    if problems:
        raise Fail(f"{where} does not hold together: {problems[0]}"
                   + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))


def model_counts(variant, mode, seed):
    """What kstep run vma-locks --scenario data/MODE.toml --variant VARIANT -s SEED -c counts."""
    ex = kstep.open("vma-locks", str(DATA / f"{mode}.toml"), variant)
    a = ex.answers(ex.run(seed=seed))
    fell_back = a["vma_lock_abort"] + a["vma_lock_miss"]
    return {"faults": a["vma_lock_success"] + fell_back, "fell_back": fell_back, "retried": a["vma_lock_retry"]}


def test_model_counts(ctx):
    result, where = used_result(ctx)
    variant = result["models"].get("vma-locks")
    if not isinstance(variant, str) or variant not in model_class("vma-locks").variants:
        raise Fail(f"{where} names no vma-locks model variant (models.vma-locks is {variant!r})")
    got = report(ctx, "model", MODEL_KEYS)
    wrong = [f"model.{m}.{k}" for m in MODES for k, v in model_counts(variant, m, ctx.variant["seed"]).items()
             if got[m][k] != v]
    if wrong:
        raise Fail(f"these counts are not the {variant} model's with seed {ctx.variant['seed']}: {', '.join(wrong)}",
                   credit=1 - len(wrong) / (len(MODES) * len(MODEL_KEYS)))


def test_conclusion_follows(ctx):
    kernel, model = report(ctx, "kernel", KERNEL_KEYS), report(ctx, "model", MODEL_KEYS)
    c = ctx.toml("report.toml").get("conclusion")
    if not isinstance(c, dict):
        raise Fail("report.toml has no [conclusion]")
    shape = {who: t["faults"]["fell_back"] == 0 and t["writer"]["fell_back"] > 0
             for who, t in (("kernel", kernel), ("model", model))}
    if c.get("agree") is not (shape["kernel"] and shape["model"]):
        says = {who: "none alone and some beside the writer" if ok else "not (none alone, some beside the writer)"
                for who, ok in shape.items()}
        raise Fail(f"agree = {c.get('agree')!r}, but by your own counts the kernel's fallbacks are {says['kernel']}, "
                   f"the model's {says['model']}")
    for who, t in (("kernel", kernel), ("model", model)):
        share = t["writer"]["fell_back"] / t["writer"]["faults"]
        given = c.get(f"{who}_share")
        if isinstance(given, bool) or not isinstance(given, (int, float)) or abs(given - share) > SHARE_TOLERANCE:
            raise Fail(f"{who}_share = {given!r}, but your {who} counts give {t['writer']['fell_back']} / "
                       f"{t['writer']['faults']} = {share:.4f}")
