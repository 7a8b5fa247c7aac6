"""The calculator page's presentation, pure and testable: the form's raw strings in, inputs (or
one message per field) out, and every result section rendered to an HTML string.

The build renders the default result through these functions (hooks/calculator_page.py), and the
browser glue (docs/calculator/main.py) calls the same functions under Pyodide on every edit, so the
page shows the same figures before and after Python loads. Numbers become text only through
calc.units.fmt. Standard library only, no browser imports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from calc import budget, derive, fraction, kv, prefetch, report
from calc.catalog import Catalog, Figure
from calc.report import StartInputs
from calc.units import GB, InputError, fmt, parse_count, parse_fraction, parse_size

CALCULATORS = ("start", "kv", "fit", "plan", "prefetch")
PLAN_ROWS = 3
TYPED = "typed"


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
    ten = 10 * GB
    return f"{fmt(ten, 'e9', 0)}, {fmt(ten, 'GiB')} or {fmt(ten, 'GB', 0)}"


@dataclass
class Output:
    """What one run of a calculator gives the page: errors by field, sections by element id."""

    calculator: str
    valid: bool
    errors: dict[str, str]
    sections: dict[str, str]
    figures: dict[str, str] = field(default_factory=dict)
    fields: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "calculator": self.calculator,
            "valid": self.valid,
            "errors": {dom_id(self.calculator, k): v for k, v in self.errors.items()},
            "fields": [dom_id(self.calculator, f) for f in self.fields],
            "sections": self.sections,
            "figures": self.figures,
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


def _dl(rows: list[tuple[str, str]]) -> str:
    return '<dl class="calc-dl">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]], caption: str, total: tuple[str, ...] | None = None) -> str:
    out = ['<div class="calc-table"><table>', f"<caption>{caption}</caption>", "<thead><tr>"]
    out += [f'<th scope="col">{h}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append(f'<tr><th scope="row">{row[0]}</th>' + "".join(f"<td>{c}</td>" for c in row[1:]) + "</tr>")
    if total:
        out.append(f'<tr class="calc-total"><th scope="row">{total[0]}</th>' + "".join(f"<td>{c}</td>" for c in total[1:]) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _verdict(ok: bool | None, yes: str = "passes", no: str = "refused") -> str:
    if ok is None:
        return '<span class="calc-badge calc-unknown">unknown</span>'
    return f'<span class="calc-badge {"calc-pass" if ok else "calc-refuse"}">{yes if ok else no}</span>'


def _invalid(calculator: str, errors: dict[str, str], labels: Mapping[str, str], fields: tuple[str, ...]) -> Output:
    count = fmt(len(errors), "count")
    noun = "input needs" if len(errors) == 1 else "inputs need"
    names = ", ".join(labels.get(k, k) for k in errors)
    items = "".join(f'<li><a href="#{dom_id(calculator, k)}">{esc(labels.get(k, k))}</a>: {esc(v)}</li>' for k, v in errors.items())
    return Output(
        calculator,
        False,
        errors,
        {
            f"{calculator}-verdict": f"<strong>No result:</strong> {count} {noun} fixing ({esc(names)}).",
            f"{calculator}-result": f'<div class="calc-invalid"><p>No result until these are fixed:</p><ul>{items}</ul></div>',
        },
        fields=fields,
    )


def short(label: str) -> str:
    """A field's name as an error message starts with it: the label without its parenthesis."""
    return label.split(" (")[0]


def _take(errors: dict[str, str], name: str, parse: Callable[[], Any]) -> Any:
    try:
        return parse()
    except InputError as error:
        errors[name] = str(error)
        return None


def _flag(raw: Mapping[str, str], name: str) -> bool:
    return str(raw.get(name, "")).strip().lower() in ("on", "true", "1", "yes", "checked")


def _size(raw: Mapping[str, str], name: str, label: str) -> Callable[[], int]:
    return lambda: parse_size(str(raw.get(name, "")), short(label))


def _count(raw: Mapping[str, str], name: str, label: str, minimum: int = 1, optional: bool = False) -> Callable[[], int | None]:
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
    kind: str  # text, select, checkbox
    help: str = ""
    options: tuple[tuple[str, str, bool], ...] = ()  # value, label, disabled
    inputmode: str = "text"


@dataclass
class Defaults:
    """A calculator's default raw values and, beside each field, where the default comes from."""

    values: dict[str, str]
    sources: dict[str, str]
    hidden: dict[str, bool] = field(default_factory=dict)
    disabled: dict[str, bool] = field(default_factory=dict)

    def to_json(self, calculator: str) -> dict[str, Any]:
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


def form_html(calculator: str, title: str, fields: list[Field], d: Defaults) -> str:
    return (
        f'<form class="calc-form" id="{calculator}-form" aria-label="{esc(title)}" novalidate onsubmit="return false">'
        + "".join(_field_html(calculator, f, d) for f in fields)
        + "</form>"
    )


def block_html(calculator: str, title: str, fields: list[Field], d: Defaults, out: Output) -> str:
    """A whole calculator: the form with its defaults beside the result for them."""
    state = "valid" if out.valid else "invalid"
    return (
        f'<div class="calc" id="{calculator}-calc" data-calculator="{calculator}">'
        + form_html(calculator, title, fields, d)
        + '<div class="calc-out">'
        + f'<p class="calc-verdict" id="{calculator}-verdict" role="status" aria-live="polite" aria-atomic="true">{out.sections[f"{calculator}-verdict"]}</p>'
        + f'<div class="calc-result" id="{calculator}-result" data-state="{state}">{out.sections[f"{calculator}-result"]}</div>'
        + "</div></div>"
    )


def _src(figure: Figure | None, text: str, how: str = "") -> str:
    """Where a default comes from: the catalog figure's kind, date and source, or a plain reason."""
    if figure is None:
        return f"Default: {esc(text)}"
    approx = ", approximate" if figure.approximate else ""
    detail = f": {esc(figure.source)}" if figure.source else ""
    return f"Default {esc(text)}{esc(how)} ({esc(figure.provenance)}{approx}){detail}"


# --- the start calculator -------------------------------------------------------------------

START_LABELS = {
    "deployment": "Deployment",
    "drafter": "Drafter (speculative decoding) on",
    "speculative_tokens": "Speculative tokens",
    "pin": "KV pin (--kv-cache-memory-bytes)",
    "prefill_budget": "Prefill budget (--max-num-batched-tokens)",
    "seats": "Seats (--max-num-seqs)",
    "max_model_len": "max_model_len",
    "gpu_memory_utilization": "gpu_memory_utilization (optional)",
    "typical_context": "Typical context per seat, tokens (optional)",
}


def gate_problem(catalog: Catalog, deployment_id: str) -> str | None:
    """Why the gate cannot run for a deployment, or None when it can."""
    try:
        derive.gate_row(catalog, deployment_id)
        report.last_available(catalog.deployments[deployment_id])
    except (ValueError, KeyError) as error:
        return str(error)
    return None


