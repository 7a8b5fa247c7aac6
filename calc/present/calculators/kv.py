"""The KV pool calculator, both ways: the tokens a pool holds and the pool a number of tokens needs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from calc.answers import report
from calc.catalog.model import Catalog
from calc.engine import derive, kv
from calc.jsontext import JsonObject
from calc.present.calculators.form import Defaults, Field, Figures, Output, dl, esc, form_fields, form_labels, invalid, pin_up, read, size_text
from calc.present.calculators.start import gated
from calc.units import fmt

NAME = "kv"
TYPED = "typed"
TITLE = "The KV pool, both ways"

LABELS = form_labels(NAME)


def kv_readings(catalog: Catalog) -> list[derive.KvReading]:
    return derive.kv_readings(catalog)


def _reading_label(catalog: Catalog, r: derive.KvReading) -> str:
    what = ", ".join(p for p in (catalog.models[r.model]["name"], r.engine, r.kv_dtype, r.label) if p)
    return f"{what}: {fmt(r.bytes_per_token, 'count')} B/token ({r.provenance})"


def fields(catalog: Catalog) -> list[Field]:
    options = [(f"r{n}", _reading_label(catalog, r), False) for n, r in enumerate(kv_readings(catalog))]
    options.append((TYPED, "typed below", False))
    return form_fields(NAME, {"reading": tuple(options)})


def defaults(catalog: Catalog) -> Defaults:
    deployment_id = gated(catalog)[0]
    base = report.defaults(catalog, deployment_id)
    reading = report.pool_reading(catalog, deployment_id, 0)
    readings = kv_readings(catalog)
    key = f"r{readings.index(reading)}" if reading in readings else TYPED
    deployment = catalog.deployments[deployment_id]
    values = {
        "reading": key,
        "bpt": "",
        "pin": size_text(base.kv_pin, "e9"),
        "tokens": fmt(base.max_model_len, "count"),
        "max_model_len": fmt(base.max_model_len, "count"),
        "seats": "",
        "typical_context": "",
    }
    sources = {
        "reading": f"Default: the measured reading of {esc(deployment['name'])}; every reading in the catalog is listed with its source",
        "bpt": "Default empty: a reading from the catalog is used",
        "pin": f"Default {esc(values['pin'])}: the pin of {esc(deployment['name'])}&rsquo;s serving start",
        "tokens": f"Default {esc(values['tokens'])}: one full context (the floor is one block more from vLLM 0.29.0)",
        "max_model_len": f"Default {esc(values['max_model_len'])}: {esc(deployment['name'])}&rsquo;s setting",
        "seats": "Default empty: not sized",
        "typical_context": "Default empty: not sized",
    }
    return Defaults(values, sources, {}, {"bpt": key != TYPED})


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    errors: dict[str, str] = {}
    key = str(raw.get("reading", "")).strip()
    readings = kv_readings(catalog)
    reading = None
    per_token: int | Fraction | None
    if key == TYPED:
        bpt = read(NAME, raw, errors, "bpt", LABELS)
        per_token, source = (Fraction(bpt) if bpt else None), "typed"
    elif re.fullmatch(r"r[0-9]+", key) and int(key[1:]) < len(readings):
        reading = readings[int(key[1:])]
        per_token, source = reading.bytes_per_token, reading.provenance
    else:
        errors["reading"] = f"{LABELS['reading']}: found {key or 'nothing'!r}, expected a reading from the list or typed"
        per_token, source = None, ""
    pin = read(NAME, raw, errors, "pin", LABELS)
    tokens = read(NAME, raw, errors, "tokens", LABELS)
    max_len = read(NAME, raw, errors, "max_model_len", LABELS)
    seats = read(NAME, raw, errors, "seats", LABELS, optional=True)
    typical = read(NAME, raw, errors, "typical_context", LABELS, optional=True)
    if errors or per_token is None:
        return invalid("kv", errors, LABELS, names)
    fig = Figures()
    if reading is not None:
        held, logged = reading.tokens_at(pin)
    else:
        held, logged = kv.tokens_for_pool(pin, per_token), False
    whole = int(held)
    contexts = kv.full_contexts(whole, max_len)
    block = reading.block_size if reading is not None else kv.DEFAULT_BLOCK_SIZE
    block_source = reading.block_source if reading is not None else "vLLM's default block"
    one = kv.holds_one_context(whole, max_len, block)
    floor = kv.one_request_pin(max_len, per_token, block)
    pin_for = kv.pool_for_tokens(tokens, per_token)
    rows = [
        ("Bytes per token per rank", f"{fig('bpt', fmt(per_token, 'count'))} B ({esc(source)})"),
        (
            f"{fig('pin', size_text(pin, 'e9'))} ({fig('pin_gib', fmt(pin, 'GiB'))}) holds",
            fig("tokens_held", fmt(held, "tokens")) + (" (logged by vLLM at this pin)" if logged else ""),
        ),
        (f"Full contexts of {fig('max_len', fmt(max_len, 'tokens'))}", fig("contexts", fmt(contexts, "count", 0, down=True)) + " at once"),
        ("Maximum concurrency, rounded down", fig("concurrency", fmt(contexts, "x", down=True))),
        ("One full context fits", fig("one_context", "yes" if one else "no") + ("" if one else " (below the floor)")),
        (
            "The floor: one full context and the block vLLM 0.29.0 and later hold back",
            f"{fig('floor', pin_up(floor))} ({fig('floor_block', fmt(block, 'tokens'))} a block, {esc(block_source)})",
        ),
        (
            f"{fig('tokens', fmt(tokens, 'tokens'))} need a pin of",
            f"{fig('pin_for_tokens', pin_up(pin_for))} ({fig('pin_for_tokens_gib', fmt(pin_for, 'GiB'))}; {fig('pin_for_tokens_b', fmt(pin_for, 'B'))})",
        ),
    ]
    if seats and typical:
        needed = kv.tokens_needed(seats, typical)
        low, high = kv.seats_pool_range(seats, typical, per_token, max_len)
        rows.append(
            (
                f"{fmt(seats, 'count')} seats &times; {fmt(typical, 'tokens')}",
                f"{fig('tokens_needed', fmt(needed, 'tokens'))}, a pin of at least {fig('pin_for_needed', pin_up(low))} if no part of a "
                f"request&rsquo;s cost is fixed, and up to {fig('pin_for_needed_most', pin_up(high))} (each seat charged one full context): "
                "every seat pays a request&rsquo;s fixed part however short its context",
            )
        )
    verdict = f"{fig('summary_tokens', fmt(held, 'tokens'))} in {size_text(pin, 'e9')}; {fmt(tokens, 'tokens')} need {pin_up(pin_for)}."
    return Output("kv", True, {}, {"kv-verdict": verdict, "kv-result": dl(rows)}, fig.shown, names)


def changed(catalog: Catalog, name: str, raw: Mapping[str, str]) -> JsonObject | None:
    """The typed bytes per token are editable only when "typed below" is chosen."""
    if name == "reading":
        return {"values": {}, "sources": {}, "hidden": {}, "disabled": {"kv-bpt": str(raw.get("reading", "")) != TYPED}}
    return None
