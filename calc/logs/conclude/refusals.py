"""What is refused before anything is concluded (a YAML file, a command line alone, a config.json,
two starts in one log), and the figures that are not read, each with its line."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from calc.logs.figures import Found
from calc.logs.shapes import SAID_UNREAD
from calc.units import InputError

if TYPE_CHECKING:
    from calc.logs.reader import Reader


def _free_within_total(r: Reader) -> None:
    """Free memory above the total it was printed beside (`Free memory on device (90.0/80.0 GiB)`):
    neither figure of that line is read."""
    totals = {found.line_no: found for _, found, _ in r.seen.get("total", [])}
    for _, free, _ in list(r.seen.get("free", [])):
        total = totals.get(free.line_no)
        if total is not None and free.value > total.value:
            r.unreadable.append((free.line_no, f"free memory {free.printed} above the total {total.printed}"))
            for name, found in (("free", free), ("total", total)):
                r.seen[name] = [e for e in r.seen[name] if e[1] is not found]
                if not r.seen[name]:
                    del r.seen[name]


def _model_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rstrip("/").rsplit("/", 1)[-1].lower())


def _conflict(reader: Reader, name: str, what: str) -> None:
    entries = reader.seen.get(name) or []
    values: dict[Any, Found] = {}
    for v, f, _ in entries:  # a model named by its path in one line and by its id in another is one model
        values.setdefault(_model_key(v) if name == "model" else v, f)
    if len(values) > 1:
        a, b = sorted(values.values(), key=lambda f: f.line_no)[:2]
        shown = [repr(f.value) if isinstance(f.value, str) else f.printed or f.value for f in (a, b)]
        raise InputError(
            f"found two starts in one log: {what} {shown[0]} at line {a.line_no} and {shown[1]} at line {b.line_no}; "
            "expected the lines of one start (split the log and read each part)"
        )


def refuse_what_is_no_log(r: Reader) -> None:
    """A YAML file, a command line alone, figures no engine prints, a config.json, or nothing a start prints."""
    if r.text_lines >= 10 and r.yaml_lines * 10 >= r.text_lines * 6:
        raise InputError(
            f"found a YAML file ({r.yaml_lines} of its {r.text_lines} lines are 'key: value'), not a startup log; expected the lines vLLM or "
            "SGLang prints as it starts (log lines quoted in a YAML file are not one start)"
        )
    if r.seen and not r.engine_lines:
        raise InputError(
            f"found a command line or an argument list in {r.lines_read} lines but none of the lines a start prints "
            "(such as 'GPU KV cache size', 'Model loading took', 'KV Cache is allocated'); expected a startup log"
        )
    if not r.seen and r.unreadable:
        no, what = r.unreadable[0]
        raise InputError(f"found only figures no engine prints (line {no}: {what}), expected a startup log's figures as vLLM or SGLang print them")
    if not r.seen and r.oversized:
        raise InputError(f"found only figures of more than 32 digits (line {r.oversized[0]}), expected a startup log's figures as vLLM or SGLang print them")
    if not r.seen and r.config_line is not None:
        no, text = r.config_line
        raise InputError(
            f"found a model's config.json (line {no}: {text!r}), not a startup log; expected the lines vLLM or SGLang prints as it "
            "starts (a config is read by `python -m calc model CONFIG`)"
        )
    if not r.seen:
        raise InputError(
            f"found none of the lines a vLLM or SGLang start prints in {r.lines_read} lines "
            "(such as 'GPU KV cache size', 'Model loading took', 'KV Cache is allocated'); expected a startup log"
        )


def cut_last_line(r: Reader) -> int | None:
    """The log's last line where it ends mid-line with a figure's words: what it lacks was cut
    off with the paste, not printed in a form no engine prints."""
    return r.last_partial[0] if r.last_partial is not None and r.last_partial[0] == r.lines_read else None


def unreadable_notes(r: Reader) -> list[str]:
    """The figures that are not read, each with its line: oversized, free above its total, a line's words without its figure."""
    notes: list[str] = []
    if r.oversized:
        notes.append(f"line {r.oversized[0]} holds a figure of more than 32 digits, not one an engine prints: it is not read")
    _free_within_total(r)
    cut = cut_last_line(r)
    for figure in SAID_UNREAD:  # a shape that says its unread figure is named for the figure it gives
        if figure in r.unread and figure not in r.seen and r.unread[figure][0] != cut:  # a cut figure is said as cut
            no, said = r.unread[figure]
            r.unreadable.append((no, f"{said!r}: its figure could not be read"))
    notes.extend(f"unreadable, line {no}: {what}; not one an engine prints, so it is not read" for no, what in r.unreadable)
    return notes


def superseded_lengths(entries: list[tuple[Any, Found, str | None]], changed: list[tuple[Any, Found, str | None]]) -> list[tuple[Any, Found, str | None]]:
    """The max_model_len readings less those vLLM later says it changed. 'Using max model len N'
    is printed as ModelConfig verifies the length, and the length can be set again in the same
    start: a model's config rule warns 'Changing max_model_len from 8192 to 2048' (vLLM 0.13's
    NomicBertModelConfig, vllm/model_executor/models/config.py), and --max-model-len auto says
    'Auto-fit max_model_len: reduced from 10485760 to 324640' after the profile. A length read
    before the line that says it was changed from it is that start's earlier value, not a second start."""
    return [e for e in entries if not any(c[0] == e[0] and c[1].line_no >= e[1].line_no for c in changed)]


def refuse_two_starts(r: Reader) -> None:
    """Two models, lengths, fractions or TP sizes, or a vLLM line beside an SGLang one: two starts."""
    if "max_model_len" in r.seen and "max_len_from" in r.seen:
        r.seen["max_model_len"] = superseded_lengths(r.seen["max_model_len"], r.seen["max_len_from"])
    _conflict(r, "model", "model")
    _conflict(r, "max_model_len", "max_model_len")
    _conflict(r, "fraction", "gpu_memory_utilization")
    _conflict(r, "tp", "tensor_parallel_size")
    vllm_at = min((r.era_lines[e] for e in ("v0", "v1", "v?") if e in r.era_lines), default=None)
    if vllm_at is not None and "sglang" in r.era_lines:
        raise InputError(
            f"found two starts in one log: a vLLM line at line {vllm_at} and an SGLang line at line {r.era_lines['sglang']}; "
            "expected the lines of one start (split the log and read each part)"
        )
