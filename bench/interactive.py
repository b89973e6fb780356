"""Benchmark interactive mode: how long a student's step takes, with kstep's Python in the browser.

    python bench/interactive.py [--steps 150] [--rounds 3] [--out bench/results]

It writes the interactive page of the vma-locks ``free-immediately`` counterexample (munmap-vs-fault),
serves it on 127.0.0.1 (kstep serve's server), opens it in Debian's headless Chromium (offline:
every other request is aborted and counted) and measures

- ``ready_cold_s``: from opening the page in a new browser profile (nothing cached) until Pyodide and
  kstep are loaded (the panel's data-loaded is "yes": downloaded, Python started, kstep imported);
  ``ready_warm_s``: the same for the page opened again in another tab of that profile, as a student
  opens the next page of the site (the files come from the browser's cache, revalidated by kstep serve,
  and the WebAssembly compiled before is reused);
- ``boot_s``: from pressing "Schedule it yourself", once loaded, until the first step is offered (the
  Session built and shown);
- ``python``: for every bundled scenario of every mechanism, under sc and, where the mechanism and the
  scenario's variant have one, under x86-TSO (the store buffers' drains are choices too), a Session in
  the page's Pyodide takes up to ``--steps`` seeded random choices; each step is timed as the page does
  it (``Session.step`` and ``Session.page_json``: the view and what the step changed in the columns of
  the run so far), with Pyodide's clock;
- ``click_ms``: on the page, from a click on a thread's button to the second animation frame after
  the panel and the player show the step (Python, the columns handed to the player, its redraw),
  along the student's schedule that reaches the use-after-free, ``--rounds`` times (Start again in
  between: 12 clicks a round, so that the p95 is not just the second slowest click); ``click_parts_ms`` splits each click
  as interactive.js times it: ``python`` (the step and its change of the columns, parsed and
  patched), ``player`` (the columns into the player and its update of the Bokeh models), ``panel``
  (the panel's HTML), and ``paint``: the rest, until the second frame (BokehJS painting the plots
  whose models changed, the browser's style, layout and paint);
- ``native_python``: the same Python steps in this CPython, for comparison.

Target: a student's step answers in under 100 ms (``click_ms`` p95 and every scenario's ``python`` p95).
``run(out_dir, say)`` writes ``interactive.json`` there and returns the same dict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import kstep
from kstep.serve import server

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TARGET_MS = 100.0
UAF_SCHEDULE = ["T1", "T1"] + ["W"] * 9 + ["T1"]
SEED = 1
ROUNDS = 3  # times the schedule is clicked through

# Runs in Pyodide (and in this CPython for comparison): every bundled scenario, seeded random choices.
STEPS = """
import json, random, time
from kstep.scenario_spec import scenario
from kstep.models import MODELS
from kstep.errors import UserError
from kstep.views.interactive import Session

def kstep_run(mech, name, memory, steps, seed):
    rng = random.Random(seed)
    t0 = time.perf_counter()
    s = Session(mech, name, memory_model=memory)
    s.page_json()
    start_ms = (time.perf_counter() - t0) * 1000
    times = []
    for _ in range(steps):
        choices = s.view()["choices"]
        if not choices:
            break
        action = rng.choice(choices)["action"]
        t0 = time.perf_counter()
        s.step(action)
        s.page_json()
        times.append((time.perf_counter() - t0) * 1000)
    return {"mechanism": mech, "scenario": name, "memory_model": memory, "start_ms": start_ms, "step_ms": times}

def kstep_bench(steps, seed):
    out = []
    for mech in MODELS:
        for name in scenario.bundled(mech):
            for memory in ("sc", "tso"):
                try:
                    out.append(kstep_run(mech, name, memory, steps, seed))
                except UserError:  # no tso model of this mechanism, or of the scenario's variant
                    pass
    return json.dumps(out)
