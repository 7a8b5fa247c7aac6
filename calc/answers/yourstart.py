"""Your own start, answered from what your engine printed: what one rank holds and its overhead,
the start gate and its largest pin, tokens and full contexts at other pins and lengths, vLLM's own
fraction and one-request checks, and the `vllm serve` command.

Every input is a `Given`: a value and where it came from (a log line, a typed field, the catalog),
so every figure derived from it can say so. A figure that cannot be derived is None with the
reason, never zero. Exact values only; the calculator page formats them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import NamedTuple

from calc.answers.report import fraction_text
from calc.engine import fraction, kv
from calc.units import InputError, fmt, shown


@dataclass(frozen=True)
class Given:
    """A value and where it came from, in words a reader can check."""

    value: int | Fraction | str
    source: str
    low: int | Fraction | None = None  # where the figure was printed rounded: the bounds it stands for
    high: int | Fraction | None = None

    @property
    def number(self) -> int | Fraction:
        """The value of a figure (a size, a count, a fraction); text (a version, a model) has none."""
        if isinstance(self.value, str):
            raise InputError(f"{self.source}: found {self.value!r}, expected a number")
        return self.value


def known(g: Given | None) -> Given:
    """A given the caller's checks have made sure of (the answer reads it only then)."""
    assert g is not None, "a given the checks before made sure of"
    return g


def _low(g: Given) -> int:
    return int(g.low if g.low is not None else g.value)


def _high(g: Given) -> int:
    return int(g.high if g.high is not None else g.value)


@dataclass(frozen=True)
class Derived:
    """A figure computed from givens: its value (None when it cannot be), how, and from what."""

    value: int | Fraction | None
    how: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """What the engine's own memory profile printed, for the overhead when no MemAvailable
    readings are given: vLLM V0's profile line (non_torch_memory and the activation peak), or a
    fraction start's total x gpu_memory_utilization less its KV pool (V1)."""

    non_torch: Given | None = None
    activation_peak: Given | None = None
    cuda_graph: Given | None = None  # the CUDA-graph estimate, taken off the pool by default from 0.20.0
    cuda_graph_off: bool = False  # the log says the estimate was not taken off (the default up to 0.19.x)
    total: Given | None = None  # the total vLLM multiplies by the fraction (the log's, else the box's)
    utilization: Given | None = None  # the measured start's gpu_memory_utilization
    era: str | None = None  # "v0" or "v1"
    pinned: bool = False  # a pinned start skips the profile: its pool says nothing of the rest


@dataclass(frozen=True)
class YourStart:
    """What the engineer has: their log's figures, their box's readings, what they typed."""

    pin: Given | None  # the KV pool to plan, bytes a rank; None: the log gave none to plan with
    headroom: Given  # the start gate's headroom (the catalog's policy)
    precision: Given | None = None  # the MemAvailable reading's precision (the catalog's policy)
    weights: Given | None = None  # what one rank loads (a drafter's weights included)
    pool: Given | None = None  # the KV pool of the start that was measured
    bytes_per_token: Given | None = None
    pool_tokens: Given | None = None  # the tokens vLLM logged for the measured pool
    per_request: Given | None = None  # vLLM's own bytes for one request of the log's max_model_len
    per_request_len: int | None = None  # the max_model_len it is for
    estimated_max_model_len: Given | None = None  # vLLM's own estimate, when its one-request check failed
    overhead: Given | None = None  # typed; otherwise derived from the readings, else the profile
    before: Given | None = None  # MemAvailable before the start (free memory on a discrete card)
    serving: Given | None = None  # the same once it serves
    total: Given | None = None  # the box's (or card's) total
    max_model_len: Given | None = None
    tp: Given | None = None
    gpu_memory_utilization: Given | None = None
    model: Given | None = None
    kv_cache_dtype: Given | None = None
    pins: tuple[int, ...] = ()
    lengths: tuple[int, ...] = ()
    engine: str = "vllm"  # the engine the log came from: the command is for it
    version: Given | None = None  # the engine's version, as the log printed it
    block_size: Given | None = None  # the pool's block in tokens, where the log prints it
    mem_fraction_static: Given | None = None  # SGLang's fraction, from its log
    profile: Profile | None = None
    failure: Given | None = None  # the log's own failure, when the plan is the logged request
    notes: tuple[str, ...] = field(default=())
    concurrency: Given | None = None  # the engine's printed concurrency at the log's max_model_len
    log_flags: tuple[tuple[str, str | None], ...] = ()  # every other flag the log proves (calc.answers.logverdict), for the command