def gated(catalog: Catalog) -> list[str]:
    return [d for d in catalog.deployments if gate_problem(catalog, d) is None]


def max_boxes(catalog: Catalog) -> int:
    return int(max(catalog.deployments[d]["boxes"] for d in gated(catalog)))


def start_labels(catalog: Catalog) -> dict[str, str]:
    labels = dict(START_LABELS)
    for i in range(max_boxes(catalog)):
        labels[f"available_{i + 1}"] = f"MemAvailable at start, box {fmt(i + 1, 'count')}" + (" (head)" if i == 0 else "")
    return labels


def start_field_names(catalog: Catalog) -> tuple[str, ...]:
    boxes = tuple(f"available_{i + 1}" for i in range(max_boxes(catalog)))
    return (
        "deployment",
        "drafter",
        "speculative_tokens",
        "pin",
        *boxes,
        "prefill_budget",
        "seats",
        "max_model_len",
        "gpu_memory_utilization",
        "typical_context",
    )


def start_fields(catalog: Catalog) -> list[Field]:
    labels = start_labels(catalog)
    options = []
    for d_id, d in catalog.deployments.items():
        problem = gate_problem(catalog, d_id)
        text = f"{d['name']}: TP={fmt(d['tp'], 'count')} on {fmt(d['boxes'], 'count')}x {catalog.boxes[d['box']]['name']}"
        options.append((d_id, text + (f" (the gate cannot size it: {problem})" if problem else ""), problem is not None))
    helps = {
        "pin": "Bytes: " + size_examples(),
        "prefill_budget": "Tokens",
        "seats": "Concurrent sequences",
        "max_model_len": "Tokens",
        "gpu_memory_utilization": "A fraction above 0 and at most 1; empty: the largest that passes vLLM's check",
        "typical_context": "Tokens a seat typically holds; empty: not sized",
    }
    out = []
    for name in start_field_names(catalog):
        if name == "deployment":
            out.append(Field(name, labels[name], "select", options=tuple(options)))
        elif name == "drafter":
            out.append(Field(name, labels[name], "checkbox"))
        elif name.startswith("available_"):
            out.append(Field(name, labels[name], "text", "Bytes: " + size_examples()))
        else:
            mode = "decimal" if name == "gpu_memory_utilization" else "numeric" if name != "pin" else "text"
            out.append(Field(name, labels[name], "text", helps.get(name, ""), inputmode=mode))
    return out


def _available_figure(deployment: dict[str, Any]) -> Figure | None:
    """The figure report.last_available takes its value from."""
    figures = [r["available"] for r in deployment.get("requests", [])]
    figures += [s["available_before"] for s in deployment["starts"] if "available_before" in s]
    return figures[0] if figures else None


def start_defaults(catalog: Catalog, deployment_id: str | None = None) -> Defaults:
    deployment_id = deployment_id or gated(catalog)[0]
    deployment = catalog.deployments[deployment_id]
    model = catalog.models[deployment["model"]]
    base = report.defaults(catalog, deployment_id)
    serving = [s for s in deployment["starts"] if s["outcome"] == "serving"]
    start = serving[-1] if serving else deployment["starts"][-1]
    settings = derive.settings(deployment, start)
    policy = catalog.policy["gate"]["calibration"]
    values = {
        "deployment": deployment_id,
        "drafter": "on" if base.drafter else "",
        "speculative_tokens": fmt(base.speculative_tokens, "count"),
        "pin": size_text(base.kv_pin, "e9"),
        "prefill_budget": fmt(base.prefill_budget, "count"),
        "seats": fmt(base.seats, "count"),
        "max_model_len": fmt(base.max_model_len, "count"),
        "gpu_memory_utilization": "",
        "typical_context": "",
    }
    where = ", ".join(p for p in (f"gen {start['generation']}" if start.get("generation") else "", start.get("date", "")) if p)
    drafter = model.get("drafter")
    box = catalog.boxes[deployment["box"]]

    def setting(key: str, fallback: str) -> str:
        if key in settings:
            return f"Default {esc(values[key])}: the deployment's setting (catalog/starts.yaml)"
        return f"Default {esc(values[key])}: {esc(fallback)}"

    sources = {
        "deployment": esc(
            f"Fixes the model ({model['name']}), the boxes ({fmt(deployment['boxes'], 'count')}x {box['name']}) and TP={fmt(deployment['tp'], 'count')}; "
            f"engine {deployment.get('engine', 'not recorded')}"
        ),
        "drafter": (
            f"Default off: the serving start runs without it. The drafter is {esc(drafter['name'])}, {esc(fmt(drafter['weights'].value, 'GiB'))}"
            + (f" for {esc(fmt(drafter['weights'].extra['ranks'], 'count'))} ranks together" if drafter["weights"].extra.get("ranks", 1) > 1 else "")
            + f" ({esc(drafter['weights'].provenance)})"
            if drafter
            else "The catalog has no drafter for this model"
        ),
        "speculative_tokens": setting("speculative_tokens", "the calculator's choice; the deployment runs no drafter")
        if settings.get("speculative_tokens")
        else f"Default {esc(values['speculative_tokens'])}: the calculator's choice; the deployment runs no drafter",
        "pin": f"Default {esc(values['pin'])}: the pin of the serving start" + (f" ({esc(where)})" if where else ""),
        "prefill_budget": setting("prefill_budget", f"the calibration, {fmt(policy['prefill_budget'].value, 'count')} tokens"),
        "seats": setting("seats", f"the calibration, {fmt(policy['seats'].value, 'count')} seats"),
        "max_model_len": setting("max_model_len", "the deployment's setting"),
        "gpu_memory_utilization": "Default empty: the calculator finds the largest two-decimal fraction that passes",
        "typical_context": "Default empty: the seats are not sized",
    }
    figure = _available_figure(deployment)
    hidden, disabled = {}, {"drafter": drafter is None}
    for i in range(max_boxes(catalog)):
        name = f"available_{i + 1}"
        hidden[name] = i >= deployment["boxes"]
        values[name] = size_text(base.available[min(i, len(base.available) - 1)], "GiB")
        how = "" if i == 0 else ", the head box's reading"
        sources[name] = _src(figure, values[name], how)
    return Defaults(values, sources, hidden, disabled)


