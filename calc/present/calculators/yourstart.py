"""Your start: paste what your engine printed (the startup log, one rank's or all of them), pick
your box or type its total, paste `free -b` / `free -m` / /proc/meminfo (or type MemAvailable)
before the start and once it serves; out come what one rank holds, the gate and its largest pin,
tokens and full contexts at other pins and lengths, vLLM's own checks and the `vllm serve` line.

A typed field wins over the log, the log over nothing; the catalog's deployments are presets that
fill the typed fields. Every figure says where it came from. The figures are calc.answers.yourstart's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypedDict

from calc.answers import meminfo, report, yourstart
from calc.answers.report import fraction_text
from calc.answers.yourstart import Given, YourStart
from calc.catalog.model import Catalog
from calc.engine import derive, gate
from calc.jsontext import JsonObject
from calc.logs.figures import PAGE_FIGURES, LogReading
from calc.present import charts
from calc.present.calculators.form import (
    Defaults,
    Field,
    Figures,
    Output,
    badge,
    dl,
    esc,
    form_fields,
    form_labels,
    invalid,
    pin_up,
    short,
    size_text,
    table,
    take,
)
from calc.present.calculators.start import gated
from calc.present.chart import figure_html
from calc.units import InputError, fmt, parse_count, parse_fraction, parse_number, parse_size, printed_sum, shown

if TYPE_CHECKING:  # imported where it runs: the log's answer is read only when a log is pasted
    from calc.answers.logverdict import LogAnswer

NAME = "yourstart"
TITLE = "Your start"
OTHER_BOX = "other"
MODEL_NAME = r"[\w./:@+-]+"  # a Hugging Face id or a path, as vllm serve takes it
LINE_TEXT = 160  # a log line is quoted up to this many characters
# What the page reads of a paste, stated beside the field: a startup log is a few hundred lines (all
# ranks' a few thousand); more is refused at once rather than holding the page while it is read.
PASTE_CHARACTERS = 2**20
PASTE_LINES = 20_000
_MEMAVAILABLE = re.compile(r"MemAvailable:\s*([0-9]{1,15})\s*kB")

LABELS = form_labels(NAME)
# What a preset fills: everything a log would otherwise give.
PRESET_FIELDS = ("weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "box", "model")
UNITS = (
    ("", "from the command line pasted with it", False),
    ("b", "bytes (free -b)", False),
    ("k", "KiB (free, free -k)", False),
    ("m", "MiB (free -m)", False),
    ("g", "GiB (free -g)", False),
)


def fields(catalog: Catalog) -> list[Field]:
    presets = [("", "none: your own start", False)] + [(d, f"{catalog.deployments[d]['name']}", False) for d in gated(catalog)]
    boxes = [(b, f"{e['name']} ({e['memory']}, {fmt(derive.box_total(e).figure.size, 'GiB')})", False) for b, e in catalog.boxes.items()]
    boxes.append((OTHER_BOX, "another box: type its total", False))
    fill = {"lines": f"{PASTE_LINES:,}", "paste": str(PASTE_CHARACTERS // 2**20)}
    return form_fields(NAME, {"preset": tuple(presets), "box": tuple(boxes), "free_unit": UNITS}, fill=fill)


# a preset's fields: the text it fills and the exact value that text stands for
Filled = dict[str, tuple[str, Given | None]]


class Said(TypedDict, total=False):
    """What the pastes said beside the givens: the log's reading and its answer, the memory readings."""

    reading: LogReading | None
    before: meminfo.MemoryReading | None
    serving: meminfo.MemoryReading | None
    answer: LogAnswer | None


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


def _preset_sources(catalog: Catalog, deployment_id: str) -> dict[str, str]:
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
    sources = _preset_sources(catalog, deployment_id)
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
PRESET_HINTS = {
    "log": "Empty: the preset's figures are used",
    "serving": "Empty: the overhead comes from the preset",
}
OWN_HINTS = {
    "log": "Your log: each figure below names its line",
    "serving": "Empty: the overhead is typed, or held - weights - KV pool where the log gives them",
}


def boxes_of_total(catalog: Catalog, total: int) -> list[str]:
    """The catalog's boxes whose total is the one a log printed, within TOTAL_MATCH."""
    return [b for b, box in catalog.boxes.items() if abs(total - derive.box_total(box).figure.size) <= TOTAL_MATCH * derive.box_total(box).figure.size]


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
        sources = _preset_sources(catalog, chosen) | PRESET_HINTS
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
                reading = _read_log(log_text)
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


# --- reading the fields ---------------------------------------------------------------------


def _line(kind: str, line_no: int, text: str) -> str:
    text = " ".join(text.split())
    return f"{kind} line {line_no}: {text[:LINE_TEXT]}{'…' if len(text) > LINE_TEXT else ''}"


def _read_log(text: str) -> Any:
    from calc.logs import logread  # the log reader; standard library, so the browser runs it too

    return logread.read_log(text)


