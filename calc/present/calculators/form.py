"""The calculators' shared form layer, pure and testable: fields and their defaults as HTML, the
form's raw strings parsed into values (or one message per field), result pieces (tables, definition
lists, badges) and the Output a run hands the page. Numbers become text only through calc.units.fmt.
Standard library only, no browser imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from calc.catalog.spec import Figure
from calc.jsontext import JsonObject
from calc.present.inputs import FORMS, SIZES, Use
from calc.units import InputError, fmt, parse_count, parse_memory, parse_size

# --- small pieces ---------------------------------------------------------------------------


def esc(text: object) -> str:
    """Text for HTML, as html.escape(quote=True) would give it (that module is slow to import in Pyodide)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#x27;")


def size_text(value: int, prefer: str = "GiB") -> str:
    """A size as a person would type it, chosen so that it parses back to exactly `value`."""
    units = ["e9", "GiB", "GB", "MiB"] if prefer == "e9" else ["GiB", "GB", "MiB", "e9"]
    for unit in units:
        for digits in range(5):
            text = fmt(value, unit, digits)
            if parse_size(text) == value:
                return text
    return fmt(value, "B")


def pin_up(value: int) -> str:
    """A smallest pin, shown rounded up to 0.01e9 B so that the pin shown does hold what it must."""
    return fmt(value, "e9", 2, up=True)


def size_examples() -> str:
    return SIZES


@dataclass
class Output:
    """What one run of a calculator gives the page: errors by field, sections by element id."""

    calculator: str
    valid: bool
    errors: dict[str, str]
    sections: dict[str, str]
    figures: dict[str, str] = field(default_factory=dict)
    fields: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {
            "calculator": self.calculator,
            "valid": self.valid,
            "errors": {dom_id(self.calculator, k): v for k, v in self.errors.items()},
            "fields": [dom_id(self.calculator, f) for f in self.fields],
            "sections": {k: v for k, v in self.sections.items()},
            "figures": {k: v for k, v in self.figures.items()},
        }


def dom_id(calculator: str, name: str) -> str:
    return f"{calculator}-{name.replace('_', '-')}"


class Figures:
    """Collects each figure as it is rendered, so the page and the tests read the same text."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}

    def __call__(self, name: str, text: str) -> str:
        self.shown[name] = text
        return f'<span class="fig" data-fig="{esc(name)}">{esc(text)}</span>'


def dl(rows: list[tuple[str, str]]) -> str:
    return '<dl class="calc-dl">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]], caption: str, total: tuple[str, ...] | None = None) -> str:
    """A figures table; its class keeps Material's script from wrapping it, so a table the browser
    swaps in looks exactly like the one the build wrote."""
    out = ['<div class="calc-table"><table class="calc-data">', f"<caption>{caption}</caption>", "<thead><tr>"]
    out += [f'<th scope="col">{h}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append(f'<tr><th scope="row">{row[0]}</th>' + "".join(f"<td>{c}</td>" for c in row[1:]) + "</tr>")
    if total:
        out.append(f'<tr class="calc-total"><th scope="row">{total[0]}</th>' + "".join(f"<td>{c}</td>" for c in total[1:]) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def badge(ok: bool | None, yes: str = "passes", no: str = "refused") -> str:
    if ok is None:
        return '<span class="calc-badge calc-unknown">unknown</span>'
    return f'<span class="calc-badge {"calc-pass" if ok else "calc-refuse"}">{yes if ok else no}</span>'


def invalid(calculator: str, errors: dict[str, str], labels: Mapping[str, str], fields: tuple[str, ...]) -> Output:
    many = fmt(len(errors), "count")
    noun = "input needs" if len(errors) == 1 else "inputs need"
    names = ", ".join(short(labels.get(k, k)) for k in errors)
    # each item links its field by name; the message after it, which opens with that name, does not repeat it
    items = "".join(
        f'<li><a href="#{dom_id(calculator, k)}">{esc(short(labels.get(k, k)))}</a>: {esc(v.removeprefix(short(labels.get(k, k)) + ": "))}</li>'
        for k, v in errors.items()
    )
    return Output(
        calculator,
        False,
        errors,
        {
            f"{calculator}-verdict": f"<strong>No result:</strong> {many} {noun} fixing ({esc(names)}).",
            f"{calculator}-result": f'<div class="calc-invalid"><p>No result until these are fixed:</p><ul>{items}</ul></div>',
        },
        fields=fields,
    )


def short(label: str) -> str:
    """A field's name as an error message starts with it: the label without its parenthesis."""
    return label.split(" (")[0]


