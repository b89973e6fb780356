"""The kernel lab's DAMON port and the simulator, side by side.

``simulated(config, schedule)`` runs the damon model (v6.12.117) under the scenario's schedule (a
scripted one if it names one, else round-robin); ``params(config, trace)`` writes the scenario as
the flat key=value lines the C program reads (kernel-lab/damon/harness.c; ``PARAM_KEYS`` are the
keys it may use), with each mmap()/munmap() call placed after the number of kdamond steps that
preceded it in the trace; ``report(trace)`` prints the run in the C program's output format: at
each kdamond_reset_aggregated the aggregation, time, sampling intervals and nr_regions, then every
region as the damon_aggregated tracepoint reports it; every action a scheme applied; at the end the
random draws, the clock, kdamond's step count and each scheme's statistics.  ``random_config(seed)``
draws a valid scenario from a seed.  The identity test compares the two texts.
"""

from __future__ import annotations

import random
from pathlib import Path

from ...engine import simulate
from ...scenario_spec.scenario import to_config
from ...engine.schedule import LONGEST_RUN, RoundRobin, Scripted
from ...models import make_model
from ...models.damon import damos as dm
from ...models.damon.model import APPLY, KDAMOND, MMAP_ACTOR, RESET, SCHEMA

ATTR_KEYS = {"sample_us": "sample_us", "aggr_us": "aggr_us", "update_us": "update_us",
             "min_nr_regions": "min_nr_regions", "max_nr_regions": "max_nr_regions"}
VMA_KEYS = ("start", "end", "thp")
ACCESS_KEYS = ("start", "end", "rate_permil", "width", "speed", "from_sample", "until_sample")
MMAP_KEYS = ("op", "start", "end", "thp", "after")
SCHEME_KEYS = ("action", "min_sz", "max_sz", "min_nr_accesses", "max_nr_accesses", "min_age", "max_age",
               "apply_interval_us", "quota_ms", "quota_bytes", "quota_reset_interval_ms", "weight_sz",
               "weight_nr_accesses", "weight_age", "wmark_metric", "wmark_interval_us", "wmark_high", "wmark_mid",
               "wmark_low", "goals", "filters")
GOAL_KEYS = ("target_value", "current")
FILTER_KEYS = ("start", "end", "matching")
PARAM_KEYS = ("aggregations", "seed", *ATTR_KEYS, "vmas", "accesses", "mmaps", "schemes", "free_mem_rate",
              *(f"ns_per_byte.{a}" for a in dm.ACTIONS),
              *(f"vma.N.{k}" for k in VMA_KEYS), *(f"access.N.{k}" for k in ACCESS_KEYS),
              *(f"mmap.N.{k}" for k in MMAP_KEYS), *(f"scheme.N.{k}" for k in SCHEME_KEYS),
              *(f"scheme.N.goal.N.{k}" for k in GOAL_KEYS), *(f"scheme.N.filter.N.{k}" for k in FILTER_KEYS))


