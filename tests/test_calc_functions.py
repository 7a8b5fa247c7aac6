"""calc's small functions: the guard, trace parsing, vLLM's fraction check, the KV pool, the gate
(inside and outside its calibration), the several-models budget and the prefetch rule."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import edit

from calc.answers import guard, prefetch, report
from calc.catalog.loader import load_dir
from calc.engine import budget, derive, fraction, gate, kv
from calc.units import GiB, InputError, KiB, MiB, parse_size

DSV4 = "dsv4-flash-pair"


# --- the memory guard -----------------------------------------------------------------------


def polls(*gib: float, every: float = 2) -> list[tuple[float, int]]:
    """MemAvailable polls `every` seconds apart, given in GiB."""
    return [(i * every, int(Fraction(str(g)) * GiB)) for i, g in enumerate(gib)]


@pytest.fixture(scope="module")
def guard_policy(catalog) -> tuple[int, int]:
    policy = catalog.policy["guard"]
    return policy["floor"].value, policy["polls_in_a_row"].value


def test_guard_policy_is_three_polls_under_8_gib(guard_policy) -> None:
    assert guard_policy == (8 * GiB, 3)


def test_guard_kills_at_the_third_consecutive_poll_under_the_floor(guard_policy) -> None:
    floor, n = guard_policy
    result = guard.run(polls(10, 7.9, 7.5, 7.0, 6.0), floor, n)
    assert result.killed
    assert result.at == 6  # polls at 2, 4, 6 s: the third one under
    assert result.longest_run == 4
    assert (result.lowest, result.lowest_at) == (6 * GiB, 8)


def test_guard_does_not_kill_two_under_then_one_over(guard_policy) -> None:
    floor, n = guard_policy
    result = guard.run(polls(7, 7, 9, 7, 7, 9, 7, 7), floor, n)
    assert not result.killed
    assert result.at is None
    assert result.longest_run == 2


def test_guard_exactly_at_the_floor_is_not_under(guard_policy) -> None:
    floor, n = guard_policy
    samples = [(t, floor) for t in range(0, 20, 2)]
    assert not guard.run(samples, floor, n).killed
    assert guard.run([(t, floor - 1) for t in range(0, 6, 2)], floor, n).killed


def test_guard_stops_at_serving(guard_policy) -> None:
    floor, n = guard_policy
    samples = polls(10, 7, 7, 7, 7, 7)  # 0 2 4 6 8 10 s
    assert guard.run(samples, floor, n).at == 6
    served = guard.run(samples, floor, n, serving_at=6)
    assert not served.killed
    assert served.longest_run == 2
    assert guard.run(samples, floor, n, serving_at=6.5).at == 6


def test_guard_over_the_catalogs_kernel_init_trace(catalog, guard_policy) -> None:
    trace = catalog.traces["kernel-init-report"]
    samples = [(s["t"], s["available"]) for s in trace["samples"]]
    floor, n = guard_policy
    assert not guard.run(samples, floor, n).killed
    after_init = dict(samples)[trace["kernel_init"]["to_t"]]
    # a floor just above what kernel init left: polls at 25, 30 and 40 s are under it
    result = guard.run(samples, after_init + 1, n)
    assert result.killed and result.at == 40
    assert result.lowest == min(a for _, a in samples)


def test_guard_without_samples() -> None:
    with pytest.raises(ValueError, match="found no samples"):
        guard.run([], GiB, 3)


# --- traces as people paste them ------------------------------------------------------------


def test_parse_trace_formats() -> None:
    text = """# free polled every 2 s
0 120919 MiB

