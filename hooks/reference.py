"""The catalog reference: one generated page per model and per box, every figure with its source.

Pages are built from the catalog at build time and never committed, so adding a model to
catalog/models.yaml adds its page with no other edit. The nav lists one index page for the models
and one for the boxes, which link every page: a nav listing each model on every page would grow
as models x pages.
"""

from __future__ import annotations

from calc.catalog.entries import Box, Model
from calc.catalog.model import Catalog
from calc.catalog.spec import Figure
from calc.engine import derive, fraction, hfconfig
from hooks.figures import render, source_text, text

SECTION = "Catalog reference"


MODELS_INDEX = "catalog/models/index.md"
BOXES_INDEX = "catalog/boxes/index.md"


def pages(catalog: Catalog) -> dict[str, tuple[str, str]]:
    """src path -> (title, markdown): the two index pages, then one page per model and per box.

    The readings and fits are derived once over the catalog, then handed to each model's page.
    """
    readings = derive.kv_readings(catalog)
    fits = derive.length_fits(catalog)
    out = {
        MODELS_INDEX: ("Models", f"# Models\n\n{models_table(catalog, '')}\n"),
        BOXES_INDEX: ("Boxes", f"# Boxes\n\n{boxes_table(catalog, '')}\n"),
    }
    for model_id, model in catalog.models.items():
        mine = [r for r in readings if r.model == model_id]
        page = model_page(catalog, model, mine, [f for f in fits if f.model == model_id])
        out[f"catalog/models/{model_id}.md"] = (text(model["name"]), _titled(model["name"], page))
    for box_id, box in catalog.boxes.items():
        out[f"catalog/boxes/{box_id}.md"] = (text(box["name"]), _titled(box["name"], box_page(catalog, box)))
    return out


def _titled(title: str, markdown: str) -> str:
    """The page's <title> from front matter, escaped: the theme would otherwise unescape the
    heading's text into it."""
    return f'---\ntitle: "{text(title)}"\n---\n\n{markdown}'


def _figure_rows(figures: list[tuple[str, Figure, str, int]]) -> list[str]:
    rows = ["| Figure | Value | Kind | Source |", "|---|---|---|---|"]
    for label, f, unit, digits in figures:
        if f.value is None:
            value = f"{render(f.minimum, unit, digits)} to {render(f.maximum, unit, digits)}"
        else:
            value = render(f, unit, digits)
        rows.append(f"| {label} | {value} | {text(f.provenance)} | {source_text(f.source)} |")
    return rows


