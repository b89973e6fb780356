// The kstep player: the one piece of JavaScript behind every kstep animation.
//
// Bokeh runs this file as the body of a single CustomJS callback (argument `kstep`, the spec
// built by player.py) attached to every control.  Nothing here knows about any mechanism: a view
// registers per-frame sources whose rows for every frame sit in a store (see columns.py; a
// timeline's windowed sources are per-frame sources too, one block per page), static sources drawn
// once, cursors that mark the current step, curtains that cover the steps still to come, and
// timeline ranges that page along with the cursor.
//
// Showing frame k means, for each per-frame source, slicing store[col][start[k]:stop[k]] and
// giving the display source a *new* data object (BokehJS redraws on assignment, not on in-place
// mutation).  Frames that share a block with the frame on screen cost nothing.

const P = kstep;
const W = P.widgets;
const n = P.n;

// Per-player state lives on the slider model, which exists once per player on a page.
const st = W.slider.__kstep ||
  (W.slider.__kstep = {frame: 0, timer: null, shown: P.sources.map(() => -1), code: -1, code_html: {},
                       offscreen: new Set(), controls_at: -Infinity, frame_at: null, slider_turn: false, answers: {},
                       asking: null});

const ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"};
function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ESC[c]);
}

const BASE = [Int8Array, Uint8Array, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array];

// A plain typed-array view of rows a..b: BokehJS stores columns as NDArray subclasses whose
// subarray() would try to rebuild an NDArray, so make a view of the same buffer instead.
function rows(arr, a, b) {
  if (!ArrayBuffer.isView(arr)) {
    return arr.slice(a, b);
  }
  for (const C of BASE) {
    if (arr instanceof C) {
      return new C(arr.buffer, arr.byteOffset + a * C.BYTES_PER_ELEMENT, b - a);
    }
  }
  return Array.prototype.slice.call(arr, a, b);
}

function show_source(i, k) {
  const src = P.sources[i];
  const a = P.frames.data[src.name + ".start"][k];
  const b = P.frames.data[src.name + ".stop"][k];
  const block = a * 4294967296 + b;  // (start, stop) identifies the block
  if (st.shown[i] === block) {
    return;
  }
  st.shown[i] = block;
  const store = src.store.data;
  const data = {};
  for (const [col, kind] of src.cols) {
    const part = rows(store[col], a, b);
    if (kind === "str") {
      const out = new Array(part.length);
      for (let j = 0; j < part.length; j++) {
        out[j] = P.strings[part[j]];
      }
      data[col] = out;
    } else {
      data[col] = part;
    }
  }
  src.source.data = data;
}

function status_html(k) {
  if (k === 0) {
    return P.status0;
  }
  const a = P.frames.data.actor[k];
  const l = P.frames.data.label[k];
  return '<div class="kstep-status"><span class="kstep-stepno">step ' + k + " / " + n + "</span> " +
    '<b class="kstep-actor">' + esc(P.actors[a]) + "</b> &rarr; " +
    '<code class="kstep-label">' + esc(P.labels[l]) + "</code> " + context_html(k) +
    (P.code[l]  // a step outside the kernel (a lock's user) has no source to link to
      ? '<a class="kstep-where" target="_blank" rel="noopener" href="' + esc(P.code[l].url) + '">' +
        esc(P.where[l]) + "</a>"
      : '<span class="kstep-where">' + esc(P.where[l]) + "</span>") +
    '<div class="kstep-what">' + esc(P.what[l]) + "</div>" + stack_html(k) + "</div>";
}

// Context of step k: what it acts on (two down_write steps on different locks), and the functions it
// runs in as one line, outermost first (player.py's context() computes both; empty when unknown).
function context_html(k) {
  const on = frame_text("on", k);
  return on ? '<span class="kstep-on">on ' + esc(on) + "</span> " : "";
}

// A per-frame text column of the recorded run; a student's own run (interactive.js) has none.
function frame_text(col, k) {
  const c = P.frames.data[col];
  return c === undefined ? "" : P.strings[c[k]];
}

function stack_html(k) {
  const stack = frame_text("stack", k);
  return stack ? '<div class="kstep-stack">' + esc(stack) + "</div>" : "";
}

