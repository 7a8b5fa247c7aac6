"""Every figure of the four source documents, and how the catalog reproduces it through calc.

One table, `FIGURES`: a row names the document (000 memory budget, 001 KV pool, 003 kernel-init
report, 004 several models), where the figure is, the figure as the document prints it, and a
function that computes it from the catalog through calc and formats it with `calc.units.fmt` at
the document's precision. The document's figures are the spec; nothing here is calc's own output
copied back.

Where the document's hand arithmetic disagrees with the catalog, the row also carries
`catalog_gives` (what the site shows, the catalog's figure) and the reason. The test asserts the
catalog's figure and that the two still differ, so a row whose figures converge is revisited.

Figures are written as the document prints them, without their unit where the row names it
("13.4" in a GiB column), with it where the unit is part of the disagreement ("65-70 GB").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from calc.answers import guard, prefetch, report
from calc.catalog.model import Catalog
from calc.engine import budget, derive, fraction, gate, kv
from calc.units import fmt, parse_size

DSV4 = "dsv4-flash-pair"
FLASH_NEXT = "flash-next-pair"
SPARK = "dgx-spark"
RTX = "rtx-5090-node"
TEN_GB = parse_size("10 GB")  # the KV-pool document's "10 GB" column: 10e9 B
MATRIX_PINS = ("8e9", "10e9", "16e9", "20e9")  # the pins the memory-budget document tabulates


@dataclass(frozen=True)
class SourceFigure:
    """One figure of a source document and the computation that reproduces it."""

    doc: str
    where: str
    document_says: str
    compute: Callable[[Catalog], str]
    catalog_gives: str | None = None
    reason: str = ""

    @property
    def disagrees(self) -> bool:
        return self.catalog_gives is not None

    @property
    def expected(self) -> str:
        """What the computation must give: the document's figure, or the catalog's where they differ."""
        return self.catalog_gives if self.catalog_gives is not None else self.document_says

    @property
    def id(self) -> str:
        return f"{self.doc}-" + re.sub(r"[^A-Za-z0-9.+~]+", "-", self.where).strip("-")


# --- formatting at the document's precision, through calc.units.fmt ---------------------------


def gib(value: int | Fraction, digits: int = 2, down: bool = False) -> str:
    return fmt(value, "GiB", digits, down).removesuffix(" GiB")


def gb(value: int | Fraction, digits: int = 0) -> str:
    return fmt(value, "GB", digits).removesuffix(" GB")


def mb(value: int | Fraction, digits: int = 0) -> str:
    return fmt(value, "MB", digits).removesuffix(" MB")


def mib_ungrouped(value: int) -> str:
    """free(1) prints MiB without digit grouping; the report copies them so."""
    return fmt(value, "MiB", 0).removesuffix(" MiB").replace(",", "")


def e9(value: int | Fraction, digits: int = 0, down: bool = False) -> str:
    return fmt(value, "e9", digits, down).removesuffix(" B")


def count(value: int | Fraction) -> str:
    return fmt(value, "count")


def times(value: int | Fraction, digits: int) -> str:
    return fmt(value, "x", digits)


def plain(value: int | Fraction, digits: int) -> str:
    return fmt(value, "plain", digits)


def pct(value: int | Fraction, digits: int = 0) -> str:
    return fmt(value, "%", digits).removesuffix(" %")


def millions(value: int | Fraction, digits: int = 2) -> str:
    return fmt(value, "M tokens", digits).removesuffix(" M tokens")


def rounded_millions(value: int | Fraction, digits: int = 2) -> str:
    """1,670,286 shown as 1,670,000: millions at `digits` decimals, written out."""
    return count(Decimal(millions(value, digits)) * 10**6)


# --- the catalog's entries ------------------------------------------------------------------


def dsv4(c: Catalog) -> dict:
    return c.deployments[DSV4]


def gen(c: Catalog, generation: int) -> dict:
    return derive.start_by_generation(dsv4(c), generation)


def refused_request(c: Catalog) -> dict:
    (request,) = [r for r in dsv4(c)["requests"] if r["outcome"] == "refused"]
    return request


def free_at_gate(c: Catalog) -> int:
    """The ~114.5 GiB MemAvailable the memory-budget document checks every pin against."""
    return refused_request(c)["available"].value


def start_report(c: Catalog, pin: str | int, drafter: bool) -> report.StartReport:
    """The report the command line and the calculator show, at the deployment's defaults."""
    inputs = replace(report.defaults(c, DSV4), kv_pin=parse_size(pin, "pin"), drafter=drafter)
    return report.start_report(c, inputs)


def needs(c: Catalog, pin: str | int, drafter: bool) -> int:
    return start_report(c, pin, drafter).needs_bytes


def passes(c: Catalog, pin: str | int, drafter: bool) -> bool:
    return start_report(c, pin, drafter).passes


def verdict(c: Catalog, pin: str) -> str:
    plain_start, drafter_start = passes(c, pin, False), passes(c, pin, True)
    if plain_start and drafter_start:
        return "both start"
    if plain_start:
        return "drafter refused"
    return "both refused" if not drafter_start else "only the drafter starts"


def largest_pin(c: Catalog, drafter: bool) -> int:
    largest = start_report(c, "10e9", False).largest_pin_bytes
    return largest.with_drafter if drafter else largest.without_drafter


def term(result: gate.GateResult, name: str) -> int:
    (found,) = [t.bytes for t in result.terms if t.name == name]
    return found


def gen234_gate(c: Catalog) -> gate.GateResult:
    """The gate as it ran for generation 234, with the row it held before any start was measured."""
    start = gen(c, 234)
    row = derive.gate_row_of_start(c, DSV4, start)
    available = (start["available_before"].value,) * dsv4(c)["boxes"]
    return gate.gate(row, derive.request_of(c, dsv4(c), start), available)


