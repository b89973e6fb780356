"""DAMON's step-table columns and the counts ``-c`` reveals."""

from __future__ import annotations

from ...models.damon.model import INIT, fmt, size_text
from .base import Presentation


class DamonPresentation(Presentation):
    def summary(self, s):
        k = s.k
        out = {"next": k.phase, "t": f"{k.now_us / 1000:g} ms", "samples": str(k.passed_sample_intervals),
               "aggr": str(k.aggregations), "nr_regions": str(len(s.regions)),
               "regions (start size:nr_accesses)": regions_text(s.regions)}
        if s.cfg.schemes:
            out["applied"] = " ".join(f"{ap.scheme}:{size_text(ap.end - ap.start)}" for ap in s.applied) or "-"
        return out

    def answers(self, trace):
        final = trace.states[-1]
        counts = [len(s.regions) for s in trace.states if s.k.phase != INIT and s.regions]
        out = {"aggregations": final.k.aggregations, "sampling intervals": final.k.passed_sample_intervals,
               "random draws": final.k.rng.draws, "nr_regions at the end": len(final.regions),
               "nr_regions min..max": f"{min(counts)}..{max(counts)}" if counts else "-"}
        for k, (sc, ss) in enumerate(zip(final.cfg.schemes, final.schemes)):
            st = ss.stat
            out[f"scheme {k} ({sc.action})"] = (f"tried {st.nr_tried} ({size_text(st.sz_tried)}), applied "
                                                f"{st.nr_applied} ({size_text(st.sz_applied)}), quota exceeded "
                                                f"{st.qt_exceeds}")
        return out


def regions_text(regions: tuple, shown: int = 6) -> str:
    parts = [f"{fmt(r.start)} {size_text(r.end - r.start)}:{r.nr_accesses}" for r in regions[:shown]]
    if len(regions) > shown:
        parts.append(f"+{len(regions) - shown} more")
    return ", ".join(parts) or "-"
