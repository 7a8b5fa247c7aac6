"""The catalog's deployments as presets that fill the typed fields, the page's first answer, and
the box a pasted log's printed total names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from calc.answers import report
from calc.answers.yourstart import Given
from calc.catalog.model import Catalog
from calc.engine import derive
from calc.jsontext import JsonObject
from calc.present.calculators.form import Defaults, esc, size_text
from calc.present.calculators.start import gated
from calc.present.calculators.yourstart.fields import LABELS, MODEL_NAME, NAME, PRESET_FIELDS
from calc.present.calculators.yourstart.log import read_log
from calc.units import InputError, fmt

# a preset's fields: the text it fills and the exact value that text stands for
Filled = dict[str, tuple[str, Given | None]]


def preset(catalog: Catalog, deployment_id: str) -> Filled:
    """What a catalog deployment fills: each field's text and the exact value it stands for, with
    its source (a field left as the preset filled it is read back exactly, not from its rounding)."""
    deployment = catalog.deployments[deployment_id]
    row = derive.gate_row(catalog, deployment_id)
    base = report.defaults(catalog, deployment_id)
    reading = report.pool_reading(catalog, deployment_id, 0)
    model = catalog.models[deployment["model"]]
    name = f"preset {deployment['name']}"
    out: Filled = {
        "weights": (size_text(row.weights.bytes, "GiB"), Given(row.weights.bytes, f"{name}: the gate row's weights ({row.weights.source})")),
        "pin": (size_text(base.kv_pin, "e9"), Given(base.kv_pin, f"{name}: the serving start's pin (catalog/starts.yaml)")),
        "max_model_len": (fmt(base.max_model_len, "plain", 0), Given(base.max_model_len, f"{name}: its setting (catalog/starts.yaml)")),
        "tp": (fmt(deployment["tp"], "plain", 0), Given(deployment["tp"], f"{name}: its setting (catalog/starts.yaml)")),
        "before": (size_text(base.available[0], "GiB"), Given(base.available[0], f"{name}: its last MemAvailable reading (catalog/starts.yaml)")),
        "box": (deployment["box"], None),
        "overhead": ("", None),
        "bytes_per_token": ("", None),
        "model": ("", None),
    }
    if row.overhead is not None:
        out["overhead"] = (size_text(row.overhead.bytes, "GiB"), Given(row.overhead.bytes, f"{name}: the gate row's overhead ({row.overhead.source})"))
    if reading is not None:
        text = fmt(reading.bytes_per_token, "plain", 0 if reading.bytes_per_token.denominator == 1 else 2)
        out["bytes_per_token"] = (text, Given(reading.bytes_per_token, f"{name}: {reading.provenance}"))
    if re.fullmatch(MODEL_NAME, model.get("checkpoint", "")):
        out["model"] = (model["checkpoint"], Given(model["checkpoint"], f"{name} (catalog/models.yaml)"))
    return out


def preset_sources(catalog: Catalog, deployment_id: str) -> dict[str, str]:
    sources = {}
    for key, (text, given) in preset(catalog, deployment_id).items():
        if key == "box":
            sources[key] = f"Preset: {esc(catalog.deployments[deployment_id]['name'])} runs on {esc(catalog.boxes[text]['name'])}"
        elif given is None:
            sources[key] = "The preset has no figure for this; empty: from the log"
        else:
            sources[key] = f"Preset {esc(text)}: {esc(given.source.removeprefix('preset '))}"
    return sources


def defaults(catalog: Catalog) -> Defaults:
    """At first the catalog's first measured deployment as a preset, so the page answers at once;
    choosing "none" or pasting a log clears the preset."""
    deployment_id = gated(catalog)[0]
    values = {k: text for k, (text, _) in preset(catalog, deployment_id).items()}
    sources = preset_sources(catalog, deployment_id)
    empty = {"log": "", "total": "", "serving": "", "free_unit": "", "gpu_memory_utilization": "", "pins": "", "lengths": ""}
    values = {"preset": deployment_id, **empty, **values}
    sources = {
        "preset": "Default: the catalog's first measured deployment; choose none to start from your own log",
        "log": "Empty: the preset's figures are used",
        "total": "Empty: the box's total from the catalog",
        "serving": "Empty: the overhead comes from the preset",
        "free_unit": "Default: from the command line pasted with the output",
        "gpu_memory_utilization": "Empty: the largest two-decimal fraction that passes",
        "pins": "Empty: the pin and the largest that passes",
        "lengths": "Empty: max_model_len only",
        **sources,
    }
    return Defaults({k: values.get(k, "") for k in LABELS}, sources)


# A log's total GPU memory and a box's total agree within this share when the log can be the
# box's: CUDA's total sits a little under nvidia-smi's and a specification's capacity.
TOTAL_MATCH = Fraction(5, 100)
# Where the box's total is itself the one torch and vLLM print, it moves only with the driver: a
# few hundredths of a GiB, 0.65% under WSL2 on the RTX PRO 6000 (catalog/boxes.yaml). Within 5%
# a 32 GB RTX 5090's 31.40 GiB would also be a V100 32GB's 31.74.
ENGINE_TOTAL_MATCH = Fraction(1, 100)
PRESET_HINTS = {
    "log": "Empty: the preset's figures are used",
    "serving": "Empty: the overhead comes from the preset",
}
OWN_HINTS = {
    "log": "Your log: each figure below names its line",
    "serving": "Empty: the overhead is typed, or held - weights - KV pool where the log gives them",
}


def boxes_of_total(catalog: Catalog, total: int) -> list[str]:
    """The catalog's boxes whose total is the one a log printed: within ENGINE_TOTAL_MATCH of a total
    torch and vLLM print, within TOTAL_MATCH of the driver's or the specification's."""
    found = []
    for box_id, box in catalog.boxes.items():
        best = derive.box_total(box)
        share = ENGINE_TOTAL_MATCH if best.kind == "engine" else TOTAL_MATCH
        if abs(total - best.figure.size) <= share * best.figure.size:
            found.append(box_id)
    return found


def box_mismatch(catalog: Catalog, box_id: str, reading: Any) -> str | None:
    """Why this log cannot be from this box, or None: its printed total is another box's, or one
    rank held (weights and KV pool) more than the box has."""
    if reading is None or box_id not in catalog.boxes:
        return None
    box = catalog.boxes[box_id]
    total = derive.box_total(box).figure.size
    printed = getattr(reading, "total_memory_bytes", None)
    if printed is not None and printed.value and box_id not in boxes_of_total(catalog, int(printed.value)):
        like = [catalog.boxes[b]["name"] for b in boxes_of_total(catalog, int(printed.value))]
        hint = f"it looks like {' or '.join(like)}" if like else "no box in the catalog has that total"
        return (
            f"{LABELS['box']}: the log prints a total of {fmt(int(printed.value), 'GiB')} (log line {printed.line_no}), the {box['name']} has "
            f"{fmt(total, 'GiB')}: this log is not from this box ({hint}); choose its box, or another box with its total typed"
        )
    held = [getattr(reading, k, None) for k in ("model_loading_bytes", "available_kv_bytes")]
    rank = sum(int(h.value) for h in held if h is not None and h.value)
    if all(h is not None and h.value for h in held) and rank > total:
        return (
            f"{LABELS['box']}: one rank of the log held {fmt(rank, 'GiB')} of weights and KV pool, more than the {box['name']}'s "
            f"{fmt(total, 'GiB')}: this log is not from this box; choose its box, or another box with its total typed"
        )
    return None


def _inferred_box(catalog: Catalog, reading: Any) -> tuple[str | None, str]:
    """The box a log's printed total names, when exactly one does; else None and what to ask."""
    printed = getattr(reading, "total_memory_bytes", None) if reading is not None else None
    if printed is None or not printed.value:
        return None, "The log prints no total: choose the box it was taken on, or another box with its total typed below"
    found = boxes_of_total(catalog, int(printed.value))
    where = f"The log's total, {fmt(int(printed.value), 'GiB')} (log line {printed.line_no}),"
    if len(found) == 1:
        return found[0], f"{where} is the {catalog.boxes[found[0]]['name']}'s, the catalog's one box of that size: change it if the card was another"
    if found:
        return None, f"{where} fits {', '.join(catalog.boxes[b]['name'] for b in found)}: choose the one it was taken on"
    return None, f"{where} is no catalog box's: choose another box and type its total below"