def reading(
    c: Catalog, model: str, *, kind: str | None = None, kv_dtype: str | None = None, label: str | None = None, spec: int | None = None
) -> derive.KvReading:
    found = [
        r
        for r in derive.kv_readings(c)
        if r.model == model
        and (kind is None or r.kind == kind)
        and (kv_dtype is None or r.kv_dtype == kv_dtype)
        and (label is None or r.label == label)
        and (spec is None or r.speculative_tokens == spec)
    ]
    assert len(found) == 1, f"{model}: expected one reading, found {len(found)}"
    return found[0]


def ds_measured(c: Catalog) -> derive.KvReading:
    return reading(c, "deepseek-v4-flash", kind="measured")


def ds_hybrid(c: Catalog) -> derive.KvReading:
    return reading(c, "deepseek-v4-flash", label="hybrid compressed layout")


def ds_plan(c: Catalog) -> derive.KvReading:
    return reading(c, "deepseek-v4-flash", label="the plan's expectation")


def flash_next(c: Catalog, spec: int) -> derive.KvReading:
    return reading(c, "qwen3.8-flash-next", spec=spec)


BPT_ROWS: dict[str, Callable[[Catalog], derive.KvReading]] = {
    "DeepSeek-V4-Flash, vLLM, fp8_ds_mla": ds_measured,
    "Qwen3.8 27B, vLLM, bf16": lambda c: reading(c, "qwen3.8-27b", kv_dtype="bf16"),
    "Qwen3.8 27B, SGLang, fp8": lambda c: reading(c, "qwen3.8-27b", kv_dtype="fp8"),
    "Qwen3.8 Flash-Next, vLLM, bf16": lambda c: flash_next(c, 4),
    "GLM-5.3-Flash, vLLM, fp8": lambda c: reading(c, "glm-5.3-flash", kv_dtype="fp8"),
    "DeepSeek-V4-Flash, compressed layout": ds_hybrid,
}


def approx(r: derive.KvReading, text: str) -> str:
    """A modeled reading is shown with a tilde."""
    return ("~" if r.kind == "modeled" else "") + text


def bpt(r: derive.KvReading) -> str:
    return approx(r, count(r.bytes_per_token))


def tokens_in_10gb(r: derive.KvReading) -> str:
    tokens, _logged = r.tokens_at(TEN_GB)
    if r.kind == "modeled":
        return "~" + rounded_millions(tokens)
    return count(tokens)


def trace(c: Catalog) -> dict:
    return c.traces["kernel-init-report"]


def sample(c: Catalog, t: float) -> int:
    (available,) = [s["available"] for s in trace(c)["samples"] if s["t"] == t]
    return available


def kernel_init_drop(c: Catalog) -> int:
    window = trace(c)["kernel_init"]
    return sample(c, window["from_t"]) - sample(c, window["to_t"])


def after_kernel_init(c: Catalog) -> int:
    return sample(c, trace(c)["kernel_init"]["to_t"])


def prefetch_verdict(c: Catalog, available: int) -> str:
    share = c.policy["vllm"]["prefetch_fraction"].value
    return "enabled" if prefetch.prefetch_enabled(trace(c)["checkpoint"].value, available, share) else "disabled"


def rtx_check(c: Catalog, text: str) -> str:
    box = c.boxes[RTX]
    ok = fraction.passes(box["total_memory"].value, box["free_at_start"].value, Fraction(text))
    return "starts" if ok else "refused"


def residents(c: Catalog) -> list[budget.Resident]:
    plan = c.plans["coder-and-70b"]
    return [budget.Resident(c.models[r["model"]]["name"], c.models[r["model"]]["weights"].value) for r in plan["residents"]]


def spark_budget(c: Catalog) -> budget.Budget:
    return budget.budget(c.boxes[SPARK]["total_memory"].value, residents(c))


def fraction_plan(c: Catalog, plan_id: str) -> list[fraction.EngineStart]:
    plan = c.fraction_plans[plan_id]
    box = c.boxes[plan["box"]]
    return fraction.plan(box["total_memory"].value, box["idle_available"].value, plan["fractions"])


def plan_verdict(engines: list[fraction.EngineStart]) -> str:
    verdicts = [e.passes for e in engines]
    if all(verdicts):
        return "both start"
    if verdicts == [True, False]:
        return "the second refused"
    return "neither starts"


def rule_of_thumb(c: Catalog, model: str) -> int:
    m = c.models[model]
    return budget.weights_from_parameters(float(m["parameters"]), float(m["bits_per_parameter"]))


def calibration_verdict(c: Catalog) -> str:
    settings = derive.settings(dsv4(c))
    calibration = c.policy["gate"]["calibration"]
    inside = settings["prefill_budget"] <= calibration["prefill_budget"].value and settings["seats"] <= calibration["seats"].value
    terms_zero = term(gate.gate(derive.gate_row(c, DSV4), derive.request_of(c, dsv4(c), gen(c, 235)), (free_at_gate(c),)), "prefill-budget term") == 0
    return "inside the calibration" if inside and terms_zero else "outside the calibration"


def guard_kills_at_poll(c: Catalog) -> str:
    """Replay the catalog's guard over polls that all sit one byte under its floor: the poll it kills at."""
    policy = c.policy["guard"]
    every = policy["poll_seconds"].value
    polls = [(i * every, policy["floor"].value - 1) for i in range(10)]
    result = guard.run(polls, policy["floor"].value, policy["polls_in_a_row"].value)
    return count(Fraction(result.at) / every + 1)


