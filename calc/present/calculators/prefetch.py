"""vLLM's auto-prefetch: whether a checkpoint is read ahead into page cache, given MemAvailable."""

from __future__ import annotations

from collections.abc import Mapping

from calc.answers import prefetch
from calc.catalog.entries import Trace
from calc.catalog.model import Catalog
from calc.present import charts
from calc.present.calculators.form import Defaults, Field, Figures, Output, badge, default_note, dl, esc, form_fields, form_labels, invalid, read, size_text
from calc.present.chart import figure_html
from calc.units import fmt

NAME = "prefetch"
TITLE = "vLLM's auto-prefetch"

LABELS = form_labels(NAME)
FILESYSTEMS = (("nfs", "NFS"), ("nfs4", "NFS4"), ("lustre", "Lustre"), ("local", "a local disk (EXT4, XFS, ...)"))


def fields(catalog: Catalog) -> list[Field]:
    return form_fields(NAME, {"filesystem": tuple((v, t, False) for v, t in FILESYSTEMS)})


def _prefetch_trace(catalog: Catalog) -> Trace | None:
    return next((t for t in catalog.traces.values() if "checkpoint" in t), None)


def defaults(catalog: Catalog) -> Defaults:
    trace = _prefetch_trace(catalog)
    if trace is None:
        return Defaults(
            {"checkpoint": "", "available": "", "filesystem": "nfs"}, {"checkpoint": "Default empty", "available": "Default empty", "filesystem": "Default NFS"}
        )
    sample = trace["samples"][-1]
    checkpoint = trace["checkpoint"]
    values = {"checkpoint": size_text(checkpoint.size, "GB"), "available": size_text(sample["available"], "MiB"), "filesystem": "nfs"}
    event = f" ({sample['event']})" if sample.get("event") else ""
    sources = {
        "checkpoint": default_note(checkpoint, values["checkpoint"]),
        "filesystem": "Default NFS: the report does not say where the checkpoint was; on a network filesystem the size rule decides, a local disk never auto-prefetches",
        "available": f"Default {esc(values['available'])}: the last poll of the trace &ldquo;{esc(trace['title'])}&rdquo; at T+{esc(fmt(sample['t'], 's', 0))}{esc(event)} ({esc(trace['kind'])})",
    }
    return Defaults(values, sources)


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    errors: dict[str, str] = {}
    checkpoint = read(NAME, raw, errors, "checkpoint", LABELS)
    available = read(NAME, raw, errors, "available", LABELS)
    filesystem = str(raw.get("filesystem", "")).strip()
    if filesystem not in dict(FILESYSTEMS):
        errors["filesystem"] = f"{LABELS['filesystem']}: found {filesystem or 'nothing'!r}, expected one of {', '.join(dict(FILESYSTEMS))}"
    if errors:
        return invalid("prefetch", errors, LABELS, names)
    share_figure = catalog.policy["vllm"]["prefetch_fraction"]
    share = share_figure.fraction
    enabled, why = prefetch.auto_prefetch(checkpoint, available, share, filesystem)
    fits = prefetch.prefetch_enabled(checkpoint, available, share)
    largest = prefetch.largest_prefetched(available, share)
    fig = Figures()
    state = fig("enabled", "prefetched" if enabled else "not prefetched")
    rows = [
        (
            "Rule",
            f"prefetch only from NFS, NFS4 or Lustre, and only when the checkpoint is at most {fig('share', fmt(share, '%', 0))} of available "
            f"({esc(share_figure.source or share_figure.provenance)})",
        ),
        ("Size rule", badge(fits, "within", "above") + f" {esc(fmt(checkpoint, 'GB', 1))} against {esc(fmt(share, '%', 0))} of {esc(fmt(available, 'GiB'))}"),
        ("Checkpoint", fig("checkpoint", fmt(checkpoint, "GB", 1)) + f" ({fig('checkpoint_gib', fmt(checkpoint, 'GiB'))})"),
        (
            "Largest checkpoint within the size rule",
            fig("largest", fmt(largest, "GB", 1, down=True)) + f" ({fig('largest_gib', fmt(largest, 'GiB', down=True))}, rounded down)",
        ),
        ("Auto-prefetch", badge(enabled, "on", "off") + (" the checkpoint is read ahead into page cache" if enabled else f" {esc(why)}")),
    ]
    verdict = f"Checkpoint {fmt(checkpoint, 'GB', 1)} against {fmt(available, 'GiB')} available, on {esc(dict(FILESYSTEMS)[filesystem])}: {state}."
    drawn = figure_html(charts.prefetch_bar(checkpoint, available, share))
    return Output("prefetch", True, {}, {"prefetch-verdict": verdict, "prefetch-result": dl(rows) + drawn}, fig.shown, names)