// The code pane: the excerpt of the function behind label l (Debian's linux-source-6.12), with the
// step's lines marked; rebuilt only when the label changes, and not while playing: redrawing a
// long excerpt costs more than a whole frame, and nobody reads code at 60 steps/s.  Pausing (or
// reaching the end) shows the code of the step the player stopped on.
function code_html(k) {
  if (k === 0) {
    return P.code0;
  }
  const l = P.frames.data.label[k];
  if (st.code_html[l] === undefined) {
    st.code_html[l] = excerpt_html(l);
  }
  return st.code_html[l];
}

// The pane's HTML for label l, built once per label: an excerpt runs to hundreds of lines (it scrolls, so
// the keyboard can reach it: tabindex).
function excerpt_html(l) {
  const c = P.code[l];
  if (c === null) {  // a step outside the kernel: there is no kernel code to show
    return '<div class="kstep-code"><div class="kstep-code-where">' + esc(P.where[l]) +
      ": this step is not kernel code</div></div>";
  }
  const ex = P.excerpts[c.excerpt];
  const marked = new Set(c.marked);
  const rows = ex.lines.map((line, i) =>
    '<span class="kstep-line' + (marked.has(i) ? " kstep-marked" : "") + '"><span class="kstep-lineno">' +
    (ex.first + i) + "</span>" + esc(line) + "</span>");
  const note = c.marked.length ? "" : ' <span class="kstep-whole">(the whole function is this one step)</span>';
  return '<div class="kstep-code"><div class="kstep-code-where">' + esc(ex.where) + " in Linux " + esc(P.release) +
    note + '</div><pre class="kstep-source" tabindex="0">' + rows.join("") + "</pre></div>";
}

function show_code(k) {
  const key = k === 0 ? -1 : P.frames.data.label[k];
  if (st.code === key) {
    return;
  }
  st.code = key;
  W.code.html = code_html(k);
  const c = k === 0 ? null : P.code[key];
  if (c !== null && c.marked.length) {
    // Scroll the first marked line into the middle of the pane once BokehJS has drawn the new HTML.
    requestAnimationFrame(() => {
      const view = Bokeh.index.query_one((v) => v.model === W.code);
      const pre = view === null ? null : view.el.querySelector("pre.kstep-source");
      const line = pre === null ? null : pre.querySelector(".kstep-marked");
      if (line !== null) {
        pre.scrollTop = line.offsetTop - pre.offsetTop - pre.clientHeight / 3;
      }
    });
  }
}

// Frame k on the plots: every plot's sources and cursors, or (while playing) only those of the plots on
// screen; a plot scrolled out of view catches up when it comes back or when playback stops.
function show_panels(k, all) {
  for (let i = 0; i < P.sources.length; i++) {
    if (all || on_screen(P.sources[i].plot)) {
      show_source(i, k);
    }
  }
  for (const c of P.cursors) {
    if (!all && !on_screen(c.plot)) {
      continue;
    }
    if (c.kind === "box") {
      c.model.setv({left: k, right: k + 1});
    } else if (c.kind === "curtain") {
      c.model.left = k + 1;
    } else if (c.kind === "at") {
      c.model.setv({left: c.left[k], right: c.right[k]});
    } else {
      c.model.location = k + 0.5;
    }
  }
}

function on_screen(plot) {
  return plot == null || !st.offscreen.has(plot.id);
}

// Which plots are out of view, kept by an IntersectionObserver (none without one, or before the page's
// views exist: then every plot counts as on screen).
function watch_plots() {
  if (typeof IntersectionObserver === "undefined") {
    return;
  }
  const seen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) {
        st.offscreen.delete(e.target.kstep_plot);
      } else {
        st.offscreen.add(e.target.kstep_plot);
      }
    }
    if (st.timer !== null) {
      show_panels(st.frame, false);  // what came into view shows the frame playing now
    }
  });
  const plots = new Set([...P.sources, ...P.cursors].map((s) => s.plot).filter((p) => p != null));
  for (const plot of plots) {
    const view = Bokeh.index.query_one((v) => v.model === plot);
    if (view !== null) {
      view.el.kstep_plot = plot.id;
      seen.observe(view.el);
    }
  }
}

// The page of a timeline that frame k is on: Player.page() in player.py computes the same, and the
// windowed sources hold exactly the rows of that page.
function page(f, k) {
  const w = f.window, total = f.total;
  if (total <= w) {
    return [0, total];
  }
  const stride = Math.floor(w / 2);
  const start = Math.min(Math.max(0, Math.floor(k / stride) * stride - Math.floor(w / 4)), total - w);
  return [start, start + w];
}

