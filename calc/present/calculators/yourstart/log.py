"""A pasted log read for Your start: its reading and its answer (the same `python -m calc ingest`
gives), and each figure as a given that names its line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calc.answers.yourstart import Given
from calc.logs.figures import LogReading
from calc.present.calculators.yourstart.fields import LINE_TEXT

if TYPE_CHECKING:  # imported where it runs: the log's answer is read only when a log is pasted
    from calc.answers.logverdict import LogAnswer


def quoted_line(kind: str, line_no: int, text: str) -> str:
    text = " ".join(text.split())
    return f"{kind} line {line_no}: {text[:LINE_TEXT]}{'…' if len(text) > LINE_TEXT else ''}"


def read_log(text: str) -> Any:
    from calc.logs import logread  # the log reader; standard library, so the browser runs it too

    return logread.read_log(text)


def read_log_answered(text: str) -> tuple[LogReading | None, LogAnswer | None]:
    """The reading and the log's own answer (verdict, failed phase, fixes, whole command): the
    same function `python -m calc ingest` answers with."""
    from calc.answers import logverdict

    if not isinstance(text, str) or not text.strip():
        return read_log(text), None
    return logverdict.answer_text(text)


def from_log(reading: LogReading | None, name: str) -> Given | None:
    """A figure the log reader found (with its line) or derived (with how), as a Given."""
    found = getattr(reading, name, None) if reading is not None else None
    if found is None or found.value is None:
        return None
    if not hasattr(found, "line_text"):  # derived from several lines
        return Given(found.value, f"from the log: {found.how}")
    half = getattr(found, "half", 0)
    bounds = {"low": found.low, "high": found.high} if half and isinstance(found.value, int) else {}
    return Given(found.value, quoted_line("log", found.line_no, found.line_text), **bounds)
