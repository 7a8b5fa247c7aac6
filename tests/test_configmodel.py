"""The config.json model (calc/engine/hfconfig/, calc/engine/weights.py, calc/engine/kvlayout.py, calc/checks/modeled.py)
against figures worked out by hand from real startup logs and the shipped configs."""

from __future__ import annotations

import json
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, lora, weights
from calc.units import GiB, InputError, MiB

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "models" / "configs"


def rope(positions: int, rotary_dim: int) -> int:
    """A rotary embedding's cos/sin cache, built at load beside the weights in the model's dtype
    (vllm/model_executor/layers/rotary_embedding/base.py, register_buffer cos_sin_cache, 0.20.0):
    what 'Model loading took' holds beyond the checkpoint's parameters."""
    return positions * rotary_dim * 2


def shape(name: str) -> hfconfig.Shape:
    return hfconfig.shape(json.loads((CONFIGS / name / "config.json").read_text()), name)


def per_token(name: str, tp: int = 1, kv_dtype: str = "auto") -> Fraction:
    return kvlayout.request(shape(name), kvlayout.Settings(tp=tp, kv_cache_dtype=kv_dtype), 8192, kvlayout.version(None)).bytes_per_token


def pool(name: str, pool_bytes: int, max_model_len: int, engine: str, tp: int = 1, kv_dtype: str = "auto") -> kvlayout.Pool:
    return kvlayout.pool(shape(name), kvlayout.Settings(tp=tp, kv_cache_dtype=kv_dtype), max_model_len, pool_bytes, kvlayout.version(engine))


def printed_gib(text: str) -> tuple[int, int]:
    """The bytes a pool printed as '2.89 GiB' may have held: [2.885, 2.895) GiB."""
    value = Fraction(text)
    return int((value - Fraction(5, 1000)) * GiB), int((value + Fraction(5, 1000)) * GiB)


# --- every config we ship reads -------------------------------------------------------------


def test_every_shipped_config_reads_and_has_a_source() -> None:
    import yaml

    sources = yaml.safe_load((CONFIGS / "SOURCES.yaml").read_text())["configs"]
    names = sorted(p.name for p in CONFIGS.iterdir() if p.is_dir())
    assert names == sorted(sources)
    for name in names:
        s = shape(name)
        assert s.family in hfconfig.FAMILIES
        assert sources[name]["model"]


# --- full attention: KV heads split, replicated below one a rank ----------------------------


@pytest.mark.parametrize(("tp", "expected"), [(1, 131072), (2, 65536), (4, 32768), (8, 16384)])
def test_llama_31_8b_bytes_per_token(tp, expected) -> None:
    # 2 (K and V) x 8 KV heads / TP x 128 head_dim x 2 B (bf16) x 32 layers
    assert per_token("llama-3.1-8b", tp) == 2 * (8 // tp) * 128 * 2 * 32 == expected


def test_kv_heads_below_the_ranks_are_replicated() -> None:
    # Qwen3-30B-A3B has 4 KV heads: at TP 8 each rank still holds one, as at TP 4
    assert per_token("qwen3-30b-a3b", 8) == per_token("qwen3-30b-a3b", 4) == 2 * 1 * 128 * 2 * 48 == 24576


def test_fp8_kv_halves_the_token() -> None:
    assert per_token("qwen3-14b", 1, "fp8") == 2 * 8 * 128 * 1 * 40 == 81920
    assert per_token("qwen3-14b", 1, "bfloat16") == 163840


# --- the V0 engine (vLLM 0.6/0.7): '# GPU blocks' of 16 tokens over all layers ----------------


@pytest.mark.parametrize(
    ("log_pool", "max_len", "blocks", "concurrency"),
    [("2.89", 29000, 1478, "0.82"), ("3.81", 20000, 1952, "1.56")],  # collected logs 01 and 02, RTX 3090
)
def test_v06_llama_31_8b_gpu_blocks(log_pool, max_len, blocks, concurrency) -> None:
    low, high = printed_gib(log_pool)
    # a block is 16 tokens x 131,072 B = 2 MiB: the printed pool holds the printed block count
    assert pool("llama-3.1-8b", low, max_len, "0.6.0").blocks <= blocks <= pool("llama-3.1-8b", high, max_len, "0.6.0").blocks
    exact = pool("llama-3.1-8b", blocks * 2 * MiB, max_len, "0.6.0")
    assert exact.blocks == blocks
    assert exact.tokens == blocks * 16  # "the maximum number of tokens that can be stored in KV cache (23648)"
    assert f"{float(exact.concurrency):.2f}" == concurrency


def test_v07_qwen25_32b_tp2_cuda_blocks() -> None:
    # collected log 04: TP 2, "reserved for KV Cache is 7.71GiB", "# CUDA blocks: 3947"
    # a rank holds 4 of the 8 KV heads: 2 x 4 x 128 x 2 B x 64 layers = 131,072 B a token, 2 MiB a block
    assert per_token("qwen2.5-32b", 2) == 131072
    assert pool("qwen2.5-32b", int(Fraction("7.71") * GiB), 4096, "0.7.3", tp=2).blocks == 3947


# --- V1, tokens printed from blocks (0.8 to 0.25) ---------------------------------------------


def test_v011_qwen3_14b_tokens_and_concurrency() -> None:
    # collected log 07: "Available KV cache memory: 6.51 GiB", "GPU KV cache size: 42,656 tokens",
    # "Maximum concurrency for 32,768 tokens per request: 1.30x"
    # a block: 16 tokens x 163,840 B = 2.5 MiB; 6.51 GiB / 2.5 MiB = 2666.5 -> 2666 blocks
    p = pool("qwen3-14b", int(Fraction("6.51") * GiB), 32768, "0.11.0")
    assert (p.blocks, p.tokens) == (2666, 42656)
    assert p.concurrency == Fraction(2666, 2048)
    assert f"{float(p.concurrency):.2f}" == "1.30"


def test_the_two_ways_of_printing_tokens() -> None:
    # 1478 blocks at max_model_len 29,000 (1,813 blocks a request):
    # by blocks 1478 x 16 = 23,648; by concurrency int(1478 / 1813 x 29000) = 23,641
    blocks = 1478 * 2 * MiB
    assert pool("llama-3.1-8b", blocks, 29000, "0.10.0").tokens == 23648
    assert pool("llama-3.1-8b", blocks, 29000, "0.26.0").tokens == 1478 * 29000 // 1813 == 23641


def test_pool_at_a_pin_and_the_json_keys() -> None:
    # 10e9 B // 65,536 B a page // 32 layers = 4,768 blocks; one 131,072-token request holds 8,192
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "llama-3.1-8b" / "config.json").read_text(), max_model_len=131072, pool=10**10))
    # 8,030,261,248 parameters x 2 B and the rope's 131,072 positions of 128: 14.9888 GiB, vLLM's 'Model loading took'
    assert r.weights_bytes_per_rank == 16060522496 + rope(131072, 128) and round(r.weights_bytes_per_rank / 2**30, 4) == 14.9888
    assert r.kv_bytes_per_token == 131072
    assert r.kv_fixed_bytes_per_request == 0
    assert r.kv_bytes_per_request == 131072 * 131072
    assert r.kv_blocks == 4768
    assert r.max_concurrency == Fraction(4768, 8192)
    assert r.kv_tokens == 76288
    # the newest rules (0.29.0 on) check one request against the pool less one block, the null block
    assert r.largest_max_model_len == (4768 - 1) * 16
    old = modeled.model_report(
        modeled.ModelInputs((CONFIGS / "llama-3.1-8b" / "config.json").read_text(), max_model_len=131072, pool=10**10, engine_version="0.28.0")
    )
    assert old.largest_max_model_len == 4768 * 16
    assert r.modeled is True


# --- MLA: one latent a layer, not split ---------------------------------------------------------


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_kimi_k2_mla_latent(tp) -> None:
    assert per_token("kimi-k2-instruct", tp, "bfloat16") == (512 + 64) * 2 * 61 == 70272
    assert per_token("kimi-k2-instruct", tp, "fp8_ds_mla") == 656 * 61 == 40016


def test_fp8_ds_mla_needs_mla_layers() -> None:
    with pytest.raises(ValueError, match="fp8_ds_mla packs an MLA latent"):
        per_token("llama-3.1-8b", 1, "fp8_ds_mla")


# --- sliding window ------------------------------------------------------------------------------


def _sliding_shape(window: int) -> hfconfig.Shape:
    arch = {"layers": 6, "attention": "sliding", "kv_heads": 1, "head_dim": 64, "full_attention_interval": 6, "sliding_window": window}
    return hfconfig.from_architecture(arch, "five-to-one")


def test_sliding_window_holds_window_plus_budget_plus_one_block() -> None:
    s = _sliding_shape(1024)
    settings = kvlayout.Settings(prefill_budget=2048)
    lay = kvlayout.layout(kvlayout.layer_specs(s, settings))
    sliding = next(g.spec for g in lay.groups if g.spec.kind == "sliding")
    # up to 0.25.x: cdiv(min(1024 - 1 + 2048, 32768), 16) + 1 = 192 + 1
    assert sliding.pages(32768, 2048, 1) == 193
    # the window never holds more than the request: cdiv(min(3071, 1000), 16) + 1 = 63 + 1
    assert sliding.pages(1000, 2048, 1) == 64
    # 0.26 on charges two batches in flight: cdiv(1023 + 4096, 16) + 1 = 320 + 1
    req = kvlayout.request(s, settings, 32768, kvlayout.version("0.26.0"))
    # a token is 2 x 1 head x 64 x 2 B = 256 B, a page 16 x 256 B; the five sliding layers form
    # five groups of one beside the one full layer: fixed = 5 x 321 pages, growing = 256 B a token
    assert req.fixed_bytes == 5 * 321 * 16 * 256 == 6574080
    assert req.bytes_per_token == 256


# --- hybrid: block alignment, grouping, padding -----------------------------------------------


def test_hybrid_attention_block_grows_to_the_mamba_page() -> None:
    # A Qwen3.5 hybrid of 40 layers (30 gated-delta, 10 full), fp8 KV, TP 1, logged
    # "Setting attention block size to 2096 tokens": the state is
    # conv 3 x (2 x 16 x 128 + 32 x 128) x 2 B = 49,152 + temporal 32 x 128 x 128 x 4 B = 2,097,152
    # = 2,146,304 B; one token of attention is 2 x 2 x 256 x 1 B = 1,024 B;
    # 16 x cdiv(2,146,304, 16 x 1,024) = 16 x 131 = 2,096 tokens, a page of exactly 2,146,304 B
    arch = {"layers": 40, "attention": "hybrid", "kv_heads": 2, "head_dim": 256, "full_attention_interval": 4,
            "linear_k_heads": 16, "linear_v_heads": 32, "linear_k_dim": 128, "linear_v_dim": 128, "conv_kernel": 4,
            "state_dtype": "float32"}  # fmt: skip
    s = hfconfig.from_architecture(arch, "qwen3.5-40-layer")
    lay = kvlayout.layout(kvlayout.layer_specs(s, kvlayout.Settings(kv_cache_dtype="fp8")))
    assert lay.min_block_size == 2096
    assert lay.page_bytes == 2096 * 1024 == 2146304
    assert (len(lay.groups), lay.group_size, lay.padding_layers) == (4, 10, 0)  # 1 full + 3 linear groups of 10


def test_hybrid_padding_with_the_mtp_drafter() -> None:
    # collected log 25 (Qwen3.6 27B, TP 2, MTP): "Add 3 padding layers, may waste at most 6.25%":
    # 64 layers = 16 full + 48 linear, and the MTP drafter adds a 17th full layer: groups of 17,
    # 48 linear layers fill cdiv(48, 17) = 3 groups of 17 = 51, so 3 padding layers, 3 / 48 = 6.25 %
    arch = {"layers": 64, "attention": "hybrid", "kv_heads": 4, "head_dim": 256, "full_attention_interval": 4,
            "linear_k_heads": 16, "linear_v_heads": 48, "linear_k_dim": 128, "linear_v_dim": 128, "conv_kernel": 4,
            "drafter_layers": 1}  # fmt: skip
    s = hfconfig.from_architecture(arch, "qwen3.6-27b")
    lay = kvlayout.layout(kvlayout.layer_specs(s, kvlayout.Settings(tp=2, speculative_tokens=3)))
    assert (lay.group_size, lay.padding_layers, len(lay.groups)) == (17, 3, 4)
    assert Fraction(lay.padding_layers, 48) == Fraction(625, 10000)
    # without speculative decoding the drafter is not loaded: 16 and 48, groups of 16, no padding
    assert kvlayout.layout(kvlayout.layer_specs(s, kvlayout.Settings(tp=2))).padding_layers == 0