function follow(k) {
  for (const f of P.follow) {
    const [start, end] = page(f, k);
    if (f.range.start !== start || f.range.end !== end) {
      f.range.setv({start: start, end: end});
    }
  }
}

// For a screen reader: the step in one sentence, said once by a live region each time the player stops on
// a step, and the current state as a table (the status line and every box of the boards, their "head"
// and "body" columns) to read on demand.
function said_text(k) {
  if (k === 0) {
    return "step 0 of " + n + ": the initial state";
  }
  const l = P.frames.data.label[k];
  const on = frame_text("on", k);
  return "step " + k + " of " + n + ": " + P.actors[P.frames.data.actor[k]] + " took " + P.labels[l] +
    (on ? " on " + on : "") + ". " + P.what[l];
}

function state_html(k) {
  const rows = [];
  for (const src of P.sources) {
    const d = src.source.data;
    if (d.head === undefined || d.body === undefined) {
      continue;
    }
    for (let j = 0; j < d.head.length; j++) {
      rows.push("<tr><th scope=\"row\">" + esc(d.head[j]) + "</th><td>" +
        esc(String(d.body[j]).split("\n").join("; ")) + "</td></tr>");
    }
  }
  return '<table class="kstep-state"><caption>' + esc(said_text(k)) + "</caption>" + rows.join("") + "</table>";
}

// After the frame is painted, once per burst of steps: a jump or a step must not wait for the text, and a
// screen reader hears only the step the player stopped on.
function show_state() {
  if (st.state_due) {
    return;
  }
  st.state_due = true;
  requestAnimationFrame(() => {
    st.state_due = false;
    W.state.html = state_html(st.frame);
    const said = esc(said_text(st.frame));
    if (W.said.html !== said) {
      W.said.html = said;
    }
  });
}

// The slider's handle is the control a screen reader lands on: it gets a name (Bokeh's title is a
// separate label), at setup and again after a student's run changed the slider's end (BokehJS then draws
// the slider anew).
function name_slider() {
  const view = Bokeh.index.query_one((v) => v.model === W.slider);
  const handle = view === null ? null : view.shadow_el.querySelector(".noUi-handle");
  if (handle !== null) {
    handle.setAttribute("aria-label", "step of the run");
  }
}

function show(k) {
  const t0 = performance.now();
  k = Math.max(0, Math.min(n, Math.round(k)));
  const q = unanswered(k);
  if (q !== null) {  // predict mode: the state the question is about stays hidden until it is answered
    k = q.step - 1;
    if (st.timer !== null) {
      pause();
    }
    ask(q);
  }
  st.frame = k;
  show_panels(k, st.timer === null);
  follow(k);
  fit_ranges(k);
  show_controls(k, st.timer === null ? null : t0);
  if (st.timer === null) {
    show_code(k);
    show_state();
  }
  if (W.banner.visible !== (k === n)) {
    W.banner.visible = k === n;  // setting it at all re-lays out the page: only when it changes
  }
  const profile = globalThis.kstep_profile;  // set by the benchmark to time each update
  if (profile) {
    profile.push(performance.now() - t0);
  }
}

// The status line and the slider's handle show frame k; while playing (``now`` given) at most every
// CONTROLS_MS: each rewrite of them makes the browser recompute the page's styles before it can paint
// the plots, and nobody reads a status that changes 60 times a second.  Together they cost a frame 1.4 ms
// of its 2 ms budget (the status 0.5 ms, the slider 0.9 ms, on a 50,000-step page), so at speeds that show
// frames less than CONTROLS_MS apart they take turns; slower, both follow every frame.  Pausing shows the
// exact frame.
const CONTROLS_MS = 100;

function show_controls(k, now) {
  const previous = st.frame_at;
  st.frame_at = now;
  if (now !== null && now - st.controls_at < CONTROLS_MS) {
    return;
  }
  st.controls_at = now === null ? -Infinity : now;
  const both = now === null || previous === null || now - previous >= CONTROLS_MS;
  st.slider_turn = !both && !st.slider_turn;
  if (both || !st.slider_turn) {
    W.status.html = status_html(k);
  }
  if ((both || st.slider_turn) && W.slider.value !== k) {
    W.slider.value = k;  // its change callback finds st.frame === k and does nothing
  }
}

function steps_per_second() {
  const v = parseFloat(W.speed.value);
  return v > 0 ? v : 1;
}

