"""The "Before the first start" calculator's run function, in CPython: its figures are calc's
(modeled.model_report, gate.gate), its gate takes a measured start of the same model when the
catalog has one, and every bad input is named beside its field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc import derive, modeled
from calc import html as calc_html
from calc.calculators import before
from calc.units import GiB, fmt, parse_size

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def default(catalog) -> dict[str, str]:
    return dict(calc_html.defaults_of(catalog, "before").values)


def test_defaults_are_the_shipped_config_and_the_catalog(catalog, default) -> None:
    assert json.loads(default["config"]) == json.loads((ROOT / "models/configs/qwen3-30b-a3b/config.json").read_text())
    assert default["box"] == next(iter(catalog.boxes))
    assert parse_size(default["pin"]) == 10**10  # the DGX Spark pair's serving pin, generation 235
    assert default["prefill_budget"] == fmt(catalog.policy["gate"]["calibration"]["prefill_budget"].value, "count")


def test_figures_are_the_model_report(catalog, default) -> None:
    out = calc_html.run(catalog, "before", default)
    r = modeled.model_report(modeled.ModelInputs(default["config"], max_model_len=32768, pool=10**10))
    # Qwen3-30B-A3B at TP 1: 2 x 4 KV heads x 128 x 2 B x 48 layers = 98,304 B a token;
    # a page is 16 tokens x 2,048 B a layer; 10e9 B // 32,768 B // 48 layers = 6,357 blocks, one
    # 32,768-token request holds 2,048 of them: int(6357 / 2048 x 32768) = 101,712
    assert r.kv_bytes_per_token == 98304
    assert out.valid
    assert out.figures["per_token"] == fmt(98304, "count")
    assert out.figures["weights"] == fmt(r.weights_bytes_per_rank, "GiB")
    assert out.figures["tokens"] == fmt(r.kv_tokens, "tokens") == "101,712 tokens"
    assert out.figures["concurrency"] == fmt(r.max_concurrency, "x")
    assert out.figures["gate"] == "outside calibration"  # no measured start of this model, none typed
    assert "Modeled:" in out.sections["before-verdict"]


def test_a_typed_overhead_gates_the_start(catalog, default) -> None:
    raw = {**default, "overhead": "4 GiB", "available": "100 GiB"}
    out = calc_html.run(catalog, "before", raw)
    weights = modeled.model_report(modeled.ModelInputs(default["config"], max_model_len=32768, pool=10**10)).weights_bytes_per_rank
    needs = weights + 10**10 + 4 * GiB + 8 * GiB  # weights + pin + overhead + the 8 GiB start headroom
    assert out.figures["needs"] == fmt(needs, "GiB")
    assert out.figures["margin"] == fmt(100 * GiB - needs, "GiB")
    assert out.figures["largest_pin"] == fmt(100 * GiB - (needs - 10**10), "e9", 2, down=True)
    short = calc_html.run(catalog, "before", {**raw, "available": "70 GiB"})
    assert "Gate: refused" in short.sections["before-verdict"]


def test_the_same_model_takes_its_measured_overhead(catalog, default) -> None:
    # a config with the cache layout of the catalog's DeepSeek pair (43 MLA layers, latent 512 + 64,
    # TP 2, fp8_ds_mla) takes the overhead its generation-235 start measured
    config = {
        "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 1024, "vocab_size": 1024, "num_attention_heads": 8,
        "num_hidden_layers": 43, "intermediate_size": 2048, "moe_intermediate_size": 256, "n_routed_experts": 8,
        "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 64, "v_head_dim": 64, "q_lora_rank": 256,
    }  # fmt: skip
    raw = {**default, "config": json.dumps(config), "tp": "2", "kv_cache_dtype": "fp8_ds_mla"}
    out = calc_html.run(catalog, "before", raw)
    overhead = derive.gate_row(catalog, "dsv4-flash-pair").overhead
    assert out.figures["term_overhead"] == fmt(overhead.bytes, "GiB")
    assert "DeepSeek-V4-Flash on two DGX Sparks" in out.sections["before-result"]
    assert calc_html.run(catalog, "before", {**raw, "tp": "1"}).figures["gate"] == "outside calibration"  # TP differs


@pytest.mark.parametrize(
    ("edits", "field", "message"),
    [
        ({"config": ""}, "config", "config.json: found nothing, expected the model's config.json pasted"),
        (
            {"config": "{oops"},
            "config",
            "config.json: (the file): found text that is not JSON at line 1 column 2 (Expecting property name enclosed in double quotes), expected a JSON object",
        ),
        ({"config": '{"architectures": ["BertModel"]}'}, "config", "config.json: architectures[0]: found 'BertModel'"),
        ({"tp": "3"}, "tp", "Tensor parallel size: found 3, expected a divisor of the model's 32 attention heads"),
        ({"tp": "two"}, "tp", "Tensor parallel size: found 'two', expected a whole number"),
        ({"index": '{"metadata": {}}'}, "index", "model.safetensors.index.json: metadata.total_size: found None"),
        ({"index": "lots"}, "index", "Checkpoint size: found 'lots'"),
        ({"kv_cache_dtype": "fp8_ds_mla"}, "kv_cache_dtype", "KV cache dtype: fp8_ds_mla packs an MLA latent"),
        ({"engine_version": "latest"}, "engine_version", "vLLM version: found 'latest', expected a vLLM version"),
        ({"pin": "-3 GiB"}, "pin", "KV pin: found '-3 GiB', expected a size of zero or more bytes"),
        ({"box": "laptop"}, "box", "Box: found 'laptop', expected one of dgx-spark, rtx-5090-node"),
    ],
)
def test_bad_inputs_are_named_beside_their_field(catalog, default, edits, field, message) -> None:
    out = calc_html.run(catalog, "before", {**default, **edits})
    assert not out.valid
    assert out.errors[field].startswith(message), out.errors
    assert out.figures == {}
    assert "No result" in out.sections["before-verdict"]


def test_a_typed_checkpoint_size_beats_the_count(catalog, default) -> None:
    counted = calc_html.run(catalog, "before", {**default, "tp": "2"})
    typed = calc_html.run(catalog, "before", {**default, "tp": "2", "index": "122128441344 B"})  # twice the count
    assert parse_size(typed.figures["weights"]) == pytest.approx(2 * parse_size(counted.figures["weights"]), rel=1e-3)
    assert "checkpoint size typed" in typed.sections["before-result"]
    assert before.NAME in calc_html.CALCULATORS


def test_choosing_another_box_moves_memavailable_and_a_stale_one_is_refused(catalog, default) -> None:
    """An RTX 4090 chosen: MemAvailable follows it (the total the engine sees, from torch's
    out-of-memory message; the catalog has no free reading), and the DGX Spark's 120,919 MiB left
    in the field is refused, not gated against."""
    moved = calc_html.changed(catalog, "before", "box", {**default, "box": "rtx-4090"})
    assert moved is not None
    assert moved["values"]["before-available"] == "23.68 GiB"  # torch's total capacity, below nvidia-smi's 24,564 MiB
    assert "no free-memory reading" in moved["sources"]["before-available-src"]
    assert calc_html.changed(catalog, "before", "box", {**default, "box": "dgx-spark"})["values"]["before-available"] == default["available"]
    stale = calc_html.run(catalog, "before", {**default, "box": "rtx-4090", "overhead": "2 GiB"})
    assert not stale.valid
    assert stale.errors["available"].startswith("MemAvailable at start: found 118.08 GiB, above the NVIDIA GeForce RTX 4090's total of 23.68 GiB")
    fresh = calc_html.run(catalog, "before", {**default, "box": "rtx-4090", "overhead": "2 GiB", "available": moved["values"]["before-available"]})
    assert fresh.valid and "Gate: refused" in fresh.sections["before-verdict"]  # 30B weights do not fit 24 GB


def test_one_request_above_the_pin_says_vllm_refuses_the_start(catalog, default) -> None:
    """Qwen3-30B-A3B at 98,304 B a token: a 3e9 B pin holds 30,512 tokens at most, below one
    request of 32,768 tokens: vLLM stops at its one-request check, and the result says so."""
    out = calc_html.run(catalog, "before", {**default, "pin": "3e9"})
    assert out.valid
    assert out.figures["concurrency"] == "0.93x"
    assert out.figures["one_request"] == "vLLM refuses this start"
    assert "vLLM refuses this start: one request at max_model_len 32,768 does not fit the pin." in out.sections["before-verdict"]
    assert "one_request" not in calc_html.run(catalog, "before", default).figures


def test_outside_calibration_is_said_once(catalog, default) -> None:
    out = calc_html.run(catalog, "before", default)
    assert out.figures["gate"] == "outside calibration"
    assert out.sections["before-result"].count("outside calibration") == 1
    assert "outside calibration: outside calibration" not in out.sections["before-result"]


def test_the_config_hint_follows_a_pasted_config(catalog, default) -> None:
    llama = (ROOT / "models/configs/llama-3.1-8b/config.json").read_text()
    hint = calc_html.changed(catalog, "before", "config", {**default, "config": llama})["sources"]["before-config-src"]
    assert hint == "Pasted: a config.json of LlamaForCausalLM"
    assert "Qwen3-30B-A3B" in calc_html.defaults_of(catalog, "before").sources["config"]


def test_the_page_counts_the_calculators_it_holds() -> None:
    """The index's count is the registry's, and it links every registered calculator's page."""
    from hooks.calculator_page import count_in_words

    page = (ROOT / "docs/calculator/index.md").read_text()
    assert "{{ calculators_in_words() }} calculators over the catalog" in page
    import re as _re

    assert sorted(_re.findall(r"\]\(([a-z-]+)\.md\)", page)) == sorted(calc_html.PAGES.values())
    assert count_in_words(len(calc_html.CALCULATORS)) == "Seven"


def test_the_gate_rows_add_up_as_printed(catalog, default) -> None:
    """The needs row is the sum of the term rows as printed, and the margin the printed
    MemAvailable less it: a reader adding the column gets the printed figures."""
    from decimal import Decimal

    differs = 0
    for pin in ("10e9", "10.004e9", "12.3e9", "7.77e9", "15.55e9", "9.999e9"):
        raw = {**default, "pin": pin, "overhead": "3.333 GiB", "available": "100 GiB"}
        out = calc_html.run(catalog, "before", raw)
        terms = [v for k, v in out.figures.items() if k.startswith("term_")]
        added = sum(Decimal(t.removesuffix(" GiB")) for t in terms)
        assert out.figures["needs"] == f"{added:.2f} GiB"
        assert out.figures["margin"] == f"{abs(Decimal(100) - added):.2f} GiB"
        weights = modeled.model_report(modeled.ModelInputs(default["config"], max_model_len=32768)).weights_bytes_per_rank
        exact = weights + parse_size(pin) + parse_size("3.333 GiB") + 8 * GiB
        differs += fmt(exact, "GiB") != out.figures["needs"]
    assert differs  # at least one pin where rounding the exact sum would print another figure
