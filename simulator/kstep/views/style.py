"""One look for every kstep animation: colours, fonts and the colour key.

The colours are the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies and on a washed-out lecture projector); every view takes its phase and status
colours from here, so "waiting" or "freed" looks the same in every mechanism.
"""

from __future__ import annotations

from html import escape
from typing import Sequence

ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
SIENNA = "#A6611A"  # a darker orange
GREY = "#BBBBBB"
DARK_GREY = "#888888"
LIGHT = "#EEEEEE"
DARK = "#555555"
INK = "#222222"
WHITE = "#FFFFFF"
NONE = "#FFFFFF00"  # a transparent fill
# The play button: Okabe-Ito's green darkened until white on it reads at 5.3:1 (Bokeh's own is 2.5:1), and
# darker still under the pointer and while playing.
PLAY = "#007A5A"
PLAY_DOWN = "#00614A"
HARM_TEXT = "#B5400E"  # vermillion darkened for text and under white text: 5.7:1 on white (vermillion: 3.9:1)

_TINTS: dict[str, str] = {}  # a tint -> the colour it lightens


def tint(colour: str, amount: float) -> str:
    """``colour`` mixed with white (``amount`` 1 is the colour, 0 is white): the same meaning, weaker
    (a second field of the same kind, a clear bit of a field)."""
    r, g, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    mix = "#{:02X}{:02X}{:02X}".format(*(round(255 - (255 - c) * amount) for c in (r, g, b)))
    _TINTS.setdefault(mix, base(colour))
    return mix


def base(colour: str) -> str:
    """The palette colour a tint lightens (a palette colour is its own)."""
    return _TINTS.get(colour, colour)


# One meaning per colour in every panel of every mechanism (boards, timelines, charts, the code pane,
# the banners and the keys): a view picks a colour by what it means, by these names, and every key chip
# states the colour's meaning before what it is in that mechanism.  A tint means what its colour means.
HARM = VERMILLION
STEP = BLUE
HOLDS = GREEN
WRITER = PURPLE
WAITS = ORANGE
FIRST_IN_LINE = SIENNA
IN_PROGRESS = YELLOW
LOCKLESS = SKY
FREE = LIGHT
EMPTY = WHITE
UNUSED = GREY
GONE = DARK_GREY
HOLDS_2 = tint(HOLDS, 0.55)  # a second hold beside a first: mmap_lock besides a VMA's lock, the owner field
WAITS_2 = tint(WAITS, 0.55)  # a second waiting field beside a first: tail idx beside tail cpu, must-queue
# A page of a folio (fork): neighbouring folios alternate the two, so a folio's extent shows.
FOLIO = ("#E0D3A8", "#A8996A")
# How often DAMON found a region accessed, 0 .. the most: white to near-black, by lightness alone.
HEAT = ("#FFFFFF", "#E6E6E6", "#C8C8C8", "#A3A3A3", "#7A7A7A", "#525252", "#2E2E2E")
MEANINGS = {
    HARM: "harm",  # a check broken, memory used after it was freed, the change a broken variant makes
    STEP: "this step",  # the current step: the cursor, what it changed, its lines in the code pane
    HOLDS: "holds a lock",
    WRITER: "a writer's hold",  # mmap_lock held for write, its write epoch, the VMAs it write-locked
    WAITS: "waits",  # for a lock, a grace period, a turn
    FIRST_IN_LINE: "waits, first in line",
    IN_PROGRESS: "in progress",  # a grace period running, the pending bit set
    LOCKLESS: "lockless",  # an RCU read-side section, what readers load, a lookup or fast path without a lock
    FREE: "free",  # unlocked, idle, nothing left to wait for
    EMPTY: "nothing",
    UNUSED: "not in use",
    GONE: "gone",  # freed, killed, swapped out
    **{f: "a folio's pages" for f in FOLIO},
    **{h: "accessed (darker: more often)" for h in HEAT[1:]},
}
# Ink: text, lines, outlines and marks; a mark or an outline in ink says what it is beside it, never by its colour.
NEUTRAL = (INK, DARK)

# What a thread (a CPU) is doing; shared by every mechanism's lanes.
IDLE = ("running, holding no lock", FREE)
RCU_READ = ("RCU read-side section", LOCKLESS)
WAITING = ("waiting", WAITS)
DONE = ("left to run (finished)", EMPTY)