def headroom_verdict(c: Catalog) -> str:
    incident = c.incidents["2026-09-30-prefill"]
    headroom = c.policy["gate"]["headroom"].value
    if incident["available"].maximum < headroom < incident["served_for_weeks_available"].value:
        return "under the second and well above the first"
    return "not between the two"


S = SourceFigure

# --- 000: memory budget ---------------------------------------------------------------------

MEMORY_BUDGET = [
    S("000", "result, one rank holds (GiB)", "102.0", lambda c: gib(derive.held(gen(c, 235)).bytes, 1)),
    S("000", "result, available before the start (GiB)", "117.2", lambda c: gib(gen(c, 235)["available_before"].value, 1)),
    S("000", "result, available after the start (GiB)", "15.2", lambda c: gib(gen(c, 235)["available_after"].value, 1)),
    S("000", "result, ~free at start (GiB)", "114.5", lambda c: gib(free_at_gate(c), 1)),
    S("000", "result, largest pin without the drafter", "14.8e9", lambda c: e9(largest_pin(c, False), 1, down=True)),
    S(
        "000",
        "result, largest pin with the drafter",
        "9.4e9",
        lambda c: e9(largest_pin(c, True), 2, down=True),
        catalog_gives="9.39e9",
        reason="the largest pin with the drafter is 9.398e9 B; the document rounds it up to 9.4e9, a pin the gate refuses; the site rounds a limit down",
    ),
    S("000", "what one rank holds, Weights (GiB)", "79.29", lambda c: gib(derive.gate_row(c, DSV4).weights.bytes)),
    S("000", "what one rank holds, Weights, shard headers said (GiB)", "76.68", lambda c: gib(c.models["deepseek-v4-flash"]["weights"].value)),
    S("000", "what one rank holds, Weights, generation", "235", lambda c: derive.gate_row(c, DSV4).weights.source.split("gen ")[1].split(",")[0]),
    S("000", "what one rank holds, Drafter (GiB)", "5.06", lambda c: gib(derive.gate_row(c, DSV4).drafter.bytes)),
    S("000", "what one rank holds, Drafter, both ranks (GiB)", "10.12", lambda c: gib(c.models["deepseek-v4-flash"]["drafter"]["weights"].value)),
    S("000", "what one rank holds, Drafter, divided by ranks", "2", lambda c: count(c.models["deepseek-v4-flash"]["drafter"]["weights"].extra["ranks"])),
    S("000", "what one rank holds, KV pool pin", "10e9", lambda c: e9(gen(c, 235)["kv_pin"])),
    S("000", "what one rank holds, KV pool (GiB)", "9.31", lambda c: gib(gen(c, 235)["kv_pin"])),
    S("000", "what one rank holds, KV pool backs (tokens)", "181,777", lambda c: count(ds_measured(c).tokens_at(gen(c, 235)["kv_pin"])[0])),
    S("000", "what one rank holds, Overhead (GiB)", "13.4", lambda c: gib(derive.overhead(gen(c, 235)).bytes, 1)),
    S("000", "what one rank holds, Overhead at a prefill budget of", "8,192", lambda c: count(derive.settings(dsv4(c))["prefill_budget"])),
    S("000", "what one rank holds, Held, no drafter (GiB)", "102.0", lambda c: gib(derive.held(gen(c, 235)).bytes, 1)),
    S("000", "what one rank holds, Start headroom (GiB)", "8.0", lambda c: gib(c.policy["gate"]["headroom"].value, 1)),
    S("000", "overhead before the start, copied from another model (GiB)", "4.3", lambda c: gib(gen(c, 234)["gate_row"]["overhead"].value, 1)),
    S(
        "000",
        "overhead, the real figure over the 4.3 guess",
        "3.1x",
        lambda c: times(Fraction(derive.overhead(gen(c, 235)).bytes, gen(c, 234)["gate_row"]["overhead"].value), 1),
    ),
    S("000", "the start gate, 8,192 and 8 seats", "inside the calibration", calibration_verdict),
    S("000", "the start gate, seats", "8", lambda c: count(derive.settings(dsv4(c))["seats"])),
    S("000", "the start gate, needs = total + headroom (GiB)", "8", lambda c: gib(c.policy["gate"]["headroom"].value, 0)),
    S("000", "pin matrix, vs ~free (GiB)", "114.5", lambda c: gib(free_at_gate(c), 1)),
]

_MATRIX = {
    # pin: (KV GiB, needs without the drafter, needs with it, verdict)
    "8e9": ("7.45", "108.1", "113.2", "both start"),
    "10e9": ("9.31", "110.0", "115.1", "drafter refused"),
    "16e9": ("14.90", "115.6", "120.7", "both refused"),
    "20e9": ("18.63", "119.3", "124.4", "both refused"),
}
_MATRIX_DISAGREES = {
    ("16e9", True): (
        "120.6",
        "the document adds its rounded 115.6 and 5.06 (120.66, shown 120.7); the exact sum is 120.648 GiB, 120.6 at one decimal",
    ),
}


def _needs_row(pin: str, drafter: bool, says: str) -> SourceFigure:
    where = f"pin matrix, {pin}, needs {'with' if drafter else 'without'} the drafter (GiB)"
    gives, reason = _MATRIX_DISAGREES.get((pin, drafter), (None, ""))
    return S("000", where, says, lambda c: gib(needs(c, pin, drafter), 1), gives, reason)


