"""Before the first start: a pasted config.json (and, if at hand, the checkpoint's index) to the
weights a rank holds, the KV cost of one request, the tokens a pin holds, the longest context it
fits and the start gate. Every figure from the config is modeled (calc/checks/modeled.py) and says so;
the gate's overhead comes from a measured start of the same model when the catalog has one, is
typed, or the gate answers "outside calibration".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from calc.answers import report
from calc.catalog.entries import Box
from calc.catalog.model import Catalog, box_choices
from calc.catalog.spec import Figure
from calc.checks import modeled
from calc.checks import unified as unified_checks
from calc.checks.modelreport import UnifiedGate
from calc.engine import derive, hfconfig, lora, offload, predict
from calc.engine.predict import startup
from calc.jsontext import JsonObject
from calc.present import charts, vllmserve
from calc.present.calculators.form import (
    Defaults,
    Field,
    Figures,
    Output,
    badge,
    default_note,
    dl,
    dom_id,
    esc,
    flag,
    form_fields,
    form_labels,
    invalid,
    pin_up,
    read,
    short,
    size_text,
    table,
    take,
)
from calc.present.chart import figure_html
from calc.present.inputs import FORMS, INPUTS, gib_at_least_zero
from calc.units import GiB, InputError, fmt, parse_memory, shown

NAME = "before"
TITLE = "Before the first start"
DEFAULT_CONFIG = "qwen3-30b-a3b"  # one of models/configs, shipped with its source
PASTE_CHARACTERS = 8 * 2**20  # a config.json is kilobytes, an index or safetensors headers a few megabytes: more is refused, not read

LABELS = form_labels(NAME)
# how calc/checks/modeled.py, calc/engine/ranks.py, calc/engine/lora.py and calc/engine/offload.py name a field in their
# messages: by its flag, any spelling, which the form says with its label
FLAGS = {s: u.field_name for u in FORMS[NAME] if u.input.flag for s in (u.input.flag, *u.input.aliases) if s.startswith("--")}
DTYPES = ("auto", "bfloat16", "fp8", "fp8_e5m2", "fp8_ds_mla", "nvfp4")


def fields(catalog: Catalog) -> list[Field]:
    boxes = tuple((b, box["name"], False) for b, box in catalog.boxes.items())
    dtypes = tuple((d, d, False) for d in DTYPES)
    methods = (("", "the config's own", False), *((m, f"{m}, quantized as it loads", False) for m in hfconfig.AT_LOAD))
    levels = (("", "vLLM's default (-O2)", False), ("0", "0: no compile, no CUDA graphs", False), ("1", "1: piecewise CUDA graphs alone", False),
              ("2", "2: full and piecewise graphs, the default", False), ("3", "3: as 2", False))  # fmt: skip
    return form_fields(NAME, {"box": boxes, "kv_cache_dtype": dtypes, "quantization": methods, "optimization_level": levels},
                       fill={"paste": str(PASTE_CHARACTERS // 2**20)})  # fmt: skip


def _available(box: Box) -> tuple[Figure, str]:
    """The box's default MemAvailable, and how it is taken: its idle or free-at-start reading, else
    its best total (a discrete card's free memory is below it by what the driver holds)."""
    free = derive.box_free(box)
    if free is not None:
        return free, ""
    total = derive.box_total(box)
    return total.figure, f", {total.what.split(';')[0]}: the catalog has no free-memory reading of this box"


def _available_note(box: Box, text: str) -> str:
    figure, how = _available(box)
    return default_note(figure, text, how)


def _serving_pin(catalog: Catalog, box_id: str) -> tuple[int, str]:
    box = catalog.boxes[box_id]
    if "serving" in box:
        return box["serving"]["kv_pin"].size, f"the pin of the {box['name']}'s serving start (catalog/boxes.yaml)"
    for d in catalog.deployments.values():
        serving = [s for s in d["starts"] if s["outcome"] == "serving" and d["box"] == box_id]
        if serving:
            return serving[-1]["kv_pin"], f"the pin of {d['name']}'s serving start (catalog/starts.yaml)"
    return 10**10, "the calculator's choice"


def _box_defaults(catalog: Catalog, box_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """The defaults that follow the box: its MemAvailable, the pin of its serving start, and the
    scheduler's sizes (the gate's calibration; on a discrete card whose pool is predicted, empty: the
    release's defaults)."""
    box = catalog.boxes[box_id]
    pin, pin_source = _serving_pin(catalog, box_id)
    values = {"available": size_text(_available(box)[0].size, "MiB"), "pin": size_text(pin, "e9")}
    sources = {
        "box": f"{esc(box['name'])}: total {esc(fmt(derive.box_total(box).figure.size, 'GiB'))}, {esc(derive.box_total(box).what.split(';')[0])}",
        "available": _available_note(box, values["available"]),
        "pin": f"Default {esc(values['pin'])}: {esc(pin_source)}",
    }
    calibration = catalog.policy["gate"]["calibration"]
    for name in ("prefill_budget", "seats"):
        values[name] = fmt(calibration[name].count, "count")
        sources[name] = default_note(calibration[name], values[name], ", the calibration")
    if _card(box) is not None and "serving" not in box:  # a discrete card and no pin of ours: vLLM sizes the pool, predicted
        values["pin"] = ""
        sources["pin"] = "Default empty: on a discrete card vLLM sizes the pool itself; the calculator predicts it (calc/engine/predict/)"
        for name in ("prefill_budget", "seats"):
            values[name] = ""
            sources[name] = "Default empty: the release's default for the card, as vLLM sets it (vllm/engine/arg_utils.py)"
    return values, sources


def _card(box: Box) -> predict.Card | None:
    """The box as a card whose pool calc/engine/predict/ sizes: discrete, with the total torch reports."""
    if box.get("memory") == "unified" or box.get("total_memory") is None:
        return None
    return predict.card_of_box(box)


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
    return (Path(__file__).resolve().parents[3] / "models" / "configs" / DEFAULT_CONFIG / "config.json").read_text(encoding="utf-8")


def changed(catalog: Catalog, name: str, raw: Mapping[str, str]) -> JsonObject | None:
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
    values = {
        "config": _default_config(),
        "index": "",
        "box": box_id,
        "available": box_values["available"],
        "tp": "1",
        "kv_cache_dtype": "auto",
        "quantization": "",
        "max_model_len": fmt(32768, "count"),
        "prefill_budget": box_values["prefill_budget"],
        "seats": box_values["seats"],
        "speculative_tokens": "0",
        "enforce_eager": "",
        "offline": "",
        "flashinfer_installed": "",
        "no_flashinfer_sampler": "",
        "allow_long_max_model_len": "",
        "compile_cached": "",
        "no_chunked_prefill": "",
        "no_extensible_kv_cache": "",
        "max_cudagraph_capture_size": "",
        "optimization_level": "",
        "in_use": "",
        "pin": box_values["pin"],
        "utilization": "",
        "overhead": "",
        "engine_version": "",
        "pipeline_parallel_size": "1",
        "pp_layer_partition": "",
        "enable_lora": "",
        "max_loras": "1",
        "max_lora_rank": "16",
        "max_cpu_loras": "",
        "cpu_offload_gb": "",
        "kv_offloading_size": "",
        "swap_space": "",
    }
    sources = {
        "config": DEFAULT_CONFIG_NOTE,
        "index": "Default empty: weights from the parameter count",
        "box": f"Default: {esc(box['name'])}, the catalog's first box",
        "available": box_sources["available"],
        "tp": "Default 1: the calculator's choice",
        "kv_cache_dtype": "Default auto: vLLM's default, the model's dtype",
        "quantization": "Default empty: the config's quantization_config, or none, as vLLM reads it",
        "max_model_len": "Default 32,768: the calculator's choice",
        "prefill_budget": box_sources["prefill_budget"],
        "seats": box_sources["seats"],
        "speculative_tokens": "Default 0: no drafter, vLLM's default",
        "enforce_eager": "Default off: CUDA graphs captured, vLLM's default",
        "offline": "Default off: vllm serve's defaults",
        "flashinfer_installed": "Default off: the release's sampler (FlashInfer's only where vLLM installs it)",
        "no_flashinfer_sampler": "Default off: the release's sampler",
        "allow_long_max_model_len": "Default off: vLLM refuses a max_model_len above the model's own (vllm/config/model.py _get_and_verify_max_len)",
        "compile_cached": "Default off: a first start, which compiles the model inside the profile (vllm/config/compilation.py combo kernels)",
        "no_chunked_prefill": "Default off: chunked prefill on, vLLM's default",
        "no_extensible_kv_cache": "Default off: from vLLM 0.34.0 the pool is measured after warmup, its default",
        "max_cudagraph_capture_size": "Default empty: vLLM's capture sizes (vllm/config/vllm.py _set_cudagraph_sizes)",
        "optimization_level": "Default empty: vLLM's -O2, FULL_AND_PIECEWISE graphs (vllm/config/vllm.py)",
        "in_use": "Default empty: an idle card, which vLLM's own CUDA context alone takes from before its free-memory check",
        "pin": box_sources["pin"],
        "utilization": "Default empty: the release's, 0.92 from vLLM v0.20.0 and 0.9 before, 1.0 from v0.34.0 where the pool is measured after warmup (vllm/config/cache.py)",
        "overhead": "Default empty: a measured start of the same model, else outside calibration",
        "engine_version": "Default empty: the rules of vLLM v0.32.0 to v0.33.x, the newest checked on public starts",
        "pipeline_parallel_size": "Default 1: no pipeline parallel, vLLM's default",
        "pp_layer_partition": "Default empty: vLLM's split (vllm/distributed/utils.py get_pp_indices)",
        "enable_lora": "Default off: no adapters, vLLM's default",
        "max_loras": "Default 1: vLLM's default (vllm/config/lora.py)",
        "max_lora_rank": "Default 16: vLLM's default (vllm/config/lora.py)",
        "max_cpu_loras": "Default empty: vLLM keeps as many on the host as there are slots",
        "cpu_offload_gb": "Default empty: no weights offloaded, vLLM's default 0",
        "kv_offloading_size": "Default empty: no KV offloading, vLLM's default",
        "swap_space": "Default empty: vLLM's default (4 GiB a GPU, allocated by the V0 engine only)",
    }
    return Defaults(values, sources)


def _batched_floor(text: str) -> int:
    """The least default max_num_batched_tokens the pasted config gets (hfconfig.batched_tokens_floor); a
    config that does not parse is left for the model to name."""
    try:
        return hfconfig.batched_tokens_floor(hfconfig.load(text, "config.json"))
    except InputError:
        return 0


def _own_length(text: str, version: str | None) -> int | None:
    """The longest max_model_len vLLM takes from the pasted config (hfconfig.derived_max_model_len); a
    config that does not parse is left for the model to name."""
    try:
        return hfconfig.derived_max_model_len(hfconfig.load(text, "config.json"), predict.release(version)).longest_taken
    except InputError:
        return None


def _auto_length(raw: Mapping[str, str], errors: dict[str, str], config_text: str, version: str | None, beside: str | None) -> int | None:
    """max_model_len auto (or -1), as `calc model` takes it: from 0.14.0, the model's own length, which
    the prediction then fits to the pool (predict.auto_length); here only where a discrete card's
    pool is predicted, `beside` None (else what stands in its place: a pin, a unified box). A refusal
    (or a config that does not parse) is kept in `errors`, None returned."""
    typed = str(raw.get("max_model_len", "")).strip()
    label = short(LABELS["max_model_len"])
    if beside is not None:
        errors["max_model_len"] = (f"{label}: found {typed!r} {beside}, expected a token count: auto fits the length to a discrete card's "
                                   "predicted pool (the pin left empty); `calc model --max-model-len auto` fits it here")  # fmt: skip
        return None
    rel = predict.release(version)
    if rel < predict.AUTO_LENGTH_FROM:
        errors["max_model_len"] = f"{label}: found {typed!r} on vLLM {version}, expected a token count (auto and -1 from 0.14.0)"
        return None
    try:
        return hfconfig.derived_max_model_len(hfconfig.load(config_text, "config.json"), rel).given_none[0]
    except InputError as error:
        errors.update({k: v for k, v in _model_error(str(error), "").items() if k not in errors})
        return None


def _quantized(text: str, method: str | None) -> str:
    """The pasted config under --quantization; a config that does not parse is left for the model
    to name, and a method the checkpoint refuses is named beside the field."""
    try:
        hfconfig.load(text, "config.json")
    except InputError:
        return text
    try:
        return hfconfig.quantized_at_load(text, method, "config.json")
    except InputError as error:
        raise InputError(short(LABELS["quantization"]) + str(error).removeprefix("--quantization")) from None


def _beside(message: str) -> dict[str, str]:
    """A message of calc's beside the field it is about: one that names a flag (any spelling, FLAGS)
    beside that field, the flag said as the field's label; one about the checkpoint's size beside
    the index; any other beside the config."""
    spelling = next((f for f in sorted(FLAGS, key=len, reverse=True) if message.startswith((f + ":", f + " "))), None)
    if spelling is not None:
        return {FLAGS[spelling]: short(LABELS[FLAGS[spelling]]) + message[len(spelling) :]}
    return {"index" if message.startswith(("model.safetensors.index.json", "checkpoint size typed")) else "config": message}


def _model_error(message: str, read_as: str) -> dict[str, str]:
    """A message of the model beside its field (_beside); a class calc does not read gets the way out,
    the class field, or says it was read as the class typed there."""
    field = short(LABELS["read_as"])
    if read_as and message.startswith("config.json"):  # the config as read: say so, as the command line says it
        return {"config": f"{message} (the config read as '{field}' gives it)"}
    if "config.json: architectures" in message:
        return {"config": f"{message}; or give a class whose layers it has in '{field}', at your word"}
    return _beside(message)


def _index(text: str) -> tuple[str | None, int | None]:
    """The index pasted (JSON) or a size typed: (index text, None) or (None, bytes)."""
    text = text.strip()
    if not text:
        return None, None
    if text.startswith("{"):
        return text, None
    return None, parse_memory(text, short(LABELS["index"]))


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    errors: dict[str, str] = {}
    box_id = str(raw.get("box", ""))
    if box_id not in catalog.boxes:
        errors["box"] = f"{LABELS['box']}: found {box_id or 'nothing'!r}, expected one of {box_choices(catalog.boxes, box_id)}"
    dtype = str(raw.get("kv_cache_dtype", "auto"))
    if dtype not in DTYPES:
        errors["kv_cache_dtype"] = f"{short(LABELS['kv_cache_dtype'])}: found {dtype!r}, expected one of {', '.join(DTYPES)}"
    available = read(NAME, raw, errors, "available", LABELS)
    tp = read(NAME, raw, errors, "tp", LABELS)
    auto = str(raw.get("max_model_len", "")).strip().lower() in predict.AUTO_LENGTH  # vLLM's auto or -1: fitted to the pool
    max_len = None if auto else read(NAME, raw, errors, "max_model_len", LABELS)
    prefill_typed = read(NAME, raw, errors, "prefill_budget", LABELS, optional=True)
    seats_typed = read(NAME, raw, errors, "seats", LABELS, optional=True)
    drafts = read(NAME, raw, errors, "speculative_tokens", LABELS)
    card = _card(catalog.boxes[box_id]) if box_id in catalog.boxes else None
    pin_text = str(raw.get("pin", "")).strip()
    unified_box = box_id in catalog.boxes and catalog.boxes[box_id].get("memory") == "unified"
    pin = read(NAME, raw, errors, "pin", LABELS) if pin_text or (card is None and not unified_box) else None
    if pin is None and not pin_text and card is None and box_id in catalog.boxes and not unified_box:
        errors["pin"] = (
            f"{short(LABELS['pin'])}: found nothing, expected a size such as 10e9; the {catalog.boxes[box_id]['name']} is no discrete card "
            "with a total torch reports, so its pool cannot be predicted"
        )
    utilization = read(NAME, raw, errors, "utilization", LABELS, optional=True)
    largest_graph = read(NAME, raw, errors, "max_cudagraph_capture_size", LABELS, optional=True)
    level = read(NAME, raw, errors, "optimization_level", LABELS, optional=True)
    in_use = read(NAME, raw, errors, "in_use", LABELS, optional=True)
    if in_use is not None and card is not None and "in_use" not in errors:
        take(errors, "in_use", lambda: startup.check_in_use(in_use, card.total_bytes, card.name, short(LABELS["in_use"]), card.context_bytes))
    typed_overhead = read(NAME, raw, errors, "overhead", LABELS, optional=True)
    index_text, index_size = take(errors, "index", lambda: _index(str(raw.get("index", "")))) or (None, None)
    pp = read(NAME, raw, errors, "pipeline_parallel_size", LABELS)
    partition = str(raw.get("pp_layer_partition", "")).strip() or None
    if partition is not None and pp == 1:
        errors["pp_layer_partition"] = f"{short(LABELS['pp_layer_partition'])}: found {partition!r} with one stage, expected a pipeline parallel size above 1"
    lora_cfg = _lora(raw, errors)
    host_cfg = _offload(raw, errors)
    version = str(raw.get("engine_version", "")).strip() or None
    try:
        version = str(INPUTS["engine_version"].parse(version, short(LABELS["engine_version"]))) if version else None
    except InputError as error:
        errors["engine_version"] = str(error)
    config_text = str(raw.get("config", ""))
    if not config_text.strip():
        errors["config"] = f"{short(LABELS['config'])}: found nothing, expected the model's config.json pasted"
    read_as = ""
    typed_class = str(raw.get("read_as", "")).strip() or None
    if typed_class is not None and "config" not in errors and len(config_text) <= PASTE_CHARACTERS:
        try:
            config_text, read_as = hfconfig.read_as(config_text, typed_class, "config.json", short(LABELS["read_as"]), "it empty")
        except InputError as error:
            errors["read_as" if str(error).startswith(short(LABELS["read_as"])) else "config"] = str(error)
    method = str(raw.get("quantization", "")).strip().lower() or None
    if method is not None and method not in hfconfig.AT_LOAD:
        errors["quantization"] = f"{short(LABELS['quantization'])}: found {method!r}, expected empty or one of {', '.join(hfconfig.AT_LOAD)}"
    elif "config" not in errors and len(config_text) <= PASTE_CHARACTERS:
        config_text = take(errors, "quantization", lambda: _quantized(config_text, method)) or config_text
    for name in ("config", "index"):
        pasted = str(raw.get(name, ""))
        if len(pasted) > PASTE_CHARACTERS:
            errors[name] = f"{short(LABELS[name])}: found {len(pasted):,} characters, expected at most {PASTE_CHARACTERS // 2**20} MiB of JSON"
    if available is not None and "box" not in errors and (pin is not None or card is None):  # the gate reads it; a predicted pool does not
        box = catalog.boxes[box_id]
        total = derive.box_total(box).figure.size
        if available < GiB:
            errors["available"] = (
                f"{short(LABELS['available'])}: found {fmt(available, 'B')}, expected at least 1 GiB free, such as 119.5 GiB (a number without a unit is bytes)"
            )
        elif available > total:
            errors["available"] = (
                f"{short(LABELS['available'])}: found {fmt(available, 'GiB')}, above the {box['name']}'s total of {fmt(total, 'GiB')}; "
                "expected what that box has free (a value left from another box?)"
            )
    predicting = pin is None and card is not None
    if auto and not {"engine_version", "box", "pin"} & set(errors):
        beside = (
            None if predicting
            else f"on the {catalog.boxes[box_id]['name']}, a unified-memory box whose pool is pinned" if card is None
            else f"beside a pin of {pin_text}, which is the pool"
        )  # fmt: skip
        max_len = _auto_length(raw, errors, config_text, version, beside)
    switches = {
        name: flag(raw, name)
        for name in (
            "enforce_eager",
            "offline",
            "flashinfer_installed",
            "no_flashinfer_sampler",
            "allow_long_max_model_len",
            "compile_cached",
            "no_chunked_prefill",
            "no_extensible_kv_cache",
        )  # fmt: skip
    }
    sampler = take(errors, "no_flashinfer_sampler", lambda: predict.flashinfer_sampler(switches["flashinfer_installed"], switches["no_flashinfer_sampler"]))
    if "no_flashinfer_sampler" in errors:
        errors["no_flashinfer_sampler"] = (
            f"{short(LABELS['no_flashinfer_sampler'])}: found ticked beside {short(LABELS['flashinfer_installed'])}, expected one of them"
        )
    pinned_card = card is not None and pin is not None  # a pin on a discrete card: the graphs' settings move its check against the card
    graph_settings = ("enforce_eager",) if pinned_card else ()
    for name in (n for n, on in switches.items() if on and not predicting and n not in errors and n not in graph_settings):
        errors[name] = (f"{short(LABELS[name])}: found ticked on the {catalog.boxes[box_id]['name']}, a unified-memory box whose pool is the one pinned, "
                        "expected it off (it changes a discrete card's predicted pool only)" if unified_box else
                        f"{short(LABELS[name])}: found ticked with a pin, expected the pin empty on a discrete card (it changes the predicted pool only)")  # fmt: skip
    if in_use is not None and unified_box and "in_use" not in errors:
        errors["in_use"] = (f"{short(LABELS['in_use'])}: found {fmt(in_use, 'GiB')} on the {catalog.boxes[box_id]['name']}, a unified-memory box whose "
                            "start is gated on MemAvailable, expected it empty (what others hold there is out of MemAvailable already)")  # fmt: skip
    for name, value in (("max_cudagraph_capture_size", largest_graph), ("optimization_level", level)):
        if value is not None and not predicting and not pinned_card and name not in errors:
            errors[name] = (f"{short(LABELS[name])}: found {value} on the {catalog.boxes[box_id]['name']}, a unified-memory box whose pool is the "
                            "one pinned, expected it empty (it changes a discrete card's predicted pool only)" if unified_box else
                            f"{short(LABELS[name])}: found {value} with a pin, expected the pin empty on a discrete card (it changes the predicted pool only)")  # fmt: skip
    if unified_box and "engine_version" not in errors and predict.release(version) < modeled.PIN_FLAG_FROM:  # the gate takes a pin: vLLM reads it from 0.11.0
        errors["engine_version"] = (f"{short(LABELS['engine_version'])}: found {version} on the {catalog.boxes[box_id]['name']}, expected 0.11.0 or later: "
                                    "the start gate takes the pool pinned (--kv-cache-memory-bytes), which vLLM reads from 0.11.0; an earlier release "
                                    "sizes the pool from --gpu-memory-utilization against MemAvailable, which the gate does not model")  # fmt: skip
    if unified_box and utilization is not None and "utilization" not in errors:
        errors["utilization"] = (f"{short(LABELS['utilization'])}: found {fmt(utilization, 'fraction')} on the {catalog.boxes[box_id]['name']}, a unified-memory "
                                 "box whose pool is the one pinned, expected it empty: the gate reads MemAvailable")  # fmt: skip
    if errors:
        return invalid(NAME, errors, LABELS, names)
    assert max_len is not None, "a length typed, or auto's: the model's own"
    calibration = catalog.policy["gate"]["calibration"]
    prefill = prefill_typed or calibration["prefill_budget"].count
    seats = seats_typed or calibration["seats"].count
    if predicting:  # no pin: a discrete card's pool is predicted (any other box was refused above)
        assert card is not None
        compiling = vllmserve.compilation(predict.release(version), level, None, largest_graph)
        if compiling.notes:  # a level before v0.12.0, where -O N was a compilation level: said, not taken silently
            return invalid(NAME, {"optimization_level": f"{short(LABELS['optimization_level'])}: found {level} for vLLM {version}, expected it empty "
                                  "before v0.12.0, where -O set a compilation level calc does not model"}, LABELS, names)  # fmt: skip
        start = predict.Start(
            tp=tp, pp=pp, pp_layer_partition=partition, lora=lora_cfg, max_model_len=max_len, utilization=utilization, max_num_seqs=seats_typed,
            max_num_batched_tokens=prefill_typed, enforce_eager=switches["enforce_eager"],
            kv_cache_dtype=modeled.start_kv_dtype(config_text, "config.json", dtype, version), engine_version=version,
            offline=switches["offline"], cpu_offload_gib=host_cfg.cpu_offload_gib if host_cfg else Fraction(0),
            flashinfer_sampler=sampler, quantization=method, allow_long_max_model_len=switches["allow_long_max_model_len"],
            drafter=drafts > 0, speculative_tokens=drafts, compile_cached=switches["compile_cached"],
            chunked_prefill=False if switches["no_chunked_prefill"] else None, extensible_kv_cache=False if switches["no_extensible_kv_cache"] else None, max_cudagraph_capture_size=compiling.max_size,
            cudagraph_mode=compiling.mode, compiled=compiling.compiled, in_use=in_use or 0, model_len=_own_length(config_text, version),
        )  # fmt: skip
        try:
            prefill = predict.batch_on(start, card, _batched_floor(config_text))[0]
        except InputError as error:  # the scheduler's refusal, named by the field it is about
            said = str(error)
            field = "prefill_budget" if said.startswith("--max-num-batched-tokens") else "seats"
            spelled = "--max-num-batched-tokens" if field == "prefill_budget" else "--max-num-seqs"
            said = said.replace("beside --no-enable-chunked-prefill", f"beside '{short(LABELS['no_chunked_prefill'])}'")
            return invalid(NAME, {field: short(LABELS[field]) + said.removeprefix(spelled)}, LABELS, names)
    inputs = modeled.ModelInputs(
        config_text, "config.json", tp, dtype, max_len, pin, version, index_text, checkpoint_bytes=index_size, block_size=None, prefill_budget=prefill,
        speculative_tokens=drafts, pp=pp, pp_layer_partition=partition, lora=lora_cfg, offload=host_cfg,
    )  # fmt: skip
    taken = ""
    if pin is None and card is None:  # a unified box with the pin left empty: the largest the gate passes
        try:
            bare = modeled.model_report(inputs)
        except InputError as error:
            return invalid(NAME, _model_error(str(error), read_as), LABELS, names)
        g = unified_checks.unified_gate(catalog, catalog.boxes[box_id], bare, 0, available, typed_overhead, prefill, seats, drafting=drafts > 0)
        if g.largest_pin_bytes is None:
            measured = g.overhead_source == "typed" or g.overhead_source.startswith("from ")
            room = (
                f"; {unified_checks.known_names(g)} alone leave {fmt(g.room_for_overhead_bytes, 'GiB', down=True)} for the pin and the overhead"
                if g.room_for_overhead_bytes is not None
                else ""
            )
            why = (f"the gate cannot size the largest pin ({g.outside_calibration}{room}): expected a size such as 10e9, or "
                   + ("sequences and a prefill budget inside the gate's calibration" if measured else "an overhead typed")
                   if g.needs_bytes is None else f"no pin passes: the weights, overhead and headroom alone need {fmt(g.needs_bytes, 'GiB')} "
                   f"of the {fmt(g.available_bytes, 'GiB')} MemAvailable; expected a smaller model, fewer weights a rank or more memory available")  # fmt: skip
            return invalid(NAME, {"pin": f"{short(LABELS['pin'])}: found nothing; {why}"}, LABELS, names)
        pin = g.largest_pin_bytes
        inputs = replace(inputs, pool=pin)
        taken = f"The pin left empty: the largest the start gate passes, {fmt(pin, 'e9', 2, down=True)}, taken as the pin"
    if pin is None:
        assert card is not None, "no pin is refused above off a discrete card"
        return _predicted(catalog, card, inputs, start, read_as, auto)
    try:
        r = modeled.model_report(inputs)
    except InputError as error:
        return invalid(NAME, _model_error(str(error), read_as), LABELS, names)
    assert r.kv_tokens is not None and r.max_concurrency is not None and r.largest_max_model_len is not None, "the pin is the pool modeled"
    shape = r.shape
    assert shape is not None, "model_report keeps the config's Shape"
    fig = Figures()
    refused = r.largest_max_model_len is not None and r.largest_max_model_len < max_len
    g = unified_checks.unified_gate(
        catalog,
        catalog.boxes[box_id],
        r,
        pin,
        available,
        typed_overhead,
        prefill,
        seats,
        pin_source="the largest pin the gate passes (the pin left empty)" if taken else "the pin asked for",
        drafting=drafts > 0,
    )
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
                  f"{fmt(r.largest_max_model_len, 'count')}" + (": no larger pin passes the gate." if taken else " or raise the pin."))),) if refused else ()),
        *_ranks_rows(r, fig),
        *(("Note", esc(note)) for note in (*r.notes, *((read_as,) if read_as else ()), *((taken,) if taken else ()))),
    ]  # fmt: skip
    verdict_gate = _gate_rows(g, fig, rows)
    verdict = (
        f"Modeled: {r.family}, {fmt(r.weights_bytes_per_rank, 'GiB')} of weights a rank; the pin holds "
        f"{fmt(r.kv_tokens, 'tokens')} ({fmt(r.max_concurrency, 'x')} at {fmt(max_len, 'count')}). Gate: {verdict_gate}."
    )
    if card is not None:  # a discrete card: vLLM takes the pin as the pool, so the pin must fit beside the rest
        pin_graphs = vllmserve.compilation(predict.release(version), level, None, largest_graph)
        verdict += " " + _card_pin_rows(catalog, card, r, inputs, version, drafts, fig, rows, switches["enforce_eager"], pin_graphs, in_use or 0,
                                        utilization)  # fmt: skip
    if refused:
        verdict += f" vLLM refuses this start: one request at max_model_len {fmt(max_len, 'count')} does not fit the pin."
    return Output(NAME, True, {}, {f"{NAME}-verdict": esc(verdict), f"{NAME}-result": dl(rows)}, fig.shown, names)