FONT = "'DejaVu Sans', 'Helvetica Neue', Arial, sans-serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, monospace"
TITLE_SIZE = "18pt"
TEXT_SIZE = "13pt"
SMALL_SIZE = "11pt"
PROJECTOR_SIZE = "20pt"  # projector mode's status line and code pane
PROJECTOR_CODE_SIZE = "16pt"
# Projector mode's board: its type, marks and height grow by this much where its width keeps the type as
# legible as MIN_PLOT_WIDTH does (13pt type read as 17.5pt, near the status line's 20pt).
PROJECTOR_SCALE = 1.35
WIDTH = 1200  # the width a plot is designed at: a 1280-pixel-wide projector with margins
MAX_WIDTH = 1880  # the widest a player grows (a 1920-pixel projector); it shrinks to a phone's
# Lines the status keeps room for (step, what the kernel does, the call stack, one wrapped): while playing,
# a status that grew or shrank by a line re-laid out the whole page on every frame.
STATUS_LINES = 4
# From this width of the player up the board and the code pane share a row, the board 3/5 of it, so that the
# board keeps MIN_PLOT_WIDTH (a board is drawn for WIDTH and stays legible down to it) and a line of kernel
# code its 420 pixels; below it the code pane goes under the board.  The player's width, not the window's:
# on the course site the sidebars take part of the window, in JupyterLab a file browser.
STAGE_GAP = 16
# Of a plot designed WIDTH wide: narrower, a board's row titles run into its boxes, so on a narrower screen
# (a phone) a plot is drawn as a picture of it at this width would be, smaller as a whole (player.js).
MIN_PLOT_WIDTH = 640
SIDE_BY_SIDE = MIN_PLOT_WIDTH * 5 // 3 + STAGE_GAP + 1
# A row of controls wraps on a narrow screen.
WRAP = ":host { flex-wrap: wrap; gap: 4px 8px; }"
# The stage: the board (a Bokeh column) and the code pane (a Pane), the container whose width decides.
# Bokeh gives each child an inline flex of its own, hence !important.
STAGE = f"""
:host {{ flex-wrap: wrap; gap: 8px {STAGE_GAP}px; align-items: flex-start; container: kstep-stage / inline-size; }}
.bk-Column, .bk-Pane {{ flex: 1 1 100% !important; max-width: 100%; min-width: 0; }}
@container kstep-stage (min-width: {SIDE_BY_SIDE}px) {{
  .bk-Column {{ flex: 3 1 0 !important; }}
  .bk-Pane {{ flex: 2 1 0 !important; }}
}}
"""
# Canvas plots have no CSS colours: in dark mode they are shown inverted, with hues turned back, so each
# colour keeps its meaning on a dark page.
# The page's theme decides, where it has one: the course site's kstep.css sets --kstep-plot-filter (and
# --kstep-scheme, see CSS) from the theme's light/dark switch; a standalone page or a notebook follows the
# system's setting.
PLOT_INVERT = "invert(0.88) hue-rotate(180deg)"
DARK_PLOT = (":host { filter: var(--kstep-plot-filter, none); }\n"
             f"@media (prefers-color-scheme: dark) {{ :host {{ filter: var(--kstep-plot-filter, {PLOT_INVERT}); }} }}")
SCROLL_SIDEWAYS = {"overflow-x": "auto", "max-width": "100%"}
SCREEN_READER_ONLY = {"height": "1px", "overflow": "hidden", "clip-path": "inset(50%)", "white-space": "nowrap"}


def style_figure(p, *, axes: bool = True) -> None:
    """Large, plain fonts and no chart junk: these are projected in lecture halls."""
    p.title.text_font_size = "15pt"
    p.title.text_font = FONT
    p.toolbar.logo = None
    p.outline_line_color = None
    p.background_fill_color = WHITE
    p.border_fill_color = WHITE
    if not axes:
        p.axis.visible = False
        p.grid.visible = False
        return
    for ax in p.axis:
        ax.major_label_text_font_size = SMALL_SIZE
        ax.axis_label_text_font_size = SMALL_SIZE
        ax.axis_label_text_font_style = "normal"
        ax.major_label_text_font = FONT
    p.ygrid.visible = False
    p.xgrid.grid_line_color = LIGHT