T+23s available=119280MiB   <- Starting to load model
T+~25s available= 68501 MiB # kernel/backend selection
30.5 44.75 GiB
"""
    assert guard.parse_trace(text) == [
        (0.0, 120919 * MiB),
        (23.0, 119280 * MiB),
        (25.0, 68501 * MiB),
        (30.5, parse_size("44.75 GiB")),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 10 GiB\n25 68501\n", "t.log, line 2: found '68501' without a unit, expected a size"),
        ("0 10 GiB\n\n# c\nhello world\n", "t.log, line 4: found 'hello world', expected '<seconds> <size>'"),
        ("25 10 GiB\n10 9 GiB\n", "t.log, line 2: found time 10 s after 25 s, expected times in order"),
        ("0 10 GiB\n2 68501 XB\n", "t.log, line 2: found unit 'XB' in '68501 XB', expected one of"),
        ("0 10 GiB\n2 99999 TiB\n", "t.log, line 2: found '99999 TiB', expected a memory size below 1 PiB"),
        ("", "t.log: found no polls"),
        ("# only a comment\n\n", "t.log: found no polls"),
    ],
)
def test_parse_trace_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as error:
        guard.parse_trace(text, "t.log")
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


# --- vLLM's gpu_memory_utilization check ----------------------------------------------------


@pytest.fixture(scope="module")
def rtx(catalog) -> tuple[int, int]:
    box = catalog.boxes["rtx-5090-node"]
    return box["total_memory"].value, box["free_at_start"].value


def test_fraction_ceiling_is_the_largest_that_passes(rtx) -> None:
    total, free = rtx
    ceiling = fraction.ceiling(total, free, 4)
    assert ceiling == Fraction("0.9837")
    assert fraction.passes(total, free, ceiling)
    assert not fraction.passes(total, free, ceiling + Fraction(1, 10**4))
    assert fraction.ceiling(total, free, 2) == Fraction("0.98")


def test_fraction_requested_is_rounded_up(rtx) -> None:
    total, _ = rtx
    f = Fraction("0.92")
    assert fraction.requested(total, f) == math.ceil(total * f)
    assert fraction.requested(total, f) >= total * f


def test_fraction_ceiling_edges() -> None:
    assert fraction.ceiling(100 * GiB, 200 * GiB) == 1
    assert fraction.ceiling(100 * GiB, 0) == 0
    assert fraction.ceiling(100 * GiB, 50 * GiB, 2) == Fraction(1, 2)


def test_fraction_plan_takes_each_grant_out_of_what_is_free() -> None:
    total = 100 * GiB
    engines = fraction.plan(total, 90 * GiB, [Fraction("0.5"), Fraction("0.35"), Fraction("0.1")])
    assert [e.passes for e in engines] == [True, True, False]
    assert [e.free_before for e in engines] == [90 * GiB, 40 * GiB, 40 * GiB - fraction.requested(total, Fraction("0.35"))]
    refused = fraction.plan(total, 90 * GiB, [Fraction("0.85"), Fraction("0.85")])
    assert [e.passes for e in refused] == [True, False]
    assert refused[1].free_before == 90 * GiB - fraction.requested(total, Fraction("0.85"))


# --- the KV pool ----------------------------------------------------------------------------


def test_bytes_per_token_and_its_inverse() -> None:
    per_token = kv.bytes_per_token(10**10, 181777)
    assert per_token == Fraction(10**10, 181777)
    assert kv.tokens_for_pool(10**10, per_token) == 181777
    pin = kv.pool_for_tokens(131072, per_token)
    assert pin * 181777 >= 131072 * 10**10 > (pin - 1) * 181777  # the smallest whole-byte pin
    with pytest.raises(ValueError):
        kv.bytes_per_token(10**10, 0)


def test_pooled_bytes_per_token_is_all_bytes_over_all_tokens() -> None:
    readings = [(16 * 10**9, 290858), (10**10, 181777), (10**10, 181777)]
    assert kv.pooled_bytes_per_token(readings) == Fraction(36 * 10**9, 290858 + 2 * 181777)


@pytest.mark.parametrize(
    ("tokens", "max_model_len", "block_size"),
    [(181777, 131072, 256), (1708119, 262144, 2304), (1000, 1000, 256), (255, 256, 16)],
)
def test_block_concurrency(tokens: int, max_model_len: int, block_size: int) -> None:
    per_request = math.ceil(max_model_len / block_size)
    expected = Fraction(tokens // block_size, per_request)
    assert kv.block_concurrency(tokens, max_model_len, block_size) == expected
    assert kv.block_concurrency(tokens, max_model_len, block_size) <= kv.full_contexts(tokens, max_model_len) + 1


def test_block_concurrency_counts_a_partly_used_block_whole() -> None:
    # 1,000 tokens need 4 blocks of 256: 2,048 tokens' worth of blocks (8 blocks) hold two requests
    assert kv.block_concurrency(2048, 1000, 256) == 2
    assert kv.block_concurrency(2047, 1000, 256) == Fraction(7, 4)


def test_full_contexts_and_the_floor() -> None:
    assert kv.full_contexts(181777, 131072) == Fraction(181777, 131072)
    assert kv.holds_one_context(131072, 131072, 0)  # up to 0.28.0: the request alone
    assert not kv.holds_one_context(131071, 131072, 0)
    # from 0.29.0 the check runs on the pool less one block (the null block): 131,072 + 256
    assert not kv.holds_one_context(131072, 131072, 256) and kv.holds_one_context(131328, 131072, 256)
    assert kv.one_request_pin(131072, 55011, 256) == 131328 * 55011 == 7_224_484_608
    assert kv.null_block_held((0, 29, 0)) and kv.null_block_held(None) and not kv.null_block_held((0, 28, 0))
    assert kv.tokens_needed(8, 20000) == 160000


@pytest.mark.parametrize(("kv_dtype", "dtype_bytes"), [("bf16", 2), ("fp16", 2), ("auto", 2), ("fp8", 1), ("fp8_e4m3", 1)])
@pytest.mark.parametrize(("kv_heads", "tp", "heads_here"), [(8, 1, 8), (8, 2, 4), (8, 8, 1), (4, 8, 1)])
def test_modeled_full_attention(kv_dtype, dtype_bytes, kv_heads, tp, heads_here) -> None:
    layers, head_dim = 64, 128
    model = {"id": "m", "architecture": {"layers": layers, "attention": "full", "kv_heads": kv_heads, "head_dim": head_dim}}
    got = derive.modeled_from_architecture(model, kv_dtype, tp=tp)
    assert got == 2 * heads_here * head_dim * dtype_bytes * layers


def test_modeled_mla_packed_and_plain(catalog) -> None:
    model = catalog.models["deepseek-v4-flash"]
    layers = model["architecture"]["layers"]
    assert derive.modeled_from_architecture(model, "fp8_ds_mla", tp=2) == 656 * layers
    assert derive.modeled_from_architecture(model, "fp8_ds_mla", tp=1) == 656 * layers  # MLA is not split across ranks
    assert derive.modeled_from_architecture(model, "bf16") == (512 + 64) * 2 * layers
    assert derive.modeled_from_architecture({"id": "m"}, "bf16") is None


def test_modeled_needs_its_dimensions() -> None:
    with pytest.raises(ValueError, match=r"models\[m\]\.architecture\.kv_heads: found nothing"):
        derive.modeled_from_architecture({"id": "m", "architecture": {"layers": 1, "attention": "full"}}, "bf16")
    with pytest.raises(ValueError, match=r"models\[m\]\.architecture\.kv_lora_rank: found nothing"):
        derive.modeled_from_architecture({"id": "m", "architecture": {"layers": 1, "attention": "mla"}}, "bf16")
    with pytest.raises(ValueError, match="--kv-cache-dtype: found 'int3'"):
        derive.modeled_from_architecture({"id": "m", "architecture": {"layers": 1, "attention": "full", "kv_heads": 1, "head_dim": 1}}, "int3")


# --- the gate -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def row(catalog) -> gate.GateRow:
    return derive.gate_row(catalog, DSV4)


@pytest.fixture(scope="module")
def free(catalog) -> tuple[int, int]:
    return report.defaults(catalog, DSV4).available


def test_gate_needs_is_the_sum_of_its_terms(catalog, row, free) -> None:
    result = gate.gate(row, gate.Request(10**10, True, 8192, 8), free)
    assert result.needs == row.weights.bytes + row.drafter.bytes + 10**10 + row.overhead.bytes + row.headroom.bytes
    assert result.margins == tuple(a - result.needs for a in free)
    assert result.passes == all(m >= 0 for m in result.margins)
    assert [t.name for t in gate.movable_terms(result)] == ["KV pin", "drafter"]


def test_gate_constants_come_from_the_catalog(catalog, row) -> None:
    start = derive.measured_start(catalog.deployments[DSV4])
    assert start["generation"] == 235
    assert row.weights.bytes == start["weights_loaded"].value
    assert row.overhead.bytes == start["available_before"].value - start["available_after"].value - start["weights_loaded"].value - start["kv_pin"]
    assert row.headroom.bytes == catalog.policy["gate"]["headroom"].value
    assert row.drafter.bytes == catalog.models["deepseek-v4-flash"]["drafter"]["weights"].value // 2
    assert (row.calibration_prefill, row.calibration_seats) == (8192, 16)


def test_gate_passes_on_every_box_or_not_at_all(row) -> None:
    needs = gate.gate(row, gate.Request(10**10), (200 * GiB,)).needs
    assert gate.gate(row, gate.Request(10**10), (needs, needs)).passes
    assert not gate.gate(row, gate.Request(10**10), (needs, needs - 1)).passes


def test_largest_pin_is_exactly_the_last_pin_that_passes(row, free) -> None:
    for drafter in (False, True):
        largest = gate.largest_pin(row, gate.Request(0, drafter), free)
        assert gate.gate(row, gate.Request(largest, drafter), free).passes
        assert not gate.gate(row, gate.Request(largest + 1, drafter), free).passes


def test_largest_pin_is_negative_when_nothing_passes(row) -> None:
    assert gate.largest_pin(row, gate.Request(0), (50 * GiB,)) < 0


def test_gate_drafter_without_one_in_the_row(row, free) -> None:
    result = gate.gate(replace(row, drafter=None), gate.Request(10**10, True), free)
    assert result.needs is None and "no drafter" in result.outside_calibration


@pytest.mark.parametrize(("prefill", "seats", "what"), [(16384, 8, "prefill budget 16,384"), (8192, 32, "seat count 32"), (8193, 8, "prefill budget 8,193")])
def test_gate_outside_calibration_without_constants(row, free, prefill, seats, what) -> None:
    result = gate.gate(row, gate.Request(10**10, False, prefill, seats), free)
    assert result.needs is None and result.passes is None and result.margins == ()
    assert what in result.outside_calibration
    assert "calibrat" in result.outside_calibration
    assert gate.largest_pin(row, gate.Request(0, False, prefill, seats), free) is None


def test_gate_at_the_calibration_edge_has_zero_terms(row, free) -> None:
    result = gate.gate(row, gate.Request(10**10, False, 8192, 16), free)
    terms = {t.name: t.bytes for t in result.terms}
    assert terms["prefill-budget term"] == terms["seat term"] == 0


def test_gate_outside_calibration_with_constants_from_the_catalog(catalog, catalog_copy: Path, free) -> None:
    edit(
        catalog_copy,
        "models.yaml",
        "  - id: deepseek-v4-flash\n    name: DeepSeek-V4-Flash-0731 NVFP4\n",
        "  - id: deepseek-v4-flash\n    name: DeepSeek-V4-Flash-0731 NVFP4\n"
        "    gate:\n"
        "      prefill_bytes_per_token:\n        value: 64 KiB\n        kind: estimated\n"
        "      seat_bytes:\n        value: 0.25 GiB\n        kind: estimated\n",
    )
    changed = derive.gate_row(load_dir(catalog_copy), DSV4)
    base = gate.gate(changed, gate.Request(10**10, False, 8192, 16), free).needs
    assert base == gate.gate(derive.gate_row(catalog, DSV4), gate.Request(10**10, False, 8192, 16), free).needs

    prefill = gate.gate(changed, gate.Request(10**10, False, 16384, 8), free)
    assert prefill.outside_calibration is None
    terms = {t.name: t.bytes for t in prefill.terms}
    assert terms["prefill-budget term"] == (16384 - 8192) * 64 * KiB > 0
    assert prefill.needs == base + terms["prefill-budget term"]

    seats = gate.gate(changed, gate.Request(10**10, False, 8192, 32), free)
    terms = {t.name: t.bytes for t in seats.terms}
    assert terms["seat term"] == (32 - 16) * parse_size("0.25 GiB") > 0
    assert seats.needs == base + terms["seat term"]


def test_gate_row_of_generation_234_is_the_pre_measurement_row(catalog) -> None:
    start = derive.start_by_generation(catalog.deployments[DSV4], 234)
    recorded = derive.gate_row_of_start(catalog, DSV4, start)
    assert recorded.weights.bytes == start["gate_row"]["weights"].value == catalog.models["deepseek-v4-flash"]["weights"].value
    assert recorded.overhead.bytes == start["gate_row"]["overhead"].value
    with pytest.raises(KeyError):
        derive.start_by_generation(catalog.deployments[DSV4], 999)


def test_gate_row_without_a_measured_start_or_weights(catalog) -> None:
    with pytest.raises(InputError, match="flash-next-pair: no measured start and no weights"):
        derive.gate_row(catalog, "flash-next-pair")


# --- the start report (what the command line and the calculator show) -----------------------


def test_report_defaults_and_given_available(catalog) -> None:
    base = report.defaults(catalog, DSV4)
    request = catalog.deployments[DSV4]["requests"][0]
    assert base.available == (request["available"].value,) * 2
    assert (base.kv_pin, base.seats, base.prefill_budget, base.max_model_len) == (10**10, 8, 8192, 131072)
    assert report.defaults(catalog, "flash-next-pair", (GiB, GiB)).available == (GiB, GiB)
    with pytest.raises(InputError, match="no MemAvailable reading"):
        report.defaults(catalog, "flash-next-pair")


def test_report_check_names_fields(catalog) -> None:
    inputs = replace(report.defaults(catalog, DSV4), max_model_len=0, available=(), drafter=True, speculative_tokens=0)
    problems = report.check(inputs)
    assert [p.split(":")[0] for p in problems] == ["max_model_len", "available", "speculative tokens"]


def test_the_start_report_is_typed_and_its_json_keeps_the_keys_and_leaves_out_what_was_not_asked(catalog, monkeypatch) -> None:
    r = report.start_report(catalog, report.defaults(catalog, DSV4))
    assert isinstance(r, report.StartReport) and isinstance(r.kv, report.PoolFigures) and r.kv.seats is None
    out = r.to_json()
    assert list(out) == [
        "deployment", "model", "box", "boxes_count", "data_parallel", "tp", "inputs", "terms", "needs_bytes", "outside_calibration", "passes",
        "boxes", "tightest_box", "largest_pin_bytes", "kv", "kv_source", "fraction", "flags", "flags_are_the_fix", "headroom_bytes", "fix",
        "changes", "notes",
    ]  # fmt: skip
    assert list(out["boxes"][0]) == ["box", "available_bytes", "head_extra_bytes", "needs_bytes", "passes", "margin_bytes", "largest_pin_bytes"]
    defaults = report.defaults(catalog, DSV4)
    two = report.start_report(catalog, replace(defaults, data_parallel=2, available=defaults.available * 2)).to_json()
    assert two["kv_tokens_all_replicas"] == 2 * 181777 and list(two)[-1] == "kv_tokens_all_replicas" and len(two["boxes"]) == 2 * len(out["boxes"])
    assert list(out["kv"]) == [
        "bytes_per_token", "tokens", "tokens_logged", "full_contexts", "holds_one_context", "one_context_pin_bytes", "block_size", "block_source"
    ]  # fmt: skip
    assert out["kv"]["tokens"] == 181777 and out["largest_pin_bytes"] == {
        "without_drafter": r.largest_pin_bytes.without_drafter,
        "with_drafter": r.largest_pin_bytes.with_drafter,
    }
    assert out["boxes"][0]["margin_bytes"] == r.margins[0] == out["boxes"][0]["available_bytes"] - out["needs_bytes"]
    seated = report.start_report(catalog, replace(report.defaults(catalog, DSV4), typical_context=32768))
    assert seated.kv is not None and seated.kv.seats is not None and seated.kv.seats.tokens_needed == seated.inputs.seats * 32768
    assert list(seated.to_json()["kv"])[-3:] == ["tokens_needed", "seats_fit", "pin_for_seats_bytes"]
    monkeypatch.setattr(report, "pool_reading", lambda *args: None)  # a model without a measured bytes per token
    unread = report.start_report(catalog, report.defaults(catalog, DSV4))
    assert unread.kv is None and unread.to_json()["kv"] == {"bytes_per_token": None}


def test_report_kv_figures_use_the_logged_count_at_a_logged_pin(catalog) -> None:
    result = report.start_report(catalog, report.defaults(catalog, DSV4))
    assert result.kv.tokens == 181777 and result.kv.tokens_logged
    other = report.start_report(catalog, replace(report.defaults(catalog, DSV4), kv_pin=12 * 10**9))
    assert not other.kv.tokens_logged
    assert other.kv.tokens == kv.tokens_for_pool(12 * 10**9, other.kv.bytes_per_token)


def test_report_to_json_is_plain() -> None:
    assert report.to_json({"a": Fraction(1, 4), "b": (1, [Fraction(1, 2)])}) == {"a": 0.25, "b": [1, [0.5]]}


# --- several models, prefetch ---------------------------------------------------------------


def test_budget_sums_weights_kv_and_headroom() -> None:
    residents = [budget.Resident("a", 15 * 10**9, 10 * 10**9, GiB), budget.Resident("b", 37 * 10**9)]
    result = budget.budget(100 * 10**9, residents)
    assert result.used == 62 * 10**9 + GiB
    assert result.left == 100 * 10**9 - result.used
    assert result.fits
    assert not budget.budget(10**9, residents).fits


def test_weights_from_parameters() -> None:
    assert budget.weights_from_parameters(70e9, 8) == 70 * 10**9
    assert budget.weights_from_parameters(27e9, 4) == 13.5 * 10**9
    assert budget.weights_from_parameters(70e9, 4) == 35 * 10**9


def test_prefetch_rule_boundary(catalog) -> None:
    share = catalog.policy["vllm"]["prefetch_fraction"].value
    assert share == Fraction(9, 10)
    available = 100 * 10**9
    assert prefetch.largest_prefetched(available, share) == 90 * 10**9
    assert prefetch.prefetch_enabled(90 * 10**9, available, share)
    assert not prefetch.prefetch_enabled(90 * 10**9 + 1, available, share)


def test_gate_without_a_measured_start_says_the_overhead_is_unknown(catalog_copy) -> None:
    """No start measured: the overhead remainder does not exist yet, and the gate says so instead of counting it as zero."""
    edit(
        catalog_copy,
        "models.yaml",
        "    name: Qwen3.8 Flash-Next MoE NVFP4\n",
        "    name: Qwen3.8 Flash-Next MoE NVFP4\n    weights:\n      value: 40 GiB\n      kind: shard headers\n",
    )
    catalog = load_dir(catalog_copy)
    row = derive.gate_row(catalog, "flash-next-pair")
    assert row.overhead is None
    result = gate.gate(row, gate.Request(parse_size("28e9")), (100 * GiB,))
    assert result.needs is None and result.passes is None
    assert "overhead" in result.outside_calibration
    assert gate.largest_pin(row, gate.Request(0), (100 * GiB,)) is None


# --- per-request cost over max_model_len (ENGINE-FACTS; shared/data/public-kv-reports.md) ----


def test_fit_per_request_recovers_exact_terms() -> None:
    per_token, fixed = 4096, 3 * 10**9
    pool = 24 * GiB
    points = []
    for length in (32_768, 131_072, 524_288):
        tokens = Fraction(pool * length, per_token * length + fixed)  # unfloored, so the fit can be exact
        assert kv.tokens_at_length(pool, Fraction(per_token), Fraction(fixed), length) == int(tokens)  # vLLM's count, whole
        points.append((length, kv.per_request_bytes(pool, tokens, length)))
    assert kv.fit_per_request(points) == (per_token, fixed)


def test_fit_needs_two_lengths() -> None:
    with pytest.raises(ValueError, match="two or more"):
        kv.fit_per_request([(131_072, Fraction(7 * 10**9)), (131_072, Fraction(7 * 10**9))])


@pytest.mark.parametrize(
    ("pool_gib", "per_token", "fixed_e9", "at_50k", "at_500k"),
    # the public reports' worked check, "Fit for source 1": 24.0 and 25.0 GiB rows
    [(24, "4,493", "3.013", "64,748", "10,518"), (25, "4,680", "3.138", "67,446", "10,957")],
)
def test_fit_reproduces_the_public_reports_worked_check(catalog, pool_gib, per_token, fixed_e9, at_50k, at_500k) -> None:
    from calc.units import fmt

    fits = {f.pool: f for f in derive.length_fits(catalog)}
    fit = fits[pool_gib * GiB]
    assert fmt(fit.per_token, "count") == per_token
    assert fmt(fit.fixed, "e9", 3) == f"{fixed_e9}e9 B"
    assert fmt(fit.effective_bytes_per_token(50_000), "count") == at_50k
    assert fmt(fit.effective_bytes_per_token(500_000), "count") == at_500k
    # "Predicted 250K pool: 1.56M tokens (own fit)", rounded to nearest; the site floors whole tokens
    predicted = kv.tokens_at_length(fit.pool, fit.per_token, fit.fixed, 250_000)
    assert isinstance(predicted, int) and 1_555_000 < predicted < 1_560_000
    assert fmt(predicted, "M tokens") == "1.55 M tokens"


def test_unrecorded_prefill_and_seats_stand_at_the_calibration_never_zero(catalog_copy) -> None:
    edit(catalog_copy, "starts.yaml", "      seats: 8\n      prefill_budget: 8192\n", "")
    catalog = load_dir(catalog_copy)
    calibration = catalog.policy["gate"]["calibration"]
    inputs = report.defaults(catalog, "dsv4-flash-pair")
    assert (inputs.prefill_budget, inputs.seats) == (calibration["prefill_budget"].value, calibration["seats"].value)
    deployment = catalog.deployments["dsv4-flash-pair"]
    request = derive.request_of(catalog, deployment, derive.start_by_generation(deployment, 235))
    assert (request.prefill_budget, request.seats) == (calibration["prefill_budget"].value, calibration["seats"].value)


def test_a_deployment_without_max_model_len_is_named(catalog_copy) -> None:
    edit(catalog_copy, "starts.yaml", "      max_model_len: 131072\n", "")
    catalog = load_dir(catalog_copy)
    with pytest.raises(InputError, match=r"dsv4-flash-pair: settings\.max_model_len: found nothing"):
        report.defaults(catalog, "dsv4-flash-pair")


def test_the_fit_report_is_typed_and_its_json_adds_the_tokens_by_length() -> None:
    """24 GiB read at 50,000 (398,000 tokens) and 500,000 (2,450,000): pool / tokens 64,748.25 B
    and 10,518.29 B; the fit predicts at 131,072 the tokens kv.tokens_at_length gives."""
    pool = 24 * GiB
    r = report.fit_report(pool, [(50000, 398000), (500000, 2450000)], [131072])
    assert isinstance(r, report.FitReport) and r.readings[0] == report.FitReading(50000, 398000, Fraction(pool, 398000))
    tokens = kv.tokens_at_length(pool, r.per_token_bytes, r.fixed_bytes, 131072)
    assert r.predicted == (report.FitPrediction(131072, tokens, tokens / 131072),)
    out = r.to_json()
    assert list(out) == ["pool_bytes", "per_token_bytes", "fixed_bytes", "readings", "predicted", "predicted_tokens"]
    assert out["predicted_tokens"] == {"131072": tokens} and out["readings"][1]["pool_over_tokens"] == float(Fraction(pool, 2450000))
