"""A config's start on a box with no total torch can size a pool from (a unified-memory box such as
the DGX Spark): the pool is the one pinned, and the start is gated against MemAvailable with the
overhead of a measured start of the same model, or one typed. One function for the Before-the-first-
start calculator and `calc model --gpu BOX --kv-cache-memory-bytes PIN`."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from calc.catalog.entries import Box
from calc.catalog.model import Catalog
from calc.checks import modeled
from calc.checks.modelreport import GateTerm, UnifiedGate
from calc.engine import derive, gate, hfconfig, kvlayout, offload
from calc.engine.gate import Amount
from calc.units import GiB, InputError, fmt, printed_sum, shown


def same_model(catalog: Catalog, shape: hfconfig.Shape, settings: kvlayout.Settings) -> str | None:
    """A catalog deployment whose model has the same cache layout as the config, and a measured
    start: the gate then takes that start's overhead."""
    mine = kvlayout.layer_specs(shape, settings)
    for d_id, d in catalog.deployments.items():
        arch = catalog.models[d["model"]].get("architecture")
        if not arch or d["tp"] != settings.tp or derive.measured_start(d) is None:
            continue
        try:
            if kvlayout.layer_specs(hfconfig.from_architecture(arch, d["model"]), settings) == mine:
                return d_id
        except (ValueError, KeyError):
            continue
    return None


def gate_row(
    catalog: Catalog, shape: hfconfig.Shape, settings: kvlayout.Settings, r: modeled.ModelReport, typed: int | None, unified: bool
) -> tuple[gate.GateRow, str]:
    """The gate's row for the config: its modeled weights (less what --cpu-offload-gb moves off a
    card, with the LoRA slots), the overhead typed or of the same model's measured start, the
    policy's headroom; and where the overhead came from."""
    policy = catalog.policy["gate"]
    headroom = policy["headroom"]
    overhead, where = None, "no measured start of this model in the catalog, and none typed"
    if typed is not None:
        overhead, where = Amount(typed, "typed"), "typed"
    else:
        d_id = same_model(catalog, shape, settings)
        if d_id is not None:
            overhead = derive.gate_row(catalog, d_id).overhead
            where = f"from {catalog.deployments[d_id]['name']}'s measured start"
    weights_bytes, source = r.weights_bytes_per_rank, f"modeled from the {r.weights_source}"
    if r.offload is not None and not unified:  # on a card the moved weights leave it; on a unified box they stay in the same memory
        weights_bytes, source = r.offload.weights_on_device_bytes_per_rank, source + ", less what --cpu-offload-gb moves to the host"
    if r.lora is not None:
        weights_bytes += r.lora.device_bytes_per_rank
        source += ", and the LoRA slots allocated beside them"
    row = gate.GateRow(
        weights=Amount(weights_bytes, source),
        overhead=overhead,
        headroom=Amount(headroom.size, headroom.source or headroom.provenance),
        calibration_prefill=policy["calibration"]["prefill_budget"].count,
        calibration_seats=policy["calibration"]["seats"].count,
    )
    return row, where


def host_a_rank(r: modeled.ModelReport, tp: int, pp: int) -> int:
    """The host buffers a rank's share, which on a unified box come out of MemAvailable: the KV
    offloading buffer is over the tensor-parallel ranks (vllm/config/cache.py), rounded up as the
    gate command takes it; the V0 engine's swap space is per GPU."""
    o = r.offload
    if o is None:
        return 0
    return offload.kv_offloading_a_rank(Fraction(o.kv_offloading_bytes, 2**30), tp) + int(o.swap_space_bytes) // (tp * pp)


def default_available(box: Box) -> tuple[int, str]:
    """The box's MemAvailable when none is given: its idle or free-at-start reading, else its best
    total, with where it comes from."""
    free = derive.box_free(box)
    if free is not None:
        return free.size, f"catalog/boxes.yaml: {free.source or free.provenance}"
    total = derive.box_total(box)
    return total.figure.size, f"the {box['name']}'s total ({total.what.split(';')[0]}): the catalog has no free-memory reading of this box"


