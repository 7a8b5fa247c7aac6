"""The catalog: one spec that validates the YAML files, turns figures into exact values and
writes the JSON Schema that editors use.

Loading needs PyYAML, imported inside `load_dir` only, so the browser (which receives the
catalog as JSON) and every other module of calc/ stay standard library.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from calc.units import SIZE_UNITS, InputError, parse_size

KINDS = ("measured", "shard headers", "modeled", "published", "estimated", "remainder", "setting", "source-read")
FILES = ("boxes", "models", "starts", "policy", "incidents", "traces", "plans")


class CatalogError(ValueError):
    """A catalog entry that is not what the spec expects; the message names file and key path."""

    def __init__(self, file: str, path: str, found: Any, expected: str) -> None:
        self.file, self.path, self.found, self.expected = file, path, found, expected
        shown = "nothing" if found is _MISSING else repr(found)
        super().__init__(f"{file}: {path}: found {shown}, expected {expected}")


_MISSING = object()
_NUMBER_TEXT = r"^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"


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


def fig(unit: str, **extra: tuple) -> tuple:
    return ("fig", unit, extra)


def obj(required: dict, optional: dict | None = None) -> tuple:
    return ("obj", required, optional or {})


SIZE, COUNT, NUMBER, FRACTION = "size", "count", "number", "fraction"
STR, INT, NUM, BOOL, DATE, ID = ("str",), ("int",), ("num",), ("bool",), ("date",), ("id",)

SETTINGS = obj(
    {},
    {
        "max_model_len": INT,
        "seats": INT,
        "prefill_budget": INT,
        "kv_dtype": STR,
        "speculative_tokens": INT,
        "block_size": INT,
    },
)

KV_REPORT = obj(
    {"kv_dtype": STR},
    {
        "engine": STR,
        "label": STR,
        "tp": INT,
        "max_model_len": INT,
        "block_size": INT,
        "speculative_tokens": INT,
        "pool": fig(SIZE),
        "tokens": fig(COUNT),
        "bytes_per_token": fig(NUMBER),
    },
)

# The same pool read at two or more max_model_len: what fits the per-request model.
LENGTH_REPORT = obj(
    {"kv_dtype": STR, "pool": fig(SIZE), "readings": ("list", obj({"max_model_len": INT, "tokens": fig(COUNT)}))},
    {"engine": STR, "label": STR, "tp": INT, "block_size": INT, "speculative_tokens": INT},
)

SPEC: dict[str, tuple] = {
    "boxes": obj(
        {
            "boxes": (
                "list",
                obj(
                    {"id": ID, "name": STR, "memory": ("enum", ("unified", "discrete"))},
                    {
                        "total_memory": fig(SIZE),
                        "reported_total": fig(SIZE),
                        "spec_memory": fig(SIZE),
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
                        "weights": fig(SIZE, per_rank_at_tp=INT),
                        "drafter": obj(
                            {
                                "name": STR,
                                "weights": fig(SIZE, ranks=INT),
                                # vLLM's --speculative-config for this drafter, as its public configs write it
                                "speculative_config": obj({"method": STR, "num_speculative_tokens": INT, "source": STR}),
                            }
                        ),
                        "architecture": obj(
                            {"layers": INT, "attention": ("enum", ("mla", "full", "sliding", "hybrid"))},
                            {
                                "kv_lora_rank": INT,
                                "qk_rope_head_dim": INT,
                                "kv_heads": INT,
                                "head_dim": INT,
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
                        "boxes": INT,
                        "tp": INT,
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
                                    "kv_tokens": fig(COUNT),
                                    "concurrency": fig(NUMBER),
                                    "init_seconds": fig(NUMBER),
                                    "decode_rate": fig(NUMBER, streams=INT),
                                    "outcome_note": STR,
                                    "source": STR,
                                    "gpu_memory_utilization": fig(FRACTION),
                                },
                            ),
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
                    "calibration": obj({"prefill_budget": fig(COUNT), "seats": fig(COUNT)}),
                }
            ),
            "guard": obj({"floor": fig(SIZE), "poll_seconds": fig(NUMBER), "polls_in_a_row": fig(COUNT)}),
            "vllm": obj(
                {
                    "default_gpu_memory_utilization": fig(FRACTION),
                    "earlier_default_gpu_memory_utilization": fig(FRACTION),
                    "prefetch_fraction": fig(FRACTION),
                }
            ),
        }
    ),
    "incidents": obj(
        {
            "incidents": (
                "list",
                obj(
                    {"id": ID, "date": DATE, "title": STR, "box": ("ref", "boxes"), "symptom": STR},
                    {
                        "engine": STR,
                        "prefill_budget": INT,
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
                        "samples": ("list", obj({"t": NUM, "available": ("size",)}, {"event": STR})),
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
                        "residents": ("list", obj({"model": ("ref", "models")}, {"role": STR})),
                    },
                    {"budget_stated": fig(SIZE)},
                ),
            ),
            "fraction_plans": (
                "list",
                obj({"id": ID, "box": ("ref", "boxes"), "fractions": ("list", ("fraction",))}),
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
        except InputError:
            raise CatalogError(file, path, raw, EXPECTED_UNIT[SIZE]) from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[unit])
    if unit == COUNT and not isinstance(raw, int):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[COUNT])
    if raw < 0 or raw != raw or raw in (float("inf"), float("-inf")):
        raise CatalogError(file, path, raw, EXPECTED_UNIT[unit])
    if unit == FRACTION and not 0 < raw <= 1:
        raise CatalogError(file, path, raw, EXPECTED_UNIT[FRACTION])
    return raw if isinstance(raw, int) else Fraction(str(raw))


def _figure(spec: tuple, raw: Any, file: str, path: str) -> Figure:
    _, unit, extra = spec
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


def _check(spec: tuple, raw: Any, file: str, path: str) -> Any:
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
        if not isinstance(raw, list):
            raise CatalogError(file, path, raw, "a list")
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
        if isinstance(raw, str) and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", raw):
            return raw
        raise CatalogError(file, path, raw, "a date written YYYY-MM-DD (or YYYY-MM)")
    if tag == "bool":
        if not isinstance(raw, bool):
            raise CatalogError(file, path, raw, "true or false")
        return raw
    if tag == "int":
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise CatalogError(file, path, raw, "a whole number of zero or more")
        return raw
    if tag == "num":
        if isinstance(raw, str):  # PyYAML reads 27e9 (no dot) as text
            if not re.fullmatch(_NUMBER_TEXT, raw):
                raise CatalogError(file, path, raw, "a number of zero or more")
            raw = float(raw)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw < float("inf"):
            raise CatalogError(file, path, raw, "a number of zero or more")
        return raw
    if tag == "str":
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return str(raw)
        if not isinstance(raw, str) or not raw.strip():
            raise CatalogError(file, path, raw, "text")
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


def _describe(spec: tuple) -> str:
    tag = spec[0]
    return {
        "obj": "a mapping",
        "list": "a list",
        "fig": "a figure (value and kind)",
        "ref": f"the id of an entry in {spec[1]}.yaml" if tag == "ref" else "",
        "enum": "one of " + ", ".join(map(str, spec[1])) if tag == "enum" else "",
        "int": "a whole number",
        "num": "a number",
        "str": "text",
        "id": "an id",
        "date": "a date written YYYY-MM-DD",
        "bool": "true or false",
        "size": EXPECTED_UNIT[SIZE],
        "fraction": EXPECTED_UNIT[FRACTION],
    }[tag]


# --- the catalog ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """The validated catalog: entries by id, figures as `Figure`."""

    boxes: dict[str, dict]
    models: dict[str, dict]
    deployments: dict[str, dict]
    policy: dict
    incidents: dict[str, dict]
    traces: dict[str, dict]
    plans: dict[str, dict]
    fraction_plans: dict[str, dict]


def _by_id(file: str, section: str, items: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for i, item in enumerate(items):
        if item["id"] in out:
            raise CatalogError(file, f"{section}[{i}].id", item["id"], "an id not used before in this file")
        out[item["id"]] = item
    return out


def _refs(file: str, section: str, items: dict[str, dict], targets: dict[str, dict[str, dict]]) -> None:
    for i, item in enumerate(items.values()):
        for key, target in (("model", "models"), ("box", "boxes")):
            if key in item and item[key] not in targets[target]:
                known = ", ".join(targets[target])
                raise CatalogError(file, f"{section}[{i}].{key}", item[key], f"the id of an entry in {target}.yaml ({known})")
        for j, resident in enumerate(item.get("residents", [])):
            if resident["model"] not in targets["models"]:
                known = ", ".join(targets["models"])
                raise CatalogError(file, f"{section}[{i}].residents[{j}].model", resident["model"], f"the id of an entry in models.yaml ({known})")


def _with_context(start: dict) -> dict:
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


def read_yaml_dir(directory: str | Path) -> dict[str, Any]:
    """Raw contents of catalog/*.yaml, read with PyYAML's safe loader."""
    return _parse_yaml(_read_texts(Path(directory)))


def _read_texts(directory: Path) -> dict[str, bytes]:
    texts = {}
    for name in FILES:
        path = directory / f"{name}.yaml"
        if not path.exists():
            raise CatalogError(f"{name}.yaml", "(file)", _MISSING, f"a file at {path}")
        texts[name] = path.read_bytes()
    return texts


def _parse_yaml(texts: dict[str, bytes]) -> dict[str, Any]:
    """libyaml's safe loader where PyYAML was built with it (the same documents, parsed ten times
    faster than by the pure-Python loader), else the pure-Python one."""
    import yaml  # only the build and the command line read YAML; the browser gets JSON

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw: dict[str, Any] = {}
    for name, text in texts.items():
        try:
            raw[name] = yaml.load(text.decode("utf-8"), Loader=loader)  # noqa: S506 (a safe loader)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"
            problem = getattr(error, "problem", None) or str(error)
            raise CatalogError(f"{name}.yaml", where, problem, "valid YAML") from None
    return raw


def load_dir(directory: str | Path) -> Catalog:
    """The catalog of a directory of YAML files, validated.

    What the YAML parser made of the files is kept in the directory's __pycache__ (as Python
    keeps compiled modules) with the files' bytes, this module's source and the installed
    PyYAML's time: a command run again on an unchanged catalog skips the parser, and any change
    to a file or to the reader parses again. Validation runs every time.
    """
    import pickle
    from importlib.util import find_spec

    directory = Path(directory)
    texts = _read_texts(directory)
    spec = find_spec("yaml")
    reader = (Path(__file__).read_bytes(), Path(spec.origin).stat().st_mtime_ns if spec and spec.origin else None)
    cache = directory / "__pycache__" / "catalog.pickle"
    try:
        kept = pickle.loads(cache.read_bytes())
        if kept["reader"] != reader or kept["texts"] != texts:
            raise ValueError("stale")
        raw = kept["raw"]
    except Exception:  # none yet, stale or unreadable: parse
        raw = _parse_yaml(texts)
        try:
            cache.parent.mkdir(exist_ok=True)
            partial = cache.with_suffix(".partial")
            partial.write_bytes(pickle.dumps({"reader": reader, "texts": texts, "raw": raw}))
            partial.replace(cache)
        except OSError:  # a read-only catalog is parsed every time
            pass
    return build(raw)


def load_json(text: str) -> Catalog:
    """The catalog as the build emitted it for the browser (raw file contents, as JSON)."""
    return build(json.loads(text))


def raw_as_json(raw: dict[str, Any]) -> str:
    """Raw file contents as JSON, dates as ISO text, so the browser needs no YAML parser."""
    return json.dumps(raw, default=lambda o: o.isoformat() if isinstance(o, datetime.date) else str(o), sort_keys=True)


# --- JSON Schema ----------------------------------------------------------------------------

_SIZE_PATTERN = r"^\s*[0-9][0-9_,]*(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*(" + "|".join(SIZE_UNITS) + r")\s*$"


def json_schema(spec: tuple) -> dict:
    tag = spec[0]
    if tag == "obj":
        _, required, optional = spec
        props = {k: json_schema(v) for k, v in {**required, **optional}.items()}
        out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            out["required"] = list(required)
        return out
    if tag == "list":
        return {"type": "array", "items": json_schema(spec[1])}
    if tag == "fig":
        _, unit, extra = spec
        value = _value_schema(unit)
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
        return {"type": "integer", "minimum": 0}
    if tag == "num":
        return {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": _NUMBER_TEXT}]}
    if tag == "id":
        return {"type": "string", "pattern": r"^[a-z0-9][a-z0-9.\-]*$"}
    if tag == "ref":
        return {"type": "string", "description": f"the id of an entry in {spec[1]}.yaml"}
    return {"type": ["string", "number"]}


def _value_schema(unit: str) -> dict:
    if unit == SIZE:
        return {"type": "string", "pattern": _SIZE_PATTERN, "description": EXPECTED_UNIT[SIZE]}
    if unit == COUNT:
        return {"type": "integer", "minimum": 0}
    if unit == FRACTION:
        return {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    return {"type": "number", "minimum": 0}


def schemas() -> dict[str, dict]:
    """The JSON Schema of each catalog file, by file name."""
    return {
        f"{name}.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"catalog/{name}.yaml",
            **json_schema(SPEC[name]),
        }
        for name in FILES
    }
