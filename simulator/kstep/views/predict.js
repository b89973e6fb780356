// Predict mode's one rule for comparing a prediction with the answer, shared by the player (player.js
// is appended to this file) and a notebook's question block (notebook.py).
//
// Does what the student typed equal the answer?  As questions.matches compares an answers.toml: a
// number in decimal or hex, either view of a 64-bit word; true/false; a word; thread names in any order
// and any case (POWER is power).
function matches(want, given) {
  const g = given.trim();
  if (want.type === "threads") {
    const names = g.toLowerCase() === "none" ? [] : g.split(/[\s,]+/).filter((s) => s !== "");
    const lower = (list) => list.map((n) => n.toLowerCase()).sort().join(",");
    return lower(names) === lower(want.value);
  }
  if (want.type === "int") {
    if (!/^-?(0x[0-9a-f]+|[0-9]+)$/i.test(g)) {
      return false;
    }
    const v = g.startsWith("-") ? -BigInt(g.slice(1)) : BigInt(g);
    const w = BigInt(want.value);
    return v === w || BigInt.asUintN(64, v) === BigInt.asUintN(64, w);
  }
  if (want.type === "bool") {
    return g.toLowerCase() === want.value;
  }
  return g === want.value;
}
