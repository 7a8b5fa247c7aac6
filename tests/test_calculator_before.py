"""The "Before the first start" calculator's run function, in CPython: its figures are calc's
(modeled.model_report, gate.gate), its gate takes a measured start of the same model when the
catalog has one, and every bad input is named beside its field."""

from __future__ import annotations

import html
import json
from fractions import Fraction
from pathlib import Path

import pytest

from calc.checks import modeled
from calc.engine import derive
from calc.present import html as calc_html
from calc.present.calculators import before
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
        ({"engine_version": "0.10.2"}, "engine_version", "vLLM version: found 0.10.2 on the DGX Spark (GB10), expected 0.11.0 or later"),
        ({"pin": "-3 GiB"}, "pin", "KV pin: found '-3 GiB', expected a size of zero or more bytes"),
        ({"box": "notebook"}, "box", "Box: found 'notebook', expected one of dgx-spark, rtx-5090-node"),
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


# --- a discrete card and no pin: the pool predicted -------------------------------------------


def _on_card(catalog, default, box: str, **edits: str) -> dict[str, str]:
    """The form as a reader leaves it after choosing a card: the box's own defaults applied."""
    moved = calc_html.changed(catalog, "before", "box", {**default, "box": box})
    assert moved is not None
    raw = {**default, "box": box, **{k.removeprefix("before-").replace("-", "_"): v for k, v in moved["values"].items()}}
    return {**raw, **edits}


def test_a_discrete_card_clears_the_pin_and_predicts_the_pool(catalog, default) -> None:
    """Llama 3.1 8B on one H100 at 0.95, 16,384 tokens, 1,024 seqs and 8,192 tokens a step, vLLM
    0.19.0: the public start printed 58.11 GiB (logs/starts/81-...); the calculator's pool is
    calc/engine/predict's, each term with its source, and the band is the catalog's."""
    from fractions import Fraction

    from calc.engine import hfconfig, predict

    moved = calc_html.changed(catalog, "before", "box", {**default, "box": "h100-sxm"})
    assert moved["values"]["before-pin"] == ""
    assert "predicts it" in moved["sources"]["before-pin-src"]
    llama = (ROOT / "models/configs/llama-3.1-8b/config.json").read_text()
    raw = _on_card(catalog, default, "h100-sxm", config=llama, max_model_len="16384", utilization="0.95", seats="1024",
                   prefill_budget="8192", engine_version="0.19.0")  # fmt: skip
    out = calc_html.run(catalog, "before", raw)
    assert out.valid, out.errors
    shape = hfconfig.shape(json.loads(llama), "llama")
    start = predict.Start(max_model_len=16384, utilization=Fraction(95, 100), max_num_seqs=1024, max_num_batched_tokens=8192, engine_version="0.19.0")
    p = predict.predict(shape, predict.card_of_box(catalog.boxes["h100-sxm"]), start)
    assert out.figures["p_requested"] == fmt(p.requested_bytes, "GiB") == "75.24 GiB"
    assert out.figures["p_weights"] == fmt(p.weights.bytes, "GiB")
    assert out.figures["p_activation_peak"] == fmt(p.activation.bytes, "GiB")
    assert out.figures["p_cuda_graph"] == "0.00 GiB"  # 0.19 takes no graph estimate off
    terms = [out.figures[k] for k in ("p_weights", "p_activation_peak", "p_non_torch", "p_cuda_graph")]
    added = sum(Fraction(t.removesuffix(" GiB")) for t in terms)
    assert out.figures["pool"] == f"{float(Fraction(out.figures['p_requested'].removesuffix(' GiB')) - added):.2f} GiB" == "58.11 GiB"
    assert abs(p.available_kv_bytes - parse_size("58.11 GiB")) / parse_size("58.11 GiB") < 0.005  # the printed pool
    assert out.figures["tokens"] == fmt(p.kv_tokens, "tokens")
    assert out.figures["verdict"] == "starts"
    band = catalog.policy["prediction"]
    assert out.figures["band_median"] == fmt(band["held_out_median_error"].value, "%", 2) == "0.39 %"
    assert out.figures["band_p90"] == fmt(band["held_out_p90_error"].value, "%", 2)
    assert "vllm/v1/sample/ops/topk_topp_sampler.py" in out.sections["before-result"]  # the term that sets the peak, cited
    assert "vllm/utils/mem_utils.py" in out.sections["before-result"]
    assert "Predicted on the NVIDIA H100 SXM: a pool of 58.11 GiB" in out.sections["before-verdict"]
    assert "gate" not in out.figures  # the start gate reads MemAvailable; a discrete card's pool is vLLM's


def test_a_refused_start_on_a_card_lists_the_changes_that_pass(catalog, default) -> None:
    """Llama 3.1 8B at 131,072 tokens on an RTX 3090 (vLLM 0.21.0 defaults): 16 GiB a request, more
    than the pool: refused for its length, and each change offered passes when predicted again."""
    from calc.engine import hfconfig, predict

    llama = (ROOT / "models/configs/llama-3.1-8b/config.json").read_text()
    raw = _on_card(catalog, default, "rtx-3090", config=llama, max_model_len="131072", seats="256", prefill_budget="2048", engine_version="0.21.0")
    out = calc_html.run(catalog, "before", raw)
    assert out.valid, out.errors
    assert out.figures["verdict"] == "max_model_len"
    card = predict.card_of_box(catalog.boxes["rtx-3090"])
    start = predict.Start(max_model_len=131072, max_num_seqs=256, max_num_batched_tokens=2048, engine_version="0.21.0")
    found = predict.fixes(hfconfig.shape(json.loads(llama), "llama"), card, start)
    assert found and all(f.prediction.verdict == "starts" for f in found)
    assert [out.figures[f"fix_{n}"] for n in range(len(found))] == [fmt(f.prediction.available_kv_bytes, "GiB") for f in found]
    assert f"--max-model-len {found[0].start.max_model_len}" in out.sections["before-result"]
    assert out.figures["utilization"] == "0.92"  # 0.21's default, none typed


def test_drafted_tokens_load_the_drafter_and_set_the_graphs(catalog, default, capsys) -> None:
    """Qwen3.6-35B-A3B with 3 drafted tokens on an RTX PRO 6000 Blackwell, fp8 cache, vLLM 0.26.0: its
    MTP layer loads with the model, and FlashInfer (an fp8 cache off Hopper) keeps the piecewise
    graphs alone (1, 2, 4, 8 to 32: 2 x 4 sequences x 4 tokens); the same pool, weights and graphs as
    `calc model --speculative-tokens 3`."""
    from calc.present import cli

    path = "models/configs/qwen3.6-35b-a3b/config.json"
    settings = {"config": (ROOT / path).read_text(), "max_model_len": "32768", "seats": "4", "prefill_budget": "4096", "engine_version": "0.26.0",
                "kv_cache_dtype": "fp8"}  # fmt: skip
    plain = calc_html.run(catalog, "before", _on_card(catalog, default, "rtx-pro-6000-blackwell", **settings))
    mtp = calc_html.run(catalog, "before", _on_card(catalog, default, "rtx-pro-6000-blackwell", **settings, speculative_tokens="3"))
    assert plain.valid and mtp.valid, (plain.errors, mtp.errors)
    argv = ["model", path, "--gpu", "rtx-pro-6000-blackwell", "--max-model-len", "32768", "--max-num-seqs", "4", "--max-num-batched-tokens", "4096",
            "--engine-version", "0.26.0", "--kv-cache-dtype", "fp8", "--speculative-tokens", "3", "--json"]  # fmt: skip
    assert cli.main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    assert abs(parse_size(mtp.figures["pool"]) - r["available_kv_bytes"]) < 0.01 * GiB  # the printed terms' difference, as the row is worked
    assert mtp.figures["p_weights"] == fmt(r["terms"]["weights"]["bytes"], "GiB")
    assert mtp.figures["p_cuda_graph"] == fmt(r["cuda_graph_bytes"], "GiB")
    assert "PIECEWISE=7, FULL=0 (3 drafted tokens: the backend captures no full graph" in mtp.sections["before-result"]
    assert "PIECEWISE=4, FULL=3" in plain.sections["before-result"]
    assert parse_size(mtp.figures["p_weights"]) - parse_size(plain.figures["p_weights"]) > 1.5 * GiB  # one MTP layer of 256 experts