def test_mamba_state_pages_grow_with_speculative_tokens() -> None:
    arch = {"layers": 4, "attention": "hybrid", "kv_heads": 1, "head_dim": 64, "full_attention_interval": 4,
            "linear_k_heads": 1, "linear_v_heads": 1, "linear_k_dim": 64, "linear_v_dim": 64, "conv_kernel": 4}  # fmt: skip
    s = hfconfig.from_architecture(arch, "tiny")
    # prefix caching on (vLLM's default): "align" mode keeps two states, plus one a speculative token
    specs = kvlayout.layer_specs(s, kvlayout.Settings(speculative_tokens=2))
    assert {sp.state_pages for sp in specs if sp.kind == "mamba"} == {4}
    # prefix caching off: one state, plus one a speculative token
    specs = kvlayout.layer_specs(s, kvlayout.Settings(speculative_tokens=2, mamba_cache_mode="none"))
    assert {sp.state_pages for sp in specs if sp.kind == "mamba"} == {3}


# --- weights ---------------------------------------------------------------------------------------


def test_llama_weights_count_and_split() -> None:
    s = shape("llama-3.1-8b")
    assert weights.per_rank(s, 1).model == 16060522496 + rope(131072, 128)
    # TP 2: everything but the norms halves (32 layers x 2 norms + 1 final, of 4,096 x 2 B, stay whole),
    # and every rank builds the rope's cache whole
    norms = (32 * 2 + 1) * 4096 * 2
    assert weights.per_rank(s, 2).model == (16060522496 - norms) // 2 + norms + rope(131072, 128)


def test_llama_weights_against_the_v06_log() -> None:
    # collected log 01: "Loading model weights took 14.9888 GB" (GiB); the count is 14.958 GiB, 0.21 % under
    modeled_gib = Fraction(weights.per_rank(shape("llama-3.1-8b"), 1).model, GiB)
    assert abs(modeled_gib / Fraction("14.9888") - 1) < Fraction(25, 10000)


def test_kimi_k2_fp8_blocks_against_its_tensor_sum() -> None:
    # the model report quoting the config sums the checkpoint's tensors to 958.49 (GiB)
    w = weights.per_rank(shape("kimi-k2-instruct"), 8)
    assert round(Fraction(w.checkpoint_total, GiB), 2) == Fraction("958.49")
    assert w.source == "config"


def test_index_total_size_beats_the_count() -> None:
    s = shape("llama-3.1-8b")
    counted = weights.per_rank(s, 2)
    given = weights.per_rank(s, 2, total_size=2 * counted.checkpoint_total)
    assert given.source == "index total_size"
    assert given.model - rope(131072, 128) == 2 * (counted.model - rope(131072, 128))  # the checkpoint's part scales, the rope's cache does not
    with pytest.raises(InputError, match=r"index.json: metadata.total_size: found None"):
        weights.checkpoint_size({"metadata": {}, "weight_map": {}}, "index.json")


def test_shard_headers_add_up() -> None:
    # two shards' safetensors headers: 4096 x 4096 bf16 (33,554,432 B) and a 4096 bf16 norm (8,192 B)
    headers = [
        {"__metadata__": {"format": "pt"}, "a.weight": {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [0, 33554432]}},
        {"b.weight": {"dtype": "BF16", "shape": [4096], "data_offsets": [0, 8192]}},
    ]
    assert weights.checkpoint_size(headers, "headers.json") == (33562624, "shard headers")
    with pytest.raises(InputError, match=r"headers.json: b.weight.data_offsets: found \[8192, 0\]"):
        weights.checkpoint_size({"b.weight": {"data_offsets": [8192, 0]}}, "headers.json")


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        # 4096 x 4096 values
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, 16777216 + 32 * 32 * 4),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, 16777216 // 2 + 16777216 // 16 + 8),
        ({"quant_method": "mxfp4"}, 16777216 // 2 + 16777216 // 32),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, 16777216 // 2 + 32 * 4096 * 2 + 32 * 4096 // 2),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, 16777216 // 2 + 32 * 4096 * 2 + 4096 * 4),
        # bitsandbytes: a float32 absmax a block of 64; kept double-quantized, a byte a block and a float32 a 256 blocks
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 16777216 // 2 + 16777216 // 64 * 4),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "nested on the device": True}, 16777216 // 2 + 16777216 // 64 + 16777216 // 64 // 256 * 4),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 16777216 + 4096 * 4),
    ],
)
def test_quantized_tensor_bytes(quant, expected) -> None:
    nested = quant.get("nested on the device", False)  # bnb_as_loaded's mark, a field of the Shape
    s = hfconfig.Shape(file="x", architecture="x", layers=(), hidden=1, vocab=1, heads=1, kv_heads=1, head_dim=1, mlps=(),
                       quantization={k: v for k, v in quant.items() if k != "nested on the device"}, bnb_nested_on_device=nested)  # fmt: skip
    t = weights.Tensor("model.layers.0.self_attn.q_proj", 4096, 4096, linear=True)
    assert weights.tensor_bytes(t, weights.quant_of(s), 2) == expected


BNB_UNSLOTH = {  # the kwargs an Unsloth start logs for unsloth/meta-llama-3.1-8b-instruct-bnb-4bit (code index file 44847761102)
    "quant_method": "bitsandbytes", "load_in_8bit": False, "load_in_4bit": True, "bnb_4bit_compute_dtype": "float16", "bnb_4bit_quant_storage": "uint8",
    "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True, "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False,
    "llm_int8_skip_modules": ["lm_head", "multi_modal_projector", "merger", "modality_projection"], "llm_int8_threshold": 6.0,
}  # fmt: skip


