"""Before the first start: a pasted config.json (and, if at hand, the checkpoint's index) to the
weights a rank holds, the KV cost of one request, the tokens a pin holds, the longest context it
fits and the start gate. Every figure from the config is modeled (calc/modeled.py) and says so;
the gate's overhead comes from a measured start of the same model when the catalog has one, is
typed, or the gate answers "outside calibration".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from calc import derive, gate, hfconfig, kvlayout, modeled, report, weights
from calc.calculators.form import (
    Defaults,
    Field,
    Figures,
    Output,
    badge,
    counted,
    default_note,
    dl,
    dom_id,
    esc,
    invalid,
    pin_up,
    short,
    size_examples,
    size_text,
    table,
    take,
)
from calc.catalog import Catalog, Figure
from calc.gate import Amount
from calc.units import InputError, fmt, parse_size

NAME = "before"
TITLE = "Before the first start"
DEFAULT_CONFIG = "qwen3-30b-a3b"  # one of models/configs, shipped with its source
PASTE_CHARACTERS = 8 * 2**20  # a config.json is kilobytes, an index or safetensors headers a few megabytes: more is refused, not read

LABELS = {
    "config": "config.json (paste)",
    "index": "Checkpoint size (optional: model.safetensors.index.json or shard headers pasted, or a size)",
    "box": "Box",
    "available": "MemAvailable at start",
    "tp": "Tensor parallel size",
    "kv_cache_dtype": "KV cache dtype (--kv-cache-dtype)",
    "max_model_len": "max_model_len",
    "prefill_budget": "Prefill budget (--max-num-batched-tokens)",
    "seats": "Seats (--max-num-seqs)",
    "pin": "KV pin (--kv-cache-memory-bytes)",
    "overhead": "Overhead a rank (optional)",
    "engine_version": "vLLM version (optional)",
}
FLAGS = {"tp": "--tp", "kv_cache_dtype": "--kv-cache-dtype"}  # how calc/modeled.py names a field in its messages
DTYPES = ("auto", "bfloat16", "fp8", "fp8_e5m2", "fp8_ds_mla", "nvfp4")


def fields(catalog: Catalog) -> list[Field]:
    boxes = tuple((b, box["name"], False) for b, box in catalog.boxes.items())
    return [
        Field(
            "config",
            LABELS["config"],
            "textarea",
            f"The model's config.json as Hugging Face ships it, quantization_config and all (at most {PASTE_CHARACTERS // 2**20} MiB)",
            rows=12,
        ),
        Field(
            "index",
            LABELS["index"],
            "textarea",
            f"Its metadata.total_size beats the parameter count; a size such as 61.06e9 works too (at most {PASTE_CHARACTERS // 2**20} MiB)",
        ),
        Field("box", LABELS["box"], "select", options=boxes),
        Field("available", LABELS["available"], "text", "Bytes: " + size_examples()),
        Field("tp", LABELS["tp"], "text", "Ranks the model is split over", inputmode="numeric"),
        Field("kv_cache_dtype", LABELS["kv_cache_dtype"], "select", options=tuple((d, d, False) for d in DTYPES)),
        Field("max_model_len", LABELS["max_model_len"], "text", "Tokens", inputmode="numeric"),
        Field("prefill_budget", LABELS["prefill_budget"], "text", "Tokens", inputmode="numeric"),
        Field("seats", LABELS["seats"], "text", "Concurrent sequences", inputmode="numeric"),
        Field("pin", LABELS["pin"], "text", "Bytes: " + size_examples()),
        Field("overhead", LABELS["overhead"], "text", "Empty: from a measured start of the same model, if the catalog has one"),
        Field("engine_version", LABELS["engine_version"], "text", "Such as 0.10.2; empty: the rules of v0.32.0 and later, the newest read"),
    ]


def _available(box: dict[str, Any]) -> tuple[Figure, str]:
    """The box's default MemAvailable, and how it is taken: its idle or free-at-start reading, else
    its best total (a discrete card's free memory is below it by what the driver holds)."""
    free = derive.box_free(box)
    if free is not None:
        return free, ""
    total = derive.box_total(box)
    return total.figure, f", {total.what.split(';')[0]}: the catalog has no free-memory reading of this box"


def _available_note(box: dict[str, Any], text: str) -> str:
    figure, how = _available(box)
    return default_note(figure, text, how)


def _serving_pin(catalog: Catalog, box_id: str) -> tuple[int, str]:
    box = catalog.boxes[box_id]
    if "serving" in box:
        return box["serving"]["kv_pin"].value, f"the pin of the {box['name']}'s serving start (catalog/boxes.yaml)"
    for d in catalog.deployments.values():
        serving = [s for s in d["starts"] if s["outcome"] == "serving" and d["box"] == box_id]
        if serving:
            return serving[-1]["kv_pin"], f"the pin of {d['name']}'s serving start (catalog/starts.yaml)"
    return 10**10, "the calculator's choice"


def _box_defaults(catalog: Catalog, box_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """The defaults that follow the box: its MemAvailable and the pin of its serving start."""
    box = catalog.boxes[box_id]
    pin, pin_source = _serving_pin(catalog, box_id)
    values = {"available": size_text(_available(box)[0].size, "MiB"), "pin": size_text(pin, "e9")}
    sources = {
        "box": f"{esc(box['name'])}: total {esc(fmt(derive.box_total(box).figure.size, 'GiB'))}, {esc(derive.box_total(box).what.split(';')[0])}",
        "available": _available_note(box, values["available"]),
        "pin": f"Default {esc(values['pin'])}: {esc(pin_source)}",
    }
    return values, sources


DEFAULT_CONFIG_NOTE = f"Default: Qwen3-30B-A3B's config.json, shipped in models/configs/{DEFAULT_CONFIG} with its source"


def _config_note(text: str) -> str:
    """What an edited config field holds (the browser has no copy of the shipped default to
    compare with: an edit is what was pasted)."""
    if not text.strip():
        return "Empty: paste the model's config.json"
    try:
        archs = hfconfig.load(text, "config.json").get("architectures")
    except InputError:
        return "Pasted: not yet a config.json the model can read (see below)"
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else "no architectures"
    return f"Pasted: a config.json of {esc(arch)}"


def _default_config() -> str:
    return (Path(__file__).resolve().parents[2] / "models" / "configs" / DEFAULT_CONFIG / "config.json").read_text(encoding="utf-8")


def changed(catalog: Catalog, name: str, raw: Mapping[str, str]) -> dict[str, Any] | None:
    """A new box moves the MemAvailable and pin defaults with it; a pasted config says so."""
    box_id = str(raw.get("box", ""))
    if name == "config":
        return {"values": {}, "sources": {dom_id(NAME, "config") + "-src": _config_note(str(raw.get("config", "")))}, "hidden": {}, "disabled": {}}
    if name != "box" or box_id not in catalog.boxes:
        return None
    values, sources = _box_defaults(catalog, box_id)
    return {
        "values": {dom_id(NAME, k): v for k, v in values.items()},
        "sources": {dom_id(NAME, k) + "-src": v for k, v in sources.items()},
        "hidden": {},
        "disabled": {},
    }


def defaults(catalog: Catalog) -> Defaults:
    box_id = next(iter(catalog.boxes))
    box = catalog.boxes[box_id]
    box_values, box_sources = _box_defaults(catalog, box_id)
    calibration = catalog.policy["gate"]["calibration"]
    values = {
        "config": _default_config(),
        "index": "",
        "box": box_id,
        "available": box_values["available"],
        "tp": "1",
        "kv_cache_dtype": "auto",
        "max_model_len": fmt(32768, "count"),
        "prefill_budget": fmt(calibration["prefill_budget"].value, "count"),
        "seats": fmt(calibration["seats"].value, "count"),
        "pin": box_values["pin"],
        "overhead": "",
        "engine_version": "",
    }
    sources = {
        "config": DEFAULT_CONFIG_NOTE,
        "index": "Default empty: weights from the parameter count",
        "box": f"Default: {esc(box['name'])}, the catalog's first box",
        "available": box_sources["available"],
        "tp": "Default 1: the calculator's choice",
        "kv_cache_dtype": "Default auto: vLLM's default, the model's dtype",
        "max_model_len": "Default 32,768: the calculator's choice",
        "prefill_budget": default_note(calibration["prefill_budget"], values["prefill_budget"], ", the calibration"),
        "seats": default_note(calibration["seats"], values["seats"], ", the calibration"),
        "pin": box_sources["pin"],
        "overhead": "Default empty: a measured start of the same model, else outside calibration",
        "engine_version": "Default empty: the rules of vLLM v0.32.0 and later, the newest read",
    }
    return Defaults(values, sources)


def _index(text: str) -> tuple[str | None, int | None]:
    """The index pasted (JSON) or a size typed: (index text, None) or (None, bytes)."""
    text = text.strip()
    if not text:
        return None, None
    if text.startswith("{"):
        return text, None
    return None, parse_size(text, short(LABELS["index"]))


def same_model(catalog: Catalog, shape: hfconfig.Shape, settings: kvlayout.Settings) -> str | None:
    """A catalog deployment whose model has the same cache layout as the pasted config, and a
    measured start: the gate then takes that start's overhead."""
    mine = kvlayout.layer_specs(shape, settings)
    for d_id, d in catalog.deployments.items():
        arch = catalog.models[d["model"]].get("architecture")
        if not arch or d["tp"] != settings.tp or derive.measured_start(d) is None:
            continue
        try:
            if kvlayout.layer_specs(hfconfig.from_architecture(arch, d["model"]), settings) == mine:
                return d_id
        except (ValueError, KeyError):
            continue
    return None


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    errors: dict[str, str] = {}
    box_id = str(raw.get("box", ""))
    if box_id not in catalog.boxes:
        errors["box"] = f"{LABELS['box']}: found {box_id or 'nothing'!r}, expected one of {', '.join(catalog.boxes)}"
    dtype = str(raw.get("kv_cache_dtype", "auto"))
    if dtype not in DTYPES:
        errors["kv_cache_dtype"] = f"{short(LABELS['kv_cache_dtype'])}: found {dtype!r}, expected one of {', '.join(DTYPES)}"
    available = take(errors, "available", lambda: parse_size(str(raw.get("available", "")), LABELS["available"]))
    tp = take(errors, "tp", counted(raw, "tp", LABELS["tp"]))
    max_len = take(errors, "max_model_len", counted(raw, "max_model_len", LABELS["max_model_len"]))
    prefill = take(errors, "prefill_budget", counted(raw, "prefill_budget", LABELS["prefill_budget"]))
    seats = take(errors, "seats", counted(raw, "seats", LABELS["seats"]))
    pin = take(errors, "pin", lambda: parse_size(str(raw.get("pin", "")), short(LABELS["pin"])))
    text = str(raw.get("overhead", "")).strip()
    typed_overhead = take(errors, "overhead", lambda: parse_size(text, short(LABELS["overhead"])) if text else None)
    index_text, index_size = take(errors, "index", lambda: _index(str(raw.get("index", "")))) or (None, None)
    version = str(raw.get("engine_version", "")).strip() or None
    try:
        kvlayout.version(version)
    except ValueError as error:
        errors["engine_version"] = str(error).replace("--engine-version", LABELS["engine_version"].split(" (")[0])
    config_text = str(raw.get("config", ""))
    if not config_text.strip():
        errors["config"] = f"{short(LABELS['config'])}: found nothing, expected the model's config.json pasted"
    for name in ("config", "index"):
        pasted = str(raw.get(name, ""))
        if len(pasted) > PASTE_CHARACTERS:
            errors[name] = f"{short(LABELS[name])}: found {len(pasted):,} characters, expected at most {PASTE_CHARACTERS // 2**20} MiB of JSON"
    if available is not None and "box" not in errors:
        box = catalog.boxes[box_id]
        total = derive.box_total(box).figure.size
        if available > total:
            errors["available"] = (
                f"{short(LABELS['available'])}: found {fmt(available, 'GiB')}, above the {box['name']}'s total of {fmt(total, 'GiB')}; "
                "expected what that box has free (a value left from another box?)"
            )
    if errors:
        return invalid(NAME, errors, LABELS, names)
    inputs = modeled.ModelInputs(config_text, "config.json", tp, dtype, max_len, pin, version, index_text, block_size=None, prefill_budget=prefill)
    try:
        r = modeled.model_report(inputs)
        shape = hfconfig.shape(hfconfig.load(config_text, "config.json"), "config.json")
    except InputError as error:
        message = str(error)
        key = next((k for k, flag in FLAGS.items() if message.startswith(flag)), "config")
        key = "index" if message.startswith("model.safetensors.index.json") else key
        return invalid(NAME, {key: message.replace(FLAGS.get(key, "\0"), short(LABELS[key]))}, LABELS, names)
    if index_size is not None:
        w = weights.per_rank(shape, tp, index_size, "checkpoint size typed")
        r = replace(r, weights_bytes_per_rank=w.model, drafter_bytes_per_rank=w.drafter, weights_source=w.source)
    assert r.kv_tokens is not None and r.max_concurrency is not None and r.largest_max_model_len is not None, "the pin is the pool modeled"
    fig = Figures()
    refused = r.largest_max_model_len is not None and r.largest_max_model_len < max_len
    settings = kvlayout.Settings(tp=tp, kv_cache_dtype=dtype, prefill_budget=prefill)
    row, where = _gate_row(catalog, shape, settings, r, typed_overhead)
    result = gate.gate(row, gate.Request(pin, False, prefill, seats), (available,))
    rows = [
        ("Model", esc(f"{r.architecture}: {r.family}, {r.layers}")),
        ("Weights a rank (modeled)", fig("weights", fmt(r.weights_bytes_per_rank, "GiB")) + esc(f" from the {r.weights_source}")
         + (f"; drafter layers {fig('drafter', fmt(r.drafter_bytes_per_rank, 'GiB'))} more with speculative decoding" if r.drafter_bytes_per_rank else "")),
        (f"KV a request at {fmt(max_len, 'count')} tokens (modeled)",
         fig("per_request", fmt(r.kv_bytes_per_request, "GiB")) + " = " + fig("per_token", fmt(r.kv_bytes_per_token, "count")) + " B a token + "
         + fig("fixed", fmt(r.kv_fixed_bytes_per_request, "GiB")) + " fixed"),
        ("Layout", esc(f"{fmt(r.kv_groups, 'count')} KV group(s) of {fmt(r.layers_per_group, 'count')} layers, blocks of {fmt(r.block_size, 'count')} tokens")
         + (esc(f", {fmt(r.padding_layers, 'count')} padding layer(s)") if r.padding_layers else "")),
        ("GPU KV cache size at the pin (modeled)", fig("tokens", fmt(r.kv_tokens, "tokens")) + ", maximum concurrency "
         + fig("concurrency", fmt(r.max_concurrency, "x")) + esc(f" ({r.engine_rules})")),
        ("Smallest pin that starts (modeled)", fig("floor", pin_up(r.kv_floor_bytes))
         + (esc(" (the request and one block, which vLLM 0.29.0 and later hold back before the one-request check)") if r.null_block_bytes else esc(" (one request)"))),
        ("Longest max_model_len the pin fits", fig("largest_len", fmt(r.largest_max_model_len, "tokens"))),
        *((("vLLM's one-request check", badge(False, "", "refused") + " " + fig("one_request", "vLLM refuses this start")
            + esc(f": one request at max_model_len {fmt(max_len, 'count')} does not fit the pin; vLLM stops at start-up "
                  f"(\"To serve at least one request with the models's max seq len\"). Lower max_model_len to "
                  f"{fmt(r.largest_max_model_len, 'count')} or raise the pin.")),) if refused else ()),
        *(("Note", esc(note)) for note in r.notes),
    ]  # fmt: skip
    verdict_gate = _gate_rows(result, row, available, pin, prefill, seats, where, fig, rows)
    verdict = (
        f"Modeled: {r.family}, {fmt(r.weights_bytes_per_rank, 'GiB')} of weights a rank; the pin holds "
        f"{fmt(r.kv_tokens, 'tokens')} ({fmt(r.max_concurrency, 'x')} at {fmt(max_len, 'count')}). Gate: {verdict_gate}."
    )
    if refused:
        verdict += f" vLLM refuses this start: one request at max_model_len {fmt(max_len, 'count')} does not fit the pin."
    return Output(NAME, True, {}, {f"{NAME}-verdict": esc(verdict), f"{NAME}-result": dl(rows)}, fig.shown, names)


def _gate_row(catalog: Catalog, shape: hfconfig.Shape, settings: kvlayout.Settings, r: modeled.ModelReport, typed: int | None) -> tuple[gate.GateRow, str]:
    policy = catalog.policy["gate"]
    headroom = policy["headroom"]
    overhead, where = None, "no measured start of this model in the catalog, and none typed"
    if typed is not None:
        overhead, where = Amount(typed, "typed"), "typed"
    else:
        d_id = same_model(catalog, shape, settings)
        if d_id is not None:
            overhead = derive.gate_row(catalog, d_id).overhead
            where = f"from {catalog.deployments[d_id]['name']}'s measured start"
    row = gate.GateRow(
        weights=Amount(r.weights_bytes_per_rank, f"modeled from the config ({r.weights_source})"),
        overhead=overhead,
        headroom=Amount(headroom.value, headroom.source or headroom.provenance),
        calibration_prefill=policy["calibration"]["prefill_budget"].value,
        calibration_seats=policy["calibration"]["seats"].value,
    )
    return row, where


def _gate_rows(
    result: gate.GateResult, row: gate.GateRow, available: int, pin: int, prefill: int, seats: int, where: str, fig: Figures, rows: list[Any]
) -> str:
    if result.needs is None:
        reason = result.outside_calibration or ""
        if row.overhead is None:
            reason = where
        rows.append(("Start gate", badge(None) + " " + fig("gate", "outside calibration") + esc(f": {reason}")))
        return "outside calibration"
    terms = [(esc(t.name), fig(f"term_{t.name.replace(' ', '_').replace('-', '_')}", fmt(t.bytes, "GiB")), esc(t.source)) for t in result.terms]
    rows.append(("Start gate (overhead " + esc(where) + ")", table(("Term", "A rank", "Source"), terms, "What one rank needs",
                 ("needs", fig("needs", fmt(report.needs_as_printed(result.terms), "GiB")), "the sum of the terms as printed"))))  # fmt: skip
    passes = bool(result.passes)
    largest = gate.largest_pin(row, gate.Request(pin, False, prefill, seats), (available,))
    rows.append(
        (
            "Against MemAvailable",
            badge(passes) + " " + fig("margin", fmt(abs(report.margin_as_printed(available, result.terms)), "GiB")) + (" to spare" if passes else " short"),
        )
    )
    rows.append(("Largest pin that passes", fig("largest_pin", fmt(largest, "e9", 2, down=True)) if largest and largest > 0 else fig("largest_pin", "none")))
    return "passes" if passes else "refused"