"""

CLICKS = """async (actors) => {
  const panel = document.querySelector(".kstep-live");
  const out = [];
  globalThis.kstep_live_profile = [];
  for (const actor of actors) {
    const before = panel.dataset.step;
    const t0 = performance.now();
    panel.querySelector(`button[data-action^="${actor}:"]`).click();
    await new Promise((done) => {
      const seen = new MutationObserver(() => {
        if (panel.dataset.state === "live" && panel.dataset.step !== before) { seen.disconnect(); done(); }
      });
      seen.observe(panel, {attributes: true});
    });
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    out.push(performance.now() - t0);
  }
  return {clicks: out, parts: globalThis.kstep_live_profile};
}"""


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))] if values else None


def summary(samples):
    return {"count": len(samples), "median": round(percentile(samples, 50), 2) if samples else None,
            "p95": round(percentile(samples, 95), 2) if samples else None,
            "max": round(max(samples), 2) if samples else None}


def page(folder: Path) -> Path:
    from kstep.views import export  # Bokeh: loaded when measuring, not for --help (1.4 s of CPU)

    ex = kstep.open("vma-locks", "munmap-vs-fault", "free-immediately")
    return export.write_page(folder, ex.explore().counterexample, ex.model, about=ex.scenario)


def ready(pw, origin: str, requests: list) -> tuple[float, float]:
    """Seconds from opening the page until Python and kstep are loaded, in a new browser profile on disk
    (cold: a student's first page) and then in another tab of it (warm: the next page).  A profile on
    disk, as a student's browser has, keeps the WebAssembly it compiled; no request routing, which
    would turn off the HTTP cache; a request leaving ``origin`` is recorded (and fails: offline)."""
    profile = tempfile.TemporaryDirectory(prefix="kstep-bench-profile-")
    context = pw.chromium.launch_persistent_context(profile.name, executable_path=CHROMIUM, headless=True,
                                                    args=ARGS, viewport={"width": 1280, "height": 1000})
    context.on("request", lambda r: None if r.url.startswith(origin + "/") else requests.append(r.url))
    seconds = []
    for _ in ("cold", "warm"):
        tab = context.new_page()
        t0 = time.perf_counter()
        tab.goto(origin + "/index.html")
        tab.wait_for_selector('.kstep-live[data-loaded="yes"]', timeout=300_000)
        seconds.append(time.perf_counter() - t0)
        tab.close()
    context.close()
    profile.cleanup()
    return seconds[0], seconds[1]


def measure(folder: Path, steps: int, rounds: int) -> dict:
    from playwright.sync_api import sync_playwright

    httpd = server(folder, 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            requests, errors = [], []
            ready_cold_s, ready_warm_s = ready(pw, origin, requests)
            tab = browser.new_page(viewport={"width": 1280, "height": 1000})
            tab.route("**/*", lambda r: r.continue_() if r.request.url.startswith(origin + "/")
                      else (requests.append(r.request.url), r.abort()))
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(origin + "/index.html")
            tab.wait_for_selector('.kstep-live[data-loaded="yes"]', timeout=300_000)
            t0 = time.perf_counter()
            tab.click('.kstep-live button[data-do="start"]')
            tab.wait_for_selector('.kstep-live[data-state="live"][data-step="0"]', timeout=300_000)
            boot_s = time.perf_counter() - t0
            clicks, profiles, found = [], [], True
            for r in range(rounds):
                if r:
                    tab.click('.kstep-live button[data-do="reset"]')
                    tab.wait_for_selector('.kstep-live[data-state="live"][data-step="0"]', timeout=60_000)
                timed = tab.evaluate(CLICKS, UAF_SCHEDULE)
                clicks += timed["clicks"]
                profiles += timed["parts"]
                found = found and tab.locator('.kstep-live [data-found="no-use-after-free"]').count() == 1
            parts = {what: [p[f"{what}_ms"] for p in profiles] for what in ("python", "player", "panel")}
            parts["paint"] = [c - sum(p[f"{what}_ms"] for what in ("python", "player", "panel"))
                              for c, p in zip(clicks, profiles)]
            runs = json.loads(tab.evaluate(
                "async ([code, steps, seed]) => { const py = await kstep_live_boot(); py.runPython(code);"
                " return py.globals.get('kstep_bench')(steps, seed); }", [STEPS, steps, SEED]))
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {"ready_cold_s": round(ready_cold_s, 2), "ready_warm_s": round(ready_warm_s, 2),
            "boot_s": round(boot_s, 2), "click_ms": summary(clicks),
            "click_parts_ms": {what: summary(v) for what, v in parts.items()}, "reached_use_after_free": found,
            "runs": runs, "page_errors": errors, "network_requests": len(requests)}


def native(steps: int) -> list:
    space: dict = {}
    exec(STEPS, space)
    return json.loads(space["kstep_bench"](steps, SEED))


def run(out_dir, say=print, steps: int = 150, rounds: int = ROUNDS) -> dict:
    out_dir = Path(out_dir)
    folder = out_dir / "interactive"
    folder.mkdir(parents=True, exist_ok=True)
    say("bench interactive: writing the free-immediately page and its static folder ...")
    page(folder)
    say("bench interactive: Chromium: starting Pyodide, clicking the schedule, stepping every bundled scenario ...")
    load = os.getloadavg()[0]
    measured = measure(folder, steps, rounds)
    cpython = {(r["mechanism"], r["scenario"], r["memory_model"]): r for r in native(steps)}
    scenarios = []
    for r in measured["runs"]:
        key = (r["mechanism"], r["scenario"], r["memory_model"])
        scenarios.append({"mechanism": key[0], "scenario": key[1], "memory_model": key[2], "steps": len(r["step_ms"]),
                          "start_ms": round(r["start_ms"], 1), "pyodide_step_ms": summary(r["step_ms"]),
                          "cpython_step_ms": summary(cpython[key]["step_ms"])})
    worst = max(s["pyodide_step_ms"]["p95"] or 0 for s in scenarios)
    result = {
        "benchmark": "interactive",
        "load_average_1min_at_start": round(load, 2),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "target_ms": TARGET_MS,
        "browser": "Debian chromium, headless",
        "ready_cold_s": measured["ready_cold_s"],
        "ready_warm_s": measured["ready_warm_s"],
        "boot_s": measured["boot_s"],
        "click_ms": measured["click_ms"],
        "click_parts_ms": measured["click_parts_ms"],
        "reached_use_after_free": measured["reached_use_after_free"],
        "worst_scenario_p95_ms": worst,
        "meets_target": measured["click_ms"]["p95"] <= TARGET_MS and worst <= TARGET_MS,
        "scenarios": scenarios,
        "page_errors": measured["page_errors"],
        "network_requests": measured["network_requests"],
    }
    (out_dir / "interactive.json").write_text(json.dumps(result, indent=1) + "\n")
    medians = ", ".join(f"{what} {s['median']}" for what, s in result["click_parts_ms"].items())
    say(f"bench interactive: Python and kstep loaded {result['ready_cold_s']} s after the page opened "
        f"(cold), {result['ready_warm_s']} s on the next page (warm); a run starts {result['boot_s']} s after "
        f"the click; a click on the page answers in "
        f"{result['click_ms']['median']} ms (p95 {result['click_ms']['p95']} over {result['click_ms']['count']} clicks, "
        f"load {result['load_average_1min_at_start']}; medians: {medians}); "
        f"the slowest scenario's Python step "
        f"p95 {worst} ms in the browser ({'meets' if result['meets_target'] else 'misses'} {TARGET_MS:.0f} ms)")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=150, help="steps per scenario at most (default 150)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"),
                        help="folder for interactive.json and the page (default bench/results)")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"times the schedule to the use-after-free is clicked through (default {ROUNDS})")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        print("bench interactive: --steps and --rounds must be at least 1", file=sys.stderr)
        return 2
    result = run(args.out, steps=args.steps, rounds=args.rounds)
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
