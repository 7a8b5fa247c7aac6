"""The figure contract of the pages: every figure is rendered from the catalog through calc, or
written as a checked literal that the build recomputes; a bare figure fails the build."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from calc.catalog.loader import read_yaml_dir
from calc.catalog.model import Catalog, build
from calc.catalog.spec import Figure
from calc.engine.gate import Amount
from calc.units import fmt


class FigureError(Exception):
    """A figure on a page that the catalog does not back."""


# Problems found while a page's macros render, by page; the site hook fails the build with them
# once macros are done, so an author sees every problem of the page in one clean message.
PROBLEMS: dict[str, list[str]] = {}


def report_problem(page_uri: str, message: str) -> None:
    PROBLEMS.setdefault(page_uri, []).append(message)


def take_problems(page_uri: str) -> list[str]:
    return PROBLEMS.pop(page_uri, [])


_cache: dict[str, tuple[tuple[tuple[str, int], ...], dict[str, object], Catalog]] = {}


def _load(root: str | Path) -> tuple[dict[str, object], Catalog]:
    """The catalog files read once per build (and again only when one changes): raw and validated."""
    directory = Path(root) / "catalog"
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in directory.glob("*.yaml")))
    cached = _cache.get(str(directory))
    if cached and cached[0] == stamp:
        return cached[1], cached[2]
    raw = as_catalog_text(read_yaml_dir(directory))
    assert isinstance(raw, dict)  # the files by name, as read_yaml_dir gives them
    catalog = build(raw)
    _cache[str(directory)] = (stamp, raw, catalog)
    return raw, catalog


class CatalogText(str):
    """A string as the catalog holds it (a name, a source, a note): text to show, never markup.
    The site's pages escape it wherever it lands, in a macro's table or a page's {{ x.source }}."""