def changed(catalog: Catalog, name: str, raw: Mapping[str, str]) -> JsonObject | None:
    """A preset fills the typed fields; "none", or a pasted log, empties them; a pasted log
    chooses the box its printed total names, or asks for it."""
    chosen = str(raw.get("preset", ""))
    log_text = str(raw.get("log", "")).strip()
    if name == "preset" and chosen in gated(catalog):
        values = {k: text for k, (text, _) in preset(catalog, chosen).items()}
        sources = preset_sources(catalog, chosen) | PRESET_HINTS
    elif (name == "preset" and not chosen) or (name == "log" and log_text):
        values, sources = {}, {}
        if name == "preset" or chosen:  # the preset's figures give way to the log's
            values = {k: "" for k in PRESET_FIELDS if k != "box"} | {"preset": ""}
            sources = (
                {k: "Empty: from the log" for k in PRESET_FIELDS if k != "box"}
                | OWN_HINTS
                | {
                    "preset": "None: your own start",
                    "box": "The box the log was taken on, or another box with its total typed below",
                }
            )
        if log_text:
            try:
                reading = read_log(log_text)
            except (InputError, ImportError):
                reading = None
            box_id, why = _inferred_box(catalog, reading)
            current = str(raw.get("box", ""))
            if box_id is not None and (chosen or box_mismatch(catalog, current, reading)):  # a box the reader chose that fits stays
                values["box"] = box_id
            if box_id is None or values.get("box") == box_id:
                sources["box"] = esc(why)
        if not values and not sources:
            return None
    else:
        return None
    return {
        "values": {f"{NAME}-{k.replace('_', '-')}": v for k, v in values.items()},
        "sources": {f"{NAME}-{k.replace('_', '-')}-src": v for k, v in sources.items()},
        "hidden": {},
        "disabled": {},
    }
