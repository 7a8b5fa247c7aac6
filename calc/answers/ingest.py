"""From a read startup log to what follows from it: the derived figures, the catalog's figures
for the same model, and a catalog start entry. Pure functions over a `LogReading`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from calc.catalog.model import Catalog
from calc.engine import derive
from calc.logs.logread import Derived, Found, LogReading
from calc.units import InputError, fmt

_DRAFTERLESS = ("ngram", "suffix")


@dataclass(frozen=True)
class Derivation:
    name: str
    value: str
    how: str


def derived(reading: LogReading) -> list[Derivation]:
    """What the log's figures give beyond themselves, each with how."""
    out: list[Derivation] = []
    per_token, max_len, tokens = reading.bytes_per_token, reading.max_model_len, reading.kv_tokens
    if per_token is not None:
        spread = "" if per_token.low == per_token.high else f" ({fmt(per_token.low, 'count')} to {fmt(per_token.high, 'count')})"
        out.append(Derivation("bytes per token per rank", f"{fmt(per_token.value, 'count')} B{spread}", per_token.how))
    pool = reading.kv_cache_memory_bytes or reading.available_kv_bytes
    conc = reading.max_concurrency
    if max_len is not None and pool is not None and pool.value > 0 and conc is not None and conc.value > 0:
        low, high = Fraction(pool.low) / (Fraction(conc.value) + conc.half), Fraction(pool.high) / (Fraction(conc.value) - conc.half)
        out.append(
            Derivation(
                f"one request of {fmt(max_len.value, 'count')} tokens",
                f"{fmt(Fraction(pool.value) / Fraction(conc.value), 'GiB')} ({fmt(low, 'GiB')} to {fmt(high, 'GiB')})",
                f"the pool ({f'line {pool.line_no}' if pool.line_no else pool.line_text}) / the concurrency (line {conc.line_no}): "
                "what vLLM charges one full-length request, "
                "any context-independent part included",
            )
        )
    elif max_len is not None and per_token is not None:
        out.append(
            Derivation(
                f"one request of {fmt(max_len.value, 'count')} tokens",
                fmt(per_token.value * max_len.value, "GiB"),
                f"bytes per token x max_model_len (line {max_len.line_no})",
            )
        )
    concurrency = reading.max_concurrency
    if max_len is not None and (concurrency is not None or tokens is not None):
        label = f"full {fmt(max_len.value, 'count')}-token contexts"
        ratio = Fraction(tokens.value, max_len.value) if tokens is not None and max_len.value else None
        if concurrency is not None:
            how = f"vLLM's concurrency line (line {concurrency.line_no})"
            if ratio is not None and abs(ratio - Fraction(concurrency.value)) > concurrency.half + Fraction(1, 100):
                how += (
                    f"; tokens / max_model_len is {fmt(ratio, 'x')}: the two count differently here "
                    "(hybrid or sliding-window groups, or a request's whole last block)"
                )
            out.append(Derivation(label, concurrency.printed or str(concurrency.value), how))
        elif not (ratio is not None and ratio < 1 and reading.error is None and (reading.engine is None or reading.engine.value == "vllm")):
            # (vLLM prints its token count only once one full request fits: a ratio under one counts per KV group, see the notes)
            assert tokens is not None and ratio is not None  # no concurrency line: the tokens are what the branch was taken for
            out.append(
                Derivation(
                    label, fmt(ratio, "x"), f"{fmt(tokens.value, 'count')} tokens / {fmt(max_len.value, 'count')} (lines {tokens.line_no}, {max_len.line_no})"
                )
            )
    out.append(Derivation("weights include a drafter", *drafter_verdict(reading)))
    if reading.error is not None:
        out.append(Derivation("the start failed", reading.error.value, failure(reading)))
    return out


def settings_shown(reading: LogReading) -> int | None:
    """The line of a settings dump that names speculative decoding whether on or off: the engine's
    config line (speculative_config=None), SGLang's ServerArgs (speculative_algorithm=None) or
    vLLM's argument dump, which lists every setting that is not a default."""
    lines = [
        f.line_no
        for f in reading.figures().values()
        if isinstance(f, Found) and f.line_no and ("speculative" in f.line_text or "non-default args" in f.line_text)
    ]
    return min(lines) if lines else None


