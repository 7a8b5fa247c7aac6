"""The catalog: one spec that validates the YAML files, turns figures into exact values and
writes the JSON Schema that editors use.

Loading needs PyYAML, imported inside `load_dir` only, so the browser (which receives the
catalog as JSON) and every other module of calc/ stay standard library.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from calc import files, jsontext
from calc.units import LARGEST_COUNT, SIZE_UNITS, InputError, parse_size

KINDS = ("measured", "shard headers", "modeled", "published", "estimated", "remainder", "setting", "source-read")
FILES = ("boxes", "models", "starts", "policy", "incidents", "traces", "plans")


class CatalogError(ValueError):
    """A catalog entry that is not what the spec expects; the message names file and key path."""

    def __init__(self, file: str, path: str, found: Any, expected: str) -> None:
        self.file, self.path, self.found, self.expected = file, path, found, expected
        shown = "nothing" if found is _MISSING else _shown(found)
        super().__init__(f"{file}: {path}: found {shown}, expected {expected}")


_MISSING = object()


class Found(str):
    """What was found, described rather than quoted: "the key 'value' twice", "4,200,000 bytes"."""

    def __repr__(self) -> str:
        return str(self)


def _shown(found: Any) -> str:
    """A found value as a message quotes it: whole when short, cut when long (never expanded)."""
    text = repr(found)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


_NUMBER_TEXT = r"^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
LARGEST_NUMBER = 1e30  # no figure of the catalog comes near; a larger one is a typing slip


@dataclass(frozen=True)
class Figure:
    """One catalog figure with its provenance. `value` is exact: bytes (int) for sizes."""

    value: int | Fraction | None
    unit: str
    kind: str
    entry: str
    minimum: int | Fraction | None = None
    maximum: int | Fraction | None = None
    date: str | None = None
    generation: str | None = None
    source: str | None = None
    note: str | None = None
    approximate: bool = False
    line: int | None = None  # the log line a measured figure was read from
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """A size figure's value in bytes; a range or a figure of another unit has none."""
        if not isinstance(self.value, int):
            raise InputError(f"{self.entry}: found {self.value!r}, expected a size in bytes")
        return self.value

    @property
    def provenance(self) -> str:
        """Kind, generation and date, the way pages and the calculator show a figure's source."""
        parts = [self.kind]
        if self.generation:
            parts.append(f"gen {self.generation}")
        if self.date:
            parts.append(self.date)
        return ", ".join(parts)


# --- the spec -------------------------------------------------------------------------------
# A spec is a small tuple tree: ("obj", required, optional), ("list", item), ("fig", unit,
# extra), ("ref", section), ("enum", values), ("id",), ("str",), ("int",), ("num",),
# ("bool",), ("date",).


def fig(unit: str, above_zero: bool = False, **extra: tuple[Any, ...]) -> tuple[Any, ...]:
    """A figure; `above_zero` where zero would be a division by zero or a nonsense reading."""
    return ("fig", unit, extra, above_zero)


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> tuple[Any, ...]:
    return ("obj", required, optional or {})


SIZE, COUNT, NUMBER, FRACTION = "size", "count", "number", "fraction"
STR, INT, NUM, BOOL, DATE, ID = ("str",), ("int", 0), ("num",), ("bool",), ("date",), ("id",)
POS = ("int", 1)  # a count that is at least one: boxes, ranks, layers, a length, a block

SETTINGS = obj(
    {},
    {
        "max_model_len": POS,
        "seats": POS,
        "prefill_budget": POS,
        "kv_dtype": STR,
        "speculative_tokens": INT,
        "block_size": POS,
    },
)

KV_REPORT = obj(
    {"kv_dtype": STR},
    {
        "engine": STR,
        "label": STR,
        "tp": POS,
        "max_model_len": POS,
        "block_size": POS,
        "speculative_tokens": INT,
        "pool": fig(SIZE, above_zero=True),
        "tokens": fig(COUNT, above_zero=True),
        "bytes_per_token": fig(NUMBER, above_zero=True),
    },
)

# The same pool read at two or more max_model_len: what fits the per-request model.
LENGTH_REPORT = obj(
    {
        "kv_dtype": STR,
        "pool": fig(SIZE, above_zero=True),
        "readings": ("list", obj({"max_model_len": POS, "tokens": fig(COUNT, above_zero=True)}), 2),
    },
    {"engine": STR, "label": STR, "tp": POS, "block_size": POS, "speculative_tokens": INT},
)