def _src(*givens: Given | Derived | None) -> tuple[str, ...]:
    out: list[str] = []
    for g in givens:
        if isinstance(g, Given):
            out.append(g.source)
        elif isinstance(g, Derived):
            out.extend(g.sources)
    return tuple(dict.fromkeys(out))


def held(y: YourStart) -> Derived:
    """What the start took from the box: MemAvailable before minus once it serves."""
    if y.before is None or y.serving is None:
        return Derived(None, "needs MemAvailable before the start and once it serves")
    return Derived(y.before.number - y.serving.number, "before - serving", _src(y.before, y.serving))


def _spread(*givens: Given | None) -> int:
    """How far a sum or difference of printed figures can be off: the half-widths added."""
    return sum((_high(g) - _low(g) + 1) // 2 for g in givens if g is not None)


def profile_overhead(y: YourStart) -> Derived:
    """The overhead as the engine's own profile counted it, from the log alone.

    V0 (vllm/worker/worker.py, 0.6.5 ... 0.10.x, and the 0.6.4 one-line form): the profile
    prints non_torch_memory and the PyTorch activation peak; the non-KV memory is weights +
    both, so the overhead beyond the weights is their sum.
    V1 fraction start (vllm/v1/worker/gpu_worker.py determine_available_memory, read in 0.10.2
    ... 0.14.0, logs/public/UNITS.md; the "Available KV cache memory" line from 0.9.1):
    Available KV cache memory = total x gpu_memory_utilization - non_kv_cache_memory (and,
    from 0.20.0, - the CUDA-graph estimate: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1
    in vllm/envs.py 0.20.0, 0 up to 0.19.1), so the overhead beyond the weights is
    total x gpu_memory_utilization - the pool - the weights. A pinned start skips the profile.
    The engine's profile, not a MemAvailable measurement: it leaves out what the engine does
    not allocate (the CUDA context on some builds, other processes, the page cache)."""
    p = y.profile
    if p is None or y.weights is None:
        return Derived(None, "needs the weights")
    if p.non_torch is not None and p.activation_peak is not None:
        value = int(p.non_torch.value) + int(p.activation_peak.value)
        how = f"non_torch_memory + PyTorch activation peak, from vLLM's V0 memory profile, known to +- {fmt(_spread(p.non_torch, p.activation_peak), 'GiB')}"
        return Derived(value, how, _src(p.non_torch, p.activation_peak))
    if p.pinned:
        return Derived(None, "a pinned start skips vLLM's memory profile, so its log does not give the overhead")
    if y.pool is None or p.total is None or p.utilization is None:
        need = [w for w, g in (("the KV pool", y.pool), ("the total", p.total), ("the start's gpu_memory_utilization", p.utilization)) if g is None]
        return Derived(None, "the engine's profile needs " + ", ".join(need))
    requested = fraction.requested(int(p.total.value), Fraction(p.utilization.value))
    value = requested - int(y.pool.value) - int(y.weights.value)
    if value < 0:
        return Derived(None, f"the engine's profile comes out negative ({fmt(value, 'GiB')}): the total is not the one this start ran on")
    graphs = ""
    if p.cuda_graph is not None and p.cuda_graph_off:
        # the pool was sized without the graphs, which are captured after it: they are held beyond the fraction
        value += int(p.cuda_graph.value)
        graphs = (
            f" + the CUDA-graph estimate {fmt(int(p.cuda_graph.value), 'B')}, which this start did not take off the pool (the default up to "
            "0.19.1, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0), so the graphs are held beyond total x gpu_memory_utilization"
        )
    elif p.cuda_graph is not None:
        graphs = f" (the CUDA-graph estimate, {fmt(int(p.cuda_graph.value), 'GiB')}, included)"
    how = (
        f"total x gpu_memory_utilization - KV pool - weights = {fmt(requested, 'B')} - {fmt(int(y.pool.value), 'B')} - {fmt(int(y.weights.value), 'B')}{graphs}, "
        f"as vLLM's V1 profile sizes the pool, known to +- {fmt(_spread(p.total, y.pool, y.weights, p.cuda_graph if p.cuda_graph_off else None), 'GiB')}"
    )
    return Derived(value, how, _src(p.total, p.utilization, y.pool, y.weights, p.cuda_graph))


def overhead(y: YourStart) -> Derived:
    """Typed; else the remainder held - weights - KV pool (measured); else the engine's profile."""
    if y.overhead is not None:
        return Derived(y.overhead.number, "typed", _src(y.overhead))
    h = held(y)
    missing = [name for name, g in (("the weights", y.weights), ("the KV pool", y.pool)) if g is None]
    negative = ""
    if h.value is not None and not missing:
        measured = h.value - known(y.weights).number - known(y.pool).number
        if measured >= 0:
            return Derived(measured, "held - weights - KV pool", _src(h, y.weights, y.pool))
        # less held than the weights and the pool alone: the readings are not of this start (or the
        # page cache moved between them); a negative overhead would let the gate pass what it should not
        negative = f"held - weights - KV pool came out negative ({fmt(measured, 'GiB')}): the two readings are not of this start, or the page cache changed between them"
    engine = profile_overhead(y)
    if engine.value is not None:
        why = f"{negative}; " if negative else ""
        return Derived(engine.value, f"{why}derived from the log: {engine.how}; the engine's profile, not a MemAvailable measurement", engine.sources)
    if negative:
        return Derived(None, negative)
    need = ([h.how] if h.value is None else []) + [f"needs {m}" for m in missing]
    if y.profile is not None and engine.how != "needs the weights":
        need = ([h.how] if h.value is None else []) + [engine.how]
    return Derived(None, "; ".join(dict.fromkeys(need)))


def needs(y: YourStart, pin: int) -> Derived:
    """The start gate's needs for one rank: weights + KV pin + overhead + headroom."""
    over = overhead(y)
    if y.weights is None or over.value is None:
        reason = "needs the weights" if y.weights is None else f"needs the overhead ({over.how})"
        return Derived(None, reason)
    return Derived(y.weights.number + pin + over.value + y.headroom.number, "weights + KV pin + overhead + headroom", _src(y.weights, over, y.headroom))


def per_token(y: YourStart) -> Fraction | None:
    return Fraction(y.bytes_per_token.value) if y.bytes_per_token is not None else None


def per_token_as_printed(y: YourStart) -> Fraction | None:
    """Bytes per token as the page prints it (two decimals): tokens at a pin are worked from it."""
    bpt = per_token(y)
    return shown(bpt, "B a token", 0 if bpt.denominator == 1 else 2) if bpt else None


@dataclass(frozen=True)
class GateAnswer:
    """The start gate on your box: needs (or why it cannot be sized) against MemAvailable."""

    needs: Derived
    available: int | None  # MemAvailable before the start
    passes: bool | None = None  # None without a pin or a reading
    margin: int | Fraction | None = None
    largest_pin: int | Fraction | None = None  # exact: a typed size may be a fraction of a byte
    sized: bool = False  # a pin was given


@dataclass(frozen=True)
class GridRow:
    """Tokens a pin holds and the full contexts at each length."""

    pin: int | Fraction
    tokens: int
    logged: bool  # the count the engine logged for this very pool
    contexts: dict[int, int]


@dataclass(frozen=True)
class FractionAnswer:
    """vLLM's free-memory check at the gpu_memory_utilization typed, or the one offered."""

    total: int
    free: int
    fraction: Fraction
    typed: bool
    requested: int | None
    passes: bool
    ceiling: Fraction
    edge: Fraction
    rounded: bool  # the log's rounding of free and total moved the ceiling
    reached: bool = True  # False when an earlier check refuses the start


@dataclass(frozen=True)
class OneRequest:
    """vLLM's check after profiling: the pool holds one request of max_model_len."""

    max_model_len: int
    pin_needed: int
    request_bytes: int
    block_bytes: int
    block_how: str
    floor_source: str | None
    passes: bool
    estimated_max_model_len: int
    reached: bool = True


class Change(NamedTuple):
    """One setting the suggested fix changes: which, to what, why."""

    setting: str  # "pin", "max_model_len" or "fraction"
    value: int | Fraction
    why: str


@dataclass(frozen=True)
class Fix:
    """What to launch instead of a refused start."""

    pin: int | None
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Answer:
    """Every answer for a start's givens, and the verdict over all of them."""

    held: Derived
    overhead: Derived
    gate: GateAnswer
    bytes_per_token: Fraction | None
    bytes_per_token_printed: Fraction | None
    pins: tuple[int | Fraction, ...]
    lengths: tuple[int, ...]
    grid: tuple[GridRow, ...]
    one_request: OneRequest | None
    fraction: FractionAnswer | None
    passes: bool | None
    refused_by: str | None  # "gate", "fraction", "one_request" or "log"
    fix: Fix | None
    notes: tuple[str, ...]
    command: str
    command_note: str | None


def tokens_at(y: YourStart, pin: int | Fraction) -> int | None:
    """Whole tokens a pin holds at the printed cost a token."""
    bpt = per_token_as_printed(y)
    return int(kv.tokens_for_pool(pin, bpt)) if bpt and pin > 0 else (0 if bpt else None)


def _fraction(y: YourStart, before: int | None) -> FractionAnswer | None:
    if y.total is None or before is None:
        return None
    total = int(y.total.value)
    # safe against the rounding of a printed free and total: the high end of total, the low end of free
    high, low = _high(known(y.total)), _low(known(y.before))
    chosen = Fraction(y.gpu_memory_utilization.value) if y.gpu_memory_utilization is not None else fraction.safe(high, low, int(y.headroom.value))
    return FractionAnswer(
        total=total,
        free=before,
        fraction=chosen,
        typed=y.gpu_memory_utilization is not None,
        requested=fraction.requested(total, chosen) if chosen > 0 else None,
        passes=chosen > 0 and fraction.passes(high, low, chosen),
        ceiling=fraction.ceiling(high, low, 4),
        edge=fraction.ceiling(high, low, 2),
        rounded=(high, low) != (total, before),
    )


def _release(version: Given | None) -> tuple[int, int, int] | None:
    """A printed engine version as (major, minor, patch) ("0.13.0+faa43dbf.nv26.01": (0, 13, 0))."""
    found = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(version.value)) if version is not None else None
    return (int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)) if found else None