for _pin, (_kv, _plain, _drafter, _verdict) in _MATRIX.items():
    MEMORY_BUDGET += [
        S("000", f"pin matrix, {_pin}, KV (GiB)", _kv, lambda c, p=_pin: gib(parse_size(p))),
        _needs_row(_pin, False, _plain),
        _needs_row(_pin, True, _drafter),
        S("000", f"pin matrix, {_pin}, vs ~114.5 free", _verdict, lambda c, p=_pin: verdict(c, p)),
    ]

MEMORY_BUDGET += [
    S("000", "refused request, date", "2026-10-24", lambda c: refused_request(c)["date"]),
    S("000", "refused request, pin", "20e9", lambda c: e9(refused_request(c)["kv_pin"])),
    S("000", "refused request, needed (GiB)", "124.4", lambda c: gib(needs(c, refused_request(c)["kv_pin"], refused_request(c)["drafter"]), 1)),
    S("000", "refused request, ~free (GiB)", "114.5", lambda c: gib(refused_request(c)["available"].value, 1)),
    S(
        "000",
        "refused request, the gate's verdict",
        "refused",
        lambda c: "refused" if not passes(c, refused_request(c)["kv_pin"], refused_request(c)["drafter"]) else "started",
    ),
    S("000", "largest pin without the drafter (GiB)", "13.81", lambda c: gib(largest_pin(c, False), 2, down=True)),
    S("000", "largest pin without the drafter (B)", "14.8e9", lambda c: e9(largest_pin(c, False), 1, down=True)),
    S("000", "largest pin with the drafter (GiB)", "8.75", lambda c: gib(largest_pin(c, True), 2, down=True)),
    S(
        "000",
        "largest pin with the drafter (B)",
        "9.4e9",
        lambda c: e9(largest_pin(c, True), 2, down=True),
        catalog_gives="9.39e9",
        reason="9.398e9 B rounded up by the document to 9.4e9, which the gate refuses; the site rounds the limit down",
    ),
    S("000", "memory guard, kills after polls in a row", "3", guard_kills_at_poll),
    S("000", "memory guard, floor (GiB)", "8", lambda c: gib(c.policy["guard"]["floor"].value, 0)),
    S("000", "memory guard, polls every (s)", "2", lambda c: count(c.policy["guard"]["poll_seconds"].value)),
    S("000", "why 8 GiB, the incident's date", "2026-09-30", lambda c: c.incidents["2026-09-30-prefill"]["date"]),
    S("000", "why 8 GiB, prefill budget that hung", "16,384", lambda c: count(c.incidents["2026-09-30-prefill"]["prefill_budget"])),
    S("000", "why 8 GiB, hung at least (GiB)", "0.8", lambda c: gib(c.incidents["2026-09-30-prefill"]["available"].minimum, 1)),
    S("000", "why 8 GiB, hung at most (GiB)", "4.2", lambda c: gib(c.incidents["2026-09-30-prefill"]["available"].maximum, 1)),
    S("000", "why 8 GiB, served for weeks (GiB)", "9.1", lambda c: gib(c.incidents["2026-09-30-prefill"]["served_for_weeks_available"].value, 1)),
    S("000", "why 8 GiB, 8 sits", "under the second and well above the first", headroom_verdict),
    S("000", "generation 234, pin", "16e9", lambda c: e9(gen(c, 234)["kv_pin"])),
    S("000", "generation 234, weights in the row (GiB)", "76.68", lambda c: gib(term(gen234_gate(c), "weights"))),
    S("000", "generation 234, KV pin (GiB)", "14.90", lambda c: gib(term(gen234_gate(c), "KV pin"))),
    S("000", "generation 234, overhead guess (GiB)", "4.3", lambda c: gib(term(gen234_gate(c), "overhead"), 1)),
    S("000", "generation 234, headroom (GiB)", "8", lambda c: gib(term(gen234_gate(c), "start headroom"), 0)),
    S("000", "generation 234, needed (GiB)", "103.9", lambda c: gib(gen234_gate(c).needs, 1)),
    S("000", "generation 234, ~free (GiB)", "117", lambda c: gib(gen234_gate(c).available[0], 0)),
    S("000", "generation 234, the gate", "passed", lambda c: "passed" if gen234_gate(c).passes else "refused"),
    S("000", "generation 234, the real overhead (GiB)", "13.4", lambda c: gib(derive.overhead(gen(c, 235)).bytes, 1)),
    S("000", "generation 234, lowest available in warmup (GiB)", "7.9", lambda c: gib(gen(c, 234)["lowest_available"].value, 1)),
    S(
        "000",
        "generation 234, the guard",
        "killed",
        lambda c: "killed" if gen(c, 234)["lowest_available"].value < c.policy["guard"]["floor"].value and gen(c, 234)["outcome"] == "killed" else "not killed",
    ),
    S("000", "the next start, pin", "10e9", lambda c: e9(gen(c, 235)["kv_pin"])),
    S("000", "the next start", "serving", lambda c: gen(c, 235)["outcome"]),
    S("000", "GB10, LPDDR5X (GB, NVIDIA spec; a binary capacity)", "128", lambda c: gib(c.boxes[SPARK]["spec_memory"].value, 0)),
    S("000", "GB10, the box reports total (GiB)", "121.69", lambda c: gib(c.boxes[SPARK]["total_memory"].value)),
    S("000", "page cache, checkpoint just read (GB)", "~98", lambda c: "~" + gb(c.incidents["2026-10-10-page-cache"]["checkpoint"].value)),
    S("000", "page cache, available at least (GiB)", "21", lambda c: gib(c.incidents["2026-10-10-page-cache"]["available"].minimum, 0)),
    S("000", "page cache, available at most (GiB)", "24", lambda c: gib(c.incidents["2026-10-10-page-cache"]["available"].maximum, 0)),
    S("000", "page cache, free at least (GiB)", "1.4", lambda c: gib(c.incidents["2026-10-10-page-cache"]["free"].minimum, 1)),
    S("000", "page cache, free at most (GiB)", "3.5", lambda c: gib(c.incidents["2026-10-10-page-cache"]["free"].maximum, 1)),
    S("000", "page cache, the incident's date", "2026-10-10", lambda c: c.incidents["2026-10-10-page-cache"]["date"]),
    S("000", "page cache, vm.min_free_kbytes (MB)", "44", lambda c: mb(c.incidents["2026-10-10-page-cache"]["min_free_kbytes"].value)),
    S("000", "idle is not loaded, idle (GiB)", "~11.3", lambda c: "~" + gib(c.deployments[FLASH_NEXT]["readings"]["idle_available"].value, 1)),
    S("000", "idle is not loaded, loaded (GiB)", "~4.8", lambda c: "~" + gib(c.deployments[FLASH_NEXT]["readings"]["loaded_available"].value, 1)),
    S("000", "what to change, drafters (GiB)", "5.06", lambda c: gib(derive.gate_row(c, DSV4).drafter.bytes)),
    S("000", "what to change, calibrated prefill budget", "8,192", lambda c: count(c.policy["gate"]["calibration"]["prefill_budget"].value)),
    S("000", "what to change, calibrated seats", "16", lambda c: count(c.policy["gate"]["calibration"]["seats"].value)),
]

