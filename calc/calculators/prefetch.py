"""vLLM's auto-prefetch: whether a checkpoint is read ahead into page cache, given MemAvailable."""

from __future__ import annotations

from collections.abc import Mapping

from calc import prefetch
from calc.calculators.form import Defaults, Field, Figures, Output, badge, default_note, dl, esc, invalid, size_examples, size_text, take
from calc.catalog import Catalog
from calc.units import fmt, parse_size

NAME = "prefetch"
TITLE = "vLLM's auto-prefetch"

LABELS = {"checkpoint": "Checkpoint size", "available": "MemAvailable when loading starts"}


def fields(catalog: Catalog) -> list[Field]:
    return [
        Field("checkpoint", LABELS["checkpoint"], "text", "Bytes: " + size_examples()),
        Field("available", LABELS["available"], "text", "After the kernel-init allocations, on GB10"),
    ]


def _prefetch_trace(catalog: Catalog) -> dict | None:
    return next((t for t in catalog.traces.values() if "checkpoint" in t), None)


def defaults(catalog: Catalog) -> Defaults:
    trace = _prefetch_trace(catalog)
    if trace is None:
        return Defaults({"checkpoint": "", "available": ""}, {"checkpoint": "Default empty", "available": "Default empty"})
    sample = trace["samples"][-1]
    checkpoint = trace["checkpoint"]
    values = {"checkpoint": size_text(checkpoint.value, "GB"), "available": size_text(sample["available"], "MiB")}
    event = f" ({sample['event']})" if sample.get("event") else ""
    sources = {
        "checkpoint": default_note(checkpoint, values["checkpoint"]),
        "available": f"Default {esc(values['available'])}: the last poll of the trace &ldquo;{esc(trace['title'])}&rdquo; at T+{esc(fmt(sample['t'], 's', 0))}{esc(event)} ({esc(trace['kind'])})",
    }
    return Defaults(values, sources)


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    errors: dict[str, str] = {}
    checkpoint = take(errors, "checkpoint", lambda: parse_size(str(raw.get("checkpoint", "")), LABELS["checkpoint"]))
    available = take(errors, "available", lambda: parse_size(str(raw.get("available", "")), LABELS["available"]))
    if errors:
        return invalid("prefetch", errors, LABELS, names)
    share_figure = catalog.policy["vllm"]["prefetch_fraction"]
    share = share_figure.value
    enabled = prefetch.prefetch_enabled(checkpoint, available, share)
    largest = prefetch.largest_prefetched(available, share)
    fig = Figures()
    state = fig("enabled", "prefetched" if enabled else "not prefetched")
    rows = [
        (
            "Rule",
            f"prefetch only when the checkpoint is at most {fig('share', fmt(share, '%', 0))} of available ({esc(share_figure.source or share_figure.provenance)})",
        ),
        ("Checkpoint", fig("checkpoint", fmt(checkpoint, "GB", 1)) + f" ({fig('checkpoint_gib', fmt(checkpoint, 'GiB'))})"),
        ("Largest checkpoint still prefetched", fig("largest", fmt(largest, "GB", 1)) + f" ({fig('largest_gib', fmt(largest, 'GiB'))})"),
        ("Auto-prefetch", badge(enabled, "on", "off") + (" the checkpoint is read ahead into page cache" if enabled else " the slow read path")),
    ]
    verdict = f"Checkpoint {fmt(checkpoint, 'GB', 1)} against {fmt(available, 'GiB')} available: {state}."
    return Output("prefetch", True, {}, {"prefetch-verdict": verdict, "prefetch-result": dl(rows)}, fig.shown, names)
