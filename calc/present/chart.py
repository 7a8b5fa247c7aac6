"""Charts as plain data, and the one small renderer that draws them as SVG.

A chart is a handful of frozen dataclasses: horizontal bars of stacked segments (`Bars`) or
points and lines over two axes (`Plot`), each with its scale's domain, its reference lines and
the figures it states. `figure_html` draws it as a <figure>: a title, a sentence stating its
figures, the SVG (role="img", labelled by both) and the figures as a table a reader can open.
The pages call it at build time and the calculator calls the same function in Pyodide on every
edit, so a chart costs no download. Colours are CSS classes (`tone-*`) the site's stylesheet
gives a value in each colour scheme; text is drawn in currentColor. Every number drawn as text
comes from `fmt` in the caller; the renderer only places marks, and writes tick labels with `fmt`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from calc.units import fmt

Number = int | Fraction
Coordinate = int | float | Fraction  # a point's place: a trace's poll times are the catalog's plain numbers

WIDTH = 360  # viewBox units; the SVG scales to the column: ~0.9 px a unit on a 360 px phone
FONT = 14
SMALL = 12
BAR = 20  # a bar's height
ROW = 46  # a row: its label line, its bar, and a gap
PAD = 20


@dataclass(frozen=True)
class Axis:
    """A linear scale from `low` to `high`, ticked and labelled with fmt(value, unit, digits)."""

    unit: str
    low: Number
    high: Number
    title: str = ""
    digits: int = 0


@dataclass(frozen=True)
class Segment:
    """One part of a stacked bar: its name, exact value, colour and the label drawn on it."""

    name: str
    value: Number
    tone: str
    text: str = ""


@dataclass(frozen=True)
class Mark:
    """A value marked across one bar only (MemAvailable on that start's box, say)."""

    value: Number
    label: str
    tone: str = "limit"


@dataclass(frozen=True)
class Row:
    label: str
    segments: tuple[Segment, ...]
    marks: tuple[Mark, ...] = ()
    note: str = ""  # drawn after the bar's end: its total, a verdict


@dataclass(frozen=True)
class Rule:
    """A reference line across the whole chart: the available memory, the guard's floor."""

    value: Number
    label: str
    tone: str = "limit"


@dataclass(frozen=True)
class Series:
    """Points over two axes; joined by a line when `line`, each drawn as a dot when `dots`."""

    name: str
    points: tuple[tuple[Coordinate, Coordinate], ...]
    tone: str
    line: bool = True
    dots: bool = True


@dataclass(frozen=True)
class Event:
    """A numbered marker on a point, explained in the figures table (log lines are long)."""

    x: Coordinate
    y: Coordinate
    number: str
    text: str


@dataclass(frozen=True)
class Band:
    """An interval of x shaded across the plot (the kernel-init window)."""

    low: Coordinate
    high: Coordinate
    label: str
    tone: str = "band"


@dataclass(frozen=True)
class Bars:
    id: str
    title: str
    summary: str
    axis: Axis
    rows: tuple[Row, ...]
    rules: tuple[Rule, ...] = ()
    figures: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Plot:
    id: str
    title: str
    summary: str
    x: Axis
    y: Axis
    series: tuple[Series, ...]
    rules: tuple[Rule, ...] = ()  # horizontal, at y values
    events: tuple[Event, ...] = ()
    bands: tuple[Band, ...] = ()
    figures: tuple[tuple[str, str], ...] = ()
    height: int = 240


Chart = Bars | Plot


# --- scales and ticks -------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """Maps a value of the axis's domain to SVG units between `start` and `end`."""

    low: Number
    high: Number
    start: float
    end: float

    def __call__(self, value: Coordinate) -> float:
        # geometry only: placed to 0.01 of a unit, so floats do (the figures stay exact in labels)
        span = float(self.high) - float(self.low)
        share = (float(value) - float(self.low)) / span if span else 0.0
        return round(self.start + share * (self.end - self.start), 2)


def nice_high(value: Number, step_unit: int = 1) -> Fraction:
    """A round upper end for an axis: the next 1, 2 or 5 x 10^k above `value` in `step_unit`s."""
    if value <= 0:
        return Fraction(step_unit)
    x = Fraction(value) / step_unit
    magnitude = Fraction(10) ** math.floor(math.log10(x))
    for m in ("1", "1.2", "1.5", "2", "2.5", "3", "4", "5", "6", "8", "10"):
        if x <= magnitude * Fraction(m):
            return magnitude * Fraction(m) * step_unit
    return magnitude * 10 * step_unit


def ticks(low: Number, high: Number, step_unit: int = 1, most: int = 5) -> list[Fraction]:
    """Round tick values from low to high, at most `most` of them, a 1, 2 or 5 step apart."""
    span = (Fraction(high) - Fraction(low)) / step_unit
    if span <= 0:
        return [Fraction(low)]
    raw = span / most
    magnitude = Fraction(10) ** math.floor(math.log10(raw))
    step = next(magnitude * m for m in (1, 2, 5, 10) if magnitude * m >= raw) * step_unit
    first = math.ceil(Fraction(low) / step) * step
    out, value = [], Fraction(first)
    while value <= high:
        out.append(value)
        value += step
    return out


UNIT_STEP = {"GiB": 2**30, "GB": 10**9, "MiB": 2**20, "e9": 10**9}


def _tick_label(value: Fraction, axis: Axis) -> str:
    return fmt(value, axis.unit, axis.digits) if axis.unit != "e9" else fmt(value, "e9", 0)


# --- SVG --------------------------------------------------------------------------------------


def esc(text: object) -> str:
    """Text for SVG, as html.escape(quote=True) gives it: the html module imports html.entities,
    which the calculator page would download for this alone."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#x27;")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def text_width(text: str, size: int = FONT) -> float:
    """An estimate of a label's width in viewBox units, to decide whether it fits on its bar."""
    return len(text) * size * 0.56


def _text(x: float, y: float, text: str, cls: str = "", anchor: str = "start", size: int = FONT) -> str:
    klass = f' class="{cls}"' if cls else ""
    size_attr = f' font-size="{size}"' if size != FONT else ""
    return f'<text x="{x:g}" y="{y:g}" text-anchor="{anchor}"{size_attr}{klass}>{esc(text)}</text>'


def _x_axis(axis: Axis, scale: Scale, y: float) -> list[str]:
    out = [f'<line class="axis" x1="{scale.start:g}" x2="{scale.end:g}" y1="{y:g}" y2="{y:g}"/>']
    for t in ticks(axis.low, axis.high, UNIT_STEP.get(axis.unit, 1)):
        x = scale(t)
        out.append(f'<line class="tick" x1="{x:g}" x2="{x:g}" y1="{y:g}" y2="{y + 4:g}"/>')
        label = _tick_label(t, axis)
        half = text_width(label, SMALL) / 2
        anchor, at = ("end", WIDTH - 2) if x + half > WIDTH - 2 else ("start", 2) if x - half < 2 else ("middle", x)
        out.append(_text(at, y + 16, label, "tick-label", anchor, SMALL))
    if axis.title:
        out.append(_text(scale.end, y + 32, axis.title, "axis-title", "end", SMALL))
    return out


def wrap(text: str, width: float, size: int = FONT) -> list[str]:
    """A label broken at spaces into lines that fit `width` viewBox units."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_width(lines[-1] + " " + word, size) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _note_fits_after(chart: Bars, row: Row, scale: Scale) -> bool:
    """Whether a row's note fits after its bar without crossing a mark, a rule or the edge."""
    x0 = scale(sum((seg.value for seg in row.segments), Fraction(0))) + 4
    x1 = x0 + text_width(row.note, SMALL)
    crossing = [scale(m.value) for m in row.marks] + [scale(r.value) for r in chart.rules]
    return x1 <= WIDTH - 2 and not any(x0 - 3 <= x <= x1 + 3 for x in crossing)


def label_with_note(row: Row) -> str:
    """A row's label with its note, for a note that has no room after the bar (the dash and the
    note stay on one line)."""
    return f"{row.label} \u2014\u00a0{row.note}"


def bars_svg(chart: Bars) -> str:
    scale = Scale(chart.axis.low, chart.axis.high, PAD, WIDTH - PAD)
    top = PAD + (FONT + 6) * len(chart.rules)
    # a note that does not fit clear after its bar goes on the row's label line instead
    after = [bool(row.note) and _note_fits_after(chart, row, scale) for row in chart.rows]
    labels = [wrap(row.label if ok or not row.note else label_with_note(row), WIDTH - 2 * PAD) for row, ok in zip(chart.rows, after, strict=True)]
    line = FONT + 3
    height = top + sum(ROW + line * (len(lines) - 1) for lines in labels) + 40
    body: list[str] = []
    for n, rule in enumerate(chart.rules):
        x = scale(rule.value)
        label_y = PAD + FONT + (FONT + 6) * n - 4
        anchor = "end" if x > WIDTH / 2 else "start"
        body.append(_text(x + (-3 if anchor == "end" else 3), label_y, rule.label, f"rule-label tone-{rule.tone}", anchor, SMALL))
        body.append(
            f'<line class="rule tone-{rule.tone}" data-value="{_num(rule.value)}" x1="{x:g}" x2="{x:g}" y1="{label_y - FONT + 2:g}" y2="{height - 36:g}"/>'
        )
    y = top
    for row, lines, note_after in zip(chart.rows, labels, after, strict=True):
        for k, text in enumerate(lines):
            body.append(_text(PAD, y + FONT + line * k, text, "row-label"))
        bar_y = y + FONT + 5 + line * (len(lines) - 1)
        y += ROW + line * (len(lines) - 1)
        at: Number = 0
        for seg in row.segments:
            x0, x1 = scale(at), scale(at + seg.value)
            at += seg.value
            body.append(
                f'<rect class="seg tone-{seg.tone}" data-row="{esc(row.label)}" data-name="{esc(seg.name)}" data-value="{_num(seg.value)}" '
                f'x="{x0:g}" y="{bar_y:g}" width="{round(x1 - x0, 2):g}" height="{BAR}"><title>{esc(seg.name)}: {esc(seg.text)}</title></rect>'
            )
            if seg.text and seg.text != row.note and text_width(seg.text, SMALL) + 6 <= x1 - x0:
                body.append(_text((x0 + x1) / 2, bar_y + BAR / 2 + 4, seg.text, f"on-bar on-tone-{seg.tone}", "middle", SMALL))
        end = scale(at)
        for mark in row.marks:
            x = scale(mark.value)
            body.append(
                f'<line class="mark tone-{mark.tone}" data-value="{_num(mark.value)}" x1="{x:g}" x2="{x:g}" y1="{bar_y - 4:g}" y2="{bar_y + BAR + 4:g}"/>'
            )
        if note_after:  # after the bar, clear of its marks (else it is on the label line above)
            body.append(_text(end + 4, bar_y + BAR / 2 + 4, row.note, "row-note", "start", SMALL))
    body += _x_axis(chart.axis, scale, height - 36)
    return _svg(chart, height, body, f'data-x0="{scale.start:g}" data-x1="{scale.end:g}" data-low="{_num(chart.axis.low)}" data-high="{_num(chart.axis.high)}"')


LEFT = 60  # room for the y axis' tick labels


def plot_svg(chart: Plot) -> str:
    height = chart.height
    top = PAD + FONT + 6  # the y axis' title sits above the plot
    bottom = height - 40
    xs = Scale(chart.x.low, chart.x.high, LEFT, WIDTH - PAD)
    ys = Scale(chart.y.low, chart.y.high, bottom, top)
    body: list[str] = []
    for band in chart.bands:
        x0, x1 = xs(band.low), xs(band.high)
        body.append(
            f'<rect class="band tone-{band.tone}" x="{x0:g}" y="{top:g}" width="{round(x1 - x0, 2):g}" height="{bottom - top:g}"><title>{esc(band.label)}</title></rect>'
        )
    for t in ticks(chart.y.low, chart.y.high, UNIT_STEP.get(chart.y.unit, 1)):
        y = ys(t)
        body.append(f'<line class="grid" x1="{LEFT:g}" x2="{WIDTH - PAD:g}" y1="{y:g}" y2="{y:g}"/>')
        body.append(_text(LEFT - 4, y + 4, _tick_label(t, chart.y), "tick-label", "end", SMALL))
    if chart.y.title:
        body.append(_text(4, PAD, chart.y.title, "axis-title", "start", SMALL))
    for rule in chart.rules:
        y = ys(rule.value)
        body.append(f'<line class="rule tone-{rule.tone}" data-value="{_num(rule.value)}" x1="{LEFT:g}" x2="{WIDTH - PAD:g}" y1="{y:g}" y2="{y:g}"/>')
        body.append(_text(WIDTH - PAD - 2, y - 4, rule.label, f"rule-label tone-{rule.tone}", "end", SMALL))
    for s in chart.series:
        points = [(xs(x), ys(y)) for x, y in s.points]
        if s.line and len(points) > 1:
            d = " ".join(f"{x:g},{y:g}" for x, y in points)
            body.append(f'<polyline class="line tone-{s.tone}" data-name="{esc(s.name)}" points="{d}"/>')
        if s.dots:
            for (x, y), (vx, vy) in zip(points, s.points, strict=True):
                body.append(
                    f'<circle class="dot tone-{s.tone}" data-name="{esc(s.name)}" data-x="{_num(vx)}" data-y="{_num(vy)}" cx="{x:g}" cy="{y:g}" r="4"/>'
                )
    for e in chart.events:
        x, y = xs(e.x), ys(e.y)
        body.append(f'<g class="event" data-x="{_num(e.x)}" data-y="{_num(e.y)}"><circle class="event-marker" cx="{x:g}" cy="{y - 16:g}" r="8"/>')
        body.append(_text(x, y - 12, e.number, "event-number", "middle", SMALL) + f"<title>{esc(e.text)}</title></g>")
    body += _x_axis(chart.x, xs, bottom)
    data = f'data-x0="{xs.start:g}" data-x1="{xs.end:g}" data-y0="{ys.start:g}" data-y1="{ys.end:g}"'
    return _svg(chart, height, body, data)


def _num(value: Coordinate) -> str:
    """An exact value as an attribute, for tests and scripts: 10000000000, or 27/2."""
    return str(Fraction(value)) if not isinstance(value, int) else str(value)


def _svg(chart: Chart, height: float, body: list[str], data: str) -> str:
    cid = slug(chart.id)
    return (
        f'<svg class="chart-svg" viewBox="0 0 {WIDTH} {height:g}" role="img" aria-labelledby="{cid}-title {cid}-desc" '
        f'font-size="{FONT}" {data}><title>{esc(chart.title)}</title>' + "".join(body) + "</svg>"
    )


def svg(chart: Chart) -> str:
    return bars_svg(chart) if isinstance(chart, Bars) else plot_svg(chart)


def _legend(chart: Chart) -> str:
    """A swatch for each segment or series and a line for each mark and rule. A series drawn only
    as a line shows a line and one drawn only as dots a dot, so two series of one tone differ."""
    if isinstance(chart, Bars):
        seen = {(s.name, s.tone, ""): None for r in chart.rows for s in r.segments}
        lines = {(m.label, m.tone): None for r in chart.rows for m in r.marks}
        lines.update({(r.label, r.tone): None for r in chart.rules})
    else:
        seen = {(s.name, s.tone, "" if s.dots and s.line else " line" if s.line else " dot"): None for s in chart.series}
        lines = {(r.label, r.tone): None for r in chart.rules}
        lines.update({(b.label, b.tone): None for b in chart.bands})
    named = {(name, tone) for name, tone, _ in seen}
    items = [f'<li><span class="swatch{shape} tone-{tone}" aria-hidden="true"></span>{esc(name)}</li>' for name, tone, shape in seen]
    items += [f'<li><span class="swatch line tone-{tone}" aria-hidden="true"></span>{esc(name)}</li>' for name, tone in lines if (name, tone) not in named]
    return f'<ul class="chart-legend">{"".join(items)}</ul>' if len(items) > 1 or isinstance(chart, Plot) else ""


def figures_table(chart: Chart) -> str:
    rows = list(chart.figures)
    if isinstance(chart, Plot):
        rows += [(f"({e.number}) {e.text}", "") for e in chart.events if e.text]
    body = "".join(f'<tr><th scope="row">{esc(a)}</th><td>{esc(b)}</td></tr>' for a, b in rows)
    cid = slug(chart.id)
    return (
        f'<details class="chart-data"><summary>The figures drawn</summary>'
        f'<div class="scroll-region" role="region" tabindex="0" aria-label="{esc(chart.title)}: the figures drawn">'
        f'<table class="calc-data" id="{cid}-figures"><thead><tr><th scope="col">What</th><th scope="col">Figure</th></tr></thead><tbody>{body}</tbody></table></div></details>'
    )


def figure_html(chart: Chart) -> str:
    """The chart as the page and the calculator show it, on one line (a raw HTML block for
    Markdown, which a blank line would end)."""
    cid = slug(chart.id)
    return (
        f'<figure class="chart" id="chart-{cid}" data-chart="{cid}">'
        f'<figcaption><strong id="{cid}-title">{esc(chart.title)}</strong> <span id="{cid}-desc">{esc(chart.summary)}</span></figcaption>'
        + _legend(chart)
        + svg(chart)
        + figures_table(chart)
        + "</figure>"
    )
