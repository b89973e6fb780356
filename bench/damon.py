"""The DAMON patch thread's claims, counted by running the damon model (kstep.measure.damon says how).

Overhead (the primary result, deterministic): access checks per aggregation interval on targets of
1 GiB to 1 TiB, against checking every page at every sampling interval; a run that makes more
than max_nr_regions x samples checks in any aggregation fails the bench.  Accuracy: the share of
the true hot bytes DAMON's hottest regions hold after each aggregation, by max_nr_regions and
workload shape, over SEEDS seeds.  Schemes: the thread's prcl and ethp on the bundled processes,
laid out as its tables (memory, then the slowdown proxy, each refault costed by the committed cost
table), with the proxies stated in the JSON.

``python bench/run.py damon`` runs it alone; `make bench` runs it with the others;
either writes damon.json and damon.png.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from kstep.engine import costs
from kstep.measure import damon as dc

OVERHEAD_AGGREGATIONS = 40  # enough for "every page at 50%" to split up to its plateau
ACCURACY_AGGREGATIONS = 20
MAX_NR_REGIONS = (16, 32, 64, 256, 1000)
SEEDS = (1, 2, 3, 4, 5)
SCHEME_AGGREGATIONS = 100  # 10 s: prcl's 5 s age leaves 5 s of reclaim


def overhead(say) -> dict:
    out = {"what": "access checks per aggregation interval (regions whose sampled folio damon_va_check_accesses "
                   "read, summed over its sampling intervals), counted in the model's run, against page-granularity "
                   "scanning (every page checked in every sampling interval: pages x samples)",
           "attrs": "sample 5 ms, aggregation 100 ms (20 samples), min_nr_regions 10, max_nr_regions 1000",
           "target": "an 8 MiB heap, one big mapping and a 1 MiB stack; size is their total",
           "aggregations": OVERHEAD_AGGREGATIONS, "workloads": dc.OVERHEAD_DOC, "sizes": {}}
    for gib in dc.SIZES_GIB:
        rows = {}
        for workload in dc.OVERHEAD_DOC:
            say(f"damon: overhead, {gib} GiB, {workload} ...")
            row = dc.overhead(gib * dc.GIB, workload, aggregations_n=OVERHEAD_AGGREGATIONS)
            why = dc.bound_broken(row)
            if why:
                raise RuntimeError(f"damon bench: {why}")
            rows[workload] = row
        out["sizes"][f"{gib} GiB"] = rows
    return out


def accuracy(say) -> dict:
    out = {"what": "share of the true hot bytes inside the smallest set of hottest regions (by nr_accesses as "
                   "kdamond_reset_aggregated reported them) whose total size is at least the true hot size; ties "
                   "at the boundary count in proportion (the expectation under random tie-breaking)",
           "true_hot": "the bytes inside the workload's active blocks during that aggregation interval",
           "aggregations": ACCURACY_AGGREGATIONS, "seeds": list(SEEDS), "min_nr_regions": 10, "shapes": {}}
    for shape, (_, _, doc) in dc.accuracy_shapes().items():
        say(f"damon: accuracy, {shape} ...")
        by_max = {}
        for mx in MAX_NR_REGIONS:
            runs = [dc.accuracy(shape, mx, aggregations_n=ACCURACY_AGGREGATIONS, seed=seed) for seed in SEEDS]
            per_aggr = list(zip(*runs))
            by_max[str(mx)] = {"mean_by_aggregation": [round(statistics.mean(v), 4) for v in per_aggr],
                               "final_mean": round(statistics.mean(r[-1] for r in runs), 4),
                               "final_min": round(min(r[-1] for r in runs), 4),
                               "final_max": round(max(r[-1] for r in runs), 4)}
        out["shapes"][shape] = {"doc": doc, "max_nr_regions": by_max}
    return out


def change(new, old) -> float:
    return round(100 * (new - old) / old, 2) if old else 0.0


def schemes(say) -> dict:
    prcl, ethp = {}, {}
    table = costs.load()
    fault_ns = dc.refault_ns(table)
    for name in dc.SCHEME_WORKLOADS:
        say(f"damon: prcl and ethp on {name} ...")
        p = dc.prcl(name, SCHEME_AGGREGATIONS, table)
        p["rss_change_pct"] = change(p["rss_avg_prcl_kib"], p["rss_avg_orig_kib"])
        p["runtime_overhead_pct"] = change(p["runtime_prcl_s"], p["runtime_orig_s"])
        prcl[name] = p
        e = dc.ethp(name, SCHEME_AGGREGATIONS)
        thp, eth = e["thp"], e["ethp"]
        e["waste_removed_pct"] = round(100 * (1 - eth["cold_in_huge_avg_kib"] / thp["cold_in_huge_avg_kib"]), 2)
        e["coverage_kept_pct"] = round(100 * eth["hot_covered_pct"] / thp["hot_covered_pct"], 2)
        ethp[name] = e
    tables = prcl_tables(prcl) + [""] + ethp_tables(ethp)
    for line in tables:
        say(line)
    return {
        "tables": tables,
        "aggregations": SCHEME_AGGREGATIONS,
        "workloads": "the processes of the bundled scenarios (the thread's process: the one of the bundled ethp and "
                     "prcl scenarios; 'back at 7 s': phase-change whose heap is touched again from sampling "
                     "interval 1400), each run with the thread's prcl or ethp schemes as the bundled prcl and "
                     "ethp scenarios convert them",
        "prcl": {"proxy": f"slowdown: refaults x {fault_ns:g} ns (the committed cost table's page_fault + page_copy: "
                          f"the least a zram swap-in costs, its decompression unmeasured) added to the run's time; "
                          f"memory: resident bytes averaged over the sampling intervals, orig = every mapped byte "
                          f"resident",
                 "refault_ns": fault_ns, "rows": prcl},
        "ethp": {"proxy": "speedup kept: hot bytes covered by huge pages (share of the hot bytes, averaged over the "
                          "sampling intervals); memory waste: cold bytes inside huge pages (averaged); orig: no huge "
                          "pages (madvise policy, nothing advised), thp: every 2 MiB-aligned block huge (always), "
                          "ethp: the blocks the thread's schemes advised, collapsed or split at once",
                 "rows": ethp},
    }


def table(title: str, columns: list, rows: dict) -> list[str]:
    """Text laid out as the thread's tables: a title column, then one column per configuration."""
    width = max(len(title), *(len(n) for n in rows)) + 2
    lines = [title.ljust(width) + "".join(c.ljust(14) for c in columns)]
    lines += [name.ljust(width) + "".join(str(v).ljust(14) for v in cells) for name, cells in rows.items()]
    return [line.rstrip() for line in lines]