def _one_request(y: YourStart, pin: int | None) -> OneRequest | None:
    bpt = per_token_as_printed(y)
    if not bpt or y.max_model_len is None or pin is None:
        return None
    length = int(y.max_model_len.value)
    engine = y.per_request is not None and y.per_request_len == length
    # vLLM's floor is its per-request maximum (a hybrid's or a window's fixed part included); the
    # log gives it at its own max_model_len, else max_model_len x the bytes a token as printed
    need = int(known(y.per_request).number) if engine else kv.pool_for_tokens(length, bpt)
    # from 0.29.0 vLLM takes one block, the null block, off the pool before the check (kv.NULL_BLOCK_FROM);
    # a block is at most block_size tokens at the bytes a token
    release = _release(y.version)
    block = int(y.block_size.value) if y.block_size is not None else kv.DEFAULT_BLOCK_SIZE
    block_bytes = kv.pool_for_tokens(block, bpt) if kv.null_block_held(release) else 0
    if block_bytes:
        where = "the log's block size" if y.block_size is not None else "vLLM's default block size; the log prints none"
        built = f"vLLM {y.version.value}" if y.version is not None else "a log that prints no version, taken as 0.29.0 or later"
        block_how = f"one block of {fmt(block, 'tokens')} ({where}) at the bytes a token printed above, which {built} holds back before the check"
    else:
        block_how = ""
    logged = y.pool_tokens is not None and y.pool is not None and pin == int(y.pool.value)
    longest = int(known(y.pool_tokens).number) if logged else tokens_at(y, pin) or 0
    floor = need + block_bytes
    return OneRequest(
        max_model_len=length,
        pin_needed=floor,
        request_bytes=need,
        block_bytes=block_bytes,
        block_how=block_how,
        floor_source=known(y.per_request).source if engine else None,
        passes=pin >= floor,
        estimated_max_model_len=longest,
    )


