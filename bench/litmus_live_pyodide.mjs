// A litmus page's interactive mode under the LKMM, in Pyodide under node, as a served page runs it:
// kstep.zip (views/live.py's, with its copy of the tree's LKMM files) unpacked where interactive.js unpacks
// it; per test, a LitmusSession started (choosing the page's execution: the LKMM's verdict) with the page's
// JSON, then every move to the end (a step and the page's JSON, as interactive.js asks for them), then a
// session of each other candidate execution the page offers, started as when the student picks it.
// bench/litmus.py runs this with node; it prints one JSON line.
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
from kstep.memory import kernel_tree
from kstep.views.litmus_live import candidates

rows = []
for name, text in tests:
    start = time.perf_counter()
    session = LitmusSession(text, name, "lkmm")
    session.page_json()
    opened = time.perf_counter() - start
    moves = []
    while session.view()["choices"]:
        start = time.perf_counter()
        session.step(session.view()["choices"][0]["action"])
        session.page_json()
        moves.append(time.perf_counter() - start)
    violation = session.view()["violation"]
    picks = []  # the other candidate executions the page offers, each started as the student picks it
    for run in candidates(text, name, "lkmm", sorted(session.sources)):
        start = time.perf_counter()
        LitmusSession(text, name, run).page_json()
        picks.append(time.perf_counter() - start)
    rows.append({"test": name, "start_s": round(opened, 4), "moves": len(moves), "max_move_s": round(max(moves), 4),
                 "last_move_s": round(moves[-1], 4),
                 "verdict": "allowed" if violation is None else violation["invariant"],
                 "candidates": len(picks), "max_pick_start_s": round(max(picks, default=0), 4)})
json.dumps({"lkmm_files": str(kernel_tree.kernel_root()), "rows": rows})
`));
console.log(JSON.stringify({load_s: +((loaded - started) / 1000).toFixed(2), ...rows}));