# --- 001: KV pool ---------------------------------------------------------------------------

KV_POOL = [
    S("001", "intro, fewest bytes per token (modeled)", "5,987", lambda c: count(min(r.bytes_per_token for r in derive.kv_readings(c)))),
    S("001", "intro, most bytes per token (measured)", "55,011", lambda c: count(max(r.bytes_per_token for r in derive.kv_readings(c)))),
    S("001", "intro, 10 GB holds at most cost (tokens)", "181,777", lambda c: count(ds_measured(c).tokens_at(TEN_GB)[0])),
    S("001", "intro, 10 GB holds at least cost (million tokens)", "1.67", lambda c: millions(ds_hybrid(c).tokens_at(TEN_GB)[0])),
    S("001", "RTX 5090, card total (GiB)", "31.36", lambda c: gib(c.boxes[RTX]["total_memory"].value)),
    S("001", "RTX 5090, free at start (GiB)", "30.85", lambda c: gib(c.boxes[RTX]["free_at_start"].value)),
    S("001", "RTX 5090, 0.99", "refused", lambda c: rtx_check(c, "0.99")),
    S("001", "RTX 5090, 1.0", "refused", lambda c: rtx_check(c, "1.0")),
    S(
        "001",
        "RTX 5090, the ceiling",
        "0.9837",
        lambda c: plain(fraction.ceiling(c.boxes[RTX]["total_memory"].value, c.boxes[RTX]["free_at_start"].value, 4), 4),
    ),
    S("001", "RTX 5090, measured on", "2026-10-11", lambda c: c.boxes[RTX]["free_at_start"].date),
    S("001", "RTX 5090, serving pin (GiB)", "7.92", lambda c: gib(c.boxes[RTX]["serving"]["kv_pin"].value)),
    S("001", "RTX 5090, serving pin (B)", "8,501,810,176", lambda c: fmt(c.boxes[RTX]["serving"]["kv_pin"].value, "B").removesuffix(" B")),
    S("001", "RTX 5090, serving fraction", "0.98", lambda c: plain(c.boxes[RTX]["serving"]["gpu_memory_utilization"].value, 2)),
    S("001", "RTX 5090, 0.98 passes the check", "starts", lambda c: rtx_check(c, str(c.boxes[RTX]["serving"]["gpu_memory_utilization"].value))),
    S("001", "startup line, GPU KV cache size (tokens)", "181,777", lambda c: count(ds_measured(c).tokens_at(gen(c, 235)["kv_pin"])[0])),
    S("001", "startup line, max_model_len", "131,072", lambda c: count(derive.settings(dsv4(c))["max_model_len"])),
    S(
        "001",
        "startup line, Maximum concurrency",
        "1.39x",
        lambda c: times(kv.full_contexts(gen(c, 235)["kv_tokens"].value, derive.settings(dsv4(c))["max_model_len"]), 2),
    ),
    S("001", "tokens = pool / bytes per token, the pool", "10e9", lambda c: e9(gen(c, 235)["kv_pin"])),
    S("001", "tokens = pool / bytes per token, bytes per token", "55,011", lambda c: count(ds_measured(c).bytes_per_token)),
    S("001", "tokens = pool / bytes per token, the logged tokens", "181,777", lambda c: count(ds_measured(c).tokens_at(gen(c, 235)["kv_pin"])[0])),
    S(
        "001",
        "tokens = pool / bytes per token, the quotient 10e9 / 55,011",
        "181,777",
        lambda c: count(kv.tokens_for_pool(gen(c, 235)["kv_pin"], ds_measured(c).bytes_per_token)),
        catalog_gives="181,781",
        reason="55,011 B/token is pooled over generations 234, 235 and 237 (36e9 B / 654,412 tokens = 55,011.2, printed and "
        "used in whole bytes); 10e9 B / 55,011 is 181,781.8, whole tokens 181,781 (a pool holds no part of a token); the 181,777 the document writes after '=' is the count logged at 10e9 (55,012 B/token at that pin)",
    ),
    S(
        "001",
        "max concurrency = tokens / max_model_len",
        "1.39",
        lambda c: plain(kv.full_contexts(gen(c, 235)["kv_tokens"].value, derive.settings(dsv4(c))["max_model_len"]), 2),
    ),
    S("001", "Flash-Next, the date", "2026-09-30", lambda c: flash_next(c, 4).provenance.rsplit(", ", 1)[-1]),
    S("001", "Flash-Next, pin", "28e9", lambda c: e9(c.deployments[FLASH_NEXT]["starts"][0]["kv_pin"])),
    S("001", "Flash-Next, context", "262,144", lambda c: count(flash_next(c, 4).max_model_len)),
    S("001", "Flash-Next, speculative tokens", "4", lambda c: count(flash_next(c, 4).speculative_tokens)),
    S("001", "Flash-Next, 4 speculative tokens (tokens)", "1,708,119", lambda c: count(flash_next(c, 4).tokens_at(parse_size("28e9"))[0])),
    S(
        "001",
        "Flash-Next, Maximum concurrency",
        "6.52x",
        lambda c: times(kv.full_contexts(int(flash_next(c, 4).tokens_at(parse_size("28e9"))[0]), flash_next(c, 4).max_model_len), 2),
    ),
    S("001", "Flash-Next, 3 speculative tokens (tokens)", "1,752,822", lambda c: count(flash_next(c, 3).tokens_at(parse_size("28e9"))[0])),
    S("001", "Flash-Next, 2 speculative tokens (tokens)", "1,791,558", lambda c: count(flash_next(c, 2).tokens_at(parse_size("28e9"))[0])),
]

