"""Your own start, answered from what your engine printed: what one rank holds and its overhead,
the start gate and its largest pin, tokens and full contexts at other pins and lengths, vLLM's own
fraction and one-request checks, and the `vllm serve` command.

Every input is a `Given`: a value and where it came from (a log line, a typed field, the catalog),
so every figure derived from it can say so. A figure that cannot be derived is None with the
reason, never zero. Exact values only; the calculator page formats them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from calc import fraction, kv, report


@dataclass(frozen=True)
class Given:
    """A value and where it came from, in words a reader can check."""

    value: int | Fraction | str
    source: str
    low: int | Fraction | None = None  # where the figure was printed rounded: the bounds it stands for
    high: int | Fraction | None = None


def _low(g: Given) -> int:
    return int(g.low if g.low is not None else g.value)  # type: ignore[arg-type]


def _high(g: Given) -> int:
    return int(g.high if g.high is not None else g.value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Derived:
    """A figure computed from givens: its value (None when it cannot be), how, and from what."""

    value: int | Fraction | None
    how: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class YourStart:
    """What the engineer has: their log's figures, their box's readings, what they typed."""

    pin: Given  # the KV pool to plan, bytes a rank
    headroom: Given  # the start gate's headroom (the catalog's policy)
    weights: Given | None = None  # what one rank loads (a drafter's weights included)
    pool: Given | None = None  # the KV pool of the start that was measured
    bytes_per_token: Given | None = None
    overhead: Given | None = None  # typed; otherwise derived from the readings
    before: Given | None = None  # MemAvailable before the start (free memory on a discrete card)
    serving: Given | None = None  # the same once it serves
    total: Given | None = None  # the box's (or card's) total
    max_model_len: Given | None = None
    tp: Given | None = None
    gpu_memory_utilization: Given | None = None
    model: Given | None = None
    kv_cache_dtype: Given | None = None
    pins: tuple[int, ...] = ()
    lengths: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _src(*givens: Given | Derived | None) -> tuple[str, ...]:
    out: list[str] = []
    for g in givens:
        if isinstance(g, Given):
            out.append(g.source)
        elif isinstance(g, Derived):
            out.extend(g.sources)
    return tuple(dict.fromkeys(out))


def held(y: YourStart) -> Derived:
    """What the start took from the box: MemAvailable before minus once it serves."""
    if y.before is None or y.serving is None:
        return Derived(None, "needs MemAvailable before the start and once it serves")
    return Derived(y.before.value - y.serving.value, "before - serving", _src(y.before, y.serving))  # type: ignore[operator]


def overhead(y: YourStart) -> Derived:
    """Typed, or the remainder held - weights - KV pool: what the rank holds beyond both."""
    if y.overhead is not None:
        return Derived(y.overhead.value, "typed", _src(y.overhead))  # type: ignore[arg-type]
    h = held(y)
    missing = [name for name, g in (("the weights", y.weights), ("the KV pool", y.pool)) if g is None]
    if h.value is None or missing:
        need = ([h.how] if h.value is None else []) + [f"needs {m}" for m in missing]
        return Derived(None, "; ".join(need))
    return Derived(h.value - y.weights.value - y.pool.value, "held - weights - KV pool", _src(h, y.weights, y.pool))  # type: ignore[union-attr, operator]


def needs(y: YourStart, pin: int) -> Derived:
    """The start gate's needs for one rank: weights + KV pin + overhead + headroom."""
    over = overhead(y)
    if y.weights is None or over.value is None:
        reason = "needs the weights" if y.weights is None else f"needs the overhead ({over.how})"
        return Derived(None, reason)
    return Derived(y.weights.value + pin + over.value + y.headroom.value, "weights + KV pin + overhead + headroom", _src(y.weights, over, y.headroom))  # type: ignore[operator]


def per_token(y: YourStart) -> Fraction | None:
    return Fraction(y.bytes_per_token.value) if y.bytes_per_token is not None else None  # type: ignore[arg-type]