SPEC: dict[str, tuple[Any, ...]] = {
    "boxes": obj(
        {
            "boxes": (
                "list",
                obj(
                    {"id": ID, "name": STR, "memory": ("enum", ("unified", "discrete"))},
                    {
                        "total_memory": fig(SIZE, above_zero=True),
                        "reported_total": fig(SIZE, above_zero=True),
                        "spec_memory": fig(SIZE, above_zero=True),
                        "idle_available": fig(SIZE),
                        "free_at_start": fig(SIZE),
                        "serving": obj({"kv_pin": fig(SIZE), "gpu_memory_utilization": fig(FRACTION)}),
                    },
                ),
            )
        }
    ),
    "models": obj(
        {
            "models": (
                "list",
                obj(
                    {"id": ID, "name": STR},
                    {
                        "checkpoint": STR,
                        "illustrative": BOOL,
                        "parameters": NUM,
                        "bits_per_parameter": NUM,
                        "weights": fig(SIZE, per_rank_at_tp=POS),
                        "drafter": obj(
                            {
                                "name": STR,
                                "weights": fig(SIZE, ranks=POS),
                                # vLLM's --speculative-config for this drafter, as its public configs write it
                                "speculative_config": obj({"method": STR, "num_speculative_tokens": POS, "source": STR}),
                            }
                        ),
                        "architecture": obj(
                            {"layers": POS, "attention": ("enum", ("mla", "full", "sliding", "hybrid"))},
                            {
                                "kv_lora_rank": POS,
                                "qk_rope_head_dim": INT,
                                "kv_heads": POS,
                                "head_dim": POS,
                                "full_attention_interval": INT,
                                "sliding_window": INT,
                                "linear_k_heads": INT,
                                "linear_v_heads": INT,
                                "linear_k_dim": INT,
                                "linear_v_dim": INT,
                                "conv_kernel": INT,
                                "state_dtype": ("enum", ("float32", "bfloat16", "float16")),
                                "drafter_layers": INT,
                                "source": STR,
                                "note": STR,
                            },
                        ),
                        "gate": obj(
                            {},
                            {"prefill_bytes_per_token": fig(SIZE), "seat_bytes": fig(SIZE)},
                        ),
                        "kv_reports": ("list", KV_REPORT),
                        "length_reports": ("list", LENGTH_REPORT),
                    },
                ),
            )
        }
    ),
    "starts": obj(
        {
            "deployments": (
                "list",
                obj(
                    {
                        "id": ID,
                        "name": STR,
                        "model": ("ref", "models"),
                        "box": ("ref", "boxes"),
                        "boxes": POS,
                        "tp": POS,
                        "settings": SETTINGS,
                        "starts": (
                            "list",
                            obj(
                                {"kv_pin": ("size",), "outcome": ("enum", ("serving", "killed", "failed"))},
                                {
                                    "generation": INT,
                                    "date": DATE,
                                    "settings": SETTINGS,
                                    "gate_row": obj({"weights": fig(SIZE), "overhead": fig(SIZE)}),
                                    "weights_loaded": fig(SIZE),
                                    "available_before": fig(SIZE),
                                    "available_after": fig(SIZE),
                                    "lowest_available": fig(SIZE),
                                    "kv_tokens": fig(COUNT, above_zero=True),
                                    "concurrency": fig(NUMBER),
                                    "init_seconds": fig(NUMBER),
                                    "decode_rate": fig(NUMBER, streams=POS),
                                    "outcome_note": STR,
                                    "source": STR,
                                    "gpu_memory_utilization": fig(FRACTION),
                                },
                            ),
                            1,
                        ),
                    },
                    {
                        "engine": STR,
                        "readings": obj({}, {"idle_available": fig(SIZE), "loaded_available": fig(SIZE)}),
                        "requests": (
                            "list",
                            obj(
                                {
                                    "date": DATE,
                                    "kv_pin": ("size",),
                                    "drafter": BOOL,
                                    "available": fig(SIZE),
                                    "outcome": ("enum", ("started", "refused")),
                                }
                            ),
                        ),
                    },
                ),
            )
        }
    ),
    "policy": obj(
        {
            "gate": obj(
                {
                    "headroom": fig(SIZE),
                    "reading_precision": fig(SIZE),
                    "calibration": obj({"prefill_budget": fig(COUNT, above_zero=True), "seats": fig(COUNT, above_zero=True)}),
                },
                {"head_box": obj({"ray_head": fig(SIZE)})},
            ),
            "guard": obj({"floor": fig(SIZE), "poll_seconds": fig(NUMBER, above_zero=True), "polls_in_a_row": fig(COUNT, above_zero=True)}),
            "vllm": obj(
                {
                    "default_gpu_memory_utilization": fig(FRACTION),
                    "earlier_default_gpu_memory_utilization": fig(FRACTION),
                    "prefetch_fraction": fig(FRACTION),
                }
            ),
        },
        {
            "prediction": obj({"held_out_median_error": fig(FRACTION), "held_out_p90_error": fig(FRACTION), "held_out_starts": fig(COUNT, above_zero=True)}),
        },
    ),
    "incidents": obj(
        {
            "incidents": (
                "list",
                obj(
                    {"id": ID, "date": DATE, "title": STR, "box": ("ref", "boxes"), "symptom": STR},
                    {
                        "engine": STR,
                        "prefill_budget": POS,
                        "available": fig(SIZE),
                        "free": fig(SIZE),
                        "served_for_weeks_available": fig(SIZE),
                        "checkpoint": fig(SIZE),
                        "min_free_kbytes": fig(SIZE),
                    },
                ),
            )
        }
    ),
    "traces": obj(
        {
            "traces": (
                "list",
                obj(
                    {
                        "id": ID,
                        "title": STR,
                        "box": ("ref", "boxes"),
                        "kind": ("enum", KINDS),
                        "source": STR,
                        "samples": ("list", obj({"t": NUM, "available": ("size",)}, {"event": STR}), 1),
                    },
                    {
                        "engine": STR,
                        "note": STR,
                        "checkpoint": fig(SIZE),
                        "kernel_init": obj({"from_t": NUM, "to_t": NUM}),
                    },
                ),
            )
        }
    ),
    "plans": obj(
        {
            "plans": (
                "list",
                obj(
                    {
                        "id": ID,
                        "title": STR,
                        "box": ("ref", "boxes"),
                        "residents": ("list", obj({"model": ("ref", "models")}, {"role": STR}), 1),
                    },
                    {"budget_stated": fig(SIZE)},
                ),
            ),
            "fraction_plans": (
                "list",
                obj({"id": ID, "box": ("ref", "boxes"), "fractions": ("list", ("fraction",), 1)}),
            ),
        }
    ),
}