@pytest.mark.parametrize(
    ("box", "edits", "field", "message"),
    [
        ("h100-sxm", {"utilization": "1.5"}, "utilization", "gpu_memory_utilization: found '1.5', expected a fraction above 0 and at most 1"),
        ("h100-sxm", {"utilization": "most"}, "utilization", "gpu_memory_utilization: found 'most'"),
        # a unified box's empty pin is the largest the gate passes: none without an overhead to size it
        ("dgx-spark", {"pin": ""}, "pin", "KV pin: found nothing; the gate cannot size the largest pin (no measured start of this model"),
        ("jetson-agx-thor", {"pin": ""}, "pin", "KV pin: found nothing; the gate cannot size the largest pin (no measured start of this model"),
        # what the model and the prediction refuse stands beside its own field under its label, on a card as with a pin
        ("h100-sxm", {"tp": "3"}, "tp", "Tensor parallel size: found 3, expected a divisor of the model's 32 attention heads"),
        ("h100-sxm", {"pipeline_parallel_size": "64"}, "pipeline_parallel_size", "Pipeline parallel size: found 64, expected at most the model's 48 layers"),
        ("h100-sxm", {"pipeline_parallel_size": "2", "pp_layer_partition": "0,48"}, "pp_layer_partition", "Layers of each stage: found a stage of no layers"),
        ("h100-sxm", {"kv_cache_dtype": "fp8_ds_mla"}, "kv_cache_dtype", "KV cache dtype: fp8_ds_mla packs an MLA latent"),
        ("h100-sxm", {"index": "1 GB"}, "index", "checkpoint size typed: found 1,000,000,000 B, expected a checkpoint size within 8x"),
        ("dgx-spark", {"index": "1 GB"}, "index", "checkpoint size typed: found 1,000,000,000 B, expected a checkpoint size within 8x"),
    ],
)
def test_a_prediction_refuses_bad_input_beside_its_field(catalog, default, box, edits, field, message) -> None:
    out = calc_html.run(catalog, "before", {**_on_card(catalog, default, box), **edits})
    assert not out.valid
    assert out.errors[field].startswith(message), out.errors


def test_a_memavailable_without_its_unit_is_refused_not_gated(catalog, default) -> None:
    """'100' in MemAvailable is 100 bytes, below any memory size: refused as it is read. '100000000'
    is 95 MiB: no box serves a model in less than 1 GiB free, so the field is refused with the bytes
    it read, never gated as 0.09 GiB available."""
    out = calc_html.run(catalog, "before", {**default, "available": "100"})
    assert not out.valid
    assert out.errors["available"] == (
        "MemAvailable at start: found '100', 100 B, expected at least 1 MiB, such as '100 GiB' (a number without a unit is bytes)"
    )
    out = calc_html.run(catalog, "before", {**default, "available": "100000000"})
    assert not out.valid
    assert out.errors["available"] == (
        "MemAvailable at start: found 100,000,000 B, expected at least 1 GiB free, such as 119.5 GiB (a number without a unit is bytes)"
    )


def test_a_card_the_weights_overfill_says_no_pool_not_a_negative_one(catalog, default) -> None:
    """Qwen3-30B-A3B on an RTX 3090: the terms take more than vLLM requests, so the verdict says no
    pool is left and by how much, as the requested share less the printed terms, never 'a pool of
    -36.06 GiB'."""
    box = calc_html.changed(catalog, "before", "box", {**default, "box": "rtx-3090"})["values"]["before-available"]
    out = calc_html.run(catalog, "before", {**default, "box": "rtx-3090", "available": box, "pin": ""})
    assert out.valid
    verdict = out.sections["before-verdict"]
    assert "no pool left, 36.06 GiB short a rank" in verdict and "a pool of -" not in verdict
    assert verdict.startswith("Predicted on the NVIDIA GeForce RTX 3090: does not start (weights do not fit). CUDA out of memory while loading:")


def test_a_refused_start_leads_with_what_refuses_it(catalog, default) -> None:
    """The headline of a refused start says first that it does not start and why, in vLLM's words
    without its source files (the verdict row keeps them), then the pool; a start that passes leads
    with its pool and says its tokens, as `calc model --gpu` does."""
    box = calc_html.changed(catalog, "before", "box", {**default, "box": "rtx-4090"})["values"]["before-available"]
    held = calc_html.run(catalog, "before", {**default, "box": "rtx-4090", "available": box, "pin": "", "in_use": "3 GiB", "utilization": "0.95"})
    assert held.valid and held.figures["verdict"] == "free memory"
    assert html.unescape(held.sections["before-verdict"]) == (
        "Predicted on the NVIDIA GeForce RTX 4090: does not start (free memory). vLLM refuses at start: free memory on device "
        "(20.29 GiB/23.68 GiB) is less than desired GPU memory utilization (0.95, 22.50 GiB); past that check, still no pool left, 35.25 GiB short a rank."
    )
    assert "vllm/v1/worker/gpu_worker.py init_device" in held.sections["before-result"]
    box = calc_html.changed(catalog, "before", "box", {**default, "box": "h100-sxm"})["values"]["before-available"]
    fits = calc_html.run(catalog, "before", {**default, "box": "h100-sxm", "available": box, "pin": ""})
    assert html.unescape(fits.sections["before-verdict"]) == (
        "Predicted on the NVIDIA H100 SXM: a pool of 15.11 GiB a rank (held-out starts: off by 0.39 % at the median); "
        "vLLM's verdict: starts (165,056 tokens, 5.04 requests of 32,768 at once)."
    )


def test_a_start_refused_for_free_memory_gives_its_pool_as_past_the_check(catalog, default, capsys) -> None:
    """Qwen3-8B on an RTX 4090 with 3 GiB held by other processes: vLLM refuses at start, before it
    loads anything, so the headline gives the pool the terms would leave past that check (the one
    `calc model --gpu rtx-4090 --in-use '3 GiB'` prints), never as a pool the start has."""
    from calc.present import cli

    path = "models/configs/qwen3-8b/config.json"
    out = calc_html.run(catalog, "before", _on_card(catalog, default, "rtx-4090", config=(ROOT / path).read_text(), max_model_len="8192", in_use="3 GiB"))
    assert out.valid and out.figures["verdict"] == "free memory"
    assert cli.main(["model", path, "--gpu", "rtx-4090", "--in-use", "3 GiB", "--max-model-len", "8192"]) == 0
    pool = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("KV pool a rank (predicted): ")).split(": ")[1].split(" (")[0]
    assert html.unescape(out.sections["before-verdict"]).endswith(
        f"is less than desired GPU memory utilization (0.92, 21.79 GiB); past that check, the terms would leave a pool of {pool} a rank."
    )