def _card_pin_rows(catalog: Catalog, card: predict.Card, r: modeled.ModelReport, inputs: modeled.ModelInputs, version: str | None, drafts: int,
                   fig: Figures, rows: list[Any], eager: bool = False, compiling: vllmserve.Compilation | None = None, in_use: int = 0,
                   utilization: Fraction | None = None) -> str:  # fmt: skip
    """The pin against a discrete card, as `calc model --gpu CARD --kv-cache-memory-bytes PIN` gives it
    (modeled.card_pin): the terms beside the pin, their sum and the margin as printed, the largest pin
    that fits, and vLLM's free-memory check at start, which the utilization and what other processes
    hold still meet with a pin; before v0.11.0 vLLM takes no pool in bytes, said so."""
    from calc.answers import report

    if predict.release(version) < modeled.PIN_FLAG_FROM:
        rows.append(("Against the card", esc(f"vLLM {version} takes no pool in bytes (--kv-cache-memory-bytes came with v0.11.0): the card sizes the pool; "
                                             "leave the pin empty to predict it")))  # fmt: skip
        return "Card: no pin before vLLM 0.11.0."
    start = predict.Start(tp=inputs.tp, pp=inputs.pp, pp_layer_partition=inputs.pp_layer_partition, lora=inputs.lora, max_model_len=inputs.max_model_len,
                          kv_cache_dtype=inputs.kv_cache_dtype, engine_version=version, drafter=drafts > 0, speculative_tokens=drafts,
                          cpu_offload_gib=inputs.offload.cpu_offload_gib if inputs.offload else Fraction(0), enforce_eager=eager, in_use=in_use,
                          utilization=utilization)  # fmt: skip
    if compiling is not None:
        start = replace(start, max_cudagraph_capture_size=compiling.max_size, cudagraph_mode=compiling.mode, compiled=compiling.compiled)
    c = modeled.card_pin(r, card, start, r.pool_bytes or 0)
    terms = c.terms
    margin = report.margin_as_printed(c.total_bytes, terms)
    cells = [(esc(t.name), fig(f"card_{t.name.replace(' ', '_').replace('-', '_').replace(chr(39), '').lower()}", fmt(t.bytes, "GiB"))) for t in terms]
    rows.append(("Against the card (vLLM takes the pin as the pool)", table(("Term", "A rank"), cells, esc(f"Beside the pin on the {card.name}, "
                 f"{fmt(c.total_bytes, 'GiB')} in all"), ("needs", fig("card_needs", fmt(report.needs_as_printed(terms), "GiB"))))))  # fmt: skip
    largest = c.largest_pin_bytes
    rows.append(("Pin against the card", badge(c.fits) + " " + fig("card_margin", fmt(abs(margin), "GiB"))
                 + esc(" to spare" if c.fits
                       else " over the card: CUDA out of memory once the pool is allocated (at its allocation or the warm-up after it)")
                 + (esc("; the largest pin the card holds beside the rest: ") + fig("card_largest_pin", fmt(largest, "e9", 2, down=True)) if largest > 0
                    else esc("; no pin fits: the rest alone is over the card, ") + fig("card_largest_pin", "none"))))  # fmt: skip
    said = f"Card: {'fits' if c.fits else 'over'}, {fmt(abs(margin), 'GiB')} {'to spare' if c.fits else 'short'}."
    if c.passes_start_check:
        return said
    assert c.free_at_start_bytes is not None
    lower = (f"a utilization of {c.utilization_at_most:.2f} or lower passes it" if c.utilization_at_most
             else "no utilization passes it: less held by other processes")  # fmt: skip
    rows.append(("vLLM's start check", badge(False, "", "refused") + " " + esc("free memory on device ") + fig("card_free_at_start", fmt(c.free_shown, "GiB"))
                 + esc(" is less than the ") + fig("card_requested", fmt(c.requested_bytes, "GiB", up=True))
                 + esc(f" the utilization asks (vllm/v1/worker/gpu_worker.py init_device); with a pin the utilization sizes nothing, so {lower}")))  # fmt: skip
    return said + " vLLM refuses it at start: the free memory is less than the utilization asks."


