"""ModelOpt checkpoints as vLLM reads their folder: the quantization in hf_quant_config.json beside a
config.json that has none, and --kv-cache-dtype auto turned into the KV quantization the checkpoint
names. Configs: nvidia/Llama-3.1-70B-Instruct-FP8's config.json and hf_quant_config.json, and an
NVFP4 GLM-4.7 whose config.json carries ModelOpt's kv_cache_scheme (models/configs/SOURCES.yaml)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import ROOT, run_calc

CONFIGS = ROOT / "models" / "configs"

# Llama 3.1 70B: 80 layers of hidden 8,192, 64 query and 8 KV heads of 128, MLP 28,672, vocabulary 128,256
H, MLP, LAYERS, VOCAB = 8192, 28672, 80, 128256
LINEAR = H * H + 2 * 1024 * H + H * H + 3 * MLP * H  # q, k, v, o; gate, up, down
PARAMS = LAYERS * (LINEAR + 2 * H) + 2 * VOCAB * H + H


def as_json(*args: str) -> dict:
    done = run_calc(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_fp8_checkpoint_reads_its_quantization_from_the_file_beside_it(tmp_path: Path) -> None:
    """config.json alone reads as the BF16 model, 70.6B parameters at 2 bytes; with ModelOpt's
    hf_quant_config.json beside it (FP8 weights, lm_head excluded, an FP8 KV cache) each linear
    weight is one byte plus its float32 scales, and the KV cache fp8: half the bytes a token."""
    assert PARAMS == 70_553_706_496  # Llama 3.1 70B's published count
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(CONFIGS / "llama-3.1-70b-instruct-fp8" / "config.json", alone / "config.json")
    rope = 131072 * 128 * 2  # the rotary cache vLLM builds beside the weights
    bf16 = as_json("model", str(alone / "config.json"), "--max-model-len", "8192")
    assert bf16["weights_bytes_per_rank"] == 2 * PARAMS + rope
    assert bf16["kv_bytes_per_token"] == 2 * 8 * 128 * 2 * LAYERS == 327680
    fp8 = as_json("model", str(CONFIGS / "llama-3.1-70b-instruct-fp8" / "config.json"), "--max-model-len", "8192")
    scales = LAYERS * 7 * 8  # at most a weight and an input scale, float32, for each of a layer's seven projections
    unquantized = PARAMS - LAYERS * LINEAR
    assert 0 < fp8["weights_bytes_per_rank"] - (LAYERS * LINEAR + 2 * unquantized + rope) <= scales
    assert (fp8["kv_cache_dtype"], fp8["kv_bytes_per_token"]) == ("fp8_e4m3", 327680 // 2)
    assert any("hf_quant_config.json beside the config" in n for n in fp8["notes"])


def test_an_explicit_kv_dtype_and_an_older_release_keep_the_model_dtype() -> None:
    """--kv-cache-dtype bfloat16 is taken as given; vLLM 0.13.0 does not read the checkpoint's KV scheme."""
    config = str(CONFIGS / "llama-3.1-70b-instruct-fp8" / "config.json")
    assert as_json("model", config, "--max-model-len", "8192", "--kv-cache-dtype", "bfloat16")["kv_bytes_per_token"] == 327680
    old = as_json("model", config, "--max-model-len", "8192", "--engine-version", "0.13.0")
    assert (old["kv_cache_dtype"], old["kv_bytes_per_token"]) == ("auto", 327680)


def test_a_modelopt_file_without_its_algorithm_is_named(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "llama-3.1-70b-instruct-fp8" / "config.json", tmp_path / "config.json")
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": {"kv_cache_quant_algo": "FP8"}}))
    done = run_calc("model", str(tmp_path / "config.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'hf_quant_config.json'}: quantization.quant_algo: found nothing, expected ModelOpt's algorithm" in done.stderr


def test_a_kv_cache_scheme_in_the_config_makes_auto_fp8() -> None:
    """ModelOpt 0.31 and later write the KV scheme into config.json's quantization_config as an object
    (8-bit float, static): GLM-4.7 NVFP4's 92 layers of 8 KV heads of 128 then hold one byte an element."""
    config = str(CONFIGS / "glm-4.7-nvfp4" / "config.json")
    auto = as_json("model", config, "--max-model-len", "8192")
    assert (auto["kv_cache_dtype"], auto["kv_bytes_per_token"]) == ("fp8_e4m3", 2 * 8 * 128 * 1 * 92)
    assert as_json("model", config, "--max-model-len", "8192", "--kv-cache-dtype", "bfloat16")["kv_bytes_per_token"] == 2 * 8 * 128 * 2 * 92


def test_the_checkpoint_folder_stands_for_its_config(tmp_path: Path) -> None:
    """vLLM's --model takes the folder; so does the command: its config.json and the hf_quant_config.json beside it."""
    folder = CONFIGS / "llama-3.1-70b-instruct-fp8"
    assert as_json("model", str(folder), "--max-model-len", "8192") == as_json("model", str(folder / "config.json"), "--max-model-len", "8192")
    done = run_calc("model", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"config {tmp_path}: found a folder without a config.json, expected the model's config.json or the checkpoint folder holding it" in done.stderr


def test_a_card_sizes_the_pool_in_the_checkpoint_kv_dtype() -> None:
    """On a card the predicted pool holds twice the tokens at one byte an element as at two."""
    config = str(CONFIGS / "llama-3.1-70b-instruct-fp8" / "config.json")
    card = ("--gpu", "h100-sxm", "--tensor-parallel-size", "4", "--max-model-len", "32768")
    auto, bf16 = as_json("model", config, *card), as_json("model", config, *card, "--kv-cache-dtype", "bfloat16")
    assert (auto["kv_cache_dtype"], auto["kv_bytes_per_token"], bf16["kv_bytes_per_token"]) == ("fp8_e4m3", 2 * 2 * 128 * 80, 2 * 2 * 128 * 80 * 2)
    assert abs(auto["kv_tokens"] // 16 - 2 * (bf16["kv_tokens"] // 16)) <= 1  # the same pool in blocks of 16 tokens, less one left over