def _read_log_answered(text: str) -> tuple[LogReading | None, LogAnswer | None]:
    """The reading and the log's own answer (verdict, failed phase, fixes, whole command): the
    same function `python -m calc ingest` answers with."""
    from calc.answers import logverdict

    if not isinstance(text, str) or not text.strip():
        return _read_log(text), None
    return logverdict.answer_text(text)


def _found(reading: LogReading | None, name: str) -> Given | None:
    """A figure the log reader found (with its line) or derived (with how), as a Given."""
    found = getattr(reading, name, None) if reading is not None else None
    if found is None or found.value is None:
        return None
    if not hasattr(found, "line_text"):  # derived from several lines
        return Given(found.value, f"from the log: {found.how}")
    half = getattr(found, "half", 0)
    bounds = {"low": found.low, "high": found.high} if half and isinstance(found.value, int) else {}
    return Given(found.value, _line("log", found.line_no, found.line_text), **bounds)


def _memory(raw: Mapping[str, str], name: str, errors: dict[str, str], filled: Filled | None = None) -> tuple[Given | None, meminfo.MemoryReading | None]:
    """MemAvailable typed as a size, or read from pasted free / meminfo output."""
    text = str(raw.get(name, "")).strip()
    if not text:
        return None, None
    given = (filled or {}).get(name)
    if given and given[1] is not None and given[0] == text:
        found: Given = given[1]
        return found, None
    label = short(LABELS[name]).split(":")[0]
    if "\n" not in text:
        try:
            return Given(parse_size(text, label), "typed"), None
        except InputError:
            pass
        lone = _MEMAVAILABLE.fullmatch(text)
        if lone:  # one line of /proc/meminfo, as the field's label offers: its kB are KiB (fs/proc/meminfo.c)
            return Given(int(lone[1]) * 1024, f"pasted /proc/meminfo line: {text}"), None
    unit = str(raw.get("free_unit", "")).strip() or None
    try:
        reading = meminfo.parse(text, label, unit)
    except InputError as error:
        errors[name] = str(error)
        return None, None
    approx = " (free -h rounds it)" if reading.approximate else ""
    return Given(reading.available.value, _line(f"pasted {reading.source}", reading.available.line_no, reading.available.text) + approx), reading


def _typed(raw: Mapping[str, str], name: str, errors: dict[str, str], parse: Callable[[str, str], Any], filled: Filled | None = None) -> Given | None:
    text = str(raw.get(name, "")).strip()
    if not text:
        return None
    given = (filled or {}).get(name)
    if given and given[1] is not None and given[0] == text:
        found: Given = given[1]
        return found
    value = take(errors, name, lambda: parse(text, short(LABELS[name])))
    return Given(value, "typed") if value is not None else None


def _list(raw: Mapping[str, str], name: str, errors: dict[str, str], parse: Callable[[str, str], Any], separators: str = r"[;\n]+|,\s+") -> tuple[int, ...]:
    """Several values in one field: sizes separated by a comma and a space, counts by commas or spaces."""
    parts = [p for p in re.split(separators, str(raw.get(name, ""))) if p.strip()]
    values = []
    for part in parts:
        value = take(errors, name, functools.partial(parse, part.strip(), short(LABELS[name])))
        if value is not None:
            values.append(value)
    return tuple(values)


def _bytes_per_token(text: str, what: str) -> Fraction:
    """Bytes per token as every number field reads it (calc.units.parse_number: ASCII digits,
    commas only in threes, digits and exponent bounded before any arithmetic), above zero."""
    expected = "bytes per token, such as 55296 or 1715.2"
    if text.strip().startswith("-"):
        raise InputError(f"{what}: found {text!r}, expected bytes per token above zero")
    value = parse_number(text, what, f"{expected}, below 1e30", f"{expected}, at least 1e-30")
    if value <= 0:
        raise InputError(f"{what}: found {text!r}, expected bytes per token above zero")
    return value


def _total(text: str, what: str) -> int:
    """A box's or card's total: a size above zero (vLLM's fraction check divides by it)."""
    value = parse_size(text, what)
    if value <= 0:
        raise InputError(f"{what}: found {text!r}, expected a memory size above zero")
    return value