def _bnb_report(version: str, tp: int = 1, quantization: dict | None = None) -> modeled.ModelReport:
    config = json.loads((CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    config["quantization_config"] = quantization or BNB_UNSLOTH
    return modeled.model_report(modeled.ModelInputs(config_text=json.dumps(config), config_file="bnb.json", tp=tp, max_model_len=512, engine_version=version))


def test_bitsandbytes_weights_as_each_release_loads_them() -> None:
    """Llama 3.1 8B saved with bitsandbytes 4-bit (double-quantized statistics): 6,979,321,856 values
    in the linear layers, the embedding and the head in the model's dtype. Up to v0.9.1 the device
    keeps the statistics nested (a byte a block of 64 and a float32 a 256 blocks); from v0.9.2 the
    loader expands them to a float32 a block. The v0.7.2 start that logged 'Loading model weights
    took 5.3541 GB' (a Tesla T4, float16; code index file 44847761102) is the nested count within
    0.3 %. From v0.28.0 vLLM has no bitsandbytes, and a saved checkpoint refuses tensor parallel."""
    linear = 32 * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096)
    assert linear == 6_979_321_856
    rest = 2 * 128256 * 4096 * 2 + (2 * 32 + 1) * 4096 * 2  # the embedding and the head, the norms
    old, new = _bnb_report("0.7.2"), _bnb_report("0.10.0")
    nested = sum(n // 2 + n // 64 + -(-(n // 64) // 256) * 4 for n in _linear_sizes())  # every size a multiple of 64
    expanded = sum(n // 2 + n // 64 * 4 for n in _linear_sizes())
    rope = old.weights_bytes_per_rank - nested - rest
    assert 0 < rope == new.weights_bytes_per_rank - expanded - rest  # the rotary cache, the same in both
    assert abs(old.weights_bytes_per_rank - 5.3541 * GiB) < 0.003 * 5.3541 * GiB
    with pytest.raises(
        InputError, match=r"found 0\.28\.0: vLLM 0\.28\.0 and later have no bitsandbytes.*asks for it: expected --engine-version 0\.27\.1 or earlier"
    ):
        _bnb_report("0.28.0")
    with pytest.raises(InputError, match=r"--tensor-parallel-size: found 2 for a checkpoint saved with bitsandbytes \(bnb\.json\), expected 1"):
        _bnb_report("0.23.0", tp=2)
    at_load = _bnb_report("0.23.0", tp=2, quantization=hfconfig.AT_LOAD["bitsandbytes"])  # an unquantized checkpoint quantized as it loads splits
    assert at_load.tp == 2 and at_load.weights_bytes_per_rank < new.weights_bytes_per_rank


def test_a_saved_bitsandbytes_checkpoint_is_offered_stages_not_tensor_parallel() -> None:
    """Llama 3.1 70B's layers saved with bitsandbytes on an RTX 4090 under v0.23.0: the weights do not
    fit one card; vLLM refuses tensor parallel for the checkpoint and says to try pipeline parallel,
    so the least change offered is more stages, each predicted again."""
    from calc.engine import predict

    config = json.loads((CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    config.update(num_hidden_layers=80, hidden_size=8192, intermediate_size=28672, num_attention_heads=64, quantization_config=BNB_UNSLOTH)
    shape = hfconfig.shape(config, "bnb70.json")
    card = predict.card_from_total("23.68 GiB")
    start = predict.Start(max_model_len=8192, engine_version="0.23.0")
    assert predict.predict(shape, card, start).verdict == "weights do not fit"
    found = predict.fixes(shape, card, start)
    assert [f.start.tp for f in found] == [1] * len(found) and found[-1].flags.startswith("--pipeline-parallel-size ")
    assert found[-1].prediction.verdict == "starts"


def test_bitsandbytes_on_fused_experts_as_each_release_takes_it() -> None:
    """Qwen3-30B-A3B with bitsandbytes: up to 0.9.x the experts get no method (refused); 0.10.0 loads
    one quantized as it loads but refuses a saved one; from 0.10.1 a saved 4-bit one loads and a saved
    8-bit one is refused (bitsandbytes_loader.py)."""
    config = json.loads((CONFIGS / "qwen3-30b-a3b" / "config.json").read_text())

    def moe(version: str, quantization: dict) -> modeled.ModelReport:
        text = json.dumps({**config, "quantization_config": quantization})
        return modeled.model_report(modeled.ModelInputs(config_text=text, config_file="moe.json", max_model_len=4096, engine_version=version))

    four, eight = {"quant_method": "bitsandbytes", "load_in_4bit": True}, {"quant_method": "bitsandbytes", "load_in_8bit": True}
    at_load = hfconfig.AT_LOAD["bitsandbytes"]
    with pytest.raises(InputError, match=r"vLLM 0\.9 quantizes no fused experts with bitsandbytes"):
        moe("0.9.2", at_load)
    with pytest.raises(InputError, match=r"'Prequant BitsAndBytes models with FusedMoE is not supported yet\.'"):
        moe("0.10.0", four)
    assert moe("0.10.0", at_load).weights_bytes_per_rank == moe("0.10.1.1", four).weights_bytes_per_rank  # both 4-bit, expanded
    with pytest.raises(InputError, match=r"'Prequant BitsAndBytes 8bit models with FusedMoE is not supported yet\.'"):
        moe("0.23.0", eight)


def test_bitsandbytes_on_experts_the_class_maps_no_weight_of_is_refused() -> None:
    """The loader maps expert weights by the model's get_expert_mapping: DeepSeek-V2-Lite's class has
    none in 0.11.0 (refused, naming the release that has it, 0.12.0) and one from 0.12.0;
    Qwen3-30B-A3B's class has one from 0.10.0."""
    at_load = hfconfig.AT_LOAD["bitsandbytes"]

    def bnb(name: str, version: str, **changes: object) -> modeled.ModelReport:
        config = {**json.loads((CONFIGS / name / "config.json").read_text()), **changes, "quantization_config": at_load}
        return modeled.model_report(modeled.ModelInputs(config_text=json.dumps(config), config_file="moe.json", max_model_len=4096, engine_version=version))

    with pytest.raises(InputError, match=r"vLLM 0\.11\.0's DeepseekV2ForCausalLM maps no expert weights.*expected --engine-version 0\.12\.0 or later"):
        bnb("deepseek-v2-lite-chat", "0.11.0")
    assert bnb("deepseek-v2-lite-chat", "0.12.0").weights_bytes_per_rank > 0
    assert bnb("qwen3-30b-a3b", "0.10.0").weights_bytes_per_rank > 0
    assert bnb("qwen3-next-80b-a3b-instruct", "0.10.2").weights_bytes_per_rank > 0  # its first release has the mapping
    with pytest.raises(InputError, match=r"vLLM 0\.10\.0's JambaForCausalLM maps no expert weights.*expected --engine-version 0\.10\.1 or later"):
        bnb("jamba-v0.1", "0.10.0")
    # MiniMax-M1 has none up to 0.23.x, the last release that builds it: no release is offered
    with pytest.raises(
        InputError,
        match=r"^--quantization: found 'bitsandbytes', which vLLM 0\.20\.0's MiniMaxM1ForCausalLM maps no expert weights.*"
        r"nor does any later release that builds it \(the last, 0\.23\.x\): expected the unquantized checkpoint",
    ):
        bnb("minimax-m1", "0.20.0")
    assert set(weights.BNB_EXPERT_MAPPING_FROM) <= set(hfconfig.model_classes())


def _linear_sizes() -> list[int]:
    """Llama 3.1 8B's linear weights, one entry a tensor (each quantized on its own)."""
    return [n for _ in range(32) for n in (4096 * 4096, 1024 * 4096, 1024 * 4096, 4096 * 4096, 14336 * 4096, 14336 * 4096, 4096 * 14336)]


def test_ignored_modules_stay_in_the_model_dtype() -> None:
    s = hfconfig.Shape(file="x", architecture="x", layers=(), hidden=1, vocab=1, heads=1, kv_heads=1, head_dim=1, mlps=(),
                       quantization={"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]})  # fmt: skip
    q = weights.quant_of(s)
    assert weights.tensor_bytes(weights.Tensor("model.layers.3.self_attn.q_proj", 64, 64, linear=True), q, 2) == 64 * 64 * 2
    assert weights.tensor_bytes(weights.Tensor("model.layers.3.mlp.experts.down_proj", 64, 64, linear=True), q, 2) == 64 * 64 // 2 + 64 * 64 // 32


@pytest.mark.parametrize(
    ("quant", "message"),
    [
        ({"quant_method": "fp8", "modules_to_not_convert": [1, 2]}, "x: quantization_config.modules_to_not_convert: found [1, 2], expected a list of module names"),
        ({"quant_method": "fp8", "ignored_layers": "lm_head"}, "x: quantization_config.ignored_layers: found 'lm_head', expected a list of module names"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "ignore": "lm_head"}, "x: quantization_config.ignore: found 'lm_head', expected a list of module names"),
        ({"quant_method": "fp8", "weight_block_size": [128, True]}, "x: quantization_config.weight_block_size: found [128, True], expected two whole numbers"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": "lots"}, "x: quantization_config.group_size: found 'lots', expected a whole number"),
        ({"quant_method": "compressed-tensors", "config_groups": [1]}, "x: quantization_config.config_groups: found [1], expected an object"),
        ({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {"weights": "fp8"}}},
         "x: quantization_config.config_groups.*.weights: found 'fp8', expected an object"),
        ({"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"g": {"weights": {"strategy": "block", "block_structure": [128]}}}},
         "x: quantization_config.config_groups.*.weights.block_structure: found [128], expected two whole numbers"),
    ],
)  # fmt: skip
def test_a_quantization_field_of_the_wrong_type_is_named(quant, message) -> None:
    """Each field of quantization_config is checked as it is read: a wrong type is one line naming
    the field, never a traceback or a module list read letter by letter."""
    s = hfconfig.Shape(file="x", architecture="x", layers=(), hidden=1, vocab=1, heads=1, kv_heads=1, head_dim=1, mlps=(), quantization=quant)
    with pytest.raises(InputError) as caught:
        weights.quant_of(s)
    assert str(caught.value).startswith(message)


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{not json",
            "cfg.json: (the file): found text that is not JSON at line 1 column 2 (Expecting property name enclosed in double quotes), expected a JSON object",
        ),
        ("[1, 2]", "cfg.json: (the file): found 'list', expected a JSON object"),
        ('{"architectures": ["LlamaForCausalLM"]}', "cfg.json: num_hidden_layers: found nothing, expected a whole number"),
        ('{"architectures": ["BertModel"]}', "cfg.json: architectures[0]: found 'BertModel', expected one of"),
        ('{"hidden_size": 8}', "cfg.json: architectures: found nothing, expected a list naming the model class"),
        (
            '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": -4}',
            "cfg.json: num_attention_heads: found -4, expected a whole number of at least 1",
        ),
        (
            '{"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 2, "layer_types": ["full_attention"]}',
            "cfg.json: layer_types: found ['full_attention'], expected a list of 2 layer types",
        ),
    ],
)
def test_bad_configs_are_named(text, message) -> None:
    with pytest.raises(InputError) as error:
        modeled.model_report(modeled.ModelInputs(text, "cfg.json"))
    assert str(error.value).startswith(message)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_calc(*args)


def test_cli_model_json() -> None:
    out = run_cli("model", "models/configs/qwen3-14b/config.json", "--tp", "1", "--kv-cache-dtype", "auto", "--max-model-len", "32768",
                  "--pool", "6.51 GiB", "--engine-version", "0.11.0", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert (r["kv_tokens"], r["kv_bytes_per_token"], r["kv_fixed_bytes_per_request"]) == (42656, 163840, 0)
    assert r["max_concurrency"] == pytest.approx(2666 / 2048)
    assert r["weights_source"] == "config"


def test_the_model_report_is_typed_and_its_json_keeps_vllms_keys_in_their_order() -> None:
    """llama-3.1-8b at PP 2 with LoRA and a 10e9 B pool: the stages are records, and the JSON keeps
    the keys the command line printed, pool_bytes after the notes, each stage's LoRA bytes last."""
    text = (CONFIGS / "llama-3.1-8b" / "config.json").read_text()
    r = modeled.model_report(modeled.ModelInputs(text, max_model_len=8192, pool=10**10, pp=2, lora=lora.Lora(1, 16, None)))
    assert isinstance(r, modeled.ModelReport) and r.prediction is None and r.pool_bytes == 10**10
    assert [(st.rank, st.first_layer, st.end_layer) for st in r.ranks] == [(0, 0, 16), (1, 16, 32)]
    assert r.lora is not None and all(st.lora_bytes for st in r.ranks) and r.ranks[0].offloaded_bytes is None
    out = r.to_json()
    assert list(out)[:3] == ["modeled", "architecture", "family"]
    assert list(out)[-7:] == ["ranks", "lora", "tower", "offload", "notes", "pool_bytes", "one_request_fits"] and out["one_request_fits"] is True
    assert list(out["ranks"][0])[-2:] == ["kv_floor_bytes", "lora_bytes"] and out["ranks"][1]["holds"] == list(r.ranks[1].holds)
    assert out["kv_tokens"] == r.kv_tokens and out["max_concurrency"] == float(r.max_concurrency or 0) and out["offload"] is None
    plain = modeled.model_report(modeled.ModelInputs(text, max_model_len=8192)).to_json()
    assert "pool_bytes" not in plain and plain["kv_tokens"] is None and "lora_bytes" not in plain["ranks"][0]


def test_cli_model_bad_file_is_one_line(tmp_path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 40, "hidden_size": 4096}')
    out = run_cli("model", str(bad), "--max-model-len", "8192")
    assert out.returncode == 2
    assert out.stderr.strip() == f"calc: error: {bad}: num_attention_heads: found nothing, expected a whole number"
    missing = run_cli("model", str(tmp_path / "nope.json"), "--max-model-len", "8192")
    assert missing.returncode == 2 and missing.stderr.startswith("calc: error: config ") and "cannot read it" in missing.stderr
    tp = run_cli("model", "models/configs/llama-3.1-8b/config.json", "--max-model-len", "8192", "--tp", "3")
    assert tp.returncode == 2 and "--tp: found 3, expected a divisor of the model's 32 attention heads" in tp.stderr


def test_decode_context_parallel_splits_the_tokens() -> None:
    # DCP 8 at TP 8: each rank keeps cdiv(max_model_len, 8) tokens of the latent, and the blocks-era
    # log multiplies its token count back by 8 ("Multiplying the GPU KV cache size by the cp_world_size")
    s = shape("kimi-k2-instruct")
    settings = kvlayout.Settings(tp=8, kv_cache_dtype="fp8_ds_mla", dcp=8)
    req = kvlayout.request(s, settings, 131072, kvlayout.version("0.11.0"))
    assert req.bytes_per_token == Fraction(656 * 61, 8)
    assert req.pages_per_request == 131072 // 8 // 64  # 256 pages of 64 tokens
    p = kvlayout.pool(s, settings, 131072, 10**10, kvlayout.version("0.11.0"))
    assert p.blocks == 10**10 // (64 * 656) // 61
    assert p.tokens == p.blocks * 64 * 8


def test_drafter_layers_are_counted_apart() -> None:
    data = json.loads((CONFIGS / "kimi-k2-instruct" / "config.json").read_text())
    with_mtp = hfconfig.shape({**data, "num_nextn_predict_layers": 1}, "k2-mtp")
    plain, mtp = weights.per_rank(shape("kimi-k2-instruct"), 8), weights.per_rank(with_mtp, 8)
    assert mtp.model == plain.model  # the drafter loads only with speculative decoding
    assert mtp.drafter > 0 and plain.drafter == 0
    # its cache is one more MLA layer in the pool, only when speculative tokens are asked for
    off = kvlayout.request(with_mtp, kvlayout.Settings(tp=8), 8192, kvlayout.version(None))
    on = kvlayout.request(with_mtp, kvlayout.Settings(tp=8, speculative_tokens=1), 8192, kvlayout.version(None))
    assert (off.bytes_per_token, on.bytes_per_token) == (576 * 2 * 61, 576 * 2 * 62)


QWEN36_35B = {"layers": 40, "attention": "hybrid", "kv_heads": 2, "head_dim": 256, "full_attention_interval": 4, "linear_k_heads": 16,
              "linear_v_heads": 32, "linear_k_dim": 128, "linear_v_dim": 128, "conv_kernel": 4, "state_dtype": "float32"}  # fmt: skip


def test_hybrid_align_mode_against_a_v024_log() -> None:
    # club-3090 issue 612, vLLM 0.24.0, TP 1, fp8 KV, prefix caching on:
    # "Available KV cache memory: 5.98 GiB", "GPU KV cache size: 567,978 tokens", 4.33x at 131,072.
    # block 2,096 (as above), page 2,146,304 B; 5.98 GiB // page = 2,991 // 10 layers a group = 299 blocks;
    # a request: cdiv(131,072, 2,096) = 63 pages + 3 linear groups x 2 states ("align") = 69;
    # int(299 / 69 x 131,072) = 567,978
    s = hfconfig.from_architecture(QWEN36_35B, "qwen3.6-35b-a3b")
    p = kvlayout.pool(s, kvlayout.Settings(kv_cache_dtype="fp8"), 131072, int(Fraction("5.98") * GiB), kvlayout.version("0.24.0"))
    assert (p.blocks, p.tokens) == (299, 567978)
    assert f"{float(p.concurrency):.2f}" == "4.33"
    # without prefix caching ("none") one state a group: 66 pages, a different count
    none = kvlayout.pool(s, kvlayout.Settings(kv_cache_dtype="fp8", mamba_cache_mode="none"), 131072, int(Fraction("5.98") * GiB), kvlayout.version("0.24.0"))
    assert none.tokens == 299 * 131072 // 66


def test_hybrid_tp2_against_the_catalog_architecture(catalog) -> None:
    # mitchross/talos-argocd-proxmox PR 1995: Qwen3.8 27B FP8, TP 2, fp8_e4m3, "2.31x" and 302,921 tokens
    # on 4.99 GiB a rank. State: conv 3 x 5,120 x 2 B + temporal 24 x 128 x 128 x 4 B = 1,603,584 B;
    # attention 2 heads x 512 x 1 B = 1,024 B a token: block 16 x 98 = 1,568 (the PR's own figure);
    # 4.99 GiB // 1,605,632 // 16 = 208 blocks; a request 84 + 3 x 2 = 90 pages; int(208 / 90 x 131,072)
    s = hfconfig.from_architecture(catalog.models["qwen3.8-27b"]["architecture"], "qwen3.8-27b")
    settings = kvlayout.Settings(tp=2, kv_cache_dtype="fp8_e4m3")
    assert kvlayout.layout(kvlayout.layer_specs(s, settings)).min_block_size == 1568
    p = kvlayout.pool(s, settings, 131072, int(Fraction("4.99") * GiB), kvlayout.version(None))
    assert (p.blocks, p.tokens) == (208, 302921)
    assert f"{float(p.concurrency):.2f}" == "2.31"


def test_nemotron_h_pattern_state_and_block() -> None:
    # Nemotron-H 8B's shape (the values a public test trims from nvidia/Nemotron-H-8B-Base-8K):
    # 24 mamba, 4 attention and 24 MLP layers; mamba state at TP 1 with vLLM's float32 default:
    # conv 3 x (128 x 64 + 2 x 8 x 128) x 2 B = 61,440, temporal 128 x 64 x 128 x 4 B = 4,194,304;
    # one token of attention 2 x 8 x 128 x 2 B = 4,096 B, so a block of 16 x cdiv(4,255,744, 65,536) = 1,040
    config = {
        "architectures": ["NemotronHForCausalLM"], "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
        "hidden_size": 4096, "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 131072,
        "intermediate_size": 21504, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4,
    }  # fmt: skip
    s = hfconfig.shape(config, "nemotron-h.json")
    assert s.family == "hybrid" and (s.layers.count("mamba"), s.layers.count("full")) == (24, 4)
    lay = kvlayout.layout(kvlayout.layer_specs(s, kvlayout.Settings()))
    assert lay.min_block_size == 1040 and lay.page_bytes == 1040 * 4096
    assert (lay.group_size, len(lay.groups), lay.padding_layers) == (4, 7, 0)  # 1 attention group and 6 of mamba
    with pytest.raises(InputError, match=r"nemotron-h.json: hybrid_override_pattern: found 'M\*', expected 52 characters"):
        hfconfig.shape({**config, "hybrid_override_pattern": "M*"}, "nemotron-h.json")


@pytest.mark.parametrize(
    ("config", "family", "per_token"),
    [
        # gpt-oss: layer_types alternate; only the 2 full layers grow: 2 x 2 x 8 x 64 x 2 B
        (
            {
                "architectures": ["GptOssForCausalLM"],
                "num_hidden_layers": 4,
                "hidden_size": 256,
                "num_attention_heads": 16,
                "num_key_value_heads": 8,
                "head_dim": 64,
                "vocab_size": 1000,
                "num_local_experts": 4,
                "intermediate_size": 128,
                "sliding_window": 128,
                "layer_types": ["sliding_attention", "full_attention"] * 2,
            },
            "sliding window",
            2 * 2 * 8 * 64 * 2,
        ),
        # Gemma 3: one full layer in 6 (sliding_window_pattern), 12 layers: 2 full x 2 x 4 x 128 x 2 B
        (
            {
                "architectures": ["Gemma3ForCausalLM"],
                "num_hidden_layers": 12,
                "hidden_size": 512,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
                "head_dim": 128,
                "vocab_size": 1000,
                "intermediate_size": 1024,
                "sliding_window": 1024,
                "sliding_window_pattern": 6,
            },
            "sliding window",
            2 * 2 * 4 * 128 * 2,
        ),
        # Qwen3-Next: one full layer in 4, 8 layers: 2 full x 2 x 2 x 256 x 2 B
        (
            {
                "architectures": ["Qwen3NextForCausalLM"],
                "num_hidden_layers": 8,
                "hidden_size": 512,
                "num_attention_heads": 16,
                "num_key_value_heads": 2,
                "head_dim": 256,
                "vocab_size": 1000,
                "full_attention_interval": 4,
                "linear_num_key_heads": 4,
                "linear_num_value_heads": 8,
                "linear_key_head_dim": 64,
                "linear_value_head_dim": 64,
                "linear_conv_kernel_dim": 4,
                "num_experts": 8,
                "moe_intermediate_size": 64,
                "shared_expert_intermediate_size": 64,
            },
            "hybrid",
            2 * 2 * 2 * 256 * 2,
        ),
    ],
)
def test_other_architectures_read(config, family, per_token) -> None:
    r = modeled.model_report(modeled.ModelInputs(json.dumps(config), "tiny.json", max_model_len=32768, pool=10**9))
    assert (r.family, r.kv_bytes_per_token) == (family, per_token)
    assert r.kv_fixed_bytes_per_request > 0 and r.weights_bytes_per_rank > 0 and r.kv_tokens > 0


# --- real configs that lean on transformers' defaults or slide every layer -----------------


def public(name: str) -> Path:
    """models/configs/<name>/config.json, for a file named as the tests name it: <name>.json."""
    return CONFIGS / name.removesuffix(".json") / "config.json"


def public_report(name: str, **given) -> modeled.ModelReport:
    return modeled.model_report(modeled.ModelInputs(public(name).read_text(), name, **given))


def test_mistral_v01_slides_every_layer() -> None:
    """No layer_types and a 4096 window: vLLM gives every layer the window. Each holds
    cdiv(min(4095 + 2 x 8192, 32768), 16) + 1 = 1281 pages of 16 x 2 x 8 x 128 x 2 B."""
    r = public_report("mistral-7b-v0.1.json", max_model_len=32768, pool=20 * GiB)
    assert r.layers == "32 sliding" and r.family == "sliding window"
    assert r.kv_bytes_per_request == 1281 * 32 * 65536 == 2_686_451_712
    assert r.kv_blocks == 20 * GiB // 65536 // 32 == 10240
    assert r.max_concurrency == pytest.approx(10240 / 1281)
    assert r.kv_tokens == 261_939  # concurrency x 32768, floored


def test_mistral_window_default_and_null() -> None:
    base = json.loads(public("mistral-7b-v0.1.json").read_text())
    left_out = {k: v for k, v in base.items() if k != "sliding_window"}  # MistralConfig's default is 4096
    assert hfconfig.shape(left_out).layers == (hfconfig.SLIDING,) * 32
    assert hfconfig.shape(left_out).defaults == ("not in the config, taken as MistralConfig's defaults in transformers 5.5.3: sliding_window 4096",)
    assert hfconfig.shape({**base, "sliding_window": None}).layers == (hfconfig.FULL,) * 32  # Mistral-7B-v0.3 writes null


def test_qwen_sliding_window_is_refused_unless_off() -> None:
    qwen = json.loads((CONFIGS / "qwen2.5-7b" / "config.json").read_text())
    assert hfconfig.shape(qwen).layers == (hfconfig.FULL,) * qwen["num_hidden_layers"]  # its sliding_window is unused
    with pytest.raises(InputError, match="use_sliding_window: found True, expected false"):
        hfconfig.shape({**qwen, "use_sliding_window": True})


def test_gemma3_nested_text_config_takes_the_class_defaults() -> None:
    """gemma-3-12b-it's text_config leaves out head_dim (256), vocab_size (262,208), the pattern
    (6) and the tie (true). 8 full layers x 2 x 8 x 256 x 2 B a token; 5 groups of 8 sliding
    layers each hold cdiv(min(1023 + 16384, 32768), 16) + 1 = 1089 pages of 16 x 8,192 B."""
    r = public_report("gemma-3-12b-it.json", max_model_len=32768)
    assert r.layers == "40 sliding, 8 full"
    assert r.kv_bytes_per_token == 8 * 2 * 8 * 256 * 2 == 65536
    assert r.kv_fixed_bytes_per_request == 5 * 1089 * 8 * 131072 == 5_709_496_320
    assert r.notes[0] == (
        "not in the config, taken as Gemma3TextConfig's defaults in transformers 5.5.3: text_config.sliding_window_pattern 6, "
        "text_config.vocab_size 262208, text_config.head_dim 256, text_config.tie_word_embeddings true"
    )
    # SigLIP (vllm/model_executor/models/siglip.py): a 14 x 14 patch embedding and its bias, 4,096
    # positions, 27 layers of two LayerNorms, qkv, out_proj, fc1 and fc2 with their biases, a post
    # LayerNorm; Gemma 3's projector (1,152 x 3,840) and its RMSNorm: 421,290,864 values, 2 B each
    d, i = 1152, 4304
    layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (i * d + i) + (d * i + d)
    tower = d * 3 * 14 * 14 + d + 4096 * d + 27 * layer + 2 * d + d * 3840 + d
    assert tower == 421_290_864
    assert r.to_json()["tower"] == {"name": "SigLIP vision tower", "blocks": 27, "bytes_per_rank": tower * 2, "replicated": False, "mm_encoder_tp_mode": "weights",
                                    "source": "vllm/model_executor/models/siglip.py and gemma3_mm.py, 0.33.0"}  # fmt: skip
    assert r.notes[1] == "the weights include the SigLIP vision tower (27 blocks) and its projector, 0.78 GiB"


def test_gemma3_ties_its_head_by_default() -> None:
    """gemma-3-1b-it writes no tie_word_embeddings (equal to the base class's true): one
    262,144 x 1,152 table, not two. Its card gives 999,885,952 parameters, which the count meets
    exactly with Gemma 3's four norms a layer and its q/k norms of a head (73,216 parameters)."""
    r = public_report("gemma-3-1b-it.json", max_model_len=32768)
    assert r.weights_bytes_per_rank == 999_885_952 * 2 + 2 * rope(32768, 256)  # a local and a global rope
    untied = json.loads(public("gemma-3-1b-it.json").read_text()) | {"tie_word_embeddings": False}
    assert (
        modeled.model_report(modeled.ModelInputs(json.dumps(untied), max_model_len=32768)).weights_bytes_per_rank - r.weights_bytes_per_rank
        == 262_144 * 1152 * 2
    )
    assert r.notes == ("not in the config, taken as Gemma3TextConfig's defaults in transformers 5.5.3: tie_word_embeddings true",)


def test_max_model_len_above_the_positions_is_noted() -> None:
    r = public_report("gemma-3-1b-it.json", max_model_len=131072)
    assert "max_model_len 131,072 is above the config's max_position_embeddings (32,768)" in r.notes[-1]
    assert not any("max_position" in n for n in public_report("gemma-3-12b-it.json", max_model_len=262144).notes)  # rope scaling stretches it


def test_tp_must_divide_or_be_a_multiple_of_the_kv_heads() -> None:
    text = (CONFIGS / "qwen2.5-7b" / "config.json").read_text()  # 28 heads, 4 KV heads
    with pytest.raises(InputError, match="--tensor-parallel-size: found 7, expected a divisor or a multiple of the model's 4 KV heads"):
        modeled.model_report(modeled.ModelInputs(text, max_model_len=8192, tp=7))
    assert modeled.model_report(modeled.ModelInputs(text, max_model_len=8192, tp=2)).kv_bytes_per_token == 28 * 2 * 2 * 128 * 2


# --- more model classes, on their real configs ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parameters", "cache"),
    [
        # the model cards' counts, met to the parameter: Gemma 2's four norms a layer and tied
        # head, Phi-3's and Phi-4-mini's fused q/k/v and gate/up (the same sizes as apart); and the
        # rope's cache: Phi-4-mini's LongRoPE keeps a short one (4,096) and a long one (131,072)
        ("gemma-2-2b.json", 2_614_341_888, rope(8192, 256)),
        ("gemma-2-27b.json", 27_227_128_320, rope(8192, 128)),
        ("phi-3-mini-4k-instruct.json", 3_821_079_552, rope(4096, 96)),
        ("phi-4-mini-instruct.json", 3_836_021_760, rope(4096 + 131072, 96)),
    ],
)
def test_parameter_counts_meet_the_model_cards(name, parameters, cache) -> None:
    assert public_report(name, max_model_len=4096).weights_bytes_per_rank == parameters * 2 + cache


def test_gemma2_alternates_and_a_float32_checkpoint_loads_in_bfloat16() -> None:
    """gemma-2-2b is stored in float32; --dtype auto runs it in bfloat16, cache and weights.
    Even layers slide (4096), odd ones are full: 13 x 2 x 4 x 256 x 2 B a token, and each
    sliding layer holds cdiv(min(4095 + 2 x 8192, 8192), 16) + 1 = 513 blocks of 16 x 4,096 B."""
    r = public_report("gemma-2-2b.json", max_model_len=8192)
    assert r.layers == "13 sliding, 13 full"
    assert r.kv_bytes_per_token == 13 * 2 * 4 * 256 * 2 == 53_248
    assert r.kv_fixed_bytes_per_request == 13 * 513 * 16 * 4096
    assert "the checkpoint is float32" in r.notes[-1]
    stored = json.dumps({"metadata": {"total_size": 2_614_341_888 * 4}})
    halved = modeled.model_report(modeled.ModelInputs(public("gemma-2-2b.json").read_text(), max_model_len=8192, index_text=stored))
    assert halved.weights_bytes_per_rank == 2_614_341_888 * 2 + rope(8192, 256)
    assert halved.weights_source == "index total_size, halved: stored in float32, loaded in bfloat16"


def test_phi3_mini_slides_every_layer() -> None:
    """No layer_types and a window of 2047: every layer slides, so nothing grows past the window:
    at 4,096 tokens each layer holds cdiv(min(2046 + 16384, 4096), 16) + 1 = 257 blocks of
    16 x 2 x 32 x 96 x 2 B. 10 GiB is 1,706 such blocks of all 32 layers: 1706/257 requests."""
    r = public_report("phi-3-mini-4k-instruct.json", max_model_len=4096, pool=10 * GiB)
    assert (r.layers, r.kv_bytes_per_token) == ("32 sliding", 0)
    assert r.kv_fixed_bytes_per_request == 257 * 16 * 2 * 32 * 96 * 2 * 32 == 1_616_904_192
    assert r.max_concurrency == Fraction(10 * GiB // (16 * 2 * 32 * 96 * 2 * 32), 257)
    assert r.kv_tokens == 27_189  # int(1706 / 257 x 4096)


def test_qwen3_vl_reads_its_text_config() -> None:
    dense, moe = public_report("qwen3-vl-8b-instruct.json", max_model_len=32768), public_report("qwen3-vl-30b-a3b-instruct.json", max_model_len=32768)
    assert (dense.family, dense.kv_bytes_per_token) == ("dense", 36 * 2 * 8 * 128 * 2)
    assert (moe.family, moe.kv_bytes_per_token) == ("moe", 48 * 2 * 4 * 128 * 2)
    # the language models' own counts, 8,190,735,360 and 30,532,122,624, and the vision towers' (27 blocks
    # of 1,152, four mergers: the main one and three deepstack), 576,388,336 and 538,631,408: the
    # cards' 8.8 B and 31.1 B
    assert dense.weights_bytes_per_rank == (8_190_735_360 + 576_388_336) * 2 + rope(262144, 128)
    assert moe.weights_bytes_per_rank == (30_532_122_624 + 538_631_408) * 2 + rope(262144, 128)
    assert dense.notes[-1] == "the weights include the Qwen3-VL vision tower (27 blocks) and its projector, 1.07 GiB"


def test_glm_moe_drafter_and_float32_router() -> None:
    """GLM-4.7: 3 dense layers, 89 of 160 experts and one shared; the router and its correction
    bias stay float32; the MTP layer loads apart and its attention joins the cache with
    speculative decoding (93 layers at TP 4: 2 KV heads a rank)."""
    s = hfconfig.shape(json.loads(public("glm-4.7-nvfp4.json").read_text()), "glm")
    assert (s.drafter_layers, s.head_dim, s.qk_norm, s.attention_bias, s.output_bias) == (1, 128, "head", True, False)
    router = [t for t in weights.tensors(s) if t.path == "model.layers.3.mlp.gate"]
    assert [(t.rows, t.cols, t.dtype_bytes) for t in router] == [(160, 5120, 4)]
    r = public_report("glm-4.7-nvfp4.json", max_model_len=32768, tp=4)
    # its quantization_config's kv_cache_scheme (8-bit float) makes --kv-cache-dtype auto fp8_e4m3: one byte an element
    assert (r.kv_cache_dtype, r.kv_bytes_per_token, r.drafter_bytes_per_rank > 0) == ("fp8_e4m3", 92 * 2 * 2 * 128 * 1, True)
    assert public_report("glm-4.7-nvfp4.json", max_model_len=32768, tp=4, speculative_tokens=1).kv_bytes_per_token == 93 * 2 * 2 * 128 * 1
    assert public_report("glm-4.7-nvfp4.json", max_model_len=32768, tp=4, kv_cache_dtype="bfloat16").kv_bytes_per_token == 92 * 2 * 2 * 128 * 2


def test_minimax_m2_counts_no_drafter() -> None:
    """num_mtp_modules 3, but vLLM skips them and has no drafter for them; experts of
    intermediate_size; q and k normed over all heads, split like the heads."""
    s = hfconfig.shape(json.loads(public("minimax-m2.7.json").read_text()), "minimax")
    assert (s.drafter_layers, s.qk_norm, s.mlps[0].experts, s.mlps[0].expert_intermediate) == (0, "split", 256, 1536)
    norms = {t.path.rpartition(".")[2]: t.rows for t in weights.tensors(s, 4) if t.path.startswith("model.layers.0.self_attn.") and t.path.endswith("norm")}
    assert norms == {"q_norm": 48 * 128 // 4, "k_norm": 8 * 128 // 4}
    r = public_report("minimax-m2.7.json", max_model_len=32768, tp=4)
    assert (r.kv_bytes_per_token, r.drafter_bytes_per_rank) == (62 * 2 * 2 * 128 * 2, 0)


def test_olmo2_norms_q_and_k_over_all_heads_on_every_rank() -> None:
    s = hfconfig.shape(json.loads(public("olmo-2-1124-7b-instruct.json").read_text()), "olmo")
    norms = {t.path.rpartition(".")[2]: t.rows for t in weights.tensors(s, 4) if t.path.startswith("model.layers.0.self_attn.") and t.path.endswith("norm")}
    assert norms == {"q_norm": 4096, "k_norm": 4096}
    assert public_report("olmo-2-1124-7b-instruct.json", max_model_len=4096, engine_version="0.25.0").kv_bytes_per_token == 32 * 2 * 32 * 128 * 2


def test_olmo_and_seed_oss_leave_vllms_own_code_when_the_registry_says() -> None:
    """vllm/model_executor/models/registry.py: Olmo2ForCausalLM olmo2.py to 0.25.0, Olmo3ForCausalLM
    olmo2.py from 0.11.0 and olmo3.py to 0.28.0, SeedOssForCausalLM seed_oss.py from 0.10.2 to 0.31.0;
    after each, _TRANSFORMERS_SUPPORTED_MODELS. A patch release counts where it added the class."""
    for arch, inside, after in (("Olmo2ForCausalLM", (0, 25, 1), (0, 26, 0)), ("Olmo3ForCausalLM", (0, 28, 0), (0, 29, 0)),
                                ("SeedOssForCausalLM", (0, 31, 0), (0, 32, 0))):  # fmt: skip
        assert hfconfig.outside_own_code(arch, inside) is None is hfconfig.transformers_backend(arch, inside)
        assert hfconfig.outside_own_code(arch, after) is None
        assert "Transformers backend" in str(hfconfig.transformers_backend(arch, after))
    assert hfconfig.outside_own_code("SeedOssForCausalLM", (0, 10, 2)) is None
    assert "0.10.1 does not register SeedOssForCausalLM" in str(hfconfig.outside_own_code("SeedOssForCausalLM", (0, 10, 1)))
    assert hfconfig.own_code_window("SeedOssForCausalLM") == ("v0.10.2 to v0.31.x", "from v0.32.0 the Transformers backend, figured with the same layers")
    newest, own = (
        public_report("olmo-2-1124-7b-instruct.json", max_model_len=4096),
        public_report("olmo-2-1124-7b-instruct.json", max_model_len=4096, engine_version="0.25.0"),
    )
    assert [n for n in newest.notes if n.startswith("vLLM 0.26.0 and later serve Olmo2ForCausalLM with the Transformers backend")]
    assert newest.kv_bytes_per_token == own.kv_bytes_per_token and newest.weights_bytes_per_rank <= own.weights_bytes_per_rank


def test_newer_classes_are_refused_in_releases_that_do_not_list_them() -> None:
    """The first release read whose registry lists each: gpt-oss 0.10.1.1 (not 0.9.2), Qwen3-Next
    0.10.2 (not 0.10.1.1), DeepSeek-V3.2 0.11.0, MiniMax-M2 0.12.0 (not 0.11.0), Qwen3.5 0.17.0 (not 0.16.0)."""
    for arch, first, before in (("GptOssForCausalLM", (0, 10, 1), (0, 9, 2)), ("Qwen3NextForCausalLM", (0, 10, 2), (0, 10, 1)),
                                ("DeepseekV32ForCausalLM", (0, 11, 0), (0, 10, 2)), ("MiniMaxM2ForCausalLM", (0, 12, 0), (0, 11, 0)),
                                ("Qwen3_5MoeForConditionalGeneration", (0, 17, 0), (0, 16, 0))):  # fmt: skip
        assert hfconfig.outside_own_code(arch, first) is None and hfconfig.outside_own_code(arch, (0, 33, 0)) is None
        assert f"does not register {arch} in the releases read" in str(hfconfig.outside_own_code(arch, before))
    r = run_calc("model", str(CONFIGS / "gpt-oss-20b" / "config.json"), "--engine-version", "0.9.2")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "expected --engine-version 0.10.1 or later" in r.stderr


def test_mistral3_text_defaults_follow_the_text_model_type() -> None:
    """A Mistral 3 text_config of model_type mistral that leaves out the window takes
    MistralConfig's 4096, and vLLM then slides every layer; Ministral 3's class has none."""
    small = json.loads(public("mistral3-24b-flux2-text-encoder.json").read_text())
    assert public_report("mistral3-24b-flux2-text-encoder.json", max_model_len=32768).layers == "40 full"  # it writes null
    del small["text_config"]["sliding_window"]
    r = modeled.model_report(modeled.ModelInputs(json.dumps(small), max_model_len=32768))
    assert r.layers == "40 sliding" and "text_config.sliding_window 4096" in r.notes[0] and "MistralConfig" in r.notes[0]
    ministral = json.loads(public("ministral-3-3b-2512.json").read_text())
    del ministral["text_config"]["sliding_window"]
    r = modeled.model_report(modeled.ModelInputs(json.dumps(ministral), max_model_len=32768))
    assert r.layers == "26 full" and "Ministral3Config" in r.notes[0]
    assert public_report("ministral-3-3b-2512.json", max_model_len=32768).kv_bytes_per_token == 26 * 2 * 8 * 128 * 2


def test_qwen25_vl_takes_the_text_config_and_its_tie() -> None:
    r = public_report("qwen2.5-vl-3b.json", max_model_len=32768)
    assert r.kv_bytes_per_token == 36 * 2 * 2 * 128 * 2  # head_dim 2048 / 16
    untied = json.loads(public("qwen2.5-vl-3b.json").read_text()) | {"tie_word_embeddings": False}  # the top level wins
    assert (
        modeled.model_report(modeled.ModelInputs(json.dumps(untied), max_model_len=32768)).weights_bytes_per_rank - r.weights_bytes_per_rank
        == 151_936 * 2048 * 2
    )


def test_hybrid_prefix_caching_default_follows_the_version() -> None:
    """Prefix caching is off by default for hybrids up to 0.27.1 (vllm/config/model.py
    is_prefix_caching_supported up to 0.25.1; engine/arg_utils.py `and not is_hybrid` in 0.26.0
    and 0.27.1): one mamba state a request. On from 0.28.0: "align", two states; from 0.32.0 a
    mamba2 layer holds a prefill checkpoint page too (mamba_mixer2.py): three. Turned on by hand
    before 0.28.0, Nemotron-H (SupportsMambaPrefixCaching) runs in "all" mode, 0.15.0 to 0.27.1:
    a state page a block of context. Nemotron-H 8B: 4 attention and 24 mamba layers, 7 groups of
    4, a page of 4,259,840 B (blocks of 1,040 tokens); 6 mamba groups x 4 x 4,259,840 = 102,236,160 B
    a state page."""
    text = json.dumps({  # Nemotron-H 8B's shape, as in test_nemotron_h_pattern_state_and_block
        "architectures": ["NemotronHForCausalLM"], "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
        "hidden_size": 4096, "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 131072,
        "intermediate_size": 21504, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4,
    })  # fmt: skip

    def report(v: str | None, caching: bool | None = None) -> modeled.ModelReport:
        return modeled.model_report(modeled.ModelInputs(text, max_model_len=8192, engine_version=v, prefix_caching=caching))

    state = 6 * 4 * 4_259_840
    assert state == 102_236_160
    for v, states in (("0.24.0", 1), ("0.26.0", 1), ("0.27.1", 1), ("0.28.0", 2), ("0.31.0", 2), ("0.32.0", 3), (None, 3)):
        assert report(v).kv_fixed_bytes_per_request == states * state, v
    assert "prefix caching is off by default for hybrid models in vLLM 0.24.0" in report("0.24.0").notes[-1]
    # "all" mode: cdiv(8,192, 1,040) = 8 pages a mamba group, all growing with context: 7 groups x 4 x page / 1,040 a token
    on = report("0.26.0", True)
    assert (on.kv_fixed_bytes_per_request, on.kv_bytes_per_token) == (0, 7 * 4 * 4_259_840 // 1040)
    assert on.kv_bytes_per_request == (8 + 6 * 8) * 4 * 4_259_840
    assert "mamba 'all' mode" in on.notes[-1]
    assert report("0.28.0", True).kv_fixed_bytes_per_request == 2 * state  # 0.28.0: "align" for every model


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "cfg.json: (the file): found arrays or objects nested 100000 deep, expected at most 64 levels"),
        (
            '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1000000000}',
            "cfg.json: num_hidden_layers: found 1000000000, expected a whole number of at most 4096",
        ),
        (
            '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 1e30}',
            "cfg.json: hidden_size: found 1e+30, expected a whole number of at least 1",
        ),
        (
            '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 1000000000000}',
            "cfg.json: hidden_size: found 1000000000000, expected a whole number of at most 2147483647",
        ),
        (
            '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 64, "num_key_value_heads": 24, "hidden_size": 8192}',
            "cfg.json: num_key_value_heads: found 24, expected a divisor of num_attention_heads (64)",
        ),
        (
            '{"architectures": ["Gemma3ForConditionalGeneration"], "text_config": null}',
            "cfg.json: text_config: found None, expected an object holding the language model's fields",
        ),
        ('{"architectures": ["Gemma3ForConditionalGeneration"], "text_config": [1]}', "cfg.json: text_config: found [1], expected an object"),
    ],
)
def test_hostile_configs_are_named(text, message) -> None:
    with pytest.raises(InputError) as error:
        modeled.model_report(modeled.ModelInputs(text, "cfg.json"))
    assert str(error.value).startswith(message)


# --- Qwen3.5 / 3.6 MoE: Qwen3-Next's layers, every one a sparse MoE block ------------------


def qwen36(**given) -> dict:
    return modeled.model_report(modeled.ModelInputs((CONFIGS / "qwen3.6-35b-a3b" / "config.json").read_text(), "config.json", **given))


def test_qwen36_moe_reads_as_vllm_builds_it() -> None:
    """Qwen3_5MoeForConditionalGeneration (vllm/model_executor/models/qwen3_5.py, 0.33.0): 30 GDN
    and 10 gated-attention layers, each with 256 experts of 512 and a gated shared expert of 512;
    its float32 recurrent state (mamba_ssm_dtype) and one MTP layer."""
    s = shape("qwen3.6-35b-a3b")
    assert s.architecture == "Qwen3_5MoeForConditionalGeneration" and s.family == "hybrid"
    assert s.layers.count(hfconfig.LINEAR) == 30 and s.layers.count(hfconfig.FULL) == 10
    assert set(s.mlps) == {hfconfig.Mlp(experts=256, expert_intermediate=512, shared_intermediate=512, gated_shared=True)}
    assert (s.state_dtype_bytes, s.drafter_layers, s.output_gate) == (4, 1, True)
    # 35B parameters on the card: the language model's 34,660,610,688 and the vision tower's
    # 446,571,248 (27 blocks of 1,152, one merger to 2,048, no deepstack), and the MTP layer apart
    r = qwen36(max_model_len=32768)
    assert r.weights_bytes_per_rank == (34_660_610_688 + 446_571_248) * 2 + rope(262144, 64)  # partial rotary: a quarter of 256
    assert r.tower is not None and r.tower.bytes_per_rank == 446_571_248 * 2


@pytest.mark.parametrize(
    ("log", "version", "kv_dtype", "max_len", "pool", "tokens"),
    [
        # logs/public/45: 0.18.1, bf16 KV, "Available KV cache memory: 55.72 GiB", "GPU KV cache size: 729,696 tokens"
        ("45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log", "0.18.1", "auto", 262144, "55.72", 729_696),
        # logs/public/35: 0.24.0, fp8 KV, "5.98 GiB", "567,978 tokens"; its arguments turn prefix caching on
        ("35-v024-qwen36-35b-a3b-nvfp4-5090-args.log", "0.24.0", "fp8", 131072, "5.98", 567_978),
    ],
)
def test_qwen36_moe_meets_the_real_starts(log, version, kv_dtype, max_len, pool, tokens) -> None:
    """The real config gives the token count each public start printed: at the printed pool, and
    within what the interval its two decimals stand for gives."""
    text = (ROOT / "logs" / "public" / log).read_text()
    assert f"GPU KV cache size: {tokens:,} tokens" in text and f"Available KV cache memory: {pool} GiB" in text
    low, high = printed_gib(pool)

    caching = "'enable_prefix_caching': True" in text or None  # a hybrid's default is off up to 0.27.1

    def at(p: int) -> int:
        return qwen36(max_model_len=max_len, pool=p, kv_cache_dtype=kv_dtype, engine_version=version, prefix_caching=caching).kv_tokens

    assert at(int(Fraction(pool) * GiB)) == tokens
    assert at(low) <= tokens <= at(high - 1)


def test_qwen3_next_meets_its_checkpoint_tensor_for_tensor() -> None:
    """Qwen3-Next-80B-A3B-Instruct: the model report of its checkpoint counts 81,324,862,720
    parameters, 1,650,471,424 of them in the MTP layer (mtp.fc 2,048 x 4,096, one attention layer
    with 512 experts of 512, its norms), which vLLM loads only as a drafter."""
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "qwen3-next-80b-a3b-instruct" / "config.json").read_text(), max_model_len=32768))
    assert r.layers == "36 linear, 12 full" and r.family == "hybrid"
    fc_and_norms = 2048 * 4096 + 3 * 2048  # mtp.fc, mtp.norm and the two pre_fc norms
    layer = 2 * 2048 + (8192 + 2 * 512 + 4096) * 2048 + 2 * 256  # its two norms, q/k/v/o, q/k norms
    moe = 512 * 3 * 512 * 2048 + 512 * 2048 + 3 * 512 * 2048 + 2048  # experts, router, shared expert and its gate
    mtp = fc_and_norms + layer + moe
    assert mtp == 1_650_471_424
    assert r.weights_bytes_per_rank == (81_324_862_720 - mtp) * 2 + rope(262144, 64)


def test_deepseek_v2_lite_meets_its_checkpoint() -> None:
    """DeepSeek-V2-Lite-Chat: one dense layer, then 26 of 64 routed experts of 1,408 and two shared;
    MLA with no q LoRA. Its checkpoint holds 15,706,484,224 parameters, which the count meets, and
    a token costs (512 + 64) x 2 B in each of the 27 layers."""
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "deepseek-v2-lite-chat" / "config.json").read_text(), max_model_len=32768))
    assert (r.architecture, r.family, r.layers) == ("DeepseekV2ForCausalLM", "mla", "27 mla")
    assert r.weights_bytes_per_rank == 15_706_484_224 * 2 + rope(4096 * 40, 64)  # DeepSeek's YaRN: 4,096 original positions x 40
    assert r.kv_bytes_per_token == (512 + 64) * 2 * 27 == 31104


