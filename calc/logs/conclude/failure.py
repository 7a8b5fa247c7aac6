"""What stopped or strained the start: the check that refused it (free memory, no KV memory,
max_model_len), a traceback that is none of them, an out-of-memory error after the checks, and a
hybrid's padding layers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from calc.logs.figures import Found, Opt

if TYPE_CHECKING:
    from calc.logs.reader import Reader


def refused_by(r: Reader, available: Opt, blocks: Opt, notes: list[str]) -> Found | None:
    """The check that refused the start (free memory, no KV memory, max_model_len), a negative pool
    or no blocks being no KV memory; a traceback that is none of them is said."""
    error = None
    errors = {v: f for v, f, _ in r.seen.get("error", [])}
    if available is not None and available.value < 0:
        errors.setdefault("no_kv_memory", available)
        notes.append(f"the KV pool came out negative ({available.printed}, line {available.line_no}): weights and overhead exceed what the fraction allows")
    if blocks is not None and blocks.value == 0:
        errors.setdefault("no_kv_memory", blocks)
    for _, f, _ in r.seen.get("sg_profiled_none", [])[:1]:
        notes.append(
            f"SGLang's memory profile left {f.printed} tokens for the KV cache (line {f.line_no}): what the weights leave is less than the "
            "(1 - mem_fraction_static) share SGLang keeps back, and it stops with 'Not enough memory' (model_runner.py)"
        )
    for kind in ("free_memory", "no_kv_memory", "max_model_len"):
        if kind in errors:
            e = errors[kind]
            error = Found(kind, e.line_no, e.line_text)
            break
    if error is None and r.traceback is not None and "oom" not in r.seen:
        if r.started is not None and r.started < r.traceback:
            ends = f" ends in {r.exception[1]!r} (line {r.exception[0]})" if r.exception is not None else ""
            notes.append(
                f"a traceback (line {r.traceback}){ends} comes after the start completed (line {r.started}): "
                "it is a later failure (a request, or the server stopping), not the start's"
            )
        elif r.exception is not None:
            notes.append(
                f"a traceback (line {r.traceback}) ends in {r.exception[1]!r} (line {r.exception[0]}): the start failed, "
                "but not at one of the memory checks read here"
            )
        else:
            notes.append(
                f"a traceback begins at line {r.traceback}, but the paste holds no exception line after it: the start failed, and the reason was cut off"
            )
    return error


def oom_and_padding(r: Reader, notes: list[str]) -> Found | None:
    """A CUDA out-of-memory error after the checks is said; a hybrid's padding layers are read."""
    for _, f, _ in r.seen.get("oom", [])[:1]:
        notes.append(
            f"a CUDA out-of-memory error (line {f.line_no}): none of vLLM's start checks refused the start; memory ran out after them "
            "(CUDA graphs, warm-up or the first requests)"
        )
    padding = None
    for _, f, _ in r.seen.get("padding", [])[:1]:
        padding = Found(f.value[0], f.line_no, f.line_text, f"{f.value[0]} (up to {f.value[1]} % of the pool)")
        count, waste = f.value
        notes.append(
            f"a hybrid model: vLLM added {count} padding layers to group its KV layers, which may waste up to {waste} % of the pool (line {f.line_no}); "
            "pool / tokens is then an effective figure, not a per-layer cost"
        )
    return padding