def take(errors: dict[str, str], name: str, parse: Callable[[], Any]) -> Any:
    try:
        return parse()
    except InputError as error:
        errors[name] = str(error)
        return None


def flag(raw: Mapping[str, str], name: str) -> bool:
    return str(raw.get(name, "")).strip().lower() in ("on", "true", "1", "yes", "checked")


def sized(raw: Mapping[str, str], name: str, label: str) -> Callable[[], int]:
    """The parser of one size field, for take()."""
    return lambda: parse_memory(str(raw.get(name, "")), short(label))


def counted(raw: Mapping[str, str], name: str, label: str, minimum: int = 1, optional: bool = False) -> Callable[[], int | None]:
    def parse() -> int | None:
        text = str(raw.get(name, ""))
        if optional and not text.strip():
            return None
        return parse_count(text, short(label), minimum)

    return parse


# --- form markup ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    kind: str  # text, textarea, select, checkbox
    help: str = ""
    options: tuple[tuple[str, str, bool], ...] = ()  # value, label, disabled
    inputmode: str = "text"
    rows: int = 4


@dataclass
class Defaults:
    """A calculator's default raw values and, beside each field, where the default comes from."""

    values: dict[str, str]
    sources: dict[str, str]
    hidden: dict[str, bool] = field(default_factory=dict)
    disabled: dict[str, bool] = field(default_factory=dict)

    def to_json(self, calculator: str) -> JsonObject:
        return {
            "values": {dom_id(calculator, k): v for k, v in self.values.items()},
            "sources": {dom_id(calculator, k) + "-src": v for k, v in self.sources.items()},
            "hidden": {dom_id(calculator, k) + "-row": v for k, v in self.hidden.items()},
            "disabled": {dom_id(calculator, k): v for k, v in self.disabled.items()},
        }


def _field_html(calculator: str, f: Field, d: Defaults) -> str:
    fid = dom_id(calculator, f.name)
    value = d.values.get(f.name, "")
    described = " ".join(x for x in (f"{fid}-help" if f.help else "", f"{fid}-src", f"{fid}-err") if x)
    disabled = " disabled" if d.disabled.get(f.name) else ""
    hidden = " hidden" if d.hidden.get(f.name) else ""
    attrs = f'id="{fid}" name="{f.name}" aria-describedby="{described}" aria-invalid="false"{disabled}'
    if f.kind == "select":
        options = "".join(
            f'<option value="{esc(v)}"{" selected" if v == value else ""}{" disabled" if off else ""}>{esc(text)}</option>' for v, text, off in f.options
        )
        control = f"<select {attrs}>{options}</select>"
    elif f.kind == "textarea":
        control = f'<textarea {attrs} rows="{f.rows}" autocomplete="off" spellcheck="false">{esc(value)}</textarea>'
    elif f.kind == "checkbox":
        control = f'<input type="checkbox" {attrs}{" checked" if value == "on" else ""}>'
    else:
        control = f'<input type="text" {attrs} value="{esc(value)}" inputmode="{f.inputmode}" autocomplete="off" spellcheck="false">'
    label = f'<label for="{fid}">{esc(f.label)}</label>'
    head = f'<span class="calc-check">{control}{label}</span>' if f.kind == "checkbox" else f"{label}{control}"
    parts = [f'<div class="calc-field calc-{f.kind}" id="{fid}-row"{hidden}>', head]
    if f.help:
        parts.append(f'<span class="calc-help" id="{fid}-help">{esc(f.help)}</span>')
    parts.append(f'<span class="calc-src" id="{fid}-src">{d.sources.get(f.name, "")}</span>')
    parts.append(f'<span class="calc-err" id="{fid}-err"></span>')
    parts.append("</div>")
    return "".join(parts)


# --- the fields, from the one table of inputs (calc/present/inputs.py) ---------------------------------