_BPT_TABLE = {
    # row: (B / token / rank, tokens in 10 GB)
    "DeepSeek-V4-Flash, vLLM, fp8_ds_mla": ("55,011", "181,777"),
    "Qwen3.8 27B, vLLM, bf16": ("36,860", "271,297"),
    "Qwen3.8 27B, SGLang, fp8": ("21,502", "465,073"),
    "Qwen3.8 Flash-Next, vLLM, bf16": ("16,392", "610,054"),
    "GLM-5.3-Flash, vLLM, fp8": ("6,973", "1,434,103"),
    "DeepSeek-V4-Flash, compressed layout": ("~5,987", "~1,670,000"),
}
# The document divides 10e9 by the rounded cost, as the site does (a printed result is worked
# from its printed operands), but rounds the quotient to nearest; the site floors it, since a pool
# holds whole tokens (vLLM's own count is floored too).
_BPT_DISAGREES: dict[str, tuple[str, str]] = {
    "Qwen3.8 27B, vLLM, bf16": ("271,296", "10e9 / 36,860 = 271,296.8: whole tokens round down"),
    "Qwen3.8 Flash-Next, vLLM, bf16": ("610,053", "10e9 / 16,392 = 610,053.7: whole tokens round down"),
    "GLM-5.3-Flash, vLLM, fp8": ("1,434,102", "10e9 / 6,973 = 1,434,102.9: whole tokens round down"),
}

for _row, (_bpt, _tokens) in _BPT_TABLE.items():
    _gives, _reason = _BPT_DISAGREES.get(_row, (None, ""))
    KV_POOL += [
        S("001", f"bytes per token, {_row}, B per token", _bpt, lambda c, r=_row: bpt(BPT_ROWS[r](c))),
        S("001", f"bytes per token, {_row}, tokens in 10 GB", _tokens, lambda c, r=_row: tokens_in_10gb(BPT_ROWS[r](c)), _gives, _reason),
    ]

