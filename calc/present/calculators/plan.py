"""Several models on one box: the resident budget, and the engines' fractions started one after another."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from calc.answers import report
from calc.catalog.entries import Box
from calc.catalog.model import Catalog, box_choices
from calc.catalog.spec import Figure
from calc.engine import budget, derive, fraction
from calc.jsontext import JsonObject
from calc.present import charts
from calc.present.calculators.form import (
    Defaults,
    Field,
    Figures,
    Output,
    badge,
    default_note,
    esc,
    form_fields,
    form_labels,
    invalid,
    read,
    size_text,
    table,
    take,
)
from calc.present.chart import figure_html
from calc.units import InputError, fmt, parse_fraction, parse_memory, printed_sum, shown

NAME = "plan"
TITLE = "Several models on one box"
PLAN_ROWS = 3


def field_labels() -> dict[str, str]:
    return form_labels(NAME)


def _resident_models(catalog: Catalog) -> list[str]:
    return [m for m, e in catalog.models.items() if "weights" in e]


def fields(catalog: Catalog) -> list[Field]:
    models = tuple(
        [("", "none", False)]
        + [
            (m, f"{catalog.models[m]['name']}: {fmt(catalog.models[m]['weights'].size, 'GiB')} ({catalog.models[m]['weights'].provenance})", False)
            for m in _resident_models(catalog)
        ]
    )
    boxes = tuple((b, f"{e['name']}: {fmt(derive.box_total(e)[0].size, 'GiB')}", False) for b, e in catalog.boxes.items())
    return form_fields(NAME, {"box": boxes, "model": models})


def _plan_available(box: Box) -> tuple[int, Figure]:
    """What the box has free before the first engine: its idle reading, its free-at-start reading, or its total."""
    figure = derive.box_free(box) or derive.box_total(box)[0]
    return figure.size, figure


def _total_note(box: Box) -> str:
    total = derive.box_total(box)
    kind = "" if total.kind == "engine" else f"; {total.what}"
    return f"Total {esc(fmt(total.figure.size, 'GiB'))} ({esc(total.figure.provenance)}{esc(kind)})"


def defaults(catalog: Catalog, box_id: str | None = None) -> Defaults:
    plan = next(iter(catalog.plans.values()), None)
    together = next(iter(catalog.fraction_plans.values()), None)
    box_id = box_id or (plan["box"] if plan else next(iter(catalog.boxes)))
    box = catalog.boxes[box_id]
    residents = [r["model"] for r in plan["residents"]] if plan else []
    values: dict[str, str] = {"box": box_id}
    sources: dict[str, str] = {"box": _total_note(box)}
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
    sources["available"] = default_note(figure, values["available"])
    return Defaults(values, sources)


def _parse_fractions(text: str, label: str) -> list[Fraction]:
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    if not parts:
        raise InputError(f"{label}: found nothing, expected fractions such as 0.5, 0.35")
    return [parse_fraction(p, label) for p in parts]


def _typed_beside_nothing(text: str) -> bool:
    """A size in a row whose model is empty: anything but nothing or zero (a row's default) was meant for a model."""
    try:
        return parse_memory(text, "") != 0 if text.strip() else False
    except InputError:
        return True


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    labels = field_labels()
    names = tuple(labels)
    errors: dict[str, str] = {}
    box_id = str(raw.get("box", "")).strip()
    if box_id not in catalog.boxes:
        errors["box"] = f"{labels['box']}: found {box_id or 'nothing'!r}, expected one of {box_choices(catalog.boxes, box_id)}"
    residents = []
    for n in range(1, PLAN_ROWS + 1):
        model_id = str(raw.get(f"model_{n}", "")).strip()
        if not model_id:  # an empty row: a size typed beside no model is a slip, not a row to drop silently
            for field in (f"kv_{n}", f"headroom_{n}"):
                if _typed_beside_nothing(str(raw.get(field, ""))):
                    errors[field] = (
                        f"{labels[field]}: found {str(raw.get(field)).strip()!r} beside no model, expected a model chosen in {labels[f'model_{n}']}, or the field 0 GiB or empty"
                    )
            continue
        if model_id not in _resident_models(catalog):
            errors[f"model_{n}"] = f"{labels[f'model_{n}']}: found {model_id!r}, expected one of {', '.join(_resident_models(catalog))}"
            continue
        size = read(NAME, raw, errors, f"kv_{n}", labels)
        headroom = read(NAME, raw, errors, f"headroom_{n}", labels)
        model = catalog.models[model_id]
        residents.append((budget.Resident(model["name"], model["weights"].size, size or 0, headroom or 0), model["weights"]))
    fractions = take(errors, "fractions", lambda: _parse_fractions(str(raw.get("fractions", "")), labels["fractions"]))
    available = read(NAME, raw, errors, "available", labels)
    if errors:
        return invalid("plan", errors, labels, names)
    box = catalog.boxes[box_id]
    total = derive.box_total(box)[0].size
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
    used = printed_sum([x for r, _ in residents for x in (r.weights, r.kv, r.headroom)], "GiB")
    left = shown(total, "GiB") - used
    total_row = ("together", "", "", "", fig("used", fmt(used, "GiB")), f"the sum as printed, against {fig('total', fmt(total, 'GiB'))} in all")
    residents_table = table(
        ("Model", "Weights", "KV", "Headroom", "Resident", "Weights source"), rows, "Weights + KV + headroom of each resident model", total_row
    )
    if result.fits:
        budget_line = f"<p>{badge(True, 'weights, KV and headroom fit', '')} {fig('left', fmt(left, 'GiB'))} left over.</p>"
    else:
        budget_line = (
            f"<p>{badge(False, '', 'over the box')} by {fig('over', fmt(-left, 'GiB'))}. When the budget does not close: drop a model, "
            "run a two-node cluster (capacity, not speed), or add a second independent node.</p>"
        )
    drawn = (
        figure_html(charts.residents_chart("plan-residents", [r for r, _ in residents], total, f"Resident models on one {box['name']}")) if residents else ""
    )
    engines = fraction.plan(total, available, fractions)
    engine_rows = [
        (
            f"engine {fmt(n, 'count')}",
            fig(f"engine_{n}_fraction", fmt(e.fraction, "fraction")),
            fig(f"engine_{n}_asks", fmt(e.requested, "GiB")),
            fig(f"engine_{n}_free", fmt(free, "GiB")),
            badge(e.passes, "starts", "refused")
            + fig(f"engine_{n}_verdict", "starts" if e.passes else "refused").replace('class="fig"', 'class="fig calc-sr"'),
        )
        for n, (e, free) in enumerate(zip(engines, report.free_as_printed(engines), strict=True), 1)
    ]
    engine_table = table(
        ("Engine", "Fraction", "Asks for", "Free before it", "Start"),
        engine_rows,
        "Engines started one after another, each claiming its fraction of the box total",
    )
    started = sum(1 for e in engines if e.passes)
    word, notes = report.plan_verdict(total, [r for r, _ in residents], fractions, engines)
    verdict = (
        f"Resident models: {fig('summary_fits', word)}; "
        f"engines: {fig('summary_started', fmt(started, 'count'))} of {fmt(len(engines), 'count')} start." + "".join(f" Note: {esc(n)}." for n in notes)
    )
    result_html = (
        f'<section class="calc-section"><h3>Resident budget</h3>{drawn}{residents_table}{budget_line}</section>'
        f'<section class="calc-section"><h3>Fractions planned together</h3>{engine_table}</section>'
    )
    return Output("plan", True, {}, {"plan-verdict": verdict, "plan-result": result_html}, fig.shown, names)


def changed(catalog: Catalog, name: str, raw: Mapping[str, str]) -> JsonObject | None:
    """A new box moves the MemAvailable default and the box's total beside it."""
    if name == "box" and str(raw.get("box", "")) in catalog.boxes:
        box = catalog.boxes[str(raw["box"])]
        value, figure = _plan_available(box)
        text = size_text(value, "GiB")
        return {
            "values": {"plan-available": text},
            "sources": {
                "plan-available-src": default_note(figure, text),
                "plan-box-src": _total_note(box),
            },
            "hidden": {},
            "disabled": {},
        }
    return None