def _lora(raw: Mapping[str, str], errors: dict[str, str]) -> lora.Lora | None:
    """LoRA's settings as vLLM's LoRAConfig takes them; the sizes beside an unticked box are
    refused unless they are vLLM's defaults, which the form shows."""
    slots = read(NAME, raw, errors, "max_loras", LABELS)
    rank = read(NAME, raw, errors, "max_lora_rank", LABELS)
    host = read(NAME, raw, errors, "max_cpu_loras", LABELS, optional=True)
    if not flag(raw, "enable_lora"):
        for name, value, default in (("max_loras", slots, 1), ("max_lora_rank", rank, 16), ("max_cpu_loras", host, None)):
            if value is not None and value != default and name not in errors:
                errors[name] = f"{short(LABELS[name])}: found {value} with LoRA off, expected {short(LABELS['enable_lora'])} ticked beside it"
        return None
    if slots is None or rank is None or "max_cpu_loras" in errors:
        return None
    cfg = lora.Lora(slots, rank, host)
    try:
        lora.check(cfg)
    except InputError as error:
        message = str(error)
        key = next(k for k in ("max_cpu_loras", "max_lora_rank", "max_loras") if message.startswith(INPUTS[k].flag or "-"))
        errors[key] = short(LABELS[key]) + message[len(INPUTS[key].flag or "") :]
        return None
    return cfg


