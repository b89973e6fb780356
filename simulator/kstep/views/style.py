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
SIENNA = "#A6611A"  # a darker orange: waiting, but while holding mmap_lock for write
GREY = "#BBBBBB"
DARK_GREY = "#888888"
LIGHT = "#EEEEEE"
DARK = "#555555"
INK = "#222222"
WHITE = "#FFFFFF"
NONE = "#FFFFFF00"  # a transparent fill

# What a thread (a CPU) is doing; shared by every mechanism's lanes.
IDLE = ("running", LIGHT)
RCU_READ = ("RCU read-side section", SKY)
WAITING = ("waiting", ORANGE)
DONE = ("finished", WHITE)

FONT = "'DejaVu Sans', 'Helvetica Neue', Arial, sans-serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, monospace"
TITLE_SIZE = "18pt"
TEXT_SIZE = "13pt"
SMALL_SIZE = "11pt"
WIDTH = 1200  # fits a 1280-pixel-wide projector with margins


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


def key_html(title: str, items: Sequence[tuple[str, str]], *, outline: Sequence[tuple[str, str]] = (),
             marks: Sequence[tuple[str, str, str]] = ()) -> str:
    """A colour key: ``items`` are (meaning, fill colour), ``outline`` (meaning, outline colour) and
    ``marks`` (symbol, colour, meaning) for point marks on a timeline."""
    chips = [
        f'<span class="kstep-chip"><span class="kstep-swatch" style="background:{colour}"></span>{escape(what)}</span>'
        for what, colour in items
    ]
    chips += [
        f'<span class="kstep-chip"><span class="kstep-swatch" style="background:{WHITE};border:3px solid {colour}">'
        f'</span>{escape(what)}</span>'
        for what, colour in outline
    ]
    chips += [
        f'<span class="kstep-chip"><span style="color:{colour};font-size:1.3em">{symbol}</span> {escape(what)}</span>'
        for symbol, colour, what in marks
    ]
    return f'<div class="kstep-key"><b>{escape(title)}</b> {"".join(chips)}</div>'


CSS = f"""
:host {{ font-family: {FONT}; color: {INK}; }}
.kstep-header {{ font-size: {TITLE_SIZE}; }}
.kstep-header .kstep-sub {{ font-size: {TEXT_SIZE}; color: {DARK}; margin-top: 4px; }}
.kstep-header .kstep-broken {{ color: {VERMILLION}; font-weight: bold; }}
.kstep-status {{ font-size: {TEXT_SIZE}; line-height: 1.5; padding: 6px 10px; background: #F6F6F6;
                 border-left: 6px solid {BLUE}; min-height: 3.2em; }}
.kstep-stepno {{ font-weight: bold; margin-right: 0.6em; }}
.kstep-label, code {{ font-family: {MONO}; background: #E8EEF4; padding: 0 4px; border-radius: 3px; }}
.kstep-where {{ font-family: {MONO}; font-size: {SMALL_SIZE}; color: {BLUE}; margin-left: 0.6em; }}
.kstep-what {{ color: {DARK}; }}
.kstep-banner {{ font-size: {TITLE_SIZE}; padding: 10px 14px; border-radius: 4px; color: {WHITE}; }}
.kstep-banner.violation {{ background: {VERMILLION}; }}
.kstep-banner.finished {{ background: {GREEN}; }}
.kstep-banner.stopped {{ background: {DARK}; }}
.kstep-banner .kstep-message {{ font-size: {TEXT_SIZE}; margin-top: 4px; }}
.kstep-code {{ font-size: {SMALL_SIZE}; margin-top: 4px; }}
.kstep-code-empty {{ color: {DARK}; padding: 4px 10px; }}
.kstep-code-where {{ font-family: {MONO}; color: {DARK}; padding: 2px 10px; }}
.kstep-whole {{ font-family: {FONT}; }}
.kstep-source {{ font-family: {MONO}; font-size: {SMALL_SIZE}; line-height: 1.35; max-height: 14em; overflow: auto;
                 margin: 0; padding: 4px 0; background: #FBFBF8; border: 1px solid {LIGHT}; }}
.kstep-line {{ display: block; white-space: pre; padding-right: 8px; }}
.kstep-lineno {{ display: inline-block; width: 4.5em; padding-right: 1em; text-align: right; color: {DARK_GREY};
                 user-select: none; }}
.kstep-marked {{ background: #DCEAF7; border-left: 4px solid {BLUE}; }}
.bk-btn .kstep-when-playing, .bk-btn.bk-active .kstep-when-paused {{ display: none; }}
.bk-btn.bk-active .kstep-when-playing {{ display: inline; }}
.kstep-key {{ font-size: {SMALL_SIZE}; line-height: 2; }}
.kstep-chip {{ margin-right: 1.2em; white-space: nowrap; }}
.kstep-swatch {{ display: inline-block; width: 1.4em; height: 0.9em; vertical-align: middle;
                 margin-right: 0.4em; border: 1px solid {DARK}; }}
"""