def drafter_verdict(reading: LogReading) -> tuple[str, str]:
    spec, loading = reading.speculative, reading.model_loading_bytes
    if spec is None and reading.drafter_loaded is None:
        at = settings_shown(reading)
        if at is None:  # a fragment: the lines that would name a drafter are not in it
            return "unknown", "the log holds neither its argument dump nor the engine's config line, where speculative decoding would be named"
        return "no", f"the settings the log prints (line {at}) name no speculative decoding"
    method = (spec.value.get("method") if spec else None) or "a drafter"
    if spec is not None and str(method).lower() in _DRAFTERLESS:
        return "no", f"{method} speculation loads no drafter weights (line {spec.line_no})"
    if loading is None:
        return "unknown", f"speculative decoding with {method}, but the log has no weights line"
    if reading.engine is not None and reading.engine.value == "sglang":
        if "+" in (loading.printed or ""):
            return (
                "yes",
                f"SGLang printed the target's and the drafter's weights apart ({loading.printed}, from line {loading.line_no}); the figure read is their sum",
            )
        return "no", f"SGLang loads the {method} drafter apart; 'Load weight end' (line {loading.line_no}) is the target's alone"
    if reading.era is not None and reading.era.value == "v1":
        return "yes", f"V1 loads the {method} drafter inside the measured 'Model loading took' step (line {loading.line_no}); do not add it again"
    return "unknown", f"speculative decoding with {method}; this build's weights line may or may not hold the drafter"


def failure(reading: LogReading) -> str:
    e = reading.error
    assert e is not None, "failure() is asked only of a reading that failed"
    if e.value == "free_memory":
        free, total, frac = reading.free_memory_bytes, reading.total_memory_bytes, reading.gpu_memory_utilization
        budget, external = reading.engine_budget_bytes, reading.external_weights_bytes
        if reading.free_after_profile_bytes is not None:
            before = f" from {fmt(free.value, 'GiB')}" if free is not None else ""
            return (
                f"free memory grew{before} to {fmt(reading.free_after_profile_bytes.value, 'GiB')} while vLLM profiled (line {e.line_no}): "
                "another process released memory meanwhile"
            )
        if budget is not None and free is not None and total is not None and frac is not None:
            return (
                f"free {fmt(free.value, 'GiB')} of {fmt(total.value, 'GiB')} at start is less than the engine's budget {fmt(budget.value, 'GiB')}, "
                f"{frac.printed or frac.value} x total less the weights another process holds (line {e.line_no})"
            )
        if external is not None and free is None and total is not None and frac is not None:
            return (
                f"the weights another process holds, {fmt(external.value, 'GiB')} of {fmt(total.value, 'GiB')}, are more than "
                f"{frac.printed or frac.value} x total (line {e.line_no}): nothing is left for the engine"
            )
        if free is not None and total is not None and frac is not None:
            return (
                f"free {fmt(free.value, 'GiB')} of {fmt(total.value, 'GiB')} at start is less than {frac.printed or frac.value} x total "
                f"(line {e.line_no}); the largest fraction that passes is {fmt(Fraction(free.low, total.high), 'fraction', 4, down=True)}"
            )
        return f"the free-memory check (line {e.line_no})"
    if e.value == "no_kv_memory":
        return f"no memory left for the KV cache blocks (line {e.line_no})"
    est = reading.estimated_max_model_len
    tail = f"; the engine estimates {fmt(est.value, 'count')} tokens fit (line {est.line_no})" if est is not None else ""
    return f"one request at max_model_len does not fit the pool (line {e.line_no}){tail}"


# --- the catalog -----------------------------------------------------------------------------


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def catalog_model(catalog: Catalog, reading: LogReading) -> str | None:
    """The catalog model the log serves, matched on its name; None if the catalog lacks it."""
    if reading.model is None:
        return None
    name = _norm(str(reading.model.value).rstrip("/").rsplit("/", 1)[-1])
    best, best_len = None, 0
    for model_id, model in catalog.models.items():
        if model.get("illustrative"):
            continue
        for key in (model_id, model["name"].split()[0]):
            k = _norm(key)
            if len(k) >= 6 and (k in name or name in k) and len(k) > best_len:
                best, best_len = model_id, len(k)
    return best


def compare(catalog: Catalog, reading: LogReading, model_id: str | None = None) -> list[str]:
    """The catalog's bytes-per-token figures for the log's model (or the one named), against the log's."""
    model_id = model_id or catalog_model(catalog, reading)
    if model_id is None:
        return []
    ours = reading.bytes_per_token
    lines = []
    for r in derive.kv_readings(catalog):
        if r.model != model_id:
            continue
        where = ", ".join(p for p in (r.kv_dtype, r.label, f"TP={r.tp}" if r.tp else "", r.provenance) if p)
        text = f"{model_id}: {fmt(r.bytes_per_token, 'count')} B/token ({where})"
        if ours is not None:
            text += f"; this log {fmt(ours.value, 'count')}, {fmt(ours.value / r.bytes_per_token, 'x')} of it"
        lines.append(text)
    return lines


# --- a catalog start entry -------------------------------------------------------------------


