"""The bytes a token costs: the pool (or the pin) over the tokens or blocks it holds, with the
printing's rounding, what the printed token count is by release, and the check that one request
of max_model_len fits."""

from __future__ import annotations

import re
from fractions import Fraction

from calc.logs.figures import Derived, Found, GiB, MiB, Opt
from calc.units import fmt


def _release(version: Opt) -> tuple[int, int, int] | None:
    """The release of a printed engine version ("0.13.0+faa43dbf.nv26.01": (0, 13, 0); "0.20": (0, 20, 0)); none
    for a source build without a release tag, which setuptools-scm numbers "0.1.devN+gHASH" whatever its age."""
    if version is not None and re.match(r"v?0\.1\.dev", str(version.value)):
        return None
    found = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(version.value)) if version is not None and version.value else None
    return (int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)) if found else None


def _token_count_how(tokens: Found, concurrency: Found, max_len: Found, version: Opt) -> str:
    """What the printed token count is, by version (vllm/v1/core/kv_cache_utils.py): from 0.20.1
    int(concurrency x max_model_len) (0.20.0 still counts blocks); before, the pool's blocks x block size (per KV group), which
    equals concurrency x max_model_len for full attention."""
    matches = abs(tokens.value - Fraction(concurrency.value) * max_len.value) <= concurrency.half * max_len.value + 1
    release = _release(version)
    if release is not None and release < (0, 20, 1):
        if matches:
            return (
                f"; the token count is the pool's blocks x block size, as {version.value} prints it (builds up to 0.20.0), "  # type: ignore[union-attr]
                "and equals the concurrency x max_model_len, as it does for full attention"
            )
        return f"; the token count is the pool's blocks (per KV group), as {version.value} prints it (builds up to 0.20.0), not the concurrency x max_model_len"  # type: ignore[union-attr]
    if matches:
        if release is not None:
            return "; the token count is the concurrency x max_model_len (as builds from 0.20.1 print it), so this is an effective figure at this max_model_len"
        return (
            "; the token count equals the concurrency x max_model_len: builds from 0.20.1 print it so (an effective figure at this max_model_len), "
            "earlier builds print the pool's blocks, which agree for full attention; the log prints no version to tell which"
        )
    return "; the token count is not the concurrency x max_model_len here, so it counts the pool's blocks (per KV group), as builds up to 0.20.0 print it"


def bytes_per_token(
    pin: Opt,
    available: Opt,
    tokens: Opt,
    blocks: Opt,
    block: Opt,
    dcp: Opt,
    kv_needed: Opt,
    max_len: Opt,
    concurrency: Opt,
    notes: list[str],
    version: Opt = None,
) -> Derived | None:
    pool = pin if pin is not None else available
    if pool is not None and pool.value > 0:
        count, count_how, lines = None, "", [pool.line_no]
        if tokens is not None and tokens.value > 0:
            count = tokens.value
            count_how = f"{tokens.value:,} tokens (line {tokens.line_no})"
            lines.append(tokens.line_no)
            if dcp is not None and dcp.value > 1:
                count = Fraction(tokens.value, dcp.value)
                count_how += f" / dcp {dcp.value} (line {dcp.line_no}: the printed count is multiplied by the decode-context-parallel size)"
                lines.append(dcp.line_no)
        elif blocks is not None and blocks.value > 0 and block is not None:
            count = blocks.value * block.value
            count_how = f"{blocks.value:,} blocks x {block.value} tokens (lines {blocks.line_no}, {block.line_no})"
            lines.append(blocks.line_no)
        if count:
            pool_how = "the pin" if pool is pin else "the pool"
            exact = "exact" if not pool.half else f"printed as {pool.printed}, so +- {fmt_half(pool.half)}"
            where = f"line {pool.line_no}" if pool.line_no else pool.line_text
            how = f"{pool_how} {pool.value:,} B ({where}, {exact}) / {count_how}, per rank"
            if tokens is not None and concurrency is not None and max_len is not None:
                how += _token_count_how(tokens, concurrency, max_len, version)
            value = Fraction(pool.value) / count
            return Derived(value, Fraction(pool.low) / count, Fraction(pool.high) / count, how, tuple(lines))
    if kv_needed is not None and max_len is not None:
        how = (
            f"{kv_needed.printed} needed for one request of {max_len.value:,} tokens (line {kv_needed.line_no}) / {max_len.value:,}, per rank; "
            "from the one-request check, which holds any context-independent part too"
        )
        return Derived(
            Fraction(kv_needed.value, max_len.value), Fraction(kv_needed.low, max_len.value), Fraction(kv_needed.high, max_len.value), how, (kv_needed.line_no,)
        )
    return None


def one_request_fits(per_token: Derived | None, pool: Opt, tokens: Opt, max_len: Opt, notes: list[str]) -> Derived | None:
    """vLLM prints "GPU KV cache size" only after check_enough_kv_cache_memory has found one request of
    max_model_len fits the pool (vllm/v1/core/kv_cache_utils.py). A pool / tokens whose max_model_len
    tokens exceed the pool is then no per-token cost: builds up to 0.20.0 print the tokens per KV group
    on hybrid models (sliding-window or mamba groups), and the concurrency line that would tell is missing."""
    if per_token is None or pool is None or tokens is None or max_len is None or tokens.line_no not in per_token.lines:
        return per_token
    cost = per_token.low * max_len.value
    if cost <= pool.high:
        return per_token
    notes.append(
        f"pool / tokens is {fmt(per_token.value, 'count')} B per token (lines {pool.line_no}, {tokens.line_no}), and {fmt(max_len.value, 'count')} of them "
        f"(line {max_len.line_no}) come to {fmt(cost, 'GiB')}, more than the {pool.printed} pool, although vLLM prints the token count only once one "
        "such request fits: the figures are inconsistent, so no bytes per token is given; the token count is the pool's tokens per KV group "
        "(a hybrid model, builds up to 0.20.0), and the concurrency line, which would give one request's cost, is not in the log"
    )
    return None


def fmt_half(half: Fraction) -> str:
    if half >= GiB // 1000:
        return f"{float(half / GiB):g} GiB"
    return f"{float(half / MiB):g} MiB"
