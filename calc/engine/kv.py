"""The KV pool: a number of tokens, not of gigabytes."""

from __future__ import annotations

from fractions import Fraction

from calc.units import InputError


def bytes_per_token(pool: int, tokens: int) -> Fraction:
    """What one token costs: the pool's bytes over the tokens vLLM reported for it."""
    if tokens <= 0:
        raise InputError(f"tokens: found {tokens}, expected a count above zero")
    return Fraction(pool, tokens)


def pooled_bytes_per_token(observations: list[tuple[int, int]]) -> Fraction:
    """Several (pool, tokens) readings of one configuration: all bytes over all tokens."""
    return bytes_per_token(sum(p for p, _ in observations), sum(t for _, t in observations))


def whole_bytes(per_token: Fraction) -> int:
    """A cost per token in whole bytes, as the pages print it and calc then uses it: a reader who
    divides a printed pool by a printed cost gets the printed token count."""
    return int(Fraction(per_token) + Fraction(1, 2))


def tokens_for_pool(pool: int | Fraction, per_token: int | Fraction) -> int:
    """Whole tokens a pool holds at this cost: a part of a token is not held, so the count is
    floored, as vLLM floors its own ("GPU KV cache size")."""
    if per_token <= 0:
        raise InputError(f"bytes per token: found {per_token}, expected a cost above zero")
    return int(pool // Fraction(per_token))


def pool_for_tokens(tokens: int, per_token: int | Fraction) -> int:
    """The smallest pin that holds `tokens` (rounded up to a whole byte)."""
    return -int(-(tokens * per_token) // 1)


def full_contexts(tokens: int, max_model_len: int) -> Fraction:
    """vLLM's "Maximum concurrency": how many max_model_len requests the pool holds at once."""
    _above_zero(max_model_len, "max_model_len")
    return Fraction(tokens, max_model_len)


def block_concurrency(tokens: int, max_model_len: int, block_size: int) -> Fraction:
    """The same, counted in whole blocks as the scheduler admits them."""
    _above_zero(max_model_len, "max_model_len")
    _above_zero(block_size, "block_size")
    blocks_per_request = -(-max_model_len // block_size)
    return Fraction(tokens // block_size, blocks_per_request)


def tokens_needed(seats: int, typical_context: int) -> int:
    """Seats times the context they typically hold, not times max_model_len."""
    return seats * typical_context


def seats_pool_range(seats: int, typical_context: int, per_token: int | Fraction, max_model_len: int) -> tuple[int, int]:
    """The pool seats need when a request's cost is fixed + per token x context and only the
    cost at max_model_len is known (per_token_at_max = per token + fixed / max_model_len).

    Each seat pays the fixed part however short its request, so seats x typical context x that
    cost is only the floor (no fixed part); the most a seat can cost is one full context (all of
    it fixed). Rounded up to whole bytes.
    """
    context = min(typical_context, max_model_len)
    return pool_for_tokens(seats * context, per_token), pool_for_tokens(seats * max_model_len, per_token)


# vLLM's one-request check (check_enough_kv_cache_memory): from 0.29.0 it first takes one block off
# the pool, the null block BlockPool holds back (`available_memory - _pool_bytes_per_block(groups)`,
# vllm/v1/core/kv_cache_utils.py 0.29.0, vllm/v1/core/kv_cache_planning.py 0.33.0; 0.28.0 checks the
# whole pool). A block is the largest KV group's page over its layers, at most block_size tokens at
# the pool's bytes a token, so the floor is max_model_len + one block of tokens.
NULL_BLOCK_FROM = (0, 29, 0)
DEFAULT_BLOCK_SIZE = 16  # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE (0.33.0), when nothing names another


def null_block_held(release: tuple[int, ...] | None) -> bool:
    """Whether a build takes the null block off before its one-request check; an unknown build
    is taken to be a current one (0.29.0 and later), the side that asks for more."""
    return release is None or tuple(release) >= NULL_BLOCK_FROM


def one_request_tokens(max_model_len: int, block_size: int) -> int:
    """The tokens a pool must hold for vLLM to start: one request of max_model_len, plus the null
    block from 0.29.0 (pass block_size 0 for earlier builds)."""
    return max_model_len + block_size


def holds_one_context(tokens: int, max_model_len: int, block_size: int) -> bool:
    """The floor: below one request at max_model_len (and, from 0.29.0, one block more) vLLM does
    not start (check_enough_kv_cache_memory)."""
    return tokens >= one_request_tokens(max_model_len, block_size)


def one_request_pin(max_model_len: int, per_token: int | Fraction, block_size: int) -> int:
    """The smallest pin vLLM's one-request check passes: max_model_len + one block of tokens
    (from 0.29.0) at this cost, rounded up to a whole byte."""
    return pool_for_tokens(one_request_tokens(max_model_len, block_size), per_token)


def per_request_bytes(pool: int, tokens: int, max_model_len: int) -> Fraction:
    """What one full-length request is charged: the pool over vLLM's maximum concurrency.

    Current builds derive the logged tokens as concurrency x max_model_len, so this is the
    figure the pool was divided by, fixed parts included.
    """
    _above_zero(tokens, "tokens")
    return Fraction(pool * max_model_len, tokens)


def fit_per_request(points: list[tuple[int, Fraction]]) -> tuple[Fraction, Fraction]:
    """Per-request bytes = per_token x context + fixed, fit exactly (least squares) to
    (max_model_len, per-request bytes) points at two or more lengths."""
    if len({length for length, _ in points}) < 2:
        raise InputError("readings: found fewer than two different max_model_len, expected two or more readings of the same pool")
    n = len(points)
    mean_x = Fraction(sum(x for x, _ in points), n)
    mean_y = sum((Fraction(y) for _, y in points), Fraction(0)) / n
    per_token = sum(((x - mean_x) * (y - mean_y) for x, y in points), Fraction(0)) / sum(((x - mean_x) ** 2 for x, _ in points), Fraction(0))
    return per_token, mean_y - per_token * mean_x


def tokens_at_length(pool: int, per_token: Fraction, fixed: Fraction, max_model_len: int | Fraction) -> int:
    """The token count vLLM would log for this pool at another max_model_len, by the fit: whole
    tokens, floored as vLLM's int(concurrency x max_model_len) floors them."""
    per_request = per_token * max_model_len + fixed
    if per_request <= 0:
        raise InputError(f"max_model_len {max_model_len}: the fit gives {per_request} bytes a request, expected above zero")
    return int(pool * max_model_len // per_request)


def _above_zero(value: int, what: str) -> None:
    if value <= 0:
        raise InputError(f"{what}: found {value}, expected a whole number above zero")