def _offload(raw: Mapping[str, str], errors: dict[str, str]) -> offload.Offload | None:
    """--cpu-offload-gb, --kv-offloading-size and --swap-space, in GiB as vLLM takes them; None when all are empty."""
    gib: dict[str, Fraction | None] = {name: _gib(raw, errors, name) for name in ("cpu_offload_gb", "kv_offloading_size", "swap_space")}
    if any(name in errors for name in gib) or all(v is None for v in gib.values()):
        return None
    if gib["kv_offloading_size"] == 0:
        errors["kv_offloading_size"] = f"{short(LABELS['kv_offloading_size'])}: found 0, expected a size in GiB above 0 (or empty: no KV offloading)"
        return None
    return offload.Offload(gib["cpu_offload_gb"] or Fraction(0), gib["kv_offloading_size"], "native", gib["swap_space"])


def _gib(raw: Mapping[str, str], errors: dict[str, str], name: str) -> Fraction | None:
    """An optional size in GiB, 0 or more, as vLLM's offload flags take it."""
    text = str(raw.get(name, "")).strip()

    def parse() -> Fraction | None:
        return gib_at_least_zero(text, short(LABELS[name])) if text else None

    value: Fraction | None = take(errors, name, parse)
    return value


def _ranks_rows(r: modeled.ModelReport, fig: Figures) -> list[tuple[str, str]]:
    """Each pipeline stage's layers, weights and KV, the LoRA slots and the bytes moved to the host."""
    rows = []
    if r.pp > 1:
        stages = []
        for st in r.ranks:
            n = st.rank
            holds = f" + {', '.join(st.holds)}" if st.holds else ""
            stages.append(
                (
                    fmt(n, "count"),
                    esc(f"{st.first_layer}-{st.end_layer - 1} ({st.layers}{holds})"),
                    fig(f"stage{n}_weights", fmt(st.weights_bytes, "GiB")),
                    fig(f"stage{n}_kv", fmt(st.kv_bytes_per_token, "count")) + " B",
                )
            )
        caption = f"Pipeline parallel {fmt(r.pp, 'count')}: one rank of each stage (modeled)"
        rows.append(("Pipeline stages", table(("Stage", "Layers", "Weights", "KV a token"), stages, caption)))
    if r.lora is not None:
        lo = r.lora
        rows.append(
            (
                "LoRA slots a rank (modeled)",
                fig("lora", fmt(lo.device_bytes_per_rank, "GiB"))
                + esc(
                    f": {fmt(lo.max_loras, 'count')} slot(s) of rank {fmt(lo.max_lora_rank, 'count')} over {fmt(lo.modules, 'count')} modules, allocated at load beside the weights; "
                )
                + fig("lora_host", fmt(lo.host_bytes, "GiB"))
                + esc(f" on the host for {fmt(lo.max_cpu_loras, 'count')} adapter(s) ({lo.source})"),
            )
        )
    if r.offload is not None:
        of = r.offload
        rows.append(
            (
                "Host memory (modeled)",
                fig("offloaded", fmt(of.offloaded_bytes_per_rank, "GiB"))
                + " of weights a rank moved by --cpu-offload-gb ("
                + fig("on_device", fmt(of.weights_on_device_bytes_per_rank, "GiB"))
                + " stay on the device), KV offloading "
                + fig("kv_offloading", fmt(of.kv_offloading_bytes, "GiB"))
                + ", swap "
                + fig("swap", fmt(of.swap_space_bytes, "GiB"))
                + ": "
                + fig("host", fmt(of.host_bytes, "GiB"))
                + " on the host in all",
            )
        )
    return rows