@pytest.mark.parametrize(
    ("box", "edits", "argv"),
    [
        # vllm serve's defaults on an H100 (1,024 sequences, 8,192 tokens): the fields left empty
        ("h100-sxm", {}, []),
        ("h100-sxm", {"engine_version": "0.21.0", "enforce_eager": "on"}, ["--engine-version", "0.21.0", "--enforce-eager"]),
        (
            "l40s",
            {"engine_version": "0.11.0", "offline": "on", "flashinfer_installed": "on"},
            ["--engine-version", "0.11.0", "--offline", "--flashinfer-installed"],
        ),
        ("rtx-pro-6000-blackwell", {"engine_version": "0.21.0", "no_flashinfer_sampler": "on"}, ["--engine-version", "0.21.0", "--no-flashinfer-sampler"]),
        ("l40s", {"tp": "2", "pipeline_parallel_size": "2", "engine_version": "0.19.0"}, ["--tp", "2", "--pp", "2", "--engine-version", "0.19.0"]),
        ("a100-80gb", {"enable_lora": "on", "max_loras": "4", "max_lora_rank": "64"}, ["--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"]),
        ("rtx-4090", {"in_use": "1.24 GiB", "utilization": "0.97"}, ["--in-use", "1.24 GiB", "--gpu-memory-utilization", "0.97"]),
        ("rtx-4090", {"in_use": "3 GiB", "engine_version": "0.8.5"}, ["--in-use", "3 GiB", "--engine-version", "0.8.5"]),
        # 0.34.0: the pool measured after warmup, and with the extensible KV cache off
        ("rtx-4090", {"engine_version": "0.34.0", "in_use": "1 GiB"}, ["--engine-version", "0.34.0", "--in-use", "1 GiB"]),
        ("l40s", {"engine_version": "0.34.0", "no_extensible_kv_cache": "on"}, ["--engine-version", "0.34.0", "--no-enable-extensible-kv-cache"]),
    ],
)
def test_the_calculator_predicts_what_the_command_line_does(catalog, default, capsys, box, edits, argv) -> None:
    """Every setting of the form reaches the prediction: the pool, the batch and each term are
    `calc model --gpu`'s for the same flags, and an empty max_num_seqs is the release's default for
    the card, not the gate's calibration."""
    from calc.present import cli

    path = "models/configs/qwen3-8b/config.json"
    out = calc_html.run(catalog, "before", _on_card(catalog, default, box, config=(ROOT / path).read_text(), max_model_len="16384", **edits))
    assert out.valid, out.errors
    assert cli.main(["model", path, "--gpu", box, "--max-model-len", "16384", *argv, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    for key, term in (("p_weights", "weights"), ("p_activation_peak", "activation_peak"), ("p_non_torch", "non_torch"), ("p_cuda_graph", "cuda_graph")):
        assert out.figures[key] == fmt(r["terms"][term]["bytes"], "GiB"), key
    assert (
        f"max_num_seqs {fmt(r['max_num_seqs'], 'count')}, max_num_batched_tokens {fmt(r['max_num_batched_tokens'], 'count')}" in out.sections["before-result"]
    )
    assert out.figures["tokens"] == fmt(r["kv_tokens"], "tokens")
    assert out.figures["verdict"] == r["verdict"]
    if r["extensible_kv_cache"]:  # the budget the terms come off, and the graph estimate kept free again
        assert out.figures["p_budget"] == fmt(r["budget_bytes"], "GiB")
        assert out.figures["p_graph_estimate_kept"] == fmt(r["terms"]["cuda_graph"]["bytes"], "GiB")
    else:
        assert "p_budget" not in out.figures


@pytest.mark.parametrize("typed", ["auto", "-1", " AUTO "])
def test_auto_fits_the_length_as_the_command_line_does(catalog, default, capsys, typed) -> None:
    """max_model_len auto (or -1) on a discrete card: profiled at the model's own 40,960, then fitted
    to 33,824, the largest the pool holds, as `calc model --max-model-len auto` fits it: the same
    length, pool, tokens and max_num_seqs, and the note that says so."""
    from calc.present import cli

    path = "models/configs/qwen3-8b/config.json"
    out = calc_html.run(catalog, "before", _on_card(catalog, default, "rtx-4090", config=(ROOT / path).read_text(), max_model_len=typed))
    assert out.valid, out.errors
    assert cli.main(["model", path, "--gpu", "rtx-4090", "--max-model-len", "auto", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["max_model_len"] == 33_824 and r["verdict"] == "starts"
    assert out.figures["largest_len"] == fmt(33_824, "tokens") and out.figures["tokens"] == fmt(r["kv_tokens"], "tokens")
    for key, term in (("p_weights", "weights"), ("p_activation_peak", "activation_peak"), ("p_non_torch", "non_torch"), ("p_cuda_graph", "cuda_graph")):
        assert out.figures[key] == fmt(r["terms"][term]["bytes"], "GiB"), key  # the pool profiled at 40,960, kept
    assert out.figures["verdict"] == "starts"
    assert f"max_num_seqs {fmt(r['max_num_seqs'], 'count')}" in out.sections["before-result"]
    assert "KV a request at 33,824 tokens" in out.sections["before-result"]
    assert "max_model_len 40,960: auto, the model&#x27;s own; reduced to 33,824, the largest the pool holds" in out.sections["before-result"]


def test_auto_is_refused_where_no_pool_is_predicted(catalog, default) -> None:
    """auto fits the length to a predicted pool: before 0.14.0 vLLM has no auto, and with a pin or on a
    unified-memory box the form predicts no pool to fit it to (`calc model` does): each says so."""
    old = calc_html.run(catalog, "before", _on_card(catalog, default, "h100-sxm", max_model_len="auto", engine_version="0.13.0"))
    assert old.errors == {"max_model_len": "max_model_len: found 'auto' on vLLM 0.13.0, expected a token count (auto and -1 from 0.14.0)"}
    spark = calc_html.run(catalog, "before", {**default, "max_model_len": "-1"})
    assert spark.errors["max_model_len"].startswith(
        "max_model_len: found '-1' on the DGX Spark (GB10), a unified-memory box whose pool is pinned, expected a token count"
    )
    pinned = calc_html.run(catalog, "before", _on_card(catalog, default, "l40s", max_model_len="auto", pin="10 GiB"))
    assert pinned.errors == {
        "max_model_len": "max_model_len: found 'auto' beside a pin of 10 GiB, which is the pool, expected a token count: auto fits the length to a "
        "discrete card's predicted pool (the pin left empty); `calc model --max-model-len auto` fits it here"
    }
    # a pin or a box that does not read is named alone: auto is not blamed on it
    assert set(calc_html.run(catalog, "before", _on_card(catalog, default, "l40s", max_model_len="auto", pin="abc")).errors) == {"pin"}
    assert calc_html.run(catalog, "before", {**default, "max_model_len": "0"}).errors["max_model_len"] == "max_model_len: found 0, expected at least 1"


def test_a_length_above_the_models_own_starts_only_with_the_switch(catalog, default, capsys) -> None:
    """Phi-2 holds 2,048 positions: at 8,192 vLLM refuses the start (the verdict max_model_len) unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; ticked, the calculator predicts what --allow-long-max-model-len does."""
    from calc.present import cli

    path = "models/configs/phi-2/config.json"
    form = _on_card(catalog, default, "h100-sxm", config=(ROOT / path).read_text(), max_model_len="8192", engine_version="0.19.0")
    refused, allowed = (calc_html.run(catalog, "before", {**form, "allow_long_max_model_len": on}) for on in ("", "on"))
    assert refused.valid and allowed.valid, (refused.errors, allowed.errors)
    assert (refused.figures["verdict"], allowed.figures["verdict"]) == ("max_model_len", "starts")
    assert cli.main(["model", path, "--gpu", "h100-sxm", "--max-model-len", "8192", "--engine-version", "0.19.0", "--allow-long-max-model-len", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert allowed.figures["tokens"] == fmt(r["kv_tokens"], "tokens") and r["verdict"] == "starts"


def test_the_scheduler_fields_follow_the_box(catalog, default) -> None:
    """On a discrete card the scheduler's fields empty to the release's defaults; back on a unified box
    they are the gate's calibration again."""
    on_card = calc_html.changed(catalog, "before", "box", {**default, "box": "h100-sxm"})
    assert on_card["values"]["before-seats"] == on_card["values"]["before-prefill-budget"] == ""
    assert "release's default for the card" in on_card["sources"]["before-seats-src"]
    back = calc_html.changed(catalog, "before", "box", {**default, "box": next(iter(catalog.boxes))})
    assert back["values"]["before-seats"] == default["seats"] == fmt(catalog.policy["gate"]["calibration"]["seats"].value, "count")


@pytest.mark.parametrize(
    ("box", "edits", "field", "message"),
    [
        (
            "dgx-spark",
            {"enforce_eager": "on"},
            "enforce_eager",
            "Eager: found ticked on the DGX Spark (GB10), a unified-memory box whose pool is the one pinned",
        ),
        ("h100-sxm", {"pin": "10e9", "offline": "on"}, "offline", "Offline: found ticked with a pin"),
        (
            "h100-sxm",
            {"flashinfer_installed": "on", "no_flashinfer_sampler": "on"},
            "no_flashinfer_sampler",
            "VLLM_USE_FLASHINFER_SAMPLER=0: found ticked beside",
        ),
        ("h100-sxm", {"seats": "4096", "prefill_budget": "2048"}, "seats", "Seats: found 4,096 beside --max-num-batched-tokens 2,048, expected at most 2,048"),
        ("dgx-spark", {"in_use": "2 GiB"}, "in_use", "In use by other processes: found 2.00 GiB on the DGX Spark (GB10), a unified-memory box"),
        ("rtx-4090", {"in_use": "30 GiB"}, "in_use", "In use by other processes: found 30.00 GiB, expected less than 23.29 GiB, the NVIDIA"),
        ("rtx-4090", {"in_use": "23.5 GiB"}, "in_use", "In use by other processes: found 23.50 GiB, expected less than 23.29 GiB"),
        ("rtx-4090", {"in_use": "2"}, "in_use", "In use by other processes: found '2', 2 B, expected at least 1 MiB, such as '2 GiB'"),
        ("rtx-4090", {"in_use": "lots"}, "in_use", "In use by other processes: found 'lots'"),
    ],
)
def test_settings_that_change_no_prediction_are_refused(catalog, default, box, edits, field, message) -> None:
    out = calc_html.run(catalog, "before", {**_on_card(catalog, default, box), **edits})
    assert not out.valid
    assert out.errors[field].startswith(message), out.errors


def test_a_typed_checkpoint_size_is_split_over_the_stages_as_the_command_line_splits_it(catalog, default, capsys, tmp_path) -> None:
    """A checkpoint size typed under pipeline parallel: each stage's weights are its share of that
    size, as `calc model --pp 2 --index` gives them from an index of the same total_size, on a card
    and with a pin alike (not the config's count, nor the whole model on one stage)."""
    from calc.present import cli

    path = "models/configs/qwen3-8b/config.json"
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 12 * 10**9}, "weight_map": {}}))
    config = (ROOT / path).read_text()
    out = calc_html.run(
        catalog, "before", _on_card(catalog, default, "h100-sxm", config=config, max_model_len="8192", pipeline_parallel_size="2", index="12 GB")
    )
    assert out.valid, out.errors
    assert cli.main(["model", path, "--gpu", "h100-sxm", "--max-model-len", "8192", "--pp", "2", "--index", str(index), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert out.figures["p_weights"] == fmt(r["terms"]["weights"]["bytes"], "GiB") == "5.60 GiB"  # half of 12e9 B over the counted 16.38e9, each stage
    assert out.figures["tokens"] == fmt(r["kv_tokens"], "tokens")
    pinned = calc_html.run(catalog, "before", {**default, "config": config, "max_model_len": "8192", "pipeline_parallel_size": "2", "index": "12 GB"})
    assert pinned.valid, pinned.errors
    assert pinned.figures["weights"] == "5.60 GiB"


def test_a_predicted_pool_says_what_the_command_line_says_beside_it(catalog, default, capsys) -> None:
    """DeepSeek V3.2 at TP 8 on H100s, vLLM 0.21.0, FlashInfer ticked: the prediction carries the
    notes `calc model --gpu` prints beside it, each once (the class no public config has checked, the
    indexer's top-k buffer left out, a FlashInfer switch that release does not read)."""
    from calc.present import cli
    from calc.present.calculators.form import esc

    path = "tests/data/configs/deepseek-v3.2/config.json"
    edits = {"config": (ROOT / path).read_text(), "tp": "8", "max_model_len": "8192", "engine_version": "0.21.0", "flashinfer_installed": "on"}
    out = calc_html.run(catalog, "before", _on_card(catalog, default, "h100-sxm", **edits))
    assert out.valid, out.errors
    argv = ["model", path, "--gpu", "h100-sxm", "--tp", "8", "--max-model-len", "8192", "--engine-version", "0.21.0", "--flashinfer-installed"]
    assert cli.main([*argv, "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 3 and notes[1].startswith("not modeled: the indexer's top-k buffer") and notes[2].startswith("--flashinfer-installed changes nothing")
    for note in notes:
        assert out.sections["before-result"].count(esc(note)) == 1, note


def test_drafted_tokens_without_mtp_layers_say_the_drafter_is_not_counted(catalog, default) -> None:
    """Qwen3-8B has no MTP layers: drafted tokens would come from a drafter of its own checkpoint
    (EAGLE, a draft model), whose weights and cache are not counted, and the answer says so beside
    the pool; Qwen3-Next's MTP layer is its drafter, counted, and no such note is shown."""
    qwen = (ROOT / "models/configs/qwen3-8b/config.json").read_text()
    out = calc_html.run(catalog, "before", _on_card(catalog, default, "h100-sxm", config=qwen, max_model_len="8192", speculative_tokens="2"))
    assert out.valid, out.errors
    assert "2 speculative tokens, and the config has no MTP layers for a drafter" in out.sections["before-result"]
    nxt = (ROOT / "models/configs/qwen3-next-80b-a3b-instruct/config.json").read_text()
    mtp = calc_html.run(catalog, "before", _on_card(catalog, default, "h100-sxm", config=nxt, tp="4", max_model_len="8192", speculative_tokens="2"))
    assert mtp.valid, mtp.errors
    assert "no MTP layers" not in mtp.sections["before-result"]


def test_fp8_at_load_is_the_command_lines(catalog, default, capsys) -> None:
    """Quantization fp8 chosen for Llama 3.1 8B's bf16 config: the weights and the pool are
    `calc model --quantization fp8`'s; on a checkpoint saved with another method it is refused beside
    its field, as vLLM refuses it."""
    from calc.present import cli

    path = "models/configs/llama-3.1-8b/config.json"
    out = calc_html.run(catalog, "before", _on_card(catalog, default, "h100-sxm", config=(ROOT / path).read_text(), max_model_len="8192", quantization="fp8"))
    assert out.valid, out.errors
    assert cli.main(["model", path, "--gpu", "h100-sxm", "--max-model-len", "8192", "--quantization", "fp8", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert out.figures["p_weights"] == fmt(r["terms"]["weights"]["bytes"], "GiB") == "8.49 GiB"
    assert out.figures["tokens"] == fmt(r["kv_tokens"], "tokens")
    gptq = (ROOT / "models/configs/qwen3.5-27b-derestricted-gptq-int8/config.json").read_text()
    refused = calc_html.run(catalog, "before", {**default, "config": gptq, "quantization": "fp8"})
    assert not refused.valid
    assert refused.errors["quantization"].startswith("Quantization: found 'fp8' for a checkpoint quantized with 'gptq'"), refused.errors
    odd = calc_html.run(catalog, "before", {**default, "quantization": "int3"})
    assert odd.errors["quantization"] == "Quantization: found 'int3', expected empty or one of fp8, bitsandbytes"


def test_quantization_takes_any_case_as_the_command_line_does(catalog, default) -> None:
    llama = (ROOT / "models/configs/llama-3.1-8b/config.json").read_text()
    upper = calc_html.run(catalog, "before", {**default, "config": llama, "quantization": "FP8"})
    lower = calc_html.run(catalog, "before", {**default, "config": llama, "quantization": "fp8"})
    assert upper.valid and upper.figures == lower.figures


ADDED_CARDS = ("nvidia-a40", "rtx-a6000", "rtx-6000-ada", "nvidia-l40", "tesla-v100-16gb", "tesla-v100-32gb", "nvidia-h20", "rtx-4080-super",
               "rtx-4070-ti-super", "rtx-3080", "rtx-5080", "rtx-5070-ti")  # fmt: skip


@pytest.mark.parametrize("box_id", ADDED_CARDS)
def test_each_added_card_is_offered_and_runs(catalog, default, box_id: str) -> None:
    """Each card is among the page's boxes, by its name; chosen, MemAvailable follows its total
    (torch's: the catalog has no free reading of these cards) and the form runs."""
    box = catalog.boxes[box_id]
    (field,) = [f for f in before.fields(catalog) if f.name == "box"]
    assert (box_id, box["name"], False) in field.options
    moved = calc_html.changed(catalog, "before", "box", {**default, "box": box_id})
    assert moved is not None
    assert abs(parse_size(moved["values"]["before-available"]) - box["total_memory"].value) < 0.01 * GiB
    out = calc_html.run(catalog, "before", {**default, "box": box_id, "overhead": "2 GiB", "available": moved["values"]["before-available"]})
    assert out.valid and out.sections["before-verdict"]


def test_a_class_calc_does_not_read_is_read_as_the_class_typed(catalog, default) -> None:
    """A fine-tune's own class name: the calculator refuses it beside the config and names the field
    that reads it as a known class; typed there, the figures are that class's (Llama 3.1 8B's own, the
    same weights and tokens) with a note that says it was read so; a class calc does not read, or one
    beside a config of a class it reads, is refused beside the field."""
    llama = json.loads((ROOT / "models/configs/llama-3.1-8b/config.json").read_text())
    tuned = json.dumps({**llama, "architectures": ["MyTunedLlamaForCausalLM"]})
    raw = _on_card(catalog, default, "h100-sxm", config=tuned, max_model_len="16384", engine_version="0.19.0")
    out = calc_html.run(catalog, "before", raw)
    assert not out.valid
    assert "found 'MyTunedLlamaForCausalLM'" in out.errors["config"] and "Read it as the class" in out.errors["config"]
    read = calc_html.run(catalog, "before", {**raw, "read_as": "LlamaForCausalLM"})
    own = calc_html.run(catalog, "before", {**raw, "config": json.dumps(llama)})
    assert read.valid and own.valid, (read.errors, own.errors)
    assert read.figures["pool"] == own.figures["pool"] and read.figures["tokens"] == own.figures["tokens"]
    assert "read as LlamaForCausalLM at your word (Read it as the class)" in read.sections["before-result"]
    pinned = calc_html.run(catalog, "before", {**default, "config": tuned, "read_as": "LlamaForCausalLM", "max_model_len": "16384"})  # the gate's path
    assert pinned.valid and "read as LlamaForCausalLM at your word (Read it as the class)" in pinned.sections["before-result"]
    wrong = calc_html.run(catalog, "before", {**raw, "config": json.dumps({**llama, "architectures": ["Tuned"]}), "read_as": "Qwen3MoeForCausalLM"})
    assert "(the config read as 'Read it as the class' gives it)" in wrong.errors["config"] and "num_experts" in wrong.errors["config"]
    bad = calc_html.run(catalog, "before", {**raw, "read_as": "FooForCausalLM"})
    assert bad.errors["read_as"].startswith("Read it as the class: found 'FooForCausalLM', expected a model class calc reads")
    known = calc_html.run(catalog, "before", {**raw, "config": json.dumps(llama), "read_as": "Qwen2ForCausalLM"})
    assert "which calc reads as vLLM builds it: expected it empty" in known.errors["read_as"]


def test_the_command_line_gates_a_pinned_start_on_a_unified_box_as_the_calculator(catalog, default, tmp_path, capsys) -> None:
    """`calc model --gpu dgx-spark --kv-cache-memory-bytes PIN` gates the start as the calculator does
    on the same box: a typed overhead, MemAvailable given, the needs, the margin and the largest pin;
    the same model's measured start gives the overhead when none is typed; without either it is
    outside calibration and says how to come inside."""
    from calc.present import cli

    config = tmp_path / "config.json"
    config.write_text(default["config"])
    argv = ["model", str(config), "--gpu", "dgx-spark", "--max-model-len", "32768", "--kv-cache-memory-bytes", "10e9"]
    assert cli.main([*argv, "--overhead", "4 GiB", "--available", "100 GiB", "--json"]) == 0
    g = g_typed = json.loads(capsys.readouterr().out)["gate"]
    out = calc_html.run(catalog, "before", {**default, "overhead": "4 GiB", "available": "100 GiB"})
    assert fmt(g["needs_bytes"], "GiB") == out.figures["needs"] and fmt(g["margin_bytes"], "GiB") == out.figures["margin"]
    assert fmt(g["largest_pin_bytes"], "e9", 2, down=True) == out.figures["largest_pin"]
    assert g["passes"] is True and g["overhead_source"] == "typed" and g["available_bytes"] == 100 * GiB
    calibration = catalog.policy["gate"]["calibration"]  # the sequences and batched tokens gated, the calibration's unless given
    assert (g["seats"], g["prefill_budget"]) == (calibration["seats"].count, calibration["prefill_budget"].count) == (16, 8192)
    assert cli.main([*argv, "--overhead", "4 GiB", "--available", "70 GiB"]) == 0
    assert "refused, " in capsys.readouterr().out
    below = [*argv[:-1], "1e9", "--overhead", "4 GiB"]  # a pin that holds no 32,768-token request: the gate passes, vLLM refuses
    assert cli.main(below) == 0
    assert "passes, " in (said := capsys.readouterr().out) and "but vLLM refuses the start before it serves" in said
    assert cli.main(argv) == 0
    assert "outside calibration (no measured start of this model in the catalog, and none typed); give --overhead" in capsys.readouterr().out
    dsv = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 1024, "vocab_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 43,
           "intermediate_size": 2048, "moe_intermediate_size": 256, "n_routed_experts": 8, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
           "qk_nope_head_dim": 64, "v_head_dim": 64, "q_lora_rank": 256}  # fmt: skip
    config.write_text(json.dumps(dsv))
    assert cli.main([*argv, "--tp", "2", "--kv-cache-dtype", "fp8_ds_mla", "--json"]) == 0
    g = json.loads(capsys.readouterr().out)["gate"]
    assert next(t["bytes"] for t in g["terms"] if t["name"] == "overhead") == derive.gate_row(catalog, "dsv4-flash-pair").overhead.bytes
    assert "DeepSeek-V4-Flash on two DGX Sparks" in g["overhead_source"]
    config.write_text(default["config"])
    assert cli.main([*argv, "--overhead", "4 GiB", "--max-num-seqs", "1024"]) == 0  # inside no calibration, the overhead typed: no advice to type it
    gated = capsys.readouterr().out
    assert "outside calibration (seat count 1,024 is above the calibrated" in gated and "give --overhead" not in gated
    unpinned = [a for a in argv if a not in ("--kv-cache-memory-bytes", "10e9")]
    assert cli.main([*unpinned, "--overhead", "4 GiB", "--available", "100 GiB", "--json"]) == 0  # no pin: the largest that passes
    taken = json.loads(capsys.readouterr().out)
    assert taken["pool_bytes"] == g_typed["largest_pin_bytes"] // 10**7 * 10**7 and taken["gate"]["passes"] is True
    assert [n for n in taken["notes"] if n.startswith("no --kv-cache-memory-bytes: the largest pin the start gate passes")]
    assert cli.main(unpinned) == 2
    assert "--kv-cache-memory-bytes: found nothing on the DGX Spark (GB10), whose pool is the one pinned" in capsys.readouterr().err
    assert cli.main([*unpinned, "--overhead", "4 GiB", "--available", "40 GiB"]) == 2
    assert "no pin passes its gate: the weights, overhead and headroom alone need" in capsys.readouterr().err
    for bad, message in ((["--available", "500 GiB"], "--available: found 500.00 GiB, expected MemAvailable on the DGX Spark"),
                         (["--available", "100"], "--available: found '100', 100 B, expected at least 1 MiB, such as '100 GiB'"),
                         (["--available", "100000000"], "--available: found '100000000', 100,000,000 B, expected at least 1 GiB free"),
                         (["--overhead", "6"], "--overhead: found '6', 6 B, expected at least 1 MiB, such as '6 GiB'"),
                         (["--overhead", "6000000"], "--overhead: found '6000000', 6,000,000 B, expected a rank's overhead from a measured start"),
                         (["--enforce-eager"], "--enforce-eager: found beside the pinned pool on the DGX Spark (GB10), expected it left out"),
                         (["--gpu", "h100-sxm", "--overhead", "4 GiB"], "--overhead: found beside NVIDIA H100 SXM, a discrete card whose pool is predicted")):  # fmt: skip
        assert cli.main([*argv, *bad]) == 2
        assert message in capsys.readouterr().err


def test_a_unified_box_with_the_pin_left_empty_takes_the_largest_that_passes(catalog, default, tmp_path, capsys) -> None:
    """On the DGX Spark the pool is pinned: an empty pin is the largest the start gate passes, as
    `calc model --gpu dgx-spark` takes it, and the tokens are those it holds; with no overhead to
    size it, the pin field says what to give."""
    from calc.present import cli

    raw = {**default, "pin": "", "overhead": "4 GiB", "available": "100 GiB"}
    out = calc_html.run(catalog, "before", raw)
    assert out.valid, out.errors
    config = tmp_path / "config.json"
    config.write_text(default["config"])
    assert cli.main(["model", str(config), "--gpu", "dgx-spark", "--max-model-len", "32768", "--overhead", "4 GiB", "--available", "100 GiB", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert out.figures["tokens"] == fmt(r["kv_tokens"], "tokens") and out.figures["largest_pin"] == fmt(r["pool_bytes"], "e9", 2, down=True)
    assert "The pin left empty: the largest the start gate passes" in out.sections["before-result"]
    bare = calc_html.run(catalog, "before", {**default, "pin": ""})
    assert bare.errors["pin"].startswith("KV pin: found nothing; the gate cannot size the largest pin (no measured start of this model")


def test_the_length_none_and_auto_on_a_unified_box(catalog, default, tmp_path, capsys) -> None:
    """--max-model-len none is the config's own length, as left out; auto on a unified box fits the
    largest pin the gate passes, or the pin given."""
    from calc.present import cli

    config = tmp_path / "config.json"
    config.write_text(default["config"])
    own = ["model", str(config), "--json"]
    assert cli.main(own) == 0
    left_out = json.loads(capsys.readouterr().out)
    assert cli.main([*own, "--max-model-len", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["max_model_len"] == left_out["max_model_len"] == 40960
    spark = ["model", str(config), "--gpu", "dgx-spark", "--overhead", "4 GiB", "--max-model-len", "auto", "--json"]
    assert cli.main([*spark, "--kv-cache-memory-bytes", "2e9"]) == 0
    small = json.loads(capsys.readouterr().out)
    assert small["max_model_len"] == small["largest_max_model_len"] < 40960  # fitted to the 2e9 pin
    assert cli.main(spark) == 0
    assert json.loads(capsys.readouterr().out)["max_model_len"] == 40960  # the largest pin holds the model's own


def test_the_largest_pin_adds_up_as_printed_and_counts_the_drafter(catalog, default, tmp_path, capsys) -> None:
    """The largest pin the gate passes is one whose printed terms add up inside MemAvailable as
    printed (Qwen3 8B with LoRA slots on the DGX Spark: the exact edge prints 0.01 GiB over), and a
    model with MTP layers under speculative decoding counts them in the gate's drafter term; a taken
    pin says where it came from; the calculator refuses a utilization on a unified box."""
    from calc.present import cli

    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "dgx-spark", "--overhead", "6GiB", "--enable-lora", "--json"]
    assert cli.main(argv) == 0
    g = json.loads(capsys.readouterr().out)["gate"]
    needs = sum(Fraction(fmt(t["bytes"], "GiB").removesuffix(" GiB")) for t in g["terms"])
    assert g["passes"] and Fraction(fmt(g["available_bytes"], "GiB").removesuffix(" GiB")) >= needs
    assert next(t["source"] for t in g["terms"] if t["name"] == "KV pin") == "the largest pin the gate passes (none given)"
    mtp = ["model", "models/configs/qwen3.6-35b-a3b/config.json", "--gpu", "dgx-spark", "--overhead", "6GiB", "--max-model-len", "32768", "--json"]
    assert cli.main([*mtp, "--speculative-tokens", "2"]) == 0
    drafted = json.loads(capsys.readouterr().out)
    assert cli.main(mtp) == 0
    plain = json.loads(capsys.readouterr().out)
    drafter = next(t["bytes"] for t in drafted["gate"]["terms"] if t["name"] == "drafter")
    assert drafter == drafted["drafter_bytes_per_rank"] > 0
    assert abs(plain["pool_bytes"] - drafted["pool_bytes"] - drafter) <= 2 * 10**7  # the pin gives way to the drafter's layers
    refused = calc_html.run(catalog, "before", {**default, "utilization": "0.9"})
    assert refused.errors["utilization"].endswith("a unified-memory box whose pool is the one pinned, expected it empty: the gate reads MemAvailable")


def test_outside_calibration_the_known_terms_and_the_room_left_for_the_overhead(catalog, default, tmp_path, capsys) -> None:
    """With no overhead measured or typed the gate cannot decide, but the weights, the pin and the
    headroom are known: both the calculator and the command line print them, their sum, and what
    MemAvailable leaves for the overhead (the largest overhead that still passes); a pin whose known
    terms alone exceed MemAvailable is refused whatever the overhead."""
    from calc.present import cli

    weights = modeled.model_report(modeled.ModelInputs(default["config"], max_model_len=32768, pool=10**10)).weights_bytes_per_rank
    known = weights + 10**10 + 8 * GiB  # the weights, the pin and the policy's 8 GiB start headroom: no overhead among them
    out = calc_html.run(catalog, "before", {**default, "available": "100 GiB"})
    assert out.figures["gate"] == "outside calibration"
    assert out.figures["known"] == fmt(known, "GiB") and "term_overhead" not in out.figures
    assert out.figures["room"] == fmt(100 * GiB - known, "GiB")  # 100 GiB less 56.x: the overhead the start can still take
    config = tmp_path / "config.json"
    config.write_text(default["config"])
    argv = ["model", str(config), "--gpu", "dgx-spark", "--max-model-len", "32768", "--kv-cache-memory-bytes", "10e9", "--available", "100 GiB"]
    assert cli.main([*argv, "--json"]) == 0
    g = json.loads(capsys.readouterr().out)["gate"]
    assert g["needs_bytes"] is None and g["room_for_overhead_bytes"] == 100 * GiB - known
    assert [t["name"] for t in g["terms"] if t["bytes"]] == ["weights", "KV pin", "start headroom"]
    assert cli.main(argv) == 0
    said = capsys.readouterr().out
    assert f"  known: a rank needs {fmt(known, 'GiB')} = weights {fmt(weights, 'GiB')} + KV pin 9.31 GiB + start headroom 8.00 GiB" in said
    assert f"{fmt(100 * GiB - known, 'GiB')} left for the overhead" in said
    assert cli.main([*argv[:-3], "95e9", "--available", "60 GiB"]) == 0
    assert "refused whatever the overhead: the known terms alone are" in capsys.readouterr().out


def test_known_terms_over_memavailable_are_refused_in_the_headline(catalog, default, tmp_path, capsys) -> None:
    """Outside calibration, when the weights, the pin and the start headroom alone exceed
    MemAvailable no overhead can make the start pass: the verdict at the top and the command line's
    gate line say refused, not only the row below the known terms. Qwen3-30B-A3B's 56.88 GiB of
    weights, a 10e9 B pin and 8 GiB of headroom are 74.19 GiB, above 20 GiB; at 100 GiB the
    overhead decides, and the gate stays outside calibration."""
    from calc.present import cli

    over = calc_html.run(catalog, "before", {**default, "available": "20 GiB"})
    assert over.valid and over.figures["gate"] == "refused"
    assert "Gate: refused whatever the overhead" in over.sections["before-verdict"]
    assert "outside calibration" not in over.sections["before-verdict"]
    room = calc_html.run(catalog, "before", {**default, "available": "100 GiB"})
    assert room.figures["gate"] == "outside calibration" and "Gate: outside calibration." in room.sections["before-verdict"]
    config = tmp_path / "config.json"
    config.write_text(default["config"])
    argv = ["model", str(config), "--gpu", "dgx-spark", "--max-model-len", "32768", "--kv-cache-memory-bytes", "10e9"]
    assert cli.main([*argv, "--available", "20 GiB"]) == 0
    gate_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Start gate on"))
    assert gate_line.startswith("Start gate on DGX Spark (GB10): refused whatever the overhead")
    assert cli.main([*argv, "--available", "100 GiB"]) == 0
    gate_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Start gate on"))
    assert gate_line.startswith("Start gate on DGX Spark (GB10): outside calibration")
    # the JSON says the same: passes false where no overhead can pass, null where the overhead decides
    assert cli.main([*argv, "--available", "20 GiB", "--json"]) == 0
    g = json.loads(capsys.readouterr().out)["gate"]
    assert g["passes"] is False and g["needs_bytes"] is None and g["room_for_overhead_bytes"] < 0
    assert cli.main([*argv, "--available", "100 GiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gate"]["passes"] is None


def test_the_graph_and_chunking_fields_move_the_pool_as_the_command_line(catalog, default, capsys) -> None:
    """On a discrete card the form's optimization level, largest CUDA graph and chunked-prefill switch
    give the figures `calc model` gives with -O, --max-cudagraph-capture-size and
    --no-enable-chunked-prefill (one Compilation, calc/present/vllmserve.py); with a pin, on a
    unified box or before v0.12.0 (for -O) each is refused by its field, and chunked prefill off
    refuses a budget below max_model_len in the budget's own field."""
    from calc.present import cli

    llama = (ROOT / "models" / "configs" / "llama-3.1-8b" / "config.json").read_text()
    raw = {**default, "config": llama, "box": "rtx-4090", "pin": "", "available": "23 GiB", "max_model_len": "16384", "engine_version": "0.21.0",
           "prefill_budget": "", "seats": ""}  # fmt: skip
    argv = ["model", str(ROOT / "models" / "configs" / "llama-3.1-8b" / "config.json"), "--gpu", "rtx-4090", "--max-model-len", "16384",
            "--engine-version", "0.21.0", "--json"]  # fmt: skip
    pools = []
    for fields, flags in (({}, []), ({"optimization_level": "1"}, ["-O1"]), ({"optimization_level": "0"}, ["-O", "0"]),
                          ({"max_cudagraph_capture_size": "64"}, ["--max-cudagraph-capture-size", "64"]),
                          ({"no_chunked_prefill": "on"}, ["--no-enable-chunked-prefill"])):  # fmt: skip
        out = calc_html.run(catalog, "before", {**raw, **fields})
        assert cli.main([*argv, *flags]) == 0
        said = json.loads(capsys.readouterr().out)
        assert cli.main([*argv[:-1], *flags]) == 0  # the text prints the pool as its printed terms add up, as the form does
        printed = capsys.readouterr().out.split("KV pool a rank (predicted): ")[1].split(" GiB")[0] + " GiB"
        assert out.valid, out.errors
        assert out.figures["p_cuda_graph"] == fmt(said["cuda_graph_bytes"], "GiB") and out.figures["pool"] == printed
        assert out.figures["p_activation_peak"] == fmt(said["activation_peak_bytes"], "GiB")
        pools.append(said["available_kv_bytes"])
    default_pool, piecewise, eager_like, up_to_64, unchunked = pools
    assert piecewise > default_pool and eager_like > piecewise and up_to_64 > default_pool and unchunked < default_pool
    refused = calc_html.run(catalog, "before", {**raw, "box": "dgx-spark", "available": "100 GiB", "max_cudagraph_capture_size": "64", "pin": "5e9"})
    assert refused.errors["max_cudagraph_capture_size"].startswith("Largest CUDA graph: found 64 on the DGX Spark (GB10), a unified-memory box")
    # beside a pin on a discrete card the graphs' settings move the pin's check against the card instead
    pinned = [calc_html.run(catalog, "before", {**raw, "pin": "5e9", **extra}) for extra in ({}, {"max_cudagraph_capture_size": "64"}, {"enforce_eager": "on"})]
    assert all(o.valid for o in pinned)
    graphs = [parse_size(o.figures.get("card_cuda_graphs", "0 GiB")) for o in pinned]
    assert graphs[0] > graphs[1] > 0 and "card_cuda_graphs" not in pinned[2].figures
    old = calc_html.run(catalog, "before", {**raw, "optimization_level": "1", "engine_version": "0.11.0"})
    assert old.errors == {"optimization_level": "Optimization level: found 1 for vLLM 0.11.0, expected it empty before v0.12.0, where -O set a "
                                                "compilation level calc does not model"}  # fmt: skip
    short_budget = calc_html.run(catalog, "before", {**raw, "no_chunked_prefill": "on", "prefill_budget": "8192"})
    assert short_budget.errors["prefill_budget"].startswith("Prefill budget: found 8,192 beside 'Chunked prefill off' and max_model_len 16,384")


def test_a_card_the_weights_overfill_shows_no_pool_as_the_command_line(catalog, default, tmp_path, capsys) -> None:
    """Qwen3-30B-A3B (56.88 GiB of weights) on an RTX 4090: the terms row says no pool and how far
    short, as `calc model` says it, never a negative pool."""
    from calc.present import cli

    out = calc_html.run(catalog, "before", {**default, "box": "rtx-4090", "pin": "", "available": "23.68 GiB", "prefill_budget": "", "seats": ""})
    config = tmp_path / "config.json"
    config.write_text(default["config"])
    assert cli.main(["model", str(config), "--gpu", "rtx-4090", "--max-model-len", "32768"]) == 0
    said = capsys.readouterr().out.split("KV pool a rank (predicted): ")[1].split(";")[0]
    assert said == f"none, {out.figures['pool_short']} short" and out.figures["pool"] == "none"
    assert out.figures["pool_short"].endswith(" GiB") and not out.figures["pool_short"].startswith("-")


def test_the_no_pin_message_names_the_terms_it_took_off(catalog, default, tmp_path, capsys) -> None:
    """Outside calibration with no pin, the room left for the pin and the overhead is MemAvailable less
    the known terms, and the message names each of them: the host buffers of --kv-offloading-size too."""
    from calc.present import cli

    config = tmp_path / "config.json"
    config.write_text(default["config"])
    argv = ["model", str(config), "--gpu", "dgx-spark", "--max-model-len", "32768", "--available", "100 GiB"]
    assert cli.main(argv) == 2
    assert "the weights and the start headroom alone leave " in capsys.readouterr().err
    assert cli.main([*argv, "--kv-offloading-size", "40"]) == 2
    assert "the weights, the host buffers and the start headroom alone leave " in capsys.readouterr().err


def test_a_pin_on_a_discrete_card_is_checked_against_the_card_as_the_command_line(catalog, default, capsys) -> None:
    """A pin typed beside a discrete card: vLLM (v0.11.0 on) takes it as the pool, so the form adds the
    command line's check (modeled.card_pin): the terms beside the pin, their sum, the margin and the
    largest pin that fits, the same figures as `calc model --gpu CARD --kv-cache-memory-bytes PIN --json`;
    before v0.11.0 it says vLLM takes no pool in bytes."""
    from calc.present import cli

    qwen = ROOT / "models" / "configs" / "qwen3-8b" / "config.json"
    raw = {**default, "config": qwen.read_text(), "box": "rtx-4090", "available": "23 GiB", "max_model_len": "8192", "prefill_budget": "", "seats": ""}
    for pin, version in (("10e9", ""), ("8e9", "0.21.0")):
        out = calc_html.run(catalog, "before", {**raw, "pin": pin, "engine_version": version})
        argv = ["model", str(qwen), "--gpu", "rtx-4090", "--max-model-len", "8192", "--kv-cache-memory-bytes", pin, "--json"]
        assert cli.main([*argv, *(["--engine-version", version] if version else [])]) == 0
        c = json.loads(capsys.readouterr().out)["card_pin"]
        assert out.figures["card_weights"] == fmt(c["weights_bytes"], "GiB") and out.figures["card_pin"] == fmt(c["pin_bytes"], "GiB")
        assert out.figures["card_largest_pin"] == fmt(c["total_bytes"] - c["needs_bytes"] + c["pin_bytes"], "e9", 2, down=True)
        assert ("Card: fits" if c["fits"] else "Card: over") in out.sections["before-verdict"]
    old = calc_html.run(catalog, "before", {**raw, "pin": "8e9", "engine_version": "0.10.2"})
    assert "Card: no pin before vLLM 0.11.0." in old.sections["before-verdict"] and "card_margin" not in old.figures
    # what others hold and the utilization reach the check as on the command line: 3 GiB held, 0.95 asked
    held = calc_html.run(catalog, "before", {**raw, "pin": "2e9", "in_use": "3 GiB", "utilization": "0.95"})
    assert cli.main(["model", str(qwen), "--gpu", "rtx-4090", "--max-model-len", "8192", "--kv-cache-memory-bytes", "2e9", "--in-use", "3 GiB",
                     "--gpu-memory-utilization", "0.95", "--json"]) == 0  # fmt: skip
    c = json.loads(capsys.readouterr().out)["card_pin"]
    assert c["start_check_passes"] is False and held.figures["card_free_at_start"] == fmt(c["free_at_start_bytes"], "GiB", down=True)
    assert held.figures["card_cuda_context_and_other_processes"] == fmt(c["held_bytes"], "GiB") == "3.39 GiB"


def test_no_pin_fits_where_the_weights_alone_overfill_the_card(catalog, default) -> None:
    """Qwen3-30B-A3B's 56.88 GiB of weights on a 23.68 GiB RTX 4090: no pin fits, said as none."""
    out = calc_html.run(catalog, "before", {**default, "box": "rtx-4090", "available": "23 GiB", "pin": "10e9", "prefill_budget": "", "seats": ""})
    assert out.figures["card_largest_pin"] == "none" and "Card: over" in out.sections["before-verdict"]


def test_memory_other_processes_hold_refuses_the_start_as_vllm_does(catalog, default) -> None:
    """A desktop RTX 4090 whose display and apps hold 1.24 GiB: at 0.97 vLLM's start check finds 21.92
    GiB free of the 22.97 requested and refuses; the form says so beside the figures and offers the
    highest utilization that the free memory holds, 0.93 (22.03 GiB). The 4090's own context, 0.39 GiB,
    is the catalog's reading of one (boxes.yaml in_use_at_start)."""
    path = ROOT / "models/configs/qwen3-8b/config.json"
    out = calc_html.run(catalog, "before", _on_card(catalog, default, "rtx-4090", config=path.read_text(), max_model_len="8192", in_use="1.24 GiB",
                                                    utilization="0.97"))  # fmt: skip
    assert out.valid, out.errors
    assert out.figures["verdict"] == "free memory"
    assert (out.figures["free_at_start"], out.figures["free_requested"]) == ("22.05 GiB", "22.97 GiB")  # 23.68 less 0.39 and 1.24, as printed
    assert "--gpu-memory-utilization 0.93" in out.sections["before-result"]
    idle = calc_html.run(catalog, "before", _on_card(catalog, default, "rtx-4090", config=path.read_text(), max_model_len="8192"))
    assert idle.figures["verdict"] == "starts" and "free_at_start" not in idle.figures  # said where it bites or was asked for


def test_a_pin_still_meets_the_free_memory_check_at_start(catalog, default) -> None:
    """Qwen3-8B on an RTX 4090 with a 4e9 B pin: the pin is the pool, but vLLM's worker still checks
    total x utilization against the free memory before it loads anything (gpu_worker.py init_device,
    0.11.0). With 3 GiB held by other processes the default 0.92 asks 21.79 GiB of the 20.29 free and
    is refused, 0.85 passes; what the others hold counts beside the pin too, with vLLM's own CUDA
    context. The command line says the same."""
    path = ROOT / "models/configs/qwen3-8b/config.json"
    form = _on_card(catalog, default, "rtx-4090", config=path.read_text(), max_model_len="8192", pin="4e9", in_use="3 GiB")
    out = calc_html.run(catalog, "before", form)
    assert out.valid, out.errors
    assert (out.figures["card_free_at_start"], out.figures["card_requested"]) == ("20.29 GiB", "21.79 GiB")
    assert out.figures["card_cuda_context_and_other_processes"] == "3.39 GiB"  # vLLM's own 0.39 GiB context beside the others' 3
    assert "a utilization of 0.85 or lower passes it" in out.sections["before-result"]
    assert "vLLM refuses it at start" in out.sections["before-verdict"]
    passing = calc_html.run(catalog, "before", {**form, "utilization": "0.85"})
    assert passing.valid and "card_free_at_start" not in passing.figures and "refuses it at start" not in passing.sections["before-verdict"]


def test_the_error_list_names_each_field_once(catalog, default) -> None:
    """The summary and the list under it name a field by its label without its parenthesis, and a
    message that opens with that name does not say it twice."""
    out = calc_html.run(catalog, "before", {**default, "index": "zz", "max_model_len": "abc"})
    assert out.sections["before-verdict"] == "<strong>No result:</strong> 2 inputs need fixing (max_model_len, Checkpoint size)."
    listed = html.unescape(out.sections["before-result"])
    assert "<a href=\"#before-index\">Checkpoint size</a>: found 'zz', expected a size such as 10e9, 9.31 GiB or 10 GB</li>" in listed
    assert "<a href=\"#before-max-model-len\">max_model_len</a>: found 'abc', expected a whole number</li>" in listed
    assert out.errors["index"].startswith("Checkpoint size: found 'zz'")  # beside the field the message keeps its name
