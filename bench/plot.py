"""One PNG with every benchmark: engine rates against targets, the per-VMA lock comparison, the
player's per-frame cost, the kernel lab's locks on three architectures, fork's page-table copy
counted per strategy, the memory it takes to write and read back a trace file, and DAMON's access
checks against page scanning (bench/damon.py draws the rest of DAMON's results)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.damon import overhead_panel  # noqa: E402


def draw(results: dict, path):
    fig, ((a, b), (c, d), (e, f), (g, h)) = plt.subplots(4, 2, figsize=(15, 20))
    plt.rcParams["axes.titlesize"] = 10
    eng = results["engine"]
    names = ["steps_per_s", "checked_steps_per_s", "states_per_s"]
    a.bar(names, [eng[n] for n in names], color=["#4C72B0", "#8FA9D6", "#55A868"])
    for x, n in enumerate(names):
        target = eng["targets"].get(n)
        if target:
            a.hlines(target, x - 0.4, x + 0.4, colors="black", linestyles="dashed")
    a.set_title(f"engine ({eng['model']}, Python {eng['python']}, one core)\n"
                f"peak {eng['peak_mib_1e6_states']} MiB for 10^6 explored states; dashed: targets")
    a.set_ylabel("per second")

    vma = results["vma-locks"]
    sizes = list(vma)
    width = 0.2
    for k, (run, colour) in enumerate((("with_writers", "#C44E52"), ("no_writer_control", "#8172B2"))):
        for j, variant in enumerate(("no-per-vma-lock", "v6.12")):
            xs = [i + (2 * k + j - 1.5) * width for i in range(len(sizes))]
            b.bar(xs, [vma[s][run]["runs"][variant]["rounds"] for s in sizes], width,
                  label=f"{variant}, {run.replace('_', ' ')}", color=colour, alpha=1.0 if j else 0.45)
    b.set_xticks(range(len(sizes)), [size.replace(", ", ",\n") for size in sizes], fontsize=8)
    b.set_ylabel("completion (round-robin rounds)")
    b.set_title("android-app-launch: mmap_lock only vs per-VMA locks")
    b.legend(fontsize=7)

    ply = results["player"]
    names = [t["mechanism"] for t in ply["traces"]]
    xs = range(len(names))
    c.bar([x - 0.2 for x in xs], [t["play"]["update_ms"]["median"] for t in ply["traces"]], 0.4,
          label="median", color="#DD8452")
    c.bar([x + 0.2 for x in xs], [t["play"]["update_ms"]["p95"] for t in ply["traces"]], 0.4,
          label="p95", color="#C44E52")
    c.axhline(ply["targets"]["update_ms_p95_max"], color="black", linestyle="dashed")
    c.set_xticks(list(xs), [f"{n}\n{t['play']['fps']:.0f} fps" for n, t in zip(names, ply["traces"])])
    c.set_ylabel("JavaScript per frame (ms)")
    c.set_title(f"player, {ply['steps']} steps in headless chromium\n(targets: 2 ms per frame, 55 fps)")
    c.legend(fontsize=7)
    qspinlock_panel(d, results["qspinlock"])
    for ax, fmt in ((e, "arm64-4K-contpte"), (f, "x86-64")):
        fork_batch_panel(ax, results["fork-batch"], fmt)
    traces_panel(g, results["traces"])
    overhead_panel(h, results["damon"]["overhead"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def qspinlock_panel(ax, q):
    """Acquisitions per second of every lock at 1, 2, 4 threads, per architecture (log scale)."""
    archs = list(q["throughput"])
    locks = list(q["throughput"][archs[0]]["acquisitions_per_s"])
    threads = list(q["throughput"][archs[0]]["acquisitions_per_s"][locks[0]])
    groups = [(arch, n) for arch in archs for n in threads]
    width = 0.8 / len(locks)
    for j, lock in enumerate(locks):
        xs = [g + (j - (len(locks) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [max(q["throughput"][arch]["acquisitions_per_s"][lock][n], 1) for arch, n in groups],
               width, label=lock)
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)), [f"{arch}{' (emulated)' if q['throughput'][arch]['emulated'] else ''}"
                                        f"\n{n} thr" if n == threads[0] else f"{n} thr"
                                        for arch, n in groups], fontsize=7)
    ax.set_ylabel("acquisitions per second (median)")
    ax.set_title("kernel lab: qspinlock, ticket and pthread locks (qemu-user for arm64 and ppc64le)")
    ax.legend(fontsize=7)


def traces_panel(ax, t):
    """Peak resident memory of writing and of showing a trace, by its number of steps."""
    steps = [r["steps"] for r in t["rows"]]
    for what, colour in (("write", "#4C72B0"), ("show", "#DD8452")):
        ax.plot(steps, [r[what]["peak_rss_mib"] for r in t["rows"]], "o-", color=colour,
                label=f"{'run --json' if what == 'write' else 'show'} (peak RSS)")
    for r in t["rows"]:
        ax.annotate(f"{r['file_mib']} MiB file", (r["steps"], r["write"]["peak_rss_mib"]), fontsize=7,
                    textcoords="offset points", xytext=(4, -10))
    ax.set_xlabel("trace steps")
    ax.set_ylabel("peak resident memory (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"trace files ({t['mechanism']}): streamed out and back in, whole process")


def fork_batch_panel(ax, fb, fmt):
    """Operations per GiB copied, per folio order and strategy, with the change against per-pte."""
    table = fb["formats"][fmt]["strategies"]
    orders = list(table)
    width = 0.8 / len(fb["strategies"])
    for j, strategy in enumerate(fb["strategies"]):
        xs = [g + (j - (len(fb["strategies"]) - 1) / 2) * width for g in range(len(orders))]
        rows = [table[o][strategy] for o in orders]
        bars = ax.bar(xs, [r["operations"] for r in rows], width, label=strategy)
        ax.bar_label(bars, [f"{r['change_vs_per_pte']:+.0%}" for r in rows], fontsize=7)
    ax.set_xticks(range(len(orders)), orders)
    ax.set_ylabel("counted operations per GiB")
    ax.set_title(f"fork-batch model, {fmt}: PTE loads, stores, atomics, TLB flushes, refcount and mapcount "
                 f"operations\n(labels: change against per-pte)", fontsize=9)
    ax.legend(fontsize=7)
