"""DeepSeek V3.2 (DeepseekV32ForCausalLM) and NVIDIA's Llama-Nemotron NAS models (DeciLMForCausalLM),
read by vLLM's model code: the parameter counts against the published totals, the KV cache a token and
a request, the groups, and the layout by release.

The Nemotron configs are shipped (models/configs/SOURCES.yaml: NVIDIA/NeMo's copies of the Hub's files).
No copy of a DeepSeek-V3.2 config.json was found at a citable address, so none is shipped and the class
is unchecked: the tests read it from a fixture (tests/data/configs/deepseek-v3.2), the file as a public
model report quotes it whole (code index file 62736905881, repository not named; it reads
deepseek-ai/DeepSeek-V3.2 from a local copy). The same report sums the checkpoint's 92,425 tensors to
685,396,921,376 values, which the count below meets exactly."""

from __future__ import annotations

import json

import pytest
from conftest import config_path, config_shape, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights

DSV32, SUPER, ULTRA = "deepseek-v3.2", "llama-3.3-nemotron-super-49b-v1", "llama-3.1-nemotron-ultra-253b-v1"


path, text, shape = config_path, config_text, config_shape


def count(s: hfconfig.Shape, tp: int = 1, drafter: bool = False) -> int:
    return parameters(s, tp, drafter=drafter)


# --- DeepSeek V3.2: 61 MLA layers, each with a lightning indexer (64 heads of 128), and one MTP layer ---

H, V = 7168, 129280
MLA = 1536 * H + 1536 + 128 * 192 * 1536 + 576 * H + 512 + 128 * 256 * 512 + H * 128 * 128  # q_a, its norm, q_b, kv_a, its norm, kv_b, o
INDEXER = 8192 * 1536 + (128 + 64) * H + 2 * 128  # wq_b, wk and weights_proj (fused), k_norm's weight and bias
EXPERT = 3 * 2048 * H
MOE = 256 * H + 256 + 256 * EXPERT + EXPERT  # the router and its float32 correction bias, 256 experts, one shared
MAIN = 2 * V * H + H + 61 * (MLA + INDEXER + 2 * H) + 3 * 3 * 18432 * H + 58 * MOE  # three dense layers of 18,432
MTP = MLA + INDEXER + 2 * H + MOE + 2 * H * H + 2 * H + 2 * V * H + H  # eh_proj, enorm, hnorm, its embedding, head and norm


def test_deepseek_v32_meets_its_published_size() -> None:
    """671B parameters, 685B with the MTP module (the model card). Counted as deepseek_v2.py builds them:
    671,877,944,064 and 13,477,385,728 in the MTP layer, 685,355,329,792 together. The checkpoint also
    holds a float32 scale a 128 x 128 block of each fp8 projection (weight_scale_inv): a layer's
    attention 12,272 (the indexer's wk, 1 x 56, kept apart in the checkpoint, among them), a dense
    MLP 24,192, an MoE layer 690,816; with them, 685,396,921,376, the report's sum of the checkpoint."""
    s = shape(DSV32)
    assert (s.layers.count(hfconfig.MLA), s.drafter_layers, s.indexer) == (61, 1, hfconfig.Indexer(heads=64, head_dim=128, q_lora_rank=1536))
    assert count(s) == MAIN == 671_877_944_064 and int(MAIN / 1e9) == 671
    assert count(s, drafter=True) == MTP == 13_477_385_728
    assert round((MAIN + MTP) / 1e9) == 685
    scales = 62 * (56 + 64 * 12 + 5 * 56 + 256 * 4 + 56 * 128 + 12 * 56 + 192 * 12) + 3 * 3 * 144 * 56 + 59 * 257 * 3 * 16 * 56
    assert MAIN + MTP + scales == 685_396_921_376
    assert hfconfig.unchecked_note("DeepseekV32ForCausalLM")


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_deepseek_v32_indexer_is_whole_on_every_rank(tp: int) -> None:
    """The indexer is replicated (ReplicatedLinear, disable_tp): wq_b in fp8 with a float32 scale a block
    (8,192 x 1,536 + 64 x 12 x 4 B), the fused wk/weights_proj unquantized in bf16, k_norm in float32."""
    s = shape(DSV32)
    by = {t.path: t for t in weights.tensors(s, tp)}
    p = "model.layers.0.self_attn."
    q = weights.quant_of(s)
    assert weights.tensor_bytes(by[p + "indexer.wq_b"], q, 2) == 8192 * 1536 + 64 * 12 * 4
    assert weights.tensor_bytes(by[p + "indexer.wk_weights_proj"], q, 2) == 192 * H * 2
    assert weights.tensor_bytes(by[p + "indexer.k_norm"], q, 2) == 256 * 4
    assert by[p + "q_b_proj"].rows == 128 // tp * 192  # MLA's heads divide, the indexer's do not
    assert "model.layers.61.self_attn.indexer.wq_b" in by and by["model.layers.61.self_attn.indexer.wq_b"].drafter
    r = modeled.model_report(modeled.ModelInputs(text(DSV32), tp=tp, max_model_len=32768))
    assert r.weights_bytes_per_rank == weights.per_rank(s, tp).model
    assert hfconfig.INDEXER_NOTE in r.notes  # the top-k buffer and workspaces are said to be left out