FIGURE_COMMON = {
    "kind": ("enum", KINDS),
    "date": DATE,
    "generation": STR,
    "source": STR,
    "note": STR,
    "approximate": BOOL,
    "line": INT,
}
EXPECTED_UNIT = {
    SIZE: "a size with its unit, such as 79.29 GiB, 10e9 B or 128 GB",
    COUNT: "a whole number of zero or more",
    NUMBER: "a number of zero or more",
    FRACTION: "a fraction above 0 and at most 1",
}


# --- validation -----------------------------------------------------------------------------


def _scalar(unit: str, raw: Any, file: str, path: str) -> int | Fraction:
    if unit in (SIZE, "size"):
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise CatalogError(file, path, raw, EXPECTED_UNIT[SIZE])
        if isinstance(raw, int):
            raise CatalogError(file, path, raw, EXPECTED_UNIT[SIZE] + " (a bare number has no unit)")
        text = str(raw).strip()
        if text.startswith("-"):
            raise CatalogError(file, path, raw, "a size of zero or more bytes")
        if isinstance(raw, str) and not re.search(r"[A-Za-z]$", text):
            raise CatalogError(file, path, raw, EXPECTED_UNIT[SIZE] + " (a bare number has no unit)")
        try:
            return parse_size(text, path)
        except InputError as error:
            reason = str(error).partition(", expected ")[2]
            raise CatalogError(file, path, raw, EXPECTED_UNIT[SIZE] + (f": {reason}" if reason else "")) from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[unit])
    if unit == COUNT and not isinstance(raw, int):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[COUNT])
    if raw < 0 or raw != raw or raw in (float("inf"), float("-inf")) or raw > LARGEST_NUMBER:
        raise CatalogError(file, path, raw, EXPECTED_UNIT[unit])
    if unit == FRACTION and not 0 < raw <= 1:
        raise CatalogError(file, path, raw, EXPECTED_UNIT[FRACTION])
    return raw if isinstance(raw, int) else Fraction(str(raw))