KV_POOL += [
    S(
        "001",
        "bytes per token, DeepSeek over generations 234/235 alone",
        "55,011",
        lambda c: count(kv.pooled_bytes_per_token([(gen(c, g)["kv_pin"], gen(c, g)["kv_tokens"].value) for g in (234, 235)])),
    ),
    S("001", "bytes per token, DeepSeek source date", "2026-10-24", lambda c: ds_measured(c).provenance.rsplit(", ", 1)[-1]),
    S(
        "001",
        "bytes per token, Qwen3.8 27B vLLM generations",
        "103/104",
        lambda c: reading(c, "qwen3.8-27b", kv_dtype="bf16").provenance.split("gen ")[1].split(",")[0],
    ),
    S("001", "bytes per token, Qwen3.8 27B vLLM date", "2026-10-02", lambda c: reading(c, "qwen3.8-27b", kv_dtype="bf16").provenance.rsplit(", ", 1)[-1]),
    S(
        "001",
        "bytes per token, Qwen3.8 27B SGLang generation",
        "123",
        lambda c: reading(c, "qwen3.8-27b", kv_dtype="fp8").provenance.split("gen ")[1].split(",")[0],
    ),
    S("001", "bytes per token, Qwen3.8 27B SGLang date", "2026-10-03", lambda c: reading(c, "qwen3.8-27b", kv_dtype="fp8").provenance.rsplit(", ", 1)[-1]),
    S("001", "bytes per token, GLM run on DGX Sparks", "2", lambda c: count(reading(c, "glm-5.3-flash", kv_dtype="fp8").tp)),
    S("001", "generations, 234, pin", "16e9", lambda c: e9(gen(c, 234)["kv_pin"])),
    S("001", "generations, 234, pin (GiB)", "14.90", lambda c: gib(gen(c, 234)["kv_pin"])),
    S("001", "generations, 234, tokens", "290,858", lambda c: count(gen(c, 234)["kv_tokens"].value)),
    S(
        "001",
        "generations, 234, full contexts",
        "2.22",
        lambda c: plain(kv.full_contexts(gen(c, 234)["kv_tokens"].value, derive.settings(dsv4(c), gen(c, 234))["max_model_len"]), 2),
    ),
    S("001", "generations, 234, lowest available (GiB)", "7.9", lambda c: gib(gen(c, 234)["lowest_available"].value, 1)),
    S("001", "generations, 234, the floor (GiB)", "8", lambda c: gib(c.policy["guard"]["floor"].value, 0)),
    S("001", "generations, 235, pin", "10e9", lambda c: e9(gen(c, 235)["kv_pin"])),
    S("001", "generations, 235, pin (GiB)", "9.31", lambda c: gib(gen(c, 235)["kv_pin"])),
    S("001", "generations, 235, tokens", "181,777", lambda c: count(gen(c, 235)["kv_tokens"].value)),
    S(
        "001",
        "generations, 235, full contexts",
        "1.39",
        lambda c: plain(kv.full_contexts(gen(c, 235)["kv_tokens"].value, derive.settings(dsv4(c), gen(c, 235))["max_model_len"]), 2),
    ),
    S("001", "generations, 235, init (s)", "357", lambda c: count(gen(c, 235)["init_seconds"].value)),
    S("001", "generations, 235, decode (tok/s)", "28.8", lambda c: plain(gen(c, 235)["decode_rate"].value, 1)),
    S("001", "generations, 235, decode streams", "1", lambda c: count(gen(c, 235)["decode_rate"].extra["streams"])),
    S("001", "generations, 237, pin", "10e9", lambda c: e9(gen(c, 237)["kv_pin"])),
    S("001", "generations, 237, tokens", "181,777", lambda c: count(gen(c, 237)["kv_tokens"].value)),
    S(
        "001",
        "generations, 237, full contexts",
        "1.39",
        lambda c: plain(kv.full_contexts(gen(c, 237)["kv_tokens"].value, derive.settings(dsv4(c), gen(c, 237))["max_model_len"]), 2),
    ),
    S("001", "the plan's expectation (B per token)", "13,952", lambda c: count(ds_plan(c).bytes_per_token)),
    S(
        "001",
        "the plan's expectation, 16e9 holds (million tokens)",
        "1.15",
        lambda c: millions(ds_plan(c).tokens_at(parse_size("16e9"))[0]),
        catalog_gives="1.14",
        reason="16e9 / 13,952 = 1,146,788.9 tokens: 1.1467 million, which the site floors to 1.14 M as a pool holds whole tokens; the document rounds to nearest",
    ),
    S(
        "001",
        "the plan's expectation, all 8 seats at full length",
        "enough",
        lambda c: (
            "enough"
            if ds_plan(c).tokens_at(parse_size("16e9"))[0] >= kv.tokens_needed(derive.settings(dsv4(c))["seats"], derive.settings(dsv4(c))["max_model_len"])
            else "not enough"
        ),
    ),
    S("001", "the measured figure over the plan's", "3.9x", lambda c: times(ds_measured(c).bytes_per_token / ds_plan(c).bytes_per_token, 1)),
    S("001", "where the memory went, LPDDR5X (GB, a binary capacity)", "128", lambda c: gib(c.boxes[SPARK]["spec_memory"].value, 0)),
    S("001", "where the memory went, the guard's floor (GiB)", "8", lambda c: gib(c.policy["guard"]["floor"].value, 0)),
    S("001", "where the memory went, polls", "3", lambda c: count(c.policy["guard"]["polls_in_a_row"].value)),
    S("001", "where the memory went, seconds apart", "2", lambda c: count(c.policy["guard"]["poll_seconds"].value)),
    S(
        "001",
        "where the memory went, a serving pair settles near (GiB)",
        "4.8",
        lambda c: gib(c.deployments[FLASH_NEXT]["readings"]["loaded_available"].value, 1),
    ),
    S("001", "where the memory went, generation 234 hit (GiB)", "7.9", lambda c: gib(gen(c, 234)["lowest_available"].value, 1)),
    S("001", "with the drafter at 10e9, needs (GiB)", "115.1", lambda c: gib(needs(c, "10e9", True), 1)),
    S("001", "with the drafter at 10e9, ~free (GiB)", "114.5", lambda c: gib(free_at_gate(c), 1)),
    S("001", "with the drafter, the pin has to drop to", "9e9", lambda c: e9(largest_pin(c, True), 0, down=True)),
    S("001", "with the drafter, 8e9", "leaves a margin", lambda c: "leaves a margin" if passes(c, "8e9", True) else "refused"),
    S("001", "why 55,011, measured (B per token)", "55,011", lambda c: count(ds_measured(c).bytes_per_token)),
    S("001", "why 55,011, compressed layout (B per token)", "5,987", lambda c: count(ds_hybrid(c).bytes_per_token)),
    S("001", "why 55,011, compressed layout at 10e9 (million tokens)", "1.67", lambda c: millions(ds_hybrid(c).tokens_at(TEN_GB)[0])),
    S(
        "001",
        "why 55,011, compressed layout at 10e9 (full contexts)",
        "12.7",
        lambda c: plain(kv.full_contexts(int(ds_hybrid(c).tokens_at(TEN_GB)[0]), derive.settings(dsv4(c))["max_model_len"]), 1),
    ),
    S("001", "why 55,011, full contexts of", "131,072", lambda c: count(derive.settings(dsv4(c))["max_model_len"])),
    S("001", "sizing it, published figure off by", "3.9x", lambda c: times(ds_measured(c).bytes_per_token / ds_plan(c).bytes_per_token, 1)),
    S("001", "sizing it, idle free (GiB)", "~11", lambda c: "~" + gib(c.deployments[FLASH_NEXT]["readings"]["idle_available"].value, 0)),
    S("001", "sizing it, loaded free (GiB)", "~4.8", lambda c: "~" + gib(c.deployments[FLASH_NEXT]["readings"]["loaded_available"].value, 1)),
    S("001", "sizing it, readings taken in", "2026-09", lambda c: c.deployments[FLASH_NEXT]["readings"]["idle_available"].date),
]