def test_qwen35_dense_meets_its_checkpoint() -> None:
    """Qwen3.5-0.8B-Base (Qwen3_5ForConditionalGeneration): 873,438,784 parameters in its checkpoint,
    the language model's (tied head), its MTP layer's, which vLLM loads only as a drafter, and
    the vision tower's (12 blocks of 768, the merger, the patch and position embeddings), which
    the count meets value for value."""
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "qwen3.5-0.8b-base" / "config.json").read_text(), max_model_len=32768))
    assert (r.layers, r.family) == ("18 linear, 6 full", "hybrid")
    block = 768 * 768 + 768 + 2304 * 768 + 2304 + 3072 * 768 + 3072 + 768 * 3072 + 768 + 4 * 768
    vision = 12 * block + 3072 * 3072 + 3072 + 1024 * 3072 + 1024 + 2 * 768 + 768 * 3 * 2 * 16 * 16 + 768 + 2304 * 768
    # mtp: fc 1,024 x 2,048, its three norms, one attention layer with its MLP
    mtp = 1024 * 2048 + 3 * 1024 + 2 * 1024 + (4096 + 2 * 512) * 1024 + 1024 * 2048 + 2 * 256 + 3 * 3584 * 1024
    assert r.drafter_bytes_per_rank == mtp * 2
    assert r.tower is not None and vision == 100_592_896 and r.tower.bytes_per_rank == vision * 2
    assert r.weights_bytes_per_rank + r.drafter_bytes_per_rank == 873_438_784 * 2 + rope(262144, 64)