def tokens_at(y: YourStart, pin: int) -> Fraction | None:
    bpt = per_token(y)
    return kv.tokens_for_pool(pin, bpt) if bpt else None


def answer(y: YourStart) -> dict:
    """Every answer for these givens; a section that cannot be sized says what it needs."""
    pin = int(y.pin.value)  # type: ignore[arg-type]
    n = needs(y, pin)
    before = y.before.value if y.before is not None else None
    gate = {"needs": n, "available": before, "passes": None, "margin": None, "largest_pin": None}
    if n.value is not None and before is not None:
        gate.update(passes=n.value <= before, margin=before - n.value, largest_pin=before - (n.value - pin))  # type: ignore[operator]
    bpt = per_token(y)
    lengths = tuple(dict.fromkeys(((int(y.max_model_len.value),) if y.max_model_len else ()) + y.lengths))  # type: ignore[arg-type]
    pins = tuple(dict.fromkeys((pin, *(p for p in (gate["largest_pin"],) if p and p > 0), *y.pins)))
    grid = []
    if bpt:
        for p in pins:
            tokens = kv.tokens_for_pool(p, bpt)
            grid.append({"pin": p, "tokens": tokens, "contexts": {length: kv.full_contexts(int(tokens), length) for length in lengths}})
    one_request = None
    if bpt and y.max_model_len is not None:
        length = int(y.max_model_len.value)  # type: ignore[arg-type]
        floor = kv.pool_for_tokens(length, bpt)
        one_request = {"max_model_len": length, "pin_needed": floor, "passes": pin >= floor, "estimated_max_model_len": int(tokens_at(y, pin) or 0)}
    frac = None
    if y.total is not None and before is not None:
        total = int(y.total.value)  # type: ignore[arg-type]
        # the largest fraction that passes, safe against the rounding of a printed free and total
        ceiling = fraction.ceiling(_high(y.total), _low(y.before), 2)  # type: ignore[arg-type]
        chosen = Fraction(y.gpu_memory_utilization.value) if y.gpu_memory_utilization is not None else ceiling  # type: ignore[arg-type]
        frac = {
            "total": total,
            "free": before,
            "fraction": chosen,
            "typed": y.gpu_memory_utilization is not None,
            "requested": fraction.requested(total, chosen) if chosen > 0 else None,
            "passes": chosen > 0 and fraction.passes(total, before, chosen),
            "ceiling": fraction.ceiling(_high(y.total), _low(y.before), 4),  # type: ignore[arg-type]
            "rounded": (_high(y.total), _low(y.before)) != (total, before),  # type: ignore[arg-type]
        }
    return {
        "held": held(y),
        "overhead": overhead(y),
        "gate": gate,
        "bytes_per_token": bpt,
        "pins": pins,
        "lengths": lengths,
        "grid": grid,
        "one_request": one_request,
        "fraction": frac,
        "command": command(y, frac["fraction"] if frac else None),
    }


def command(y: YourStart, utilization: Fraction | None) -> str:
    """A complete `vllm serve` line for this start: the model, TP, length, the pin, the fraction."""
    parts = ["vllm serve", str(y.model.value) if y.model is not None else "MODEL"]
    if y.tp is not None:
        parts.append(f"--tensor-parallel-size {y.tp.value}")
    if y.max_model_len is not None:
        parts.append(f"--max-model-len {y.max_model_len.value}")
    if y.kv_cache_dtype is not None and str(y.kv_cache_dtype.value) != "auto":
        parts.append(f"--kv-cache-dtype {y.kv_cache_dtype.value}")
    parts.append(f"--kv-cache-memory-bytes {int(y.pin.value)}")  # type: ignore[arg-type]
    if utilization is not None and utilization > 0:
        parts.append(f"--gpu-memory-utilization {report.fraction_text(utilization)}")  # the value checked, every decimal kept
    return " \\\n  ".join(parts)
