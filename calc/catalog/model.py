"""The catalog built from raw file contents: each file checked against its spec, entries by id,
cross-references and the figures' context (a start's date and generation) resolved."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypeVar, cast

from calc.catalog.entries import Box, Deployment, Files, FractionPlan, Incident, Model, Plan, Policy, Start, Trace
from calc.catalog.spec import _MISSING, FILES, SPEC, CatalogError, Figure, Found, _check
from calc.record import field_names, record, replace

_Entry = TypeVar("_Entry", Box, Model, Deployment, Incident, Trace, Plan, FractionPlan)


@record
class Catalog:
    """The validated catalog: entries by id, figures as `Figure`."""

    boxes: dict[str, Box]
    models: dict[str, Model]
    deployments: dict[str, Deployment]
    policy: Policy
    incidents: dict[str, Incident]
    traces: dict[str, Trace]
    plans: dict[str, Plan]
    fraction_plans: dict[str, FractionPlan]

    def __repr__(self) -> str:
        """What it holds, counted: its full contents would run to hundreds of kB in a traceback
        or in a log line that prints it (the page templates' debug output does)."""
        return "Catalog(" + ", ".join(f"{len(getattr(self, f))} {f}" for f in field_names(self) if f != "policy") + ")"


CHOICES_SHOWN = 8  # box ids an error offers once all of them no longer fit its one line


def box_choices(ids: Iterable[str], typed: str | None = "") -> str:
    """The box ids an error offers for a name it did not find: all of them while they fit a short
    line; past that, those that share a word with what was typed (or the first), and how many
    catalog/boxes.yaml holds, so that the error stays one readable line as the catalog grows. A word
    of three characters or more also finds the ids with a word it begins ("mi300": amd-mi300x)."""
    every = list(ids)
    if len(", ".join(every)) <= 240:
        return ", ".join(every)
    words = {w for w in re.split(r"[^a-z0-9]+", (typed or "").lower()) if w}
    near = [i for i in every if words & set(i.split("-"))]
    near += [i for i in every if i not in near and any(len(w) >= 3 and part.startswith(w) for w in words for part in i.split("-"))]
    return f"{', '.join((near or every)[:CHOICES_SHOWN])} or another of the {len(every)} boxes of catalog/boxes.yaml"


def _by_id(file: str, section: str, items: list[_Entry]) -> dict[str, _Entry]:
    out: dict[str, _Entry] = {}
    for i, item in enumerate(items):
        if item["id"] in out:
            raise CatalogError(file, f"{section}[{i}].id", item["id"], "an id not used before in this file")
        out[item["id"]] = item
    return out


def _trace_times(traces: list[Trace]) -> None:
    """A trace's polls run forward in time, and its kernel-init window starts and ends on polls."""
    for i, trace in enumerate(traces):
        times = [sample["t"] for sample in trace["samples"]]
        for j in range(1, len(times)):
            if times[j] <= times[j - 1]:
                raise CatalogError("traces.yaml", f"traces[{i}].samples[{j}].t", times[j], f"a time after the poll before it ({times[j - 1]})")
        window = trace.get("kernel_init")
        if window is not None:
            for key in ("from_t", "to_t"):
                if window[key] not in times:
                    raise CatalogError(
                        "traces.yaml", f"traces[{i}].kernel_init.{key}", window[key], f"the time of one of the trace's polls ({', '.join(map(str, times))})"
                    )
            if window["to_t"] <= window["from_t"]:
                raise CatalogError("traces.yaml", f"traces[{i}].kernel_init.to_t", window["to_t"], f"a time after from_t ({window['from_t']})")


def _lengths(models: list[Model]) -> None:
    """A length report is fit over max_model_len: it needs readings at two different lengths."""
    for i, model in enumerate(models):
        for j, report in enumerate(model.get("length_reports", [])):
            lengths = [r["max_model_len"] for r in report["readings"]]
            if len(set(lengths)) < 2:
                raise CatalogError(
                    "models.yaml",
                    f"models[{i}].length_reports[{j}].readings",
                    Found(f"{len(lengths)} readings, all at max_model_len {lengths[0]}"),
                    "readings at two or more different max_model_len",
                )


def _refs(file: str, section: str, items: Iterable[Mapping[str, object]], targets: dict[str, Mapping[str, object]]) -> None:
    for i, item in enumerate(items):
        for key, target in (("model", "models"), ("box", "boxes")):
            if key in item and item[key] not in targets[target]:
                known = ", ".join(targets[target])
                raise CatalogError(file, f"{section}[{i}].{key}", item[key], f"the id of an entry in {target}.yaml ({known})")
        residents = item.get("residents", [])
        for j, resident in enumerate(residents if isinstance(residents, list) else []):
            if resident["model"] not in targets["models"]:
                known = ", ".join(targets["models"])
                raise CatalogError(file, f"{section}[{i}].residents[{j}].model", resident["model"], f"the id of an entry in models.yaml ({known})")


def _with_context(start: Start) -> Start:
    """A start's figures carry the start's date and generation unless they say otherwise."""
    date, generation = start.get("date"), start.get("generation")
    day = date if isinstance(date, str) else None
    return cast(
        Start,
        {
            key: _with_context_figure(v, day, generation)
            if isinstance(v, Figure)
            else {k: _with_context_figure(f, day, generation) for k, f in v.items()}
            if key == "gate_row" and isinstance(v, dict)
            else v
            for key, v in start.items()
        },
    )


def _with_context_figure(figure: Figure, date: str | None, generation: object) -> Figure:
    return replace(figure, date=figure.date or date, generation=figure.generation or (str(generation) if generation else None))


def build(raw: dict[str, object]) -> Catalog:
    """Validate raw file contents ({"boxes": ..., "models": ...}) into a Catalog."""
    checked: dict[str, object] = {}
    for name in FILES:
        file = f"{name}.yaml"
        if name not in raw:
            raise CatalogError(file, "(file)", _MISSING, f"catalog/{file}")
        checked[name] = _check(SPEC[name], raw[name], file, "")
    data = cast(Files, checked)  # each file as its spec checked it, which tests/test_typed_entries.py keeps equal to Files
    _lengths(data["models"]["models"])
    boxes = _by_id("boxes.yaml", "boxes", data["boxes"]["boxes"])
    for i, box in enumerate(boxes.values()):
        if not {"total_memory", "reported_total", "spec_memory"} & box.keys():
            raise CatalogError("boxes.yaml", f"boxes[{i}].total_memory", _MISSING, "a total: total_memory, reported_total or spec_memory")
    models = _by_id("models.yaml", "models", data["models"]["models"])
    targets: dict[str, Mapping[str, object]] = {"boxes": boxes, "models": models}
    for deployment in data["starts"]["deployments"]:
        deployment["starts"] = [_with_context(start) for start in deployment["starts"]]
    deployments = _by_id("starts.yaml", "deployments", data["starts"]["deployments"])
    incidents = _by_id("incidents.yaml", "incidents", data["incidents"]["incidents"])
    traces = _by_id("traces.yaml", "traces", data["traces"]["traces"])
    _trace_times(data["traces"]["traces"])
    plans = _by_id("plans.yaml", "plans", data["plans"]["plans"])
    fraction_plans = _by_id("plans.yaml", "fraction_plans", data["plans"]["fraction_plans"])
    for file, section, items in (
        ("starts.yaml", "deployments", deployments),
        ("incidents.yaml", "incidents", incidents),
        ("traces.yaml", "traces", traces),
        ("plans.yaml", "plans", plans),
        ("plans.yaml", "fraction_plans", fraction_plans),
    ):
        _refs(file, section, items.values(), targets)
    return Catalog(boxes, models, deployments, data["policy"], incidents, traces, plans, fraction_plans)