def test_mixtral_8x7b_meets_its_card() -> None:
    """Mixtral-8x7B-v0.1: 32 layers of 8 experts of 14,336 and a router each, 8 KV heads of 128;
    46.7B parameters on its card, 46,702,792,704 in its checkpoint, which the count meets."""
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "mixtral-8x7b-v0.1" / "config.json").read_text(), max_model_len=32768))
    assert (r.architecture, r.family, r.layers) == ("MixtralForCausalLM", "moe", "32 full")
    assert r.weights_bytes_per_rank == 46_702_792_704 * 2 + rope(32768, 128)
    assert r.kv_bytes_per_token == 2 * 8 * 128 * 2 * 32 == 131072


def test_granite_33_8b_meets_its_parameter_shapes() -> None:
    """granite-3.3-8b-instruct (8.17B on its card): the public listing of its parameter shapes sums
    to 8,170,864,640 with the head tied to the embedding; vLLM pads the 49,159-token vocabulary to
    49,216 rows (a multiple of 64), 57 x 4,096 more."""
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "granite-3.3-8b-instruct" / "config.json").read_text(), max_model_len=32768))
    layer = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 12800 * 4096 + 2 * 4096
    listed = 49159 * 4096 + 40 * layer + 4096
    assert listed == 8_170_864_640
    assert r.weights_bytes_per_rank == (listed + (49216 - 49159) * 4096) * 2 + rope(131072, 128)
    assert r.kv_bytes_per_token == 2 * 8 * 128 * 2 * 40 == 163840