def parse_start(catalog: Catalog, raw: Mapping[str, str]) -> tuple[StartInputs | None, dict[str, str]]:
    """The start calculator's inputs from the form's raw strings, or a message per bad field."""
    labels = start_labels(catalog)
    errors: dict[str, str] = {}
    deployment_id = str(raw.get("deployment", "")).strip()
    if deployment_id not in gated(catalog):
        errors["deployment"] = f"{labels['deployment']}: found {deployment_id or 'nothing'!r}, expected one of {', '.join(gated(catalog))}"
        return None, errors
    deployment = catalog.deployments[deployment_id]
    model = catalog.models[deployment["model"]]
    drafter = _flag(raw, "drafter")
    if drafter and not model.get("drafter"):
        errors["drafter"] = f"{short(labels['drafter'])}: the catalog has no drafter for {model['name']}"
    spec = _take(errors, "speculative_tokens", _count(raw, "speculative_tokens", labels["speculative_tokens"]))
    pin = _take(errors, "pin", lambda: parse_size(str(raw.get("pin", "")), short(labels["pin"])))
    available = []
    for i in range(deployment["boxes"]):
        name = f"available_{i + 1}"
        available.append(_take(errors, name, _size(raw, name, labels[name])))
    prefill = _take(errors, "prefill_budget", _count(raw, "prefill_budget", labels["prefill_budget"]))
    seats = _take(errors, "seats", _count(raw, "seats", labels["seats"]))
    max_len = _take(errors, "max_model_len", _count(raw, "max_model_len", labels["max_model_len"]))
    text = str(raw.get("gpu_memory_utilization", "")).strip()
    utilization = _take(errors, "gpu_memory_utilization", lambda: parse_fraction(text, short(labels["gpu_memory_utilization"])) if text else None)
    typical = _take(errors, "typical_context", _count(raw, "typical_context", labels["typical_context"], optional=True))
    if pin is not None and max_len is not None and spec is not None:
        reading = report.pool_reading(catalog, deployment_id, spec if drafter else 0)
        if reading is not None:
            tokens, _ = reading.tokens_at(pin)
            if int(tokens) < max_len:
                floor = kv.pool_for_tokens(max_len, reading.bytes_per_token)
                errors["pin"] = (
                    f"{short(labels['pin'])}: {size_text(pin, 'e9')} holds {fmt(tokens, 'tokens', down=True)}, below one full context of "
                    f"{fmt(max_len, 'tokens')}; expected a pin of at least {pin_up(floor)} ({fmt(reading.bytes_per_token, 'count')} B a token, {reading.provenance})"
                )
    if errors:
        return None, errors
    inputs = StartInputs(
        deployment=deployment_id,
        kv_pin=pin,
        drafter=drafter,
        speculative_tokens=spec,
        prefill_budget=prefill,
        seats=seats,
        max_model_len=max_len,
        available=tuple(available),
        typical_context=typical,
        gpu_memory_utilization=utilization,
    )
    for problem in report.check(inputs):
        key = {"available": "available_1"}.get(problem.split(":", 1)[0], problem.split(":", 1)[0].replace(" ", "_"))
        errors[key if key in labels else "deployment"] = problem
    return (None, errors) if errors else (inputs, {})