// Playback runs on animation frames, not setInterval: the frame shown is the one due at this time
// at the chosen speed, so each paint shows a new frame at 60 steps/s and fast speeds skip frames
// instead of queueing updates the browser cannot paint.
function start_timer() {
  stop_timer();
  if (st.frame >= n) {
    show(0);
  }
  const sps = steps_per_second();
  const first = st.frame;
  const t0 = performance.now();
  const tick = (now) => {
    if (st.timer === null) {
      return;
    }
    const k = Math.min(n, first + Math.floor(Math.max(0, now - t0) * sps / 1000 + 0.5));
    if (k !== st.frame) {
      show(k);
      if (st.timer === null) {  // stopped there to ask a question
        return;
      }
    }
    if (k >= n) {
      pause();
      return;
    }
    st.timer = requestAnimationFrame(tick);
  };
  st.timer = requestAnimationFrame(tick);
  st.code = null;
  W.code.html = P.code_playing;
}

function stop_timer() {
  if (st.timer !== null) {
    cancelAnimationFrame(st.timer);
    st.timer = null;
    show_panels(st.frame, true);
    show_controls(st.frame, null);
    show_code(st.frame);
    show_state();
  }
}

function pause() {
  stop_timer();
  W.toggle.active = false;
}

// Predict mode (predict.py): before the step into a question's state the player stops and asks; the
// state is shown once the student has answered (Enter in the text field) or pressed "Show me".
function unanswered(k) {
  if (!W.predicting.active) {
    return null;
  }
  for (const q of P.predictions) {
    if (q.step <= k && st.answers[q.id] === undefined) {
      return q;
    }
  }
  return null;
}

function ask(q) {
  if (st.asking === q) {
    return;
  }
  st.asking = q;
  W.ask.text = '<div class="kstep-ask"><b>Predict:</b> ' + esc(q.ask) + ' <span class="kstep-hint">(' +
    esc(q.hint) + ")</span></div>";
  W.guess.value = "";
  W.guess.disabled = false;
  W.reveal.disabled = false;
}

function answered(given) {
  const q = st.asking;
  const right = given !== null && matches(q.want, given);
  st.answers[q.id] = right;
  st.asking = null;
  W.ask.text = '<div class="kstep-ask ' + (right ? "kstep-right" : "kstep-wrong") + '">' +
    (right ? "&#10003; right: " : given === null ? "The answer: " : "&#10007; not quite; the answer: ") +
    "<b>" + esc(q.text) + "</b> &mdash; " + esc(q.ask) + "</div>";
  W.guess.disabled = true;
  W.reveal.disabled = true;
  const asked = Object.keys(st.answers).length;
  const right_so_far = Object.values(st.answers).filter((r) => r).length;
  W.score.text = '<div class="kstep-score">predictions: ' + right_so_far + " right of " + asked + " (" +
    P.predictions.length + " in this run)</div>";
  show(q.step);
}

// The keyboard: Right steps, Left goes back, Home resets, Space plays and pauses.  Keys go to the
// player the focus is in, or with the focus nowhere (the page itself) to the page's first player; never
// to a field being typed in, the slider (its own keys move it) or a button (Space clicks it).
function on_key(e) {
  const keys = {ArrowRight: "step", ArrowLeft: "back", Home: "reset", " ": "play"};
  const what = keys[e.key];
  if (what === undefined || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) {
    return;
  }
  const path = e.composedPath();
  const view = Bokeh.index.query_one((v) => v.model === P.root);
  const inside = view !== null && path.includes(view.el);
  const nowhere = path[0] === document.body || path[0] === document.documentElement;
  if (!inside && !(nowhere && globalThis.kstep_players[0] === P.root)) {
    return;
  }
  if (path.some((el) => el.tagName !== undefined &&
      (/^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(el.tagName) || el.getAttribute("role") === "slider"))) {
    return;
  }
  e.preventDefault();
  if (what === "play") {
    W.toggle.active = !W.toggle.active;  // its change callback starts or stops the timer
  } else {
    pause();
    show(what === "step" ? st.frame + 1 : what === "back" ? st.frame - 1 : 0);
  }
}

