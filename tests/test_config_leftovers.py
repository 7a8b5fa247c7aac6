"""Leftovers of a sweep over real configs. Mistyped fields of a config.json: each refused in one line naming the file, the field, what was found and what
was expected, or read as transformers and vLLM read it. The configs are real ones (models/configs/SOURCES.yaml),
changed one field at a time; the sizes they keep are their models' published parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_calc

CONFIGS = ROOT / "models" / "configs"

# published parameter counts (the Hub's safetensors metadata of each model)
LLAMA_31_8B = 8_030_261_248
GEMMA_2_9B = 9_241_705_984
MIXTRAL_8X7B = 46_702_792_704


def changed(tmp_path: Path, name: str, **fields: object) -> Path:
    data = json.loads((CONFIGS / name / "config.json").read_text())
    target = data["text_config"] if isinstance(data.get("text_config"), dict) else data
    target.update(fields)
    out = tmp_path / "config.json"
    out.write_text(json.dumps(data))
    return out


def params(path: Path) -> int:
    done = run_calc("model", str(path), "--json", "--max-model-len", "4096")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["checkpoint_bytes"]) // 2


def refused(path: Path, *args: str) -> str:
    done = run_calc("model", str(path), *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0]
    return lines[0]


def test_the_shipped_configs_keep_their_published_counts(tmp_path: Path) -> None:
    assert params(CONFIGS / "llama-3.1-8b" / "config.json") == LLAMA_31_8B
    assert params(CONFIGS / "gemma-2-9b" / "config.json") == GEMMA_2_9B
    assert params(CONFIGS / "mixtral-8x7b-v0.1" / "config.json") == MIXTRAL_8X7B


@pytest.mark.parametrize("top_k", [9, 0, "2", 2.5])
def test_more_experts_a_token_than_there_are_is_refused(tmp_path: Path, top_k: object) -> None:
    line = refused(changed(tmp_path, "mixtral-8x7b-v0.1", num_experts_per_tok=top_k))
    assert f"num_experts_per_tok: found {top_k!r}, expected a whole number from 1 to 8" in line


def test_all_experts_a_token_is_still_a_config(tmp_path: Path) -> None:
    assert params(changed(tmp_path, "mixtral-8x7b-v0.1", num_experts_per_tok=8)) == MIXTRAL_8X7B


@pytest.mark.parametrize("value", ["linear", ["yarn"], 4.0])
def test_a_rope_scaling_that_is_no_object_is_refused(tmp_path: Path, value: object) -> None:
    line = refused(changed(tmp_path, "llama-3.1-8b", rope_scaling=value))
    assert f"rope_scaling: found {value!r}, expected an object" in line


def test_a_null_rope_scaling_is_none(tmp_path: Path) -> None:
    assert params(changed(tmp_path, "llama-3.1-8b", rope_scaling=None)) == LLAMA_31_8B


def test_a_null_head_dim_falls_back_where_transformers_does(tmp_path: Path) -> None:
    """LlamaConfig takes hidden_size / num_attention_heads for a null head_dim (4,096 / 32 = 128, Llama's own)."""
    assert params(changed(tmp_path, "llama-3.1-8b", head_dim=None)) == LLAMA_31_8B


def test_a_null_head_dim_is_refused_where_nothing_falls_back(tmp_path: Path) -> None:
    """Gemma2Config keeps a null head_dim null and vLLM's gemma2.py hands it on: hidden / heads would be
    3,584 / 16 = 224, not the 256 of the checkpoint, so no size is given."""
    line = refused(changed(tmp_path, "gemma-2-9b", head_dim=None))
    assert "head_dim: found None, expected a whole number" in line and "no fallback" in line


def test_llama4_null_head_dim_falls_back(tmp_path: Path) -> None:
    """Llama4TextConfig: a null head_dim is hidden_size / num_attention_heads (5,120 / 40 = 128, Scout's own)."""
    same = changed(tmp_path, "llama-4-scout-17b-16e-instruct")
    nulled = tmp_path / "nulled"
    nulled.mkdir()
    data = json.loads(same.read_text())
    data["text_config"]["head_dim"] = None
    (nulled / "config.json").write_text(json.dumps(data))
    a = run_calc("model", str(same), "--json", "--max-model-len", "4096")
    b = run_calc("model", str(nulled / "config.json"), "--json", "--max-model-len", "4096")
    assert a.returncode == b.returncode == 0, b.stderr
    assert json.loads(a.stdout)["checkpoint_bytes"] == json.loads(b.stdout)["checkpoint_bytes"]


# --- a Llama 4 config without vision_config ---------------------------------------------------

SCOUT_PARAMS = 108_641_793_536  # Scout's layers with its tower: the published 109B (tests/test_granite_llama4.py)
NO_IMAGES = ("--limit-mm-per-prompt", '{"image": 0}')


def report(path: Path, *args: str) -> dict:
    done = run_calc("model", str(path), "--json", "--max-model-len", "8192", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_llama4_without_vision_config_is_its_language_model_when_no_image_is_allowed() -> None:
    whole = CONFIGS / "llama-4-scout-17b-16e-instruct" / "config.json"
    text = CONFIGS / "llama-4-scout-17b-16e-instruct-text" / "config.json"
    assert "vision_config" not in json.loads(text.read_text())
    assert report(whole)["checkpoint_bytes"] == 2 * SCOUT_PARAMS
    alone, cut = report(text, *NO_IMAGES), report(whole, *NO_IMAGES)
    assert alone["weights_bytes_per_rank"] == cut["weights_bytes_per_rank"] < report(whole)["weights_bytes_per_rank"]
    assert alone["kv_bytes_per_token"] == cut["kv_bytes_per_token"]


@pytest.mark.parametrize("args", [(), ("--limit-mm-per-prompt", '{"image": 1}'), ("--limit-mm-per-prompt", '{"image": 0}', "--engine-version", "0.10.1")])
def test_llama4_without_vision_config_is_refused_where_a_tower_is_built(args: tuple[str, ...]) -> None:
    text = CONFIGS / "llama-4-scout-17b-16e-instruct-text" / "config.json"
    line = refused(text, "--max-model-len", "8192", *args)
    assert "vision_config: found nothing, expected the checkpoint's vision_config, or --limit-mm-per-prompt" in line


# --- Nemotron 3's MTP layers ------------------------------------------------------------------

ULTRA = CONFIGS / "nemotron-3-ultra-550b-a55b-bf16" / "config.json"
SUPER = CONFIGS / "nemotron-3-super-120b-a12b-fp8" / "config.json"
ULTRA_BF16_GB = 1121  # NVIDIA's blog on Ultra's NVFP4 checkpoint: "1,121 GB in BF16", MTP layers among them


def test_nemotron_3_ultra_with_its_mtp_layers_is_the_published_bf16_size() -> None:
    r = report(ULTRA)
    assert round(r["checkpoint_bytes"] / 1e9) == ULTRA_BF16_GB
    assert round((r["checkpoint_bytes"] - r["drafter_bytes_per_rank"]) / 1e9) < ULTRA_BF16_GB - 20  # the layers alone fall short


@pytest.mark.parametrize("config", [SUPER, ULTRA])
def test_nemotron_3_speculative_tokens_load_the_mtp_drafter(config: Path) -> None:
    """--speculative-tokens loads the MTP step: its weights beside the model's and, for its one attention layer,
    2 KV heads of 128 for K and V in bf16 more a token."""
    plain, drafted = report(config), report(config, "--speculative-tokens", "3")
    assert plain["drafter_bytes_per_rank"] == drafted["drafter_bytes_per_rank"] > 0
    assert drafted["kv_bytes_per_token"] - plain["kv_bytes_per_token"] == 2 * 2 * 128 * 2
    assert drafted["weights_bytes_per_rank"] == plain["weights_bytes_per_rank"]


def test_more_than_one_nemotron_mtp_step_is_refused(tmp_path: Path) -> None:
    line = refused(changed(tmp_path, "nemotron-3-ultra-550b-a55b-bf16", num_nextn_predict_layers=2))
    assert "num_nextn_predict_layers: found 2, expected 0 or 1" in line


def test_a_nemotron_mtp_layer_of_another_kind_is_refused(tmp_path: Path) -> None:
    line = refused(changed(tmp_path, "nemotron-3-ultra-550b-a55b-bf16", mtp_layers_block_type=["mamba", "moe"]))
    assert "mtp_layers_block_type: found ['mamba', 'moe'], expected the MTP layers' kinds, each attention (*) or moe (E)" in line


# --- ModelOpt MIXED_PRECISION ------------------------------------------------------------------

QWEN36_MOE_NVFP4 = CONFIGS / "qwen3.6-35b-a3b-nvfp4" / "config.json"
QWEN36_DENSE_NVFP4 = CONFIGS / "qwen3.6-27b-nvfp4" / "config.json"


def test_qwen36_moe_nvfp4_is_the_published_share_of_its_bf16_original() -> None:
    """NVIDIA's card: 3.06 times smaller than the BF16 original (about 71 GB to 23 GB), each module packed as
    quantized_layers names it (FP8 attention, W4A16_NVFP4 experts, shared expert and lm_head)."""
    mixed, bf16 = report(QWEN36_MOE_NVFP4), report(CONFIGS / "qwen3.6-35b-a3b" / "config.json")
    assert (round(mixed["checkpoint_bytes"] / 1e9), round(bf16["checkpoint_bytes"] / 1e9)) == (23, 72)
    assert abs(bf16["checkpoint_bytes"] / mixed["checkpoint_bytes"] / 3.06 - 1) < 0.01
    assert mixed["drafter_bytes_per_rank"] == bf16["drafter_bytes_per_rank"]  # the MTP module is excluded: BF16 in both


def test_qwen36_dense_nvfp4_is_the_published_size() -> None:
    """About 22 GB of weights, the MLPs W4A16_NVFP4 and the attention FP8; its KV cache FP8 (kv_cache_scheme)."""
    r = report(QWEN36_DENSE_NVFP4)
    assert round(r["checkpoint_bytes"] / 1e9) == 22
    assert r["kv_cache_dtype"] == "fp8_e4m3"


def test_mixed_precision_without_its_map_is_refused(tmp_path: Path) -> None:
    data = json.loads(QWEN36_DENSE_NVFP4.read_text())
    del data["quantization_config"]["quantized_layers"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    line = refused(tmp_path / "config.json")
    assert "quantization_config.quantized_layers: found None, expected an object of module names and their algorithms" in line


def test_a_module_calc_does_not_lay_out_refuses_the_model(tmp_path: Path) -> None:
    """A quantized_layers name no tensor of calc's layout takes: refused, not sized without it."""
    data = json.loads(QWEN36_DENSE_NVFP4.read_text())
    data["quantization_config"]["quantized_layers"]["model.language_model.layers.0.self_attn.index_q_proj"] = {"quant_algo": "FP8"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    line = refused(tmp_path / "config.json")
    assert "found 1 modules (model.language_model.layers.0.self_attn.index_q_proj) that calc's layout" in line


def test_shards_of_two_algorithms_in_one_fused_layer_are_refused(tmp_path: Path) -> None:
    data = json.loads(QWEN36_DENSE_NVFP4.read_text())
    data["quantization_config"]["quantized_layers"]["model.language_model.layers.0.mlp.gate_proj"] = {"quant_algo": "FP8"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert "Mixed quant_algo within fused layer" in refused(tmp_path / "config.json")


def test_an_unknown_mixed_algorithm_is_named(tmp_path: Path) -> None:
    data = json.loads(QWEN36_DENSE_NVFP4.read_text())
    data["quantization_config"]["quantized_layers"]["lm_head"] = {"quant_algo": "q8_0"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert "quantized_layers.lm_head.quant_algo: found 'q8_0', expected one of FP8" in refused(tmp_path / "config.json")


def test_vllms_own_names_for_the_method_read_the_same(tmp_path: Path) -> None:
    """quant_method modelopt_mixed (the name vLLM gives MIXED_PRECISION) and --quantization modelopt_mixed size the same bytes."""
    data = json.loads(QWEN36_DENSE_NVFP4.read_text())
    data["quantization_config"]["quant_method"] = "modelopt_mixed"
    (tmp_path / "config.json").write_text(json.dumps(data))
    same = report(QWEN36_DENSE_NVFP4)["checkpoint_bytes"]
    assert report(tmp_path / "config.json")["checkpoint_bytes"] == same
    assert report(QWEN36_DENSE_NVFP4, "--quantization", "modelopt_mixed")["checkpoint_bytes"] == same


# --- DeepSeek V4's NVFP4 experts -----------------------------------------------------------------

DSV4_NVFP4 = ROOT / "tests" / "data" / "configs" / "deepseek-v4-flash-nvfp4" / "config.json"


def test_deepseek_v4_nvfp4_experts_are_nvfp4_and_the_rest_fp8() -> None:
    """NVIDIA's DeepSeek-V4-Flash-NVFP4 (284B parameters, its card): quant_method fp8, which vLLM serves as
    deepseek_v4_fp8 with NVFP4 routed experts under moe_quant_algo NVFP4; its "ignore" list is no key Fp8Config
    reads, so attention and shared experts stay block FP8 as in the original checkpoint. Against the same config
    with MXFP4 experts, each expert's 3 x 2,048 x 4,096 values carry an fp8 scale a 16 rather than an e8m0 a 32,
    and four float32 scalars (two tensors' weight_scale_2 and input_scale) more."""
    from calc.engine import hfconfig, weights

    data = json.loads(DSV4_NVFP4.read_text())
    s = hfconfig.shape(data, str(DSV4_NVFP4))
    assert round(sum(t.rows * t.cols * t.count for t in weights.tensors(s) if not t.buffer) / 1e9) == 284
    assert weights.quant_of(s).ignore == ()
    other = json.loads(DSV4_NVFP4.read_text())
    del other["quantization_config"]["moe_quant_algo"]
    mx = hfconfig.shape(other, str(DSV4_NVFP4))
    n = 3 * 2048 * 4096
    assert weights.per_rank(s).model - weights.per_rank(mx).model == 43 * 256 * (n // 16 - n // 32 + 2 * 8)
