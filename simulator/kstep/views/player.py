"""The generic player: controls, status line and playback for any mechanism's view.

A mechanism view never writes JavaScript.  It creates a ``Player`` for a trace, registers

- per-frame sources (``frame_source``): a function from a state to the rows it draws; the player
  lays out every frame into frame-indexed columns (columns.py) and player.js slices frame k;
  timelines and charts declare theirs in charts.py, over the trace, and show one page of
  ``window`` steps at a time, so that painting a frame costs the same at step 50,000 as at step 5;
- static sources (plain ``ColumnDataSource``s drawn once, the same for every run of the scenario);
- cursors (a ``Span`` or ``BoxAnnotation`` the player moves to the current step), curtains (a
  ``BoxAnnotation`` over every step after the current one, so a timeline shows only what has
  happened so far), x ranges that page along with the cursor (``follow``) and ranges whose end holds
  the run (``fit``: a counter's axis reaches its largest value), refitted to a student's own run;

and then calls ``layout(...)`` with its plots.  All playback (play/pause, speed, step, back,
reset, the slider, the status line, the code pane and the end-of-run banner) is one CustomJS
callback running player.js, shared by every control.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape
from importlib import resources
from typing import Any, Callable, Hashable, Mapping, Optional, Sequence

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import (BoxAnnotation, Button, ColumnDataSource, CustomJS, Div, GlyphRenderer, InlineStyleSheet, Plot,
                          Range1d, Row, Select, Slider, Span, TextInput, Toggle)
from bokeh.models.dom import HTML
from bokeh.models.ui import Pane

from ..engine.liveness import describe

from ..engine import Model, Trace, display
from ..engine.memory_model import StoreBuffered
from . import charts, code, context, predict, style, timed
from .columns import FrameColumns, Strings, decode
from .store_buffers import buffers_figure, key as buffers_key

PLAY, PAUSE = "▶ Play", "▮▮ Pause"  # glyphs every DejaVu/Arial install has
# The play/pause toggle's label holds both words and CSS shows the one its state needs: BokehJS
# re-renders a button whose label changes, which replaced the element being clicked (and dropped
# its keyboard focus) on every play and pause.
TOGGLE_LABEL = f'<span class="kstep-when-paused">{PLAY}</span><span class="kstep-when-playing">{PAUSE}</span>'
SPEEDS = (1, 2, 4, 10, 30, 60, 240, 1000)  # steps per second
CODE0 = '<div class="kstep-code kstep-code-empty">the Linux 6.12 source of each step shows here</div>'
CODE_PLAYING = '<div class="kstep-code kstep-code-empty">playing: pause or step to read the code of a step</div>'


@lru_cache(maxsize=1)
class Frames:
    """What the player shows: every per-frame source a layout ships, decoded at frame k exactly as
    player.js slices it.  The layout's spec is looked up once, so loops over frames stay cheap; the
    tests compare pages and views against it."""

    def __init__(self, lay):
        spec = lay.select_one({"name": "kstep-player"}).args["kstep"]
        self.strings = spec["strings"]
        self.exports = {
            s["name"]: {"kinds": dict(s["cols"]), "store": {c: np.asarray(v) for c, v in s["store"].data.items()},
                        "start": spec["frames"].data[s["name"] + ".start"],
                        "stop": spec["frames"].data[s["name"] + ".stop"]}
            for s in spec["sources"]
        }

    def rows(self, source: str, k: int) -> dict[str, list]:
        return decode(self.exports[source], self.strings, k)

    def __call__(self, k: int) -> dict[str, dict[str, list]]:
        return {name: self.rows(name, k) for name in self.exports}


def legible_width(lay) -> int:
    """The narrowest a panel is legible at: its plots' minimum widths, side by side in a row."""
    if isinstance(lay, Plot):
        return lay.min_width
    widths = [legible_width(child) for child in getattr(lay, "children", ())]
    if not widths:
        return 0
    return sum(widths) + (lay.spacing or 0) * (len(widths) - 1) if isinstance(lay, Row) else max(widths)


def plots_in(lay) -> list:
    """The plots under ``lay`` in the order it draws them (``select`` gives a set's order, which changes
    from one run to the next, and so would the page)."""
    if isinstance(lay, Plot):
        return [lay]
    return [plot for child in getattr(lay, "children", ()) for plot in plots_in(child)]