// BokehJS sets the text of each renderer's position stylesheet on every paint of its plot, almost always
// to the text it already has; each set makes the browser drop the page's styles, and the next CSS value
// BokehJS reads while painting (a fill colour, an axis's text colour) recomputes them: some 25 times in
// one step's paint, a third of it.  Once per page, a stylesheet's text is set only when it changes.
function quiet_stylesheets() {
  const sheet = Bokeh.require("core/dom").InlineStyleSheet.prototype;
  if (sheet.kstep_quiet) {
    return;
  }
  const update = sheet._update;
  sheet._update = function (css) {
    if (this.el.textContent !== css) {
      update.call(this, css);
    }
  };
  sheet.kstep_quiet = true;
}

// The plots at a scale.  Narrower than a panel is legible at (player.py's layout gives each panel that
// width), the panel is drawn as a picture of it at that width would be, smaller as a whole: its type,
// marks, offsets and height shrink with its width, so it keeps its proportions and nothing scrolls
// sideways.  In projector mode the board's grow by up to P.projector.scale, as far as its width keeps them
// as legible as that.  BokehJS lays a plot out by its element's box on the page, so a CSS transform of the
// element would have it redraw at the shrunk size: the plots' own sizes are scaled instead.
const LENGTHS = ["text_font_size", "major_label_text_font_size", "axis_label_text_font_size", "x_offset",
                 "y_offset", "size", "line_width"];

function scaled(v, s) {
  if (typeof v === "number") {
    return v * s;
  }
  if (typeof v === "string") {  // a font size: "13pt"
    const m = /^([0-9.]+)([a-z]+)$/.exec(v);
    return m === null ? v : (parseFloat(m[1]) * s).toFixed(2) + m[2];
  }
  if (v !== null && typeof v === "object" && "value" in v) {
    return {value: scaled(v.value, s)};
  }
  return v;  // a field (a box's outline width per row) stays as its rows say
}

// A plot's sizes as the page was built with them, read once, before the first scaling.
function design(plot) {
  let d = st.design.get(plot.id);
  if (d === undefined) {
    const parts = new Set([plot.title, ...plot.above, ...plot.below, ...plot.left, ...plot.right,
                           ...plot.renderers.map((r) => r.glyph)].filter((m) => m != null));
    d = {height: plot.height, min_width: plot.min_width,
         parts: [...parts].map((m) => [m, LENGTHS.filter((name) => name in m.properties).map((name) => [name, m[name]])])};
    st.design.set(plot.id, d);
  }
  return d;
}

function rescale() {
  P.panels.forEach((panel, i) => {
    const view = Bokeh.index.query_one((v) => v.model === panel.panel);
    const width = view === null ? 0 : view.el.clientWidth;
    if (width === 0 || !(panel.legible > 0)) {  // not shown (projector mode hides it), or nothing to scale
      return;
    }
    const most = W.projector.active && i === 0 ? P.projector.scale : 1;
    const s = Math.floor(Math.min(most, width / panel.legible) * 100) / 100;
    if (s === st.scales[i]) {
      return;
    }
    st.scales[i] = s;
    for (const plot of panel.plots) {
      const d = design(plot);
      for (const [m, lengths] of d.parts) {
        m.setv(Object.fromEntries(lengths.map(([name, v]) => [name, scaled(v, s)])));
      }
      plot.setv({height: Math.round(d.height * s), min_width: Math.round(d.min_width * Math.min(s, 1))});
    }
  });
}

function watch_widths() {
  st.design = new Map();
  st.scales = P.panels.map(() => 1);
  if (typeof ResizeObserver === "undefined") {
    return;
  }
  const seen = new ResizeObserver(() => rescale());
  for (const panel of P.panels) {
    const view = Bokeh.index.query_one((v) => v.model === panel.panel);
    if (view !== null) {
      seen.observe(view.el);
    }
  }
}

// Once per player, at its first callback (the page's layout gives one): the keys and the state table.
function setup() {
  if (st.ready) {
    return;
  }
  st.ready = true;
  quiet_stylesheets();
  (globalThis.kstep_players = globalThis.kstep_players || []).push(P.root);
  document.addEventListener("keydown", on_key);
  watch_plots();
  watch_widths();
  name_slider();
  show_state();
}

setup();

// Projector mode (player.py's layout names its parts): large type in the status and code panes, and the
// rest hidden but the controls, the board and the end banner; turned off, each part is shown as it was.
function projector(on) {
  if (on) {
    st.before_projector = P.projector.hide.map((m) => m.visible);
    for (const m of P.projector.hide) {
      m.visible = false;
    }
  } else if (st.before_projector !== undefined) {
    P.projector.hide.forEach((m, i) => { m.visible = st.before_projector[i]; });
  }
  for (const m of P.projector.large) {
    m.css_classes = on ? ["kstep-projector"] : [];
  }
  rescale();
}

