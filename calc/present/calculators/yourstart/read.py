"""Reading Your start's fields: a typed field wins over the log, the log over nothing, and a bad
field gets its one-line message."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypedDict

from calc.answers import meminfo, yourstart
from calc.answers.yourstart import Given, YourStart
from calc.catalog.model import Catalog, box_choices
from calc.engine import derive
from calc.logs.figures import LogReading
from calc.present.calculators.form import short, take
from calc.present.calculators.start import gated
from calc.present.calculators.yourstart.fields import LABELS, MODEL_NAME, OTHER_BOX, PASTE_CHARACTERS, PASTE_LINES
from calc.present.calculators.yourstart.log import from_log, quoted_line, read_log_answered
from calc.present.calculators.yourstart.preset import Filled, box_mismatch, preset
from calc.units import InputError, fmt, parse_count, parse_fraction, parse_memory, parse_number

if TYPE_CHECKING:  # imported where it runs: the log's answer is read only when a log is pasted
    from calc.answers.logverdict import LogAnswer


_MEMAVAILABLE = re.compile(r"MemAvailable:\s*([0-9]{1,15})\s*kB")


class Said(TypedDict, total=False):
    """What the pastes said beside the givens: the log's reading and its answer, the memory readings."""

    reading: LogReading | None
    before: meminfo.MemoryReading | None
    serving: meminfo.MemoryReading | None
    answer: LogAnswer | None


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
            return Given(parse_memory(text, label), "typed"), None
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
    return Given(reading.available.value, quoted_line(f"pasted {reading.source}", reading.available.line_no, reading.available.text) + approx), reading


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
    value = parse_memory(text, what)
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
            reading, log_answer = read_log_answered(log_text)
        except InputError as error:
            errors["log"] = f"{short(LABELS['log'])}: {error}"
        except ImportError:
            errors["log"] = f"{short(LABELS['log'])}: this build has no log reader; type the weights, overhead and bytes per token instead"
    box_id = str(raw.get("box", "")).strip()
    if box_id != OTHER_BOX and box_id not in catalog.boxes:
        errors["box"] = f"{LABELS['box']}: found {box_id or 'nothing'!r}, expected one of {box_choices(catalog.boxes, box_id)} or {OTHER_BOX}"
    elif not str(raw.get("total", "")).strip() and (mismatch := box_mismatch(catalog, box_id, reading)):
        errors["box"] = mismatch
    chosen = str(raw.get("preset", "")).strip()
    if chosen and chosen not in gated(catalog):
        errors["preset"] = f"{LABELS['preset']}: found {chosen!r}, expected none or one of {', '.join(gated(catalog))}"
    filled = preset(catalog, chosen) if chosen in gated(catalog) else {}
    before, before_reading = _memory(raw, "before", errors, filled) if "before" not in errors else (None, None)
    serving, serving_reading = _memory(raw, "serving", errors) if "serving" not in errors else (None, None)
    typed = {
        "weights": _typed(raw, "weights", errors, filled=filled, parse=parse_memory),
        "overhead": _typed(raw, "overhead", errors, filled=filled, parse=parse_memory),
        "bytes_per_token": _typed(raw, "bytes_per_token", errors, filled=filled, parse=_bytes_per_token),
        "pin": _typed(raw, "pin", errors, filled=filled, parse=parse_memory),
        "max_model_len": _typed(raw, "max_model_len", errors, filled=filled, parse=lambda t, w: parse_count(t, w, 1)),
        "tp": _typed(raw, "tp", errors, filled=filled, parse=lambda t, w: parse_count(t, w, 1)),
        "gpu_memory_utilization": _typed(raw, "gpu_memory_utilization", errors, parse_fraction),
        "total": _typed(raw, "total", errors, _total),
    }
    model_text = str(raw.get("model", "")).strip()
    if model_text and not re.fullmatch(MODEL_NAME, model_text):
        errors["model"] = f"{short(LABELS['model'])}: found {model_text!r}, expected a model name or path without spaces, such as Qwen/Qwen3-8B"
    pins = _list(raw, "pins", errors, parse_memory)
    lengths = _list(raw, "lengths", errors, lambda t, w: parse_count(t, w, 1), r"[,;\s]+")
    pool = from_log(reading, "kv_cache_memory_bytes") or from_log(reading, "available_kv_bytes")
    planned = pool if pool is not None and int(pool.value) > 0 else None  # a negative pool is no pin
    pin = typed["pin"] or planned
    if pin is None and reading is None and typed["weights"] is None and "pin" not in errors:
        errors["pin"] = f"{short(LABELS['pin'])}: found nothing, expected a size such as 20 GiB, or a log with its KV cache line"
    if errors:
        return None, {}, errors
    bpt = typed["bytes_per_token"] or from_log(reading, "bytes_per_token")
    tokens = from_log(reading, "kv_tokens")
    if bpt is None and planned is not None and tokens is not None and tokens.value:
        bpt = Given(Fraction(int(planned.value), int(tokens.value)), f"{planned.source} / {tokens.source}")
    if before is None and from_log(reading, "free_memory_bytes") is not None:
        free = yourstart.known(from_log(reading, "free_memory_bytes"))
        before = Given(free.value, free.source + " (vLLM's own reading of free memory at start)", free.low, free.high)
    total = typed["total"] or from_log(reading, "total_memory_bytes")
    if total is None and box_id in catalog.boxes:
        t = derive.box_total(catalog.boxes[box_id])
        total = Given(t.figure.size, f"catalog: {catalog.boxes[box_id]['name']}, {t.what} ({t.figure.provenance})")
    headroom = catalog.policy["gate"]["headroom"]
    model = (filled["model"][1] if filled and filled["model"][0] == model_text else Given(model_text, "typed")) if model_text else from_log(reading, "model")
    per_request, per_request_len = _per_request(reading, planned)
    precision = catalog.policy["gate"]["reading_precision"]
    engine = str(reading.engine.value) if reading is not None and reading.engine is not None else "vllm"
    era = from_log(reading, "era")
    profile = None
    if reading is not None and engine == "vllm":
        profile = yourstart.Profile(
            non_torch=from_log(reading, "non_torch_bytes"),
            activation_peak=from_log(reading, "activation_peak_bytes"),
            cuda_graph=from_log(reading, "cuda_graph_bytes"),
            cuda_graph_off=reading.cuda_graph_off is not None,
            total=from_log(reading, "total_memory_bytes") or total,
            utilization=from_log(reading, "gpu_memory_utilization"),  # the measured start's, never the plan's
            era=str(era.value) if era is not None else None,
            pinned=from_log(reading, "kv_cache_memory_bytes") is not None,
        )
    y = YourStart(
        pin=pin,
        headroom=Given(headroom.size, f"catalog: the gate's headroom ({headroom.source})"),
        precision=Given(precision.size, f"catalog: the MemAvailable reading's precision ({precision.source})"),
        engine=engine,
        version=from_log(reading, "engine_version"),
        block_size=from_log(reading, "block_size"),
        mem_fraction_static=from_log(reading, "mem_fraction_static"),
        profile=profile,
        failure=None if any(typed[k] for k in ("pin", "max_model_len", "gpu_memory_utilization")) else from_log(reading, "error"),
        weights=typed["weights"] or from_log(reading, "model_loading_bytes"),
        pool=pool or (Given(pin.value, f"{pin.source}; the pin, taken as the pool of the start measured") if reading is None and pin is not None else None),
        bytes_per_token=bpt,
        per_request=per_request,
        pool_tokens=tokens if planned is not None and tokens is not None and int(getattr(from_log(reading, "dcp_size"), "value", 1)) <= 1 else None,
        per_request_len=per_request_len,
        estimated_max_model_len=from_log(reading, "estimated_max_model_len"),
        overhead=typed["overhead"],
        before=before,
        serving=serving,
        total=total,
        max_model_len=typed["max_model_len"] or from_log(reading, "max_model_len"),
        tp=typed["tp"] or from_log(reading, "tensor_parallel_size"),
        gpu_memory_utilization=typed["gpu_memory_utilization"] or from_log(reading, "gpu_memory_utilization"),
        model=model,
        kv_cache_dtype=from_log(reading, "kv_cache_dtype"),
        concurrency=from_log(reading, "max_concurrency"),
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
    length = from_log(reading, "max_model_len")
    if length is None:
        return None, None
    needed = getattr(reading, "kv_needed_bytes", None)
    if needed is not None and needed.value:
        return Given(int(needed.high), quoted_line("log", needed.line_no, needed.line_text) + " (its high end, as printed)"), int(length.value)
    conc = getattr(reading, "max_concurrency", None)
    if pool is None or conc is None or not conc.value:
        return None, None
    value = -(-Fraction(int(pool.value)) // Fraction(conc.value))
    how = f"the pool {fmt(int(pool.value), 'B')} ({pool.source}) / the maximum concurrency {conc.value} ({quoted_line('log', conc.line_no, conc.line_text)}), rounded up"
    return Given(int(value), how), int(length.value)