def _fix(y: YourStart, gate: GateAnswer, frac: FractionAnswer | None, one: OneRequest | None) -> Fix | None:
    """For a refused start: what to launch instead, and why; None when nothing here can."""
    precision = int(y.precision.value) if y.precision is not None else 0
    pin = int(y.pin.value) if y.pin is not None else None
    length = int(y.max_model_len.value) if y.max_model_len is not None else None
    changes: list[Change] = []
    largest = gate.largest_pin
    if largest is not None:
        limit = int(shown(largest - precision, "e9", 2, down=True)) if largest - precision > 0 else 0
        if limit <= 0:
            return None
        if pin is None or pin > limit:
            changes.append(Change("pin", limit, "the largest pin that passes the gate with the reading's precision to spare"))
            pin = limit
    floor = one.pin_needed if one is not None else None
    if pin is not None and floor is not None and floor > pin and length is not None:  # a floor is one request's, of a known length
        up = int(shown(floor, "e9", 2, up=True))
        if largest is not None and up <= largest - precision:
            changes.append(Change("pin", up, f"the smallest pin that holds one request of {fmt(length, 'tokens')}"))
            pin = up
        elif y.estimated_max_model_len is not None and y.pin is not None and pin == int(y.pin.value):
            changes.append(Change("max_model_len", int(y.estimated_max_model_len.value), "vLLM's own estimate of the longest request this pool holds"))
        else:
            longest = tokens_at(y, pin) or 0
            if longest <= 0:
                return None
            changes.append(Change("max_model_len", longest, "the tokens this pin holds at the bytes a token printed above"))
    if frac is not None and not frac.passes:
        fits = fraction.ceiling(_high(known(y.total)), _low(known(y.before)) - precision, 2)
        if fits <= 0:
            return None
        changes.append(Change("fraction", fits, "the largest two decimals that pass vLLM's free-memory check with the reading's precision to spare"))
    if y.failure is not None and y.failure.value == "no_kv_memory" and pin is None:
        least = _fraction_for_a_pool(y)
        if least is None:
            return None
        changes.append(
            Change(
                "fraction",
                least,
                "the smallest two decimals that leave any KV pool beyond the weights and the overhead; one request of max_model_len needs more",
            )
        )
    if not changes:
        return None
    return Fix(pin, tuple(changes))