def model_page(catalog: Catalog, model: Model, readings: list[derive.KvReading], fits: list[derive.LengthFit]) -> str:
    lines = [f"# {text(model['name'])}", ""]
    if model.get("illustrative"):
        lines += ["An illustrative model from the several-models guide: its figures are estimates, not readings.", ""]
    if model.get("checkpoint"):
        lines += [f"Checkpoint: {text(model['checkpoint'])}.", ""]
    figures = []
    if "weights" in model:
        figures.append(("Weights", model["weights"], "GiB", 2))
    if "drafter" in model:
        figures.append((f"Drafter weights, {text(model['drafter']['name'])}", model["drafter"]["weights"], "GiB", 2))
    if figures:
        lines += ["## Weights", "", *_figure_rows(figures), ""]
    if model.get("parameters"):
        lines += [
            f"Rule of thumb, parameters x bytes per parameter: {render(int(model['parameters'] * model['bits_per_parameter'] / 8), 'GB', 1)}.",
            "",
        ]
    if readings:
        lines += ["## Bytes per token", "", f"| Engine, KV type | B / token / rank | Tokens in a {render(10**10, 'e9')} pin | Source |", "|---|---|---|---|"]
        for r in readings:
            tokens, logged = r.tokens_at(10**10)
            label = f"{render(r.speculative_tokens, 'count', source='setting')} speculative tokens" if r.speculative_tokens else text(r.label)
            what = ", ".join(p for p in (text(r.engine), text(r.kv_dtype), label) if p)
            lines.append(
                f"| {what} | {render(r.bytes_per_token, 'count', source=r.provenance)} | {render(tokens, 'count')}{' (logged)' if logged else ''} | {text(r.provenance)} |"
            )
        lines.append("")
    if fits:
        lines += [
            "## Per-request cost over max_model_len",
            "",
            "The same pool read at several max_model_len, fit as per-request bytes = per token x context + fixed "
            f"({text(fits[0].kv_dtype)}; {source_text(fits[0].label)}).",
            "",
            "| Pool a rank | Per token | Fixed a request | Readings (max_model_len: tokens) | Source |",
            "|---|---|---|---|---|",
        ]
        for f in fits:
            points = ", ".join(f"{render(length, 'count')}: {render(tokens, 'count')}" for length, tokens in f.readings)
            lines.append(f"| {render(f.pool, 'GiB', 1)} | {render(f.per_token, 'B')} | {render(f.fixed, 'GB', 2)} | {points} | {text(f.provenance)} |")
        lines.append("")
    arch = model.get("architecture")
    if arch:
        modeled = derive.modeled_from_architecture(model, readings[0].kv_dtype if readings else "bf16")
        lines += [
            "## Architecture",
            "",
            f"{render(arch['layers'], 'count', source='architecture')} layers ({hfconfig.from_architecture(arch, model['id']).parameters_note}), {arch['attention'].upper()} attention"
            + (
                f", kv_lora_rank {render(arch['kv_lora_rank'], 'count', source='architecture')}, "
                f"qk_rope_head_dim {render(arch['qk_rope_head_dim'], 'count', source='architecture')}"
                if arch["attention"] == "mla"
                else ""
            )
            + f". Source: {source_text(arch.get('source', 'not given'))}.",
            "",
            (
                "Modeled from the architecture, the latent alone at full length: "
                if arch["attention"] == "mla"
                else "Modeled from the architecture, what a token adds in the layers that grow with context: "
            )
            + f"{render(modeled, 'count', source='modeled')} bytes per token per rank "
            f"({text(readings[0].kv_dtype) if readings else 'bf16'}, one rank). Where a measured figure exists, the measured one wins.",
            "",
        ]
        fields = [(k, v) for k, v in arch.items() if k not in ("source", "note")]
        lines += ["| Field | Value |", "|---|---|"]
        lines += [
            f"| {text(k)} | {render(v, 'count', source='architecture') if isinstance(v, int) and not isinstance(v, bool) else text(v)} |" for k, v in fields
        ]
        lines.append("")
        if arch.get("note"):
            lines += [f"What these fields leave out: {source_text(arch['note'])}.", ""]
    deployments = [d for d in catalog.deployments.values() if d["model"] == model["id"]]
    for d in deployments:
        lines += [
            f"## Deployment: {text(d['name'])}",
            "",
            f"TP={render(d['tp'], 'count', source='the deployment')} on {render(d['boxes'], 'count', source='the deployment')} boxes, engine {text(d.get('engine', 'not recorded'))}.",
            "",
        ]
        starts = [s for s in d["starts"] if "kv_tokens" in s]
        if starts:
            lines += ["| Start | Pin | Tokens | Outcome |", "|---|---|---|---|"]
            for s in starts:
                name = f"gen {s['generation']}" if s.get("generation") else text(s.get("date", ""))
                spec = derive.settings(d, s).get("speculative_tokens")
                name += f", {render(spec, 'count', source='setting')} speculative tokens" if spec else ""
                lines.append(f"| {name} | {render(s['kv_pin'], 'e9', 2)} | {render(s['kv_tokens'], 'count')} | {s['outcome']} |")
            lines.append("")
        measured = derive.measured_start(d)
        if measured:
            row = derive.gate_row(catalog, d["id"])
            assert row.overhead is not None  # a measured start gives the remainder
            lines += [
                "The start gate's row, derived from the latest measured start:",
                "",
                "| Term | GiB a rank | Source |",
                "|---|---|---|",
                f"| Weights | {render(row.weights, 'GiB')} | {source_text(row.weights.source)} |",
                f"| Overhead | {render(row.overhead, 'GiB')} | {source_text(row.overhead.source)} |",
            ]
            if row.drafter:
                lines.append(f"| Drafter | {render(row.drafter, 'GiB')} | {source_text(row.drafter.source)} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def _as_written(figure: Figure) -> tuple[str, int]:
    """A whole number of GiB or GB in that unit (a specification's capacity), anything else in GiB."""
    assert figure.value is not None, f"{figure.entry}: a range has no one unit"
    if figure.value % 2**30 == 0:
        return "GiB", 0
    if figure.value % 10**9 == 0:
        return "GB", 0
    return "GiB", 2


def box_page(catalog: Catalog, box: Box) -> str:
    unified = box["memory"] == "unified"
    lines = [f"# {text(box['name'])}", "", f"Memory: {box['memory']}" + (" (CPU and GPU share one pool)." if unified else " (the GPU's own memory)."), ""]
    figures = []
    for figure, label in (
        (box.get("total_memory"), "Total the engine sees"),
        (box.get("reported_total"), "Total the driver reports"),
        (box.get("spec_memory"), "Specification"),
        (box.get("idle_available"), "MemAvailable, idle"),
        (box.get("free_at_start"), "Free at start"),
    ):
        if figure is not None:
            figures.append((label, figure, *_as_written(figure)))
    lines += [*_figure_rows(figures), ""]
    notes = [
        f"{label}: {source_text(figure.note)}"
        for figure, label in ((box.get("spec_memory"), "Specification"), (box.get("total_memory"), "Total"))
        if figure is not None and figure.note
    ]
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    total, _, what = derive.box_total(box)
    if "total_memory" not in box:
        lines += [
            f"The catalog has no reading of the total the engine sees on this box; the calculators use {what}. "
            "vLLM prints its own total in the free-memory line of a start (`Free memory on device (free/total GiB)`).",
            "",
        ]
    if derive.box_free(box) is None:
        reading = (
            "MemAvailable on the idle box (`free -b`, the available column, or `python -m calc watch`): on unified memory vLLM's free memory is MemAvailable"
            if unified
            else "the free memory on the card when the engine starts (`nvidia-smi`, or vLLM's free-memory line)"
        )
        lines += [
            f"**What the specification does not give.** The start gate and vLLM's fraction check need {reading}. "
            "The catalog has no such reading for this box, so type yours into the [calculator](../../calculator/start-gate.md) "
            "or add it to catalog/boxes.yaml with its source.",
            "",
        ]
    if "free_at_start" in box:
        ceiling = fraction.ceiling(total.size, box["free_at_start"].size)
        lines += [
            f"vLLM's start check asks for the fraction times the total; the largest fraction that passes here is "
            f"{render(ceiling, 'fraction', 4)} (free / total, rounded down).",
            "",
        ]
    if "serving" in box:
        s = box["serving"]
        lines += [
            f"Serving with a pin of {render(s['kv_pin'], 'B')} ({render(s['kv_pin'], 'GiB')}) beside a fraction of "
            f"{render(s['gpu_memory_utilization'], 'fraction')}.",
            "",
        ]
    deployments = [d for d in catalog.deployments.values() if d["box"] == box["id"]]
    if deployments:
        lines += ["## Deployments", ""]
        lines += [
            f"- [{text(d['name'])}](../models/{d['model']}.md): TP={render(d['tp'], 'count', source='the deployment')} "
            f"on {render(d['boxes'], 'count', source='the deployment')} boxes"
            for d in deployments
        ]
        lines.append("")
    incidents = [i for i in catalog.incidents.values() if i["box"] == box["id"]]
    if incidents:
        lines += ["## Incidents", ""]
        lines += [f"- {text(i['date'])}: {text(i['title'])}" for i in incidents]
        lines.append("")
    return "\n".join(lines) + "\n"


def models_table(catalog: Catalog, where: str) -> str:
    """Every model with a link to its page; `where` is the folder of the models' pages from the linking page."""
    lines = ["| Model | Weights | Source |", "|---|---|---|"]
    for model_id, model in catalog.models.items():
        weights = render(model["weights"], "GiB") if "weights" in model else "—"
        source = text(model["weights"].provenance) if "weights" in model else ""
        lines.append(f"| [{text(model['name'])}]({where}{model_id}.md) | {weights} | {source} |")
    return "\n".join(lines)


def boxes_table(catalog: Catalog, where: str) -> str:
    lines = ["| Box | Total | Memory |", "|---|---|---|"]
    for box_id, box in catalog.boxes.items():
        total = derive.box_total(box)
        lines.append(f"| [{text(box['name'])}]({where}{box_id}.md) | {render(total.figure, 'GiB')} ({total.kind}) | {text(box['memory'])} |")
    return "\n".join(lines)


def index_links(catalog: Catalog) -> str:
    return f"{models_table(catalog, 'models/')}\n\n{boxes_table(catalog, 'boxes/')}"