def run_start(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = start_field_names(catalog)
    inputs, errors = parse_start(catalog, raw)
    if inputs is None:
        return _invalid("start", errors, start_labels(catalog), names)
    r = report.start_report(catalog, inputs)
    fig = Figures()
    verdict = start_verdict(r, fig)
    result = "".join(
        (
            start_needs(r, fig),
            start_largest(r, fig),
            start_pool(r, fig),
            start_fraction(r, fig),
            start_flags(r, fig),
            start_changes(r, fig),
        )
    )
    return Output("start", True, {}, {"start-verdict": verdict, "start-result": result}, fig.shown, names)


def start_verdict(r: dict[str, Any], fig: Figures) -> str:
    """The one sentence a screen reader announces after each edit."""
    if r["outside_calibration"]:
        return f"<strong>Start: {fig('verdict', 'outside calibration')}</strong>. {esc(r['outside_calibration'])}."
    tightest = min(r["boxes"], key=lambda b: b["margin_bytes"])
    verdict = fig("verdict", "passes" if r["passes"] else "refused")
    needs = fig("needs_short", fmt(r["needs_bytes"], "GiB", 1))
    available = fig("available_short", fmt(tightest["available_bytes"], "GiB", 1))
    margin = fig("margin_short", fmt(abs(tightest["margin_bytes"]), "GiB", 1))
    if r["passes"]:
        where = "every box" if len(r["boxes"]) > 1 else tightest["box"]
        return (
            f"<strong>Start: {verdict}</strong> on {esc(where)}: needs {needs} a rank against {available} MemAvailable, {margin} to spare on the tightest box."
        )
    refused = ", ".join(b["box"] for b in r["boxes"] if not b["passes"])
    return f"<strong>Start: {verdict}</strong> on {esc(refused)}: needs {needs} a rank against {available} MemAvailable, short by {margin} on the tightest box."


def start_needs(r: dict[str, Any], fig: Figures) -> str:
    """The needs formula term by term with each term's source, then every box against it."""
    if r["outside_calibration"]:
        return (
            '<section class="calc-section"><h3>Needs against MemAvailable</h3>'
            f'<p class="calc-unknown-note">The gate does not know: {esc(r["outside_calibration"])}. '
            "Inside the calibration the prefill-budget and seat terms are zero; outside it each needs a per-model constant in the catalog.</p></section>"
        )
    rows = [(esc(t.name), fig(f"term_{_slug(t.name)}", fmt(t.bytes, "GiB")), esc(t.source)) for t in r["terms"]]
    total = ("needs", fig("needs", fmt(r["needs_bytes"], "GiB")), "the sum, on every box")
    terms = _table(
        ("Term", "GiB a rank", "Source"), rows, "The start gate: needs = weights + drafter + KV pin + overhead + prefill term + seat term + headroom", total
    )
    box_rows = []
    for i, b in enumerate(r["boxes"], 1):
        margin = fig(f"box{i}_margin", fmt(abs(b["margin_bytes"]), "GiB"))
        box_rows.append(
            (
                esc(b["box"]),
                fig(f"box{i}_available", fmt(b["available_bytes"], "GiB")),
                _verdict(b["passes"]) + fig(f"box{i}_verdict", "passes" if b["passes"] else "refused").replace('class="fig"', 'class="fig calc-sr"'),
                f"{margin} {'to spare' if b['passes'] else 'short'}",
            )
        )
    boxes = _table(("Box", "MemAvailable", "Start", "By"), box_rows, "Start if needs &le; MemAvailable on every box")
    return f'<section class="calc-section"><h3>Needs against MemAvailable</h3>{terms}{boxes}</section>'


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def pin_text(value: int | None) -> str:
    if value is None:
        return "unknown"
    if value < 0:
        return f"none: short by {fmt(-value, 'GiB')} at a zero pin"
    return fmt(value, "e9", 2, down=True)


def start_largest(r: dict[str, Any], fig: Figures) -> str:
    largest = r["largest_pin_bytes"]
    rows = []
    for key, label in (("without_drafter", "Without the drafter"), ("with_drafter", "With the drafter")):
        value = largest[key]
        if key == "with_drafter" and value is None and not r["outside_calibration"]:
            rows.append((label, "no drafter in the catalog for this model"))
            continue
        name = "largest_" + key.split("_")[0]
        shown = fig(name, pin_text(value))
        if value is not None and value >= 0:
            shown += " (" + fig(name + "_gib", fmt(value, "GiB", 2, down=True)) + ")"
        rows.append((label, shown))
    return (
        '<section class="calc-section"><h3>Largest pin that passes</h3>'
        "<p>The rest of the request unchanged, against the tightest box; rounded down.</p>" + _dl(rows) + "</section>"
    )


def start_pool(r: dict[str, Any], fig: Figures) -> str:
    pool = r["kv"]
    i: StartInputs = r["inputs"]
    if pool["bytes_per_token"] is None:
        return '<section class="calc-section"><h3>The KV pool</h3><p>No measured bytes per token for this model in the catalog.</p></section>'
    logged = "logged by vLLM at this pin" if pool["tokens_logged"] else "the pin over the bytes per token"
    max_len = fig("kv_max_len", fmt(i.max_model_len, "tokens"))
    one = pool["holds_one_context"]
    rows = [
        ("Bytes per token per rank", f"{fig('kv_bpt', fmt(pool['bytes_per_token'], 'count'))} B ({esc(r['kv_source'])})"),
        ("Tokens in the pool", f"{fig('kv_tokens', fmt(pool['tokens'], 'tokens'))} ({logged})"),
        (f"Full contexts of {max_len}", fig("kv_contexts", fmt(pool["full_contexts"], "count", 0, down=True)) + " at once"),
        ("Maximum concurrency (vLLM's startup line)", fig("kv_concurrency", fmt(pool["full_contexts"], "x"))),
        (
            "One full context fits",
            fig("kv_one_context", "yes" if one else "no")
            + f"; a pin of {fig('kv_one_context_pin', pin_up(pool['one_context_pin_bytes']))} holds one"
            + ("" if one else " (below the floor: a max_model_len request cannot be admitted)"),
        ),
    ]
    if "tokens_needed" in pool:
        seats = fmt(i.seats, "count")
        rows.append(
            (
                f"{seats} seats &times; {fmt(i.typical_context or 0, 'tokens')}",
                f"{fig('kv_tokens_needed', fmt(pool['tokens_needed'], 'tokens'))}: "
                + fig("kv_seats_fit", "fit" if pool["seats_fit"] else "do not fit")
                + f"; a pin of {fig('kv_seats_pin', pin_up(pool['pin_for_seats_bytes']))} holds them",
            )
        )
    else:
        rows.append(("Seats &times; typical context", "Type a typical context per seat to size the pool for the seats."))
    return '<section class="calc-section"><h3>The KV pool</h3>' + _dl(rows) + "</section>"


def start_fraction(r: dict[str, Any], fig: Figures) -> str:
    f = r["fraction"]
    i: StartInputs = r["inputs"]
    how = "typed" if i.gpu_memory_utilization is not None else "the largest two-decimal fraction that passes"
    chosen = fig("fraction", fmt(f["fraction"], "fraction"))
    requested = fig("fraction_requested", fmt(f["requested_bytes"], "GiB")) if f["requested_bytes"] is not None else "nothing"
    return (
        '<section class="calc-section"><h3>vLLM&rsquo;s fraction check</h3>'
        "<p>vLLM starts only if ceil(gpu_memory_utilization &times; total) &le; free memory, even with a pinned pool; "
        "on unified memory the total is the box&rsquo;s and free is MemAvailable.</p>"
        + _dl(
            [
                ("gpu_memory_utilization", f"{chosen} ({how})"),
                (
                    "Asks for",
                    f"{requested} of {fig('fraction_total', fmt(f['total_bytes'], 'GiB'))}, against {fig('fraction_free', fmt(f['free_bytes'], 'GiB'))} free on the tightest box",
                ),
                (
                    "Check",
                    _verdict(f["passes"]) + fig("fraction_verdict", "passes" if f["passes"] else "refused").replace('class="fig"', 'class="fig calc-sr"'),
                ),
                ("The fraction to pass it", "at most " + fig("fraction_ceiling", fmt(f["ceiling"], "fraction", 4))),
            ]
        )
        + "</section>"
    )


def start_flags(r: dict[str, Any], fig: Figures) -> str:
    text = " \\\n".join(r["flags"])
    fig("flags", text)
    return (
        '<section class="calc-section"><h3>vLLM flags</h3>'
        f'<pre class="calc-flags" id="start-flags"><code data-fig="flags">{esc(text)}</code></pre>'
        '<button type="button" class="md-button calc-copy" data-clipboard-target="#start-flags &gt; code">Copy the flags</button></section>'
    )


def start_changes(r: dict[str, Any], fig: Figures) -> str:
    head = '<section class="calc-section"><h3>What to change</h3>'
    if r["outside_calibration"]:
        return head + _calibration_note() + "</section>"
    if r["passes"]:
        tightest = min(b["margin_bytes"] for b in r["boxes"])
        return head + f"<p>Nothing: the start fits with {fig('spare', fmt(tightest, 'GiB'))} to spare on the tightest box.</p></section>"
    short = -min(b["margin_bytes"] for b in r["boxes"])
    items = []
    for n, t in enumerate(r["changes"], 1):
        alone = "covers the shortfall alone" if t.bytes >= short else "not enough alone"
        items.append(f"<li>{esc(t.name)}: {fig(f'change_{n}', fmt(t.bytes, 'GiB'))} ({alone}); {_how(t.name, r)}</li>")
    listing = f"<ol>{''.join(items)}</ol>" if items else "<p>No term here can move: only more MemAvailable helps.</p>"
    return head + f"<p>Short by {fig('short', fmt(short, 'GiB'))} on the tightest box. The terms you can move, largest first:</p>{listing}</section>"


def _how(term: str, r: dict[str, Any]) -> str:
    largest = r["largest_pin_bytes"]
    inputs: StartInputs = r["inputs"]
    if term == "KV pin":
        key = "with_drafter" if inputs.drafter else "without_drafter"
        return f"lower it to at most {esc(pin_text(largest[key]))}"
    if term == "drafter":
        return f"turn it off (the largest pin then is {esc(pin_text(largest['without_drafter']))})"
    if term == "prefill-budget term":
        return "lower the prefill budget toward the calibration"
    if term == "seat term":
        return "lower the seats toward the calibration"
    return "change it"


def _calibration_note() -> str:
    return (
        "<p>The gate cannot size this request. Bring the prefill budget and the seats inside the calibration, "
        "or add the missing per-token or per-seat constant to the model&rsquo;s gate row in catalog/models.yaml; "
        "the calculator does not guess a term the catalog cannot size.</p>"
    )


# --- the KV pool calculator -----------------------------------------------------------------

KV_LABELS = {
    "reading": "Bytes per token from",
    "bpt": "Bytes per token per rank (typed)",
    "pin": "KV pool (bytes)",
    "tokens": "Tokens wanted",
    "max_model_len": "max_model_len",
    "seats": "Seats (optional)",
    "typical_context": "Typical context per seat, tokens (optional)",
}


def kv_readings(catalog: Catalog) -> list[derive.KvReading]:
    return derive.kv_readings(catalog)


def _reading_label(catalog: Catalog, r: derive.KvReading) -> str:
    what = ", ".join(p for p in (catalog.models[r.model]["name"], r.engine, r.kv_dtype, r.label) if p)
    return f"{what}: {fmt(r.bytes_per_token, 'count')} B/token ({r.provenance})"


def kv_fields(catalog: Catalog) -> list[Field]:
    options = [(f"r{n}", _reading_label(catalog, r), False) for n, r in enumerate(kv_readings(catalog))]
    options.append((TYPED, "typed below", False))
    return [
        Field("reading", KV_LABELS["reading"], "select", options=tuple(options)),
        Field("bpt", KV_LABELS["bpt"], "text", "Used when \u201ctyped below\u201d is chosen", inputmode="numeric"),
        Field("pin", KV_LABELS["pin"], "text", "Bytes to tokens: " + size_examples()),
        Field("tokens", KV_LABELS["tokens"], "text", "Tokens to bytes", inputmode="numeric"),
        Field("max_model_len", KV_LABELS["max_model_len"], "text", "Tokens", inputmode="numeric"),
        Field("seats", KV_LABELS["seats"], "text", "With a typical context: the pin for them", inputmode="numeric"),
        Field("typical_context", KV_LABELS["typical_context"], "text", "Tokens", inputmode="numeric"),
    ]


def kv_defaults(catalog: Catalog) -> Defaults:
    deployment_id = gated(catalog)[0]
    base = report.defaults(catalog, deployment_id)
    reading = report.pool_reading(catalog, deployment_id, 0)
    readings = kv_readings(catalog)
    key = f"r{readings.index(reading)}" if reading in readings else TYPED
    deployment = catalog.deployments[deployment_id]
    values = {
        "reading": key,
        "bpt": "",
        "pin": size_text(base.kv_pin, "e9"),
        "tokens": fmt(base.max_model_len, "count"),
        "max_model_len": fmt(base.max_model_len, "count"),
        "seats": "",
        "typical_context": "",
    }
    sources = {
        "reading": f"Default: the measured reading of {esc(deployment['name'])}; every reading in the catalog is listed with its source",
        "bpt": "Default empty: a reading from the catalog is used",
        "pin": f"Default {esc(values['pin'])}: the pin of {esc(deployment['name'])}&rsquo;s serving start",
        "tokens": f"Default {esc(values['tokens'])}: one full context, the floor",
        "max_model_len": f"Default {esc(values['max_model_len'])}: {esc(deployment['name'])}&rsquo;s setting",
        "seats": "Default empty: not sized",
        "typical_context": "Default empty: not sized",
    }
    return Defaults(values, sources, {}, {"bpt": key != TYPED})


def run_kv(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(KV_LABELS)
    errors: dict[str, str] = {}
    key = str(raw.get("reading", "")).strip()
    readings = kv_readings(catalog)
    reading = None
    if key == TYPED:
        bpt = _take(errors, "bpt", _count(raw, "bpt", KV_LABELS["bpt"]))
        per_token, source = (Fraction(bpt) if bpt else None), "typed"
    elif re.fullmatch(r"r[0-9]+", key) and int(key[1:]) < len(readings):
        reading = readings[int(key[1:])]
        per_token, source = reading.bytes_per_token, reading.provenance
    else:
        errors["reading"] = f"{KV_LABELS['reading']}: found {key or 'nothing'!r}, expected a reading from the list or typed"
        per_token, source = None, ""
    pin = _take(errors, "pin", lambda: parse_size(str(raw.get("pin", "")), short(KV_LABELS["pin"])))
    tokens = _take(errors, "tokens", _count(raw, "tokens", KV_LABELS["tokens"]))
    max_len = _take(errors, "max_model_len", _count(raw, "max_model_len", KV_LABELS["max_model_len"]))
    seats = _take(errors, "seats", _count(raw, "seats", KV_LABELS["seats"], optional=True))
    typical = _take(errors, "typical_context", _count(raw, "typical_context", KV_LABELS["typical_context"], optional=True))
    if errors or per_token is None:
        return _invalid("kv", errors, KV_LABELS, names)
    fig = Figures()
    if reading is not None:
        held, logged = reading.tokens_at(pin)
    else:
        held, logged = kv.tokens_for_pool(pin, per_token), False
    whole = int(held)
    contexts = kv.full_contexts(whole, max_len)
    one = kv.holds_one_context(whole, max_len)
    pin_for = kv.pool_for_tokens(tokens, per_token)
    rows = [
        ("Bytes per token per rank", f"{fig('bpt', fmt(per_token, 'count'))} B ({esc(source)})"),
        (
            f"{fig('pin', size_text(pin, 'e9'))} ({fig('pin_gib', fmt(pin, 'GiB'))}) holds",
            fig("tokens_held", fmt(held, "tokens")) + (" (logged by vLLM at this pin)" if logged else ""),
        ),
        (f"Full contexts of {fig('max_len', fmt(max_len, 'tokens'))}", fig("contexts", fmt(contexts, "count", 0, down=True)) + " at once"),
        ("Maximum concurrency", fig("concurrency", fmt(contexts, "x"))),
        ("One full context fits", fig("one_context", "yes" if one else "no") + ("" if one else " (below the floor)")),
        (
            f"{fig('tokens', fmt(tokens, 'tokens'))} need a pin of",
            f"{fig('pin_for_tokens', pin_up(pin_for))} ({fig('pin_for_tokens_gib', fmt(pin_for, 'GiB'))}; {fig('pin_for_tokens_b', fmt(pin_for, 'B'))})",
        ),
    ]
    if seats and typical:
        needed = kv.tokens_needed(seats, typical)
        rows.append(
            (
                f"{fmt(seats, 'count')} seats &times; {fmt(typical, 'tokens')}",
                f"{fig('tokens_needed', fmt(needed, 'tokens'))}, a pin of {fig('pin_for_needed', pin_up(kv.pool_for_tokens(needed, per_token)))}",
            )
        )
    verdict = f"{fig('summary_tokens', fmt(held, 'tokens'))} in {size_text(pin, 'e9')}; {fmt(tokens, 'tokens')} need {pin_up(pin_for)}."
    return Output("kv", True, {}, {"kv-verdict": verdict, "kv-result": _dl(rows)}, fig.shown, names)


# --- several models on one box --------------------------------------------------------------


def plan_labels() -> dict[str, str]:
    labels = {"box": "Box"}
    for n in range(1, PLAN_ROWS + 1):
        labels[f"model_{n}"] = f"Model {fmt(n, 'count')}"
        labels[f"kv_{n}"] = f"Model {fmt(n, 'count')}: KV pool"
        labels[f"headroom_{n}"] = f"Model {fmt(n, 'count')}: headroom"
    labels["fractions"] = "Engine fractions, in start order"
    labels["available"] = "MemAvailable before the first engine"
    return labels


def _resident_models(catalog: Catalog) -> list[str]:
    return [m for m, e in catalog.models.items() if "weights" in e]


def plan_fields(catalog: Catalog) -> list[Field]:
    labels = plan_labels()
    models = tuple(
        [("", "none", False)]
        + [
            (m, f"{catalog.models[m]['name']}: {fmt(catalog.models[m]['weights'].value, 'GiB')} ({catalog.models[m]['weights'].provenance})", False)
            for m in _resident_models(catalog)
        ]
    )
    boxes = tuple((b, f"{e['name']}: {fmt(e['total_memory'].value, 'GiB')}", False) for b, e in catalog.boxes.items())
    out = [Field("box", labels["box"], "select", options=boxes)]
    for n in range(1, PLAN_ROWS + 1):
        out.append(Field(f"model_{n}", labels[f"model_{n}"], "select", options=models))
        out.append(Field(f"kv_{n}", labels[f"kv_{n}"], "text", "Bytes"))
        out.append(Field(f"headroom_{n}", labels[f"headroom_{n}"], "text", "Bytes"))
    out.append(Field("fractions", labels["fractions"], "text", "gpu_memory_utilization of each engine, separated by commas", inputmode="decimal"))
    out.append(Field("available", labels["available"], "text", "Bytes: " + size_examples()))
    return out


def _plan_available(box: dict[str, Any]) -> tuple[int, Figure]:
    """What the box has free before the first engine: its idle reading, its free-at-start reading, or its total."""
    figure = box.get("idle_available") or box.get("free_at_start") or box["total_memory"]
    return figure.value, figure


def plan_defaults(catalog: Catalog, box_id: str | None = None) -> Defaults:
    plan = next(iter(catalog.plans.values()), None)
    together = next(iter(catalog.fraction_plans.values()), None)
    box_id = box_id or (plan["box"] if plan else next(iter(catalog.boxes)))
    box = catalog.boxes[box_id]
    residents = [r["model"] for r in plan["residents"]] if plan else []
    values: dict[str, str] = {"box": box_id}
    sources: dict[str, str] = {"box": f"Total {esc(fmt(box['total_memory'].value, 'GiB'))} ({esc(box['total_memory'].provenance)})"}
    for n in range(1, PLAN_ROWS + 1):
        model = residents[n - 1] if n <= len(residents) else ""
        values[f"model_{n}"] = model
        values[f"kv_{n}"] = fmt(0, "GiB", 0)
        values[f"headroom_{n}"] = fmt(0, "GiB", 0)
        role = plan["residents"][n - 1].get("role", "") if plan and n <= len(residents) else ""
        sources[f"model_{n}"] = (
            f"Default: the plan &ldquo;{esc(plan['title'] if plan else '')}&rdquo;" + (f"; {esc(role)}" if role else "") if model else "Default: none"
        )
        sources[f"kv_{n}"] = "Default 0: the catalog has no KV figure for this lineup; type yours"
        sources[f"headroom_{n}"] = "Default 0: type the headroom you keep for this model"
    values["fractions"] = ", ".join(fmt(f, "fraction") for f in together["fractions"]) if together else ""
    sources["fractions"] = f"Default {esc(values['fractions'])}: the fractions planned together (catalog/plans.yaml)" if together else ""
    value, figure = _plan_available(box)
    values["available"] = size_text(value, "GiB")
    sources["available"] = _src(figure, values["available"])
    return Defaults(values, sources)


def _parse_fractions(text: str, label: str) -> list[Fraction]:
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    if not parts:
        raise InputError(f"{label}: found nothing, expected fractions such as 0.5, 0.35")
    return [parse_fraction(p, label) for p in parts]


def run_plan(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    labels = plan_labels()
    names = tuple(labels)
    errors: dict[str, str] = {}
    box_id = str(raw.get("box", "")).strip()
    if box_id not in catalog.boxes:
        errors["box"] = f"{labels['box']}: found {box_id or 'nothing'!r}, expected one of {', '.join(catalog.boxes)}"
    residents = []
    for n in range(1, PLAN_ROWS + 1):
        model_id = str(raw.get(f"model_{n}", "")).strip()
        if not model_id:
            continue
        if model_id not in _resident_models(catalog):
            errors[f"model_{n}"] = f"{labels[f'model_{n}']}: found {model_id!r}, expected one of {', '.join(_resident_models(catalog))}"
            continue
        size = _take(errors, f"kv_{n}", _size(raw, f"kv_{n}", labels[f"kv_{n}"]))
        headroom = _take(errors, f"headroom_{n}", _size(raw, f"headroom_{n}", labels[f"headroom_{n}"]))
        model = catalog.models[model_id]
        residents.append((budget.Resident(model["name"], model["weights"].value, size or 0, headroom or 0), model["weights"]))
    fractions = _take(errors, "fractions", lambda: _parse_fractions(str(raw.get("fractions", "")), labels["fractions"]))
    available = _take(errors, "available", lambda: parse_size(str(raw.get("available", "")), labels["available"]))
    if errors:
        return _invalid("plan", errors, labels, names)
    box = catalog.boxes[box_id]
    total = box["total_memory"].value
    result = budget.budget(total, [r for r, _ in residents])
    fig = Figures()
    rows = [
        (
            esc(r.name),
            fig(f"weights_{n}", fmt(r.weights, "GiB")),
            fig(f"kv_{n}", fmt(r.kv, "GiB")),
            fig(f"headroom_{n}", fmt(r.headroom, "GiB")),
            fig(f"resident_{n}", fmt(r.total, "GiB")),
            esc(w.provenance),
        )
        for n, (r, w) in enumerate(residents, 1)
    ]
    total_row = ("together", "", "", "", fig("used", fmt(result.used, "GiB")), f"against {fig('total', fmt(total, 'GiB'))} in all")
    table = _table(("Model", "Weights", "KV", "Headroom", "Resident", "Weights source"), rows, "Weights + KV + headroom of each resident model", total_row)
    if result.fits:
        budget_line = f"<p>{_verdict(True, 'fits', '')} {fig('left', fmt(result.left, 'GiB'))} left over.</p>"
    else:
        budget_line = (
            f"<p>{_verdict(False, '', 'over the box')} by {fig('over', fmt(-result.left, 'GiB'))}. When the budget does not close: drop a model, "
            "run a two-node cluster (capacity, not speed), or add a second independent node.</p>"
        )
    engines = fraction.plan(total, available, fractions)
    engine_rows = [
        (
            f"engine {fmt(n, 'count')}",
            fig(f"engine_{n}_fraction", fmt(e.fraction, "fraction")),
            fig(f"engine_{n}_asks", fmt(e.requested, "GiB")),
            fig(f"engine_{n}_free", fmt(e.free_before, "GiB")),
            _verdict(e.passes, "starts", "refused")
            + fig(f"engine_{n}_verdict", "starts" if e.passes else "refused").replace('class="fig"', 'class="fig calc-sr"'),
        )
        for n, e in enumerate(engines, 1)
    ]
    engine_table = _table(
        ("Engine", "Fraction", "Asks for", "Free before it", "Start"),
        engine_rows,
        "Engines started one after another, each claiming its fraction of the box total",
    )
    started = sum(1 for e in engines if e.passes)
    verdict = (
        f"Resident models: {fig('summary_fits', 'fit' if result.fits else 'over the box')}; "
        f"engines: {fig('summary_started', fmt(started, 'count'))} of {fmt(len(engines), 'count')} start."
    )
    result_html = (
        f'<section class="calc-section"><h3>Resident budget</h3>{table}{budget_line}</section>'
        f'<section class="calc-section"><h3>Fractions planned together</h3>{engine_table}</section>'
    )
    return Output("plan", True, {}, {"plan-verdict": verdict, "plan-result": result_html}, fig.shown, names)


# --- auto-prefetch --------------------------------------------------------------------------

PREFETCH_LABELS = {"checkpoint": "Checkpoint size", "available": "MemAvailable when loading starts"}


def prefetch_fields() -> list[Field]:
    return [
        Field("checkpoint", PREFETCH_LABELS["checkpoint"], "text", "Bytes: " + size_examples()),
        Field("available", PREFETCH_LABELS["available"], "text", "After the kernel-init allocations, on GB10"),
    ]


def _prefetch_trace(catalog: Catalog) -> dict[str, Any] | None:
    return next((t for t in catalog.traces.values() if "checkpoint" in t), None)


def prefetch_defaults(catalog: Catalog) -> Defaults:
    trace = _prefetch_trace(catalog)
    if trace is None:
        return Defaults({"checkpoint": "", "available": ""}, {"checkpoint": "Default empty", "available": "Default empty"})
    sample = trace["samples"][-1]
    checkpoint = trace["checkpoint"]
    values = {"checkpoint": size_text(checkpoint.value, "GB"), "available": size_text(sample["available"], "MiB")}
    event = f" ({sample['event']})" if sample.get("event") else ""
    sources = {
        "checkpoint": _src(checkpoint, values["checkpoint"]),
        "available": f"Default {esc(values['available'])}: the last poll of the trace &ldquo;{esc(trace['title'])}&rdquo; at T+{esc(fmt(sample['t'], 's', 0))}{esc(event)} ({esc(trace['kind'])})",
    }
    return Defaults(values, sources)


def run_prefetch(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(PREFETCH_LABELS)
    errors: dict[str, str] = {}
    checkpoint = _take(errors, "checkpoint", lambda: parse_size(str(raw.get("checkpoint", "")), PREFETCH_LABELS["checkpoint"]))
    available = _take(errors, "available", lambda: parse_size(str(raw.get("available", "")), PREFETCH_LABELS["available"]))
    if errors:
        return _invalid("prefetch", errors, PREFETCH_LABELS, names)
    share_figure = catalog.policy["vllm"]["prefetch_fraction"]
    share = share_figure.value
    enabled = prefetch.prefetch_enabled(checkpoint, available, share)
    largest = prefetch.largest_prefetched(available, share)
    fig = Figures()
    state = fig("enabled", "prefetched" if enabled else "not prefetched")
    rows = [
        (
            "Rule",
            f"prefetch only when the checkpoint is at most {fig('share', fmt(share, '%', 0))} of available ({esc(share_figure.source or share_figure.provenance)})",
        ),
        ("Checkpoint", fig("checkpoint", fmt(checkpoint, "GB", 1)) + f" ({fig('checkpoint_gib', fmt(checkpoint, 'GiB'))})"),
        ("Largest checkpoint still prefetched", fig("largest", fmt(largest, "GB", 1)) + f" ({fig('largest_gib', fmt(largest, 'GiB'))})"),
        ("Auto-prefetch", _verdict(enabled, "on", "off") + (" the checkpoint is read ahead into page cache" if enabled else " the slow read path")),
    ]
    verdict = f"Checkpoint {fmt(checkpoint, 'GB', 1)} against {fmt(available, 'GiB')} available: {state}."
    return Output("prefetch", True, {}, {"prefetch-verdict": verdict, "prefetch-result": _dl(rows)}, fig.shown, names)


# --- the per-request fit -------------------------------------------------------------------

FIT_LABELS = {
    "pool": "KV pool a rank",
    "length_1": "max_model_len, first start",
    "tokens_1": "Tokens logged, first start",
    "length_2": "max_model_len, second start",
    "tokens_2": "Tokens logged, second start",
    "predict": "Predict at max_model_len",
}


def fit_fields() -> list[Field]:
    tokens_help = 'The "GPU KV cache size: N tokens" line'
    return [
        Field("pool", FIT_LABELS["pool"], "text", "The same pool at both starts. Bytes: " + size_examples()),
        Field("length_1", FIT_LABELS["length_1"], "text", "--max-model-len", inputmode="numeric"),
        Field("tokens_1", FIT_LABELS["tokens_1"], "text", tokens_help, inputmode="numeric"),
        Field("length_2", FIT_LABELS["length_2"], "text", "Another --max-model-len, same build and pool", inputmode="numeric"),
        Field("tokens_2", FIT_LABELS["tokens_2"], "text", tokens_help, inputmode="numeric"),
        Field("predict", FIT_LABELS["predict"], "text", "The context length you plan to run", inputmode="numeric"),
    ]


def fit_defaults(catalog: Catalog) -> Defaults:
    found = next(((m, r) for m in catalog.models.values() for r in m.get("length_reports", []) if len(r["readings"]) >= 2), None)
    deployment = next(iter(catalog.deployments.values()))
    predict = derive.start_settings(catalog, deployment)["max_model_len"]
    predict_text = fmt(predict, "plain", 0)
    predict_source = f"Default {esc(predict_text)}: the max_model_len of {esc(deployment['name'])}"
    if found is None:
        values = dict.fromkeys(FIT_LABELS, "")
        return Defaults({**values, "predict": predict_text}, {**{k: "Default empty" for k in FIT_LABELS}, "predict": predict_source})
    model, rep = found
    pool = rep["pool"]
    size = pool.value if pool.value is not None else pool.minimum
    first, second = rep["readings"][:2]
    values = {
        "pool": size_text(size, "GiB"),
        "length_1": fmt(first["max_model_len"], "plain", 0),
        "tokens_1": fmt(first["tokens"].value, "plain", 0),
        "length_2": fmt(second["max_model_len"], "plain", 0),
        "tokens_2": fmt(second["tokens"].value, "plain", 0),
        "predict": predict_text,
    }
    low = "" if pool.value is not None else ", the low end of the range"
    sources = {
        "pool": _src(pool, values["pool"], low),
        "length_1": f"Default {esc(values['length_1'])}: {esc(model['name'])}, {esc(rep.get('label', ''))}",
        "tokens_1": _src(first["tokens"], values["tokens_1"]),
        "length_2": f"Default {esc(values['length_2'])}: the same report",
        "tokens_2": _src(second["tokens"], values["tokens_2"]),
        "predict": predict_source,
    }
    return Defaults(values, sources)


def run_fit(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(FIT_LABELS)
    errors: dict[str, str] = {}
    pool = _take(errors, "pool", lambda: parse_size(str(raw.get("pool", "")), FIT_LABELS["pool"]))
    counts = {name: _take(errors, name, _count(raw, name, FIT_LABELS[name])) for name in names[1:]}
    if not errors:
        points = [(counts["length_1"], counts["tokens_1"]), (counts["length_2"], counts["tokens_2"])]
        try:
            fit = report.fit_report(pool, points, [counts["predict"]])
        except InputError as error:
            errors["pool" if str(error).startswith("pool") else "length_2"] = str(error)
    if errors:
        return _invalid("fit", errors, FIT_LABELS, names)
    fig = Figures()
    rows = [
        ("Per token", fig("per_token", fmt(fit["per_token_bytes"], "B"))),
        ("Fixed, every request", fig("fixed", fmt(fit["fixed_bytes"], "GB", 2)) + f" ({fig('fixed_gib', fmt(fit['fixed_bytes'], 'GiB'))})"),
        *(
            (f"Pool / tokens at {fmt(r['max_model_len'], 'count')}", fig(f"pool_over_tokens_{n}", fmt(r["pool_over_tokens"], "B")))
            for n, r in enumerate(fit["readings"], 1)
        ),
    ]
    predicted = fit["predicted"][0]
    at = fmt(predicted["max_model_len"], "count")
    rows += [
        (f"Tokens vLLM would log at {at}", fig("predicted_tokens", fmt(predicted["tokens"], "tokens"))),
        (f"Full {at}-token contexts", fig("predicted_contexts", fmt(predicted["full_contexts"], "x"))),
    ]
    verdict = (
        f"Each request costs {fmt(fit['per_token_bytes'], 'B')} a token of context plus {fmt(fit['fixed_bytes'], 'GB', 2)} fixed; "
        f"at {at} the pool would show {fmt(predicted['tokens'], 'tokens')}."
    )
    return Output("fit", True, {}, {"fit-verdict": verdict, "fit-result": _dl(rows)}, fig.shown, names)


# --- the page -------------------------------------------------------------------------------

TITLES = {
    "start": "Will this start fit?",
    "kv": "The KV pool, both ways",
    "fit": "Per-request cost over max_model_len",
    "plan": "Several models on one box",
    "prefetch": "vLLM's auto-prefetch",
}


def fields_of(catalog: Catalog, calculator: str) -> list[Field]:
    return {
        "start": lambda: start_fields(catalog),
        "kv": lambda: kv_fields(catalog),
        "fit": fit_fields,
        "plan": lambda: plan_fields(catalog),
        "prefetch": prefetch_fields,
    }[calculator]()


def defaults_of(catalog: Catalog, calculator: str) -> Defaults:
    return {
        "start": lambda: start_defaults(catalog),
        "kv": lambda: kv_defaults(catalog),
        "fit": lambda: fit_defaults(catalog),
        "plan": lambda: plan_defaults(catalog),
        "prefetch": lambda: prefetch_defaults(catalog),
    }[calculator]()


RUNNERS: dict[str, Callable[[Catalog, Mapping[str, str]], Output]] = {
    "start": run_start,
    "kv": run_kv,
    "fit": run_fit,
    "plan": run_plan,
    "prefetch": run_prefetch,
}


def run(catalog: Catalog, calculator: str, raw: Mapping[str, str]) -> Output:
    if calculator not in RUNNERS:
        raise ValueError(f"calculator: found {calculator!r}, expected one of {', '.join(CALCULATORS)}")
    return RUNNERS[calculator](catalog, raw)


def changed(catalog: Catalog, calculator: str, name: str, raw: Mapping[str, str]) -> dict[str, Any] | None:
    """Field updates after an edit that moves other defaults: a new deployment, box or reading."""
    if calculator == "start" and name == "deployment" and str(raw.get("deployment", "")) in gated(catalog):
        return start_defaults(catalog, str(raw["deployment"])).to_json("start")
    if calculator == "plan" and name == "box" and str(raw.get("box", "")) in catalog.boxes:
        box = catalog.boxes[str(raw["box"])]
        value, figure = _plan_available(box)
        text = size_text(value, "GiB")
        return {
            "values": {"plan-available": text},
            "sources": {
                "plan-available-src": _src(figure, text),
                "plan-box-src": f"Total {esc(fmt(box['total_memory'].value, 'GiB'))} ({esc(box['total_memory'].provenance)})",
            },
            "hidden": {},
            "disabled": {},
        }
    if calculator == "kv" and name == "reading":
        return {"values": {}, "sources": {}, "hidden": {}, "disabled": {"kv-bpt": str(raw.get("reading", "")) != TYPED}}
    return None


def calculator_html(catalog: Catalog, calculator: str) -> str:
    """One calculator at its defaults, as the build renders it before Python loads."""
    d = defaults_of(catalog, calculator)
    return block_html(calculator, TITLES[calculator], fields_of(catalog, calculator), d, run(catalog, calculator, d.values))


def run_json(catalog: Catalog, text: str) -> str:
    """The page's single entry for machines: {"calculator": ..., "inputs": {...}} in, Output as JSON out."""
    try:
        request = json.loads(text)
        calculator = request.get("calculator", "start") if isinstance(request, dict) else None
        inputs = request.get("inputs", {}) if isinstance(request, dict) else None
        if calculator not in RUNNERS or not isinstance(inputs, dict):
            raise ValueError('expected {"calculator": "start", "inputs": {...}}')
        return json.dumps(run(catalog, calculator, {str(k): str(v) for k, v in inputs.items()}).to_json())
    except (ValueError, TypeError) as error:
        return json.dumps({"calculator": None, "valid": False, "errors": {"request": str(error)}, "fields": [], "sections": {}, "figures": {}})
