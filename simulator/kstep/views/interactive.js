// Interactive scheduling: the student picks which thread runs next, steps back and branches, and
// the page checks the invariants as they go.  The model is kstep's own Python (views/interactive.py)
// running in the browser in Pyodide, loaded from this site's static folder: nothing comes from the
// network but this site.  Pyodide cannot start from file://, so there the page keeps playing its
// recorded run and says how to serve it.
//
// Every player whose spec carries `live` (views/live.py marks it) gets a panel above it.  After each
// move, Python sends the view and what changed in the columns of the run so far (Session.page_json:
// its boards, charts, call stacks and objects; the page keeps the columns and patches them, as
// interactive.py's `patched` does) and the player shows them through its own code path: the columns go
// where the recorded run's were, and the player is called with {kstep_live: k} (player.js, show_live).
//
// Pyodide and kstep start loading as soon as the page opens, with a progress bar (bytes while downloading,
// then the stages of starting), so that a student who presses "Schedule it yourself" waits less, and sees
// for what.  The files come from this site through the browser's HTTP cache (kstep serve has it revalidate
// them), so the next page of the site does not download them again.  The panel follows the player's slider:
// the choices it offers are those of the step shown, and picking one there branches the run.  No error
// replaces the panel: it says what went wrong in one line.
//
// The panel's data-state attribute says where it is: file, ready (offered), busy, live (data-step: the step
// shown); data-loaded says how the loading goes: loading, yes or failed; data-error holds the last error.
(function () {
  "use strict";
  const SCRIPT = document.currentScript;
  const STATIC = new URL("..", SCRIPT.src).href;  // this file is STATIC/kstep/interactive.js
  const STYLE = `
.kstep-live { font: 12pt 'DejaVu Sans', Arial, sans-serif; border: 2px solid #0072B2; border-radius: 6px;
  padding: 8px 12px; margin: 8px 0; max-width: 1176px; }
.kstep-live button { font: inherit; margin: 2px 4px 2px 0; padding: 4px 10px; cursor: pointer; }
.kstep-live .kstep-live-choices button { border: 2px solid #009E73; background: #E8F6F0; }
.kstep-live .kstep-live-waiting { color: #555; }
.kstep-live .kstep-live-found { background: #FBE3D6; border: 2px solid #D55E00; padding: 6px 10px;
  font-weight: bold; }
.kstep-live .kstep-live-ok { background: #E8F6F0; padding: 6px 10px; }
.kstep-live code { font-family: 'DejaVu Sans Mono', monospace; }
.kstep-live-state th { text-align: left; padding-right: 1em; font-weight: normal; color: #555; }
.kstep-live-state code { font-size: 10pt; white-space: pre-wrap; }
.kstep-live .kstep-live-progress { display: flex; align-items: center; gap: 8px; margin: 4px 0; color: #333; }
.kstep-live .kstep-live-progress progress { width: 240px; height: 14px; }
.kstep-live .kstep-live-error { color: #A1320B; font-weight: bold; margin: 4px 0; }`;
  const ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"};
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ESC[c]);
  let pyodide = null;  // one interpreter for every player of the page
  // What the page downloads before Python starts, with its share of the progress bar: fetched here to count
  // the bytes; Pyodide's own requests for them then come from the browser's cache.
  const DOWNLOADS = ["pyodide/pyodide.asm.wasm", "pyodide/python_stdlib.zip", "pyodide/pyodide.asm.mjs",
                     "kstep/kstep.zip"];
  const DOWNLOAD_SHARE = 20;
  // The stages after the download, with the percentage reached when each begins: starting Python (compiling
  // 9.6 MB of WebAssembly, unpacking its standard library) takes most of the time (bench/interactive.py).
  const STAGES = {python: [DOWNLOAD_SHARE, "starting Python (compiling its WebAssembly)"],
                  kstep: [90, "importing kstep's model"], done: [100, "ready"]};
  // How the load goes, for every panel of the page; ``since``: when the page started it (ms).
  const loading = {pct: 0, text: "starting", state: "loading", panels: [], since: performance.now()};

  function get(obj, key) {
    return obj instanceof Map ? obj.get(key) : obj[key];
  }

  function players() {
    const out = [];
    for (const doc of Bokeh.documents) {
      for (const model of doc.all_models) {
        if (model.name === "kstep-player" && get(get(model.args, "kstep"), "live")) {
          out.push({doc: doc, cb: model, P: get(model.args, "kstep")});
        }
      }
    }
    return out;
  }

  function root_element(doc) {
    for (const root of doc.roots()) {
      const el = document.querySelector(`[data-root-id="${root.id}"]`);
      if (el !== null) {
        return el;
      }
    }
    return null;
  }

  function panel(ctx) {
    const el = document.createElement("section");
    el.className = "kstep-live";
    const where = root_element(ctx.doc);
    if (where !== null) {
      where.parentNode.insertBefore(el, where);
    } else {
      document.body.prepend(el);
    }
    return el;
  }

  // The columns `old` with a change from Session.page_json: per key, a nested change, or an array
  // [kept, items] (the first kept items stay, then items), [value], or [] (the key is gone).
  function patched(old, change) {
    const out = Object.assign({}, old);
    for (const [key, d] of Object.entries(change)) {
      if (!Array.isArray(d)) {
        const was = old[key];
        out[key] = patched(was !== null && typeof was === "object" && !Array.isArray(was) ? was : {}, d);
      } else if (d.length === 0) {
        delete out[key];
      } else if (d.length === 1) {
        out[key] = d[0];
      } else {
        out[key] = d[0] === 0 ? d[1] : old[key].slice(0, d[0]).concat(d[1]);
      }
    }
    return out;
  }

  // The view and the whole columns of the run so far, after a move of ctx.session.
  function page_of(ctx) {
    const page = JSON.parse(ctx.session.page_json());
    ctx.columns = page.columns = patched(ctx.columns, page.columns);
    return page;
  }

  function progressed(pct, text) {
    loading.pct = Math.max(loading.pct, Math.round(pct));
    loading.text = text;
    for (const ctx of loading.panels) {
      const bar = ctx.el.querySelector(".kstep-live-progress");
      if (bar !== null) {
        bar.outerHTML = progress_html();
      }
    }
  }

  function progress_html() {
    if (loading.state === "yes") {
      return "";
    }
    const what = loading.state === "failed" ? "could not load Python: " + esc(loading.text) :
      "Loading Python and kstep: " + loading.pct + "% &middot; " + esc(loading.text) + " &middot; " +
      Math.round((performance.now() - loading.since) / 1000) + " s";
    return '<div class="kstep-live-progress" role="progressbar" aria-label="Loading Python and kstep" ' +
      'aria-valuemin="0" aria-valuemax="100" aria-valuenow="' + loading.pct + '"><progress max="100" value="' +
      loading.pct + '"></progress><span>' + what + "</span></div>";
  }

  // The next stage begins: the panel says so, and the browser gets to show it before the stage's work
  // (unpacking and importing kstep take the page's thread).
  function stage(name) {
    progressed(STAGES[name][0], STAGES[name][1]);
    return new Promise((done) => setTimeout(done, 0));
  }

  // Every download at once, counting bytes as they come; kstep.zip's bytes are kept for unpacking.
  async function download() {
    const sizes = DOWNLOADS.map(() => 0), got = DOWNLOADS.map(() => 0);
    const mb = (n) => (n / 1e6).toFixed(1);
    const say = () => {
      const total = sizes.reduce((a, b) => a + b, 0), done = got.reduce((a, b) => a + b, 0);
      progressed(total ? DOWNLOAD_SHARE * done / total : 0,
                 "downloading Python and kstep (" + mb(done) + " of " + mb(total) + " MB)");
    };
    const bodies = await Promise.all(DOWNLOADS.map(async (name, i) => {
      const r = await fetch(STATIC + name);
      if (!r.ok) {
        throw new Error("could not load " + name + " (HTTP " + r.status + ")");
      }
      sizes[i] = Number(r.headers.get("Content-Length")) || 0;
      const parts = [];
      const reader = r.body.getReader();
      for (;;) {
        const {done, value} = await reader.read();
        if (done) {
          break;
        }
        got[i] += value.length;
        sizes[i] = Math.max(sizes[i], got[i]);
        if (name.startsWith("kstep/")) {
          parts.push(value);
        }
        say();
      }
      return parts;
    }));
    return new Blob(bodies[DOWNLOADS.indexOf("kstep/kstep.zip")]).arrayBuffer();
  }

  // Pyodide with kstep imported: one promise for the page, started when the page opens; a failed load
  // may be tried again (the Start button does).
  function boot() {
    if (pyodide === null) {
      loading.state = "loading";
      loading.pct = 0;
      loading.since = performance.now();
      // Starting Python takes seconds with the bar still: the seconds counted say the page is not stuck.
      const ticking = setInterval(() => progressed(loading.pct, loading.text), 1000);
      pyodide = (async () => {
        const zip = await download();
        await stage("python");
        await new Promise((done, fail) => {
          const s = document.createElement("script");
          s.src = STATIC + "pyodide/pyodide.js";
          s.onload = done;
          s.onerror = () => fail(new Error("could not load " + s.src));
          document.head.appendChild(s);
        });
        const py = await loadPyodide({indexURL: STATIC + "pyodide/"});
        await stage("kstep");
        py.unpackArchive(zip, "zip", {extractDir: "/kstep"});
        py.runPython("import sys; sys.path.insert(0, '/kstep')\nfrom kstep.views.interactive import Session\n" +
                     "from kstep.views.litmus_live import LitmusSession");
        loading.state = "yes";
        stage("done");
        return py;
      })();
      pyodide.catch((err) => {
        pyodide = null;
        loading.state = "failed";
        progressed(loading.pct, one_line(err));
      }).finally(() => {
        clearInterval(ticking);
        for (const ctx of loading.panels) {
          ctx.el.dataset.loaded = loading.state;
        }
      });
    }
    return pyodide;
  }

  // An error as one line: a Python exception's last line (kstep's own UserError without its name), else
  // the JavaScript error's message.
  function one_line(err) {
    const text = String(err !== null && typeof err === "object" && "message" in err ? err.message : err);
    const last = text.split("\n").map((l) => l.trim()).filter((l) => l !== "").pop() || "unknown error";
    return err !== null && typeof err === "object" && err.type === "UserError" ?
      last.replace(/^[\w.]*UserError: /, "") : last;
  }

  // The run so far into the player: its columns where the recorded run's were, then frame k.
  async function show_run(ctx, page) {
    const P = ctx.P, c = page.columns;
    const n = c.step.length - 1;
    const frames = {actor: c.actor, label: c.label, stack: c.stack, on: c.on};
    for (const src of P.sources) {
      const ex = c.board[src.name];
      frames[src.name + ".start"] = ex ? ex.start : new Array(n + 1).fill(0);
      frames[src.name + ".stop"] = ex ? ex.stop : new Array(n + 1).fill(0);
      if (ex && ctx.stores.get(src.name) !== ex.store) {  // patched() keeps a store that did not change
        ctx.stores.set(src.name, ex.store);
        src.store.data = ex.store;
      }
    }
    P.n = n;
    P.strings = c.strings;
    P.where = c.where;  // the same labels under every variant offered (live.py), but their texts may differ
    P.what = c.what;
    P.status0 = '<div class="kstep-status"><span class="kstep-stepno">step 0 / ' + n + "</span> initial state" +
      '<div class="kstep-what">' + (n ? "the start of your run" : "choose who takes the first step") + "</div></div>";
    P.frames.data = frames;
    for (const f of P.follow) {  // the timelines page along the student's run, as long as it is so far
      f.total = n + 1;
      f.range.bounds = [0, Math.max(n + 1, 1)];
    }
    // A Div whose text changes lays the whole page out again: set each only when its text changes.
    const banner = banner_html(page.view);
    if (ctx.W.banner.text !== banner) {
      ctx.W.banner.text = banner;
    }
    const live = ctx.P.live, v = variant_of(ctx);
    const memory = get(live, "memory_model");
    const header = '<div class="kstep-header"><b>' + esc(get(live, "title")) + "</b> &mdash; " +
      esc(get(live, "scenario")) + '<div class="kstep-sub">your run' + (memory === null || memory === undefined ?
      "" : " on x86-TSO, store buffers of " + esc(get(memory, "store_buffer"))) + " · " + (get(v, "broken") ?
      '<span class="kstep-broken">broken variant ' + esc(get(v, "name")) + ":</span> " + esc(get(v, "doc")) :
      esc(get(v, "name"))) + "</div></div>";
    const head = ctx.doc.get_model_by_name("kstep-header");
    if (head.text !== header) {
      head.text = header;
    }
    await ctx.cb.execute({kstep_live: page.view.step, fresh: ctx.fresh});
    ctx.fresh = false;
  }

  function banner_html(v) {
    if (v.violation !== null) {
      return '<div class="kstep-banner violation">✗ step ' + v.violation.step + ": " + esc(v.violation.title) +
        '<div class="kstep-message">' + esc(v.violation.message) + "</div></div>";
    }
    if (v.outcome === "finished") {
      const ended = Object.entries(v.ended).map(([a, how]) => esc(a) + " was " + esc(how));
      return '<div class="kstep-banner finished">✓ finished: ' + (ended.length ? ended.join("; ") +
        ", every other thread completed its work" : "every thread completed its work") +
        '<div class="kstep-message">no invariant was violated on your run</div></div>';
    }
    return '<div class="kstep-banner stopped">■ the end of your run so far' +
      '<div class="kstep-message">no invariant is violated up to here; choose who runs next</div></div>';
  }

  // The memory model the page's run is under, as the Session takes it: "sc", or "tso" (x86's store buffers).
  function memory_name(ctx) {
    const m = get(ctx.P.live, "memory_model");
    return m === null || m === undefined ? "sc" : get(m, "name");
  }

  // Under x86-TSO, what a drain is and how many stores a buffer holds (the scenario's bound), in one line.
  function memory_html(m) {
    return '<p class="kstep-live-memory">Under x86-TSO: a plain store waits in its CPU\'s store buffer, at most ' +
      m.store_buffer + " per CPU (the scenario's <code>store_buffer</code>; a store that finds it full first drains " +
      "the oldest), and reaches memory when you choose that CPU's drain, oldest first; until then only that CPU " +
      "reads it. A locked instruction (<code>xchg</code>, <code>cmpxchg</code>) or <code>smp_mb()</code> waits " +
      "for its own CPU's buffer to drain. The boards show memory; the store-buffer rows under them, the waiting " +
      "stores.</p>";
  }

  function variant_of(ctx) {
    return get(ctx.P.live, "variants").find((v) => get(v, "name") === ctx.variant);
  }

  // The variants the scenario can run under: 6.12 and its versions, and the broken ones to catch.
  function variant_select(ctx) {
    // A litmus page names what it offers ("Execution": the candidate to reveal, litmus_live.py).
    const what = get(ctx.P.live, "pick") || "Kernel";
    return "<label>" + esc(what) + ': <select data-do="variant">' + get(ctx.P.live, "variants").map((v) =>
      '<option value="' + esc(get(v, "name")) + '"' + (get(v, "name") === ctx.variant ? " selected" : "") +
      ' title="' + esc(get(v, "doc")) + '">' + esc(get(v, "name")) + (get(v, "broken") ? " (broken)" : "") +
      "</option>").join("") + "</select></label> ";
  }

  function error_html(ctx) {
    return ctx.error === null ? "" : '<p class="kstep-live-error" role="alert">' + esc(ctx.error) + "</p>";
  }

  // The panel for ctx.view, the step the player shows: its choices branch the run there.
  function render(ctx) {
    const v = ctx.view;
    const parts = [error_html(ctx), "<div>" + variant_select(ctx) + '<b>You schedule.</b> Step ' + v.step +
      (v.actor === null ? "" : ": " + esc(v.actor) + " &rarr; <code>" + esc(v.label) + "</code>") + "</div>"];
    if (v.step < v.steps) {
      parts.push('<p class="kstep-live-branch">You are back at step ' + v.step + " of your " + v.steps +
        ": choosing who runs next branches your run here and drops steps " + (v.step + 1) + " to " + v.steps +
        ".</p>");
    }
    if (v.violation !== null && v.violation.kind === "harm") {
      parts.push('<p class="kstep-live-found" data-found="' + esc(v.violation.invariant) + '">★ You found it: ' +
        esc(v.violation.title) + " at step " + v.violation.step + ". " + esc(v.violation.message) +
        ". Linux 6.12 itself has no such run: step back and compare.</p>");
    } else if (v.violation !== null) {
      parts.push('<p class="kstep-live-found" data-found="' + esc(v.violation.invariant) + '">' +
        esc(v.violation.title) + " at step " + v.violation.step + ": " + esc(v.violation.message) + "</p>");
    } else if (v.outcome === "finished") {
      parts.push('<p class="kstep-live-ok">Every thread finished and every invariant held on your run.</p>');
    }
    if (v.choices.length) {
      parts.push('<div class="kstep-live-choices">Who runs next? ' + v.choices.map((c) =>
        '<button data-action="' + esc(c.action) + '" title="' + esc(c.where + ": " + c.what) + '">' +
        esc(c.text) + "</button>").join("") + "</div>");
    }
    if (v.memory_model !== null) {
      parts.push(memory_html(v.memory_model));
    }
    if (v.waiting.length) {
      parts.push('<ul class="kstep-live-waiting">' + v.waiting.map((w) =>
        '<li data-actor="' + esc(w.actor) + '"><b>' + esc(w.actor) + "</b> cannot run: " + esc(w.why) + "</li>")
        .join("") + "</ul>");
    }
    if (v.done.length) {
      parts.push('<div class="kstep-live-waiting">done: ' + v.done.map((a) => esc(a) +
        (v.ended[a] ? " (" + esc(v.ended[a]) + ")" : "")).join(", ") + "</div>");
    }
    parts.push('<div><button data-do="back"' + (v.steps ? "" : " disabled") + '>◀ Undo my last step</button>' +
      '<button data-do="reset">|◀ Start again</button><button data-do="recorded">Play the recorded run</button>' +
      "</div>");
    parts.push('<div class="kstep-live-waiting">Your schedule: <code class="kstep-live-schedule">' +
      esc(v.schedule || "(none yet)") + "</code>" + (v.step ? " &mdash; the player's slider goes back through " +
      "it; choosing from an earlier step branches there" : "") + "</div>");
    if (v.state !== null) {  // a mechanism without a view of its own has no board: its state as text
      parts.push('<table class="kstep-live-state">' + Object.entries(v.state).map(([k, x]) =>
        "<tr><th>" + esc(k) + "</th><td><code>" + esc(x) + "</code></td></tr>").join("") + "</table>");
    }
    ctx.el.innerHTML = parts.join("");
    ctx.el.dataset.step = String(v.step);
    ctx.el.dataset.state = "live";
  }

  // The slider moved (the student dragged it, stepped back, or the player plays): offer the choices of the
  // step it shows now.
  function follow(ctx) {
    if (ctx.view === undefined || ctx.busy) {
      return;
    }
    const k = ctx.W.slider.value;  // the player's own change callback may not have run yet: not its frame
    if (k !== ctx.view.step && k >= 0 && k <= ctx.view.steps) {
      guarded(ctx, async () => {
        ctx.view = JSON.parse(ctx.session.view_json(k));
      });
    }
  }

  // Run ``what`` (a move of the session); whatever it throws, the panel stays, with the error in one line.
  async function guarded(ctx, what) {
    ctx.busy = true;
    ctx.error = null;
    try {
      await what();
    } catch (err) {
      if (!(err !== null && typeof err === "object" && err.type === "UserError")) {
        console.error(err);  // not the student's doing: a bug, with its traceback for the console
      }
      ctx.error = (err !== null && typeof err === "object" && err.type === "UserError" ? "" :
        "Something went wrong (the browser console has the details): ") + one_line(err);
      ctx.el.dataset.error = ctx.error;
    } finally {
      ctx.busy = false;
      if (ctx.view !== undefined) {
        render(ctx);
      } else {
        offer(ctx);
      }
    }
    if (ctx.error === null) {
      delete ctx.el.dataset.error;
    }
  }

  async function move(ctx, what) {
    const S = ctx.session;
    const k = ctx.view.step;  // the step the player shows: a choice there branches the run
    const t0 = performance.now();
    if (what.action !== undefined) {
      S.step(what.action, k < ctx.view.steps ? k : undefined).destroy();
    } else if (what.do === "back") {
      S.back().destroy();
    } else if (what.do === "reset") {
      S.reset().destroy();
    }
    const page = page_of(ctx);
    const t1 = performance.now();
    ctx.view = page.view;
    await show_run(ctx, page);
    const t2 = performance.now();
    render(ctx);
    const profile = globalThis.kstep_live_profile;  // set by the benchmark to see where a click's time goes
    if (profile) {
      profile.push({python_ms: t1 - t0, player_ms: t2 - t1, panel_ms: performance.now() - t2});
    }
  }

  // A plot drawn from a source the student's run does not rebuild would show the recorded run: hide it.
  function hide_recorded_charts(ctx, page) {
    for (const m of ctx.doc.all_models) {
      if (typeof m.name === "string" && m.name.startsWith("kstep-plot-") && "renderers" in m && "toolbar" in m) {
        const stale = m.renderers.some((r) => r.data_source !== undefined && r.data_source.name !== null &&
          r.data_source.name.startsWith("kstep-src-") &&
          page.columns.board[r.data_source.name.slice("kstep-src-".length)] === undefined);
        if (stale) {
          m.visible = false;
        }
      }
    }
  }

  async function start(ctx) {
    ctx.el.dataset.state = "busy";
    const py = await boot();
    const live = ctx.P.live;
    // A litmus page carries its test: the session steps it under the page's memory model (litmus_live.py).
    const session = get(live, "litmus") !== undefined ?
      py.globals.get("LitmusSession")(get(live, "litmus"), get(live, "scenario"), ctx.variant,
                                      JSON.stringify(get(live, "kernel"))) :
      py.globals.get("Session")(get(live, "mechanism"), get(live, "scenario"), ctx.variant,
                                JSON.stringify(get(live, "calls")), memory_name(ctx));
    if (ctx.session !== undefined) {
      ctx.session.destroy();
    }
    ctx.session = session;
    ctx.columns = {};  // a new session sends every column
    ctx.stores = new Map();  // each source's store as the player has it
    ctx.fresh = true;  // what the player shows belongs to another run
    const page = page_of(ctx);
    ctx.view = page.view;
    hide_recorded_charts(ctx, page);
    await show_run(ctx, page);
  }

  function offer(ctx) {
    ctx.el.dataset.state = "ready";
    ctx.el.innerHTML = error_html(ctx) + "<b>Schedule it yourself:</b> choose which thread takes each next " +
      "atomic step, step back, try another order, and see whether you can break an invariant. " +
      variant_select(ctx) + '<button data-do="start">Schedule it yourself</button>' + progress_html();
  }

  function setup(ctx) {
    ctx.W = ctx.P.widgets;
    ctx.variant = get(ctx.P.live, "variant");
    ctx.el = panel(ctx);
    ctx.el.dataset.mechanism = get(ctx.P.live, "mechanism");  // which player a panel drives, on a page of several
    ctx.el.dataset.memory = memory_name(ctx);  // and under which memory model
    if (location.protocol === "file:") {
      ctx.el.dataset.state = "file";
      ctx.el.innerHTML = "<b>Interactive scheduling</b> (you choose which thread runs next) needs this page " +
        "served over HTTP, since the model runs as Python in the browser: run <code>kstep serve DIR</code> " +
        "with DIR the folder of this site (or any static web server there) and open the address it prints. " +
        "Opened as a file, the page plays its recorded run.";
      return;
    }
    ctx.error = null;
    ctx.busy = false;
    loading.panels.push(ctx);
    ctx.el.dataset.loaded = loading.state;
    offer(ctx);
    ctx.W.slider.connect(ctx.W.slider.properties.value.change, () => follow(ctx));
    ctx.el.addEventListener("change", (e) => {  // another kernel: a run under it starts (or the choice waits)
      if (e.target.dataset.do === "variant") {
        ctx.variant = e.target.value;
        if (ctx.session !== undefined && !ctx.busy) {
          const was = focused(ctx);
          guarded(ctx, () => start(ctx)).then(() => refocus(ctx, was));
        }
      }
    });
    ctx.el.addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (b === null || b.disabled || ctx.busy) {
        return;
      }
      const was = focused(ctx);  // after a pick the focus stays on the panel, not the top of the page
      if (b.dataset.do === "start") {
        guarded(ctx, () => start(ctx)).then(() => refocus(ctx, was));
      } else if (b.dataset.do === "recorded") {
        location.reload();
      } else {
        ctx.el.dataset.state = "busy";
        guarded(ctx, () => move(ctx, b.dataset.action !== undefined ? {action: b.dataset.action} : {do: b.dataset.do}))
          .then(() => refocus(ctx, was));
      }
    });
  }

  // A pick rebuilds the panel and the control it was made with, which sent the focus to the top of the
  // page: after each, the focus goes back to that control (the choice at the same place, the same button
  // or field), or to the first choice when it is gone.
  function focused(ctx) {
    const el = document.activeElement;
    if (el === null || !ctx.el.contains(el)) {
      return null;
    }
    return el.dataset.action !== undefined ? {choice: [...ctx.el.querySelectorAll("button[data-action]")].indexOf(el)}
      : {do: el.dataset.do};
  }

  function refocus(ctx, was) {
    if (was === null) {
      return;
    }
    const choices = ctx.el.querySelectorAll("button[data-action]");
    const same = was.choice !== undefined ? choices[Math.min(was.choice, choices.length - 1)]
      : ctx.el.querySelector('[data-do="' + was.do + '"]');
    const to = same != null && !same.disabled ? same : choices[0] || ctx.el.querySelector('[data-do="reset"]');
    if (to != null) {
      to.focus();
    }
  }

  function when_ready(then) {
    const roots = document.querySelectorAll("[data-root-id]").length;
    if (window.Bokeh !== undefined && Bokeh.documents.length >= roots && roots > 0 &&
        Bokeh.documents.every((d) => d.is_idle)) {
      then();
    } else {
      setTimeout(() => when_ready(then), 50);
    }
  }

  globalThis.kstep_live_boot = boot;  // the benchmark (bench/interactive.py) times Python steps in this interpreter

  const css = document.createElement("style");
  css.textContent = STYLE;
  document.head.appendChild(css);
  // A page loads this file only when a player on it can be scheduled by hand (site/outputs.py, export.py), so
  // a page without a panel never loads Python.  On a page with one, Python starts loading as the page opens,
  // while BokehJS builds the players, not once the student reaches the panel: ready sooner when they do.
  if (location.protocol !== "file:") {
    boot().catch(() => {});  // the panels show the failure; Start tries again
  }
  when_ready(() => players().forEach(setup));
})();