def _figure(spec: tuple[Any, ...], raw: Any, file: str, path: str) -> Figure:
    _, unit, extra, above_zero = spec
    if not isinstance(raw, dict):
        raise CatalogError(file, path, raw, f"a figure: a mapping with value (or min and max) and kind, value being {EXPECTED_UNIT[unit]}")
    known = {"value", "min", "max", *FIGURE_COMMON, *extra}
    for key in raw:
        if key not in known:
            raise CatalogError(file, f"{path}.{key}", key, "one of " + ", ".join(sorted(known)))
    if "kind" not in raw:
        raise CatalogError(file, f"{path}.kind", _MISSING, "one of " + ", ".join(KINDS))
    common = {k: _check(FIGURE_COMMON[k], raw[k], file, f"{path}.{k}") for k in FIGURE_COMMON if k in raw}
    values: dict[str, Any] = {}
    if "value" in raw:
        values["value"] = _scalar(unit, raw["value"], file, f"{path}.value")
    elif "min" in raw and "max" in raw:
        values["minimum"] = _scalar(unit, raw["min"], file, f"{path}.min")
        values["maximum"] = _scalar(unit, raw["max"], file, f"{path}.max")
        if values["minimum"] > values["maximum"]:
            raise CatalogError(file, f"{path}.min", raw["min"], f"at most max ({raw['max']})")
    else:
        raise CatalogError(file, f"{path}.value", _MISSING, EXPECTED_UNIT[unit])
    if above_zero:
        for key, value in values.items():
            if value <= 0:
                name = {"value": "value", "minimum": "min", "maximum": "max"}[key]
                raise CatalogError(file, f"{path}.{name}", raw[name], "above zero: " + EXPECTED_UNIT[unit].replace("zero or more", "more than zero"))
    return Figure(
        value=values.get("value"),
        unit=unit,
        kind=common["kind"],
        entry=f"{file}: {path}",
        minimum=values.get("minimum"),
        maximum=values.get("maximum"),
        date=common.get("date"),
        generation=common.get("generation"),
        source=common.get("source"),
        note=common.get("note"),
        approximate=common.get("approximate", False),
        line=common.get("line"),
        extra={k: _check(s, raw[k], file, f"{path}.{k}") for k, s in extra.items() if k in raw},
    )


def _check(spec: tuple[Any, ...], raw: Any, file: str, path: str) -> Any:
    tag = spec[0]
    if tag == "obj":
        _, required, optional = spec
        if not isinstance(raw, dict):
            raise CatalogError(file, path, raw, "a mapping with " + ", ".join(required or optional))
        out = {}
        for key in raw:
            if key not in required and key not in optional:
                expected = "one of " + ", ".join([*required, *optional])
                raise CatalogError(file, f"{path}.{key}".lstrip("."), key, expected)
        for key, sub in required.items():
            if key not in raw:
                raise CatalogError(file, f"{path}.{key}".lstrip("."), _MISSING, _describe(sub))
        for key, sub in {**required, **optional}.items():
            if key in raw:
                out[key] = _check(sub, raw[key], file, f"{path}.{key}".lstrip("."))
        return out
    if tag == "list":
        least = spec[2] if len(spec) > 2 else 0
        if not isinstance(raw, list):
            raise CatalogError(file, path, raw, "a list")
        if len(raw) < least:
            raise CatalogError(file, path, raw, f"a list of at least {least}")
        return [_check(spec[1], item, file, f"{path}[{i}]") for i, item in enumerate(raw)]
    if tag == "fig":
        return _figure(spec, raw, file, path)
    if tag in ("size", "fraction"):
        return _scalar(tag, raw, file, path)
    if tag == "enum":
        if raw not in spec[1]:
            raise CatalogError(file, path, raw, "one of " + ", ".join(map(str, spec[1])))
        return raw
    if tag == "date":
        if isinstance(raw, datetime.date):
            return raw.isoformat()
        if isinstance(raw, str) and _is_date(raw):
            return raw
        raise CatalogError(file, path, raw, "a date written YYYY-MM-DD (or YYYY-MM), one that is on the calendar")
    if tag == "bool":
        if not isinstance(raw, bool):
            raise CatalogError(file, path, raw, "true or false")
        return raw
    if tag == "int":
        least = spec[1]
        if isinstance(raw, bool) or not isinstance(raw, int) or not least <= raw <= LARGEST_COUNT:
            raise CatalogError(file, path, raw, f"a whole number from {least} to {LARGEST_COUNT:.0e}")
        return raw
    if tag == "num":
        if isinstance(raw, str):  # PyYAML reads 27e9 (no dot) as text
            if not re.fullmatch(_NUMBER_TEXT, raw):
                raise CatalogError(file, path, raw, "a number of zero or more")
            raw = float(raw)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw <= LARGEST_NUMBER:
            raise CatalogError(file, path, raw, "a number of zero or more")
        return raw
    if tag == "str":
        if not isinstance(raw, str) or not raw.strip():  # name: 12 is a number, not a name: quote it
            raise CatalogError(file, path, raw, "text (quote a number meant as text)")
        hidden = _HIDDEN.search(raw)
        if hidden:  # a right-to-left override shows a name reversed on every page
            raise CatalogError(file, path, Found(f"the control character U+{ord(hidden[0]):04X} in the text"), "text without control or direction characters")
        return raw
    if tag == "id":
        if not isinstance(raw, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", raw):
            raise CatalogError(file, path, raw, "an id of lower-case letters, digits, dots and dashes")
        return raw
    if tag == "ref":
        if not isinstance(raw, str):
            raise CatalogError(file, path, raw, f"the id of an entry in {spec[1]}.yaml")
        return raw
    raise AssertionError(f"unknown spec tag {tag}")


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text):
        return False
    try:
        datetime.date.fromisoformat(text if len(text) == 10 else text + "-01")
    except ValueError:
        return False
    return True