def form_uses(calculator: str, count: int = 0) -> list[tuple[str, Use, int]]:
    """A calculator's fields in form order as (name, use, n): a numbered use repeated for 1..n
    (`count` for one numbered -1), neighbouring numbered uses of one count row by row."""
    uses = FORMS[calculator]
    out: list[tuple[str, Use, int]] = []
    i = 0
    while i < len(uses):
        u = uses[i]
        if not u.numbered:
            out.append((u.field_name, u, 0))
            i += 1
            continue
        j = i + 1
        while j < len(uses) and uses[j].numbered == u.numbered:
            j += 1
        for n in range(1, (count if u.numbered < 0 else u.numbered) + 1):
            out.extend((f"{g.field_name}_{n}", g, n) for g in uses[i:j])
        i = j
    return out


def _label(u: Use, n: int) -> str:
    text = u.input.label if u.label is None else u.label
    return text.replace("{n}", fmt(n, "count")) if n else text


def form_labels(calculator: str, count: int = 0) -> dict[str, str]:
    """Each field's label, by name."""
    return {name: _label(u, n) for name, u, n in form_uses(calculator, count)}


def form_fields(
    calculator: str,
    options: Mapping[str, tuple[tuple[str, str, bool], ...]] | None = None,
    count: int = 0,
    labels: Mapping[str, str] | None = None,
    fill: Mapping[str, str] | None = None,
) -> list[Field]:
    """A calculator's fields: each input's label, help, control and keyboard from the table;
    `options` gives a select its choices (by field name, or by the name before its number),
    `labels` a label the calculator words itself, `fill` a help's {placeholder}."""
    options, labels = options or {}, labels or {}
    out = []
    for name, u, n in form_uses(calculator, count):
        i = u.input
        text = i.form_help if u.form_help is None else u.form_help
        for key, value in (fill or {}).items():
            text = text.replace("{" + key + "}", value)
        kind = u.kind or {"switch": "checkbox", "choice": "select"}.get(i.kind, "text")
        choices = options.get(name, options.get(u.field_name, ()))
        out.append(Field(name, labels.get(name, _label(u, n)), kind, text, choices, u.inputmode or i.mode, u.rows))
    return out


def read(calculator: str, raw: Mapping[str, str], errors: dict[str, str], name: str, labels: Mapping[str, str], optional: bool = False) -> Any:
    """One field's typed value read as its input's kind, named in a message by its label (without
    its parenthesis); an empty optional field is None. A bad value is kept in `errors`, None returned."""
    base = name.rstrip("0123456789").removesuffix("_") if name[-1:].isdigit() else name
    u = next(u for u in FORMS[calculator] if u.field_name in (name, base))
    text = str(raw.get(name, ""))
    if optional and not text.strip():
        return None
    return take(errors, name, lambda: u.input.parse(text, short(labels[name]), u.minimum))


def form_html(calculator: str, title: str, fields: list[Field], d: Defaults) -> str:
    return (
        f'<form class="calc-form" id="{calculator}-form" aria-label="{esc(title)}" novalidate onsubmit="return false">'
        + "".join(_field_html(calculator, f, d) for f in fields)
        + f'<p class="calc-address" id="{calculator}-address" role="status" hidden></p>'  # what a link to these inputs leaves out
        + "</form>"
    )


def block_html(calculator: str, title: str, fields: list[Field], d: Defaults, out: Output) -> str:
    """A whole calculator: the form with its defaults beside the result for them, one self-contained
    article. It is kept out of the site's search index (its figures change with every edit; the
    page's prose is indexed), which also spares every visit the time to index it. The search
    plugin ends an exclusion at the first closing tag of the same name, so the excluded element
    is the one <article>, holding none."""
    state = "valid" if out.valid else "invalid"
    return (
        f'<article class="calc" id="{calculator}-calc" data-calculator="{calculator}" data-search-exclude>'
        + form_html(calculator, title, fields, d)
        + '<div class="calc-out">'
        + f'<p class="calc-verdict" id="{calculator}-verdict" role="status" aria-live="polite" aria-atomic="true">{out.sections[f"{calculator}-verdict"]}</p>'
        + f'<div class="calc-result" id="{calculator}-result" data-state="{state}">{out.sections[f"{calculator}-result"]}</div>'
        + "</div></article>"
    )


def default_note(figure: Figure | None, text: str, how: str = "") -> str:
    """Where a default comes from: the catalog figure's kind, date and source, or a plain reason."""
    if figure is None:
        return f"Default: {esc(text)}"
    approx = ", approximate" if figure.approximate else ""
    detail = f": {esc(figure.source)}" if figure.source else ""
    return f"Default {esc(text)}{esc(how)} ({esc(figure.provenance)}{approx}){detail}"
