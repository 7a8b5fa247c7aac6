"""Read a vLLM or SGLang startup log, as people paste it, into the figures a start printed.

Standard library only: the browser runs this package through Pyodide.

The package: figures.py (what a figure is, numbers as printed, the units of each engine),
peel.py (a line's prefixes), shapes.py (the line shapes, one entry each), reader.py (the stream),
conclude/ (from what was seen to the reading). This module is what callers import.

`read_log(text)` (or `read_lines(lines)`, which streams) returns a `LogReading`: each figure is
a `Found` that keeps the line it came from and, for a figure printed with decimals, the
interval the printing leaves open ("7.71 GiB" is 7.705 to 7.715 GiB). Lines are read one at a
time; prefixes of every kind (process, Ray, docker compose, timestamps, logfmt, JSON, ANSI
colour) are peeled off first, and a line folded by a terminal or re-wrapped in a quote is read
joined to the few lines that follow it.

What callers use: `read_log(text)` / `read_lines(lines)` -> `LogReading` (raises `InputError`,
one line, on what is not a startup log); its figures are `Found(value, line_no, line_text)`
with `printed`, `low`/`high` (the printing's interval) and `derived` (worked out, not printed:
kept out of `to_json`), or `None`; `bytes_per_token` is a `Derived(value, low, high, how,
lines)`, per rank. `LogReading.to_json()` gives the keys of JSON_KEYS plus `lines` and `unreadable`;
`missing` and `notes` say what the log lacks and what was worked out. `with_pin(reading, pin,
said)` adds a pin the log does not print. Sizes are whole bytes; per-rank figures that ranks
print differently are read at their smallest (what vLLM sizes the pool by), weights at their
largest, each with a note.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

from calc.logs.conclude import with_pin
from calc.logs.figures import JSON_KEYS, Derived, Found, LogReading, human_readable_int
from calc.logs.reader import Reader
from calc.logs.shapes import ANCHORS
from calc.logs.shapes import SHAPES as RULES
from calc.units import InputError

__all__ = ["ANCHORS", "JSON_KEYS", "RULES", "Derived", "Found", "InputError", "LogReading", "human_readable_int", "read_lines", "read_log", "with_pin"]


def read_lines(lines: Iterable[str]) -> LogReading:
    """Read a startup log line by line (a file object streams)."""
    reader = Reader()
    no = 0
    for no, raw in enumerate(lines, 1):
        reader.feed(no, raw)
    if not reader.nonblank:
        raise InputError("found no text, expected a vLLM or SGLang startup log")
    return reader.finish()


def read_log(text: str) -> LogReading:
    """Read a startup log given as one text."""
    if not isinstance(text, str):
        raise InputError(f"found {type(text).__name__}, expected the text of a startup log")
    if not text.strip():
        raise InputError("found no text, expected a vLLM or SGLang startup log")
    return read_lines(io.StringIO(text))