def test_deepseek_v32_kv_by_release() -> None:
    """A layer's token: the MLA latent (512 + 64) and the indexer's key, 128 fp8 values and a float32
    scale = 132 B, both in one group of 61 layers (UniformTypeKVCacheSpecs), block 64, not divided by the
    ranks. 0.11.0 and 0.13.0 turn auto into fp8_ds_mla: (656 + 132) x 61 = 48,068 B. From 0.19.0 auto is
    bf16: (1,152 + 132) x 61 = 78,324 B, and fp8 is fp8_ds_mla again."""
    s = shape(DSV32)
    for version, kv, token in (("0.11.0", "auto", 656 + 132), ("0.13.0", "fp8", 656 + 132), ("0.11.0", "bfloat16", 1152 + 132),
                               ("0.19.0", "auto", 1152 + 132), (None, "auto", 1152 + 132), ("0.26.0", "fp8", 656 + 132)):  # fmt: skip
        for tp in (1, 8):
            r = kvlayout.request(s, kvlayout.Settings(tp=tp, kv_cache_dtype=kv), 163840, kvlayout.version(version))
            assert r.bytes_per_token == 61 * token, (version, kv)
            assert (len(r.layout.groups), r.layout.group_size, r.layout.min_block_size, r.layout.page_bytes) == (1, 61, 64, 64 * token)
            assert r.pages_per_request == 163840 // 64 and r.fixed_bytes == 0
            assert r.bytes_per_request == 2560 * 61 * 64 * token  # a request of 163,840 tokens: 2,560 blocks of the group
    assert kvlayout.indexer_bytes(s) == 132
    spec = kvlayout.request(s, kvlayout.Settings(speculative_tokens=1), 8192, kvlayout.version(None))
    assert spec.bytes_per_token == 62 * (1152 + 132)  # the MTP layer's latent and indexer share the pool
    for version, match in (
        ("0.16.0", "found 0.16.0, expected 0.11.x to 0.13.x or 0.19.0 and later: .* was not read"),
        ("0.10.1.1", "found 0.10.1.1, expected 0.11.0 or later: .* no DeepseekV32ForCausalLM"),
    ):
        with pytest.raises(ValueError, match=match):
            kvlayout.request(s, kvlayout.Settings(), 8192, kvlayout.version(version))
    with pytest.raises(ValueError, match="multiple of 64"):
        kvlayout.request(s, kvlayout.Settings(block_size=16), 8192, kvlayout.version(None))
    with pytest.raises(ValueError, match="nvfp4_ds_mla"):
        kvlayout.request(s, kvlayout.Settings(kv_cache_dtype="nvfp4"), 8192, kvlayout.version(None))


def test_deepseek_v32_pool_on_a_card() -> None:
    """A pool of exactly 1,000 blocks of the one group at TP 8 (61 layers x 64 tokens x 1,284 B each):
    1,000 blocks, 64,000 tokens, 64,000 / 163,840 requests at once."""
    s = shape(DSV32)
    v = kvlayout.version(None)
    p = kvlayout.pool(s, kvlayout.Settings(tp=8), 163840, 1000 * 61 * 64 * 1284, v)
    assert (p.blocks, p.tokens, round(float(p.concurrency), 4)) == (1000, 64000, round(64000 / 163840, 4))


