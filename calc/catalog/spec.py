"""The catalog's spec: one description of each YAML file that validates it and turns its
figures into exact values (`Figure`); the JSON Schema editors use is written from it
(calc/catalog/schema.py). Standard library only."""

from __future__ import annotations

import re
import sys
from fractions import Fraction
from typing import Any, TypeAlias

from calc.record import field, record
from calc.units import LARGEST_COUNT, InputError, parse_size

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
# Control characters and the Unicode direction overrides and isolates: none belongs in a name or a source.
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@record
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
    extra: dict[str, int] = field(default_factory=dict)  # the spec's extras are counts: ranks, streams, a TP size

    # `value` is the union of what the units give: bytes and counts are whole numbers, numbers
    # whole or exact fractions, fractions always `Fraction`, a range None. The reader says which
    # it reads, and a figure that is not that is refused by its entry, never used as another.

    @property
    def size(self) -> int:
        """A size figure's value in bytes; a range or a figure of another unit has none."""
        if not isinstance(self.value, int):
            raise InputError(f"{self.entry}: found {self.value!r}, expected a size in bytes")
        return self.value

    @property
    def sizes(self) -> tuple[int, ...]:
        """A size figure's bytes: its value, or a range's two ends (a pool read as ~24-25 GiB)."""
        ends = (self.value,) if self.value is not None else (self.minimum, self.maximum)
        if not all(isinstance(end, int) for end in ends):
            raise InputError(f"{self.entry}: found {ends!r}, expected a size in bytes")
        return tuple(end for end in ends if isinstance(end, int))

    @property
    def count(self) -> int:
        """A count figure's value (tokens, seats, polls): a whole number."""
        if not isinstance(self.value, int):
            raise InputError(f"{self.entry}: found {self.value!r}, expected a whole number")
        return self.value

    @property
    def number(self) -> int | Fraction:
        """The exact value of a figure of any unit; a range has none."""
        if self.value is None:
            raise InputError(f"{self.entry}: found a range ({self.minimum} to {self.maximum}), expected one value")
        return self.value

    @property
    def fraction(self) -> Fraction:
        """A fraction figure's value (gpu_memory_utilization, a share): above 0, at most 1."""
        if not isinstance(self.value, Fraction):
            raise InputError(f"{self.entry}: found {self.value!r}, expected a fraction")
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
Spec: TypeAlias = tuple[Any, ...]  # a node of the spec tree below: its tag, then what the tag takes

# A spec is a small tuple tree: ("obj", required, optional), ("list", item), ("fig", unit,
# extra), ("ref", section), ("enum", values), ("id",), ("str",), ("int",), ("num",),
# ("bool",), ("date",).


def fig(unit: str, above_zero: bool = False, **extra: Spec) -> Spec:
    """A figure; `above_zero` where zero would be a division by zero or a nonsense reading."""
    return ("fig", unit, extra, above_zero)


def obj(required: dict[str, Spec], optional: dict[str, Spec] | None = None) -> Spec:
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

SPEC: dict[str, Spec] = {
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
                        "in_use_at_start": fig(SIZE, above_zero=True),
                        "serving": obj({"kv_pin": fig(SIZE), "gpu_memory_utilization": fig(FRACTION)}),
                        # the names torch.cuda.get_device_name() gives the card, which vLLM and nvidia-smi print
                        "device_names": obj({"names": ("list", STR), "source": STR}),
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
            return parse_size(text, path, canonical=True)
        except InputError as error:
            reason = str(error).partition(", expected ")[2]
            raise CatalogError(file, path, raw, EXPECTED_UNIT[SIZE] + (f": {reason}" if reason else "")) from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[unit])
    if unit == COUNT and not isinstance(raw, int):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[COUNT])
    if raw < 0 or raw != raw or raw in (float("inf"), float("-inf")) or raw > LARGEST_NUMBER:
        raise CatalogError(file, path, raw, EXPECTED_UNIT[unit])
    if unit == FRACTION:
        if not 0 < raw <= 1:
            raise CatalogError(file, path, raw, EXPECTED_UNIT[FRACTION])
        return Fraction(str(raw))  # a fraction is a Fraction even when written 1
    return raw if isinstance(raw, int) else Fraction(str(raw))


def _figure(spec: Spec, raw: Any, file: str, path: str) -> Figure:
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
    values: dict[str, int | Fraction] = {}
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


def _check(spec: Spec, raw: Any, file: str, path: str) -> Any:
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
        dates = sys.modules.get("datetime")  # a date object is made by datetime, imported by then
        if dates is not None and isinstance(raw, dates.date):
            return str(raw.isoformat())
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


_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(text: str) -> bool:
    """YYYY-MM-DD or YYYY-MM, ASCII digits, a day on the calendar: what datetime.date.fromisoformat
    takes, checked without importing datetime (the command line starts without it)."""
    if not text.isascii() or not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text):
        return False
    year, month, day = int(text[:4]), int(text[5:7]), int(text[8:]) if len(text) == 10 else 1
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return year >= 1 and 1 <= month <= 12 and 1 <= day <= _DAYS[month - 1] + (month == 2 and leap)


def _describe(spec: Spec) -> str:
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
