"""The one reader of JSON typed, pasted or read from a file: config.json, a safetensors index, a
JSON log line, the page's requests. Bounded before it parses: nesting (json.loads recurses once a
level; under Pyodide a deep enough text overflows the browser's stack and kills the interpreter,
which no except clause catches), whole numbers' digits (Python refuses over 4,300 with a
ValueError of its own), each key once in an object (the catalog's rule), a UTF-8 byte-order mark
skipped as the editors that write it mean it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeAlias

# A JSON value as the layers hand it on (`--json`, the page's requests and answers): no `Any`.
Json: TypeAlias = bool | int | float | str | None | list["Json"] | dict[str, "Json"]
JsonObject: TypeAlias = dict[str, Json]

MAX_DEPTH = 64  # a config.json nests 3 or 4 deep; the catalog as JSON 12 or so
MAX_DIGITS = 40  # no field of a config, an index or the catalog needs more digits than this

_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')
_BRACKET = re.compile(r"[\[\]{}]")


class JsonError(ValueError):
    """Text that is not JSON this project reads: what was found and what was expected."""

    def __init__(self, found: str, expected: str) -> None:
        super().__init__(f"found {found}, expected {expected}")
        self.found, self.expected = found, expected


def depth(text: str) -> int:
    """How deep the text's arrays and objects nest, its strings skipped (one pass, no parse)."""
    deepest = level = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def _whole(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise JsonError(f"a whole number of {len(text.lstrip('-'))} digits", f"at most {MAX_DIGITS} digits")
    return int(text)


def _decimal(text: str) -> float:
    if len(text) > 2 * MAX_DIGITS:
        raise JsonError(f"a number written with {len(text)} characters", f"at most {2 * MAX_DIGITS}")
    return float(text)


def _once(pairs: list[tuple[str, Json]]) -> JsonObject:
    out: JsonObject = {}
    for key, value in pairs:
        if key in out:
            raise JsonError(f"the key {key[:40]!r} twice in one object", "each key once")
        out[key] = value
    return out


def loads(text: str, max_depth: int = MAX_DEPTH, pairs: Callable[[list[tuple[str, Any]]], Any] = _once) -> Any:
    """The data of a JSON text, or JsonError saying what was found and what was expected."""
    text = text.removeprefix("\ufeff")
    deep = depth(text)
    if deep > max_depth:
        raise JsonError(f"arrays or objects nested {deep} deep", f"at most {max_depth} levels")
    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=_whole, parse_float=_decimal)
    except JsonError:
        raise
    except json.JSONDecodeError as error:
        raise JsonError(f"text that is not JSON at line {error.lineno} column {error.colno} ({error.msg})", "JSON") from None
    except (ValueError, RecursionError) as error:  # what the checks above leave: say so, never a traceback
        if type(error) not in (ValueError, RecursionError):  # a hook's own error (the catalog's) speaks for itself
            raise
        raise JsonError(f"text that is not JSON this can read ({type(error).__name__})", "JSON") from None