def chip_text(colour: str, what: str) -> str:
    """A key chip's words: the colour's one meaning in bold, then what it is in this panel (ink has none)."""
    meaning = MEANINGS.get(base(colour))
    if meaning is None or meaning == what:
        return escape(what)
    return f"<b>{escape(meaning)}</b>: {escape(what)}" if what else f"<b>{escape(meaning)}</b>"


def key_html(title: str, items: Sequence[tuple[str, str]], *, outline: Sequence[tuple[str, str]] = (),
             marks: Sequence[tuple[str, str, str]] = ()) -> str:
    """A colour key: ``items`` are (what, fill colour), ``outline`` (what, outline colour) and
    ``marks`` (symbol, colour, what) for point marks on a timeline."""
    chips = [
        f'<span class="kstep-chip"><span class="kstep-swatch" style="background:{colour}"></span>'
        f'{chip_text(colour, what)}</span>'
        for what, colour in items
    ]
    chips += [
        f'<span class="kstep-chip"><span class="kstep-swatch" style="background:{WHITE};border:3px solid {colour}">'
        f'</span>{chip_text(colour, what)}</span>'
        for what, colour in outline
    ]
    chips += [
        f'<span class="kstep-chip"><span style="color:{colour};font-size:1.3em">{symbol}</span> '
        f'{chip_text(colour, what)}</span>'
        for symbol, colour, what in marks
    ]
    return f'<div class="kstep-key"><b>{escape(title)}</b> {" ".join(chips)}</div>'  # spaces: lines break between chips


def light_dark(light: str, dark: str) -> str:
    """A colour for a light page and one for a dark page (CSS light-dark(): the page's colour scheme picks)."""
    return f"light-dark({light}, {dark})"


