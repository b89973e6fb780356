// A litmus page's interactive mode under the LKMM, in Pyodide under node, as a served page runs it:
// kstep.zip (views/live.py's, with its copy of the tree's LKMM files) unpacked where interactive.js unpacks
// it; per test, a LitmusSession started (choosing the page's execution: the LKMM's verdict) with the page's
// JSON, then every move to the end (a step and the page's JSON, as interactive.js asks for them), then a
// session of each other candidate execution the page offers, started as when the student picks it.
// Each is timed in wall seconds (what the student waits) and in node's CPU seconds (process.cpuUsage: what
// the operation costs, whatever else the machine runs). bench/litmus.py runs this with node; it prints one
// JSON line.
//
//   node bench/litmus_live_pyodide.mjs PYODIDE_MJS KSTEP_ZIP TEST...
//
// PYODIDE_MJS is node_modules/pyodide/pyodide.mjs, KSTEP_ZIP the zip a site's _static/kstep/ holds, each
// TEST a litmus file.
import fs from "node:fs";
import path from "node:path";

const [pyodideModule, zip, ...tests] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideModule);

const started = performance.now();
const py = await loadPyodide();
py.unpackArchive(new Uint8Array(fs.readFileSync(zip)), "zip", {extractDir: "/kstep"});
py.runPython("import sys; sys.path.insert(0, '/kstep')\nfrom kstep.views.litmus_live import LitmusSession");
const loaded = performance.now();
py.globals.set("tests", py.toPy(tests.map((t) => [path.basename(t, ".litmus"), fs.readFileSync(t, "utf8")])));

const rows = JSON.parse(py.runPython(`
import json, time
from js import process
from kstep.memory import kernel_tree
from kstep.views.litmus_live import candidates


def clocks():
    used = process.cpuUsage()
    return time.perf_counter(), (used.user + used.system) / 1e6


def since(start):
    wall, cpu = clocks()
    return wall - start[0], cpu - start[1]


rows = []
for name, text in tests:
    start = clocks()
    session = LitmusSession(text, name, "lkmm")
    session.page_json()
    opened = since(start)
    moves = []
    while session.view()["choices"]:
        start = clocks()
        session.step(session.view()["choices"][0]["action"])
        session.page_json()
        moves.append(since(start))
    violation = session.view()["violation"]
    picks = [(0, 0)]  # the other candidate executions the page offers, each started as the student picks it
    for run in candidates(text, name, "lkmm", sorted(session.sources)):
        start = clocks()
        LitmusSession(text, name, run).page_json()
        picks.append(since(start))
    rows.append({"test": name, "start_s": round(opened[0], 4), "moves": len(moves),
                 "max_move_s": round(max(m[0] for m in moves), 4), "last_move_s": round(moves[-1][0], 4),
                 "verdict": "allowed" if violation is None else violation["invariant"],
                 "candidates": len(picks) - 1, "max_pick_start_s": round(max(p[0] for p in picks), 4),
                 "cpu_s": {"start": round(opened[1], 4), "max_move": round(max(m[1] for m in moves), 4),
                           "max_pick_start": round(max(p[1] for p in picks), 4)}})
json.dumps({"lkmm_files": str(kernel_tree.kernel_root()), "rows": rows})
`));
console.log(JSON.stringify({load_s: +((loaded - started) / 1000).toFixed(2), ...rows}));
