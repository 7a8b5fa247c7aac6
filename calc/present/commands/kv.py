"""`kv`: the KV pool both ways, pin to tokens and tokens to pin."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction

from calc.answers import report
from calc.catalog.model import Catalog
from calc.engine import derive, kv
from calc.jsontext import Json
from calc.present.commands.common import _deployment, _flag, _int
from calc.units import InputError, fmt, parse_memory


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
    logged: bool | None = None
    if args.tokens:
        tokens = _int(args, "tokens")
        pin = kv.pool_for_tokens(tokens, per_token)
    else:
        pin = parse_memory(args.pin if args.pin is not None else "10e9", _flag(args, "pin"))
        tokens, logged = reading.tokens_at(pin) if reading else (kv.tokens_for_pool(pin, per_token), False)
    if args.block_size:
        block, block_source = _int(args, "block_size"), "given"
    whole = int(tokens)
    needed: tuple[int, int, int] | None = None
    if args.seats and args.typical_context:
        seats, typical = _int(args, "seats"), _int(args, "typical_context")
        needed = (kv.tokens_needed(seats, typical), *kv.seats_pool_range(seats, typical, per_token, max_len))
    out = KvAnswer(per_token, source, max_len, tokens, pin, logged, kv.full_contexts(whole, max_len), kv.holds_one_context(whole, max_len, block),
                   kv.one_request_pin(max_len, per_token, block), block, needed)  # fmt: skip
    return out.to_json() if args.json else "\n".join(out.text(block_source))


@dataclass(frozen=True)
class KvAnswer:
    """`kv`'s answer: the pool both ways (a pin's tokens, or the pin tokens need), the full contexts
    it holds, and the pin one request of max_model_len starts from."""

    bytes_per_token: int | Fraction
    source: str | None
    max_model_len: int
    tokens: int | Fraction
    pin_bytes: int
    tokens_logged: bool | None  # None where the tokens were given, not the pin
    full_contexts: Fraction
    holds_one_context: bool
    one_context_pin_bytes: int
    block_size: int
    needed: tuple[int, int, int] | None = None  # seats x typical context: its tokens, and the pin it needs, least and most

    def to_json(self) -> Json:
        """`kv --json`: the figures in the order the command has always printed them."""
        pool: dict[str, object] = (
            {"tokens": self.tokens, "pin_bytes": self.pin_bytes}
            if self.tokens_logged is None
            else {"pin_bytes": self.pin_bytes, "tokens": self.tokens, "tokens_logged": self.tokens_logged}
        )
        out: dict[str, object] = {"bytes_per_token": self.bytes_per_token, "source": self.source, "max_model_len": self.max_model_len, **pool}
        out.update(full_contexts=self.full_contexts, holds_one_context=self.holds_one_context, one_context_pin_bytes=self.one_context_pin_bytes,
                   block_size=self.block_size)  # fmt: skip
        if self.needed is not None:
            out.update(tokens_needed=self.needed[0], pin_for_needed_bytes=self.needed[1], pin_for_needed_at_most_bytes=self.needed[2])
        return report.to_json(out)

    def text(self, block_source: str) -> list[str]:
        per_token, max_len, pin = self.bytes_per_token, self.max_model_len, self.pin_bytes
        if self.tokens_logged is None:
            held = (f"{fmt(self.tokens, 'tokens')} x {fmt(per_token, 'count')} B need a pin of {fmt(pin, 'B')} "
                    f"({fmt(pin, 'e9', 2, up=True)} rounded up, {fmt(pin, 'GiB', up=True)})")  # fmt: skip
        else:
            held = f"Pin {fmt(pin, 'e9')} ({fmt(pin, 'GiB')}) holds {fmt(self.tokens, 'tokens')}" + (" (logged)" if self.tokens_logged else "")
        lines = [
            f"Bytes per token: {fmt(per_token, 'count')} at max_model_len {fmt(max_len, 'count')} ({self.source})",
            held,
            f"Full {fmt(max_len, 'count')}-token contexts: {fmt(self.full_contexts, 'x', down=True)}"
            + ("" if self.holds_one_context else " (below one request at max_model_len and the block vLLM 0.29.0 and later hold back: vLLM does not start)"),
            f"One request of {fmt(max_len, 'count')} tokens starts from a pin of {fmt(self.one_context_pin_bytes, 'B')} "
            f"({fmt(self.one_context_pin_bytes, 'e9', 2, up=True)} rounded up): "
            f"vLLM 0.29.0 and later hold one block of the pool back before the check ({fmt(self.block_size, 'tokens')}, {block_source}; "
            "--block-size to change it)",
        ]
        if self.needed is not None:
            tokens_needed, least, most = self.needed
            lines += [
                f"Seats x typical context: {fmt(tokens_needed, 'tokens')}, a pin of {fmt(least, 'e9', 2, up=True)} if no part of a request's cost is fixed",
                f"  every seat pays a request's fixed cost however short its context; the catalog does not split this cost, so up to "
                f"{fmt(most, 'e9', 2, up=True)} (each seat charged one full context)",
            ]
        return lines
