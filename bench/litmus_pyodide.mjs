// The kernel's litmus tests under the LKMM in Pyodide, as a page's interactive mode runs them.
// bench/litmus.py runs this with node; it prints one JSON line.
//
//   node bench/litmus_pyodide.mjs PYODIDE_MJS SIMULATOR_DIR TREE TEST...
//
// PYODIDE_MJS is node_modules/pyodide/pyodide.mjs, SIMULATOR_DIR the folder holding the kstep
// package, TREE the unpacked linux-source tree and each TEST a path inside it. Only the standard
// library and kstep's memory package go into Pyodide: the models must need nothing else.
import fs from "node:fs";
import path from "node:path";

const [pyodideModule, simulator, tree, ...tests] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideModule);

const started = performance.now();
const py = await loadPyodide();
const loaded = performance.now();

function put(from, to) {
  py.FS.mkdirTree(path.dirname(to));
  py.FS.writeFile(to, fs.readFileSync(from));
}
for (const file of ["__init__.py", "errors.py", "engine/prng.py"]) put(path.join(simulator, "kstep", file), `/src/kstep/${file}`);
py.FS.writeFile("/src/kstep/engine/__init__.py", "");  // the engine package itself imports far more
for (const file of fs.readdirSync(path.join(simulator, "kstep", "memory"))) {
  if (/\.(py|toml)$/.test(file)) put(path.join(simulator, "kstep", "memory", file), `/src/kstep/memory/${file}`);
}
for (const file of ["linux-kernel.bell", "linux-kernel.cat", "lock.cat"]) {
  put(path.join(tree, "tools", "memory-model", file), `/tree/tools/memory-model/${file}`);
}
for (const test of tests) put(path.join(tree, test), `/tree/${test}`);
py.globals.set("tests", py.toPy(tests));

const cpu = process.cpuUsage();
const wall = performance.now();
const rows = JSON.parse(py.runPython(`
import json, sys, time, types
from pathlib import Path
sys.path.insert(0, "/src")
from kstep.memory import lkmm
from kstep.memory.litmus import parse
from kstep.memory.verdict import check

root = Path("/tree")
model = types.SimpleNamespace(NAME="lkmm", executions=lambda c, rf: lkmm.executions(c, rf, root))
rows = []
for name in tests:
    test = parse((root / name).read_text(), name)
    start = time.perf_counter()
    verdict = check(test, model)
    rows.append({"test": name, "wall_s": round(time.perf_counter() - start, 4), "result": verdict.result})
json.dumps({"python": sys.version.split()[0], "rows": rows})
`));
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({
  load_s: +((loaded - started) / 1000).toFixed(2),
  run_wall_s: +((performance.now() - wall) / 1000).toFixed(2),
  run_cpu_s: +((used.user + used.system) / 1e6).toFixed(2),
  ...rows,
}));