def _gate_rows(g: UnifiedGate, fig: Figures, rows: list[Any]) -> str:
    """The start gate's rows: each term, the needs and the margin as printed, the largest pin that passes."""
    terms = [(esc(t.name), fig(f"term_{t.name.replace(' ', '_').replace('-', '_')}", fmt(t.bytes, "GiB")), esc(t.source)) for t in g.terms]
    if g.needs_bytes is None:
        # the known terms alone above MemAvailable: no overhead passes, so the gate refuses (the headline says so too)
        room = report.margin_as_printed(g.available_bytes, g.terms) if g.room_for_overhead_bytes is not None else None
        over = g.passes is False
        rows.append(("Start gate", badge(False) + " " + fig("gate", "refused") + esc(f" whatever the overhead, which is unknown: {g.outside_calibration}")
                     if over else badge(None) + " " + fig("gate", "outside calibration") + esc(f": {g.outside_calibration}")))  # fmt: skip
        if room is not None:
            rows.append(("Known terms", table(("Term", "A rank", "Source"), terms, "What one rank needs besides the overhead, which is unknown",
                         ("known", fig("known", fmt(report.needs_as_printed(g.terms), "GiB")), "the sum of the known terms as printed"))))  # fmt: skip
            rows.append(("Against MemAvailable", fig("room", fmt(abs(room), "GiB"))
                         + (" left for the overhead: the start passes if its overhead is at most that" if not over
                            else " over with the known terms alone: refused whatever the overhead")))  # fmt: skip
        if over:
            return f"refused whatever the overhead (the known terms alone are {fmt(abs(room) if room is not None else 0, 'GiB')} over MemAvailable)"
        return "outside calibration"
    rows.append(("Start gate (overhead " + esc(g.overhead_source) + ")", table(("Term", "A rank", "Source"), terms, "What one rank needs",
                 ("needs", fig("needs", fmt(report.needs_as_printed(g.terms), "GiB")), "the sum of the terms as printed"))))  # fmt: skip
    passes = bool(g.passes)
    printed = report.margin_as_printed(g.available_bytes, g.terms)
    margin = fig("margin", fmt(printed if passes else -printed, "GiB"))
    rows.append(("Against MemAvailable", badge(passes) + " " + margin + (" to spare" if passes else " short")))
    largest = g.largest_pin_bytes
    rows.append(("Largest pin that passes", fig("largest_pin", fmt(largest, "e9", 2, down=True)) if largest else fig("largest_pin", "none")))
    return "passes" if passes else "refused"


