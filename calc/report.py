"""The operator's view of one start, built from calc's small functions: what the command line
prints, what the calculator page shows and what the pages quote. Plain values, exact inside."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc import derive, fraction, gate, kv
from calc.catalog import Catalog
from calc.units import InputError, fmt

# Speculative tokens offered when the drafter is switched on for a deployment that ran without it:
# an input default the calculator states beside the field, not a figure from the catalog.
DRAFTER_TOKENS = 2


@dataclass(frozen=True)
class StartInputs:
    deployment: str
    kv_pin: int
    drafter: bool
    speculative_tokens: int
    prefill_budget: int
    seats: int
    max_model_len: int
    available: tuple[int, ...]
    typical_context: int | None = None
    gpu_memory_utilization: Fraction | None = None


def defaults(catalog: Catalog, deployment_id: str | None = None, available: tuple[int, ...] | None = None) -> StartInputs:
    """The deployment's serving configuration against the last MemAvailable it recorded
    (or against `available`, one figure per box, when given)."""
    deployment = catalog.deployments[deployment_id or next(iter(catalog.deployments))]
    serving = [s for s in deployment["starts"] if s["outcome"] == "serving"]
    start = serving[-1] if serving else deployment["starts"][-1]
    s = derive.start_settings(catalog, deployment, start)
    return StartInputs(
        deployment=deployment["id"],
        kv_pin=start["kv_pin"],
        drafter=False,
        speculative_tokens=s.get("speculative_tokens") or DRAFTER_TOKENS,
        prefill_budget=s["prefill_budget"],
        seats=s["seats"],
        max_model_len=s["max_model_len"],
        available=available or (last_available(deployment),) * deployment["boxes"],
        typical_context=None,
    )


def last_available(deployment: dict) -> int:
    readings = [r["available"].value for r in deployment.get("requests", [])]
    readings += [s["available_before"].value for s in deployment["starts"] if "available_before" in s]
    if not readings:
        raise InputError(f"{deployment['id']}: no MemAvailable reading in the catalog; give --available")
    return readings[0]


def check(inputs: StartInputs) -> list[str]:
    """Problems with the inputs themselves, named by field."""
    problems = []
    if inputs.max_model_len <= 0:
        problems.append("max_model_len: expected a whole number above zero")
    if not inputs.available:
        problems.append("available: expected one MemAvailable figure per box")
    if inputs.drafter and inputs.speculative_tokens <= 0:
        problems.append("speculative tokens: expected at least 1 with the drafter on")
    return problems


def start_report(catalog: Catalog, inputs: StartInputs) -> dict:
    deployment = catalog.deployments[inputs.deployment]
    model = catalog.models[deployment["model"]]
    box = catalog.boxes[deployment["box"]]
    row = derive.gate_row(catalog, inputs.deployment)
    request = gate.Request(inputs.kv_pin, inputs.drafter, inputs.prefill_budget, inputs.seats)
    result = gate.gate(row, request, inputs.available)
    largest = {
        "without_drafter": gate.largest_pin(row, gate.Request(0, False, inputs.prefill_budget, inputs.seats), inputs.available),
        "with_drafter": gate.largest_pin(row, gate.Request(0, True, inputs.prefill_budget, inputs.seats), inputs.available) if row.drafter else None,
    }
    boxes = [
        {
            "box": f"{box['name']} #{i + 1}",
            "available_bytes": a,
            "needs_bytes": result.needs,
            "passes": None if result.needs is None else result.needs <= a,
            "margin_bytes": None if result.needs is None else a - result.needs,
            "largest_pin_bytes": None if result.needs is None else a - (result.needs - inputs.kv_pin),
        }
        for i, a in enumerate(inputs.available)
    ]
    reading = pool_reading(catalog, inputs.deployment, inputs.speculative_tokens if inputs.drafter else 0)
    asked = inputs.speculative_tokens if inputs.drafter else 0
    same_config = reading is not None and (reading.speculative_tokens or 0) == asked
    pool = kv_figures(reading, inputs.kv_pin, inputs.max_model_len, inputs.seats, inputs.typical_context, same_config)
    total = derive.box_total(box)[0].value
    free = min(inputs.available)
    ceiling = fraction.ceiling(total, free, 2)
    chosen = inputs.gpu_memory_utilization if inputs.gpu_memory_utilization is not None else ceiling
    return {
        "deployment": deployment["id"],
        "model": model["name"],
        "box": box["name"],
        "boxes_count": deployment["boxes"],
        "tp": deployment["tp"],
        "inputs": inputs,
        "terms": result.terms,
        "needs_bytes": result.needs,
        "outside_calibration": result.outside_calibration,
        "passes": result.passes,
        "boxes": boxes,
        "largest_pin_bytes": largest,
        "kv": pool,
        "kv_source": kv_source(reading, asked),
        "fraction": {
            "total_bytes": total,
            "free_bytes": free,
            "fraction": chosen,
            "requested_bytes": fraction.requested(total, chosen) if chosen > 0 else None,
            "passes": chosen > 0 and fraction.passes(total, free, chosen),
            "ceiling": fraction.ceiling(total, free, 4),
        },
        "flags": flags(deployment, inputs, chosen),
        "changes": [t for t in gate.movable_terms(result)],
    }


def pool_reading(catalog: Catalog, deployment_id: str, speculative_tokens: int) -> derive.KvReading | None:
    """This deployment's measured bytes per token at the speculative-token count, or the nearest."""
    deployment = catalog.deployments[deployment_id]
    mine = [r for r in derive.kv_readings(catalog) if r.kind == "measured" and r.model == deployment["model"] and r.readings]
    return min(mine, key=lambda r: abs((r.speculative_tokens or 0) - speculative_tokens), default=None)


