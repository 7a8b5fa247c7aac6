"""Macros every page uses: a figure, a checked literal, a source document's figure beside the
catalog's, a difference as printed, catalog text quoted or set as code, a pin, a chart."""

from __future__ import annotations

from calc import units
from calc.present import chart, charts
from calc.units import parse_size
from hooks.figures import literal_unit, render, same, text, value_of
from hooks.figures import source_text as _source_text
from hooks.pagemacros.build import Build

CHARTS = ("rank_holds", "pin_matrix", "startup_timeline", "guard_trace", "length_fit", "bytes_per_token", "plan_budget")


def fig(item: object, unit: str = "GiB", digits: int = 2, down: bool = False, source: str | None = None, up: bool = False) -> str:
    """A figure rendered from the catalog or calc."""
    return render(item, unit, digits, down, source, up)


def checked(build: Build, literal: str, item: object, down: bool = False) -> str:
    """A figure the author wrote; the build recomputes it and fails when it disagrees."""
    ok, shown = same(literal, item, down)
    if not ok:
        value = value_of(item)
        build.problem(
            f"{build.page_where(literal)}: the page says {literal!r}, the catalog gives {shown!r} "
            f"(entry: {value.entry or 'derived by calc'}; source: {value.source})"
        )
    return render(item, *literal_unit(literal), down=down)


def doc_said(build: Build, literal: str, item: object, down: bool = False) -> str:
    """The catalog's figure beside a source document's hand arithmetic that disagrees with it."""
    ok, shown = same(literal, item, down)
    if ok:
        build.problem(f"{build.page_where(literal)}: the source document's {literal!r} now agrees with the catalog; drop the note")
    return f'{render(item, *literal_unit(literal), down=down)} <span class="doc-said">(the <a href="{build.glossary_url()}#source-document">source document</a> says <s>{literal}</s>)</span>'


def doc_said_range(build: Build, literal: str, item: object, down: bool = False) -> str:
    """doc_said for a range the source document gave, such as "65-70 GB"; the catalog's figure
    is shown in the range's unit, and it must lie outside the range. down: a budget left over,
    rounded down as every limit is."""
    low, _, high = literal.partition("-")
    unit, digits = literal_unit(high)
    value = value_of(item).exact
    if parse_size(low + " " + unit) <= value <= parse_size(high):
        build.problem(f"{build.page_where(literal)}: the source document's {literal!r} now holds the catalog's figure; drop the note")
    return f'{render(item, unit, digits, down=down)} <span class="doc-said">(the <a href="{build.glossary_url()}#source-document">source document</a> says <s>{literal}</s>)</span>'


def less(a: object, b: object, unit: str = "GiB", digits: int = 2) -> str:
    """A difference of two figures printed on the page, worked from them as printed."""
    return render(units.shown(value_of(a).exact, unit, digits) - units.shown(value_of(b).exact, unit, digits), unit, digits)


def source_text(text: str | None) -> str:
    """A catalog source string, quoted verbatim (its figures are the source's own words)."""
    return _source_text(text)


def pin(text: str) -> int:
    """A pin typed as people type it: pin("10e9")."""
    return parse_size(text, "pin")


def draw(build: Build, name: str, *args: object, **kwargs: object) -> str:
    """A chart from calc.present.charts, drawn at build time: {{ draw("rank_holds") }}."""
    if name not in CHARTS:
        raise ValueError(f"draw({name!r}): no such chart, expected one of {', '.join(CHARTS)}")
    return chart.figure_html(getattr(charts, name)(build.catalog, *args, **kwargs))


def code(value: object) -> str:
    """Catalog text set as code: {{ d.settings.kv_dtype | code }}, escaped like any catalog text."""
    return f"<code>{text(value)}</code>"


MACROS = (fig, checked, doc_said, doc_said_range, less, source_text, pin, draw)
FILTERS = (code,)