def _value(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    return str(v)


def _series(pairs) -> str:
    return ",".join(f"{at}:{v}" for at, v in pairs)


def simulated(config: dict, schedule: str = ""):
    """The simulator's run of the scenario (v6.12.117), under its schedule."""
    model = make_model("damon")
    trace = simulate(model, model.initial(config), Scripted(schedule) if schedule else RoundRobin(),
                     max_steps=LONGEST_RUN, check=False)
    if trace.outcome != "finished":
        raise RuntimeError(f"damon: the run ended {trace.outcome}")
    return trace


def mmap_after(trace) -> list[int]:
    """For each mmap()/munmap() call, the number of kdamond steps taken before it."""
    out, steps = [], 0
    for a in trace.actions:
        if a.actor == KDAMOND:
            steps += 1
        elif a.actor == MMAP_ACTOR:
            out.append(steps)
    return out


def params(config: dict, trace) -> str:
    """The scenario's parameters, one key=value a line, for the C port; the mmap calls where
    ``trace`` ran them."""
    a = config["attrs"]
    lines = [f"aggregations={config['aggregations']}", f"seed={config['seed']}",
             *(f"{key}={a[name]}" for key, name in ATTR_KEYS.items()),
             f"vmas={len(config['vmas'])}", f"accesses={len(config['access'])}", f"mmaps={len(config['mmap'])}",
             f"schemes={len(config['schemes'])}", f"free_mem_rate={_series(config['free_mem_rate'])}"]
    lines += [f"ns_per_byte.{k}={ns}" for k, ns in sorted(config["ns_per_byte"].items())]
    for k, v in enumerate(config["vmas"]):
        lines += [f"vma.{k}.{key}={_value(v[key])}" for key in VMA_KEYS]
    for k, w in enumerate(config["access"]):
        lines += [f"access.{k}.{key}={_value(w[key])}" for key in ACCESS_KEYS]
    for k, (op, after) in enumerate(zip(config["mmap"], mmap_after(trace))):
        lines += [f"mmap.{k}.{key}={_value(after if key == 'after' else op[key])}" for key in MMAP_KEYS]
    for k, s in enumerate(config["schemes"]):
        q, w = s["quota"], s["watermarks"]
        values = {"action": s["action"], "min_sz": s["sz"][0], "max_sz": s["sz"][1],
                  "min_nr_accesses": s["nr_accesses"][0], "max_nr_accesses": s["nr_accesses"][1],
                  "min_age": s["age"][0], "max_age": s["age"][1], "apply_interval_us": s["apply_interval_us"],
                  "quota_ms": q["ms"], "quota_bytes": q["bytes"], "quota_reset_interval_ms": q["reset_interval_ms"],
                  "weight_sz": q["weight_sz"], "weight_nr_accesses": q["weight_nr_accesses"],
                  "weight_age": q["weight_age"], "wmark_metric": w["metric"], "wmark_interval_us": w["interval_us"],
                  "wmark_high": w["high"], "wmark_mid": w["mid"], "wmark_low": w["low"],
                  "goals": len(q["goals"]), "filters": len(s["filters"])}
        lines += [f"scheme.{k}.{key}={_value(values[key])}" for key in SCHEME_KEYS]
        for j, g in enumerate(q["goals"]):
            lines += [f"scheme.{k}.goal.{j}.target_value={g['target_value']}",
                      f"scheme.{k}.goal.{j}.current={_series(g['current'])}"]
        for j, f in enumerate(s["filters"]):
            lines += [f"scheme.{k}.filter.{j}.{key}={_value(f[key])}" for key in FILTER_KEYS]
    return "\n".join(lines) + "\n"


def report(trace) -> str:
    """A finished run in the C port's output format."""
    out = []
    for i, a in enumerate(trace.actions):
        if a.actor != KDAMOND:
            continue
        s, t = trace.states[i], trace.states[i + 1]
        if a.label == RESET:
            k = s.k
            out.append(f"aggregation {k.aggregations + 1} {k.now_us} {k.passed_sample_intervals} {len(s.regions)}")
            out += [f"r {r.start:#x} {r.end:#x} {r.nr_accesses} {r.nr_accesses_bp} {r.age}" for r in s.regions]
        elif a.label == APPLY:
            out += [f"apply {ap.scheme} {ap.start:#x} {ap.end:#x} {ap.sz_applied}" for ap in t.applied]
    final = trace.states[-1]
    out += [f"draws {final.k.rng.draws}", f"time {final.k.now_us} {final.k.passed_sample_intervals}",
            f"steps {sum(a.actor == KDAMOND for a in trace.actions)}"]
    for k, ss in enumerate(final.schemes):
        st = ss.stat
        out.append(f"stat {k} {st.nr_tried} {st.sz_tried} {st.nr_applied} {st.sz_applied} {st.qt_exceeds} {ss.esz}")
    return "\n".join(out) + "\n"


MIB = 1 << 20


def random_config(seed: int) -> tuple[dict, str]:
    """A valid scenario drawn from a seed, and a schedule for its mmap calls: three to six
    mappings (some THP) with gaps, hot blocks (some moving, some partial, some phased), up to two
    schemes with patterns, quotas (size, time, goals), watermarks and filters, small intervals."""
    rnd = random.Random(seed)
    vmas, at = [], 0x7F00_0000_0000
    for _ in range(rnd.randrange(3, 7)):
        at += rnd.choice((2, 4, 64, 1024)) * MIB
        size = rnd.choice((2, 8, 16, 64)) * MIB
        vmas.append({"start": at, "end": at + size, "thp": rnd.random() < 0.3})
        at += size
    accesses = []
    for _ in range(rnd.randrange(0, 4)):
        v = rnd.choice(vmas)
        start = v["start"] + rnd.randrange(0, (v["end"] - v["start"]) // 2, 4096)
        end = min(v["end"], start + rnd.choice((1, 2, 4)) * MIB)
        accesses.append({"start": start, "end": end, "rate_permil": rnd.choice((1000, 1000, 500, 100)),
                         "width": rnd.choice((0, 0, 256 << 10)), "speed": rnd.choice((0, 64 << 10)),
                         "from_sample": rnd.choice((0, 0, 20)), "until_sample": rnd.choice((1 << 62, 60))})
    samples = rnd.choice((2, 5, 10))
    schemes = []
    for _ in range(rnd.randrange(0, 3)):
        scheme = {"action": rnd.choice(("pageout", "cold", "willneed", "hugepage", "stat")),
                  "nr_accesses": rnd.choice(([0, 0], [0, samples], [1, samples])),
                  "age": rnd.choice(([0, 0xFFFF_FFFF], [2, 0xFFFF_FFFF])),
                  "sz": [rnd.choice((0, 4096)), rnd.choice((1 << 62, 64 * MIB))]}
        kind = rnd.choice(("none", "bytes", "ms", "goal"))
        quota = {"weight_nr_accesses": rnd.randrange(0, 3), "weight_age": rnd.randrange(0, 3)}
        if kind != "none":
            quota["reset_interval_ms"] = rnd.choice((10, 50, 100))
        if kind == "bytes":
            quota["bytes"] = rnd.choice((4096, 1 * MIB, 3 * MIB + 4096))
        if kind == "ms":
            quota["ms"] = rnd.choice((1, 2))
        if kind == "goal":
            quota["goals"] = [{"target_value": 10000, "current": [[0, rnd.choice((2000, 15000))],
                                                                  [100_000, rnd.choice((5000, 30000))]]}]
        scheme["quota"] = quota
        if rnd.random() < 0.3:
            scheme["watermarks"] = {"metric": "free_mem_rate", "interval_us": 20_000, "high": 500, "mid": 400,
                                    "low": 100}
        if rnd.random() < 0.3:
            v = rnd.choice(vmas)
            scheme["filters"] = [{"start": v["start"] + MIB // 2, "end": v["end"], "matching": rnd.random() < 0.5}]
        schemes.append(scheme)
    mmap = []
    if rnd.random() < 0.5:
        v = vmas[-1]
        mmap.append({"op": "munmap", "start": v["end"] - MIB if not v["thp"] else v["start"],
                     "end": v["end"]})
        mmap.append({"op": "mmap", "start": at + 32 * MIB, "end": at + 40 * MIB, "thp": rnd.random() < 0.5})
    data = {"aggregations": rnd.randrange(3, 9), "seed": rnd.randrange(1 << 63),
            "attrs": {"sample_us": 1000, "aggr_us": 1000 * samples, "update_us": 1000 * samples * rnd.choice((1, 3)),
                      "min_nr_regions": rnd.choice((3, 5, 10)), "max_nr_regions": rnd.choice((12, 20, 40))},
            "vmas": vmas, "access": accesses, "mmap": mmap, "schemes": schemes,
            "free_mem_rate": [[0, 600], [rnd.choice((5000, 20000)), 300]] if any("watermarks" in s for s in schemes)
            else [],
            "ns_per_byte": {"pageout": rnd.choice((0, 1, 20))}}
    config = to_config(SCHEMA.check(data, ""))
    steps = rnd.randrange(1, 2 * samples + 1)
    schedule = " ".join(f"{KDAMOND}*{steps + 3 * k} {MMAP_ACTOR}" for k in range(len(mmap))) if mmap else ""
    return config, schedule


def write_cases(out: Path) -> list[str]:
    """For every bundled scenario NAME: ``out/NAME/params`` (alone in its directory, as the port
    runs) and ``out/NAME.expected``, the simulator's output; the names."""
    from ...scenario_spec import scenario
    from ...models import MODELS

    names = scenario.bundled("damon")
    for name in names:
        sc = scenario.load("damon", MODELS["damon"].scenario_schema, name)
        trace = simulated(sc.config, sc.schedule)
        (out / name).mkdir(parents=True)
        (out / name / "params").write_text(params(sc.config, trace))
        (out / f"{name}.expected").write_text(report(trace))
    return names


if __name__ == "__main__":  # kernel-lab/tests/damoncheck.py: python -m kstep.lab.replay.damon DIR
    import sys

    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: python -m kstep.lab.replay.damon DIR (an existing directory)", file=sys.stderr)
        sys.exit(2)
    print(" ".join(write_cases(Path(sys.argv[1]))))
