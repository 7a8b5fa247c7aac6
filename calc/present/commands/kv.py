"""`kv`: the KV pool both ways, pin to tokens and tokens to pin."""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any

from calc.answers import report
from calc.catalog.model import Catalog
from calc.engine import derive, kv
from calc.present.commands.common import _deployment, _flag, _int
from calc.units import InputError, fmt, parse_size


def cmd_kv(catalog: Catalog, args: argparse.Namespace) -> object:
    reading: derive.KvReading | None
    per_token: int | Fraction
    source: str | None
    tokens: int | Fraction
    block, block_source = kv.DEFAULT_BLOCK_SIZE, "vLLM's default block"
    if args.bytes_per_token:
        per_token = Fraction(_int(args, "bytes_per_token"))
        source, reading = "given", None
    else:
        deployment_id = _deployment(catalog, args.deployment)
        spec = _int(args, "speculative_tokens") if args.speculative_tokens else 0
        reading = report.pool_reading(catalog, deployment_id, spec)
        if reading is None:
            raise InputError(f"--deployment {deployment_id}: no measured bytes per token; give --bytes-per-token")
        per_token, source = reading.bytes_per_token, report.kv_source(reading, spec)
        block, block_source = reading.block_size, reading.block_source
        if (reading.speculative_tokens or 0) != spec:
            reading = None  # measured at another speculative-token count: derive, never quote its log
    max_len = _int(args, "max_model_len")
    out: dict[str, Any] = {"bytes_per_token": per_token, "source": source, "max_model_len": max_len}
    if args.tokens:
        tokens = _int(args, "tokens")
        out.update(tokens=tokens, pin_bytes=kv.pool_for_tokens(tokens, per_token))
    else:
        pin = parse_size(args.pin if args.pin is not None else "10e9", _flag(args, "pin"))
        tokens, logged = reading.tokens_at(pin) if reading else (kv.tokens_for_pool(pin, per_token), False)
        out.update(pin_bytes=pin, tokens=tokens, tokens_logged=logged)
    if args.block_size:
        block, block_source = _int(args, "block_size"), "given"
    whole = int(out["tokens"])
    out.update(
        full_contexts=kv.full_contexts(whole, max_len),
        holds_one_context=kv.holds_one_context(whole, max_len, block),
        one_context_pin_bytes=kv.one_request_pin(max_len, per_token, block),
        block_size=block,
    )
    if args.seats and args.typical_context:
        seats, typical = _int(args, "seats"), _int(args, "typical_context")
        low, high = kv.seats_pool_range(seats, typical, per_token, max_len)
        out.update(tokens_needed=kv.tokens_needed(seats, typical), pin_for_needed_bytes=low, pin_for_needed_at_most_bytes=high)
    if args.json:
        return report.to_json(out)
    if args.tokens:
        held = (f"{fmt(out['tokens'], 'tokens')} x {fmt(per_token, 'count')} B need a pin of {fmt(out['pin_bytes'], 'B')} "
                f"({fmt(out['pin_bytes'], 'e9', 2, up=True)} rounded up, {fmt(out['pin_bytes'], 'GiB', up=True)})")  # fmt: skip
    else:
        held = f"Pin {fmt(out['pin_bytes'], 'e9')} ({fmt(out['pin_bytes'], 'GiB')}) holds {fmt(out['tokens'], 'tokens')}" + (
            " (logged)" if out.get("tokens_logged") else ""
        )
    lines = [
        f"Bytes per token: {fmt(per_token, 'count')} at max_model_len {fmt(max_len, 'count')} ({source})",
        held,
        f"Full {fmt(max_len, 'count')}-token contexts: {fmt(out['full_contexts'], 'x', down=True)}"
        + ("" if out["holds_one_context"] else " (below one request at max_model_len and the block vLLM 0.29.0 and later hold back: vLLM does not start)"),
        f"One request of {fmt(max_len, 'count')} tokens starts from a pin of {fmt(out['one_context_pin_bytes'], 'B')} "
        f"({fmt(out['one_context_pin_bytes'], 'e9', 2, up=True)} rounded up): "
        f"vLLM 0.29.0 and later hold one block of the pool back before the check ({fmt(block, 'tokens')}, {block_source}; "
        "--block-size to change it)",
    ]
    if "tokens_needed" in out:
        lines += [
            f"Seats x typical context: {fmt(out['tokens_needed'], 'tokens')}, a pin of {fmt(out['pin_for_needed_bytes'], 'e9', 2, up=True)} "
            "if no part of a request's cost is fixed",
            f"  every seat pays a request's fixed cost however short its context; the catalog does not split this cost, so up to "
            f"{fmt(out['pin_for_needed_at_most_bytes'], 'e9', 2, up=True)} (each seat charged one full context)",
        ]
    return "\n".join(lines)