MUTED = light_dark(DARK, "#AAAAAA")  # secondary text: 6.9:1 on the status line's grey, light or dark
# Text, code and panes on a light page and on a dark one.  The colour scheme is the page theme's where the
# page says it (--kstep-scheme, set by the course site's kstep.css from its light/dark switch), else the
# system's: a player that followed the system on a site themed the other way wrote light text on white.
CSS = f"""
:host {{ font-family: {FONT}; color: {light_dark(INK, "#DDDDDD")}; overflow-wrap: anywhere;
         color-scheme: var(--kstep-scheme, light dark); }}
.kstep-header {{ font-size: {TITLE_SIZE}; }}
.kstep-header .kstep-sub {{ font-size: {TEXT_SIZE}; color: {MUTED}; margin-top: 4px; }}
.kstep-header .kstep-broken {{ color: {light_dark(HARM_TEXT, "#FF9A66")}; font-weight: bold; }}
.kstep-status {{ font-size: {TEXT_SIZE}; line-height: 1.5; padding: 6px 10px;
                 background: {light_dark("#F6F6F6", "#222428")}; border-left: 6px solid {STEP};
                 min-height: {STATUS_LINES * 1.5}em; }}
.kstep-stepno {{ font-weight: bold; margin-right: 0.6em; }}
.kstep-label, code {{ font-family: {MONO}; background: {light_dark("#E8EEF4", "#2A3440")}; padding: 0 4px;
                      border-radius: 3px; }}
.kstep-where, .kstep-key a {{ color: {light_dark(STEP, tint(STEP, 0.55))}; }}
.kstep-where {{ font-family: {MONO}; font-size: {SMALL_SIZE}; margin-left: 0.6em; }}
.kstep-what {{ color: {MUTED}; }}
.kstep-change {{ font-size: {SMALL_SIZE}; border-collapse: collapse; margin-top: 6px; width: 100%;
                 table-layout: fixed; }}
.kstep-change th, .kstep-change td {{ border: 1px solid {light_dark(LIGHT, "#333333")}; padding: 4px 8px;
                                      vertical-align: top; text-align: left; overflow-wrap: anywhere; }}
.kstep-change .kstep-source {{ max-height: 12em; }}
.kstep-on {{ font-weight: bold; margin-left: 0.3em; }}
.kstep-stack {{ font-family: {MONO}; font-size: {SMALL_SIZE}; color: {MUTED}; overflow-wrap: anywhere; }}
.kstep-banner {{ font-size: {TITLE_SIZE}; padding: 10px 14px; border-radius: 4px; color: {WHITE}; }}
.kstep-banner.violation {{ background: {HARM_TEXT}; }}
.kstep-banner.finished, .kstep-banner.stopped {{ background: {DARK}; }}  /* ✓ and ■ say which */
.kstep-banner .kstep-message {{ font-size: {TEXT_SIZE}; margin-top: 4px; }}
/* The code pane keeps one height whatever it shows (an excerpt of 5 lines or 500, or a line of text): a
   pane that grew or shrank made BokehJS lay out the whole page again, every plot with it, on each step. */
.kstep-code {{ font-size: {SMALL_SIZE}; margin-top: 4px; height: 16em; display: flex; flex-direction: column; }}
@container kstep-stage (min-width: {SIDE_BY_SIDE}px) {{ .kstep-code {{ height: 30em; }} }}  /* beside the board */
.kstep-code .kstep-source {{ flex: 1 1 0; min-height: 0; max-height: none; }}
.kstep-code-empty {{ color: {MUTED}; padding: 4px 10px; }}
.kstep-code-where {{ font-family: {MONO}; color: {MUTED}; padding: 2px 10px; }}
.kstep-whole {{ font-family: {FONT}; }}
.kstep-source {{ font-family: {MONO}; font-size: {SMALL_SIZE}; line-height: 1.35; max-height: 14em; overflow: auto;
                 margin: 0; padding: 4px 0; background: {light_dark("#FBFBF8", "#1A1A18")};
                 border: 1px solid {light_dark(LIGHT, "#333333")}; }}
/* A long line wraps, its rest indented past the line numbers: no code pane scrolls sideways, on a phone either. */
.kstep-line {{ display: block; white-space: pre-wrap; padding: 0 8px 0 5.5em; text-indent: -5.5em; }}
.kstep-lineno {{ display: inline-block; width: 4.5em; padding-right: 1em; text-align: right; text-indent: 0;
                 color: {light_dark("#5E5E5E", "#9A9A9A")}; user-select: none; }}
.kstep-marked {{ background: {light_dark(tint(STEP, 0.14), "#17324A")}; border-left: 4px solid {STEP}; }}
.bk-btn-success {{ background: {PLAY}; border-color: {PLAY_DOWN}; color: {WHITE}; }}
.bk-btn-success:hover, .bk-btn-success.bk-active {{ background: {PLAY_DOWN}; border-color: {PLAY_DOWN}; }}
/* Every control shows where the keyboard is, on a light page and on a dark one. */
.bk-btn:focus-visible, select:focus-visible, input:focus-visible, .noUi-handle:focus-visible {{
  outline: 3px solid {STEP} !important; outline-offset: 2px; box-shadow: 0 0 0 5px {WHITE} !important; }}
.bk-btn .kstep-when-playing, .bk-btn.bk-active .kstep-when-paused {{ display: none; }}
.bk-btn.bk-active .kstep-when-playing {{ display: inline; }}
.kstep-key {{ font-size: {SMALL_SIZE}; line-height: 2; columns: 22em; column-gap: 2em; }}
.kstep-chip {{ margin-right: 1.2em; display: inline-block; max-width: 100%; line-height: 1.5; }}
/* ✓ and ✗ say how it went */
.kstep-ask {{ font-size: {TEXT_SIZE}; padding: 4px 10px; border-left: 6px solid {DARK}; }}
.kstep-hint {{ color: {MUTED}; font-size: {SMALL_SIZE}; }}
.kstep-score {{ font-size: {SMALL_SIZE}; padding-top: 1.6em; }}
.kstep-state caption {{ text-align: left; }}
/* Projector mode (player.js gives the status and code panes this class): type read from the back row. */
:host(.kstep-projector) .kstep-status {{ font-size: {PROJECTOR_SIZE}; }}
:host(.kstep-projector) .kstep-code, :host(.kstep-projector) .kstep-source {{ font-size: {PROJECTOR_CODE_SIZE}; }}
.kstep-swatch {{ display: inline-block; width: 1.4em; height: 0.9em; vertical-align: middle;
                 margin-right: 0.4em; border: 1px solid {DARK}; }}
"""