def test_deepseek_v32_pipeline_stages() -> None:
    """PP 2 splits the 61 layers 31 / 30 (get_pp_indices): the first stage's token 31 x 788 B in fp8."""
    s = shape(DSV32)
    assert ranks.partition(61, 2) == (31, 30)
    r = modeled.model_report(modeled.ModelInputs(text(DSV32), tp=4, pp=2, max_model_len=65536, kv_cache_dtype="fp8"))
    assert r.kv_bytes_per_token == 31 * (656 + 132)
    assert s.family == "mla"


# --- Llama-Nemotron NAS: block_configs a layer ---


def width(mult: float, hidden: int) -> int:
    """nemotron_nas.py, _ffn_mult_to_intermediate_size: int(2 x ffn_mult x hidden / 3), up to a multiple of 256."""
    n = int(2 * mult * hidden / 3)
    return n + -n % 256


def nas_total(hidden: int, heads: int, kv_heads: int, attention: dict[float, int], ffn_only: dict[float, int]) -> int:
    """Embedding and lm_head (vocab 128,256), the final norm; a layer with attention has its input norm,
    q/k/v/o and a post-attention norm and MLP; a no-op attention layer only the latter; an empty one nothing."""
    d = hidden // heads
    attn = hidden + (heads + 2 * kv_heads) * d * hidden + hidden * heads * d
    total = 2 * 128256 * hidden + hidden
    total += sum(n * (attn + hidden + 3 * width(m, hidden) * hidden) for m, n in attention.items())
    total += sum(n * (hidden + 3 * width(m, hidden) * hidden) for m, n in ffn_only.items())
    return total


def test_nemotron_super_meets_its_published_size() -> None:
    """Super 49B: 80 layers, 49 with attention (64 heads, 8 KV heads of 128), 31 whose attention is a
    no-op; ffn_mult 5.25 gives 28,672, 2.625 14,336, 1.3125 7,168, 1.0 5,632 (5,461 rounded up),
    0.5 2,816, 3.28125 17,920. 49,867,145,216 parameters: 49.87B, published as 49B."""
    s = shape(SUPER)
    assert (s.layers.count(hfconfig.FULL), s.layers.count(hfconfig.NO_ATTENTION), s.kv_heads, s.head_dim) == (49, 31, 8, 128)
    assert [width(m, 8192) for m in (5.25, 2.625, 1.3125, 1.0, 0.5, 3.28125)] == [28672, 14336, 7168, 5632, 2816, 17920]
    total = nas_total(8192, 64, 8, {5.25: 48, 2.625: 1}, {1.3125: 10, 1.0: 8, 0.5: 6, 2.625: 5, 3.28125: 1, 5.25: 1})
    assert count(s) == total == 49_867_145_216 and int(total / 1e9) == 49
    names = {t.path for t in weights.tensors(s)}
    assert "model.layers.6.input_layernorm" not in names and "model.layers.6.post_attention_layernorm" in names  # block 6: no-op attention
    assert "model.layers.6.self_attn.q_proj" not in names


def test_nemotron_ultra_meets_its_published_size() -> None:
    """Ultra 253B: 162 layers, 64 with attention (128 heads, 8 KV heads of 128), 17 with an MLP alone and
    81 with neither. 253,401,268,224 parameters: 253.40B, published as 253B."""
    s = shape(ULTRA)
    assert (s.layers.count(hfconfig.FULL), s.layers.count(hfconfig.NO_ATTENTION), s.kv_heads) == (64, 98, 8)
    assert sum(1 for k, m in zip(s.layers, s.mlps, strict=True) if k == hfconfig.NO_ATTENTION and not m.intermediate) == 81
    attention = {4.875: 32, 2.4375: 10, 1.95: 8, 1.4625: 6, 3.4125: 4, 2.925: 2, 0.4875: 1, 0.975: 1}
    ffn_only = {2.4375: 9, 1.95: 2, 4.875: 2, 36.5625: 1, 39.0: 1, 31.40625: 1, 27.5625: 1}
    total = nas_total(16384, 128, 8, attention, ffn_only)  # the 81 empty layers hold nothing
    assert count(s) == total == 253_401_268_224 and int(total / 1e9) == 253


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 8), (2, 4), (4, 2), (8, 1)])
def test_nemotron_kv_only_for_the_layers_with_attention(tp: int, kv_heads: int) -> None:
    """2 (K and V) x the KV heads a rank holds x 128 x 2 B x 49 layers (Super) and 64 (Ultra); one
    group of full attention, 16-token blocks, whatever the no-op layers."""
    for name, layers in ((SUPER, 49), (ULTRA, 64)):
        r = kvlayout.request(shape(name), kvlayout.Settings(tp=tp), 131072, kvlayout.version(None))
        assert r.bytes_per_token == 2 * kv_heads * 128 * 2 * layers
        assert (len(r.layout.groups), r.layout.group_size, r.layout.min_block_size) == (1, layers, 16)
        assert r.bytes_per_request == 131072 // 16 * layers * 16 * 2 * kv_heads * 128 * 2
        fp8 = modeled.model_report(modeled.ModelInputs(text(name), tp=tp, max_model_len=32768, kv_cache_dtype="fp8"))
        assert fp8.kv_bytes_per_token == 2 * kv_heads * 128 * 1 * layers