def unified_gate(
    catalog: Catalog,
    box: Box,
    r: modeled.ModelReport,
    pin: int,
    available: int | None = None,
    typed_overhead: int | None = None,
    prefill: int | None = None,
    seats: int | None = None,
    available_source: str = "given",
    pin_source: str = "the pin asked for",
    drafting: bool = False,
) -> UnifiedGate:
    """The gate of the config `r` (modeled at the pin) on `box` with MemAvailable `available` (the
    box's reading when None) and the calibration's prefill budget and sequences unless given;
    `drafting`, speculative decoding on, counts the drafter's layers."""
    shape = r.shape
    assert shape is not None, "model_report keeps the config's Shape"
    calibration = catalog.policy["gate"]["calibration"]
    prefill = prefill or calibration["prefill_budget"].count
    seats = seats or calibration["seats"].count
    unified = box.get("memory") == "unified"
    row, where = gate_row(catalog, shape, kvlayout.Settings(tp=r.tp, kv_cache_dtype=r.kv_cache_dtype, prefill_budget=prefill), r, typed_overhead, unified)
    source = available_source
    if available is None:
        available, source = default_available(box)
    elif not GiB <= available <= derive.box_total(box).figure.size:
        raise InputError(f"--available: found {fmt(available, 'GiB')}, expected MemAvailable on the {box['name']}: at least 1 GiB and at most "
                         f"its total, {fmt(derive.box_total(box).figure.size, 'GiB')}")  # fmt: skip
    drafted = drafting and r.drafter_bytes_per_rank > 0  # under speculative decoding the MTP layers load beside the weights
    if drafted:
        row = replace(row, drafter=Amount(r.drafter_bytes_per_rank, "modeled from the config: the drafter's (MTP) layers a rank"))
    request = gate.Request(pin, drafted, prefill, seats, host_a_rank(r, r.tp, r.pp) if unified else 0)
    result = gate.gate(row, request, (available,))
    terms = tuple(GateTerm(t.name, t.bytes, pin_source if t.name == "KV pin" else t.source) for t in result.terms)
    if result.needs is None:
        known = _known_terms(row, request, pin_source)
        room = available - sum(t.bytes for t in known) if known else None
        refused = False if room is not None and room < 0 else None  # the known terms alone over MemAvailable: no overhead passes
        return UnifiedGate(str(box["id"]), available, source, where, known, None, refused, None, None,
                           where if row.overhead is None else (result.outside_calibration or ""), room, seats, prefill)  # fmt: skip
    largest = _largest_printed(row, request, available)
    return UnifiedGate(str(box["id"]), available, source, where, terms, result.needs, bool(result.passes), available - result.needs, largest,
                       outside_calibration="", room_for_overhead_bytes=None, seats=seats, prefill_budget=prefill)  # fmt: skip


def _known_terms(row: gate.GateRow, request: gate.Request, pin_source: str) -> tuple[GateTerm, ...]:
    """Where the overhead alone is unknown (no measured start of the model, none typed): every other
    term of the gate, the overhead left out; none where another term is unknown too."""
    if row.overhead is not None:
        return ()
    found, unknown = gate.terms(replace(row, overhead=Amount(0, "unknown")), request)
    if unknown:
        return ()
    return tuple(GateTerm(t.name, t.bytes, pin_source if t.name == "KV pin" else t.source) for t in found if t.name != "overhead")


def _largest_printed(row: gate.GateRow, request: gate.Request, available: int) -> int | None:
    """The largest pin that passes, in whole hundredths of 1e9 B as the gate prints it, stepped down
    until the printed terms add up inside MemAvailable as printed too (the exact margin of a pin at
    the edge can be a few MB while the rounded terms add up to 0.01 GiB over); None where none does."""
    largest = gate.largest_pin(row, request, (available,))
    if largest is None or largest <= 0:
        return None
    pin = largest // 10**7 * 10**7
    while pin > 0:
        terms = gate.gate(row, replace(request, kv_pin=pin), (available,)).terms
        if shown(available, "GiB", 2) >= printed_sum([t.bytes for t in terms], "GiB", 2):
            return pin
        pin -= 10**7
    return None


def known_names(g: UnifiedGate) -> str:
    """The known terms a pin would come on top of, as a message names them ("the weights, the start
    headroom and the host buffers"): each nonzero term but the pin."""
    names = [t.name for t in g.terms if t.bytes and t.name != "KV pin"]
    return "the " + (", the ".join(names[:-1]) + " and the " + names[-1] if len(names) > 1 else names[0] if names else "known terms")
