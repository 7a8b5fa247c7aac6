"""Figures derived from the catalog's observations: held memory, the overhead remainder, the
drafter per rank, the gate's rows, and bytes per token. Nothing derived is stored twice."""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from calc.catalog.entries import Box, Deployment, KvReport, Model, Settings, Start
from calc.catalog.model import Catalog
from calc.catalog.spec import Figure
from calc.engine import kv
from calc.engine.gate import Amount, GateRow, Request
from calc.record import record, replace
from calc.units import InputError

# A box's total, best first: what the engine sees, what the driver prints, what the vendor specifies.
BOX_TOTALS = (
    ("total_memory", "engine", "the total the engine sees"),
    ("reported_total", "driver", "the driver's total (nvidia-smi); CUDA's total is a little lower, so a fraction check on it errs strict"),
    ("spec_memory", "specification", "the specification's capacity; the engine sees less"),
)


class BoxTotal(NamedTuple):
    figure: Figure
    kind: str  # engine, driver or specification
    what: str


def box_total(box: Box) -> BoxTotal:
    """The best total the catalog has for a box, and what kind of total it is."""
    figures = (box.get("total_memory"), box.get("reported_total"), box.get("spec_memory"))  # BOX_TOTALS' keys, in order
    for figure, (_, kind, what) in zip(figures, BOX_TOTALS, strict=True):
        if figure is not None:
            return BoxTotal(figure, kind, what)
    raise InputError(f"boxes.yaml: {box['id']}: found no total_memory, reported_total or spec_memory, expected one")


def box_free(box: Box) -> Figure | None:
    """The reading the gate needs and a specification cannot give: MemAvailable on the idle box
    (unified memory) or free memory on the card at start (discrete)."""
    return box.get("idle_available") or box.get("free_at_start")


def amount(figure: Figure) -> Amount:
    return Amount(figure.size, figure.provenance, figure.entry)


def settings(deployment: Deployment, start: Start | None = None) -> Settings:
    """The deployment's settings with a start's own settings over them."""
    return {**deployment["settings"], **(start.get("settings", {}) if start else {})}


def start_settings(catalog: Catalog, deployment: Deployment, start: Start | None = None) -> Settings:
    """What a start ran with, for the gate: its settings over the deployment's. A prefill budget
    or seat count the catalog does not record is taken at the calibration, where the gate adds
    nothing for it (never as zero); max_model_len has no such stand-in and must be recorded."""
    s = settings(deployment, start)
    if "max_model_len" not in s:
        raise InputError(f"starts.yaml: {deployment['id']}: settings.max_model_len: found nothing, expected the deployment's --max-model-len")
    calibration = catalog.policy["gate"]["calibration"]
    return {**s, "prefill_budget": s.get("prefill_budget", calibration["prefill_budget"].count), "seats": s.get("seats", calibration["seats"].count)}


def held(start: Start) -> Amount:
    """What the rank holds: MemAvailable before the start minus after it."""
    before, after = start["available_before"], start["available_after"]
    return Amount(before.size - after.size, f"available before - after, {after.provenance}", after.entry)


def measured_start(deployment: Deployment) -> Start | None:
    """The latest start with both a weights log line and MemAvailable before and after."""
    found = [s for s in deployment["starts"] if {"weights_loaded", "available_before", "available_after"} <= s.keys()]
    return found[-1] if found else None


def overhead(start: Start) -> Amount:
    """A remainder, not a measurement of each part: held - weights - KV pool."""
    value = held(start).bytes - start["weights_loaded"].size - start["kv_pin"]
    gen = start["weights_loaded"].generation
    return Amount(value, f"remainder: held - weights - KV pool, gen {gen}", start["weights_loaded"].entry)