def _describe(spec: tuple[Any, ...]) -> str:
    tag = spec[0]
    return {
        "obj": "a mapping",
        "list": "a list",
        "fig": "a figure (value and kind)",
        "ref": f"the id of an entry in {spec[1]}.yaml" if tag == "ref" else "",
        "enum": "one of " + ", ".join(map(str, spec[1])) if tag == "enum" else "",
        "int": f"a whole number of at least {spec[1]}" if tag == "int" else "",
        "num": "a number",
        "str": "text",
        "id": "an id",
        "date": "a date written YYYY-MM-DD",
        "bool": "true or false",
        "size": EXPECTED_UNIT[SIZE],
        "fraction": EXPECTED_UNIT[FRACTION],
    }[tag]


# --- the catalog ----------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Catalog:
    """The validated catalog: entries by id, figures as `Figure`."""

    boxes: dict[str, dict[str, Any]]
    models: dict[str, dict[str, Any]]
    deployments: dict[str, dict[str, Any]]
    policy: dict[str, Any]
    incidents: dict[str, dict[str, Any]]
    traces: dict[str, dict[str, Any]]
    plans: dict[str, dict[str, Any]]
    fraction_plans: dict[str, dict[str, Any]]

    def __repr__(self) -> str:
        """What it holds, counted: its full contents would run to hundreds of kB in a traceback
        or in a log line that prints it (the page templates' debug output does)."""
        return "Catalog(" + ", ".join(f"{len(getattr(self, f.name))} {f.name}" for f in fields(self) if f.name != "policy") + ")"


def _by_id(file: str, section: str, items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items):
        if item["id"] in out:
            raise CatalogError(file, f"{section}[{i}].id", item["id"], "an id not used before in this file")
        out[item["id"]] = item
    return out


def _trace_times(traces: list[dict[str, Any]]) -> None:
    """A trace's polls run forward in time, and its kernel-init window starts and ends on polls."""
    for i, trace in enumerate(traces):
        times = [sample["t"] for sample in trace["samples"]]
        for j in range(1, len(times)):
            if times[j] <= times[j - 1]:
                raise CatalogError("traces.yaml", f"traces[{i}].samples[{j}].t", times[j], f"a time after the poll before it ({times[j - 1]})")
        window = trace.get("kernel_init")
        if window is not None:
            for key in ("from_t", "to_t"):
                if window[key] not in times:
                    raise CatalogError(
                        "traces.yaml", f"traces[{i}].kernel_init.{key}", window[key], f"the time of one of the trace's polls ({', '.join(map(str, times))})"
                    )
            if window["to_t"] <= window["from_t"]:
                raise CatalogError("traces.yaml", f"traces[{i}].kernel_init.to_t", window["to_t"], f"a time after from_t ({window['from_t']})")


def _lengths(models: list[dict[str, Any]]) -> None:
    """A length report is fit over max_model_len: it needs readings at two different lengths."""
    for i, model in enumerate(models):
        for j, report in enumerate(model.get("length_reports", [])):
            lengths = [r["max_model_len"] for r in report["readings"]]
            if len(set(lengths)) < 2:
                raise CatalogError(
                    "models.yaml",
                    f"models[{i}].length_reports[{j}].readings",
                    Found(f"{len(lengths)} readings, all at max_model_len {lengths[0]}"),
                    "readings at two or more different max_model_len",
                )