_SOURCE = re.compile(r" \(vllm/[^()]*\)")  # a source file named in vLLM's reason, as the verdict row keeps it


def _predicted(catalog: Catalog, card: predict.Card, inputs: modeled.ModelInputs, start: predict.Start, read_as: str = "", auto: bool = False) -> Output:
    """No pin on a discrete card: the pool vLLM will leave, predicted term by term (calc/engine/predict/),
    with the band it was off by on held-out public starts, vLLM's verdict and, for a refused start,
    the least changes that pass. The same prediction as `calc model --gpu` (modeled.prediction_given)."""
    names = tuple(LABELS)
    try:
        r = modeled.model_report(inputs)
        data, shape = r.config, r.shape
        assert shape is not None, "model_report keeps the config's Shape"
        given = modeled.prediction_given(r, shape, start)
        topk = predict.experts_per_token(data)
        p = predict.predict(shape, card, start, topk, given)
        own = start.max_model_len
        if auto and (fitted := predict.auto_length(start, p)) is not start:  # profiled at the model's own length, then fitted
            inputs, start = replace(inputs, max_model_len=fitted.max_model_len), fitted
            r = modeled.model_report(inputs)
            given = modeled.prediction_given(r, shape, start)
            p = predict.predict(shape, card, start, topk, given)
        found = predict.fixes(shape, card, start, topk, given)
    except InputError as error:
        return invalid(NAME, _model_error(str(error), read_as), LABELS, names)
    fig = Figures()
    band = modeled.held_out_error(catalog.policy)  # the same band `calc model --gpu` prints
    assert band is not None, "catalog/policy.yaml holds the prediction's held-out band"
    taken = (p.weights, p.activation, p.non_torch, p.cuda_graph, *((p.graph_kept,) if p.measured else ()))
    terms = [("requested", fig("p_requested", fmt(p.requested_bytes, "GiB")), esc("total x utilization, rounded up (vllm/v1/worker/utils.py request_memory)"))]
    base = shown(p.requested_bytes, "GiB")
    if p.measured:  # the pool measured after warmup: the terms come off the budget, the smaller of the request and free memory less a margin
        m = p.measured
        base = report.budget_as_printed(m.requested, m.free_at_start, m.margin, m.bytes)  # from the figures printed beside it
        terms += [("budget measured after warmup", fig("p_budget", fmt(base, "GiB")),
                   esc(f"{p.measured.source}: {fmt(p.measured.free_at_start, 'GiB')} free at start less a {fmt(p.measured.margin, 'GiB')} margin"))]  # fmt: skip
    terms += [(esc("less " + t.name.replace("_", " ")), fig(f"p_{t.name}", fmt(t.bytes, "GiB")), esc(t.source)) for t in taken]
    # printed arithmetic: the pool row is the budget row (the requested one, or the measured one) less the term rows, as printed
    pool_shown = base - sum((shown(t.bytes, "GiB") for t in taken), Fraction(0))
    rows = [
        ("Model", esc(f"{r.architecture}: {r.family}, {r.layers}")),
        ("Card", esc(card.name) + ": total " + fig("card_total", fmt(card.total_bytes, "GiB")) + esc(f" as torch reports it ({card.source})")),
        ("vLLM requests (total x utilization)", fig("requested", fmt(p.requested_bytes, "GiB")) + " at utilization "
         + fig("utilization", fmt(p.utilization, "fraction")) + esc(f"; max_num_seqs {fmt(p.max_num_seqs, 'count')}, max_num_batched_tokens {fmt(p.max_num_batched_tokens, 'count')}")),
        ("The terms vLLM takes off (predicted)", table(("Term", "A rank", "Source"), terms, "What the profile takes before the pool",
                                                       ("pool", fig("pool", fmt(pool_shown, "GiB")) if pool_shown >= 0
                                                        else fig("pool", "none") + ", " + fig("pool_short", fmt(-pool_shown, "GiB")) + " short",
                                                        "the pool one rank gets: what is left"))),  # fmt: skip
        *((("How close the prediction comes", esc("on the held-out public starts (nothing fitted to them) the predicted pool was off by ")
           + fig("band_median", fmt(band.median, "%", 2)) + esc(" at the median and ")
           + fig("band_p90", fmt(band.p90, "%", 2)) + esc(" at the 90th percentile, over ")
           + fig("band_starts", fmt(band.starts, "count")) + esc(" starts (scripts/pool_accuracy.py)")),)
          if p.available_kv_bytes > 0 and not p.measured else ()),  # the band of a pool predicted as the public starts checked it
        (f"KV a request at {fmt(inputs.max_model_len, 'count')} tokens (modeled)", fig("per_request", fmt(r.kv_bytes_per_request, "GiB"))),
    ]  # fmt: skip
    if p.kv_tokens is not None and p.max_concurrency is not None and p.largest_max_model_len is not None:
        rows.append(("GPU KV cache size (predicted)", fig("tokens", fmt(p.kv_tokens, "tokens")) + ", maximum concurrency "
                     + fig("concurrency", fmt(p.max_concurrency, "x"))))  # fmt: skip
        rows.append(("Longest max_model_len that starts", fig("largest_len", fmt(p.largest_max_model_len, "tokens"))))
    free = p.free_at_start
    if free is not None and (start.in_use or p.verdict == "free memory"):  # vLLM's check at start, where it bites or was asked for
        holds = "holds" if free.bytes >= p.requested_bytes else "is less than"
        rows.append(("Free at vLLM's start check", fig("free_at_start", fmt(free.shown, "GiB")) + esc(f" {holds} the ")
                     + fig("free_requested", fmt(p.requested_bytes, "GiB")) + esc(f" requested: {free.source}")))  # fmt: skip
    starts = p.verdict == "starts"
    said = fig("verdict", p.verdict)  # "starts", or the check that refuses the start
    rows.append(("vLLM's verdict", (badge(True, said) if starts else badge(False) + " " + said) + esc(f": {p.reason}")))
    if found:
        fixes = [(esc(f.change), esc(f.flags), fig(f"fix_{n}", fmt(f.prediction.available_kv_bytes, "GiB"))) for n, f in enumerate(found)]
        rows.append(("The least changes that pass, each predicted again", table(("Change", "Flags", "Pool a rank"), fixes, "Settings that start")))
    drawn = figure_html(
        charts.predicted_pool(
            card.name, card.total_bytes, p.budget_bytes, [(t.name, t.bytes) for t in taken], p.available_kv_bytes, measured=p.measured is not None
        )
    )
    rows.insert(4, ("The terms against the card", drawn))
    notes = modeled.prediction_notes(r, shape, start, card.name) + modeled.compile_cache_note(shape, card, start, topk, given, p)
    if auto:
        notes = (
            f"max_model_len {own:,}: auto, the model's own; {predict.auto_length_note(own, p.largest_max_model_len if start.max_model_len == own else start.max_model_len)}",
            *notes,
        )
    rows += [("Note", esc(note)) for note in (*notes, *((read_as,) if read_as else ()))]
    pool_said = f"a pool of {fmt(pool_shown, 'GiB')} a rank" if p.available_kv_bytes > 0 else f"no pool left, {fmt(-pool_shown, 'GiB')} short a rank"
    if starts:
        band_said = f" (held-out starts: off by {fmt(band.median, '%', 2)} at the median)" if not p.measured else " (measured after warmup: unchecked)"
        verdict = f"Predicted on the {card.name}: {pool_said}{band_said}; vLLM's verdict: starts ({p.reason})."
    else:  # a refusal leads: what stops the start, in vLLM's words (its source files in the verdict row below), then the pool
        if p.verdict == "free memory":  # refused before it loads anything: the pool is what the start would leave, not one it has
            pool_said = "past that check, " + ("still " + pool_said if p.available_kv_bytes <= 0 else f"the terms would leave {pool_said}")
        verdict = f"Predicted on the {card.name}: does not start ({p.verdict}). {_SOURCE.sub('', p.reason)}; {pool_said}."
    return Output(NAME, True, {}, {f"{NAME}-verdict": esc(verdict), f"{NAME}-result": dl(rows)}, fig.shown, names)
