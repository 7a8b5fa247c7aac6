"""The figure contract of the pages: every figure is rendered from the catalog through calc, or
written as a checked literal that the build recomputes; a bare figure fails the build."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from calc.catalog import Catalog, Figure, build, read_yaml_dir
from calc.gate import Amount
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


_cache: dict[str, tuple[tuple, dict, Catalog]] = {}


def _load(root: str | Path) -> tuple[dict, Catalog]:
    """The catalog files read once per build (and again only when one changes): raw and validated."""
    directory = Path(root) / "catalog"
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in directory.glob("*.yaml")))
    cached = _cache.get(str(directory))
    if cached and cached[0] == stamp:
        return cached[1], cached[2]
    raw = as_catalog_text(read_yaml_dir(directory))
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


def text(value: object) -> str:
    """Catalog text as it goes onto a page: shown exactly as written, never read as markup."""
    return "".join(_MARKUP.get(c, c) for c in str(value))


def finalize(value: object) -> object:
    """The templates' last step for every {{ ... }}: catalog text is escaped, macro output is not."""
    return text(value) if isinstance(value, CatalogText) else value


def site_catalog(root: str | Path) -> Catalog:
    return _load(root)[1]


def site_catalog_raw(root: str | Path) -> dict:
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


def render(item: object, unit: str, digits: int = 2, down: bool = False, source: str | None = None) -> str:
    """A figure as the pages show it: formatted by calc.units.fmt, its source in the title."""
    value = value_of(item, source)
    shown = ("~" if value.approximate else "") + fmt(value.exact, unit, digits, down)
    return f'<span class="fig" title="{text(value.source)}">{shown}</span>'


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

_NUMBER = r"(?<![\w.,/-])~?[0-9][0-9,]*(?:\.[0-9]+)?(?:e[0-9]+)?"
_BARE = re.compile(
    "|".join(
        (
            _NUMBER + r"\s?(?:KiB|MiB|GiB|TiB|KB|kB|MB|GB|TB)(?![\w])",
            _NUMBER + r"\s(?:B)(?![\w])",
            r"(?<![\w.,/-])[0-9]+(?:\.[0-9]+)?e[0-9]+\s?B(?![\w])",
            _NUMBER + r"(?:\s?[kKM])?[\s-]tokens?(?![\w])",
            _NUMBER + r"x(?![\w])",
            _NUMBER + r"\s?%",
        )
    )
)
_SKIP = [
    re.compile(r"\A---\n.*?\n---\n", re.S),  # front matter
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"\{\{.*?\}\}", re.S),
    re.compile(r"\{%.*?%\}", re.S),
    re.compile(r"\{#.*?#\}", re.S),
    re.compile(r'<span class="fig"[^>]*>.*?</span>', re.S),
    re.compile(r'<span class="src">.*?</span>', re.S),  # provenance text, quoted verbatim from the catalog
    re.compile(r"^(?P<fence>`{3,}|~{3,})[^\n]*\bexec=[\"']?(?:on|1|true)[\"']?[^\n]*\n.*?^(?P=fence)[ \t]*$", re.S | re.M),
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"<script\b.*?</script>", re.S),
]


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def bare_figures(markdown: str) -> list[tuple[int, str]]:
    """Figures with a unit of memory, tokens or ratio that neither a macro nor a check produced."""
    text = markdown
    for pattern in _SKIP:
        text = pattern.sub(_blank, text)
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _BARE.finditer(line):
            found.append((number, match.group(0).strip()))
    return found