def _refs(file: str, section: str, items: dict[str, dict[str, Any]], targets: dict[str, dict[str, dict[str, Any]]]) -> None:
    for i, item in enumerate(items.values()):
        for key, target in (("model", "models"), ("box", "boxes")):
            if key in item and item[key] not in targets[target]:
                known = ", ".join(targets[target])
                raise CatalogError(file, f"{section}[{i}].{key}", item[key], f"the id of an entry in {target}.yaml ({known})")
        for j, resident in enumerate(item.get("residents", [])):
            if resident["model"] not in targets["models"]:
                known = ", ".join(targets["models"])
                raise CatalogError(file, f"{section}[{i}].residents[{j}].model", resident["model"], f"the id of an entry in models.yaml ({known})")


def _with_context(start: dict[str, Any]) -> dict[str, Any]:
    """A start's figures carry the start's date and generation unless they say otherwise."""
    date, generation = start.get("date"), start.get("generation")
    return {
        key: replace(v, date=v.date or date, generation=v.generation or (str(generation) if generation else None))
        if isinstance(v, Figure)
        else {k: _with_context_figure(f, date, generation) for k, f in v.items()}
        if key == "gate_row"
        else v
        for key, v in start.items()
    }


def _with_context_figure(figure: Figure, date: str | None, generation: int | None) -> Figure:
    return replace(figure, date=figure.date or date, generation=figure.generation or (str(generation) if generation else None))


def build(raw: dict[str, Any]) -> Catalog:
    """Validate raw file contents ({"boxes": ..., "models": ...}) into a Catalog."""
    data = {}
    for name in FILES:
        file = f"{name}.yaml"
        if name not in raw:
            raise CatalogError(file, "(file)", _MISSING, f"catalog/{file}")
        data[name] = _check(SPEC[name], raw[name], file, "")
    _lengths(data["models"]["models"])
    boxes = _by_id("boxes.yaml", "boxes", data["boxes"]["boxes"])
    for i, box in enumerate(boxes.values()):
        if not {"total_memory", "reported_total", "spec_memory"} & box.keys():
            raise CatalogError("boxes.yaml", f"boxes[{i}].total_memory", _MISSING, "a total: total_memory, reported_total or spec_memory")
    models = _by_id("models.yaml", "models", data["models"]["models"])
    targets = {"boxes": boxes, "models": models}
    deployments = _by_id("starts.yaml", "deployments", data["starts"]["deployments"])
    for deployment in deployments.values():
        deployment["starts"] = [_with_context(start) for start in deployment["starts"]]
    incidents = _by_id("incidents.yaml", "incidents", data["incidents"]["incidents"])
    traces = _by_id("traces.yaml", "traces", data["traces"]["traces"])
    _trace_times(data["traces"]["traces"])
    plans = _by_id("plans.yaml", "plans", data["plans"]["plans"])
    fraction_plans = _by_id("plans.yaml", "fraction_plans", data["plans"]["fraction_plans"])
    for file, section, items in (
        ("starts.yaml", "deployments", deployments),
        ("incidents.yaml", "incidents", incidents),
        ("traces.yaml", "traces", traces),
        ("plans.yaml", "plans", plans),
        ("plans.yaml", "fraction_plans", fraction_plans),
    ):
        _refs(file, section, items, targets)
    return Catalog(boxes, models, deployments, data["policy"], incidents, traces, plans, fraction_plans)


# Bounds on a catalog file, checked before anything is built from it: its size, how deep its
# mappings and lists nest, and how many digits a whole number has. The shipped files are a few
# kB, nest eight deep and hold no number over 16 digits.
MAX_FILE_BYTES = 4 * 2**20
MAX_DEPTH = 32
MAX_INT_DIGITS = 20
# Control characters and the Unicode direction overrides and isolates: none belongs in a name or a source.
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")}


def _yaml_loader() -> Any:
    """PyYAML's safe loader (libyaml when present) with dates left as text, for the spec to check."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class CatalogLoader(base):  # type: ignore[misc, valid-type]
        yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"] for first, resolvers in base.yaml_implicit_resolvers.items()
        }

    return CatalogLoader


def _events_check(text: str, file: str, loader: Any) -> None:
    """Refuse aliases and deep nesting from the event stream, before any node is built: an
    alias bomb never expands, and nesting never reaches the recursive composer."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            raise CatalogError(
                file,
                _at(event.start_mark),
                f"*{event.anchor}",
                "the value written out (the catalog uses no YAML anchors or aliases)",
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise CatalogError(file, _at(event.start_mark), Found(f"nesting {depth} deep"), f"at most {MAX_DEPTH} levels of nesting")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"