def prcl_tables(prcl: dict) -> list[str]:
    return (table("rss.avg (KiB)", ["orig", "prcl", "(overhead)"],
                  {n: [r["rss_avg_orig_kib"], r["rss_avg_prcl_kib"], f"({r['rss_change_pct']:.2f})"]
                   for n, r in prcl.items()})
            + [""] + table("runtime (s, proxy)", ["orig", "prcl", "(overhead)", "refaults"],
                           {n: [f"{r['runtime_orig_s']:.3f}", f"{r['runtime_prcl_s']:.5f}",
                                f"({r['runtime_overhead_pct']:.3f})", r["refaults"]] for n, r in prcl.items()}))


def ethp_tables(ethp: dict) -> list[str]:
    return (table("cold in huge pages (KiB)", ["orig", "thp", "ethp", "(waste removed)"],
                  {n: [r["orig"]["cold_in_huge_avg_kib"], r["thp"]["cold_in_huge_avg_kib"],
                       r["ethp"]["cold_in_huge_avg_kib"], f"({r['waste_removed_pct']:.2f})"] for n, r in ethp.items()})
            + [""] + table("hot covered by huge (%)", ["orig", "thp", "ethp", "(kept of thp)"],
                           {n: [r["orig"]["hot_covered_pct"], r["thp"]["hot_covered_pct"], r["ethp"]["hot_covered_pct"],
                                f"({r['coverage_kept_pct']:.2f})"] for n, r in ethp.items()}))


def run(out_dir, say=print) -> dict:
    result = {"overhead": overhead(say), "accuracy": accuracy(say), "schemes": schemes(say)}
    (Path(out_dir) / "damon.json").write_text(json.dumps(result, indent=1) + "\n")
    draw(result, Path(out_dir) / "damon.png")
    return result


