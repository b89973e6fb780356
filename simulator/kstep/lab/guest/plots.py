"""Figures of real-kernel lab results (matplotlib): for ``kstep lab show --plot`` and notebook 05.

Every number drawn comes from :mod:`kstep.lab.guest.probes`, which also prints and checks them.
"""

from __future__ import annotations

import io


from kstep.lab.guest import probes


def _case(result: dict, name: str) -> dict | None:
    return next((c for c in result["cases"] if c["name"] == name and c["ok"]), None)


def vma_axes(ax, results: list[dict]) -> None:
    """Share of faults that fell back to mmap_lock, kernel beside model, per architecture."""
    labels, kernel, model = [], [], []
    for r in results:
        case = _case(r, "vma")
        if case is None:
            continue
        m = probes.vma_model(r["models"]["vma-locks"])
        for mode, fields in probes._by_mode(case["data"], "vma").items():
            c = probes.vma_counts(fields)
            labels.append(f"{r['arch']}\n{mode}")
            kernel.append(100 * c["w_null"] / max(c["w_ok"] + c["w_null"], 1))
            fb = m[mode]["vma_lock_abort"] + m[mode]["vma_lock_miss"]
            model.append(100 * fb / max(fb + m[mode]["vma_lock_success"], 1))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], kernel, 0.4, label="real kernel (kprobes)")
    ax.bar([i + 0.2 for i in x], model, 0.4, label="model (random schedules)")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("faults that fell back to mmap_lock (%)")
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_title("per-VMA locks: zero alone, some beside a writer")
    ax.legend()


def fork_axes(ax, results: list[dict]) -> None:
    """Median fork() time per page size, per architecture, with the standard deviation."""
    width = 0.8 / len(probes.FORK_MODES)
    for k, mode in enumerate(probes.FORK_MODES):
        xs, ys, errs = [], [], []
        for i, r in enumerate(results):
            case = _case(r, "fork")
            if case is None:
                continue
            st = probes.fork_stats(case["data"]).get(mode)
            if st:
                xs.append(i + (k - 1.5) * width)
                ys.append(st["median_us"] / 1000)
                errs.append(st["sd_us"] / 1000)
        ax.bar(xs, ys, width, yerr=errs, capsize=2, label=mode)
    ax.set_xticks(range(len(results)), [r["arch"] for r in results])
    ax.set_ylabel("fork() of 256 MiB, median (ms)")
    ax.set_title("fork batching: 4K vs 64K mTHP vs 2M THP vs 2M PTE-mapped")
    ax.legend()


def fork_ratio_axes(ax, results: list[dict]) -> None:
    """Each mode's fork() cost relative to 4K: the kernel's median time beside the model's operations for a
    later fork (all forks but the first copy the read-only PTEs the first one left)."""
    modes = [m for m in probes.FORK_MODES if m != "4k"]
    labels, kernel, model = [], [], []
    for r in results:
        case = _case(r, "fork")
        if case is None:
            continue
        measured, predicted = probes.fork_measured(case["data"]), probes.fork_prediction(r, "later")
        for mode in modes:
            labels.append(f"{r['arch']}\n{mode}")
            kernel.append(measured.get(mode, float("nan")))
            model.append(float("nan") if predicted[mode] is None else predicted[mode])
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], kernel, 0.4, label="real kernel: median time / 4k's")
    ax.bar([i + 0.2 for i in x], model, 0.4, label="model, a later fork: operations / 4k's (2m: not modelled)")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("cost relative to 4K pages")
    ax.set_title("fork of 256 MiB: what batching saves, measured and counted")
    ax.legend()


def damon_axes(ax, result: dict, model: bool = False) -> None:
    """DAMON's regions over time, coloured by nr_accesses, with the planted hot range marked: the
    kernel's, or (``model``) the DAMON model's run of the same maps, hot range and intervals."""
    case = _case(result, "damon")
    if case is None:
        ax.set_axis_off()
        return
    _fields, aggs, hot = probes.damon_facts(case)
    if model:
        aggs = probes.damon_model(case, result)
    lo, hi = hot[0] - 8 * (hot[1] - hot[0]), hot[1] + 8 * (hot[1] - hot[0])
    top = max((nr for a in aggs for _, _, nr, _ in a.regions), default=1) or 1
    cmap = __import__("matplotlib").colormaps["viridis"]
    for k, agg in enumerate(aggs):
        for start, end, nr, _age in agg.regions:
            if end > lo and start < hi:
                a, b = max(start, lo), min(end, hi)
                ax.bar(k, (b - a) / 2**20, bottom=(a - hot[0]) / 2**20, width=1.0,
                       color=cmap(nr / top), edgecolor="white", linewidth=0.3)
    for edge in hot:
        ax.axhline((edge - hot[0]) / 2**20, color="red", linestyle="--", linewidth=1)
    ax.set_xlabel("aggregation interval (100 ms)")
    ax.set_ylabel("MiB from the hot range's start")
    who = "the model of" if model else "the kernel on"
    ax.set_title(f"DAMON regions, {who} {result['arch']}\n(colour: nr_accesses 0..{top}; red: hot range)")


def result_figure(result: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(18, 10))
    vma_axes(axes[0][0], [result])
    fork_axes(axes[0][1], [result])
    fork_ratio_axes(axes[0][2], [result])
    damon_axes(axes[1][0], result)
    damon_axes(axes[1][1], result, model=True)
    axes[1][2].set_axis_off()
    fig.tight_layout()
    return fig


def png(result: dict) -> bytes:
    """The result's figures as a PNG image (the caller writes it where the user asked)."""
    image = io.BytesIO()
    result_figure(result).savefig(image, format="png", dpi=100)
    return image.getvalue()