def test_nemotron_pipeline_stages_hold_their_own_attention_layers() -> None:
    """PP 2 splits Super's 80 layers 40 / 40: 37 layers with attention in the first, 12 in the second;
    Ultra's 162, 81 / 81: 41 and 23. A rank's token is its stage's: at TP 4 the first stage of Super holds
    37 x 2 x 2 x 128 x 2 B."""
    for name, first, second in ((SUPER, 37, 12), (ULTRA, 41, 23)):
        s = shape(name)
        a, _b = ranks.partition(len(s.layers), 2)
        assert (s.layers[:a].count(hfconfig.FULL), s.layers[a:].count(hfconfig.FULL)) == (first, second)
    r = modeled.model_report(modeled.ModelInputs(text(SUPER), tp=4, pp=2, max_model_len=32768))
    assert r.kv_bytes_per_token == 37 * 2 * 2 * 128 * 2


def test_nemotron_blocks_vllm_does_not_build_are_refused() -> None:
    data = json.loads(text(SUPER))
    data["block_configs"][0]["attention"]["replace_with_linear"] = True
    with pytest.raises(hfconfig.ConfigError, match=r"block_configs\[0\].attention.replace_with_linear: found True"):
        hfconfig.shape(data, SUPER)
    data = json.loads(text(SUPER))
    data["block_configs"][0]["attention"]["n_heads_in_group"] = 4
    with pytest.raises(hfconfig.ConfigError, match="n_heads_in_group: found \\[4, 8\\]"):
        hfconfig.shape(data, SUPER)
    data = json.loads(text(SUPER))
    data["block_configs"] = data["block_configs"][:79]
    with pytest.raises(hfconfig.ConfigError, match="a list of 80 blocks"):
        hfconfig.shape(data, SUPER)


MATRIX = [
    (name, [*tp, *kv, *rest, "--gpu", "h200"])
    for name in (DSV32, SUPER, ULTRA)
    for tp, kv, rest in (
        (["--tp", "1"], [], ["--max-model-len", "auto"]),
        (["--tp", "2"], [], ["--max-model-len", "32768"]),
        (["--tp", "4"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "auto"]),
        (["--tp", "8"], [], ["--max-model-len", "auto"]),
        (["--tp", "8"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "131072", "--engine-version", "0.11.0"]),
        (["--tp", "4", "--pp", "2"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "auto"]),
        (["--tp", "4", "--pp", "2"], [], ["--max-model-len", "65536", "--engine-version", "0.26.0"]),
    )
]


@pytest.mark.parametrize(("name", "args"), MATRIX, ids=[f"{n}-{'-'.join(a[1::2])}" for n, a in MATRIX])
def test_the_command_line_predicts_a_pool(name: str, args: list[str]) -> None:
    """TP 1 to 8, fp8, PP 2 and auto: a verdict each (TP 1 and 2 of the largest: the weights do not fit)."""
    done = run_calc("model", str(path(name)), *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["architecture"] in ("DeepseekV32ForCausalLM", "DeciLMForCausalLM")
    assert data["verdict"] and data["kv_bytes_per_token"] > 0