def kv_source(reading: derive.KvReading | None, speculative_tokens: int) -> str | None:
    """Where the bytes per token come from, and a warning when it was measured another way."""
    if reading is None:
        return None
    measured_at = reading.speculative_tokens or 0
    if measured_at == speculative_tokens:
        return reading.provenance
    how = f"{measured_at} speculative tokens" if measured_at else "the drafter off"
    expect = "fewer" if speculative_tokens > measured_at else "more"
    return f"{reading.provenance}, measured with {how}: a drafter's KV comes out of the same pool, so expect {expect} tokens"


def kv_figures(reading: derive.KvReading | None, pool: int, max_model_len: int, seats: int, typical_context: int | None, same_config: bool = True) -> dict:
    """Tokens in the pool (as logged when a start of this configuration ran this very pin),
    full contexts, the floor."""
    if reading is None:
        return {"bytes_per_token": None}
    per_token = reading.bytes_per_token
    tokens, logged = reading.tokens_at(pool) if same_config else (kv.tokens_for_pool(pool, per_token), False)
    whole = int(tokens)
    out = {
        "bytes_per_token": per_token,
        "tokens": tokens,
        "tokens_logged": logged,
        "full_contexts": kv.full_contexts(whole, max_model_len),
        "holds_one_context": kv.holds_one_context(whole, max_model_len),
        "one_context_pin_bytes": kv.pool_for_tokens(max_model_len, per_token),
    }
    if typical_context:
        needed = kv.tokens_needed(seats, typical_context)
        out.update(tokens_needed=needed, seats_fit=whole >= needed, pin_for_seats_bytes=kv.pool_for_tokens(needed, per_token))
    return out


def flags(deployment: dict, inputs: StartInputs, utilization: Fraction) -> list[str]:
    out = [
        f"--kv-cache-memory-bytes {inputs.kv_pin}",
        f"--gpu-memory-utilization {fmt(utilization, 'fraction', 2)}",
        f"-tp {deployment['tp']}",
        f"--max-model-len {inputs.max_model_len}",
        f"--max-num-seqs {inputs.seats}",
        f"--max-num-batched-tokens {inputs.prefill_budget}",
    ]
    if inputs.drafter:
        out.append(f'--speculative-config \'{{"method": "mtp", "num_speculative_tokens": {inputs.speculative_tokens}}}\'')
    return out


def to_json(value: object) -> object:
    """Plain JSON values: Fractions as floats, dataclasses as dicts."""
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {k: to_json(getattr(value, k)) for k in value.__dataclass_fields__}
    return value


def fit_report(pool: int, points: list[tuple[int, int]], predict_at: list[int]) -> dict:
    """The per-request cost from one pool read at several max_model_len, checked, and the token
    counts it predicts. Raises InputError naming what is wrong with the readings."""
    if pool <= 0:
        raise InputError("pool: found 0, expected the KV pool's size per rank, such as 24 GiB")
    if len({length for length, _ in points}) < 2:
        raise InputError("readings: found fewer than two different max_model_len, expected two or more readings of the same pool")
    per_token, fixed = kv.fit_per_request([(length, kv.per_request_bytes(pool, tokens, length)) for length, tokens in points])
    if per_token <= 0 or fixed < 0:
        raise InputError("readings: these give a negative per-token or fixed cost; expected readings of one pool on one build")
    return {
        "pool_bytes": pool,
        "per_token_bytes": per_token,
        "fixed_bytes": fixed,
        "readings": [{"max_model_len": n, "tokens": t, "pool_over_tokens": Fraction(pool, t)} for n, t in points],
        "predicted": [
            {"max_model_len": n, "tokens": kv.tokens_at_length(pool, per_token, fixed, n), "full_contexts": kv.tokens_at_length(pool, per_token, fixed, n) / n}
            for n in predict_at
        ],
    }
