"""The per-request fit: bytes a token and a fixed cost a request, from one pool's logged tokens at two
max_model_len, and the tokens it predicts at another.
"""

from __future__ import annotations

from collections.abc import Mapping

from calc.answers import report
from calc.catalog.model import Catalog
from calc.engine import derive
from calc.present import charts
from calc.present.calculators.form import Defaults, Field, Figures, Output, default_note, dl, esc, form_fields, form_labels, invalid, read, size_text
from calc.present.chart import figure_html
from calc.units import InputError, fmt

NAME = "fit"
TITLE = "Per-request cost over max_model_len"

LABELS = form_labels(NAME)


def fields(catalog: Catalog) -> list[Field]:
    return form_fields(NAME)


def defaults(catalog: Catalog) -> Defaults:
    found = next(((m, r) for m in catalog.models.values() for r in m.get("length_reports", []) if len(r["readings"]) >= 2), None)
    deployment = next(iter(catalog.deployments.values()))
    predict = derive.start_settings(catalog, deployment)["max_model_len"]
    predict_text = fmt(predict, "plain", 0)
    predict_source = f"Default {esc(predict_text)}: the max_model_len of {esc(deployment['name'])}"
    if found is None:
        values = dict.fromkeys(LABELS, "")
        return Defaults({**values, "predict": predict_text}, {**{k: "Default empty" for k in LABELS}, "predict": predict_source})
    model, rep = found
    pool = rep["pool"]
    size = pool.sizes[0]  # a range: its low end
    first, second = rep["readings"][:2]
    values = {
        "pool": size_text(size, "GiB"),
        "length_1": fmt(first["max_model_len"], "plain", 0),
        "tokens_1": fmt(first["tokens"].count, "plain", 0),
        "length_2": fmt(second["max_model_len"], "plain", 0),
        "tokens_2": fmt(second["tokens"].count, "plain", 0),
        "predict": predict_text,
    }
    low = "" if pool.value is not None else ", the low end of the range"
    sources = {
        "pool": default_note(pool, values["pool"], low),
        "length_1": f"Default {esc(values['length_1'])}: {esc(model['name'])}, {esc(rep.get('label', ''))}",
        "tokens_1": default_note(first["tokens"], values["tokens_1"]),
        "length_2": f"Default {esc(values['length_2'])}: the same report",
        "tokens_2": default_note(second["tokens"], values["tokens_2"]),
        "predict": predict_source,
    }
    return Defaults(values, sources)


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    errors: dict[str, str] = {}
    pool = read(NAME, raw, errors, "pool", LABELS)
    counts = {name: read(NAME, raw, errors, name, LABELS) for name in names[1:]}
    if not errors:
        points = [(counts["length_1"], counts["tokens_1"]), (counts["length_2"], counts["tokens_2"])]
        try:
            fit = report.fit_report(pool, points, [counts["predict"]])
        except InputError as error:
            errors["pool" if str(error).startswith("pool") else "length_2"] = str(error)
    if errors:
        return invalid("fit", errors, LABELS, names)
    fig = Figures()
    rows = [
        ("Per token", fig("per_token", fmt(fit.per_token_bytes, "B"))),
        ("Fixed, every request", fig("fixed", fmt(fit.fixed_bytes, "GB", 2)) + f" ({fig('fixed_gib', fmt(fit.fixed_bytes, 'GiB'))})"),
        *(
            (f"Pool / tokens at {fmt(r.max_model_len, 'count')}", fig(f"pool_over_tokens_{n}", fmt(r.pool_over_tokens, "B")))
            for n, r in enumerate(fit.readings, 1)
        ),
    ]
    predicted = fit.predicted[0]
    at = fmt(predicted.max_model_len, "count")
    rows += [
        (f"Tokens vLLM would log at {at}", fig("predicted_tokens", fmt(predicted.tokens, "tokens"))),
        (f"Full {at}-token contexts", fig("predicted_contexts", fmt(predicted.full_contexts, "x", down=True))),
    ]
    verdict = (
        f"Each request costs {fmt(fit.per_token_bytes, 'B')} a token of context plus {fmt(fit.fixed_bytes, 'GB', 2)} fixed; "
        f"at {at} the pool would show {fmt(predicted.tokens, 'tokens')}."
    )
    drawn = figure_html(charts.length_plot("fit-curve", [(pool, fit.per_token_bytes, fit.fixed_bytes)], points, [(predicted.max_model_len, predicted.tokens)]))
    return Output("fit", True, {}, {"fit-verdict": verdict, "fit-result": dl(rows) + drawn}, fig.shown, names)