def _nodes_check(node: Any, file: str, path: str = "") -> None:
    """Walk the composed nodes with their key paths: duplicate keys, tags beyond plain data and
    over-long whole numbers are errors here, named by key path, before PyYAML constructs values."""
    import yaml

    where = path or "(top)"
    if node.tag not in _PLAIN_TAGS:
        raise CatalogError(file, where, node.tag, "plain YAML data: text, numbers, true/false, lists and mappings")
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise CatalogError(file, where, Found("a mapping or list as a key"), "text keys")
            here = f"{path}.{key.value}".lstrip(".")
            if key.tag == "tag:yaml.org,2002:merge" or key.value == "<<":
                raise CatalogError(file, here, Found("a YAML merge key '<<'"), "each key written out in its mapping")
            if key.value in seen:
                raise CatalogError(
                    file, here, Found(f"the key {key.value!r} twice (lines {seen[key.value]} and {key.start_mark.line + 1})"), "each key once in a mapping"
                )
            seen[key.value] = key.start_mark.line + 1
            _nodes_check(value, file, here)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _nodes_check(item, file, f"{path}[{i}]")
    elif node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_DIGITS:
        raise CatalogError(file, where, node.value, f"a whole number of at most {MAX_INT_DIGITS} digits")


def parse_yaml(data: bytes, file: str) -> Any:
    """One catalog file's contents, read safely: bounded, UTF-8, no aliases, no duplicate keys."""
    import yaml

    if len(data) > MAX_FILE_BYTES:
        raise CatalogError(file, "(file)", Found(f"more than {MAX_FILE_BYTES:,} bytes"), f"a catalog file of at most {MAX_FILE_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CatalogError(file, f"line {line}", Found(f"byte {data[error.start]:#04x}"), "UTF-8 text") from None
    loader = _yaml_loader()
    try:
        _events_check(text, file, loader)
        node = yaml.compose(text, Loader=loader)
        if node is None:
            return None
        _nodes_check(node, file)
        try:
            return loader(text).construct_document(node)
        except (ValueError, IndexError, TypeError, OverflowError) as error:  # an explicit tag on a value it cannot hold (!!int '')
            raise CatalogError(file, "(parse)", Found(f"a value PyYAML cannot construct ({type(error).__name__})"), "plain YAML data") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"
        problem = getattr(error, "problem", None) or str(error)
        raise CatalogError(file, where, problem, "valid YAML") from None


def _read_texts(directory: Path) -> dict[str, bytes]:
    texts = {}
    for name in FILES:
        path = directory / f"{name}.yaml"
        if not path.exists():
            raise CatalogError(f"{name}.yaml", "(file)", _MISSING, f"a file at {path}")
        try:  # a regular file, read to one byte past the limit (a link to /dev/zero was read whole)
            with files.open_regular(path) as file:
                texts[name] = file.read(MAX_FILE_BYTES + 1)  # parse_yaml refuses it when larger
        except OSError as error:
            raise CatalogError(f"{name}.yaml", "(file)", Found(f"a file it cannot read ({error.strerror})"), f"a regular file at {path}") from None
    return texts


def _parse_yaml(texts: dict[str, bytes]) -> dict[str, Any]:
    """Every file parsed by parse_yaml: bounded, UTF-8, no aliases, no duplicate keys, on
    libyaml's loader where PyYAML was built with it."""
    return {name: parse_yaml(data, f"{name}.yaml") for name, data in texts.items()}


def read_yaml_dir(directory: str | Path) -> dict[str, Any]:
    """Raw contents of catalog/*.yaml, each read safely (see parse_yaml).

    What the YAML parser made of the files is kept in the directory's __pycache__ (as Python
    keeps compiled modules) with the files' bytes, this module's source and the installed
    PyYAML's time: a read of an unchanged catalog skips the parser, and any change to a file or
    to the reader parses again. The cache is marshal data (plain values only, as the parser
    gives), never a pickle: loading a cache found in a directory runs no code from it, and what
    it holds is validated as the YAML would be.
    """
    import marshal
    import os
    from importlib.util import find_spec

    directory = Path(directory)
    texts = _read_texts(directory)
    spec = find_spec("yaml")
    reader = (Path(__file__).read_bytes(), Path(spec.origin).stat().st_mtime_ns if spec and spec.origin else None)
    cache = directory / "__pycache__" / "catalog.marshal"
    try:
        if cache.stat().st_size > 8 * sum(len(t) for t in texts.values()) + 2**20:  # not one this reader wrote
            raise ValueError("too large")
        kept = marshal.loads(cache.read_bytes())
        if kept["reader"] != reader or kept["texts"] != texts or not _plain(kept["raw"]):
            raise ValueError("stale")
        raw: dict[str, Any] = kept["raw"]
        return raw
    except Exception:  # none yet, stale or unreadable: parse
        raw = _parse_yaml(texts)
    try:
        cache.parent.mkdir(exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.partial")  # this process's own: builds may run side by side
        partial.write_bytes(marshal.dumps({"reader": reader, "texts": texts, "raw": raw}))
        partial.replace(cache)
    except OSError:  # a read-only catalog is parsed every time
        pass
    return raw


def _plain(value: Any) -> bool:
    """Whether a value is plain data as the YAML parser gives it: text, numbers, true/false,
    null, lists and mappings with text keys."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float))


def load_dir(directory: str | Path) -> Catalog:
    """The catalog of a directory of YAML files, validated (every time; the parse is kept)."""
    return build(read_yaml_dir(directory))


def load_json(text: str) -> Catalog:
    """The catalog as the build emitted it for the browser (raw file contents, as JSON)."""
    try:
        raw = jsontext.loads(text, pairs=_unique_keys)
    except CatalogError:
        raise
    except jsontext.JsonError as error:
        raise CatalogError("catalog.json", "(parse)", Found(error.found[:80]), "the catalog as JSON") from None
    if not isinstance(raw, dict):
        raise CatalogError("catalog.json", "(top)", raw, "a mapping of file name to contents")
    return build(raw)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once, as in the YAML it came from."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CatalogError("catalog.json", key, Found(f"the key {key!r} twice"), "each key once in an object")
        out[key] = value
    return out


def raw_as_json(raw: dict[str, Any]) -> str:
    """Raw file contents as JSON, dates as ISO text, so the browser needs no YAML parser."""
    return json.dumps(raw, default=lambda o: o.isoformat() if isinstance(o, datetime.date) else str(o), sort_keys=True)


# --- JSON Schema ----------------------------------------------------------------------------

_SIZE_PATTERN = r"^\s*([0-9]{1,3}(,[0-9]{3})+|[0-9]+(_[0-9]+)*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*(" + "|".join(SIZE_UNITS) + r")\s*$"


def json_schema(spec: tuple[Any, ...]) -> dict[str, Any]:
    tag = spec[0]
    if tag == "obj":
        _, required, optional = spec
        props = {k: json_schema(v) for k, v in {**required, **optional}.items()}
        out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            out["required"] = list(required)
        return out
    if tag == "list":
        return {"type": "array", "items": json_schema(spec[1])} | ({"minItems": spec[2]} if len(spec) > 2 else {})
    if tag == "fig":
        _, unit, extra, above_zero = spec
        value = _value_schema(unit, above_zero)
        props = {"value": value, "min": value, "max": value}
        props.update({k: json_schema(v) for k, v in FIGURE_COMMON.items()})
        props.update({k: json_schema(v) for k, v in extra.items()})
        return {
            "type": "object",
            "properties": props,
            "required": ["kind"],
            "oneOf": [{"required": ["value"]}, {"required": ["min", "max"]}],
            "additionalProperties": False,
        }
    if tag in ("size", "fraction"):
        return _value_schema(tag)
    if tag == "enum":
        return {"enum": list(spec[1])}
    if tag == "date":
        return {"type": "string", "pattern": r"^\d{4}-\d{2}(-\d{2})?$"}
    if tag == "bool":
        return {"type": "boolean"}
    if tag == "int":
        return {"type": "integer", "minimum": spec[1], "maximum": LARGEST_COUNT}
    if tag == "num":
        return {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": _NUMBER_TEXT}]}
    if tag == "id":
        return {"type": "string", "pattern": r"^[a-z0-9][a-z0-9.\-]*$"}
    if tag == "ref":
        return {"type": "string", "description": f"the id of an entry in {spec[1]}.yaml"}
    return {"type": ["string", "number"]}


def _value_schema(unit: str, above_zero: bool = False) -> dict[str, Any]:
    least = {"exclusiveMinimum": 0} if above_zero else {"minimum": 0}
    if unit == SIZE:
        return {"type": "string", "pattern": _SIZE_PATTERN, "description": EXPECTED_UNIT[SIZE]}
    if unit == COUNT:
        return {"type": "integer", **least, "maximum": LARGEST_COUNT}
    if unit == FRACTION:
        return {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    return {"type": "number", **least, "maximum": LARGEST_NUMBER}


def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each catalog file, by file name."""
    return {
        f"{name}.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"catalog/{name}.yaml",
            **json_schema(SPEC[name]),
        }
        for name in FILES
    }