def parse(catalog: Catalog, raw: Mapping[str, str]) -> tuple[YourStart | None, Said, dict[str, str]]:
    """The givens, what the log says (for the page), and a message per bad field."""
    errors: dict[str, str] = {}
    log_text = str(raw.get("log", ""))
    reading, log_answer = None, None
    for name in ("log", "before", "serving"):
        pasted = str(raw.get(name, ""))
        lines = pasted.count("\n") + pasted.count("\r") - pasted.count("\r\n") + 1
        if len(pasted) > PASTE_CHARACTERS or lines > PASTE_LINES:
            errors[name] = (
                f"{short(LABELS[name]).split(':')[0]}: found {len(pasted):,} characters in {lines:,} lines, expected at most "
                f"{PASTE_CHARACTERS // 2**20} MiB and {PASTE_LINES:,} lines: " + ("paste the start's part of the log" if name == "log" else "paste one reading")
            )
    if log_text.strip() and "log" not in errors:
        try:
            reading, log_answer = _read_log_answered(log_text)
        except InputError as error:
            errors["log"] = f"{short(LABELS['log'])}: {error}"
        except ImportError:
            errors["log"] = f"{short(LABELS['log'])}: this build has no log reader; type the weights, overhead and bytes per token instead"
    box_id = str(raw.get("box", "")).strip()
    if box_id != OTHER_BOX and box_id not in catalog.boxes:
        errors["box"] = f"{LABELS['box']}: found {box_id or 'nothing'!r}, expected one of {', '.join(catalog.boxes)} or {OTHER_BOX}"
    elif not str(raw.get("total", "")).strip() and (mismatch := box_mismatch(catalog, box_id, reading)):
        errors["box"] = mismatch
    chosen = str(raw.get("preset", "")).strip()
    if chosen and chosen not in gated(catalog):
        errors["preset"] = f"{LABELS['preset']}: found {chosen!r}, expected none or one of {', '.join(gated(catalog))}"
    filled = preset(catalog, chosen) if chosen in gated(catalog) else {}
    before, before_reading = _memory(raw, "before", errors, filled) if "before" not in errors else (None, None)
    serving, serving_reading = _memory(raw, "serving", errors) if "serving" not in errors else (None, None)
    typed = {
        "weights": _typed(raw, "weights", errors, filled=filled, parse=parse_size),
        "overhead": _typed(raw, "overhead", errors, filled=filled, parse=parse_size),
        "bytes_per_token": _typed(raw, "bytes_per_token", errors, filled=filled, parse=_bytes_per_token),
        "pin": _typed(raw, "pin", errors, filled=filled, parse=parse_size),
        "max_model_len": _typed(raw, "max_model_len", errors, filled=filled, parse=lambda t, w: parse_count(t, w, 1)),
        "tp": _typed(raw, "tp", errors, filled=filled, parse=lambda t, w: parse_count(t, w, 1)),
        "gpu_memory_utilization": _typed(raw, "gpu_memory_utilization", errors, parse_fraction),
        "total": _typed(raw, "total", errors, _total),
    }
    model_text = str(raw.get("model", "")).strip()
    if model_text and not re.fullmatch(MODEL_NAME, model_text):
        errors["model"] = f"{short(LABELS['model'])}: found {model_text!r}, expected a model name or path without spaces, such as Qwen/Qwen3-8B"
    pins = _list(raw, "pins", errors, parse_size)
    lengths = _list(raw, "lengths", errors, lambda t, w: parse_count(t, w, 1), r"[,;\s]+")
    pool = _found(reading, "kv_cache_memory_bytes") or _found(reading, "available_kv_bytes")
    planned = pool if pool is not None and int(pool.value) > 0 else None  # a negative pool is no pin
    pin = typed["pin"] or planned
    if pin is None and reading is None and typed["weights"] is None and "pin" not in errors:
        errors["pin"] = f"{short(LABELS['pin'])}: found nothing, expected a size such as 20 GiB, or a log with its KV cache line"
    if errors:
        return None, {}, errors
    bpt = typed["bytes_per_token"] or _found(reading, "bytes_per_token")
    tokens = _found(reading, "kv_tokens")
    if bpt is None and planned is not None and tokens is not None and tokens.value:
        bpt = Given(Fraction(int(planned.value), int(tokens.value)), f"{planned.source} / {tokens.source}")
    if before is None and _found(reading, "free_memory_bytes") is not None:
        free = yourstart.known(_found(reading, "free_memory_bytes"))
        before = Given(free.value, free.source + " (vLLM's own reading of free memory at start)", free.low, free.high)
    total = typed["total"] or _found(reading, "total_memory_bytes")
    if total is None and box_id in catalog.boxes:
        t = derive.box_total(catalog.boxes[box_id])
        total = Given(t.figure.size, f"catalog: {catalog.boxes[box_id]['name']}, {t.what} ({t.figure.provenance})")
    headroom = catalog.policy["gate"]["headroom"]
    model = (filled["model"][1] if filled and filled["model"][0] == model_text else Given(model_text, "typed")) if model_text else _found(reading, "model")
    per_request, per_request_len = _per_request(reading, planned)
    precision = catalog.policy["gate"]["reading_precision"]
    engine = str(reading.engine.value) if reading is not None and reading.engine is not None else "vllm"
    era = _found(reading, "era")
    profile = None
    if reading is not None and engine == "vllm":
        profile = yourstart.Profile(
            non_torch=_found(reading, "non_torch_bytes"),
            activation_peak=_found(reading, "activation_peak_bytes"),
            cuda_graph=_found(reading, "cuda_graph_bytes"),
            cuda_graph_off=reading.cuda_graph_off is not None,
            total=_found(reading, "total_memory_bytes") or total,
            utilization=_found(reading, "gpu_memory_utilization"),  # the measured start's, never the plan's
            era=str(era.value) if era is not None else None,
            pinned=_found(reading, "kv_cache_memory_bytes") is not None,
        )
    y = YourStart(
        pin=pin,
        headroom=Given(headroom.size, f"catalog: the gate's headroom ({headroom.source})"),
        precision=Given(precision.size, f"catalog: the MemAvailable reading's precision ({precision.source})"),
        engine=engine,
        version=_found(reading, "engine_version"),
        block_size=_found(reading, "block_size"),
        mem_fraction_static=_found(reading, "mem_fraction_static"),
        profile=profile,
        failure=None if any(typed[k] for k in ("pin", "max_model_len", "gpu_memory_utilization")) else _found(reading, "error"),
        weights=typed["weights"] or _found(reading, "model_loading_bytes"),
        pool=pool or (Given(pin.value, f"{pin.source}; the pin, taken as the pool of the start measured") if reading is None and pin is not None else None),
        bytes_per_token=bpt,
        per_request=per_request,
        pool_tokens=tokens if planned is not None and tokens is not None and int(getattr(_found(reading, "dcp_size"), "value", 1)) <= 1 else None,
        per_request_len=per_request_len,
        estimated_max_model_len=_found(reading, "estimated_max_model_len"),
        overhead=typed["overhead"],
        before=before,
        serving=serving,
        total=total,
        max_model_len=typed["max_model_len"] or _found(reading, "max_model_len"),
        tp=typed["tp"] or _found(reading, "tensor_parallel_size"),
        gpu_memory_utilization=typed["gpu_memory_utilization"] or _found(reading, "gpu_memory_utilization"),
        model=model,
        kv_cache_dtype=_found(reading, "kv_cache_dtype"),
        concurrency=_found(reading, "max_concurrency"),
        log_flags=log_answer.proven if log_answer is not None else (),
        pins=pins,
        lengths=lengths,
    )
    said: Said = {"reading": reading, "before": before_reading, "serving": serving_reading, "answer": log_answer}
    return y, said, {}