def overhead_panel(ax, o: dict) -> None:
    """Access checks per aggregation against the target's size, log-log: DAMON flat, pages growing."""
    sizes = list(o["sizes"])
    gib = [int(s.split()[0]) for s in sizes]
    first = o["sizes"][sizes[0]]
    any_row = next(iter(first.values()))
    ax.plot(gib, [next(iter(o["sizes"][s].values()))["page_scan_checks_per_aggregation"] for s in sizes], "s-",
            color="#C44E52", label="page-granularity scanning (pages x samples)")
    for workload, colour in zip(first, ("#4C72B0", "#55A868")):
        ax.plot(gib, [o["sizes"][s][workload]["max_checks"] for s in sizes], "o-", color=colour,
                label=f"DAMON, {workload} (most in one aggregation)")
    ax.axhline(any_row["bound"], color="black", linestyle="dashed",
               label=f"max_nr_regions x samples = {any_row['bound']:,}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(gib, [s.replace(" GiB", "") for s in sizes])
    ax.set_xlabel("target size (GiB)")
    ax.set_ylabel("access checks per aggregation interval")
    ax.set_title(f"overhead: counted in the model's run ({o['aggregations']} aggregations per size)", fontsize=10)
    ax.legend(fontsize=7)


def accuracy_panel(ax, a: dict) -> None:
    shapes = list(a["shapes"])
    maxes = list(next(iter(a["shapes"].values()))["max_nr_regions"])
    width = 0.8 / len(maxes)
    for j, mx in enumerate(maxes):
        xs = [g + (j - (len(maxes) - 1) / 2) * width for g in range(len(shapes))]
        cells = [a["shapes"][s]["max_nr_regions"][mx] for s in shapes]
        ax.bar(xs, [c["final_mean"] for c in cells], width, label=f"max_nr_regions {mx}",
               yerr=[[c["final_mean"] - c["final_min"] for c in cells],
                     [c["final_max"] - c["final_mean"] for c in cells]],
               capsize=2)
    ax.set_xticks(range(len(shapes)), [s.replace(", ", ",\n") for s in shapes], fontsize=8)
    ax.set_ylim(0, 1.2)
    ax.set_ylabel("share of the true hot bytes found")
    ax.set_title(f"accuracy after {a['aggregations']} aggregations (mean of {len(a['seeds'])} seeds, whiskers: "
                 f"min and max)", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", ncol=3)


def prcl_panel(ax, s: dict) -> None:
    rows = s["prcl"]["rows"]
    names = list(rows)
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [rows[n]["rss_avg_orig_kib"] / 1024 for n in names], 0.4, label="orig",
           color="#8172B2")
    bars = ax.bar([x + 0.2 for x in xs], [rows[n]["rss_avg_prcl_kib"] / 1024 for n in names], 0.4, label="prcl",
                  color="#55A868")
    ax.bar_label(bars, [f"{rows[n]['rss_change_pct']:+.1f}%\n{rows[n]['refaults']} refaults"
                        for n in names], fontsize=7)
    ax.set_xticks(list(xs), [n.replace(", ", ",\n") for n in names], fontsize=8)
    ax.set_ylabel("resident MiB, averaged over the run")
    ax.set_title(f"prcl: memory saved against refaults x {s['prcl']['refault_ns']:g} ns (committed cost table)",
                 fontsize=10)
    ax.legend(fontsize=7)


def ethp_panel(ax, s: dict) -> None:
    rows = s["ethp"]["rows"]
    names = list(rows)
    xs = range(len(names))
    for k, (policy, colour) in enumerate((("thp", "#C44E52"), ("ethp", "#4C72B0"))):
        waste = [rows[n][policy]["cold_in_huge_avg_kib"] / 1024 for n in names]
        bars = ax.bar([x + (k - 0.5) * 0.4 for x in xs], waste, 0.4, label=f"{policy}: cold MiB in huge pages",
                      color=colour)
        ax.bar_label(bars, [f"hot covered\n{rows[n][policy]['hot_covered_pct']:.0f}%" for n in names], fontsize=7)
    ax.set_xticks(list(xs), [n.replace(", ", ",\n") for n in names], fontsize=8)
    ax.set_ylabel("cold bytes in huge pages (MiB, averaged)")
    ax.set_title("ethp: THP's waste (cold bytes in huge pages) against its benefit (hot bytes covered)", fontsize=10)
    ax.legend(fontsize=7)


def draw(result: dict, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ((a, b), (c, d)) = plt.subplots(2, 2, figsize=(15, 10))
    overhead_panel(a, result["overhead"])
    accuracy_panel(b, result["accuracy"])
    prcl_panel(c, result["schemes"])
    ethp_panel(d, result["schemes"])
    fig.suptitle("DAMON, counted in the kstep model (nothing here is timed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)