def player_js() -> str:
    here = resources.files(__package__)
    return here.joinpath("predict.js").read_text() + "\n" + here.joinpath("player.js").read_text()


class Player:
    """One animation of one trace; see the module docstring for how a view uses it."""

    def __init__(self, trace: Trace, model: Model) -> None:
        if not trace.states:
            raise ValueError("a trace has at least its initial state")
        self.trace = trace
        self.model = model
        self.n = len(trace.actions)
        self.window = charts.WINDOW  # the pages charts.py lays timelines out in
        self.strings = Strings()
        self.exports: dict[str, dict] = {}
        self._sources: list[tuple[str, ColumnDataSource, ColumnDataSource]] = []
        self._cursors: list[dict] = []
        self._follow: list[dict] = []
        self._fits: list[dict] = []
        # A stylesheet belongs to one Bokeh document, so every player makes its own.
        self.predictions = predict.predictions(trace, model)
        self.stylesheet = InlineStyleSheet(css=style.CSS, name="kstep-css")
        self.wrap = InlineStyleSheet(css=style.WRAP, name="kstep-css-wrap")
        self.stage = InlineStyleSheet(css=style.STAGE, name="kstep-css-stage")
        self.dark_plot = InlineStyleSheet(css=style.DARK_PLOT, name="kstep-css-dark-plot")

    # -- what a view registers ------------------------------------------------------------------
    def frame_source(self, name: str, columns: Mapping[str, type], rows: Callable[[Any], Mapping[str, Sequence]],
                     key: Callable[[Any], Hashable] | None = None,
                     frames: Sequence[Any] | None = None) -> ColumnDataSource:
        """A source whose rows change from frame to frame.

        ``rows(state)`` gives a frame's columns; a view that draws something the state alone does not
        hold (a count over the run so far) passes ``frames``, one value per frame, and ``rows(value)``.
        """
        if name in self.exports:
            raise ValueError(f"frame source {name!r} registered twice")
        values = self.trace.states if frames is None else frames
        if len(values) != self.n + 1:
            raise ValueError(f"frame source {name!r}: {len(values)} frames for a trace of {self.n + 1}")
        fc = FrameColumns(name, columns, rows, self.strings, key)
        for value in values:
            fc.add(value)
        export = self.exports[name] = fc.export()
        shown = ColumnDataSource(decode(export, self.strings.table, 0), name=f"kstep-src-{name}")
        store = ColumnDataSource({c: np.asarray(v) for c, v in export["store"].items()}, name=f"kstep-store-{name}")
        self._sources.append((name, shown, store))
        return shown

    def static_source(self, name: str, data: Mapping[str, Any]) -> ColumnDataSource:
        """A source drawn once, the same for every run of the scenario (bit numbers under a word):
        what depends on the run is a frame source, so that interactive mode redraws it."""
        return ColumnDataSource(dict(data), name=f"kstep-static-{name}")

    def page(self, k: int) -> tuple[int, int]:
        """The x range a timeline shows at frame k (charts.page; player.js's follow() computes the same)."""
        return charts.page(k, self.n + 1, self.window)

    def cursor(self, annotation: Span | BoxAnnotation) -> None:
        """Move ``annotation`` to the current step: a Span to k + 0.5, a BoxAnnotation over [k, k + 1]."""
        kind = "box" if isinstance(annotation, BoxAnnotation) else "span"
        if kind == "box":
            annotation.left, annotation.right = 0, 1
        else:
            annotation.location = 0.5
        self._cursors.append({"model": annotation, "kind": kind})

    def cursor_at(self, annotation: BoxAnnotation, left: Sequence[float], right: Sequence[float]) -> None:
        """Move ``annotation`` to [left[k], right[k]] at frame k: a chart whose x is not the step (time)."""
        annotation.left, annotation.right = left[0], right[0]
        self._cursors.append({"model": annotation, "kind": "at", "left": list(left), "right": list(right)})

    def curtain(self, annotation: BoxAnnotation) -> None:
        """Cover every step after the current one with ``annotation`` (its right edge left open, so it
        reaches the plot's edge): a chart over the run must not show the student what comes next."""
        annotation.left = 1
        self._cursors.append({"model": annotation, "kind": "curtain"})

    def follow(self, x_range: Range1d) -> None:
        """Show a page of ``window`` steps of a timeline at a time, paging along with the cursor."""
        x_range.start, x_range.end = self.page(0)
        x_range.bounds = (0, max(self.n + 1, 1))
        self._follow.append({"range": x_range, "window": self.window, "total": self.n + 1})

    def fit(self, rng: Range1d, source: str | None = None, column: str = "", *, scale: float = 1.0, add: float = 0.0,
            least: float = 0.0) -> None:
        """End ``rng`` at ``max(least, scale * top + add)``: ``top`` is the largest value of ``column`` in
        the frames of frame source ``source`` (registered before), or without a source the number of
        frames.  player.js computes the same over a student's own run after each of their steps, so a
        run longer or higher than the recorded one is not cut off.  A run whose player asks questions
        opens in predict mode, at frame 0: its axis then holds frame 0 only, and player.js widens it
        with each frame shown, so that it never tells what the run reaches before the student predicts."""
        if source is None:
            top = self.n + 1
        else:
            export = self.exports[source]
            values = export["store"][column]
            blocks = set(zip(export["start"][:1] if self.predictions else export["start"],
                             export["stop"][:1] if self.predictions else export["stop"]))
            top = max((max(values[a:b], default=0) for a, b in blocks), default=0)
        rng.end = max(least, scale * top + add)
        self._fits.append({"range": rng, "source": source, "column": column, "scale": scale, "add": add,
                           "least": least})

    @property
    def paged(self) -> bool:
        """True when the trace is longer than a page (timelines then show one page at a time)."""
        return self.n + 1 > self.window

    # -- the page ------------------------------------------------------------------------------
    def layout(self, *panels, key: str = "", name: str = "kstep-layout"):
        """The header, controls, status line and end banner above the stage (the view's first panel, its
        board, and the code pane: side by side where there is room, stacked where not), the colour key
        and the other panels under it; everything as wide as the page, up to ``style.MAX_WIDTH``."""
        widgets = self._widgets()
        if self.trace.scheduler == "timed":  # time on the x-axis, under every mechanism's own panels
            panels += (timed.cost_timeline(self),)
            key += timed.key()
        if isinstance(self.model, StoreBuffered):  # the stores still waiting, under the board that shows memory
            panels = (column(panels[0], buffers_figure(self), sizing_mode="stretch_width"), *panels[1:])
            key += buffers_key()
        if key:
            key += self.every_panel_key()
        controls = row(widgets["reset"], widgets["back"], widgets["toggle"], widgets["step"], widgets["speed"],
                       widgets["slider"], widgets["projector"], name="kstep-controls", sizing_mode="stretch_width",
                       stylesheets=[self.wrap])
        # The status line changes on every frame: a Pane's HTML node updates in place, while a Div
        # re-lays out the whole page each time its text changes (about 4 ms a frame).
        status = Pane(elements=[widgets["status"]], stylesheets=[self.stylesheet], name="kstep-status-pane",
                      styles={"width": "100%", "min-height": f"{style.STATUS_LINES * 1.5 + 1.6}em"})
        source = Pane(elements=[widgets["code"]], stylesheets=[self.stylesheet], name="kstep-code-pane")
        # For a screen reader: each step the player stops on, said once in a sentence (a live region), and
        # the status and the boards as a text table to read on demand.
        said = Pane(elements=[widgets["said"]], stylesheets=[self.stylesheet], name="kstep-said-pane",
                    styles=style.SCREEN_READER_ONLY,
                    html_attributes={"aria-live": "polite", "aria-atomic": "true", "role": "status"})
        state = Pane(elements=[widgets["state"]], stylesheets=[self.stylesheet], name="kstep-state-pane",
                     styles=style.SCREEN_READER_ONLY)
        # Once per panel, kept for the spec and the rescale.
        panel_plots = [plots_in(p) for p in panels]
        plots = [m for pp in panel_plots for m in pp]
        for plot in plots:
            plot.sizing_mode = "stretch_width"
            plot.min_width = plot.width * style.MIN_PLOT_WIDTH // style.WIDTH  # in proportion to its design
            plot.stylesheets = [*plot.stylesheets, self.dark_plot]
        # Narrower than it is legible at, a panel is drawn smaller as a whole (player.js's rescale), so that
        # nothing scrolls sideways; its box would scroll only if that failed.
        scaled = [{"legible": legible_width(p), "plots": pp} for p, pp in zip(panels, panel_plots)]
        panels = tuple(column(p, sizing_mode="stretch_width", styles=style.SCROLL_SIDEWAYS, name=f"kstep-panel-{k}")
                       for k, p in enumerate(panels))
        for panel, s in zip(panels, scaled):
            s["panel"] = panel
        stage = row(*panels[:1], source, name="kstep-stage", sizing_mode="stretch_width", stylesheets=[self.stage])
        # Predict mode: a question, where the answer goes, a button to give up, the score so far.
        ask = column(widgets["ask"], row(widgets["predicting"], widgets["guess"], widgets["reveal"], widgets["score"],
                                         sizing_mode="stretch_width", stylesheets=[self.wrap]),
                     name="kstep-predict", sizing_mode="stretch_width", visible=bool(self.predictions))
        header = self._div("header", self.header_html())
        keys = [self._div("key", key)] if key else []
        parts = [header, controls, ask, status, widgets["banner"], stage, said, state, *keys, *panels[1:]]
        lay = column(*parts, name=name, sizing_mode="stretch_width", styles={"max-width": f"{style.MAX_WIDTH}px"})
        # Projector mode: large type, and of the page only what a lecture hall reads from afar.
        projector = {"hide": [header, ask, *keys, *panels[1:]], "large": [status, source],
                     "scale": style.PROJECTOR_SCALE}
        callback = CustomJS(args={"kstep": {**self._spec(widgets, lay, plots), "projector": projector,
                                            "panels": scaled}},
                            code=player_js(), name="kstep-player")
        widgets["toggle"].js_on_change("active", callback)
        widgets["slider"].js_on_change("value", callback)
        widgets["speed"].js_on_change("value", callback)
        for b in ("step", "back", "reset", "reveal"):
            widgets[b].js_on_event("button_click", callback)
        widgets["guess"].js_on_change("value", callback)
        widgets["predicting"].js_on_change("active", callback)
        widgets["projector"].js_on_change("active", callback)
        # A plot's inner width is known only once the page is laid out, which makes its first value the
        # player's load event: the player installs its keys (arrows step, space plays) and state table.
        if plots:
            plots[0].js_on_change("inner_width", callback)
        return lay

    def every_panel_key(self) -> str:
        """The colours every mechanism's panels share: the step on screen, and harm (a run, recorded or a
        student's own, may break a check or end in a cycle that repeats forever)."""
        return style.key_html("every panel:", [("the step that breaks a check, or a cycle that repeats forever",
                                                style.HARM)],
                              outline=[("the timeline's cursor, the boxes and bits it changed, its lines in the code pane",
                                        style.STEP)])

    def _div(self, name: str, html: str, **kw) -> Div:
        kw.setdefault("sizing_mode", "stretch_width")
        return Div(text=html, name=f"kstep-{name}", stylesheets=[self.stylesheet], **kw)

    def _widgets(self) -> dict:
        n = self.n
        default = 2 if n <= 100 else 10 if n <= 1000 else 60
        btn = dict(height=40, width=110, stylesheets=[self.stylesheet])
        return {
            "reset": Button(label="|◀ Reset", name="kstep-reset", **btn),
            "back": Button(label="◀ Back", name="kstep-back", **btn),
            "toggle": Toggle(label=HTML(html=TOGGLE_LABEL), name="kstep-play", button_type="success", **btn),
            "step": Button(label="Step ▶", name="kstep-step", **btn),
            "projector": Toggle(label="projector mode", name="kstep-projector", height=40, width=150,
                                stylesheets=[self.stylesheet]),
            "speed": Select(title="speed", name="kstep-speed", width=130, value=str(default),
                            stylesheets=[self.stylesheet],
                            options=[(str(s), f"{s} step{'s' if s > 1 else ''}/s") for s in SPEEDS]),
            # show_value=False: redrawing the slider's title on every frame costs more than the frame
            # itself, and the status line below says which step this is.
            "slider": Slider(start=0, end=max(n, 1), value=0, step=1, title="step", show_value=False,
                             name="kstep-slider", sizing_mode="stretch_width", min_width=200, disabled=n == 0,
                             stylesheets=[self.stylesheet]),
            "status": HTML(html=self.status0(), name="kstep-status"),
            "code": HTML(html=CODE0, name="kstep-code"),
            "state": HTML(html="", name="kstep-state"),
            "said": HTML(html="", name="kstep-said"),
            "predicting": Toggle(label="predict mode", active=bool(self.predictions), name="kstep-predict-on",
                                 height=40, width=130, stylesheets=[self.stylesheet]),
            "ask": self._div("ask", self.ask_html()),
            "guess": TextInput(name="kstep-guess", title="your prediction (Enter to check)", width=260,
                               disabled=True, stylesheets=[self.stylesheet]),
            "reveal": Button(label="Show me", name="kstep-reveal", height=40, width=110, disabled=True,
                             stylesheets=[self.stylesheet]),
            "score": self._div("score", "", sizing_mode=None, width=220),
            "banner": self._div("banner", self.banner_html(), visible=n == 0),
        }

    def frame_index(self) -> dict:
        """Per frame: who acted, which label, and where each per-frame source's rows start and stop."""
        cols = self.trace.columns(self.model)
        frames = {"actor": np.asarray(cols["actor"]), "label": np.asarray(cols["label"]), **self.context()}
        for name, export in self.exports.items():
            frames[f"{name}.start"] = np.asarray(export["start"])
            frames[f"{name}.stop"] = np.asarray(export["stop"])
        return frames

    def context(self) -> dict[str, np.ndarray]:
        """Per frame, as indices into the string table: the step's call stack as one line (empty where
        the model cannot tell it) and what the step acts on (``on``: "mmap_lock", "VMA 1's lock")."""
        lines, on = context.frame_context(self.trace, self.model, code.calls)
        return {"stack": np.array([self.strings.index(s) for s in lines], dtype=np.int32),
                "on": np.array([self.strings.index(s) for s in on], dtype=np.int32)}

    def kernel_build(self) -> Optional[str]:
        """The kernel build (an architecture's, or a configuration) whose code the code pane shows, when the
        model's state or variant names one."""
        return display.of(self.model).kernel_build(self.trace.states[0]) if self.trace.states else None

    def tables(self) -> dict:
        """The plain data player.js reads (besides Bokeh models): sizes, names and texts."""
        cols = self.trace.columns(self.model)
        labels = cols["labels"]
        sources = self.model.sources()
        what = display.of(self.model).what
        build = self.kernel_build()
        return {
            "n": self.n,
            "strings": self.strings.table,
            "actors": cols["actors"],
            "labels": labels,
            "where": [str(code.built(sources[l], build)[0]) for l in labels],
            "what": [what(l) for l in labels],
            **code.tables(labels, sources, {a.label for a in self.trace.actions}, build),
            "predictions": self.predictions,
            "code0": CODE0,
            "code_playing": CODE_PLAYING,
            "status0": self.status0(),
            "window": self.window,
        }

    def _spec(self, widgets: dict, root, plots: list) -> dict:
        # The plot each source and cursor is drawn on: player.js skips the plots out of view while playing.
        # ``plots`` are every plot under ``root`` (all are in its panels), so root's models are not walked again.
        plot_of = {m.id: p for p in plots for m in [*p.renderers, *p.center]}
        plot_of.update({r.data_source.id: p for p in plots for r in p.renderers if isinstance(r, GlyphRenderer)})
        return {
            **self.tables(),
            "widgets": widgets,
            "root": root,
            "frames": ColumnDataSource(self.frame_index(), name="kstep-frames"),
            "sources": [
                {"name": name, "source": shown, "store": store, "cols": list(self.exports[name]["kinds"].items()),
                 "plot": plot_of.get(shown.id)}
                for name, shown, store in self._sources
            ],
            "cursors": [{**c, "plot": plot_of.get(c["model"].id)} for c in self._cursors],
            "follow": self._follow,
            "fits": self._fits,
        }

    # -- texts ---------------------------------------------------------------------------------
    def header_html(self) -> str:
        t, m = self.trace, self.model
        run = {"random": f"random schedule, seed {t.seed}", "round-robin": "round-robin schedule",
               "scripted": "the scenario's scripted schedule", "explore": "shortest counterexample found by explore",
               "timed": "timed schedule, the earliest clock first (ticks in ns)",
               "observed": "observed on a real kernel, one step per aggregation (never simulated)"}
        how = run.get(t.scheduler, t.scheduler)
        if t.cycle_start is not None:
            how = (f"lasso found by explore --liveness: steps 1 to {t.cycle_start} lead in, steps "
                   f"{t.cycle_start + 1} to {self.n} repeat forever")
        variant = m.variant
        broken = (f' · <span class="kstep-broken">broken variant {escape(variant.name)}:</span> {escape(variant.doc)}'
                  if variant.broken else f" · {escape(variant.name)}")
        scenario = f" — {escape(t.scenario)}" if t.scenario else ""
        # the memory model, as the interactive header names the student's run's
        memory = f" on x86-TSO, store buffers of {m.depth}" if isinstance(m, StoreBuffered) else ""
        change = self.change_html() if variant.broken else ""
        return (f'<div class="kstep-header"><b>{escape(m.title or m.name)}</b>{scenario}'
                f'<div class="kstep-sub">{self.n} steps{memory} · {escape(how)}{broken}</div>{change}</div>')

    def change_html(self) -> str:
        """A broken variant's change beside the 6.12 code it replaces: a table, one row per step."""
        release, changes = code.changes(self.model)
        rows = []
        for c in changes:
            source = "".join(f'<span class="kstep-line"><span class="kstep-lineno">{n}</span>{escape(line)}</span>'
                             for n, line in c["lines"])
            # tabindex: an excerpt that scrolls is reached by the keyboard to be scrolled
            shown = (f'<pre class="kstep-source" tabindex="0">{source}</pre>' if source else
                     " (too long to show here: the code pane shows it)")
            left = f'<code>{escape(c["where"])}</code>' + shown
            rows.append(f'<tr><td>{left}</td><td><code>{escape(c["label"])}</code> {escape(c["instead"])}</td></tr>')
        if not rows:
            return ""
        return (f'<table class="kstep-change"><tr><th>Linux {escape(release)}</th>'
                f'<th>this variant</th></tr>{"".join(rows)}</table>')

    def ask_html(self) -> str:
        if not self.predictions:
            return ""
        return (f'<div class="kstep-ask">Predict mode: the player stops before the {len(self.predictions)} '
                f'marked step{"s" if len(self.predictions) > 1 else ""} and asks what comes; step on to '
                'the first, or turn predict mode off to move freely.</div>')

    def status0(self) -> str:
        actors = ", ".join(self.model.actors(self.trace.states[0]))
        return (f'<div class="kstep-status"><span class="kstep-stepno">step 0 / {self.n}</span> '
                f'initial state; actors: {escape(actors)}<div class="kstep-what">press ▶ Play, or Step ▶ to '
                f'take one atomic step at a time</div></div>')

    def banner_html(self) -> str:
        t = self.trace
        if t.cycle_start is not None:
            lasso = t.lasso
            who = " and ".join(lasso["actors"])
            never = "nobody progresses" if lasso["kind"] == "livelock" else f"{who} never progresses while others do"
            return (f'<div class="kstep-banner violation">↻ {escape(describe(lasso))}'
                    f'<div class="kstep-message">steps {t.cycle_start + 1} to {self.n} form a cycle: the state '
                    f'after step {self.n} is the state after step {t.cycle_start}, so they repeat forever; '
                    f'{escape(never)}, and every CPU that could always move does move (weak fairness)</div></div>')
        if t.violation is not None:
            v = t.violation
            return (f'<div class="kstep-banner violation">✗ step {v.step}: {escape(v.title)}'
                    f'<div class="kstep-message">{escape(v.message)}</div></div>')
        if t.scheduler == "observed" and t.violation is None:
            return (f'<div class="kstep-banner finished">✓ end of the recording: {self.n} observed steps'
                    '<div class="kstep-message">every one keeps the invariants it was checked with</div></div>')
        if t.outcome == "finished":
            how = display.of(self.model).how_ended
            ended = [f"{a} was {how(t.states[-1], a)}" for a in self.model.actors(t.states[-1])
                     if how(t.states[-1], a)]
            if ended:
                return (f'<div class="kstep-banner finished">✓ finished: {escape("; ".join(ended))}, every other '
                        'thread completed its work<div class="kstep-message">no invariant was violated on this '
                        'run</div></div>')
            return ('<div class="kstep-banner finished">✓ finished: every thread completed its work'
                    '<div class="kstep-message">no invariant was violated on this run</div></div>')
        why = {"max-steps": "the run was cut off at its step limit",
               "schedule-end": "the scripted schedule ended"}.get(t.outcome, t.outcome)
        return (f'<div class="kstep-banner stopped">■ stopped after {self.n} steps'
                f'<div class="kstep-message">{escape(why)}; no invariant was violated up to here</div></div>')

