"""The operator's view of one start, built from calc's small functions: what the command line
prints, what the calculator page shows and what the pages quote. Plain values, exact inside."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol

from calc.catalog.entries import Deployment, Model, SpeculativeConfig
from calc.catalog.model import Catalog
from calc.engine import derive, fraction, gate, kv
from calc.record import field_names, is_record, record, replace
from calc.units import InputError, fmt, printed_sum, shown

if TYPE_CHECKING:
    from calc.jsontext import Json, JsonObject


@record
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
    host_bytes: int = 0  # --kv-offloading-size a rank, taken from MemAvailable on a unified box
    cpu_offload_gib: Fraction = Fraction(0)  # --cpu-offload-gb: frees nothing on a unified box
    kv_offloading_gib: Fraction = Fraction(0)  # --kv-offloading-size as typed, over the TP ranks
    shm_bytes: int = 0  # /dev/shm message queues on one box (calc/engine/hostmem.py)
    host_notes: tuple[str, ...] = ()  # what /dev/shm and sleep mode add, said on the verdict (calc/engine/hostmem.py)
    sleep_mode: bool = False  # --enable-sleep-mode
    head_extra_bytes: int = 0  # on a start over several boxes, what the head box runs beyond a rank (the Ray head's processes)
    data_parallel: int = 1  # --data-parallel-size: replicas, each on boxes of its own


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
        speculative_tokens=s.get("speculative_tokens") or _drafter_tokens(catalog.models[deployment["model"]]),
        prefill_budget=s["prefill_budget"],
        seats=s["seats"],
        max_model_len=s["max_model_len"],
        available=available or (last_available(deployment),) * deployment["boxes"],
        typical_context=None,
    )


def last_available(deployment: Deployment) -> int:
    readings = [r["available"].size for r in deployment.get("requests", [])]
    readings += [s["available_before"].size for s in deployment["starts"] if "available_before" in s]
    if not readings:
        raise InputError(f"{deployment['id']}: no MemAvailable reading in the catalog; give --available")
    return int(readings[0])


def check(inputs: StartInputs) -> list[str]:
    """Problems with the inputs themselves, named by field."""
    problems = []
    if inputs.kv_pin <= 0:
        problems.append("pin: found 0 B, expected a KV pin above zero (vLLM does not start without a KV pool)")
    if inputs.max_model_len <= 0:
        problems.append("max_model_len: expected a whole number above zero")
    if not inputs.available:
        problems.append("available: expected one MemAvailable figure per box")
    if inputs.drafter and inputs.speculative_tokens <= 0:
        problems.append("speculative tokens: expected at least 1 with the drafter on")
    return problems


def floor_problem(catalog: Catalog, inputs: StartInputs, pin_label: str = "pin") -> str | None:
    """A pin below what one request at max_model_len may hold: vLLM does not start at all
    (check_enough_kv_cache_memory), so the calculators refuse it as input."""
    reading = pool_reading(catalog, inputs.deployment, inputs.speculative_tokens if inputs.drafter else 0)
    if reading is None:
        return None
    tokens, _ = reading.tokens_at(inputs.kv_pin)
    if kv.holds_one_context(int(tokens), inputs.max_model_len, reading.block_size):
        return None
    floor = kv.one_request_pin(inputs.max_model_len, reading.bytes_per_token, reading.block_size)
    return (
        f"{pin_label}: {fmt(inputs.kv_pin, 'e9')} holds {fmt(tokens, 'tokens', down=True)}, below one request at max_model_len "
        f"{fmt(inputs.max_model_len, 'tokens')} and the block of {fmt(reading.block_size, 'tokens')} vLLM holds back from 0.29.0 "
        f"({reading.block_source}), and vLLM does not start below it; expected a pin of at least "
        f"{fmt(floor, 'e9', 2, up=True)} ({fmt(reading.bytes_per_token, 'count')} B a token, {reading.provenance})"
    )


@record
class BoxVerdict:
    """The gate on one box: its MemAvailable against the needs."""

    box: str  # the box's name and its number, "DGX Spark #1"
    available_bytes: int
    head_extra_bytes: int  # the head box's processes beside its rank; 0 on the others
    needs_bytes: int | None
    passes: bool | None
    margin_bytes: int | None
    largest_pin_bytes: int | None


@record
class LargestPins:
    """The largest KV pin that passes, the rest of the request unchanged (None: the gate cannot
    size it, or no drafter; negative: no pin passes)."""

    without_drafter: int | None
    with_drafter: int | None


@record
class SeatsFit:
    """Every seat at the typical context against the pool."""

    tokens_needed: int
    seats_fit: bool
    pin_for_seats_bytes: int


@record
class PoolFigures:
    """What the pin holds, from the measured bytes per token (none when the catalog has no
    reading: the report's `kv` is None then)."""

    bytes_per_token: int | Fraction
    tokens: int | Fraction
    tokens_logged: bool
    full_contexts: Fraction
    holds_one_context: bool
    one_context_pin_bytes: int
    block_size: int
    block_source: str
    seats: SeatsFit | None = None  # when a typical context is given

    def to_json(self) -> JsonObject:
        """The figures in one object, the seats' beside the rest."""
        out = to_json_object(self)
        del out["seats"]
        out.update(to_json_object(self.seats) if self.seats else {})
        return out


@record
class FractionCheck:
    """vLLM's own start check, ceil(total x gpu_memory_utilization) <= free, at the fraction chosen."""

    total_bytes: int
    free_bytes: int
    fraction: Fraction
    requested_bytes: int | None
    passes: bool
    ceiling: Fraction
    edge: Fraction
    typed: bool  # the fraction was typed, not offered
    reached: bool  # False when the gate refuses the start first


@record
class StartReport:
    """One start as the operator sees it: the gate on every box, the largest pin, the pool, vLLM's
    fraction check, the flags and what to change. `to_json()` is `python -m calc gate --json`."""

    deployment: str
    model: str
    box: str
    boxes_count: int
    data_parallel: int
    tp: int
    inputs: StartInputs
    terms: tuple[gate.Term, ...]
    needs_bytes: int | None
    outside_calibration: str | None
    passes: bool | None
    boxes: tuple[BoxVerdict, ...]
    tightest_box: str | None  # the box with the least margin
    largest_pin_bytes: LargestPins
    kv: PoolFigures | None
    kv_source: str | None
    fraction: FractionCheck
    flags: tuple[str, ...]
    flags_are_the_fix: bool
    headroom_bytes: int
    fix: StartInputs | None
    changes: tuple[gate.Term, ...]
    notes: tuple[str, ...] = ()
    kv_tokens_all_replicas: int | None = None  # with data parallel: each replica its own pool

    @property
    def margins(self) -> tuple[int, ...]:
        """MemAvailable less needs on each box; none when the gate cannot size the start."""
        return tuple(b.margin_bytes for b in self.boxes if b.margin_bytes is not None)

    def to_json(self) -> JsonObject:
        """`python -m calc gate --json`: vLLM's spelling of the flags, sizes in bytes, fractions as floats."""
        out = to_json_object(self)
        out["kv"] = self.kv.to_json() if self.kv else {"bytes_per_token": None}
        if self.kv_tokens_all_replicas is None:
            del out["kv_tokens_all_replicas"]
        return out


def start_report(catalog: Catalog, inputs: StartInputs) -> StartReport:
    deployment = catalog.deployments[inputs.deployment]
    model = catalog.models[deployment["model"]]
    box = catalog.boxes[deployment["box"]]
    row = derive.gate_row(catalog, inputs.deployment)
    request = gate.Request(inputs.kv_pin, inputs.drafter, inputs.prefill_budget, inputs.seats, inputs.host_bytes, inputs.shm_bytes)
    # the head box (the first) carries its extra processes beside its rank: the gate sees what is left of its reading
    extras = tuple(inputs.head_extra_bytes if i == 0 and len(inputs.available) > 1 else 0 for i in range(len(inputs.available)))
    left = tuple(a - x for a, x in zip(inputs.available, extras, strict=True))
    result = gate.gate(row, request, left)
    host = inputs.host_bytes
    largest = LargestPins(
        without_drafter=gate.largest_pin(row, gate.Request(0, False, inputs.prefill_budget, inputs.seats, host, inputs.shm_bytes), left),
        with_drafter=gate.largest_pin(row, gate.Request(0, True, inputs.prefill_budget, inputs.seats, host, inputs.shm_bytes), left) if row.drafter else None,
    )
    boxes = tuple(
        BoxVerdict(
            box=f"{box['name']} #{i + 1}" + (" (head)" if x else "") + (f" (replica {i // deployment['boxes']})" if inputs.data_parallel > 1 else ""),
            available_bytes=a,
            head_extra_bytes=x,
            needs_bytes=None if result.needs is None else result.needs + x,
            passes=None if result.needs is None else result.needs + x <= a,
            margin_bytes=None if result.needs is None else a - x - result.needs,
            largest_pin_bytes=None if result.needs is None else a - x - (result.needs - inputs.kv_pin),
        )
        for i, (a, x) in enumerate(zip(inputs.available, extras, strict=True))
    )
    reading = pool_reading(catalog, inputs.deployment, inputs.speculative_tokens if inputs.drafter else 0)
    asked = inputs.speculative_tokens if inputs.drafter else 0
    same_config = reading is not None and (reading.speculative_tokens or 0) == asked
    pool = kv_figures(reading, inputs.kv_pin, inputs.max_model_len, inputs.seats, inputs.typical_context, same_config)
    total = derive.box_total(box)[0].size
    free = min(inputs.available)
    chosen = inputs.gpu_memory_utilization if inputs.gpu_memory_utilization is not None else default_fraction(catalog, total, free)
    precision = catalog.policy["gate"]["reading_precision"].size
    fix = suggested_fix(inputs, largest, pool, precision) if result.passes is False else None
    out = StartReport(
        deployment=deployment["id"],
        model=model["name"],
        box=box["name"],
        boxes_count=deployment["boxes"],
        data_parallel=inputs.data_parallel,
        tp=deployment["tp"],
        inputs=inputs,
        terms=result.terms,
        needs_bytes=result.needs,
        outside_calibration=result.outside_calibration,
        passes=result.passes,
        boxes=boxes,
        tightest_box=None if result.needs is None else min(boxes, key=lambda b: b.margin_bytes or 0).box,
        largest_pin_bytes=largest,
        kv=pool,
        kv_source=kv_source(reading, asked),
        fraction=FractionCheck(
            total_bytes=total,
            free_bytes=free,
            fraction=chosen,
            requested_bytes=fraction.requested(total, chosen) if chosen > 0 else None,
            passes=chosen > 0 and fraction.passes(total, free, chosen),
            ceiling=fraction.ceiling(total, free, 4),
            edge=fraction.ceiling(total, free, 2),
            typed=inputs.gpu_memory_utilization is not None,
            reached=result.passes is not False,
        ),
        flags=tuple(flags(deployment, fix or inputs, chosen, model)),
        flags_are_the_fix=fix is not None,
        headroom_bytes=catalog.policy["gate"]["headroom"].size,
        fix=fix,
        changes=tuple(gate.movable_terms(result)),
    )
    said = notes(catalog, out)
    if inputs.data_parallel > 1:
        said.append(
            f"data parallel {inputs.data_parallel}: each replica runs its ranks on boxes of its own and sizes its own pool, so every box needs a "
            "whole rank's budget (vllm/v1/engine/core.py: a replica is an engine of its own); an MoE's experts are split over TP x DP ranks "
            "(fused_moe/config.py flatten_tp_across_dp), so its ranks hold less than the weights measured at DP 1: the gate keeps the measured "
            "figure, on the safe side, and `python -m calc model --data-parallel-size` models the split"
        )
        if pool is not None:
            out = replace(out, kv_tokens_all_replicas=int(pool.tokens) * inputs.data_parallel)
    if inputs.cpu_offload_gib:
        where = "this unified-memory box" if box.get("memory") == "unified" else "a unified-memory box"
        said.append(
            f"--cpu-offload-gb {float(inputs.cpu_offload_gib):g}: on {where} the weights it moves to the host stay in the same memory, "
            "so the weights term is unchanged and nothing is freed (vllm/model_executor/offloader/uva.py)"
        )
    said += list(inputs.host_notes)
    return replace(out, notes=tuple(said))


def default_fraction(catalog: Catalog, total: int, free: int) -> Fraction:
    """The gpu_memory_utilization the calculators offer: see `fraction.safe`."""
    return fraction.safe(total, free, catalog.policy["gate"]["headroom"].size)


def suggested_fix(inputs: StartInputs, largest: LargestPins, pool: PoolFigures | None, margin: int) -> StartInputs | None:
    """For a refused start: the same request at the largest pin that passes with `margin` to
    spare (the MemAvailable reading's precision), rounded down to two decimals of 10^9 B; with
    the drafter kept when such a pin above the one-request floor passes with it, else without it.
    None when no pin passes either way."""
    floor = (pool.one_context_pin_bytes if pool else 0) or 1
    for drafter in (True, False) if inputs.drafter else (False,):
        limit = largest.with_drafter if drafter else largest.without_drafter
        if limit is None or limit - margin <= 0:
            continue
        pin = int(shown(limit - margin, "e9", 2, down=True))
        if pin >= floor:
            return replace(inputs, kv_pin=pin, drafter=drafter)
    return None


def notes(catalog: Catalog, r: StartReport) -> list[str]:
    """What the verdict has to add beyond passes or refused, in the order a reader needs it."""
    out = []
    i = r.inputs
    precision = catalog.policy["gate"]["reading_precision"].size
    if r.passes:
        margin = min(r.margins)
        if margin < precision:
            out.append(
                f"the margin, {fmt(margin, 'GiB')}, is inside the precision of the MemAvailable reading "
                f"({fmt(precision, 'GiB', 1)}): a reading that much lower refuses this start; take the pin a step down"
            )
    pool = r.kv
    if pool is not None and pool.seats is not None and not pool.seats.seats_fit:
        fit = int(pool.tokens) // i.typical_context if i.typical_context else 0
        out.append(
            f"the pool holds {fmt(pool.tokens, 'tokens')}, not the {fmt(pool.seats.tokens_needed, 'tokens')} that "
            f"{fmt(i.seats, 'count')} seats at {fmt(i.typical_context or 0, 'tokens')} need: at most {fmt(fit, 'count')} such seats fit; "
            f"a pin of at least {fmt(pool.seats.pin_for_seats_bytes, 'e9', 2, up=True)} holds them all, more by each seat's fixed part"
        )
    f = r.fraction
    if not f.passes and r.passes:
        out.append(f"vLLM's own check refuses gpu_memory_utilization {fraction_text(f.fraction)}: at most {fmt(f.ceiling, 'fraction', 4)} passes")
    if r.fix is not None:
        fix = r.fix
        dropped = " and the drafter off" if i.drafter and not fix.drafter else ""
        out.append(f"the flags below are the suggested fix, not the refused request: a pin of {fmt(fix.kv_pin, 'e9')}{dropped}")
    elif r.passes is False:
        out.append("no pin passes with the rest of the request unchanged: only more MemAvailable, or a smaller model, lets it start")
    return out


def fraction_text(value: Fraction) -> str:
    """A fraction as vLLM must receive it: every decimal it was typed with, at least two."""
    digits = 2
    while digits < 6 and Fraction(round(value * 10**digits), 10**digits) != value:
        digits += 1
    return fmt(value, "fraction", digits)


def pool_reading(catalog: Catalog, deployment_id: str, speculative_tokens: int) -> derive.KvReading | None:
    """This deployment's measured bytes per token at the speculative-token count, or the nearest."""
    deployment = catalog.deployments[deployment_id]
    mine = [r for r in derive.kv_readings(catalog, deployment["model"]) if r.kind == "measured" and r.readings]
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
    return (
        f"{reading.provenance}, measured with {how}: a drafter's KV comes out of the same pool, so expect {expect} tokens "
        "than this; the figure does not account for the difference"
    )


def kv_figures(
    reading: derive.KvReading | None, pool: int, max_model_len: int, seats: int, typical_context: int | None, same_config: bool = True
) -> PoolFigures | None:
    """Tokens in the pool (as logged when a start of this configuration ran this very pin),
    full contexts, the floor; None without a measured reading."""
    if reading is None:
        return None
    per_token = reading.bytes_per_token
    tokens, logged = reading.tokens_at(pool) if same_config else (kv.tokens_for_pool(pool, per_token), False)
    whole = int(tokens)
    out = PoolFigures(
        bytes_per_token=per_token,
        tokens=tokens,
        tokens_logged=logged,
        full_contexts=kv.full_contexts(whole, max_model_len),
        holds_one_context=kv.holds_one_context(whole, max_model_len, reading.block_size),
        one_context_pin_bytes=kv.one_request_pin(max_model_len, per_token, reading.block_size),
        block_size=reading.block_size,
        block_source=reading.block_source,
    )
    if typical_context:
        needed = kv.tokens_needed(seats, typical_context)
        out = replace(out, seats=SeatsFit(tokens_needed=needed, seats_fit=whole >= needed, pin_for_seats_bytes=kv.pool_for_tokens(needed, per_token)))
    return out


def drafter_config(model: Model | None) -> SpeculativeConfig | None:
    """The drafter's --speculative-config as the catalog records it (method, count, source), or None."""
    drafter = model.get("drafter") if model else None
    return drafter["speculative_config"] if drafter else None


def _drafter_tokens(model: Model) -> int:
    config = drafter_config(model)
    return config["num_speculative_tokens"] if config else 1


def flags(deployment: Deployment, inputs: StartInputs, utilization: Fraction, model: Model | None = None) -> list[str]:
    out = [
        f"--kv-cache-memory-bytes {inputs.kv_pin}",
        f"--gpu-memory-utilization {fraction_text(utilization)}",
        f"-tp {deployment['tp']}",
        *([f"--data-parallel-size {inputs.data_parallel}"] if inputs.data_parallel > 1 else []),
        f"--max-model-len {inputs.max_model_len}",
        f"--max-num-seqs {inputs.seats}",
        f"--max-num-batched-tokens {inputs.prefill_budget}",
    ]
    config = drafter_config(model)
    if inputs.drafter and config:
        out.append(f'--speculative-config \'{{"method": "{config["method"]}", "num_speculative_tokens": {inputs.speculative_tokens}}}\'')
    if inputs.kv_offloading_gib:
        out.append(f"--kv-offloading-size {float(inputs.kv_offloading_gib):g}")
    if inputs.cpu_offload_gib:
        out.append(f"--cpu-offload-gb {float(inputs.cpu_offload_gib):g}")
    if inputs.sleep_mode:
        out.append("--enable-sleep-mode")
    return out


def plan_verdict(total: int, residents: list[Any], fractions: list[Any], engines: list[Any]) -> tuple[str, list[str]]:
    """The several-models verdict: "fit" only when the budget closes with a KV pool for every
    resident model and a fraction for every one of them; otherwise what is missing, named."""
    notes = []
    no_kv = [r.name for r in residents if r.kv <= 0]
    if no_kv:
        notes.append(f"no KV pool given for {', '.join(no_kv)}: a model without one serves nothing, so this is not a plan yet")
    if residents and len(fractions) < len(residents):
        missing = len(residents) - len(fractions)
        notes.append(f"{fmt(len(residents), 'count')} resident models but {fmt(len(fractions), 'count')} engine fractions: "
                     f"{fmt(missing, 'count')} engine{'s have' if missing > 1 else ' has'} no fraction to start with")  # fmt: skip
    refused = [str(n) for n, e in enumerate(engines, 1) if not e.passes]
    if refused:
        notes.append(f"engine {', '.join(refused)} refused by vLLM's fraction check")
    if sum(r.total for r in residents) > total:
        return "over the box", notes
    return ("fit" if not notes else "incomplete"), notes


# --- printed arithmetic: a result worked from figures printed beside it is worked from them as
# printed (calc.units.shown); every decision stays on the exact values.


class _Sized(Protocol):
    """A term of a gate's table: gate.Term, or the unified gate's GateTerm."""

    @property
    def bytes(self) -> int: ...


def needs_as_printed(terms: Sequence[_Sized]) -> Fraction:
    """The gate's needs as a term table prints it: the sum of its terms at two decimals of GiB."""
    return printed_sum([t.bytes for t in terms], "GiB", 2)


def margin_as_printed(available: int, terms: Sequence[_Sized], extra: int = 0) -> Fraction:
    """MemAvailable less needs (and the head box's extra, when given), from the figures as printed
    (negative when refused)."""
    return shown(available, "GiB", 2) - needs_as_printed(terms) - (shown(extra, "GiB", 2) if extra else 0)


def budget_as_printed(requested: int, free_at_start: int, margin: int, budget: int) -> Fraction:
    """The budget a pool measured after warmup comes off (calc/engine/predict/extensible.py), from the
    figures printed beside it: the requested share, or free memory at start less the margin, as printed."""
    if budget < requested:
        return shown(free_at_start, "GiB", 2) - shown(margin, "GiB", 2)
    return shown(requested, "GiB", 2)


def free_as_printed(engines: list[fraction.EngineStart]) -> list[Fraction]:
    """Free memory before each engine as a plan table prints it: the first reading, then less
    each started engine's ask, both as printed."""
    out: list[Fraction] = []
    for e in engines:
        if not out:
            out.append(shown(e.free_before, "GiB", 2))
        else:
            before = engines[len(out) - 1]
            out.append(out[-1] - (shown(before.requested, "GiB", 2) if before.passes else 0))
    return out


def to_json(value: object) -> Json:
    """Plain JSON values: Fractions as floats, records and dataclasses as dicts in field order."""
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if is_record(value):
        return {name: to_json(getattr(value, name)) for name in field_names(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(type(value), "__dataclass_fields__"):  # a dataclass of another module (its module has imported dataclasses)
        from dataclasses import fields

        return {f.name: to_json(getattr(value, f.name)) for f in fields(value)}  # type: ignore[arg-type]
    raise TypeError(f"found a {type(value).__name__}, expected a value JSON can hold")


def to_json_object(value: object) -> JsonObject:
    """`to_json` of a record, a dataclass or a mapping: one JSON object."""
    out = to_json(value)
    if not isinstance(out, dict):
        raise TypeError(f"found {type(out).__name__}, expected a JSON object")
    return out


@record
class FitReading:
    """One reading of the pool: the tokens vLLM logged at a max_model_len."""

    max_model_len: int
    tokens: int
    pool_over_tokens: Fraction


@record
class FitPrediction:
    """The tokens the fit predicts vLLM logs at a max_model_len, and the full contexts they are."""

    max_model_len: int
    tokens: int
    full_contexts: float  # tokens / max_model_len, as the command line has always printed it


@record
class FitReport:
    """A request's cost, per token and fixed, fit from one pool read at several max_model_len.
    `to_json()` is `python -m calc fit --json`."""

    pool_bytes: int
    per_token_bytes: Fraction
    fixed_bytes: Fraction
    readings: tuple[FitReading, ...]
    predicted: tuple[FitPrediction, ...]

    def to_json(self) -> JsonObject:
        """The fields, and the predicted tokens again by max_model_len."""
        out = to_json_object(self)
        out["predicted_tokens"] = {str(p.max_model_len): p.tokens for p in self.predicted}
        return out


def fit_report(pool: int, points: list[tuple[int, int]], predict_at: list[int]) -> FitReport:
    """The per-request cost from one pool read at several max_model_len, checked, and the token
    counts it predicts. Raises InputError naming what is wrong with the readings."""
    if pool <= 0:
        raise InputError("pool: found 0, expected the KV pool's size per rank, such as 24 GiB")
    if len({length for length, _ in points}) < 2:
        raise InputError("readings: found fewer than two different max_model_len, expected two or more readings of the same pool")
    most, at = max((tokens, length) for length, tokens in points)
    if pool < most:  # under a byte a token: a size typed without its unit (24 for 24 GiB) reads as bytes
        raise InputError(f"pool: found {pool:,} B, fewer bytes than the {most:,} tokens read at max_model_len {at:,}; expected the KV pool's "
                         "size per rank, such as 24 GiB (a number without a unit is bytes)")  # fmt: skip
    per_token, fixed = kv.fit_per_request([(length, kv.per_request_bytes(pool, tokens, length)) for length, tokens in points])
    if per_token <= 0 or fixed < 0:
        raise InputError("readings: these give a negative per-token or fixed cost; expected readings of one pool on one build")
    return FitReport(
        pool_bytes=pool,
        per_token_bytes=per_token,
        fixed_bytes=fixed,
        readings=tuple(FitReading(n, t, Fraction(pool, t)) for n, t in points),
        predicted=tuple(
            FitPrediction(n, kv.tokens_at_length(pool, per_token, fixed, n), kv.tokens_at_length(pool, per_token, fixed, n) / n) for n in predict_at
        ),
    )
