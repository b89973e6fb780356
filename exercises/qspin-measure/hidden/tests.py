"""Hidden tests of qspin-measure: the runs are the student's variant's, their counts add up as
the torture tool's counting makes them, and the conclusion follows from the student's own numbers.
Times are never measured again: what a run's times were is the student's evidence, not ours.

CANARY-KSTEP-HIDDEN-qspin-measure: this line must never reach a student's output.
"""

import json
import statistics

from kstep.grading.harness import Fail

LOCKS = ("qspinlock", "ticket")
MAX_RUNS = 50


def runs(ctx):
    out = []
    for n, line in enumerate(ctx.text("runs.jsonl").splitlines()[:1000], start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            r = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise Fail(f"runs.jsonl line {n} is not a summary line (JSON) of the torture tool") from None
        if not isinstance(r, dict) or not isinstance(r.get("steps"), dict) or not isinstance(r.get("per_cpu"), list):
            raise Fail(f"runs.jsonl line {n} is not a summary line of the torture tool")
        out.append((n, r))
    if len(out) > MAX_RUNS:
        raise Fail(f"more than {MAX_RUNS} runs")
    return out


def by_lock(ctx):
    got = {lock: [r for _, r in runs(ctx) if r.get("lock") == lock] for lock in LOCKS}
    if any(len(v) < 3 for v in got.values()):
        raise Fail("runs.jsonl needs at least three runs of each lock, qspinlock and ticket")
    return got


def test_runs_match_your_variant(ctx):
    v = ctx.variant
    for n, r in runs(ctx):
        want = {"arch": v["arch"], "threads": v["threads"], "delay_in": v["delay_in"]}
        if r.get("lock") == "qspinlock":
            want["variant"] = "v6.12"
        wrong = [k for k, value in want.items() if r.get(k) != value]
        if wrong:
            raise Fail(f"runs.jsonl line {n}: {', '.join(f'{k} {r.get(k)!r}' for k in wrong)}; your variant is "
                       f"{', '.join(f'{k} {value!r}' for k, value in want.items())}")
    seeds = {lock: [r.get("seed") for r in rs] for lock, rs in by_lock(ctx).items()}
    if any(len(set(s)) != len(s) for s in seeds.values()):
        raise Fail("two runs of one lock have the same seed: repeat with different seeds")


def _problems(r):
    """What does not add up in one summary, by how the torture tool counts."""
    s, out = r["steps"], []
    threads, acquisitions, total = r.get("threads"), r.get("acquisitions"), r.get("total")
    if not all(isinstance(x, int) and x > 0 for x in (threads, acquisitions, total)):
        return ["threads, acquisitions and total must be positive whole numbers"]
    if total != threads * acquisitions or r["per_cpu"] != [acquisitions] * threads:
        out.append(f"total {total} and per_cpu {r['per_cpu']} are not {threads} CPUs x {acquisitions}")
    seconds, per_s = r.get("seconds"), r.get("per_s")
    if not isinstance(seconds, (int, float)) or seconds <= 0 or not isinstance(per_s, int) \
            or abs(per_s - total / seconds) > 0.01 * per_s + 1:
        out.append(f"per_s {per_s} is not total / seconds ({total} / {seconds})")
    entry, leave = ("queued_spin_lock", "queued_spin_unlock") if r.get("lock") == "qspinlock" \
        else ("arch_spin_lock", "arch_spin_unlock")
    for label in ("critical_section", entry, leave):
        if s.get(label) != total:
            out.append(f"steps.{label} is {s.get(label)}, not one per acquisition ({total})")
    if r.get("lock") == "qspinlock":
        pairs = (("release_node", "node_count_inc"), ("mcs_spin", "link_prev"), ("mcs_handoff", "set_locked"))
        out += [f"steps.{a} ({s.get(a, 0)}) differs from steps.{b} ({s.get(b, 0)}): every {b} has its {a}"
                for a, b in pairs if s.get(a, 0) != s.get(b, 0)]
        if s.get("xchg_tail", 0) > s.get("node_count_inc", 0):
            out.append("more xchg_tail than node_count_inc: a CPU publishes a tail only with a node")
    return out


def test_counts_add_up(ctx):
    bad = [(n, p) for n, r in runs(ctx) if r.get("lock") in LOCKS for p in _problems(r)]
    if bad:
        n, problem = bad[0]
        raise Fail(f"runs.jsonl line {n}: {problem}" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))


def test_conclusion_follows(ctx):
    got = by_lock(ctx)
    c = ctx.toml("conclusion.toml")
    median = {lock: statistics.median(r["per_s"] for r in rs) for lock, rs in got.items()}
    faster = max(LOCKS, key=lambda lock: median[lock])
    if c.get("faster") != faster:
        raise Fail(f"faster = {c.get('faster')!r}, but the medians of your own runs are {median['qspinlock']:g} "
                   f"(qspinlock) and {median['ticket']:g} (ticket) acquisitions per second")
    ratio = median["qspinlock"] / median["ticket"]
    if not isinstance(c.get("ratio"), (int, float)) or abs(c["ratio"] - ratio) > 0.02 * ratio + 0.005:
        raise Fail(f"ratio = {c.get('ratio')!r}, but your medians give {ratio:.2f}")
    q = got["qspinlock"]
    share = sum(r["steps"].get("xchg_tail", 0) for r in q) / sum(r["total"] for r in q)
    if not isinstance(c.get("queued_share"), (int, float)) or abs(c["queued_share"] - share) > 0.005:
        raise Fail(f"queued_share = {c.get('queued_share')!r}, but your qspinlock runs queued "
                   f"{share:.4f} of their acquisitions (xchg_tail / total)")