def drafter_per_rank(model: Model) -> Amount | None:
    drafter = model.get("drafter")
    if not drafter:
        return None
    weights = drafter["weights"]
    ranks = weights.extra.get("ranks", 1)
    split = f", both ranks' figure / {ranks}" if ranks > 1 else ""
    return Amount(weights.size // ranks, f"{weights.kind}{split}", weights.entry)


def gate_row(catalog: Catalog, deployment_id: str) -> GateRow:
    """The gate's current row for a deployment: measured weights and overhead where a start
    measured them, shard headers otherwise; every constant from the catalog."""
    deployment = catalog.deployments[deployment_id]
    model = catalog.models[deployment["model"]]
    policy = catalog.policy["gate"]
    start = measured_start(deployment)
    if start is not None:
        weights = amount(start["weights_loaded"])
        over = overhead(start)
    else:
        if "weights" not in model:
            raise InputError(f"{deployment_id}: no measured start and no weights for {model['id']} in models.yaml")
        weights = amount(model["weights"])
        over = None  # a remainder needs a measured start; the gate says so rather than guess
    constants = model.get("gate", {})
    return GateRow(
        weights=weights,
        overhead=over,
        headroom=amount(policy["headroom"]),
        calibration_prefill=policy["calibration"]["prefill_budget"].count,
        calibration_seats=policy["calibration"]["seats"].count,
        drafter=drafter_per_rank(model),
        prefill_bytes_per_token=amount(constants["prefill_bytes_per_token"]) if "prefill_bytes_per_token" in constants else None,
        seat_bytes=amount(constants["seat_bytes"]) if "seat_bytes" in constants else None,
    )


def gate_row_of_start(catalog: Catalog, deployment_id: str, start: Start) -> GateRow:
    """The row the gate held when a start was admitted (a pre-measurement row, say)."""
    current = gate_row(catalog, deployment_id)
    recorded = start["gate_row"]
    return GateRow(
        weights=amount(recorded["weights"]),
        overhead=amount(recorded["overhead"]),
        headroom=current.headroom,
        calibration_prefill=current.calibration_prefill,
        calibration_seats=current.calibration_seats,
        drafter=current.drafter,
    )


def request_of(catalog: Catalog, deployment: Deployment, start: Start, drafter: bool = False) -> Request:
    s = start_settings(catalog, deployment, start)
    return Request(start["kv_pin"], drafter, s["prefill_budget"], s["seats"])


def start_by_generation(deployment: Deployment, generation: int) -> Start:
    for start in deployment["starts"]:
        if start.get("generation") == generation:
            return start.copy()
    raise KeyError(f"{deployment['id']}: no start with generation {generation}")


# --- bytes per token ------------------------------------------------------------------------


@record
class KvReading:
    """Bytes per token for one model, engine, KV type and configuration."""

    model: str
    engine: str
    kv_dtype: str
    label: str
    bytes_per_token: int | Fraction  # whole bytes (kv.whole_bytes), the figure the pages print
    kind: str
    provenance: str
    readings: tuple[tuple[int, int], ...] = ()  # (pool, tokens) pairs behind it
    max_model_len: int | None = None
    tp: int | None = None
    speculative_tokens: int | None = None
    block_size: int = kv.DEFAULT_BLOCK_SIZE  # the block vLLM's one-request check holds back from 0.29.0
    block_source: str = "vLLM's default block"

    def tokens_at(self, pool: int) -> tuple[int, bool]:
        """Whole tokens a pool of this size holds, and whether that figure was logged rather than derived."""
        logged = [t for p, t in self.readings if p == pool]
        if logged:
            return int(logged[-1]), True
        return kv.tokens_for_pool(pool, self.bytes_per_token), False


def _key(deployment: Deployment, start: Start) -> tuple[tuple[str, object], ...]:
    s = settings(deployment, start)
    return tuple(sorted(s.items()))


def kv_readings(catalog: Catalog, model: str | None = None) -> list[KvReading]:
    """Every bytes-per-token figure (of `model` alone, when given): our starts (pooled per
    configuration), then reports."""
    out: list[KvReading] = []
    for deployment in catalog.deployments.values():
        if model is not None and deployment["model"] != model:
            continue  # each reading's block size may take vLLM's layout of its model: only the ones asked for
        groups: dict[tuple[tuple[str, object], ...], list[Start]] = {}
        for start in deployment["starts"]:
            if "kv_tokens" in start:
                groups.setdefault(_key(deployment, start), []).append(start)
        for starts in groups.values():
            s = settings(deployment, starts[0])
            pairs = tuple((st["kv_pin"], st["kv_tokens"].count) for st in starts)
            gens = sorted({st["generation"] for st in starts if st.get("generation")})
            dates = sorted({st["date"] for st in starts if st.get("date")})
            where = ("gen " + "/".join(map(str, gens))) if gens else ""
            provenance = ", ".join(p for p in ("measured", where, "/".join(dates)) if p)
            spec = s.get("speculative_tokens")
            label = f"{spec} speculative tokens" if spec else ""
            block, block_source = block_size(catalog.models[deployment["model"]], s.get("kv_dtype", ""), deployment["tp"], s.get("block_size"))
            out.append(
                KvReading(
                    deployment["model"], deployment.get("engine", ""), s.get("kv_dtype", ""), label,
                    kv.whole_bytes(kv.pooled_bytes_per_token(list(pairs))), "measured", provenance, pairs,
                    s.get("max_model_len"), deployment["tp"], spec, block, block_source,
                )
            )  # fmt: skip
    for entry in catalog.models.values():
        if model is not None and entry["id"] != model:
            continue
        for report in entry.get("kv_reports", []):
            block, block_source = block_size(entry, report["kv_dtype"], report.get("tp") or 1, report.get("block_size"), "the report's")
            out.append(replace(_report(entry["id"], report), block_size=block, block_source=block_source))
    return out


def block_size(model: Model, kv_dtype: str, tp: int, given: int | None, whose: str = "the start's") -> tuple[int, str]:
    """The block of a model's pool, in tokens, and where it comes from: the start's own setting,
    a report of the same model and KV type that names one, the layout vLLM gives the catalog's
    architecture (calc/engine/kvlayout.py), else vLLM's default of 16."""
    if given:
        return given, f"{whose} block size"
    for report in model.get("kv_reports", []):
        if report.get("block_size") and report["kv_dtype"] == kv_dtype:
            return report["block_size"], f"the block size of {model.get('name', model['id'])}'s {report.get('engine', 'published')} report"
    if model.get("architecture"):
        from calc.engine import hfconfig, kvlayout

        try:
            shape = hfconfig.from_architecture(model["architecture"], model["id"])
            dtype = kv_dtype if kv_dtype in kvlayout.KV_DTYPES else "auto"
            lay = kvlayout.request(shape, kvlayout.Settings(tp=tp, kv_cache_dtype=dtype), 1, kvlayout.version(None)).layout
            return lay.min_block_size, "the block vLLM's layout gives the catalog's architecture (modeled)"
        except ValueError:
            pass
    return kv.DEFAULT_BLOCK_SIZE, "vLLM's default block (no block size known for this model)"


def _report(model_id: str, report: KvReport) -> KvReading:
    pairs: tuple[tuple[int, int], ...]
    per_token: int | Fraction
    if "bytes_per_token" in report:
        figure = report["bytes_per_token"]
        per_token, pairs = Fraction(figure.number), ()
    elif "pool" in report and "tokens" in report:
        figure = report["tokens"]
        pairs = ((report["pool"].size, report["tokens"].count),)
        per_token = kv.whole_bytes(kv.bytes_per_token(*pairs[0]))
    else:
        raise InputError(f"models.yaml: {model_id}: a kv report needs bytes_per_token, or pool and tokens")
    return KvReading(
        model_id, report.get("engine", ""), report["kv_dtype"], report.get("label", ""), per_token,
        figure.kind, figure.provenance, pairs, report.get("max_model_len"), report.get("tp"),
        report.get("speculative_tokens"),
    )  # fmt: skip


def modeled_from_architecture(model: Model, kv_dtype: str, tp: int = 1) -> int | None:
    """Bytes a token adds per rank, by vLLM's layout (calc/engine/kvlayout.py), from the catalog's
    architecture fields; None when the catalog holds none for this model."""
    arch = model.get("architecture")
    if not arch:
        return None
    from calc.engine import hfconfig, kvlayout  # the layout model, imported by the one function that needs it

    shape = hfconfig.from_architecture(arch, model["id"])
    settings = kvlayout.Settings(tp=tp, kv_cache_dtype=kv_dtype)
    return int(kvlayout.request(shape, settings, 1, kvlayout.version(None)).bytes_per_token)


# --- per-request cost over max_model_len ----------------------------------------------------


@record
class LengthFit:
    """Per-request bytes = per_token x context + fixed, fit to one pool read at several lengths."""

    model: str
    label: str
    kv_dtype: str
    pool: int
    per_token: Fraction
    fixed: Fraction
    readings: tuple[tuple[int, int], ...]  # (max_model_len, tokens)
    provenance: str

    def effective_bytes_per_token(self, max_model_len: int) -> Fraction:
        """What pool / tokens comes to at this max_model_len: per_token + fixed / max_model_len."""
        return self.per_token + self.fixed / max_model_len


def length_fits(catalog: Catalog) -> list[LengthFit]:
    """One fit per length report and per end of its pool's range (a pool read as ~24-25 GiB
    gives two fits, so the page shows how far the rounding reaches)."""
    out = []
    for model in catalog.models.values():
        for report in model.get("length_reports", []):
            pool = report["pool"]
            readings = tuple((r["max_model_len"], r["tokens"].count) for r in report["readings"])
            for size in pool.sizes:
                points = [(length, kv.per_request_bytes(size, tokens, length)) for length, tokens in readings]
                per_token, fixed = kv.fit_per_request(points)
                out.append(LengthFit(model["id"], report.get("label", ""), report["kv_dtype"], size, per_token, fixed, readings, pool.provenance))
    return out