def _per_request(reading: Any, pool: Given | None) -> tuple[Given | None, int | None]:
    """vLLM's own bytes for one request of the log's max_model_len: the one-request check's
    "X GiB KV cache is needed", else the pool over the printed maximum concurrency (vLLM divides
    the pool by its per-request maximum for it); None where the log gives neither."""
    length = _found(reading, "max_model_len")
    if length is None:
        return None, None
    needed = getattr(reading, "kv_needed_bytes", None)
    if needed is not None and needed.value:
        return Given(int(needed.high), _line("log", needed.line_no, needed.line_text) + " (its high end, as printed)"), int(length.value)
    conc = getattr(reading, "max_concurrency", None)
    if pool is None or conc is None or not conc.value:
        return None, None
    value = -(-Fraction(int(pool.value)) // Fraction(conc.value))
    how = f"the pool {fmt(int(pool.value), 'B')} ({pool.source}) / the maximum concurrency {conc.value} ({_line('log', conc.line_no, conc.line_text)}), rounded up"
    return Given(int(value), how), int(length.value)


# --- the result -----------------------------------------------------------------------------


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    y, said, errors = parse(catalog, raw)
    if y is None:
        return invalid(NAME, errors, LABELS, names)
    a = yourstart.answer(y)
    fig = Figures()
    sections = [
        _log_section(said.get("reading"), fig),
        _holds_section(y, a, fig),
        _gate_section(y, a, fig),
        _grid_section(y, a, fig),
        _checks_section(y, a, said.get("reading"), fig),
        _command_section(y, a, fig),
        _log_answer_section(said.get("answer"), fig),
    ]
    return Output(NAME, True, {}, {f"{NAME}-verdict": _verdict(y, a, fig), f"{NAME}-result": "".join(s for s in sections if s)}, fig.shown, names)


def _source(*sources: str) -> str:
    return "; ".join(f'<span class="calc-from">{esc(s)}</span>' for s in sources if s)


def _size(fig: Figures, name: str, value: int | Fraction) -> str:
    return fig(name, fmt(value, "GiB")) + f" ({fig(name + '_b', fmt(value, 'B'))})"


FAILURES = {
    "free_memory": "the free-memory check refused it",
    "no_kv_memory": "no memory was left for the KV cache",
    "max_model_len": "the pool could not hold one request of max_model_len",
}


def _needs_printed(y: YourStart, a: yourstart.Answer, pin: int) -> Fraction:
    """The gate's needs as its table prints it: the sum of the printed terms."""
    over = a.overhead.value
    assert over is not None, "the gate is sized only with an overhead"
    terms: list[int | float | Fraction] = [int(yourstart.known(y.weights).number), pin, over, int(y.headroom.number)]
    return printed_sum(terms, "GiB")


def _verdict(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    """One sentence over every check: refused by the first that refuses, passes only when every
    check that can be sized passes; the fix offered and every note said."""
    g = a.gate
    notes = "".join(f" Note: {esc(n)}." for n in a.notes)
    fix = " The command below is the suggested fix, not the refused request." if a.fix else (" No fix is offered: see below." if a.passes is False else "")
    if a.passes is None:
        need = g.needs.how if g.needs.value is None else ("needs a pin" if not g.sized else "needs MemAvailable before the start")
        if g.largest_pin is not None and not g.sized:
            need = "has no pin to check; the largest that passes is below"
        return f"<strong>Start: {fig('verdict', 'not sized')}</strong>: the gate {esc(need)}.{notes}"
    before = g.available
    assert before is not None or a.refused_by not in (None, "gate"), "a start that passes, or the gate refuses, was sized against MemAvailable"
    if a.passes:
        pin = int(yourstart.known(y.pin).number)
        available = shown(before or 0, "GiB", 2)
        checked = [name for name, c in (("free-memory", a.fraction), ("one-request", a.one_request)) if c is not None]
        also = (
            f"; vLLM's {' and '.join(checked)} check{'s pass' if len(checked) > 1 else ' passes'} too"
            if checked
            else "; vLLM's own checks are not sized (see below)"
        )
        return (
            f"<strong>Start: {fig('verdict', 'passes')}</strong>: needs {fig('needs_short', fmt(_needs_printed(y, a, pin), 'GiB'))} a rank against "
            f"{fig('available_short', fmt(available, 'GiB'))}, {fig('margin_short', fmt(available - _needs_printed(y, a, pin), 'GiB'))} to spare{also}.{notes}"
        )
    by = a.refused_by
    if by == "gate":
        margin = shown(before or 0, "GiB", 2) - _needs_printed(y, a, int(yourstart.known(y.pin).number))
        why = f"the gate: needs {fig('needs_short', fmt(_needs_printed(y, a, int(yourstart.known(y.pin).number)), 'GiB', 2))} a rank against {fig('available_short', fmt(shown(before or 0, 'GiB', 2), 'GiB', 2))}, short by {fig('margin_short', fmt(-margin, 'GiB', 2))}"
    elif by == "fraction":
        f = a.fraction
        assert f is not None, "the free-memory check refused it, so it was sized"
        why = f"vLLM's free-memory check: gpu_memory_utilization {fig('verdict_fraction', fraction_text(f.fraction))} asks for more than the free memory; at most {fmt(f.ceiling, 'fraction', 4)} passes"
    elif by == "log":
        failure = yourstart.known(y.failure)
        why = f"{'SGLang' if y.engine == 'sglang' else 'vLLM'}, in your log: {esc(FAILURES.get(str(failure.value), str(failure.value)))} ({_source(failure.source)})"
    else:
        o = a.one_request
        assert o is not None, "the one-request check refused it, so it was sized"
        why = f"vLLM's one-request check: the pin holds {fig('verdict_longest', fmt(o.estimated_max_model_len, 'tokens'))}, not one request of {fmt(o.max_model_len, 'tokens')}"
    return f"<strong>Start: {fig('verdict', 'refused')}</strong> by {why}.{fix}{notes}"


LOG_FIGURES = PAGE_FIGURES  # the reading's figures, label and unit, as calc/logs/figures.py declares them


def _log_section(reading: LogReading | None, fig: Figures) -> str:
    if reading is None:
        return ""
    rows = []
    for key, label, unit in LOG_FIGURES:
        found = getattr(reading, key, None)
        if found is None or found.value is None:
            continue
        value = found.value
        if isinstance(value, dict):
            text = ", ".join(f"{k} {v}" for k, v in value.items() if v is not None)
        elif unit == "B":
            text = fmt(value, "B a token", 0 if Fraction(value).denominator == 1 else 2)  # as the grid below divides by it
        elif unit and not isinstance(value, (str, bool)):
            text = fmt(value, unit, 2 if unit in ("GiB", "fraction", "x") else 0)
        else:
            text = str(value)
        if hasattr(found, "line_text"):
            where = fmt(found.line_no, "count")
            quoted = f'<div class="calc-line" role="region" tabindex="0" aria-label="Log line {where}"><code>{esc(" ".join(str(found.line_text).split())[:LINE_TEXT])}</code></div>'
        else:
            where, quoted = ", ".join(fmt(n, "count") for n in found.lines), esc(found.how)
        rows.append((esc(label), fig(f"log_{key}", text), where, quoted))
    missing = list(getattr(reading, "missing", []) or [])
    notes = list(getattr(reading, "notes", []) or [])
    extra = ""
    if missing:
        extra += f"<p>The log does not say: {esc(', '.join(missing))}.</p>"
    if notes:
        extra += "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"
    return f'<section class="calc-section"><h3>What your log says</h3>{table(("Figure", "Read", "Line", "Text"), rows, "Each figure with the log line it was read from")}{extra}</section>'


VERDICT_WORDS = {
    "started": "it started",
    "refused": "the engine's own check refused it",
    "killed": "it was stopped by an error before it served",
    "unknown": "the log cannot tell",
}


def _log_answer_section(answer: LogAnswer | None, fig: Figures) -> str:
    """The log's own answer (calc.answers.logverdict, as `python -m calc ingest` gives it): the verdict, the
    phase that failed and the engine source that prints it, the changes ranked, each checked
    against the log's figures, and the whole command with the changed flags marked."""
    if answer is None:
        return ""
    out = ['<section class="calc-section"><h3>What your log says happened</h3>']
    items = [("Verdict", f"{fig('log_verdict', answer.verdict)}: {esc(VERDICT_WORDS[answer.verdict])} ({esc(answer.verdict_how)})")]
    phase = answer.failure_phase
    if phase:
        items.append(("Failed in", f"{fig('log_phase', phase['phase'])}: {esc(phase['what'])}, line {fmt(phase['line'], 'count')}"))
        items.append(("Printed by", f"<code>{esc(phase['engine_source'])}</code>"))
    out.append(dl(items))
    if answer.fixes:
        rows = []
        for i, f in enumerate(answer.fixes):
            said = {True: "passes", False: "not enough alone", None: "not checked"}[f.passes]
            flag = f.flag + (f" {f.value}" if f.value is not None else "")
            rows.append((str(i + 1), f"<code>{esc(flag)}</code>", fig(f"log_fix_{i}", said), esc(f.why), esc(f.check)))
        out.append(
            table(
                ("Rank", "Change", "Check", "Why", "Against the log's figures"), rows, "The least changes, ranked, each checked against the log's own figures"
            )
        )
    if answer.command:
        fig("log_command", answer.command)
        changed = "".join(
            f"<li><code>{esc(c['flag'] + (' ' + c['value'] if c['value'] is not None else ''))}</code> "
            + (f"(was {esc(str(c['was']))})" if c.get("was") is not None else "(added)")
            + f": {esc(c['why'])}</li>"
            for c in answer.command_changes
        )
        intro = "<p>Every flag the log proves" + (f", with the change marked:</p><ul>{changed}</ul>" if changed else ".</p>")
        out.append(
            intro + f'<pre class="calc-flags" id="{NAME}-log-command"><code data-fig="log_command">{esc(answer.command)}</code></pre>'
            f'<button type="button" class="md-button calc-copy" data-clipboard-target="#{NAME}-log-command &gt; code">Copy the log&rsquo;s command</button>'
        )
    return "".join(out) + "</section>"


def _holds_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    rows = []
    if y.weights is not None:
        rows.append(("Weights", _size(fig, "weights", int(y.weights.value)), _source(y.weights.source)))
    else:
        rows.append(("Weights", "unknown", "paste a log with its &ldquo;Model loading took&rdquo; line, or type them"))
    if y.pool is not None:
        rows.append(("KV pool of the measured start", _size(fig, "pool", int(y.pool.value)), _source(y.pool.source)))
    h, over = a.held, a.overhead
    if h.value is not None:
        rows.append(("Held: MemAvailable before - serving", _size(fig, "held", h.value), _source(*h.sources)))
    if over.value is not None:
        rows.append((f"Overhead ({esc(over.how)})", _size(fig, "overhead", over.value), _source(*over.sources)))
    else:
        rows.append(("Overhead", fig("overhead", "unknown"), esc(over.how) + "; or type it"))
    return (
        '<section class="calc-section"><h3>What one rank holds</h3>'
        + table(("Part", "Bytes a rank", "From"), rows, "Weights, KV pool and the overhead beyond them")
        + "</section>"
    )


def _not_reached(name: str, fig: Figures) -> str:
    return '<span class="calc-badge calc-unknown">not reached</span> ' + fig(name, "not reached: an earlier check refuses the start first")


def _check(name: str, passes: bool, fig: Figures) -> str:
    return badge(passes) + fig(name, "passes" if passes else "refused").replace('class="fig"', 'class="fig calc-sr"')


def _gate_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    g = a.gate
    head = '<section class="calc-section"><h3>The start gate</h3>'
    if g.needs.value is None:
        return head + f'<p class="calc-unknown-note">The gate cannot size this start: it {esc(g.needs.how)}.</p></section>'
    over = a.overhead
    over_bytes = over.value
    assert over_bytes is not None, "needs are sized only with an overhead"
    pin = int(y.pin.value) if y.pin is not None else 0
    rows = [
        ("weights", _size(fig, "term_weights", int(yourstart.known(y.weights).number)), _source(yourstart.known(y.weights).source)),
        ("KV pin", _size(fig, "term_pin", pin), _source(y.pin.source) if y.pin is not None else "no pin: the log gives none; type one to check it"),
        ("overhead", _size(fig, "term_overhead", over_bytes), _source(*over.sources)),
        ("start headroom", _size(fig, "term_headroom", int(y.headroom.value)), _source(y.headroom.source)),
    ]
    needs = _needs_printed(y, a, pin)
    total = ("needs", fig("needs", fmt(needs, "GiB")), "the sum of the terms as printed; the check runs on exact bytes")
    terms = table(("Term", "A rank", "From"), rows, "needs = weights + KV pin + overhead + headroom", total)
    if g.available is None:
        return head + terms + "<p>Paste or type MemAvailable before the start to see whether it passes and the largest pin.</p></section>"
    largest = g.largest_pin
    assert largest is not None, "needs and MemAvailable give the largest pin"
    available = ("MemAvailable before the start", _size(fig, "available", g.available) + " " + _source(yourstart.known(y.before).source))
    margin = shown(g.available, "GiB", 2) - needs
    items = [available]
    if g.passes is not None:
        items.append(("Gate", f"{_check('gate_verdict', g.passes, fig)} by {fig('margin', fmt(abs(margin), 'GiB'))} {'to spare' if g.passes else 'short'}"))
    items.append(
        (
            "Largest pin that passes",
            fig("largest_pin", fmt(largest, "e9", 2, down=True)) + f" ({fig('largest_pin_gib', fmt(largest, 'GiB', 2, down=True))}), rounded down"
            if largest > 0
            else fig("largest_pin", f"none: short by {fmt(-largest, 'GiB', up=True)} at a zero pin"),
        )
    )
    parts = [("weights", int(yourstart.known(y.weights).number)), ("KV pin", pin), ("overhead", over_bytes), ("start headroom", int(y.headroom.number))]
    drawn = figure_html(
        charts.needs_vs_boxes(
            [gate.Term(name, value, "", True) for name, value in parts],  # type: ignore[arg-type]  # a typed overhead may be a fraction of a byte, drawn as it is
            g.needs.value,
            [("your box", g.available)],
            "What your start needs",
            "yourstart-needs",
        )
    )
    return head + drawn + terms + dl(items) + "</section>"


def _grid_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    head = '<section class="calc-section"><h3>Tokens and full contexts</h3>'
    bpt = a.bytes_per_token_printed
    if not bpt:
        return head + "<p>No bytes per token: paste a log with its KV cache lines, or type it.</p></section>"
    if not a.grid:
        return head + "<p>No pin to size: type one, or give the readings that size the largest that passes.</p></section>"
    src = _source(yourstart.known(y.bytes_per_token).source)
    lengths = a.lengths
    pin = int(y.pin.value) if y.pin is not None else None
    rows = []
    for i, cell in enumerate(a.grid):
        p = cell.pin
        name = "the pin" if p == pin else "largest that passes" if p == a.gate.largest_pin else "typed"
        logged = f" (logged by {'SGLang' if y.engine == 'sglang' else 'vLLM'})" if cell.logged else ""
        row = [f"{fig(f'grid_pin_{i}', fmt(p, 'B'))} ({esc(name)})", fig(f"grid_tokens_{i}", fmt(cell.tokens, "tokens")) + logged]
        row += [fig(f"grid_contexts_{i}_{n}", fmt(cell.contexts[n], "count")) for n in lengths]
        rows.append(tuple(row))
    head_row = ("KV pin", "Tokens", *(f"Full {fmt(n, 'count')}-token contexts" for n in lengths))
    note = (
        f"<p>Tokens = the pin / {fig('bpt', fmt(bpt, 'B a token', 0 if bpt.denominator == 1 else 2))} a token a rank, rounded down"
        + (" (the count vLLM logged at its own pool)" if any(c.logged for c in a.grid) else "")
        + "; full contexts = tokens / the length, rounded down "
        + ("(at the log&rsquo;s own pool and max_model_len, the maximum concurrency the engine printed, rounded down) " if y.concurrency is not None else "")
        + f"(bytes a token: {src}). Where part of a request's footprint is fixed "
        "(sliding-window or hybrid layers, a drafter), pool over tokens moves with max_model_len: "
        '<a href="../kv-pool/#why-pool-over-tokens-is-not-a-per-token-cost">why</a>.</p>'
    )
    if not lengths:
        note += "<p>Type max_model_len, or paste a log that states it, for full contexts.</p>"
    return head + table(head_row, rows, "Tokens a pin holds, and how many full contexts of each length at once") + note + "</section>"


def _checks_section(y: YourStart, a: yourstart.Answer, reading: LogReading | None, fig: Figures) -> str:
    out = ['<section class="calc-section"><h3>vLLM&rsquo;s own checks</h3>']
    if y.engine == "sglang":
        out.append(
            "<p>This is an SGLang log: SGLang sizes its pool by mem_fraction_static after the weights load and runs neither of vLLM&rsquo;s checks "
            "(gpu_memory_utilization against free memory, one request of max_model_len in the pool), so neither is worked here.</p>"
        )
    f = a.fraction
    if f is None and y.engine != "sglang":
        out.append("<p>The fraction check needs the box total and the free memory before the start (MemAvailable on unified memory).</p>")
    elif f is not None:
        how = "" if f.typed else f"the largest two decimals whose ask leaves the {fmt(int(y.headroom.value), 'GiB', 0)} start headroom free"
        asks = fig("fraction_requested", fmt(f.requested, "GiB")) if f.requested is not None else "nothing"
        out.append(
            "<p>The fraction check: vLLM starts only if ceil(gpu_memory_utilization &times; total) &le; free memory, even with a pin.</p>"
            + dl(
                [
                    (
                        "gpu_memory_utilization",
                        f"{fig('fraction', fraction_text(f.fraction))} ({_source(yourstart.known(y.gpu_memory_utilization).source) if f.typed else how})",
                    ),
                    ("Asks for", f"{asks} of {fig('fraction_total', fmt(f.total, 'GiB'))} ({_source(yourstart.known(y.total).source)})"),
                    ("Against free", fig("fraction_free", fmt(f.free, "GiB")) + f" ({_source(yourstart.known(y.before).source)})"),
                    ("Check", _check("fraction_verdict", f.passes, fig) if f.reached else _not_reached("fraction_verdict", fig)),
                    (
                        "The fraction to pass it",
                        "at most "
                        + fig("fraction_ceiling", fmt(f.ceiling, "fraction", 4, down=True))
                        + (" (the low end of free over the high end of total, as the log rounded them)" if f.rounded else ""),
                    ),
                ]
            )
        )
    one = a.one_request
    if one is None and y.engine != "sglang":
        out.append("<p>The one-request check needs a pin, bytes per token and max_model_len.</p>")
    elif one is not None:
        out.append(
            "<p>The one-request check: the pool must hold one request of max_model_len, or vLLM stops and estimates the longest it could serve.</p>"
            + dl(
                [
                    (
                        f"One {fig('one_request_len', fmt(one.max_model_len, 'tokens'))} request",
                        f"needs a pin of at least {fig('one_request_pin', pin_up(one.pin_needed))} "
                        + (
                            f"(vLLM&rsquo;s own per-request maximum: {_source(one.floor_source)}"
                            if one.floor_source
                            else "(max_model_len &times; the bytes a token printed above, rounded up; vLLM&rsquo;s own floor is its per-request maximum, larger by any fixed part"
                        )
                        + (f"; and {esc(one.block_how)}, {fig('one_request_block', fmt(one.block_bytes, 'B'))})" if one.block_bytes else ")"),
                    ),
                    ("Check", _check("one_request_verdict", one.passes, fig) if one.reached else _not_reached("one_request_verdict", fig)),
                    (
                        "Tokens the pin holds",
                        fig("one_request_longest", fmt(one.estimated_max_model_len, "tokens"))
                        + " at the bytes a token printed above (vLLM&rsquo;s own estimate of the longest context differs for hybrid and sliding-window models)",
                    ),
                ]
            )
        )
    error = getattr(reading, "error", None) if reading is not None else None
    if error is not None and error.value:
        what = FAILURES.get(str(error.value), str(error.value))
        estimate = getattr(reading, "estimated_max_model_len", None)
        tail = f"; vLLM estimated a max_model_len of {fig('log_estimate', fmt(estimate.value, 'count'))}" if estimate is not None and estimate.value else ""
        out.append(f"<p><strong>Your start failed:</strong> {esc(what)} ({_source(_line('log', error.line_no, error.line_text))}){tail}.</p>")
    return "".join(out) + "</section>"


def _command_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    """The launch line for the log's engine: the request's when nothing refuses it, the suggested
    fix's (labelled, each change said) when something does, none when nothing here starts it."""
    sglang = y.engine == "sglang"
    head = "SGLang launch command" if sglang else "vllm serve"
    if a.passes is False and a.fix is None:
        why = (
            "None offered: what is given does not size a fix (it needs the start&rsquo;s total, weights and overhead); pick the box, type them, or paste the readings."
            if a.refused_by == "log"
            else "None: no pin and no fraction here lets this request start; only more free memory, a shorter max_model_len or a smaller model does."
        )
        return f'<section class="calc-section"><h3>{head}</h3><p>{why}</p></section>'
    text = a.command
    fig("command", text)
    note, button = "", "Copy the command"
    if a.fix is not None:
        head += " of the suggested fix"
        changes = "".join(f"<li>{esc(_change(k, v))}: {esc(why)}</li>" for k, v, why in a.fix.changes)
        note = f"<p>Not the refused request: the same request with</p><ul>{changes}</ul>"
        button = "Copy the suggested fix&rsquo;s command"
    if y.model is None:
        note += "<p>MODEL stands for your model: type it above, or paste a log that names it.</p>"
    if a.command_note:
        note += f"<p><strong>Note:</strong> {esc(a.command_note)}.</p>"
    if sglang:
        note += (
            "<p>SGLang has no byte pin: mem_fraction_static (the log&rsquo;s, when it printed one) sizes its pool, and "
            "--max-total-tokens caps the pool at the tokens the pin holds at this log&rsquo;s bytes a token "
            "(flags of python/sglang/srt/server_args.py).</p>"
        )
    return (
        f'<section class="calc-section"><h3>{head}</h3>{note}'
        f'<pre class="calc-flags" id="{NAME}-command"><code data-fig="command">{esc(text)}</code></pre>'
        f'<button type="button" class="md-button calc-copy" data-clipboard-target="#{NAME}-command &gt; code">{button}</button></section>'
    )


def _change(key: str, value: Any) -> str:
    if key == "pin":
        return f"--kv-cache-memory-bytes {value} ({fmt(value, 'e9')})"
    if key == "max_model_len":
        return f"--max-model-len {value}"
    return f"--gpu-memory-utilization {fraction_text(value)}"
