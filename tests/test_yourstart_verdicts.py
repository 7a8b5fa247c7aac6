"""Your start on the collected public logs (logs/public/, sources in SOURCES.yaml): a verdict over
every check, the suggested fix's command for a refused start, SGLang's own launch line, the
overhead from vLLM's own memory profile, printed arithmetic a reader can redo. Every expected
figure is worked out by hand in the comment beside it."""

from __future__ import annotations

import re
from fractions import Fraction
from html import unescape
from pathlib import Path

from calc.answers import yourstart
from calc.logs import logread
from calc.present import html
from calc.present.calculators import yourstart as page
from calc.units import GiB, MiB

LOGS = Path(__file__).resolve().parent.parent / "logs" / "public"
OWN = ("preset", "weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "model")
FREE_M = (
    "$ free -m\n               total        used        free      shared  buff/cache   available\n"
    "Mem:          124546       10234       80000          20       34000      112300\nSwap:              0           0           0\n"
)


def run(catalog, name: str | None = None, **fields: str):
    raw = dict(html.defaults_of(catalog, "yourstart").values)
    raw.update(dict.fromkeys(OWN, ""))
    raw.update(box="other")
    if name:
        raw["log"] = (LOGS / name).read_text(encoding="utf-8")
    raw.update(fields)
    out = html.run(catalog, "yourstart", raw)
    assert out.valid, out.errors
    return out, unescape(re.sub(r"<[^>]+>", "", out.sections["yourstart-verdict"])), unescape(re.sub(r"<[^>]+>", "", out.sections["yourstart-result"]))


def test_a_gb10_fraction_start_gets_its_overhead_from_vllms_own_profile(catalog) -> None:
    """logs/public/45 (v0.18, GB10, gpu_memory_utilization 0.80, no readings of MemAvailable).
    V1's profile: pool = total x fraction - non-KV, so the overhead beyond the weights is
    ceil(130,663,642,563 x 0.8) - 59,828,894,433 - 36,743,445,217
    = 104,530,914,051 - 59,828,894,433 - 36,743,445,217 = 7,958,574,401 B; and 0.18 did not take
    its CUDA-graph estimate off the pool (line 47, "To try it now, set
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"), so the graphs, 1.65 GiB = 1,771,674,010 B, are
    held beyond the fraction: 9,730,248,411 B."""
    out, verdict, result = run(catalog, "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log", box="dgx-spark", before=FREE_M)
    assert 7_958_574_401 + 1_771_674_010 == 9_730_248_411
    assert out.figures["overhead_b"] == "9,730,248,411 B"
    assert "derived from the log" in result and "the engine's profile, not a MemAvailable measurement" in result
    assert "log line 45: Estimated CUDA graph memory: 1.65 GiB total" in result  # the lines used are named
    # 112,300 MiB = 109.67 GiB; 34.22 + 55.72 + 9.06 + 8.00 = 107.00 GiB as printed; 2.67 GiB to spare
    assert out.figures["available"] == "109.67 GiB" and out.figures["needs"] == "107.00 GiB"
    assert out.figures["margin"] == "2.67 GiB" and out.figures["verdict"] == "passes"
    assert "2.67 GiB to spare" in verdict
    # largest pin = 112,300 MiB - (36,743,445,217 + 9,730,248,411 + 8 GiB) = 62,691,456,580 B
    assert 112_300 * MiB - (36_743_445_217 + 9_730_248_411 + 8 * GiB) == 62_691_456_580
    assert out.figures["largest_pin"] == "62.69e9 B"
    # tokens at the pins, from the bytes a token as printed: the log's own count at its pool,
    # 62,691,456,580 / 81,991.53 = 764,608.9, whole tokens down, at the largest pin
    assert out.figures["bpt"] == "81,991.53 B"
    assert out.figures["grid_tokens_0"] == "729,696 tokens"  # logged; 59,828,894,433 / 81,991.53 = 729,696.04
    assert out.figures["grid_tokens_1"] == "764,608 tokens"
    # the hybrid's one-request floor is vLLM's per-request maximum: pool / the printed 10.85x,
    # ceil(59,828,894,433 / 10.85) = 5,514,183,819 B, shown up to 5.52e9 B, not 262,144 x 81,991.53
    assert out.figures["one_request_pin"] == "5.52e9 B"
    assert "--gpu-memory-utilization 0.80" in out.figures["command"]  # the fraction the check ran on


def test_a_v0_profile_gives_the_overhead_and_a_start_with_no_pool_gets_a_fraction_that_leaves_one(catalog) -> None:
    """logs/public/03 (v0.7, RTX 4060 8 GiB at 0.70): weights 5.2032 GB, non_torch 0.03 GiB,
    activation peak 1.42 GiB, the rest for the KV cache -1.05 GiB, so vLLM refused it.
    Overhead = 32,212,255 + 1,524,713,390 = 1,556,925,645 B. A pool needs
    ceil(8 GiB x f) > 5,586,893,459 + 1,556,925,645 = 7,143,819,104: 0.83 asks 7,129,645,712 (too
    little), 0.84 asks 7,215,545,058."""
    out, verdict, result = run(catalog, "03-v07-qwen25-7b-rtx4060-negative-kv.log")
    assert out.figures["overhead_b"] == "1,556,925,645 B"
    assert out.figures["verdict"] == "refused" and "no memory was left for the KV cache" in verdict
    assert "--kv-cache-memory-bytes" not in out.figures["command"]  # no negative pool offered as a pin
    assert "--gpu-memory-utilization 0.84" in out.figures["command"]
    assert "vllm serve of the suggested fix" in result


def test_a_free_memory_refusal_offers_the_fraction_that_passes_with_the_readings_precision(catalog) -> None:
    """logs/public/14: Free memory on device cuda:1 (19.77/22.05 GiB) ... (0.9, 19.84 GiB).
    Largest two decimals with 0.1 GiB to spare: (19.765 - 0.1) / 22.055 = 0.8916, so 0.89."""
    out, verdict, result = run(catalog, "14-v1-free-memory-failure-tp2.log")
    assert out.figures["verdict"] == "refused" and "free-memory check" in verdict
    assert out.figures["fraction_ceiling"] == "0.8961"  # 19.765 / 22.055 = 0.89617, rounded down
    assert out.figures["command"] == "vllm serve \\\n  MODEL \\\n  --gpu-memory-utilization 0.89"
    assert "the suggested fix, not the refused request" in verdict


def test_a_one_request_refusal_offers_vllms_own_estimate(catalog) -> None:
    """logs/public/09 (v0.10): max seq len 221000 needs 10.12 GiB; vLLM estimated 122080.
    The floor errs high: 10.125 GiB = 10,871,635,968 B, shown up to 10.88e9 B. With no weights
    the gate cannot say a larger pin fits, so the fix is vLLM's own estimate of the length."""
    out, verdict, _ = run(catalog, "09-v010-fp8-kv-221k-maxlen-error.log")
    assert out.figures["verdict"] == "refused" and "one-request check" in verdict
    assert out.figures["one_request_pin"] == "10.88e9 B"
    assert "--max-model-len 122080" in out.figures["command"]


def test_a_gate_refusal_offers_the_largest_pin_with_the_readings_precision_to_spare(catalog) -> None:
    """Typed: 60 GiB weights, 6 GiB overhead, 30 GiB pin, 94 GiB MemAvailable: needs 104 GiB.
    Largest pin = 94 - 60 - 6 - 8 = 20 GiB = 21,474,836,480 B; less 0.1 GiB (107,374,182 B) =
    21,367,462,298 B, rounded down to 21.36e9 B. The fraction typed with three decimals is the
    fraction in the command; the checks after the refused gate are not reached."""
    fields = dict(weights="60 GiB", overhead="6 GiB", bytes_per_token="131072", pin="30 GiB", max_model_len="32768", before="94 GiB")
    out, verdict, result = run(catalog, box="rtx-pro-6000-blackwell", gpu_memory_utilization="0.937", **fields)
    assert out.figures["verdict"] == "refused" and "short by 10.00 GiB" in verdict
    assert "--kv-cache-memory-bytes 21360000000" in out.figures["command"]
    assert "--gpu-memory-utilization 0.937" in out.figures["command"]
    assert out.figures["fraction_verdict"] == out.figures["one_request_verdict"] == "not reached: an earlier check refuses the start first"


def test_a_margin_inside_the_readings_precision_is_said(catalog) -> None:
    """Typed: 60 + 20 + 6 + 8 = 94 GiB against 94 GiB: passes by 0.00 GiB, inside 0.1 GiB. The
    largest pin typed back passes: 100 GiB - 74 GiB = 27,917,287,424 B, shown down as 27.91e9 B."""
    fields = dict(weights="60 GiB", overhead="6 GiB", bytes_per_token="131072", max_model_len="32768")
    out, verdict, _ = run(catalog, box="rtx-pro-6000-blackwell", pin="20 GiB", before="94 GiB", **fields)
    assert out.figures["verdict"] == "passes" and "inside the precision of the MemAvailable reading" in verdict
    out, _, _ = run(catalog, box="rtx-pro-6000-blackwell", pin="20 GiB", before="100 GiB", **fields)
    assert out.figures["largest_pin"] == "27.91e9 B"
    again, _, _ = run(catalog, box="rtx-pro-6000-blackwell", pin="27.91e9", before="100 GiB", **fields)
    assert again.figures["gate_verdict"] == "passes"


def test_an_sglang_log_gets_sglangs_launch_line(catalog) -> None:
    """logs/public/11 (SGLang, K 8.23 GB + V 8.23 GB, 367,404 tokens): no vllm serve line, and
    vLLM's checks are said not to apply."""
    out, _, result = run(catalog, "11-sglang-qwen3-235b-fp8-tp4.log")
    assert out.figures["command"] == "python -m sglang.launch_server \\\n  --model-path MODEL \\\n  --max-total-tokens 367404"
    assert "SGLang sizes its pool by mem_fraction_static" in result
    assert "fraction_verdict" not in out.figures and "one_request_verdict" not in out.figures


def test_a_pinned_start_says_why_its_log_gives_no_overhead(catalog) -> None:
    """logs/public/46: a pinned start skips vLLM's memory profile."""
    _, _, result = run(catalog, "46-v0xx-xpu-pinned-kv-750M-qwen25-coder-3b-ok.log")
    assert "a pinned start skips vLLM's memory profile" in result


def test_the_token_count_is_explained_for_the_logs_version() -> None:
    """logs/public/58 is v0.13: its count is blocks x block size, not "as builds from 0.20.1 print it"."""
    reading = logread.read_log((LOGS / "58-v013-gb10-qwen25-14b-fp8-dense-kv-usage-lines.log").read_text(encoding="utf-8"))
    assert "0.20.1 print it" not in reading.bytes_per_token.how
    assert "as 0.13.0+faa43dbf.nv26.01 prints it (builds up to 0.20.0)" in reading.bytes_per_token.how
    no_version = logread.read_log((LOGS / "31-v02x-qwen3-8b-cudagraph-estimate-enginecore.log").read_text(encoding="utf-8"))
    assert "the log prints no version to tell which" in no_version.bytes_per_token.how


def test_the_grid_divides_as_printed(catalog) -> None:
    """Every tokens cell not logged by vLLM is its printed pin over the printed bytes a token,
    rounded down; every contexts cell the printed tokens over the length, rounded down."""
    out, _, _ = run(catalog, "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log", box="dgx-spark", before=FREE_M, pins="20 GiB")
    bpt = Fraction(out.figures["bpt"].removesuffix(" B").replace(",", ""))
    rows = sorted({k.split("_")[2] for k in out.figures if k.startswith("grid_pin_")})
    assert len(rows) == 3
    for i in rows:
        pin = int(out.figures[f"grid_pin_{i}"].removesuffix(" B").replace(",", ""))
        tokens = int(out.figures[f"grid_tokens_{i}"].removesuffix(" tokens").replace(",", ""))
        if i != "0":  # row 0 is the log's own pool, at the count vLLM logged
            assert tokens == int(pin / bpt)
            assert int(out.figures[f"grid_contexts_{i}_262144"]) == tokens // 262_144
        else:  # and at its own max_model_len, the concurrency vLLM printed (10.85x), not 729,696 // 262,144 = 2
            assert int(out.figures[f"grid_contexts_{i}_262144"]) == 10


def test_readings_that_cannot_be_of_this_start_are_not_taken_as_a_negative_overhead(catalog) -> None:
    """logs/public/58 (v0.13, GB10, 0.40): weights 15.2227 GiB, pool 30.46 GiB. Readings held only
    (90,000,000 - 50,000,000) kB = 40,960,000,000 B, less than the two: the overhead falls back to
    the profile, ceil(130,663,642,563 x 0.4) - 32,706,175,959 - 16,345,249,664
    = 52,265,457,026 - 49,051,425,623 = 3,214,031,403 B."""
    meminfo = "MemTotal: 131072000 kB\nMemFree: 2000000 kB\nMemAvailable: {} kB\n"
    out, _, result = run(
        catalog, "58-v013-gb10-qwen25-14b-fp8-dense-kv-usage-lines.log", box="dgx-spark", before=meminfo.format(90_000_000), serving=meminfo.format(50_000_000)
    )
    assert "came out negative (-7.54 GiB)" in result
    assert out.figures["overhead_b"] == "3,214,031,403 B"


def test_a_pin_for_a_build_without_the_flag_is_said(catalog) -> None:
    """logs/public/32 is a V0 profile (v0.7): the fix's pin flag comes with the version it needs."""
    _, _, result = run(catalog, "32-v07-llama32-11b-vision-h100-two-sentence.log", box="h100-sxm", before="79 GiB")
    assert "read by the V1 engine from vLLM 0.10.2 on" in result and "a build running the V0 engine" in result


def test_a_profile_on_the_wrong_box_is_not_an_overhead(catalog) -> None:
    """logs/public/45 with an RTX 4090 picked: one rank held more weights and KV pool than the
    card has, so the box is not the one the start ran on, and the box field says so."""
    raw = {**html.defaults_of(catalog, "yourstart").values, **dict.fromkeys(OWN, ""), "box": "rtx-4090"}
    out = html.run(catalog, "yourstart", {**raw, "log": (LOGS / "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log").read_text()})
    assert not out.valid
    assert out.errors["box"].startswith("Box: one rank of the log held 89.94 GiB of weights and KV pool, more than the NVIDIA GeForce RTX 4090's 23.68 GiB")
    # on the box it ran on, the same log reads
    assert run(catalog, "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log", box="dgx-spark")[0].valid


def test_an_sglang_failure_is_sglangs_and_no_fix_is_invented(catalog) -> None:
    """logs/public/40: SGLang's "Loaded weights leave no GPU memory for the KV cache under
    --mem-fraction-static=0.88": the refusal is SGLang's, and without the total, weights and
    overhead no command is offered as a fix."""
    out, verdict, result = run(catalog, "40-sglang-deepseek-v4-pro-h200-tp8-no-kv-memory.log")
    assert out.figures["verdict"] == "refused" and verdict.startswith("Start: refused by SGLang, in your log")
    assert "command" not in out.figures and "None offered" in result


def test_the_answer_is_typed_each_check_its_own_record(catalog) -> None:
    """The gate refusal above, as calc.yourstart answers it: 94 GiB against 104 GiB needs, short by
    10 GiB; the fix is the pin 21.36e9 B; the checks after the gate are marked not reached."""
    fields = dict(weights="60 GiB", overhead="6 GiB", bytes_per_token="131072", pin="30 GiB", max_model_len="32768", before="94 GiB")
    raw = {
        **dict(html.defaults_of(catalog, "yourstart").values),
        "preset": "",
        "log": "",
        "box": "rtx-pro-6000-blackwell",
        "gpu_memory_utilization": "0.937",
        **fields,
    }
    y, _, errors = page.parse(catalog, raw)
    assert y is not None, errors
    a = yourstart.answer(y)
    assert isinstance(a, yourstart.Answer) and isinstance(a.gate, yourstart.GateAnswer)
    assert a.gate.needs.value == 104 * GiB and a.gate.available == 94 * GiB and a.gate.margin == -10 * GiB and a.gate.passes is False
    assert a.gate.largest_pin == 20 * GiB and a.refused_by == "gate" and a.passes is False
    assert a.fix == yourstart.Fix(
        21_360_000_000, (yourstart.Change("pin", 21_360_000_000, "the largest pin that passes the gate with the reading's precision to spare"),)
    )
    assert a.fraction is not None and a.fraction.reached is False and a.one_request is not None and a.one_request.reached is False
    assert a.grid[0] == yourstart.GridRow(30 * GiB, 30 * GiB // 131072, False, {32768: 30 * GiB // 131072 // 32768})
