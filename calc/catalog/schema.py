"""The JSON Schema of each catalog file, written from the same spec that validates it (editors
check the YAML with it: catalog/schema/)."""

from __future__ import annotations

from typing import Any

from calc.catalog.spec import _NUMBER_TEXT, COUNT, EXPECTED_UNIT, FIGURE_COMMON, FILES, FRACTION, LARGEST_NUMBER, SIZE, SPEC
from calc.jsontext import JsonObject
from calc.units import LARGEST_COUNT, SIZE_UNITS

_SIZE_PATTERN = r"^\s*([0-9]{1,3}(,[0-9]{3})+|[0-9]+(_[0-9]+)*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*(" + "|".join(SIZE_UNITS) + r")\s*$"


def json_schema(spec: tuple[Any, ...]) -> JsonObject:
    tag = spec[0]
    if tag == "obj":
        _, required, optional = spec
        props: JsonObject = {k: json_schema(v) for k, v in {**required, **optional}.items()}
        out: JsonObject = {"type": "object", "properties": props, "additionalProperties": False}
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


def _value_schema(unit: str, above_zero: bool = False) -> JsonObject:
    least = {"exclusiveMinimum": 0} if above_zero else {"minimum": 0}
    if unit == SIZE:
        return {"type": "string", "pattern": _SIZE_PATTERN, "description": EXPECTED_UNIT[SIZE]}
    if unit == COUNT:
        return {"type": "integer", **least, "maximum": LARGEST_COUNT}
    if unit == FRACTION:
        return {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    return {"type": "number", **least, "maximum": LARGEST_NUMBER}


def schemas() -> dict[str, JsonObject]:
    """The JSON Schema of each catalog file, by file name."""
    return {
        f"{name}.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"catalog/{name}.yaml",
            **json_schema(SPEC[name]),
        }
        for name in FILES
    }
