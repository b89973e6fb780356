// Runs kstep's player.js outside a browser, the way BokehJS runs a CustomJS body, against stand-in
// widgets and sources, so a fast test can check what the player puts on screen frame by frame.
//
// stdin: {"code": player.js, "spec": {...},
//         "actions": ["step", "back", "reset", "slider:7", "play", "advance:500", "pause", ...]}
// stdout: one JSON object per action: {"frame": k, "playing": bool, "status": html, "code": html,
//         "banner": bool, "cursor": [l, r], "sources": {name: {col: [...]}}}
"use strict";

const fs = require("fs");
const input = JSON.parse(fs.readFileSync(0, "utf8"));

// BokehJS hands CustomJS its numeric columns as NDArray subclasses of the typed arrays.
const NDARRAY = {};
for (const [dtype, Base] of Object.entries({
  int8: Int8Array, int16: Int16Array, int32: Int32Array, float32: Float32Array, float64: Float64Array,
})) {
  NDARRAY[dtype] = class extends Base {
    constructor(...args) {
      super(...args);
      this.dtype = dtype;
      this.shape = [this.length];
    }
  };
}

function column(c) {
  return c.dtype === "str" ? c.values : NDARRAY[c.dtype].from(c.values);
}

function model(props) {
  const m = {...props, setv(values) { Object.assign(this, values); }};
  return m;
}

// BokehJS re-renders a button whose label is set, replacing the element a user is clicking:
// the player must never set it.
function fixed_label(m) {
  Object.defineProperty(m, "label", {set() { throw new Error("player.js set the toggle's label"); }});
  return m;
}

const spec = input.spec;
const W = {
  slider: model({value: 0}), toggle: fixed_label(model({active: false})),
  step: model({}), back: model({}), reset: model({}), speed: model({value: "2"}),
  status: model({html: spec.status0}), banner: model({visible: false}), code: model({html: spec.code0}),
  state: model({html: ""}), said: model({html: ""}), projector: model({active: false}), predicting: model({active: false}), ask: model({text: ""}),
  guess: model({value: "", disabled: true}), reveal: model({disabled: true}), score: model({text: ""}),
};
// Nothing is painted here: the code pane's scroll to its marked line finds no view to scroll, no key
// is ever pressed, and BokehJS's stylesheets (which the player makes set only changed text) are one class.
class InlineStyleSheet {
  _update(css) {
    this.el.textContent = css;
  }
}
globalThis.Bokeh = {index: {query_one: () => null}, require: (name) => name === "core/dom" ? {InlineStyleSheet} : null};
globalThis.document = {addEventListener: () => {}};
const frames = {data: {}};
for (const [col, c] of Object.entries(spec.frames)) {
  frames.data[col] = column(c);
}
const sources = spec.sources.map((s) => {
  const store = {data: {}};
  for (const [col, c] of Object.entries(s.store)) {
    store.data[col] = column(c);
  }
  return {name: s.name, cols: s.cols, store: store, source: model({data: {}})};
});
const cursor = model({left: 0, right: 1});
const range = model({start: 0, end: spec.window});
const kstep = {
  ...spec, widgets: W, frames: frames, sources: sources, root: null,
  cursors: [{model: cursor, kind: "box"}],
  follow: [{range: range, window: spec.window, total: spec.n + 1}],
  fits: [], panels: [],  // no axis fitted to the run, no plot to scale: nothing is laid out here
};

// Playback runs on animation frames: a clock the actions move ("advance:MS") and the frames
// requested so far, called when it moves.
let now = 0;
let next_frame = 1;
const requested = new Map();
Object.defineProperty(globalThis, "performance", {value: {now: () => now}, configurable: true});
globalThis.requestAnimationFrame = (cb) => {
  requested.set(next_frame, cb);
  return next_frame++;
};
globalThis.cancelAnimationFrame = (id) => requested.delete(id);

// As CustomJS._compile_function does: the body becomes a function of the args and cb_obj.
const run = new Function("kstep", "cb_obj", "cb_data", "cb_context", "'use strict';\n" + input.code);
const out = [];
for (const action of input.actions) {
  if (action.startsWith("slider:")) {
    W.slider.value = parseInt(action.slice(7), 10);
    run(kstep, W.slider, {}, {});
  } else if (action === "play" || action === "pause") {
    W.toggle.active = action === "play";  // a Toggle's change callback gets the toggle itself
    run(kstep, W.toggle, {}, {});
  } else if (action.startsWith("advance:")) {
    now += parseInt(action.slice(8), 10);
    const due = [...requested.values()];
    requested.clear();
    for (const cb of due) {
      cb(now);
    }
  } else {
    run(kstep, {origin: W[action]}, {}, {});
  }
  const shown = {};
  for (const s of sources) {
    shown[s.name] = {};
    for (const [col, values] of Object.entries(s.source.data)) {
      shown[s.name][col] = Array.from(values);
    }
  }
  out.push({frame: W.slider.value, playing: W.toggle.active, status: W.status.html, code: W.code.html,
            banner: W.banner.visible,
            cursor: [cursor.left, cursor.right], range: [range.start, range.end], sources: shown});
}
process.stdout.write(JSON.stringify(out));