def test_qwen2_57b_a14b_meets_the_hubs_count() -> None:
    """Qwen2-57B-A14B (Qwen2MoeForCausalLM): 28 layers of 64 experts of 2,560 and a shared expert
    of 20,480 with its one-wide gate; q, k and v carry a bias as in Qwen2. The Hub counts
    57,408,658,944 parameters in its safetensors, which the count meets only with those biases."""
    text = (CONFIGS / "qwen2-57b-a14b" / "config.json").read_text()
    r = modeled.model_report(modeled.ModelInputs(text, max_model_len=32768))
    assert (r.architecture, r.family, r.layers) == ("Qwen2MoeForCausalLM", "moe", "28 full")
    attention = 2 * 3584 * 3584 + 2 * 512 * 3584 + (3584 + 2 * 512)  # q, o, k, v and the q/k/v biases
    moe = 64 * 3 * 2560 * 3584 + 64 * 3584 + 3 * 20480 * 3584 + 3584  # experts, router, shared expert and its gate
    layer = attention + moe + 2 * 3584
    assert 28 * layer + 2 * 151936 * 3584 + 3584 == 57_408_658_944
    assert r.weights_bytes_per_rank == 57_408_658_944 * 2 + rope(131072, 128)
    assert r.kv_bytes_per_token == 2 * 4 * 128 * 2 * 28 == 57344
    s = hfconfig.shape(json.loads(text), "qwen2-moe")
    assert [t.rows for t in weights.tensors(s, 4) if t.path == "model.layers.0.self_attn.k_proj.bias"] == [128]  # 4 KV heads of 128 over 4 ranks