def _q(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _size_text(found: Found) -> str:
    if not found.half:
        return f"{found.value} B"
    unit = "GiB" if "GiB" in (found.printed or "") or "GB" in (found.printed or "") else "MiB"
    number = (found.printed or "").split()[0]
    if "+" in (found.printed or ""):  # SGLang's K + V: the sum, at the printed precision
        digits = len(number.split(".")[1]) if "." in number else 0
        return fmt(found.value, unit, digits).replace(",", "")
    return f"{number} {unit}"


def start_entry(reading: LogReading, *, model_id: str, box: str, boxes: int, source: str, tp: int | None = None, deployment_id: str | None = None) -> str:
    """A deployment with one start, as YAML text to append to catalog/starts.yaml's `deployments`."""
    pool = reading.kv_cache_memory_bytes or reading.available_kv_bytes
    if pool is None or pool.value <= 0:
        raise InputError("--yaml: the log holds no KV pool of zero or more bytes, and a catalog start needs one (its kv_pin)")
    engine = reading.engine.value if reading.engine else "vllm"
    engine_name = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
    build = f"{engine_name} {reading.engine_version.value}" if reading.engine_version else engine_name
    if tp is None:
        tp = reading.tensor_parallel_size.value if reading.tensor_parallel_size else None
    tp_text = str(tp) if tp is not None else "1  # not in the log: give --tensor-parallel-size"
    date = reading.date.value if reading.date else None
    slug = re.sub(r"[^a-z0-9.]+", "-", str(reading.model.value if reading.model else model_id).lower().rsplit("/", 1)[-1]).strip("-.")
    ident = deployment_id or f"{slug or model_id}-log"
    out = [f"  # {note}" for note in reading.notes if note.startswith("unreadable, ")]
    out += [
        f"  - id: {ident}",
        f"    name: {_q(f'{reading.model.value if reading.model else model_id}, read from a startup log')}",
        f"    model: {model_id}",
        f"    box: {box}",
        f"    boxes: {boxes}",
        f"    tp: {tp_text}",
        f"    engine: {_q(build)}",
    ]
    settings = []
    if reading.max_model_len:
        settings.append(f"      max_model_len: {reading.max_model_len.value}")
    if reading.kv_cache_dtype:
        settings.append(f"      kv_dtype: {_q(reading.kv_cache_dtype.value)}")
    if reading.block_size and not reading.block_size.derived:
        settings.append(f"      block_size: {reading.block_size.value}")
    if reading.max_num_seqs:
        settings.append(f"      seats: {reading.max_num_seqs.value}")
    if reading.max_num_batched_tokens:
        settings.append(f"      prefill_budget: {reading.max_num_batched_tokens.value}")
    if reading.speculative and reading.speculative.value.get("num_speculative_tokens"):
        settings.append(f"      speculative_tokens: {reading.speculative.value['num_speculative_tokens']}")
    out.extend(["    settings:", *settings] if settings else ["    settings: {}"])
    out.append("    starts:")
    first = True

    def line(text: str) -> None:
        nonlocal first
        out.append(("      - " if first else "        ") + text)
        first = False

    if date:
        line(f"date: {date}")
    kind_of_pool = "the pin (kv_cache_memory_bytes)" if reading.kv_cache_memory_bytes else f"the pool as printed, line {pool.line_no}"
    line(f"kv_pin: {_size_text(pool)}  # {kind_of_pool}")
    line(f"source: {_q(f'{source}, {build}')}")

    def figure(key: str, value: str, found: Found | Derived, said: str) -> None:
        line(f"{key}:")
        out.append(f"          value: {value}")
        out.append("          kind: measured")
        if found.line_no is not None:
            out.append(f"          line: {found.line_no}")
        if date:
            out.append(f"          date: {date}")
        out.append(f"          source: {_q(said)}")

    if reading.gpu_memory_utilization:
        g = reading.gpu_memory_utilization
        figure("gpu_memory_utilization", g.printed or str(float(g.value)), g, f"{engine_name} log, line {g.line_no}")
    if reading.model_loading_bytes:
        w = reading.model_loading_bytes
        figure("weights_loaded", _size_text(w), w, f"{engine_name} {_said(w)}")
    if reading.kv_tokens:
        t = reading.kv_tokens
        figure("kv_tokens", str(t.value), t, f"{engine_name} {_said(t)}")
    if reading.max_concurrency:
        c = reading.max_concurrency
        figure("concurrency", str(c.value), c, f"{engine_name} {_said(c)}")
    outcome = "failed" if reading.error else "serving"
    line(f"outcome: {outcome}")
    if reading.error:
        line(f"outcome_note: {_q(failure(reading))}")
    return "\n".join(out) + "\n"


def _said(found: Found) -> str:
    text = found.line_text.strip()
    if len(text) > 100:
        text = text[:97] + "..."
    return f'"{text}" (line {found.line_no})'