# --- 003: the kernel-init report ------------------------------------------------------------

KERNEL_INIT = [
    S("003", "environment, unified memory (GiB, free's whole GiB)", "121", lambda c: gib(c.boxes[SPARK]["total_memory"].value, 0, down=True)),
    S("003", "environment, checkpoint on disk (GB)", "~75", lambda c: "~" + gb(trace(c)["checkpoint"].value)),
    S("003", "observation, idle available (free -h GiB)", "~118", lambda c: "~" + gib(sample(c, 0), 0)),
    S("003", "trace, T+0s (MiB, labelled MB)", "120919", lambda c: mib_ungrouped(sample(c, 0))),
    S("003", "trace, T+~23s (MiB, labelled MB)", "119280", lambda c: mib_ungrouped(sample(c, 23))),
    S("003", "trace, T+~25s (MiB, labelled MB)", "68501", lambda c: mib_ungrouped(sample(c, 25))),
    S("003", "trace, T+~30s (MiB, labelled MB)", "45826", lambda c: mib_ungrouped(sample(c, 30))),
    S("003", "trace, T+~40s (MiB, labelled MB)", "44674", lambda c: mib_ungrouped(sample(c, 40))),
    S("003", "trace, starting to load model at (s)", "23", lambda c: f"{trace(c)['kernel_init']['from_t']:g}"),
    S("003", "trace, kernel and backend selection by (s)", "25", lambda c: f"{trace(c)['kernel_init']['to_t']:g}"),
    S("003", "the drop in the kernel-init window (free -h GiB)", "~50", lambda c: "~" + gib(kernel_init_drop(c), 0)),
    S("003", "auto-prefetch, share of available RAM (%)", "~90", lambda c: "~" + pct(c.policy["vllm"]["prefetch_fraction"].value)),
    S("003", "auto-prefetch, the 75 GB checkpoint after kernel init", "disabled", lambda c: prefetch_verdict(c, after_kernel_init(c))),
    S("003", "auto-prefetch, several extra minutes on a model of (GB)", "75", lambda c: gb(trace(c)["checkpoint"].value)),
]

# --- 004: several models on one box ---------------------------------------------------------

SEVERAL_MODELS = [
    S("004", "intro, memory shared (GB, a binary capacity)", "128", lambda c: gib(c.boxes[SPARK]["spec_memory"].value, 0)),
    S("004", "intro, addressable (GiB)", "121.6", lambda c: gib(c.plans["coder-and-70b"]["budget_stated"].value, 1)),
    S("004", "weights, 70B at FP8 (GB)", "70", lambda c: gb(rule_of_thumb(c, "example-70b-fp8"))),
    S("004", "weights, 70B at FP8, catalog row (GB)", "70", lambda c: gb(c.models["example-70b-fp8"]["weights"].value)),
    S("004", "weights, 27B at 4-bit (GB)", "15", lambda c: gb(c.models["example-27b-4bit"]["weights"].value)),
    S("004", "example, 27B at 4-bit (GB)", "15", lambda c: gb(residents(c)[0].weights)),
    S("004", "example, 70B at 4-bit (GB)", "37", lambda c: gb(residents(c)[1].weights)),
    S("004", "example, weights together (GB)", "52", lambda c: gb(spark_budget(c).used)),
    S(
        "004",
        "example, left for KV cache and headroom",
        "65-70 GB",
        lambda c: fmt(spark_budget(c).left, "GiB"),
        catalog_gives="73.26 GiB",
        reason="the document takes 52 GB from ~121.6 as if GB were GiB (121.6 - 52 = 69.6); 52 GB is 48.43 GiB, which "
        "leaves 73.26 GiB of the box's 121.69 GiB (78.66 GB)",
    ),
    S("004", "fractions planned together", "0.5", lambda c: plain(c.fraction_plans["planned-together"]["fractions"][0], 1)),
    S("004", "fractions planned together, second", "0.35", lambda c: plain(c.fraction_plans["planned-together"]["fractions"][1], 2)),
    S("004", "fractions planned together, 0.5 + 0.35", "both start", lambda c: plan_verdict(fraction_plan(c, "planned-together"))),
    S("004", "each engine owns the box", "0.85", lambda c: plain(c.fraction_plans["each-owns-the-box"]["fractions"][0], 2)),
    S("004", "each engine owns the box, 0.85 + 0.85", "the second refused", lambda c: plan_verdict(fraction_plan(c, "each-owns-the-box"))),
    S("004", "when the budget does not close, addressable (GiB)", "121.6", lambda c: gib(c.plans["coder-and-70b"]["budget_stated"].value, 1)),
    S("004", "two-node cluster, pooled memory (GB, a binary capacity)", "256", lambda c: gib(dsv4(c)["boxes"] * c.boxes[SPARK]["spec_memory"].value, 0)),
]

FIGURES: list[SourceFigure] = [*MEMORY_BUDGET, *KV_POOL, *KERNEL_INIT, *SEVERAL_MODELS]

# Figures in the documents that the catalog does not hold, and why (the report lists them).
NOT_IN_CATALOG = {
    "000, Overhead, CUDA graphs up to batch 48": "a vLLM setting of the start, not recorded in starts.yaml",
    "001, KV type saves at most 40 % per token": "no smaller KV type is in the catalog to compute it from",
    "001, Flash-Next measured 2026-09-15": "the catalog holds the 2026-09-30 starts only",
    "003, free polled every 2 s": "prose in the trace's source, not a figure of the trace",
    "004, 95 % utilization": "illustrative, not an observation",
    "004, 200 GbE": "a network figure, outside a memory catalog",
}