def test_nemotron_3_nano_meets_its_published_size() -> None:
    """NVIDIA-Nemotron-3-Nano-30B-A3B (NemotronHForCausalLM): 23 mamba, 23 MoE and 6 attention
    layers, each one norm and one mixer. Its experts and shared expert are squared-ReLU MLPs, an up
    and a down projection (no gate); 6 of 128 experts a token. 31.6B parameters in all, 3.6B
    active with the embeddings and 3.2B without the input table, as its brief gives them."""
    text = (CONFIGS / "nemotron-3-nano-30b-a3b" / "config.json").read_text()
    s = hfconfig.shape(json.loads(text), "nemotron-3-nano")
    h = 2688
    mamba = (2 * 4096 + 2 * 8 * 128 + 64) * h + 6144 * 4 + 6144 + 3 * 64 + 4096 + 4096 * h + h
    attention = 2 * 4096 * h + 2 * 256 * h + h
    expert = 2 * 1856 * h
    moe = 128 * expert + 2 * 3712 * h + 128 * h + 128 + h  # experts, shared expert, router and its bias, norm
    total = 2 * 131072 * h + 23 * mamba + 6 * attention + 23 * moe + h
    assert sum(t.rows * t.cols * t.count for t in weights.tensors(s)) == total == 31_577_940_288  # no rope in Nemotron-H's attention
    assert round(total / 1e9, 1) == 31.6
    active = total - 23 * (128 - 6) * expert
    assert (round(active / 1e9, 1), round((active - 131072 * h) / 1e9, 1)) == (3.6, 3.2)
    # the router (128 x 2,688 a layer) and its correction bias stay float32
    fp32 = 23 * (128 * h + 128)
    r = modeled.model_report(modeled.ModelInputs(text, max_model_len=32768))
    assert r.weights_bytes_per_rank == (total - fp32) * 2 + fp32 * 4
    assert (r.layers, r.kv_bytes_per_token) == ("23 mamba, 23 moe, 6 full", 6 * 2 * 2 * 128 * 2)


def test_nemotron_h_mlp_layers_have_no_gate_and_one_norm() -> None:
    """Nemotron-H 8B's '-' layers: up and down projections of 21,504 and the layer's one norm."""
    config = {
        "architectures": ["NemotronHForCausalLM"], "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
        "hidden_size": 4096, "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 131072,
        "intermediate_size": 21504, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4,
    }  # fmt: skip
    s = hfconfig.shape(config, "nemotron-h.json")
    layer = [(t.path.rpartition(".")[2], t.rows, t.cols) for t in weights.tensors(s) if t.path.startswith("model.layers.1.")]
    assert layer == [("input_layernorm", 4096, 1), ("up_proj", 21504, 4096), ("down_proj", 4096, 21504)]


def test_qwen3_next_on_v011_holds_one_state_page_and_meets_log_33() -> None:
    """Log 33 (vLLM 0.11, Qwen3-Next): "GPU KV cache size: 90,048 tokens" and "Maximum concurrency
    for 215,040 tokens per request: 1.66x". vLLM 0.11.0 gives a mamba layer one state page a request
    (MambaSpec.max_memory_usage_bytes), not two. With an fp8 cache (the issue: "KV cache can't be
    quantized for Qwen3-Next") the attention block is 16 x cdiv(1,097,728, 16 x 1,024) = 1,072
    tokens; 12 full and 36 linear layers form 4 groups of 12; a request holds cdiv(215,040, 1,072)
    + 3 = 204 pages. 338 blocks print 338 // 4 x 1,072 = 90,048 tokens and 338 / 204 = 1.66x;
    with two state pages (207 a request) no pool prints both."""
    text = (CONFIGS / "qwen3-next-80b-a3b-instruct" / "config.json").read_text()
    page = 1072 * 2 * 256 * 2  # 2 KV heads of 256, K and V, one byte

    def at(blocks: int, version: str = "0.11.0", tp: int = 1, prefix_caching: bool | None = None) -> dict:
        inputs = modeled.ModelInputs(
            text, max_model_len=215040, pool=blocks * 12 * page // tp, kv_cache_dtype="fp8", engine_version=version, tp=tp, prefix_caching=prefix_caching
        )
        return modeled.model_report(inputs)

    for tp in (1, 2):
        r = at(338, tp=tp)
        assert (r.kv_tokens, f"{float(r.max_concurrency):.2f}") == (90048, "1.66")
        assert r.kv_fixed_bytes_per_request == 36 * 1 * page // tp
    assert "one mamba state a request" in at(338).notes[-1]
    later = at(338, "0.24.0", prefix_caching=True)  # two state pages from 0.15 ("align", prefix caching on): 207 pages a request
    assert later.max_concurrency == Fraction(338, 207)
    assert at(338, "0.24.0").max_concurrency == Fraction(338, 204)  # off by default for a hybrid up to 0.27.1: one page


# Registered classes no public config.json was found for whole (SOURCES.yaml lists where we
# looked); a class added to the registry joins this set or ships its real config.
WITHOUT_A_REAL_CONFIG = hfconfig.UNCHECKED


def test_every_registered_class_but_the_named_ones_has_a_real_config() -> None:
    real = {json.loads(p.read_text())["architectures"][0] for p in CONFIGS.glob("*/config.json")}
    assert real <= set(hfconfig.model_classes())
    assert set(hfconfig.model_classes()) - real == WITHOUT_A_REAL_CONFIG


def test_a_reading_of_an_unchecked_class_says_so() -> None:
    """A GLM-4 config (the class's fields as vLLM's glm4.py reads them, a few dimensions) gets the
    note; a checked class (Qwen3) does not."""
    glm4 = {"architectures": ["Glm4ForCausalLM"], "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "max_position_embeddings": 4096,
            "torch_dtype": "bfloat16", "partial_rotary_factor": 0.5, "attention_bias": True}  # fmt: skip
    r = modeled.model_report(modeled.ModelInputs(json.dumps(glm4), "glm4-small.json", max_model_len=2048))
    assert any(n.startswith("Glm4ForCausalLM is read by vLLM's model code, but no real public config.json") for n in r.notes)
    qwen = modeled.model_report(modeled.ModelInputs((CONFIGS / "qwen3-8b" / "config.json").read_text(), max_model_len=2048))
    assert not any("no real public config.json" in n for n in qwen.notes)


def test_qwen35_text_only_gptq_int8_meets_the_start_of_its_issue() -> None:
    """Qwen3.5-27B-Derestricted as GPTQModel 5.8.0 saves it: text-only (Qwen3_5ForCausalLM), 8-bit
    GPTQ in groups of 128 (ModelCloud/GPTQModel issue 2559). Each quantized linear holds its int8
    values, an fp16 scale a group of 128 inputs and a 4-byte g_idx an input; the embedding, the
    untied head (lm_head false), norms, conv and the gated-delta scalars stay bfloat16.
    The issue's start (vLLM 0.17.0rc1, TP 2) prints "Setting attention block size to 400 tokens"
    and "Padding mamba page size by 0.25%": before 0.27.0 vLLM reads mamba_ssm_dtype for the
    multimodal class only, so this one keeps its state in bfloat16. A rank's state: conv
    3 x (2 x 16 x 128 + 48 x 128) / 2 x 2 B = 30,720 and temporal 24 x 128 x 128 x 2 B = 786,432;
    a token of an attention page 2 KV heads x 256 x 2 x 2 B = 2,048; the block 16 x cdiv(817,152,
    16 x 2,048) = 400 tokens, padding the state by (400 x 2,048 - 817,152) / 817,152 = 0.25%."""
    text = (CONFIGS / "qwen3.5-27b-derestricted-gptq-int8" / "config.json").read_text()

    def gptq8(rows: int, cols: int) -> int:
        return rows * cols + cols // 128 * rows * 2 + cols * 4

    mlp = 2 * gptq8(17408, 5120) + gptq8(5120, 17408)
    # in_proj_qkvz: q and k of 16 heads, v and z of 48, all of 128; in_proj_ba: b and a of 48 heads
    linear = gptq8(2 * 16 * 128 + 2 * 48 * 128, 5120) + gptq8(2 * 48, 5120) + gptq8(5120, 48 * 128) + mlp
    linear += 2 * (2 * 5120 + (2 * 16 * 128 + 48 * 128) * 4 + 48 + 48 + 128)  # two norms, conv1d, dt_bias, A_log, the gated norm
    # q_proj carries the output gate: 24 heads x 256 x 2; k and v 4 heads of 256; q and k normed a head
    full = gptq8(24 * 256 * 2, 5120) + 2 * gptq8(4 * 256, 5120) + gptq8(5120, 24 * 256) + mlp + 2 * (2 * 5120 + 2 * 256)
    r = modeled.model_report(modeled.ModelInputs(text, max_model_len=32768))
    assert (r.architecture, r.layers, r.family) == ("Qwen3_5ForCausalLM", "48 linear, 16 full", "hybrid")
    assert r.weights_bytes_per_rank - rope(262144, 64) == 48 * linear + 16 * full + 2 * (2 * 248320 * 5120 + 5120) == 29_833_518_080
    assert r.kv_bytes_per_token == 16 * 2 * 4 * 256 * 2 == 65536

    state = 3 * (2 * 16 * 128 + 48 * 128) // 2 * 2 + 48 // 2 * 128 * 128 * 2
    assert state == 817_152
    s = kvlayout.Settings(tp=2)
    at_017 = kvlayout.request(shape("qwen3.5-27b-derestricted-gptq-int8"), s, 131072, kvlayout.version("0.17.0"))
    assert at_017.layout.groups[0].spec.block_size == 16 * -(-state // (16 * 2048)) == 400
    assert at_017.layout.page_bytes == 400 * 2048
    assert f"{100 * (at_017.layout.page_bytes - state) / state:.2f}" == "0.25"
    # from 0.27.0 the config's float32 state: 30,720 + 1,572,864 B, a block of 16 x 49 = 784 tokens
    at_027 = kvlayout.request(shape("qwen3.5-27b-derestricted-gptq-int8"), s, 131072, kvlayout.version("0.27.0"))
    assert at_027.layout.groups[0].spec.block_size == 16 * -(-(30720 + 24 * 128 * 128 * 4) // (16 * 2048)) == 784
    report = modeled.model_report(modeled.ModelInputs(text, tp=2, max_model_len=131072, engine_version="0.17.0"))
    assert (report.block_size, report.kv_bytes_per_token) == (400, 16 * 2 * 2 * 256 * 2)


def test_quantization_reads_an_empty_or_nameless_quantization_config_plainly() -> None:
    """An empty quantization_config quantizes nothing, so fp8 at load applies; one without its method
    is named as the field it lacks."""
    qwen = json.loads((CONFIGS / "qwen3-8b" / "config.json").read_text())
    empty = json.loads(hfconfig.quantized_at_load(json.dumps({**qwen, "quantization_config": {}}), "fp8", "q.json"))
    assert empty["quantization_config"] == {"quant_method": "fp8", "activation_scheme": "dynamic", "is_checkpoint_fp8_serialized": False}
    with pytest.raises(InputError, match=r"^q.json: quantization_config.quant_method: found nothing, expected the method the checkpoint"):
        hfconfig.quantized_at_load(json.dumps({**qwen, "quantization_config": {"bits": 4}}), "fp8", "q.json")


def test_smollm3_is_refused_with_the_reason() -> None:
    """vLLM has no SmolLM3 model code: its registry sends SmolLM3ForCausalLM to the Transformers backend,
    which is not modeled (a config of the class alone, to show the refusal)."""
    with pytest.raises(hfconfig.ConfigError, match="SmolLM3ForCausalLM.*Transformers backend"):
        hfconfig.shape({"architectures": ["SmolLM3ForCausalLM"]}, "config.json")


def test_the_mtp_drafter_frees_the_ends_it_shares() -> None:
    """GLM-4.7's MTP layer loads its own embedding and shared_head.head (151,552 x 5,120 each, a rank's
    eighth at TP 8, in bf16 beside the NVFP4 experts); the proposer swaps the embedding for the target's at
    one pipeline stage in every release read, and the head from v0.16.0 at any, so 'Model loading took'
    holds neither then; the checkpoint still holds both."""
    text = (CONFIGS / "glm-4.7-nvfp4" / "config.json").read_text()
    end = 151552 // 8 * 5120 * 2
    drafted = {
        (rel, pp): modeled.model_report(modeled.ModelInputs(text, tp=8, pp=pp, max_model_len=8192, engine_version=rel, speculative_tokens=1))
        .ranks[-1]
        .drafter_bytes
        for rel in ("0.15.0", "0.16.0")
        for pp in (1, 2)
    }
    assert drafted[("0.15.0", 2)] - drafted[("0.15.0", 1)] == drafted[("0.15.0", 1)] - drafted[("0.16.0", 1)] == end
    assert drafted[("0.16.0", 2)] == drafted[("0.15.0", 1)]
    shape = hfconfig.shape(hfconfig.load(text, "c.json"), "c.json")
    assert weights.drafter_as_loaded(shape, (0, 33)).drafter_shared == {"embed_tokens", "shared_head.head"}
    assert weights.checkpoint_scale(weights.drafter_as_loaded(shape, (0, 33)), None)[2] == weights.checkpoint_scale(shape, None)[2]


@pytest.mark.parametrize(("field", "value"), [("torch_dtype", [1]), ("dtype", {"a": 1}), ("torch_dtype", "int8")])
def test_a_dtype_of_any_type_is_named_not_a_traceback(field: str, value: object) -> None:
    """The dtype key a config writes (transformers 4's torch_dtype or 5's dtype), whatever its type,
    is named with what was found and what is expected."""
    data = {k: v for k, v in json.loads(public("llama-3.1-8b.json").read_text()).items() if k not in ("torch_dtype", "dtype")}
    with pytest.raises(hfconfig.ConfigError, match=rf"^c: {field}: found .*, expected bfloat16, float16 or float32$"):
        hfconfig.shape({**data, field: value}, "c")


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("qwen3-30b-a3b", {"mlp_only_layers": "x"}, "mlp_only_layers: found 'x', expected a list of layer indexes"),
        ("qwen3-30b-a3b", {"mlp_only_layers": -1}, "mlp_only_layers: found -1, expected a list of layer indexes"),
        ("nemotron-3-nano-30b-a3b", {"mamba_ssm_cache_dtype": [1]}, "mamba_ssm_cache_dtype: found [1], expected float32, bfloat16 or float16"),
    ],
)
def test_a_field_of_the_wrong_type_is_named_not_a_traceback(name: str, change: dict[str, object], message: str) -> None:
    with pytest.raises(hfconfig.ConfigError, match=re.escape(message)):
        hfconfig.shape({**json.loads(public(name).read_text()), **change}, "c")