def _fraction_for_a_pool(y: YourStart) -> Fraction | None:
    """The smallest two-decimal gpu_memory_utilization whose ask exceeds the weights and the
    overhead, so that a fraction start has any KV pool at all; None when unknown or above 1."""
    over = overhead(y)
    total = y.profile.total if y.profile is not None else None
    if total is None or y.weights is None or over.value is None:
        return None
    rest = int(y.weights.value) + over.value
    for hundredths in range(1, 101):
        if fraction.requested(_low(total), Fraction(hundredths, 100)) > rest:
            return Fraction(hundredths, 100)
    return None


def pin_flag_note(y: YourStart) -> str | None:
    """--kv-cache-memory-bytes exists from vLLM 0.10.2 (logs/public/UNITS.md): a log from an older
    build gets the command with a word that its build does not take the flag."""
    if y.engine != "vllm":
        return None
    era = y.profile.era if y.profile is not None else None
    found = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(y.version.value)) if y.version is not None else None
    release = tuple(int(g or 0) for g in found.groups()) if found else None
    if (release is not None and release < (0, 10, 2)) or (release is None and era == "v0"):
        built = f"vLLM {y.version.value}" if y.version is not None else "a build running the V0 engine"
        return (
            f"--kv-cache-memory-bytes is read by the V1 engine from vLLM 0.10.2 on (vllm/v1/worker/gpu_worker.py); your log is from {built}: "
            "upgrade, or leave the flag out and size the pool with gpu_memory_utilization alone"
        )
    return None


