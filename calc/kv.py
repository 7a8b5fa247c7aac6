"""The KV pool: a number of tokens, not of gigabytes."""

from __future__ import annotations

from fractions import Fraction


def bytes_per_token(pool: int, tokens: int) -> Fraction:
    """What one token costs: the pool's bytes over the tokens vLLM reported for it."""
    if tokens <= 0:
        raise ValueError("bytes_per_token: tokens must be above zero")
    return Fraction(pool, tokens)


def pooled_bytes_per_token(observations: list[tuple[int, int]]) -> Fraction:
    """Several (pool, tokens) readings of one configuration: all bytes over all tokens."""
    return bytes_per_token(sum(p for p, _ in observations), sum(t for _, t in observations))


def whole_bytes(per_token: Fraction) -> int:
    """A cost per token in whole bytes, as the pages print it and calc then uses it: a reader who
    divides a printed pool by a printed cost gets the printed token count."""
    return int(Fraction(per_token) + Fraction(1, 2))


def tokens_for_pool(pool: int, per_token: Fraction) -> Fraction:
    """Tokens a pool holds at this cost, exact; `fmt` rounds it for display."""
    return pool / Fraction(per_token)


def pool_for_tokens(tokens: int, per_token: Fraction) -> int:
    """The smallest pin that holds `tokens` (rounded up to a whole byte)."""
    return -int(-(tokens * per_token) // 1)


def full_contexts(tokens: int, max_model_len: int) -> Fraction:
    """vLLM's "Maximum concurrency": how many max_model_len requests the pool holds at once."""
    return Fraction(tokens, max_model_len)


def block_concurrency(tokens: int, max_model_len: int, block_size: int) -> Fraction:
    """The same, counted in whole blocks as the scheduler admits them."""
    blocks_per_request = -(-max_model_len // block_size)
    return Fraction(tokens // block_size, blocks_per_request)


def tokens_needed(seats: int, typical_context: int) -> int:
    """Seats times the context they typically hold, not times max_model_len."""
    return seats * typical_context


def seats_pool_range(seats: int, typical_context: int, per_token: Fraction, max_model_len: int) -> tuple[int, int]:
    """The pool seats need when a request's cost is fixed + per token x context and only the
    cost at max_model_len is known (per_token_at_max = per token + fixed / max_model_len).

    Each seat pays the fixed part however short its request, so seats x typical context x that
    cost is only the floor (no fixed part); the most a seat can cost is one full context (all of
    it fixed). Rounded up to whole bytes.
    """
    context = min(typical_context, max_model_len)
    return pool_for_tokens(seats * context, per_token), pool_for_tokens(seats * max_model_len, per_token)


def holds_one_context(tokens: int, max_model_len: int) -> bool:
    """The floor: below one request at max_model_len vLLM does not start (check_enough_kv_cache_memory)."""
    return tokens >= max_model_len


def per_request_bytes(pool: int, tokens: int, max_model_len: int) -> Fraction:
    """What one full-length request is charged: the pool over vLLM's maximum concurrency.

    Current builds derive the logged tokens as concurrency x max_model_len, so this is the
    figure the pool was divided by, fixed parts included.
    """
    return Fraction(pool * max_model_len, tokens)


def fit_per_request(points: list[tuple[int, Fraction]]) -> tuple[Fraction, Fraction]:
    """Per-request bytes = per_token x context + fixed, fit exactly (least squares) to
    (max_model_len, per-request bytes) points at two or more lengths."""
    if len({length for length, _ in points}) < 2:
        raise ValueError("fit_per_request: needs readings at two or more max_model_len")
    n = len(points)
    mean_x = Fraction(sum(x for x, _ in points), n)
    mean_y = sum((Fraction(y) for _, y in points), Fraction(0)) / n
    per_token = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return per_token, mean_y - per_token * mean_x


def tokens_at_length(pool: int, per_token: Fraction, fixed: Fraction, max_model_len: int) -> Fraction:
    """The token count vLLM would log for this pool at another max_model_len, by the fit."""
    return pool * max_model_len / (per_token * max_model_len + fixed)