def as_catalog_text(raw: object) -> object:
    """The raw catalog with every string marked as catalog text (keys stay plain)."""
    if isinstance(raw, str):
        return CatalogText(raw)
    if isinstance(raw, dict):
        return {k: as_catalog_text(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return [as_catalog_text(v) for v in raw]
    return raw


# Characters that markdown, HTML or the macros' templates would read as markup, written as
# character references: a name holding <img onerror=...>, a | in a table cell, {{ ... }}, *, _ or
# a backquote shows as typed. A line break becomes a space, so a table row stays one row.
_MARKUP = {c: f"&#{ord(c)};" for c in "&<>\"'`*_{}[]|#!~\\"}
_MARKUP.update({"\n": " ", "\r": " "})


_MARKUP_TABLE = str.maketrans(_MARKUP)


def text(value: object) -> str:
    """Catalog text as it goes onto a page: shown exactly as written, never read as markup."""
    return str(value).translate(_MARKUP_TABLE)


def finalize(value: object) -> object:
    """The templates' last step for every {{ ... }}: catalog text is escaped, macro output is not."""
    return text(value) if isinstance(value, CatalogText) else value


def site_catalog(root: str | Path) -> Catalog:
    return _load(root)[1]


def site_catalog_raw(root: str | Path) -> dict[str, object]:
    """The catalog files' contents as read, which the browser receives as JSON."""
    return _load(root)[0]


# --- rendering ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A figure's exact value with its provenance and the catalog entry it came from."""

    exact: int | Fraction
    source: str
    entry: str
    approximate: bool = False


def value_of(item: object, source: str | None = None, entry: str | None = None) -> Value:
    if isinstance(item, Figure):
        assert item.value is not None, f"{item.entry} is a range; render min and max"
        return Value(item.value, source or f"{item.provenance}: {item.source}" if item.source else item.provenance, entry or item.entry, item.approximate)
    if isinstance(item, Amount):
        return Value(item.bytes, source or item.source, entry or item.entry)
    if isinstance(item, Value):
        return item
    if isinstance(item, (int, float, Fraction)) and not isinstance(item, bool):
        return Value(Fraction(item), source or "derived by calc", entry or "")
    raise FigureError(f"cannot render {item!r} as a figure")


def render(item: object, unit: str, digits: int = 2, down: bool = False, source: str | None = None, up: bool = False) -> str:
    """A figure as the pages show it: formatted by calc.units.fmt, its source in the title."""
    value = value_of(item, source)
    shown = ("~" if value.approximate else "") + fmt(value.exact, unit, digits, down, up)
    # The source is in the title for a mouse, and shown beside the figure when it has focus, so a
    # keyboard (Tab) or a tap reaches it too; screen readers read the title as its description.
    return f'<span class="fig" tabindex="0" title="{text(value.source)}">{shown}</span>'


def source_text(source: str | None) -> str:
    """A catalog source string (it may quote a log line with its figures), shown verbatim."""
    return f'<span class="src">{text(source)}</span>' if source else ""


# --- checked literals -----------------------------------------------------------------------

_LITERAL = re.compile(r"^(?P<approx>~)?(?P<num>[0-9][0-9,]*(?:\.(?P<dec>[0-9]+))?)(?P<e9>e9)?\s?(?P<unit>GiB|GB|MiB|B|M tokens|tokens|x|%)?$")


def literal_unit(literal: str) -> tuple[str, int]:
    """The fmt unit and digits a literal was written with: "110.0 GiB" -> ("GiB", 1)."""
    match = _LITERAL.match(literal.strip())
    if not match:
        raise FigureError(f"checked literal {literal!r}: expected a number with a unit, such as 110.0 GiB, 14.8e9 B, 181,777 tokens or 1.39x")
    digits = len(match["dec"] or "")
    if match["e9"]:
        return "e9", digits
    unit = match["unit"] or "plain"
    if unit == "plain" and "," in match["num"]:
        unit = "count"
    return unit, digits


def same(literal: str, item: object, down: bool = False) -> tuple[bool, str]:
    unit, digits = literal_unit(literal)
    shown = fmt(value_of(item).exact, unit, digits, down)
    return shown == literal.strip().lstrip("~").replace("\u00a0", " "), shown


def line_of(source: str, needle: str) -> int:
    index = source.find(needle)
    return source.count("\n", 0, index) + 1 if index >= 0 else 0


# --- bare figures ---------------------------------------------------------------------------
#
# A figure is any number a reader could use: a size, a token count, a ratio or percentage (also
# in words), seconds, a rate, a fraction, a count of seats, polls, contexts or the like, any
# grouped or decimal number, and a number standing alone in a table cell. It must come from
# fig()/checked() (or be quoted verbatim from a catalog source). The check runs on the page as
# written and again on the page as the macros render it, so generated text is held to it too.
#
# Exempt, and only these: dates (2026-10-24, 2026-09); version numbers and image tags (0.26.0,
# v0.26.0-aarch64, 26.07-py3, SM 12.1); flag names and code in backticks; section numbers
# (section 3.2); identifiers written with their noun (generation 235, gen 234, issue 51041,
# PR 37673, engine 2); and digits inside a name (GB10, Qwen3.8, V4, H20, RTX 5090, 27B, 200 GbE).
# Code fences the macros render (command-line output and log lines, printed by calc) and the
# calculators' form markup (typing examples, option labels) are left to their own tests: the
# calculators' results are calc's data-fig figures, which the browser tests compare with calc.

_NUMBER = r"(?<![\w.,/-])~?[0-9][0-9,]*(?:\.[0-9]+)?(?:e[0-9]+)?"
_COUNTED = (
    r"seats?|polls?|(?:full )?contexts?|requests?|layers?|ranks?|boxes|box|engines?|models?|GPUs?|nodes?|blocks?|"
    r"shards?|streams?|times|readings?|starts?|generations|speculative tokens?|minutes?|hours?|days?|seconds?|percent|per cent"
)
# The leading lookahead only lets the alternatives be tried where one can start (a digit, a "~",
# or just after a "|"): the same matches, an order of magnitude faster on a long page.
_BARE = re.compile(
    r"(?=[~0-9]|(?<=\|))(?:"
    + "|".join(
        (
            _NUMBER + r"\s?(?:KiB|MiB|GiB|TiB|KB|kB|MB|GB|TB)(?![\w])",
            _NUMBER + r"\s(?:B)(?![\w])",
            r"(?<![\w.,/-])[0-9]+(?:\.[0-9]+)?e[0-9]+\s?B(?![\w])",
            _NUMBER + r"(?:\s?[kKM])?[\s-]tokens?(?![\w])",
            _NUMBER + r"x(?![\w])",
            _NUMBER + r"\s?%",
            _NUMBER + r"\s?(?:s|ms)(?![\w])",
            _NUMBER + r"\s?(?:tok/s|tokens?/s|GB/s)",
            _NUMBER + r"\s?[x×]\s?10\^?[0-9]+",
            _NUMBER + r"[\s-](?:" + _COUNTED + r")(?![\w])",
            r"(?<![\w.,/-])[0-9]{1,3}(?:,[0-9]{3})+(?![\w,])",  # a grouped number
            r"(?<![\w.,/-])[0-9]+\.[0-9]+(?![\w]|\.[0-9])",  # a decimal (a fraction such as 0.93 too)
            r"(?<=\|)\s*~?[0-9][0-9,.]*\s*(?=\|)",  # a number alone in a table cell
        )
    )
    + ")"
)
_EXEMPT = re.compile(
    r"(?=[0-9vSsGgiPER])(?:"  # where an exemption can start, as for _BARE
    r"\b[0-9]{4}-[0-9]{2}(?:-[0-9]{2})?\b"  # dates
    r"|\bv?[0-9]+\.[0-9]+\.[0-9]+[\w.-]*"  # version numbers
    r"|\b[0-9]+\.[0-9]+-py[0-9]+\b"  # image tags
    r"|\bSM [0-9]+\.[0-9]+"  # compute capability
    r"|\b[Ss]ection [0-9]+(?:\.[0-9]+)*"  # section numbers
    r"|\b(?:[Gg]eneration|[Gg]en|issue|PR|[Ee]ngine|RTX) [0-9]+(?:/[0-9]+)*"  # identifiers with their noun
    r"|\b[0-9]+ GbE\b"  # a link class, part of a product name
    r")"
)
_SKIP = [
    re.compile(r"\A---\n.*?\n---\n", re.S),  # front matter
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"\{\{.*?\}\}", re.S),
    re.compile(r"\{%.*?%\}", re.S),
    re.compile(r"\{#.*?#\}", re.S),
    re.compile(r'<span class="fig[ "][^>]*>.*?</span>', re.S),
    re.compile(r'<span class="(?:src|doc-said|calc-src)"[^>]*>.*?</span>', re.S),  # provenance, quoted verbatim from the catalog
    re.compile(r"^(?P<fence>`{3,}|~{3,})[^\n]*\bexec=[\"']?(?:on|1|true)[\"']?[^\n]*\n.*?^(?P=fence)[ \t]*$", re.S | re.M),
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"<script\b.*?</script>", re.S),
    re.compile(r"<[^>]+>"),  # tags and their attributes (a title holds a figure's source)
    re.compile(r"`(?<!``)[^`\n]+`(?!`)"),  # inline code: flag names and values as typed (a literal first: fast to find)
]
_RENDERED_SKIP = [
    re.compile(r"^(?P<fence>`{3,}|~{3,})[^\n]*\n.*?^(?P=fence)[ \t]*$", re.S | re.M),  # fences made by calc at build time
    re.compile(r'<(?P<tag>article|div|section|form) class="calc[^"]*".*?</(?P=tag)>\s*$', re.S | re.M),  # the calculators, checked by their own tests
    re.compile(r'<figure class="chart".*?</figure>', re.S),  # the charts, drawn by calc.present.charts from the catalog (tests/test_charts.py)
]


_DIGIT = re.compile(r"[0-9]")


def _blank(match: re.Match[str]) -> str:
    return "\n".join(" " * len(part) for part in match.group(0).split("\n"))


def bare_figures(markdown: str, rendered: bool = False) -> list[tuple[int, str]]:
    """Figures that neither a macro nor a check produced; `rendered` for the page as the macros
    rendered it (its code fences come from calc, not from an author)."""
    text = markdown
    for pattern in (_RENDERED_SKIP if rendered else []) + _SKIP:
        text = pattern.sub(_blank, text)
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if _DIGIT.search(line):  # every figure and every exemption holds a digit; most lines none
            found.extend((number, match.group(0).strip()) for match in _BARE.finditer(_EXEMPT.sub(_blank, line)))
    return found