def test_a_tower_field_written_null_is_named() -> None:
    vl = json.loads(public("qwen2-vl-7b-instruct").read_text())
    with pytest.raises(hfconfig.ConfigError, match=re.escape("vision_config.in_chans: found None, expected a whole number")):
        hfconfig.shape({**vl, "vision_config": {**vl["vision_config"], "in_chans": None}}, "c")


def test_a_dtype_written_null_is_read_as_absent() -> None:
    """vLLM reads a null dtype as none written (transformers_utils/model_arch_config_convertor.py,
    0.33.0): the text config's is taken, else bfloat16; Gemma 4 12B's sub-configs write null."""
    data = {k: v for k, v in json.loads(public("llama-3.1-8b.json").read_text()).items() if k not in ("torch_dtype", "dtype")}
    assert hfconfig.shape({**data, "dtype": None, "torch_dtype": "float32"}, "c").float32_checkpoint
    null = hfconfig.shape({**data, "dtype": None}, "c")
    assert null.dtype_bytes == 2 and not null.float32_checkpoint


def test_nemotron_3_super_latent_experts_meet_its_published_size() -> None:
    """NVIDIA-Nemotron-3-Super-120B-A12B (NemotronHForCausalLM with moe_latent_size): 40 Mamba-2, 40 MoE
    and 8 attention layers. Its 512 routed experts (22 a token) take and give 1,024-wide vectors, behind
    fc1_latent_proj and fc2_latent_proj of hidden_size 4,096 x 1,024 (nemotron_h.py NemotronHMoE, 0.33.0);
    the shared expert and the router stay at hidden_size. NVIDIA gives 120B parameters, 12B active."""
    text = (CONFIGS / "nemotron-3-super-120b-a12b-fp8" / "config.json").read_text()
    s = hfconfig.shape(json.loads(text), "nemotron-3-super")
    h, latent, vocab = 4096, 1024, 131072
    inner, conv = 128 * 64, 128 * 64 + 2 * 8 * 128  # mamba heads x head_dim; conv over x, B and C
    mamba = (2 * inner + 2 * 8 * 128 + 128) * h + conv * 4 + conv + 3 * 128 + inner + inner * h + h
    attention = (32 * 128 + 2 * 2 * 128) * h + 32 * 128 * h + h
    expert = 2 * 2688 * latent  # up and down, squared ReLU, in the latent width
    moe = 512 * expert + 2 * 5376 * h + 512 * h + 512 + 2 * latent * h + h  # experts, shared, router and bias, latent projections, norm
    total = 2 * vocab * h + 40 * mamba + 8 * attention + 40 * moe + h
    assert sum(t.rows * t.cols * t.count for t in weights.tensors(s) if not t.drafter) == total
    # its MTP step (mtp_hybrid_override_pattern "*E"): an attention and an MoE layer as the model's, enorm, hnorm and
    # eh_proj (2 x hidden to hidden) on the first, final_layernorm on the last (nemotron_h_mtp.py, 0.33.0)
    mtp = attention + moe + 2 * h + 2 * h * h + h
    assert sum(t.rows * t.cols * t.count for t in weights.tensors(s) if t.drafter) == mtp
    assert total // 10**9 == 120  # 120.67B, named 120B
    active = total - 40 * (512 - 22) * expert - vocab * h  # less the idle experts and the input table
    assert round(active / 1e9) == 12
    r = modeled.model_report(modeled.ModelInputs(text, max_model_len=32768))
    fp32 = 40 * (512 * h + 512)  # the routers and their correction bias stay float32
    assert r.weights_bytes_per_rank == (total - fp32) * 2 + fp32 * 4
    assert r.kv_bytes_per_token == 8 * 2 * 2 * 128 * 2  # 2 KV heads of 128, K and V, bf16, 8 attention layers


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("max_position_embeddings", "32k", "max_position_embeddings: found '32k', expected a whole number of tokens, at least 1"),
        ("max_position_embeddings", 0, "max_position_embeddings: found 0, expected a whole number of tokens, at least 1"),
        ("max_position_embeddings", True, "max_position_embeddings: found True, expected a whole number of tokens, at least 1"),
    ],
)
def test_a_length_key_of_the_wrong_type_is_named_not_skipped(field: str, value: object, said: str) -> None:
    """Llama 3.1 8B's config with its one length key mistyped: vLLM takes the smallest of the length keys
    it finds, so a string stops it; calc took such a key as absent and fell to 2,048 tokens."""
    data = json.loads((CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    with pytest.raises(InputError, match=re.escape(f"llama-3.1-8b.json: {said}")):
        hfconfig.derived_max_model_len({**data, field: value}, (0, 33), "llama-3.1-8b.json")
    assert hfconfig.derived_max_model_len({**data, field: None}, (0, 33), "llama-3.1-8b.json").tokens == 2048  # null: no key, vLLM's default
    assert hfconfig.derived_max_model_len(data, (0, 33), "llama-3.1-8b.json").tokens == 131072


def test_nemotron_h_in_transformers_5_form_reads_its_layers_block_type() -> None:
    """NVIDIA-Nemotron-3-Ultra-550B-A55B's config lists its 108 layers as layers_block_type (mamba, moe,
    attention) with neither hybrid_override_pattern nor num_hidden_layers, as transformers 5's
    NemotronHConfig writes it; vLLM reads the pattern that config derives (nemotron_h.py, 0.33.0).
    Latent experts as Super's: 512 of 5,120 in a 2,048 latent, 22 a token. NVIDIA gives 550B, 55B active."""
    text = (CONFIGS / "nemotron-3-ultra-550b-a55b-bf16" / "config.json").read_text()
    s = hfconfig.shape(json.loads(text), "nemotron-3-ultra")
    h, latent, vocab = 8192, 2048, 131072
    inner, conv = 256 * 64, 256 * 64 + 2 * 8 * 128
    mamba = (2 * inner + 2 * 8 * 128 + 256) * h + conv * 4 + conv + 3 * 256 + inner + inner * h + h
    attention = (64 * 128 + 2 * 2 * 128) * h + 64 * 128 * h + h
    expert = 2 * 5120 * latent
    moe = 512 * expert + 2 * 10240 * h + 512 * h + 512 + 2 * latent * h + h
    total = 2 * vocab * h + 48 * mamba + 12 * attention + 48 * moe + h
    assert sum(t.rows * t.cols * t.count for t in weights.tensors(s) if not t.drafter) == total
    mtp = attention + moe + 2 * h + 2 * h * h + h  # mtp_layers_block_type [attention, moe], as Super's
    assert sum(t.rows * t.cols * t.count for t in weights.tensors(s) if t.drafter) == mtp
    assert round(total / 1e9) == 549  # 549.3B, named 550B
    assert round((total - 48 * (512 - 22) * expert - vocab * h) / 1e9) == 55
    r = modeled.model_report(modeled.ModelInputs(text, max_model_len=32768))
    assert (r.layers, r.kv_bytes_per_token) == ("48 mamba, 48 moe, 12 full", 12 * 2 * 2 * 128 * 2)


@pytest.mark.parametrize(
    ("blocks", "said"),
    [("mamba,moe", "layers_block_type: found 'mamba,moe', expected a list of the layers' kinds, each mamba, moe or attention"),
     (["mamba", "mlp"], "layers_block_type: found ['mamba', 'mlp'], expected a list of the layers' kinds, each mamba, moe or attention")],
)  # fmt: skip
def test_a_mistyped_layers_block_type_is_named(blocks: object, said: str) -> None:
    data = json.loads((CONFIGS / "nemotron-3-ultra-550b-a55b-bf16" / "config.json").read_text())
    with pytest.raises(InputError, match=re.escape(f"ultra.json: {said}")):
        hfconfig.shape({**data, "layers_block_type": blocks}, "ultra.json")


@pytest.mark.parametrize(
    ("cls", "said"),
    [
        (
            "DbrxForCausalLM",
            "found 'DbrxForCausalLM', which vLLM 0.33.0 serves (vllm/model_executor/models/registry.py) but these models do not read, expected one of",
        ),
        ("MllamaForConditionalGeneration", "found 'MllamaForConditionalGeneration', which vLLM served up to v0.10.2 and no later release"),
        ("QWenLMHeadModel", "found 'QWenLMHeadModel', which vLLM served up to v0.23.0 and no later release"),
        ("LlamaForCausalLm", "found 'LlamaForCausalLm', expected one of"),  # a typo is only a typo
    ],
)
def test_a_class_not_read_says_whether_vllm_serves_it(cls: str, said: str) -> None:
    """vLLM 0.33.0's registry: DBRX is served; Llama 3.2 Vision (Mllama) up to 0.10.2 and Qwen-7B's remote-code
    class up to 0.23.0 ("was supported in vLLM until v..."), which vLLM itself says when given one."""
    with pytest.raises(InputError, match=re.escape(f"x.json: architectures[0]: {said}")):
        hfconfig.shape({"architectures": [cls]}, "x.json")


def test_fbgemm_fp8_keeps_a_float32_scale_a_row_and_its_skipped_modules() -> None:
    """Llama-3.1-405B-Instruct-FP8 (quant_method fbgemm_fp8, vLLM's FBGEMMFp8LinearMethod): each linear weight
    one byte an element and a float32 scale a row; layer 0 whole and layer 125's MLP stay bfloat16, as do the
    embedding, the head and the norms. 405,853,388,800 parameters in all, Llama 3.1 405B's."""
    h, i, layers, vocab, kv = 16384, 53248, 126, 128256, 1024
    attention, mlp = 2 * h * h + 2 * kv * h, 3 * i * h
    attention_rows, mlp_rows = h + 2 * kv + h, 2 * i + h
    assert layers * (attention + mlp + 2 * h) + 2 * vocab * h + h == 405_853_388_800
    fp8 = 124 * (attention + attention_rows * 4 + mlp + mlp_rows * 4) + (attention + attention_rows * 4)  # layers 1-124, 125's attention
    bf16 = 2 * (attention + mlp) + 2 * mlp + 2 * (layers * 2 * h + 2 * vocab * h + h)  # layer 0, 125's MLP, norms, embedding, head
    r = modeled.model_report(modeled.ModelInputs((CONFIGS / "llama-3.1-405b-instruct-fp8" / "config.json").read_text(), max_model_len=8192))
    assert r.checkpoint_bytes == fp8 + bf16
