"""Macros of the KV pool page's accuracy sections: the config model and the predicted pool beside
what public startup logs printed."""

from __future__ import annotations

from pathlib import Path

from calc.catalog.model import Catalog
from calc.checks import accuracy, poolaccuracy, records
from calc.engine import hfconfig
from calc.jsontext import JsonObject
from hooks.pagemacros.build import Build, table
from hooks.pagemacros.every_page import fig, source_text


def model_accuracy_rows(build: Build) -> list[accuracy.Row]:
    """Every observation with a known architecture, predicted by the config model."""
    if build.accuracy_rows is None:  # once a build: three tables on the KV page read the same rows
        build.accuracy_rows = model_accuracy(build.root, build.catalog)
    return build.accuracy_rows


def model_accuracy_table(build: Build) -> str:
    """Predicted beside printed, row by row: the published accuracy of calc/engine/kvlayout.py."""
    rows = []
    for r in model_accuracy_rows(build):
        o = r.observation
        pool = fig(o.pool_low, "B") if o.pool_low == o.pool_high else fig(o.pool, "GiB")
        needed = o.quantity == "needed"
        unit = "GiB" if needed else "count"
        rows.append((
            f"[{source_text(o.label)}]({o.source})" if o.source.startswith("http") else f"{source_text(o.label)} ({o.source})",
            r.family, source_text(o.rules), pool,
            f"{fig(o.printed, unit)} needed by one request" if needed else f"{fig(o.printed, unit)} {o.quantity}",
            fig(r.predicted, unit, source="modeled by calc/engine/kvlayout.py"),
            fig(r.error, "%", 2),
            "yes" if r.within_precision else "no",
            fig(r.predicted_per_token, "count", source="modeled"), fig(r.printed_pool_per_token, "count"),
            source_text(o.suspicion),
        ))  # fmt: skip
    head = ("Start", "Family", "Rules", "Pool a rank", "Printed", "Modeled", "Error", "Within printed precision",
            "Modeled B a token", "Pool ÷ printed tokens", "What we suspect")  # fmt: skip
    return table(head, rows)


def model_weights_table(build: Build) -> str:
    """Weights a rank by the config's count beside what the log's loading line says."""
    rows = []
    for r in model_accuracy_rows(build):
        found = accuracy.weights_error(r.observation)
        if found is None:
            continue
        modeled, error = found
        o = r.observation
        rows.append((f"[{source_text(o.label)}]({o.source})", fig(o.settings.tp, "count"), fig(o.weights_loaded, "GiB", 4),
                     fig(modeled, "GiB", 4, source="modeled by calc/engine/weights.py"), fig(error, "%", 2)))  # fmt: skip
    return table(("Start", "TP", '"Model loading took"', "Modeled weights a rank", "Error"), rows)


def pool_prediction_summary(build: Build) -> str:
    """The predicted pool's error on the fitted and the held-out starts of models/pool_starts.yaml."""
    rows = pool_rows(build.root, build.catalog)
    out = []
    for name, chosen in (("fitted", [r for r in rows if not r.held_out]), ("held out", [r for r in rows if r.held_out])):
        s = poolaccuracy.summary(chosen)
        shown = [fig(x, "%", 1) if x is not None else "no start yet" for x in (s.median, s.p90)]
        out.append((name, fig(s.starts, "count"), *shown, f"{fig(s.verdicts_right, 'count')} of {fig(s.verdicts, 'count')}"))
    return table(("Starts", "With a printed pool", "Median error", "90th-percentile error", "Verdict right"), out)


def pool_prediction_by_group(build: Build) -> str:
    """The predicted pool's error by family and by era, fitted and held-out starts together."""
    out = []
    for kind, name, s in poolaccuracy.by_group(pool_rows(build.root, build.catalog)):
        shown = [fig(x, "%", 1) if x is not None else "no printed pool" for x in (s.median, s.p90)]
        out.append((kind, source_text(name), fig(s.starts, "count"), *shown, f"{fig(s.verdicts_right, 'count')} of {fig(s.verdicts, 'count')}"))
    return table(("By", "Group", "With a printed pool", "Median error", "90th-percentile error", "Verdict right"), out)


def pool_prediction_terms(build: Build) -> str:
    """Each term the starts' logs print, beside the prediction's figure for it, over every era and in each."""
    out = []
    for t in poolaccuracy.term_errors(pool_rows(build.root, build.catalog)):
        out.append((poolaccuracy.TERM_NAMES[t.term], source_text(t.era) if t.era else "every era", fig(t.starts, "count"),
                    fig(t.median, "GiB"), fig(t.p90, "GiB"), fig(t.median_relative, "%", 1)))  # fmt: skip
    return table(("Term", "Era", "Starts that print it", "Median error", "90th-percentile error", "Median error, relative"), out)