def answer(y: YourStart) -> Answer:
    """Every answer for these givens, and the verdict over all of them; a check that cannot be
    sized says what it needs, and a check after a refused one is not reached."""
    pin = int(y.pin.value) if y.pin is not None else None
    n = needs(y, pin or 0)
    before = int(y.before.value) if y.before is not None else None
    gate = GateAnswer(n, before, sized=pin is not None)
    if n.value is not None and before is not None:
        largest = before - (n.value - (pin or 0))
        gate = replace(gate, largest_pin=largest)
        if pin is not None:
            gate = replace(gate, passes=n.value <= before, margin=before - n.value)
    lengths = tuple(dict.fromkeys(((int(y.max_model_len.value),) if y.max_model_len else ()) + y.lengths))
    pins = tuple(dict.fromkeys(p for p in (pin, gate.largest_pin, *y.pins) if p is not None and p > 0))
    bpt = per_token_as_printed(y)
    grid = []
    if bpt:
        for p in pins:
            logged = y.pool_tokens is not None and y.pool is not None and p == int(y.pool.value)
            tokens = int(known(y.pool_tokens).number) if logged else int(kv.tokens_for_pool(p, bpt))
            contexts = {length: tokens // length for length in lengths}
            if logged and y.concurrency is not None and y.max_model_len is not None and int(y.max_model_len.value) in contexts:
                # the engine's own count of full contexts at its max_model_len (a hybrid's tokens count per KV group)
                contexts[int(y.max_model_len.value)] = math.floor(Fraction(y.concurrency.value))
            grid.append(GridRow(p, tokens, logged, contexts))
    # SGLang sizes its pool by mem_fraction_static and checks neither of vLLM's: they are vLLM's only
    frac = _fraction(y, before) if y.engine == "vllm" else None
    one = _one_request(y, pin) if y.engine == "vllm" else None
    # vLLM's order: the gate before launching, the fraction check at start, the one-request check after profiling
    checks = [("gate", gate.passes), ("fraction", frac.passes if frac else None), ("one_request", one.passes if one else None)]
    refused = next((name for name, ok in checks if ok is False), None)
    if refused is None and y.failure is not None:
        refused = "log"  # the logged request failed, and no check here sizes why
    order = [name for name, _ in checks]
    after = order[order.index(refused) + 1 :] if refused in order else []
    if frac is not None and "fraction" in after:
        frac = replace(frac, reached=False)
    if one is not None and "one_request" in after:
        one = replace(one, reached=False)
    fix = _fix(y, gate, frac, one) if refused else None
    notes = []
    precision = int(y.precision.value) if y.precision is not None else 0
    if gate.passes and gate.margin is not None and gate.margin < precision:
        notes.append(
            f"the margin, {fmt(gate.margin, 'GiB')}, is inside the precision of the MemAvailable reading ({fmt(precision, 'GiB', 1)}): "
            "a reading that much lower refuses this start; take the pin a step down"
        )
    if y.total is not None and before is not None and before > _high(y.total):
        notes.append(
            f"the free memory before the start, {fmt(before, 'GiB')}, is more than the total, {fmt(int(y.total.value), 'GiB')}: "
            "one of the two is not this box's; check the box or the reading"
        )
    passes = None if refused is None and gate.passes is None else refused is None
    chosen = frac.fraction if frac else None
    if fix is not None:
        chosen = next((Fraction(c.value) for c in fix.changes if c.setting == "fraction"), chosen)
    return Answer(
        held=held(y),
        overhead=overhead(y),
        gate=gate,
        bytes_per_token=per_token(y),
        bytes_per_token_printed=bpt,
        pins=pins,
        lengths=lengths,
        grid=tuple(grid),
        one_request=one,
        fraction=frac,
        passes=passes,
        refused_by=refused,
        fix=fix,
        notes=tuple(notes),
        command=command(y, chosen, fix),
        command_note=pin_flag_note(y),
    )


def command(y: YourStart, utilization: Fraction | None, fix: Fix | None = None) -> str:
    """The launch line for this start, for the engine the log came from (the suggested fix's when
    one is given): vLLM's `vllm serve`, or SGLang's `python -m sglang.launch_server`. The page
    shows none for a refused start with no fix."""
    changed = {c.setting: c.value for c in (fix.changes if fix else ())}
    pin = changed.get("pin", int(y.pin.value) if y.pin is not None else None)
    length = changed.get("max_model_len", y.max_model_len.value if y.max_model_len is not None else None)
    model = str(y.model.value) if y.model is not None else "MODEL"
    if y.engine == "sglang":
        parts = ["python -m sglang.launch_server", f"--model-path {model}"]
        if y.tp is not None:
            parts.append(f"--tp-size {y.tp.value}")
        if length is not None:
            parts.append(f"--context-length {length}")
        if y.mem_fraction_static is not None:
            parts.append(f"--mem-fraction-static {fraction_text(Fraction(y.mem_fraction_static.value))}")
        if pin is not None and y.pool_tokens is not None and y.pool is not None and pin == int(y.pool.value):
            parts.append(f"--max-total-tokens {int(y.pool_tokens.value)}")  # the count SGLang logged for this pool
        elif pin is not None and y.bytes_per_token is not None:
            parts.append(f"--max-total-tokens {tokens_at(y, pin)}")
        parts.extend(_other_flags(y, parts))
        return " \\\n  ".join(parts)
    parts = ["vllm serve", model]
    if y.tp is not None and int(y.tp.value) > 1:
        parts.append(f"--tensor-parallel-size {y.tp.value}")
    if length is not None:
        parts.append(f"--max-model-len {length}")
    if y.kv_cache_dtype is not None and str(y.kv_cache_dtype.value) != "auto":
        parts.append(f"--kv-cache-dtype {y.kv_cache_dtype.value}")
    if pin is not None:
        parts.append(f"--kv-cache-memory-bytes {pin}")
    if utilization is not None and utilization > 0:
        parts.append(f"--gpu-memory-utilization {fraction_text(utilization)}")  # the value checked, every decimal kept
    parts.extend(_other_flags(y, parts))
    return " \\\n  ".join(parts)


def _other_flags(y: YourStart, parts: list[str]) -> list[str]:
    """The log's other flags (tensor parallel where only the log says it, quantization, dtype, the
    speculative config, trust-remote-code, parsers ...), each once, after the ones sized here."""
    have = {p.split()[0] for p in parts[1:]}
    sized = {"--kv-cache-memory-bytes", "--gpu-memory-utilization", "--max-model-len", "--context-length", "--mem-fraction-static", "--max-total-tokens"}
    if y.tp is not None:  # the size given here (typed or read) wins, one included
        sized |= {"--tensor-parallel-size", "--tp-size"}
    out = []
    for flag, value in y.log_flags:
        if flag in have or flag in sized or flag == "MODEL":
            continue
        if value is None:
            out.append(flag)
        else:
            words = value.split() if flag == "--served-model-name" else [value]  # several names, each its own word
            quoted = " ".join(w if re.fullmatch(r"[\w./:@+=,-]+", w) else "'" + w.replace("'", "'\\''") + "'" for w in words)
            out.append(f"{flag} {quoted}")
        have.add(flag)
    return out