// Interactive mode (interactive.js) puts the columns of the student's own run in place of the
// recorded one's (frames, stores, strings, n) and calls the player with {kstep_live: k, fresh}.  A
// session's stores and string table only grow, so a block on screen still holds the same rows after
// a step of the same run and is not drawn again; only a fresh run (the first, another variant)
// makes the player forget what is on screen and the code it built under the old labels' texts.
function show_live(k, fresh) {
  pause();
  W.predicting.active = false;  // the questions are about the recorded run, not the student's own
  if (fresh) {
    st.shown.fill(-1);
    st.code = -1;
    st.code_html = {};
  }
  if (W.slider.end !== Math.max(n, 1) || W.slider.disabled !== (n === 0)) {
    W.slider.setv({end: Math.max(n, 1), disabled: n === 0});
    requestAnimationFrame(name_slider);
  }
  st.tops = null;  // another run: its ranges are fitted again
  show(k);
}

// The ranges a view fits to the run (Player.fit in player.py, which computes the same for the recorded
// run): each ends at max(least, scale * top + add), top the largest value of a column over the frames
// of the run, or without a source the number of frames (the run's length, which the header states).  In
// predict mode, until every question is answered, top is over the frames up to the one shown: an axis
// that held the whole run would show how high a count goes before the student predicted it.
function fit_ranges(k) {
  const asking = W.predicting.active && P.predictions.some((q) => st.answers[q.id] === undefined);
  P.fits.forEach((f, i) => {
    const top = f.source === null ? n + 1 : tops(i)[asking ? k : n];
    const end = Math.max(f.least, f.scale * top + f.add);
    if (f.range.end !== end) {
      f.range.end = end;
    }
  });
}

// Fit i's top over frames 0..k, for every k: the largest value of its column in the blocks of those
// frames (each distinct block read once), computed once per run.
function tops(i) {
  if (st.tops == null) {
    st.tops = [];
  }
  if (st.tops[i] === undefined) {
    const f = P.fits[i];
    const values = P.sources.find((s) => s.name === f.source).store.data[f.column];
    const a = P.frames.data[f.source + ".start"], b = P.frames.data[f.source + ".stop"];
    const seen = new Set();
    const out = new Array(n + 1);
    let top = 0;
    for (let k = 0; k <= n; k++) {
      const block = a[k] * 4294967296 + b[k];
      if (!seen.has(block)) {
        seen.add(block);
        for (let j = a[k]; j < b[k]; j++) {
          top = Math.max(top, values[j]);
        }
      }
      out[k] = top;
    }
    st.tops[i] = out;
  }
  return st.tops[i];
}

const origin = cb_obj != null && cb_obj.origin != null ? cb_obj.origin : cb_obj;
if (origin === W.toggle) {
  if (W.toggle.active) {
    start_timer();
  } else {
    stop_timer();
  }
} else if (origin === W.step) {
  pause();
  show(st.frame + 1);
} else if (origin === W.back) {
  pause();
  show(st.frame - 1);
} else if (origin === W.reset) {
  pause();
  show(0);
} else if (origin === W.slider) {
  if (W.slider.value !== st.frame) {
    show(W.slider.value);
    if (st.timer !== null) {
      start_timer();  // dragged while playing: play on from where the slider was left
    }
  }
} else if (origin === W.guess) {
  if (st.asking !== null && W.guess.value.trim() !== "") {
    answered(W.guess.value);
  }
} else if (origin === W.predicting) {
  if (!W.predicting.active && st.asking !== null) {  // turned off while asking: move freely from here
    st.asking = null;
    W.ask.text = '<div class="kstep-ask">Predict mode is off: the player no longer stops to ask.</div>';
    W.guess.disabled = true;
    W.reveal.disabled = true;
  }
} else if (origin === W.reveal) {
  if (st.asking !== null) {
    answered(null);
  }
} else if (origin === W.projector) {
  projector(W.projector.active);
} else if (origin === W.speed) {
  if (st.timer !== null) {
    start_timer();
  }
} else if (origin !== null && typeof origin === "object" && "kstep_live" in origin) {
  show_live(origin.kstep_live, origin.fresh);
}