def pool_card_non_torch(build: Build) -> str:
    """Each card whose fitted one-GPU V1 starts set its own non-torch memory (predict.NON_TORCH_CARD_OFFSETS)."""
    from calc.engine import predict

    rows = pool_rows(build.root, build.catalog)
    out = []
    for card, offset in predict.NON_TORCH_CARD_OFFSETS.items():
        own = [r for r in rows if r.card == card and poolaccuracy.card_offset_row(r)]  # the rows the fit counts
        fitted = sum(not r.held_out for r in own)
        out.append((source_text(str(build.catalog.boxes[card]["name"])), fig(fitted, "count"), fig(len(own) - fitted, "count"),
                    fig(predict.NON_TORCH_ONE_RANK + offset, "GiB", source="fitted"), fig(offset, "GiB", source="fitted")))  # fmt: skip
    return table(("Card", "Fitted one-GPU V1 starts", "Held out", "Non-torch memory on one GPU", "Beside V1's constant"), out)


def pool_prediction_table(build: Build) -> str:
    """Each start: the pool vLLM printed beside the pool calc/engine/predict/ predicts from the config."""
    out = []
    for r in pool_rows(build.root, build.catalog):
        p = r.prediction
        out.append((
            f"[{source_text(r.label)}]({r.url})" if r.url else source_text(r.label), "held out" if r.held_out else "fitted",
            fig(r.printed_pool, "GiB"), fig(p.available_kv_bytes, "GiB", source="predicted by calc/engine/predict/"),
            fig(r.error, "%", 1) if r.error is not None else "vLLM refused: no KV memory",
            fig(p.activation.bytes, "GiB", source="modeled"), fig(p.cuda_graph.bytes, "GiB", source="modeled"), source_text(p.verdict),
        ))  # fmt: skip
    return table(("Start", "Set", "Printed pool", "Predicted pool", "Error", "Activation peak", "CUDA graphs", "Verdict"), out)


def model_accuracy_by_family(build: Build) -> str:
    rows = model_accuracy_rows(build)
    errors, covered = accuracy.family_errors(rows), accuracy.family_errors(rows, covered_only=True)
    out = []
    for family, mae in errors.items():
        n = sum(1 for r in rows if r.family == family)
        exact = sum(1 for r in rows if r.family == family and r.within_precision)
        shown = [fig(e, "%", 2) if e is not None else "no observation yet" for e in (mae, covered[family])]
        out.append((family, fig(n, "count"), fig(exact, "count"), *shown))
    head = ("Family", "Rows", "Within printed precision", "Mean absolute error", "Mean absolute error, rows the rules cover")
    return table(head, out)


def public_observations(root: Path) -> tuple[list[records.Observation], dict[str, JsonObject], dict[str, str]]:
    """models/observations.yaml, the config.json files and the public logs it names, as read."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml, as the catalog is read
    entries = records.observations(yaml.load((root / records.OBSERVATIONS).read_text(encoding="utf-8"), Loader=loader))
    configs = {e.config: _config(root, e.config) for e in entries if e.config is not None}
    logs = {e.log: (root / "logs" / "public" / e.log).read_text(encoding="utf-8") for e in entries if e.log is not None}
    return entries, configs, logs


def _config(root: Path, name: str) -> JsonObject:
    """A shipped config.json (models/configs/NAME/), read as the command line reads one."""
    path = root / "models" / "configs" / name / "config.json"
    return hfconfig.load(path.read_text(encoding="utf-8"), str(path.relative_to(root)))


def model_accuracy(root: Path, catalog: Catalog) -> list[accuracy.Row]:
    """The accuracy table's rows: the public observations, then the catalog's own starts."""
    entries, configs, logs = public_observations(root)
    return [accuracy.row(o) for o in accuracy.public_observations(entries, configs, catalog, logs) + accuracy.catalog_observations(catalog)]


def pool_rows(root: Path, catalog: Catalog) -> list[poolaccuracy.Row]:
    """models/pool_starts.yaml's starts, each predicted and set beside its printed pool."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    entries = records.pool_starts(yaml.load((root / records.POOL_STARTS).read_text(encoding="utf-8"), Loader=loader))
    configs = {e.config: _config(root, e.config) for e in entries}
    logs = {e.log: (root / "logs" / "public" / e.log).read_text(encoding="utf-8") for e in entries}
    sources = yaml.load((root / "logs" / "public" / "SOURCES.yaml").read_text(encoding="utf-8"), Loader=loader)
    urls = {x["file"]: x["url"] for x in sources if isinstance(x, dict) and "file" in x}
    return poolaccuracy.rows(entries, configs, logs, catalog.boxes, urls)


MACROS = (
    model_accuracy_rows,
    model_accuracy_table,
    model_weights_table,
    pool_prediction_summary,
    pool_prediction_by_group,
    pool_prediction_terms,
    pool_card_non_torch,
    pool_prediction_table,
    model_accuracy_by_family,
)
