"""From what the reader saw to the reading: a figure printed differently by ranks or repeats is
read at its smallest (what vLLM sizes the pool by) or its largest (the weights), each with a note;
the pool, the token count and the bytes per token are worked out with the printing's rounding;
what the log lacks is said (`missing`), and so is what was worked out rather than printed (`notes`).

The parts, each a module of this package: `picks` (a figure printed by several ranks or repeats, and
the tables of figures read as printed), `refusals` (what is no log, two starts, unreadable figures),
`parallel` (the engine and how the model is split), `settings` (the KV dtype, speculation),
`pool` (the pool, its tokens, blocks and block size), `failure` (the check that refused the start),
`per_token` (the bytes a token costs) and `missing` (what the log lacks).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from calc.logs.conclude.failure import oom_and_padding, refused_by
from calc.logs.conclude.missing import say_missing
from calc.logs.conclude.parallel import engine_and_era, parallel
from calc.logs.conclude.per_token import bytes_per_token, one_request_fits
from calc.logs.conclude.picks import CONCLUDED_ELSEWHERE, LENGTH, MEMORY, SETTINGS, Pick, picked
from calc.logs.conclude.pool import block_worked_out, estimated_length, kv_pool, loading, pool_counts, total_from_graphs
from calc.logs.conclude.refusals import cut_last_line, refuse_two_starts, refuse_what_is_no_log, unreadable_notes
from calc.logs.conclude.settings import kv_dtype, speculation
from calc.logs.figures import Found, LogReading

if TYPE_CHECKING:
    from calc.logs.reader import Reader

__all__ = ["CONCLUDED_ELSEWHERE", "LENGTH", "MEMORY", "SETTINGS", "Pick", "conclude", "with_pin"]


def _date(r: Reader, notes: list[str]) -> Found | None:
    """The earliest timestamp's day, where the timestamps carry a year."""
    if r.dates:
        day, no = min(r.dates)
        return Found(day, no, f"timestamp {day}")
    if r.month_days:
        notes.append(f"the timestamps carry month and day ({', '.join(sorted(r.month_days)[:3])}) but no year: the log's date is not known")
    return None


def conclude(r: Reader) -> LogReading:
    """The reading of what the reader saw: each figure or group concluded by its function or its
    table's `Pick`, in the order their notes are said."""
    refuse_what_is_no_log(r)
    notes = unreadable_notes(r)
    refuse_two_starts(r)
    got = engine_and_era(r)
    engine, era = got["engine"], got["era"]
    assert engine is not None  # the engine is always concluded
    sglang = engine.value == "sglang"
    got |= parallel(r, sglang, notes)
    got |= picked(r, LENGTH, notes)
    got["kv_cache_dtype"] = kv_dtype(r, not sglang, notes)
    got |= picked(r, SETTINGS, notes)
    got["model_loading_bytes"] = loading(r, notes)
    got |= pool_counts(r, sglang, got["max_model_len"], got["block_size"], notes)
    got |= kv_pool(r, sglang, got["kv_cache_memory_bytes"], got["kv_tokens"], notes)
    got["error"] = refused_by(r, got["available_kv_bytes"], got["gpu_blocks"], notes)
    got |= estimated_length(r, got["kv_tokens"], notes)
    got["block_size"] = block_worked_out(got, notes)
    got |= speculation(r)
    got["date"] = _date(r, notes)
    got |= picked(r, MEMORY, notes)
    got["total_from_graphs"] = total_from_graphs(r, got["total_memory_bytes"], got["requested_memory_bytes"], notes)
    got["padding_layers"] = oom_and_padding(r, notes)

    pin, available, tokens, max_len, concurrency = (
        got[k] for k in ("kv_cache_memory_bytes", "available_kv_bytes", "kv_tokens", "max_model_len", "max_concurrency")
    )
    per_token = bytes_per_token(pin, available, tokens, got["gpu_blocks"], got["block_size"], got["dcp_size"], got["kv_needed_bytes"], max_len,
                                 concurrency, notes, got["engine_version"])  # fmt: skip
    if not sglang and got["error"] is None and concurrency is None:
        per_token = one_request_fits(per_token, pin or available, tokens, max_len, notes)
    missing: list[str] = []
    pool_unread = r.unread.get("available") or next(((no, what) for no, what in r.unreadable if what.startswith("KV pool ")), None)
    if pool_unread is not None and pool_unread[0] == cut_last_line(r):
        pool_unread = (pool_unread[0], "")  # its figure was cut off with the paste, not printed in a form no engine prints
    say_missing(missing, engine.value, era.value if era is not None else None, got["model_loading_bytes"], available, pin, tokens, got["gpu_blocks"],
             got["block_size"], max_len, concurrency, got["gpu_memory_utilization"], got["mem_fraction_static"], got["tensor_parallel_size"],
             per_token, pool_unread, got["engine_version"], got["error"])  # fmt: skip
    if r.last_partial is not None and r.last_partial[0] == r.lines_read:
        no, text = r.last_partial
        notes.append(f"line {no} ends mid-line ({text[-60:]!r}): the log is cut short there, and a figure cut off with it is not read")
        missing.append(f"the figure of line {no}, cut off")
    if not sglang and era is not None and era.value == "v1" and got["model_loading_bytes"] is not None and got["drafter_loaded"] is not None:
        notes.append(
            f"'Model loading took' (line {got['model_loading_bytes'].line_no}) includes the drafter's weights: V1 loads the drafter inside the same measured step"
        )
    return LogReading(**got, bytes_per_token=per_token, missing=missing, notes=notes)


def with_pin(reading: LogReading, pin: int, said: str) -> LogReading:
    """The reading with a pin the log does not print (typed, or from the command that started
    it): the pool is then exact, and the bytes per token follow from it."""
    found = Found(pin, 0, said, f"{pin:,} B")
    notes = [n for n in reading.notes]
    per_token = bytes_per_token(
        found, reading.available_kv_bytes, reading.kv_tokens, reading.gpu_blocks, reading.block_size, reading.dcp_size,
        reading.kv_needed_bytes, reading.max_model_len, reading.max_concurrency, notes, reading.engine_version,
    )  # fmt: skip
    if (reading.engine is None or reading.engine.value == "vllm") and reading.error is None and reading.max_concurrency is None:
        per_token = one_request_fits(per_token, found, reading.kv_tokens, reading.max_model_len, notes)
    missing: list[str] = []
    say_missing(
        missing, reading.engine.value if reading.engine else "vllm", reading.era.value if reading.era else None, reading.model_loading_bytes,
        reading.available_kv_bytes, found, reading.kv_tokens, reading.gpu_blocks, reading.block_size, reading.max_model_len,
        reading.max_concurrency, reading.gpu_memory_utilization, reading.mem_fraction_static, reading.tensor_parallel_size, per_token,
        None, reading.engine_version, reading.error,
    )  # fmt: skip
    if reading.available_kv_bytes is not None and not reading.available_kv_bytes.low <= pin <= reading.available_kv_bytes.high:
        notes.append(
            f"the pin given, {pin:,} B, is not the pool the log prints ({reading.available_kv_bytes.printed}, line {reading.available_kv_bytes.line_no})"
        )
    return replace(reading, kv_cache_memory_bytes=found, bytes_per_token=per_token, missing=missing, notes=notes)
