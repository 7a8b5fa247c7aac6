"""What the log lacks, said figure by figure with what follows from its absence."""

from __future__ import annotations

from fractions import Fraction

from calc.logs.conclude.per_token import _release, fmt_half
from calc.logs.figures import Derived, Opt
from calc.units import fmt


def pool_absent(era: str | None, version: Opt, error: Opt) -> str:
    """Why a vLLM log holds no pool in bytes. A start refused at the free-memory check stops in
    init_device, before the profile that sizes the pool (vllm/v1/worker/gpu_worker.py); a V1 build
    from 0.9.1 on prints 'Available KV cache memory' once the profile is done (determine_available_memory,
    logger.info_once in 0.33.0), so a log of such a build without it is cut or stopped earlier;
    V1 builds before 0.9.1 print no such line."""
    if error is not None and error.value == "free_memory" and "Error in memory profiling" in error.line_text:
        return f"the KV pool in bytes: the start stopped at the profile's check that free memory did not grow (line {error.line_no}), before the pool is sized"
    if error is not None and error.value == "free_memory":
        return f"the KV pool in bytes: the start stopped at the free-memory check (line {error.line_no}), before the profile that sizes the pool"
    release = _release(version)
    if era == "v1" and release is not None and release >= (0, 9, 1):
        return (
            f"the KV pool in bytes: {version.value} prints 'Available KV cache memory' after its memory profile, "  # type: ignore[union-attr]
            "and this log holds no such line (it is cut, or the start stopped before the profile ended)"
        )
    if era == "v1":
        return (
            "the KV pool in bytes: V1 builds before 0.9.1 print no 'Available KV cache memory' line; "
            "the pool is tokens x bytes per token, if the bytes per token are known from elsewhere"
        )
    return "the KV pool in bytes"


def say_missing(
    missing: list[str], engine: str, era: str | None, loading: Opt, available: Opt, pin: Opt, tokens: Opt, blocks: Opt, block: Opt,
    max_len: Opt, concurrency: Opt, fraction: Opt, mem_fraction: Opt, tp: Opt, per_token: Derived | None,
    unread: tuple[int, str] | None = None, version: Opt = None, error: Opt = None,
) -> None:  # fmt: skip
    if loading is None:
        said = "'Load weight end ... mem usage'" if engine == "sglang" else "'Model loading took'"
        missing.append(f"the weights (no {said} line): what one rank holds cannot be split into weights and overhead")
    if available is None and pin is None:
        if unread is not None and not unread[1]:
            missing.append(f"the KV pool in bytes: line {unread[0]}, the log's last, is cut off before its figure ends")
        elif unread is not None:
            missing.append(f"the KV pool in bytes: line {unread[0]} has its words but not a figure an engine prints ({unread[1]!r})")
        elif engine == "vllm":
            missing.append(pool_absent(era, version, error))
        else:
            missing.append("the KV pool in bytes")
    if engine == "vllm" and pin is None and available is not None and available.half:
        if "as specified by kv_cache_memory_bytes" in available.line_text:
            missing.append(f"kv_cache_memory_bytes in bytes: the log prints the pin as {available.printed}, known to +- {fmt_half(available.half)}")
        else:
            kind = "worked out" if available.derived else "profiled"
            missing.append(f"kv_cache_memory_bytes: the pool is the {kind} {available.printed}, known to +- {fmt_half(available.half)}")
    if tokens is None:
        if blocks is not None and block is not None:
            missing.append(f"the token count: V0 prints blocks; {blocks.value:,} blocks x {block.value} = {blocks.value * block.value:,} tokens")
        elif blocks is not None:
            missing.append("the token count and the block size: tokens = blocks x block size (16 is vLLM's default on CUDA, not assumed here)")
        else:
            missing.append(
                "the token count ('KV Cache is allocated. #tokens' or 'max_total_num_tokens')"
                if engine == "sglang"
                else "the token count ('GPU KV cache size')"
            )
    if max_len is None:
        missing.append("max_model_len: full contexts and the per-request cost cannot be worked out")
    if concurrency is None and engine == "vllm" and tokens is not None and max_len is not None and per_token is None and (available or pin):
        missing.append("the concurrency line: the token count counts per KV group here (see the notes), so the full contexts are not known")
    elif concurrency is None and engine == "vllm" and tokens is not None and max_len is not None:
        missing.append(
            f"the concurrency line: {fmt(tokens.value, 'count')} / {fmt(max_len.value, 'count')} = "
            f"{fmt(Fraction(tokens.value, max_len.value), 'plain', down=True)} full contexts, rounded down"
        )
    if engine == "vllm" and fraction is None and pin is None:
        missing.append("gpu_memory_utilization (vLLM's default has changed between releases, so it is not assumed; the catalog's policy.yaml gives each)")
    if engine == "sglang" and mem_fraction is None:
        missing.append("mem_fraction_static (the ServerArgs line)")
    if tp is None:
        missing.append("tensor_parallel_size: every figure is one rank's; how many ranks there are is not known")
    if per_token is None and not (tokens is not None and (available or pin)):  # with both, the notes say why there is none
        missing.append("bytes per token: needs the pool in bytes and the token count (or blocks and block size)")
